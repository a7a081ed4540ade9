//! Labels as the index counts them, and the label tree the pages and the API show.
//!
//! Two counts are kept for a label, in the store's one table of label counts: how many listed
//! messages carry the label itself (under its name as spelled), and how many carry it or any
//! label below it (a nested label `Clients/Acme` is below `Clients`), under its [`key`] marked
//! with [`BELOW`]. The second is not a sum of the first: a message carrying `Clients/Acme` and
//! `Clients/Beta` counts once for `Clients`. It is what `label:Clients` and `/label/Clients` find,
//! so the tree shows the number of messages a click on it lists.
//!
//! [`key`]: crate::parse::labels::key

use std::collections::HashMap;

use serde::Serialize;

use crate::parse::labels::{key, terms};

/// Starts the name under which the count of a label's messages with those below it is kept. A
/// label never holds a control character ([`crate::parse::labels::tidy_labels`] takes them out),
/// so no label is ever taken for one of these.
pub(crate) const BELOW: char = '\u{1}';

/// The names under which one message is counted: each label it carries as spelled, and, once
/// each, the key of each label it carries and of every label above one ([`BELOW`]).
pub(crate) fn counted(labels: &[String]) -> Vec<String> {
    let mut out: Vec<String> = labels.to_vec();
    let mut below: Vec<String> = labels.iter().flat_map(|l| terms(l)).collect();
    below.sort_unstable();
    below.dedup();
    out.extend(below.into_iter().map(|k| format!("{BELOW}{k}")));
    out
}

/// A label and the labels below it, as the API and the pages show them.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LabelNode {
    /// Its own name: the last name of its path (`Invoices` for `Clients/Acme/Invoices`).
    pub name: String,
    /// The whole label (`Clients/Acme/Invoices`): the name of `/label/<label>`, `label:` and
    /// `label=`.
    pub label: String,
    /// Messages carrying this label itself (0 for a label that only has labels below it).
    pub messages: usize,
    /// Messages carrying this label or any label below it, each once: what `/label/<label>`
    /// and `label:` find.
    pub total: usize,
    /// The labels directly below it.
    #[schema(no_recursion)]
    pub labels: Vec<LabelNode>,
}

/// Builds the label tree from the labels carried (`own`: name as spelled, messages carrying it)
/// and the totals by key (see [`counted`]). A label that only has labels below it is in the tree;
/// each name is spelled as first met (in byte order of the labels), so that `clients/beta` shows
/// below `Clients`; names sort case-insensitively.
pub(crate) fn tree(own: &[(String, usize)], totals: &HashMap<String, usize>) -> Vec<LabelNode> {
    // Every label and every label above one, by key: its spelling and its own count; and the
    // labels directly below each (by key, "" for the top).
    let mut nodes: HashMap<String, (String, usize)> = HashMap::new();
    let mut below: HashMap<String, Vec<String>> = HashMap::new();
    let mut spelled: Vec<&(String, usize)> = own.iter().collect();
    spelled.sort_by(|a, b| a.0.cmp(&b.0));
    for (label, n) in spelled {
        let names: Vec<&str> = label.split('/').map(str::trim).filter(|s| !key(s).is_empty()).collect();
        let (mut path, mut above) = (String::new(), String::new());
        for (i, name) in names.iter().enumerate() {
            let candidate = if i == 0 { name.to_string() } else { format!("{path}/{name}") };
            let k = key(&candidate);
            let slot = nodes.entry(k.clone()).or_insert_with(|| {
                below.entry(above.clone()).or_default().push(k.clone());
                (candidate, 0)
            });
            if i + 1 == names.len() {
                slot.1 += n;
            }
            path = slot.0.clone();
            above = k;
        }
    }
    fn build(
        at: &str,
        nodes: &HashMap<String, (String, usize)>,
        below: &HashMap<String, Vec<String>>,
        totals: &HashMap<String, usize>,
    ) -> Vec<LabelNode> {
        let mut level: Vec<LabelNode> = below
            .get(at)
            .into_iter()
            .flatten()
            .filter_map(|k| {
                let (label, messages) = nodes.get(k)?;
                Some(LabelNode {
                    name: label.rsplit('/').next().unwrap_or(label).to_string(),
                    label: label.clone(),
                    messages: *messages,
                    total: totals.get(k).copied().unwrap_or(0).max(*messages),
                    labels: build(k, nodes, below, totals),
                })
            })
            .collect();
        level.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then_with(|| a.name.cmp(&b.name)));
        level
    }
    build("", &nodes, &below, totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_counts_once_for_each_label_above_its_labels() {
        let labels = vec!["Clients/Acme".to_string(), "Clients/Beta".into(), "Inbox".into()];
        let got = counted(&labels);
        let b = |k: &str| format!("{BELOW}{k}");
        assert_eq!(
            got,
            vec![
                "Clients/Acme".to_string(),
                "Clients/Beta".into(),
                "Inbox".into(),
                b("clients"),
                b("clients/acme"),
                b("clients/beta"),
                b("inbox")
            ]
        );
    }

    #[test]
    fn nested_labels_are_a_tree_with_totals_of_distinct_messages() {
        let own = vec![
            ("Clients/Acme (2019)/Invoices".to_string(), 2),
            ("clients/beta".into(), 1),
            ("Inbox".into(), 5),
            ("Clients".into(), 1),
        ];
        let totals: HashMap<String, usize> = [
            ("clients", 3),
            ("clients/acme (2019)", 2),
            ("clients/acme (2019)/invoices", 2),
            ("clients/beta", 1),
            ("inbox", 5),
        ]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
        let t = tree(&own, &totals);
        let brief = |n: &LabelNode| (n.name.clone(), n.label.clone(), n.messages, n.total);
        assert_eq!(
            t.iter().map(brief).collect::<Vec<_>>(),
            [("Clients".into(), "Clients".into(), 1, 3), ("Inbox".into(), "Inbox".into(), 5, 5)]
        );
        let clients: Vec<_> = t[0].labels.iter().map(brief).collect();
        assert_eq!(
            clients,
            [("Acme (2019)".into(), "Clients/Acme (2019)".into(), 0, 2), ("beta".into(), "Clients/beta".into(), 1, 1)]
        );
        assert_eq!(brief(&t[0].labels[0].labels[0]), ("Invoices".into(), "Clients/Acme (2019)/Invoices".into(), 2, 2));
    }
}

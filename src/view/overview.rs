//! The overview page as a reader sees it, free of HTTP: what is in the archive, a folder, a label
//! or a search, in numbers and pictures (messages per month, top senders and lists, attachment
//! types and sizes), each bar a link to its messages.

use std::sync::Arc;

use super::browse::Scope;
use super::charts::{columns, rows, Bar};
use super::format::{human_size, query_value};
use super::list::list_url;
use super::stats::{Count, Stats};
use super::View;
use crate::error::Error;

/// An overview's page. The pictures are SVG, drawn on the server.
pub(crate) struct OverviewView {
    pub heading: String,
    /// Why the search could not run, if it could not.
    pub query_error: Option<String>,
    pub messages: usize,
    pub undated: usize,
    /// What a bar of the timeline counts: `month` or `year`.
    pub period: String,
    /// The first and last periods with messages.
    pub first: Option<String>,
    pub last: Option<String>,
    pub timeline: String,
    pub senders: String,
    pub lists: String,
    pub types: String,
    pub sizes: String,
    pub attachments: usize,
    pub attachment_bytes: String,
    /// The list the overview is of.
    pub list_url: String,
}

impl OverviewView {
    /// The overview of `scope`, or of its messages matching `query`. Blocking. A search that
    /// cannot run is an overview that says why; other failures are errors.
    pub(crate) fn build(view: &View, scope: &Scope, query: &str) -> Result<OverviewView, Error> {
        match view.stats(scope, query) {
            Ok(stats) => Ok(Self::of(scope, query, &stats, None)),
            Err(Error::BadQuery(why)) => Ok(Self::of(scope, query, &Arc::default(), Some(why))),
            Err(e) => Err(e),
        }
    }

    /// The page for counted `stats`.
    fn of(scope: &Scope, query: &str, s: &Stats, query_error: Option<String>) -> OverviewView {
        // A bar's messages: this overview's scope and search, narrowed by the bar's own query.
        let search_url = |extra: &str| {
            let q = if query.trim().is_empty() { extra.to_string() } else { format!("{extra} ({query})") };
            format!("{}?q={}", list_url(scope), query_value(&q))
        };
        let bar = |c: &Count| Bar {
            label: c.name.clone(),
            value: c.messages as u64,
            caption: None,
            link: c.query.as_deref().map(search_url),
        };
        let timeline = columns(&s.periods.iter().map(bar).collect::<Vec<_>>(), &format!("Messages per {}", s.period));
        let senders = rows(&s.senders.iter().map(bar).collect::<Vec<_>>(), "Top senders");
        let lists = rows(&s.lists.iter().map(bar).collect::<Vec<_>>(), "Top mailing lists");
        let types = rows(
            &s.attachments
                .types
                .iter()
                .map(|t| Bar {
                    label: t.content_type.clone(),
                    value: t.count as u64,
                    caption: Some(format!("{} · {}", t.count, human_size(t.bytes))),
                    link: None,
                })
                .collect::<Vec<_>>(),
            "Attachment types",
        );
        let sizes = rows(
            &s.attachments
                .sizes
                .iter()
                .map(|c| Bar { label: c.name.clone(), value: c.messages as u64, caption: None, link: None })
                .collect::<Vec<_>>(),
            "Attachment sizes",
        );
        let mut heading = match scope {
            Scope::All => "Overview".to_string(),
            Scope::Folder(p) => format!("Overview of folder {p}"),
            Scope::Label(l) => format!("Overview of label {l}"),
        };
        if !query.trim().is_empty() {
            heading.push_str(&format!(" — “{query}”"));
        }
        let list_url = if query.trim().is_empty() {
            list_url(scope)
        } else {
            format!("{}?q={}", list_url(scope), query_value(query))
        };
        OverviewView {
            heading,
            query_error,
            messages: s.messages,
            undated: s.undated,
            first: s.periods.iter().find(|c| c.messages > 0).map(|c| c.name.clone()),
            last: s.periods.iter().rev().find(|c| c.messages > 0).map(|c| c.name.clone()),
            period: s.period.clone(),
            timeline,
            senders,
            lists,
            types,
            sizes,
            attachments: s.attachments.count,
            attachment_bytes: human_size(s.attachments.bytes),
            list_url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: &str, messages: usize, query: Option<&str>) -> Count {
        Count { name: name.into(), messages, query: query.map(str::to_string) }
    }

    #[test]
    fn overviews_are_headed_by_their_scope_and_search() {
        let folder = Scope::Folder("Archiv/2017".into());
        let label = Scope::Label("Work".into());
        for (scope, query, heading, list) in [
            (&Scope::All, "", "Overview", "/"),
            (&Scope::All, "from:ann", "Overview — “from:ann”", "/?q=from%3Aann"),
            (&folder, "", "Overview of folder Archiv/2017", "/folder/Archiv/2017"),
            (&label, " ", "Overview of label Work", "/label/Work"),
        ] {
            let page = OverviewView::of(scope, query, &Stats::default(), None);
            assert_eq!(page.heading, heading, "{scope:?} {query:?}");
            assert_eq!(page.list_url, list, "{scope:?} {query:?}");
        }
    }

    #[test]
    fn bars_link_to_their_messages_within_the_search() {
        let stats = Stats {
            messages: 3,
            period: "month".into(),
            periods: vec![
                count("2024-01", 0, Some("after:2024-01 before:2024-02")),
                count("2024-02", 3, Some("after:2024-02 before:2024-03")),
                count("2024-03", 0, Some("after:2024-03 before:2024-04")),
            ],
            senders: vec![count("Ann", 3, Some("from:ann@example.org"))],
            ..Stats::default()
        };
        let page = OverviewView::of(&Scope::Label("Work".into()), "budget", &stats, None);
        assert_eq!((page.first.as_deref(), page.last.as_deref()), (Some("2024-02"), Some("2024-02")));
        let link = format!("/label/Work?q={}", query_value("from:ann@example.org (budget)"));
        assert!(page.senders.contains(&link), "{}", page.senders);
        let month = format!("/label/Work?q={}", query_value("after:2024-02 before:2024-03 (budget)"));
        assert!(page.timeline.contains(&month), "{}", page.timeline);
    }

    #[test]
    fn an_overview_of_nothing_draws_nothing() {
        let page = OverviewView::of(&Scope::All, "(", &Stats::default(), Some("unbalanced".into()));
        assert_eq!(page.query_error.as_deref(), Some("unbalanced"));
        assert_eq!((page.messages, page.first, page.attachment_bytes.as_str()), (0, None, "0 B"));
        assert!(page.timeline.is_empty() && page.senders.is_empty() && page.types.is_empty(), "no empty charts");
    }
}

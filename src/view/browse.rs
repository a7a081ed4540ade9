//! Moving through an archive as a mail client does: the folder tree and the labels with their
//! counts, the list of one folder or one label, and the list grouped into conversations (one row
//! per thread: its first subject, who took part, how many messages, the latest date). HTTP-free;
//! the pages and the API both call it.

use std::collections::HashMap;

use crate::folders::{self, FolderNode};
use crate::index::{Entry, EntryId, Index};

/// Which listed messages a list, its conversations or an overview covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    #[default]
    All,
    /// The messages filed in this folder itself (not in its subfolders), as a mail client lists one.
    Folder(String),
    /// The messages carrying this label, ignoring case.
    Label(String),
}

impl Scope {
    /// A search restricted to this scope: within the folder (and those below it) or the label.
    pub fn restrict(&self, query: &str) -> String {
        let quoted = |s: &str| format!("\"{}\"", s.trim_matches('/').replace('"', ""));
        match self {
            Scope::All => query.to_string(),
            Scope::Folder(p) => format!("folder:{} ({query})", quoted(p)),
            Scope::Label(l) => format!("label:{} ({query})", quoted(l)),
        }
    }

    /// A test for entries of this scope, resolved once against the index.
    pub fn filter(&self, index: &Index) -> impl Fn(&Entry) -> bool {
        enum Test {
            All,
            Folder(Option<crate::index::FolderId>),
            Label(String),
        }
        let test = match self {
            Scope::All => Test::All,
            Scope::Folder(path) => Test::Folder(index.folder_id(path.trim_matches('/'))),
            Scope::Label(l) => Test::Label(l.to_lowercase()),
        };
        move |e: &Entry| match &test {
            Test::All => true,
            Test::Folder(f) => Some(e.folder) == *f,
            Test::Label(l) => e.labels.iter().any(|x| x.to_lowercase() == *l),
        }
    }
}

/// One conversation of a list.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// Its first message here (the oldest), whose subject names it.
    pub first: Entry,
    /// Its newest message here.
    pub latest: Entry,
    /// Messages of it in the scope.
    pub count: usize,
    /// Who wrote them, each once, in the order they first wrote (at most [`PARTICIPANTS`]).
    pub participants: Vec<String>,
    /// The id `/thread/<id>` opens it by: its first message's key.
    pub key: String,
}

/// Names a conversation row shows at most.
pub const PARTICIPANTS: usize = 4;

/// A page of the messages in `scope`, newest first, and how many there are: the whole list is
/// paged directly, a folder or label by one pass over it.
pub fn page<'a>(index: &'a Index, scope: &Scope, offset: usize, limit: usize) -> (Vec<(EntryId, &'a Entry)>, usize) {
    match scope {
        Scope::All => (index.page(offset, limit).collect(), index.listed_count()),
        _ => index.page_where(offset, limit, scope.filter(index)),
    }
}

/// The folder tree, and the messages at the top of a PATH (in no folder).
pub fn folder_tree(index: &Index) -> (Vec<FolderNode>, usize) {
    let mut top = 0;
    let counts: Vec<(String, usize)> = index
        .folder_counts()
        .filter_map(|(path, n)| {
            if path.is_empty() {
                top += n;
                None
            } else {
                Some((path.to_string(), n))
            }
        })
        .collect();
    (folders::tree(counts), top)
}

/// Every label with how many listed messages carry it, by name ignoring case.
pub fn labels(index: &Index) -> Vec<(String, usize)> {
    let mut merged: HashMap<String, (String, usize)> = HashMap::new();
    for (name, n) in index.label_counts() {
        let slot = merged.entry(name.to_lowercase()).or_insert_with(|| (name.to_string(), 0));
        slot.1 += n;
    }
    let mut out: Vec<(String, usize)> = merged.into_values().collect();
    out.sort_by_key(|a| a.0.to_lowercase());
    out
}

/// The messages of `scope` grouped into conversations, newest conversation first: the page asked
/// for and how many conversations there are.
pub fn conversations(index: &Index, scope: &Scope, offset: usize, limit: usize) -> (Vec<Conversation>, usize) {
    let keep = scope.filter(index);
    let mut memo = HashMap::new();
    // The list is newest first, so a conversation's first row is its latest message.
    let mut order: Vec<EntryId> = Vec::new();
    let mut groups: HashMap<EntryId, Group> = HashMap::new();
    for &id in index.listed() {
        let Some(e) = index.get(id) else { continue };
        if !keep(e) {
            continue;
        }
        let root = index.thread_root(id, &mut memo);
        let g = groups.entry(root).or_insert_with(|| {
            order.push(root);
            Group { latest: id, first: id, count: 0, senders: Vec::new() }
        });
        g.count += 1;
        // Walking newest first, each message is older than (or as old as) the one before it.
        g.first = id;
        if let Some(from) = &e.summary.from {
            let name = display_name(from);
            if !g.senders.contains(&name) {
                g.senders.push(name);
            }
        }
    }
    let total = order.len();
    let page = order
        .into_iter()
        .skip(offset)
        .take(limit)
        .filter_map(|root| {
            let g = groups.remove(&root)?;
            let first = index.get(g.first)?.clone();
            let latest = index.get(g.latest)?.clone();
            // Senders were met newest first; a reader expects who started it first.
            let mut participants = g.senders;
            participants.reverse();
            participants.truncate(PARTICIPANTS);
            Some(Conversation { key: first.key.clone(), first, latest, count: g.count, participants })
        })
        .collect();
    (page, total)
}

struct Group {
    latest: EntryId,
    first: EntryId,
    count: usize,
    senders: Vec<String>,
}

/// `"Ann Example" <ann@example.org>` → `Ann Example`; a bare address stays as it is.
pub fn display_name(from: &str) -> String {
    let name = match from.find('<') {
        Some(i) if i > 0 => from[..i].trim().trim_matches('"').trim(),
        _ => from.trim().trim_start_matches('<').trim_end_matches('>'),
    };
    if name.is_empty() {
        from.trim().to_string()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_without_their_address() {
        assert_eq!(display_name("\"Ann Example\" <ann@example.org>"), "Ann Example");
        assert_eq!(display_name("Bob <bob@example.org>"), "Bob");
        assert_eq!(display_name("<carol@example.org>"), "carol@example.org");
        assert_eq!(display_name("dave@example.org"), "dave@example.org");
    }
}

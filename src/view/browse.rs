//! Moving through an archive as a mail client does: the folder tree and the labels with their
//! counts, the list of one folder or one label, and the list grouped into conversations (one row
//! per thread: its first subject, who took part, how many messages, the latest date). HTTP-free;
//! the pages and the API both call it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::index::folders::{self, FolderNode};
use crate::index::labels::LabelNode;
use crate::index::{Entry, EntryId, EntryPass, Index, Location, NO_ENTRY};

/// Which listed messages a list, its conversations or an overview covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Scope {
    #[default]
    All,
    /// The messages filed in this folder itself (not in its subfolders), as a mail client lists one.
    Folder(String),
    /// The messages carrying this label or a label below it (`Clients` holds `Clients/Acme`),
    /// ignoring case: what `label:` finds.
    Label(String),
}

impl Scope {
    /// The scope a request names with `folder=` or `label=` (the folder when both are given).
    pub fn named(folder: Option<String>, label: Option<String>) -> Scope {
        match (folder, label) {
            (Some(f), _) => Scope::Folder(f),
            (None, Some(l)) => Scope::Label(l),
            (None, None) => Scope::All,
        }
    }

    /// A search restricted to this scope: within the folder (and those below it) or the label.
    pub fn restrict(&self, query: &str) -> String {
        let quoted = |s: &str| format!("\"{}\"", s.trim_matches('/').replace('"', ""));
        match self {
            Scope::All => query.to_string(),
            Scope::Folder(p) => format!("folder:{} ({query})", quoted(p)),
            Scope::Label(l) => format!("label:{} ({query})", quoted(l)),
        }
    }

    /// The listed messages of this scope, in list order.
    pub fn ids(&self, index: &Index) -> Vec<EntryId> {
        match self {
            Scope::All => index.listed().to_vec(),
            Scope::Folder(path) => match index.folder_id(path.trim_matches('/')) {
                Some(f) => index.folder_page(f, 0, usize::MAX).0,
                None => Vec::new(),
            },
            Scope::Label(_) => index.listed_where(self.filter(index)),
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
            Scope::Label(l) => Test::Label(crate::parse::labels::key(l)),
        };
        move |e: &Entry| match &test {
            Test::All => true,
            Test::Folder(f) => Some(e.folder) == *f,
            Test::Label(l) => e.labels.iter().any(|x| crate::parse::labels::terms(x).contains(l)),
        }
    }
}

/// One conversation of a list.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// Its first message here (the oldest), whose subject names it.
    pub first: Arc<Entry>,
    /// Its newest message here.
    pub latest: Arc<Entry>,
    /// Messages of it in the scope.
    pub count: usize,
    /// Who wrote them, each once, in the order they first wrote (at most [`PARTICIPANTS`]).
    pub participants: Vec<String>,
    /// The id `/thread/<id>` opens it by: its first message's key.
    pub key: String,
}

/// Names a conversation row shows at most.
pub(crate) const PARTICIPANTS: usize = 4;

/// A page of the messages in `scope`, newest first, and how many there are: the whole list is
/// paged directly, a folder by one pass over the list in memory, a label by one over the store.
pub(crate) fn page(index: &Index, scope: &Scope, offset: usize, limit: usize) -> (Vec<(EntryId, Arc<Entry>)>, usize) {
    match scope {
        Scope::All => (index.page(offset, limit), index.listed_count()),
        Scope::Folder(path) => match index.folder_id(path.trim_matches('/')) {
            Some(f) => {
                let (ids, total) = index.folder_page(f, offset, limit);
                (index.get_many(&ids), total)
            }
            None => (Vec::new(), 0),
        },
        Scope::Label(_) => index.page_where(offset, limit, scope.filter(index)),
    }
}

/// The folder tree, and the messages at the top of a PATH (in no folder).
pub(crate) fn folder_tree(index: &Index) -> (Vec<FolderNode>, usize) {
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

/// Every label with how many listed messages carry it, spellings of one label (its
/// [`crate::parse::labels::key`]) counted together.
pub(crate) fn labels(index: &Index) -> Vec<(String, usize)> {
    let mut merged: HashMap<String, (String, usize)> = HashMap::new();
    for (name, n) in index.label_counts() {
        let slot = merged.entry(crate::parse::labels::key(name)).or_insert_with(|| (name.to_string(), 0));
        slot.1 += n;
    }
    let mut out: Vec<(String, usize)> = merged.into_values().collect();
    out.sort_by_key(|a| a.0.to_lowercase());
    out
}

/// The labels as a tree, nested labels below the labels they are in, each with the messages
/// carrying it and those carrying it or a label below it (see [`crate::index::labels`]).
pub(crate) fn label_tree(index: &Index) -> Vec<LabelNode> {
    let own: Vec<(String, usize)> = index.label_counts().map(|(l, n)| (l.to_string(), n)).collect();
    let totals: HashMap<String, usize> = index.label_totals().map(|(k, n)| (k.to_string(), n)).collect();
    crate::index::labels::tree(&own, &totals)
}

/// The messages of `scope` grouped into conversations, newest conversation first. One pass over
/// the store finds every message's parent; [`crate::view::View`] keeps the result until the index
/// changes, so paging through it costs only the page.
///
/// `listed` is the list (newest first), `bound` one more than its largest id, `keep` the scope's
/// test: taken from the index, which need not be held while this runs. `readable` says which
/// messages the reader may read: a reply joins the first of them carrying the Message-ID it
/// names, else the first of all (as [`crate::index::Access::parent_among`]).
pub(crate) fn group(
    pass: &EntryPass,
    listed: &[EntryId],
    bound: usize,
    keep: impl Fn(&Entry) -> bool,
    readable: impl Fn(&Entry) -> bool,
) -> Threads {
    // The first entry with each Message-ID (one the reader may read before any other), and each
    // entry's parent by the hash of its Message-ID: the lookups a walk up a conversation needs, in
    // memory only while grouping.
    // Sized for every entry at once: growing it would hold the old table and the new together.
    let mut first_with: HashMap<u64, (bool, EntryId)> = HashMap::with_capacity(bound);
    let mut parent_hash: Vec<u64> = vec![0; bound];
    let mut kept = vec![false; bound];
    pass.each_entry(|id, e| {
        if let Some(mid) = e.message_id() {
            let h = crate::index::string_hash(mid) | 1;
            // Unreadable sorts after readable (`false` < `true`, so kept as "not readable").
            let this = (!readable(e), id);
            let slot = first_with.entry(h).or_insert(this);
            *slot = (*slot).min(this);
        }
        if let (Some(p), Some(slot)) = (&e.parent, parent_hash.get_mut(id as usize)) {
            *slot = crate::index::string_hash(p) | 1;
        }
        if let (Location::Top { .. }, Some(k)) = (&e.location, kept.get_mut(id as usize)) {
            *k = keep(e);
        }
    });
    let parent = |id: EntryId| -> Option<EntryId> {
        let h = *parent_hash.get(id as usize)?;
        if h == 0 {
            return None;
        }
        // Hashes are kept with the low bit set, so that 0 means none.
        first_with.get(&h).map(|&(_, id)| id)
    };
    let mut memo = vec![NO_ENTRY; bound];
    // Where each conversation sits in the result, by its root (the same table trick as `memo`).
    let mut slot = vec![NO_ENTRY; bound];
    // Two passes: which conversation each kept row joins, and how many each has; then every row
    // in its place, end to end (one list for all of them, not a list for each).
    let mut joins: Vec<(EntryId, u32)> = Vec::new();
    let mut sizes: Vec<u32> = Vec::new();
    // The list is newest first, so a conversation's first row is its latest message, and each
    // later row is older than (or as old as) the one before it.
    for &id in listed {
        if !kept.get(id as usize).copied().unwrap_or(false) {
            continue;
        }
        let root = thread_root(id, &parent, &mut memo) as usize;
        let at = match slot.get(root).copied() {
            Some(i) if i != NO_ENTRY => i,
            _ => {
                let i = sizes.len() as u32;
                if let Some(s) = slot.get_mut(root) {
                    *s = i;
                }
                sizes.push(0);
                i
            }
        };
        if let Some(n) = sizes.get_mut(at as usize) {
            *n += 1;
        }
        joins.push((id, at));
    }
    drop((memo, slot, first_with, parent_hash, kept));
    let mut starts = Vec::with_capacity(sizes.len() + 1);
    let mut total = 0u32;
    for n in &mut sizes {
        starts.push(total);
        total += *n;
        // From here on: where the next row of that conversation goes.
        *n = total - *n;
    }
    starts.push(total);
    let mut members = vec![NO_ENTRY; total as usize];
    for (id, at) in joins {
        if let Some(next) = sizes.get_mut(at as usize) {
            if let Some(m) = members.get_mut(*next as usize) {
                *m = id;
            }
            *next += 1;
        }
    }
    Threads { starts, members }
}

/// The first message of the conversation `id` is in: up through its parents as far as they are
/// here (a loop or a missing parent ends the walk). `memo`, indexed by entry id, keeps what earlier
/// walks found ([`NO_ENTRY`] where nothing yet), so grouping a whole list walks each chain once.
fn thread_root(id: EntryId, parent: &impl Fn(EntryId) -> Option<EntryId>, memo: &mut [EntryId]) -> EntryId {
    const MAX: usize = 500;
    let known = |memo: &[EntryId], at: EntryId| memo.get(at as usize).copied().filter(|&r| r != NO_ENTRY);
    let mut path = vec![id];
    let mut at = id;
    let root = loop {
        if let Some(r) = known(memo, at) {
            break r;
        }
        match parent(at) {
            Some(p) if path.len() < MAX && !path.contains(&p) => {
                path.push(p);
                at = p;
            }
            _ => break at,
        }
    };
    for p in path {
        if let Some(slot) = memo.get_mut(p as usize) {
            *slot = root;
        }
    }
    root
}

/// The conversations of a list, newest first, each as its messages there, newest first: stored
/// end to end with where each begins (4 bytes a message and 4 a conversation, where a list per
/// conversation cost some 60 bytes more each, at a million messages tens of MB for one cached
/// grouping).
#[derive(Debug, Clone, Default)]
pub(crate) struct Threads {
    starts: Vec<u32>,
    members: Vec<EntryId>,
}

impl Threads {
    /// How many conversations there are.
    pub(crate) fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// The messages of conversation `i`, newest first.
    pub(crate) fn get(&self, i: usize) -> Option<&[EntryId]> {
        let (&from, &to) = (self.starts.get(i)?, self.starts.get(i + 1)?);
        self.members.get(from as usize..to as usize)
    }
}

/// A page of conversations as rows: subjects, participants, counts, dates.
pub(crate) fn conversations(index: &Index, threads: &Threads, offset: usize, limit: usize) -> Vec<Conversation> {
    (offset..offset.saturating_add(limit))
        .map_while(|i| threads.get(i))
        .filter_map(|members| {
            let first = index.get(*members.last()?)?;
            let latest = index.get(*members.first()?)?;
            // Who started it first, as a reader expects.
            let mut participants: Vec<String> = Vec::new();
            for from in members.iter().rev().filter_map(|&id| index.get(id)?.summary.from.clone()) {
                let name = display_name(&from);
                if !participants.contains(&name) {
                    participants.push(name);
                    if participants.len() == PARTICIPANTS {
                        break;
                    }
                }
            }
            Some(Conversation { key: first.key.clone(), first, latest, count: members.len(), participants })
        })
        .collect()
}

/// `"Ann Example" <ann@example.org>` → `Ann Example`; a bare address stays as it is.
pub(crate) fn display_name(from: &str) -> String {
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

//! Threads: the conversation a message belongs to, from In-Reply-To and References, read through
//! the index's reply links.

use std::collections::HashSet;

use super::{EntryId, Index};
use crate::store::Link;

impl Index {
    /// The thread `id` belongs to, in reading order, each with its depth: up through In-Reply-To /
    /// References to the root, then every reply below it, oldest first. Loops and missing parents
    /// (common in real archives) end the walk rather than the thread.
    pub fn thread(&self, id: EntryId) -> Vec<(usize, EntryId)> {
        self.thread_by(id, &|mid| self.first_by_message_id(mid))
    }

    /// [`Index::thread`], the message a reply answers found by `parent_of` from the Message-ID
    /// it names: the first message carrying it for a reader of everything, the first they may
    /// read for a reader of some folders (see [`crate::index::Access::parent_among`]).
    pub fn thread_by(&self, id: EntryId, parent_of: &dyn Fn(&str) -> Option<EntryId>) -> Vec<(usize, EntryId)> {
        const MAX: usize = 500;
        let mut root = id;
        let mut seen = HashSet::new();
        seen.insert(id);
        while let Some(parent) = self.get(root).and_then(|e| e.parent.clone()) {
            match parent_of(&parent) {
                Some(p) if seen.insert(p) && seen.len() < MAX => root = p,
                _ => break,
            }
        }
        let mut out = Vec::new();
        let mut visited = HashSet::new();
        let mut stack = vec![(0usize, root)];
        while let Some((depth, e)) = stack.pop() {
            if !visited.insert(e) || out.len() >= MAX {
                continue;
            }
            out.push((depth, e));
            let Some(mid) = self.get(e).and_then(|x| x.message_id().map(str::to_string)) else { continue };
            let mut kids: Vec<(i64, EntryId)> = self
                .candidates(Link::ReplyTo, self.names.of(&mid))
                .into_iter()
                .filter_map(|k| {
                    let x = self.get(k)?;
                    (x.parent.as_deref() == Some(mid.as_str())).then(|| (x.summary.timestamp.unwrap_or(i64::MIN), k))
                })
                .collect();
            kids.sort_by_key(|&(ts, k)| (std::cmp::Reverse(ts), std::cmp::Reverse(k)));
            stack.extend(kids.into_iter().map(|(_, k)| (depth + 1, k)));
        }
        out
    }
}

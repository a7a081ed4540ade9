//! The parts of a [`View`] that depend on who reads: making a view for one reader, and what a
//! reader limited to some folders gets of the list, the folder tree, the labels, a thread and a
//! message's neighbours. A reader who may read everything never comes here (the view answers from
//! the index as it always has), so the single-person default costs nothing.

use std::collections::HashMap;
use std::sync::Arc;

use super::browse::{self, Scope};
use super::{LabelCounts, View};
use crate::index::folders::{self, FolderNode};
use crate::index::labels::LabelNode;
use crate::index::{Access, Entry, EntryId, Index};

impl View {
    /// The same archive and caches, read as a reader with `access`.
    pub fn scoped(&self, access: Access) -> View {
        View { archive: Arc::clone(&self.archive), access, caches: Arc::clone(&self.caches) }
    }

    /// What this view's reader may read.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The entry a URL id names, if this reader may read it (see [`crate::archive::Archive::find_within`]).
    pub fn find(&self, key: &str) -> Option<EntryId> {
        self.archive.find_within(key, &self.access)
    }

    /// How many listed messages this reader may read.
    pub fn listed_count(&self) -> usize {
        let index = self.archive.index();
        if self.access.is_everything() {
            return index.listed_count();
        }
        index.count_within(&self.access.table(&index))
    }

    /// The folder tree with each folder's own count, and the messages in no folder: the folders
    /// this reader may read, and those above them (with nothing counted in them).
    pub fn folder_tree(&self) -> (Vec<FolderNode>, usize) {
        let index = self.archive.index();
        if self.access.is_everything() {
            return browse::folder_tree(&index);
        }
        let counts: Vec<(String, usize)> = index
            .folder_counts()
            .filter(|(path, _)| !path.is_empty() && self.access.covers(path))
            .map(|(path, n)| (path.to_string(), n))
            .collect();
        (folders::tree(counts), 0)
    }

    /// Every label on a message this reader may read, with how many carry it, by name ignoring
    /// case. For a reader limited to some folders, one pass over the store, kept until the index
    /// changes.
    pub fn labels(&self) -> Vec<(String, usize)> {
        if self.access.is_everything() {
            return browse::labels(&self.archive.index());
        }
        let counts = self.label_counts_within();
        let mut merged: HashMap<String, (String, usize)> = HashMap::new();
        for (name, n) in &counts.own {
            let slot = merged.entry(crate::parse::labels::key(name)).or_insert_with(|| (name.clone(), 0));
            slot.1 += n;
        }
        let mut out: Vec<(String, usize)> = merged.into_values().collect();
        out.sort_by_key(|a| a.0.to_lowercase());
        out
    }

    /// The labels on the messages this reader may read as a tree, each with the messages
    /// carrying it and those carrying it or a label below it (see [`crate::index::labels`]).
    pub fn label_tree(&self) -> Vec<LabelNode> {
        if self.access.is_everything() {
            return browse::label_tree(&self.archive.index());
        }
        let counts = self.label_counts_within();
        crate::index::labels::tree(&counts.own, &counts.totals)
    }

    /// The label counts of the messages in this reader's folders, counted as the index counts
    /// them for everyone ([`crate::index::labels::counted`]); one pass, kept until the index changes.
    fn label_counts_within(&self) -> Arc<LabelCounts> {
        let key = (self.archive.index().generation(), self.access.clone());
        if let Some(hit) = self.caches.labels.get(&key) {
            return hit;
        }
        let (pass, table) = {
            let index = self.archive.index();
            (index.pass(), self.access.table(&index))
        };
        let mut counted: HashMap<String, usize> = HashMap::new();
        pass.each_listed_entry(|_, e| {
            if table.allows(e.folder) {
                for name in crate::index::labels::counted(&e.labels) {
                    *counted.entry(name).or_default() += 1;
                }
            }
        });
        let mut counts = LabelCounts::default();
        for (name, n) in counted {
            match name.strip_prefix(crate::index::labels::BELOW) {
                Some(below) => {
                    counts.totals.insert(below.to_string(), n);
                }
                None => counts.own.push((name, n)),
            }
        }
        let counts = Arc::new(counts);
        self.caches.labels.insert(key, Arc::clone(&counts));
        counts
    }

    /// [`View::page`] for a reader limited to some folders: the whole list and a label's are
    /// filtered by folder; a folder out of reach is as empty as one that does not exist.
    pub(super) fn page_within(
        &self,
        scope: &Scope,
        offset: usize,
        limit: usize,
    ) -> (Vec<(EntryId, Arc<Entry>)>, usize) {
        let labelled = matches!(scope, Scope::Label(_)).then(|| self.labelled(scope));
        let index = self.archive.index();
        let table = self.access.table(&index);
        match scope {
            Scope::All => {
                let (ids, total) = index.page_within(&table, offset, limit);
                (index.get_many(&ids), total)
            }
            Scope::Folder(path) => match index.folder_id(path.trim_matches('/')) {
                Some(f) if table.allows(f) => browse::page(&index, scope, offset, limit),
                _ => (Vec::new(), 0),
            },
            Scope::Label(_) => {
                let ids: Vec<EntryId> = labelled
                    .iter()
                    .flat_map(|ids| ids.iter().copied())
                    .filter(|&id| table.allows(index.folder_of(id)))
                    .collect();
                let wanted: Vec<EntryId> = ids.iter().skip(offset).take(limit).copied().collect();
                (index.get_many(&wanted), ids.len())
            }
        }
    }

    /// Of a thread as walked (`(depth, id)` in reading order), the messages this reader may read,
    /// each at its depth among them: a reply whose parent is out of reach sits under the nearest
    /// message above it that is not, so no gap tells that something is between.
    pub(super) fn readable_thread(&self, index: &Index, walked: Vec<(usize, EntryId)>) -> Vec<(usize, EntryId)> {
        let table = self.access.table(index);
        // The walk is depth first: each message's ancestors are the open entries before it.
        let mut open: Vec<(usize, bool)> = Vec::new();
        let mut out = Vec::new();
        for (depth, id) in walked {
            while open.last().is_some_and(|&(d, _)| d >= depth) {
                open.pop();
            }
            let readable = self.access.permits_with(index, &table, id);
            if readable {
                out.push((open.iter().filter(|&&(_, r)| r).count(), id));
            }
            open.push((depth, readable));
        }
        out
    }

    /// The messages this reader may read just before and after list position `pos`.
    pub(super) fn readable_neighbours(&self, index: &Index, pos: usize) -> (Option<Arc<Entry>>, Option<Arc<Entry>>) {
        let table = self.access.table(index);
        let listed = index.listed();
        let readable =
            |&&id: &&EntryId| table.allows(index.folder_of(id)) && index.folder_of(id) != crate::index::NO_FOLDER;
        let newer = listed.get(..pos).and_then(|before| before.iter().rev().find(readable));
        let older = listed.get(pos + 1..).and_then(|after| after.iter().find(readable));
        (newer.and_then(|&id| index.get(id)), older.and_then(|&id| index.get(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::fixtures::{mail, Fixture};

    fn fixture() -> Fixture {
        Fixture::of(&[
            ("Work/a.eml", mail("a@x", "Plans", 1, "X-Keywords: Shared\n", "first")),
            ("Legal/b.eml", mail("b@x", "Re: Plans", 2, "In-Reply-To: <a@x>\nX-Keywords: Secret, Shared\n", "hidden")),
            ("Work/c.eml", mail("c@x", "Re: Plans", 3, "In-Reply-To: <b@x>\n", "third")),
            ("Work/d.eml", mail("d@x", "Re: Plans", 4, "In-Reply-To: <a@x>\n", "fourth")),
        ])
    }

    #[test]
    fn a_reader_of_some_folders_sees_only_their_messages_everywhere() {
        let fx = fixture();
        let work = fx.view.scoped(Access::folders(["work"]));
        let keys = |thread: Vec<crate::view::ThreadMessage>| -> Vec<(usize, String)> {
            thread.into_iter().map(|t| (t.depth, t.entry.key.clone())).collect()
        };
        let all = keys(fx.view.thread(fx.id("a@x")));
        assert_eq!(all, [(0, "a@x".into()), (1, "b@x".into()), (2, "c@x".into()), (1, "d@x".into())]);
        // The reply to the hidden message sits under the one above it, with no gap.
        let seen = keys(work.thread(fx.id("c@x")));
        assert_eq!(seen, [(0, "a@x".into()), (1, "c@x".into()), (1, "d@x".into())]);
        assert_eq!((fx.view.listed_count(), work.listed_count()), (4, 3));
        let (page, total) = work.page(&Scope::All, 0, 10);
        assert_eq!((page.len(), total), (3, 3));
        assert_eq!(work.page(&Scope::Folder("Legal".into()), 0, 10).1, 0);
        assert_eq!(work.page(&Scope::Label("secret".into()), 0, 10).1, 0);
        assert_eq!(work.page(&Scope::Label("shared".into()), 0, 10).1, 1);
        let (tree, top) = work.folder_tree();
        assert_eq!((tree.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), top), (vec!["Work"], 0));
        assert_eq!(work.labels(), [("Shared".to_string(), 1)]);
        assert!(work.find("b@x").is_none() && work.find("c@x").is_some());
        // Newest first: d, c, (b), a. c's older neighbour is a, past the hidden b.
        let (newer, older) = work.neighbours(fx.id("c@x"));
        assert_eq!(
            (newer.map(|e| e.key.clone()), older.map(|e| e.key.clone())),
            (Some("d@x".into()), Some("a@x".into()))
        );
        let found = work.search("plans", 0, 10).unwrap();
        assert_eq!(found.total, 3);
        assert!(work.search("hidden", 0, 10).unwrap().hits.is_empty());
        assert_eq!(work.stats(&Scope::All, "").unwrap().messages, 3);
        let (conversations, n) = work.conversations(&Scope::All, 0, 10);
        assert_eq!((n, conversations[0].count), (1, 3));
        assert!(Access::nothing() != Access::everything());
        let none = fx.view.scoped(Access::nothing());
        assert_eq!(
            (none.listed_count(), none.page(&Scope::All, 0, 10).1, none.search("plans", 0, 9).unwrap().total),
            (0, 0, 0)
        );
    }
}

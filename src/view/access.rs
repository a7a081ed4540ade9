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

    /// The id this reader knows a message by, in every URL and answer ([`Access::shown_key`]):
    /// its key, unless that tells of a message they may not read.
    pub fn key_of<'e>(&self, entry: &'e Entry) -> std::borrow::Cow<'e, str> {
        if self.access.is_everything() {
            return std::borrow::Cow::Borrowed(entry.key.as_str());
        }
        self.access.shown_key(&self.archive.index(), entry)
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

    /// The messages this reader may read just before and after list position `pos`; none around
    /// a message filed where they may not read it (which they read enclosed in another, and
    /// which for them is in no list).
    pub(super) fn readable_neighbours(&self, index: &Index, pos: usize) -> (Option<Arc<Entry>>, Option<Arc<Entry>>) {
        let table = self.access.table(index);
        let listed = index.listed();
        if !listed.get(pos).is_some_and(|&id| table.allows(index.folder_of(id))) {
            return (None, None);
        }
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

    #[test]
    fn a_message_id_held_first_out_of_reach_is_the_readers_own_message_s() {
        let fx = Fixture::of(&[
            ("Legal/x.eml", mail("dup@x", "Hidden", 1, "", "hidden")),
            ("Work/y.eml", mail("dup@x", "Plans", 2, "", "mine")),
            ("Work/z.eml", mail("z@x", "Re: Plans", 3, "In-Reply-To: <dup@x>\n", "reply")),
        ]);
        let work = fx.view.scoped(Access::folders(["work"]));
        let index = fx.view.archive().index();
        let mine = index.by_message_id("dup@x")[1];
        let entry = index.get(mine).expect("indexed");
        // Everyone else knows it by an id of its own; the reader of Work by its Message-ID.
        assert!(fx.view.key_of(&entry).ends_with("@mailshelf.invalid"));
        assert_eq!(work.key_of(&entry), "dup@x");
        assert_eq!(work.find("dup@x"), Some(mine));
        let hidden = index.get(index.by_message_id("dup@x")[0]).expect("indexed");
        assert_eq!(work.key_of(&hidden), "dup@x", "out of reach: as it is (never shown)");
        // The reply sits under the message the reader reads, as it would were the other not there.
        let thread: Vec<(usize, EntryId)> = work.thread(fx.id("z@x")).iter().map(|t| (t.depth, t.id)).collect();
        assert_eq!(thread, [(0, mine), (1, fx.id("z@x"))]);
        let (conversations, _) = work.conversations(&Scope::All, 0, 10);
        assert_eq!((conversations.len(), conversations[0].count, conversations[0].key.as_str()), (1, 2, "dup@x"));
        let (everyone, _) = fx.view.conversations(&Scope::All, 0, 10);
        assert_eq!(everyone.iter().map(|c| c.count).collect::<Vec<_>>(), [2, 1], "the reply joins the first");
    }

    /// A message enclosing `inner` (whose bytes it holds as they are), filed as `mid`.
    fn enclosing(mid: &str, day: u32, inner: &str) -> String {
        format!(
            "From: Ann <ann@example.org>\nSubject: Fwd\nDate: Mon, {day} Jan 2024 10:00:00 +0100\n\
             Message-ID: <{mid}>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"O\"\n\n\
             --O\nContent-Type: text/plain\n\nsee below\n--O\nContent-Type: message/rfc822\n\n{inner}\n--O--\n"
        )
    }

    /// How a message is shown: the key of the message it is enclosed in, its folder, its labels.
    type Shown = (Option<String>, crate::index::FolderId, Vec<String>);

    /// What a reader of `Work` gets of the enclosed message `e@x`: whether they find it, how it is
    /// shown, its neighbours, and what a search for its words and the list give them.
    fn as_read(fx: &Fixture) -> (Option<Shown>, bool, Vec<String>, usize) {
        let work = fx.view.scoped(Access::folders(["work"]));
        let shown = work.find("e@x").map(|id| {
            let loaded = work.read_now(id).expect("reads");
            let index = fx.view.archive().index();
            let above = match loaded.entry.location {
                crate::index::Location::Nested { parent, .. } => index.get(parent).map(|e| e.key.clone()),
                crate::index::Location::Top { .. } => None,
            };
            (above, loaded.entry.folder, loaded.entry.labels.clone())
        });
        let neighbours = work.find("e@x").is_some_and(|id| {
            let (newer, older) = work.neighbours(id);
            newer.is_some() || older.is_some()
        });
        let found = work.search("innerword", 0, 10).unwrap().hits.iter().map(|h| h.entry.key.clone()).collect();
        (shown, neighbours, found, work.listed_count())
    }

    #[test]
    fn a_message_enclosed_in_a_readable_one_is_read_there_wherever_else_it_is_filed() {
        let inner = mail("e@x", "Inner", 2, "X-Keywords: Inner\n", "innerword");
        let read_there = (Some((Some("a@x".to_string()), crate::index::NO_FOLDER, vec!["Inner".to_string()])), false);
        // Enclosed only; filed on its own out of reach, found before (`Legal`) or after (`Zeal`)
        // the message enclosing it; enclosed first in a message out of reach (`Legal/b`).
        let cases: [&[(&str, String)]; 4] = [
            &[("Work/a.eml", enclosing("a@x", 3, &inner))],
            &[("Legal/e.eml", inner.clone()), ("Work/a.eml", enclosing("a@x", 3, &inner))],
            &[("Work/a.eml", enclosing("a@x", 3, &inner)), ("Zeal/e.eml", inner.clone())],
            &[("Legal/b.eml", enclosing("b@x", 4, &inner)), ("Work/a.eml", enclosing("a@x", 3, &inner))],
        ];
        for files in cases {
            let fx = Fixture::of(files);
            let (shown, neighbours, found, listed) = as_read(&fx);
            assert_eq!((shown, neighbours), read_there, "{files:?}");
            assert_eq!((found, listed), (vec!["a@x".to_string()], 1), "{files:?}");
            // Whoever may read everything reads it where it is filed, when it is.
            let all = fx.view.find("e@x").and_then(|id| fx.view.read_now(id)).expect("reads");
            let filed = files.iter().any(|(path, _)| path.ends_with("/e.eml"));
            assert_eq!(matches!(all.entry.location, crate::index::Location::Top { .. }), filed, "{files:?}");
            // Neither the folder it is filed in nor a list of it opens to the reader.
            let work = fx.view.scoped(Access::folders(["work"]));
            for folder in ["Legal", "Zeal"] {
                assert_eq!(work.page(&Scope::Folder(folder.into()), 0, 10).1, 0);
            }
        }
    }

    #[test]
    fn a_message_enclosed_in_one_taken_away_is_read_no_longer() {
        let inner = mail("e@x", "Inner", 2, "", "innerword");
        let fx = Fixture::of(&[
            ("Legal/e.eml", inner.clone()),
            ("Work/a.eml", enclosing("a@x", 3, &inner)),
            ("Work/c.eml", enclosing("c@x", 4, &inner)),
        ]);
        let work = fx.view.scoped(Access::folders(["work"]));
        assert!(work.find("e@x").is_some());
        for (gone, readable) in [("Work/a.eml", true), ("Work/c.eml", false)] {
            std::fs::remove_file(fx.dir.path().join("mail").join(gone)).unwrap();
            fx.add(&[]);
            assert_eq!(work.find("e@x").is_some(), readable, "{gone} taken away");
        }
        assert!(fx.view.find("e@x").is_some(), "still filed in Legal");
    }

    #[test]
    fn a_message_enclosed_in_several_stays_when_the_first_goes() {
        let inner = mail("e@x", "Inner", 2, "", "innerword");
        let fx =
            Fixture::of(&[("Legal/b.eml", enclosing("b@x", 4, &inner)), ("Work/a.eml", enclosing("a@x", 3, &inner))]);
        std::fs::remove_file(fx.dir.path().join("mail/Legal/b.eml")).unwrap();
        fx.add(&[]);
        let (shown, ..) = as_read(&fx);
        assert_eq!(shown.map(|s| s.0), Some(Some("a@x".to_string())));
        let everything = fx.view.find("e@x").and_then(|id| fx.view.read_now(id)).expect("reads");
        assert_eq!(everything.message().summary.subject.as_deref(), Some("Inner"));
    }
}

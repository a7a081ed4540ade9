//! The index: every indexed message by key, Message-ID, Content-ID and content hash, and the order of
//! the list. The entries and their lookups live in the [`Store`]; memory holds only what stays small
//! per message (the list order and each message's folder: 8 bytes a message), the changes not yet
//! committed, and a bounded cache of entries recently read. So a million messages cost megabytes,
//! not a gigabyte, and a warm start reads the list, not every entry. No HTTP: the archive fills it,
//! routes and pages read it.

pub mod folders;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub use crate::store::entry::{
    content_hash, AttachmentInfo, ContentHash, Entry, EntryId, FolderId, Listing, Location, NO_ENTRY, NO_FOLDER,
};
use crate::store::{rank, Batch, Changes, Link, NameHasher, Store};

use crate::error::Error;
use crate::ingest::Source;
use crate::model::Message;

/// What [`Index::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    New(EntryId),
    /// The same bytes were already indexed under this entry.
    Duplicate(EntryId),
}

impl Added {
    pub fn id(self) -> EntryId {
        match self {
            Added::New(id) | Added::Duplicate(id) => id,
        }
    }
}

/// The key of [`string_hash`], drawn at random once per process.
static STRING_HASH_KEY: std::sync::LazyLock<std::collections::hash_map::RandomState> =
    std::sync::LazyLock::new(std::collections::hash_map::RandomState::new);

/// SipHash of a string under a key drawn at start-up, for sets kept while a run lasts (never stored).
pub fn string_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    STRING_HASH_KEY.hash_one(s)
}

/// Decoded entries kept in memory: the pages being read and their neighbours. Everything else is
/// read from the store when asked for.
const CACHED_ENTRIES: usize = 8192;

/// New messages at the end of the list above which sorting reads the whole order back from the
/// store (one sequential pass: 0.15 s at a million) instead of placing each by a binary search
/// (some twenty entry reads each).
const RELOAD_ORDER_AFTER: usize = 256;

pub struct Index {
    store: Arc<dyn Store>,
    names: NameHasher,
    cache: quick_cache::sync::Cache<EntryId, Arc<Entry>>,
    /// Changes not yet committed: what an entry is now, `None` when removed (at most a commit's
    /// worth of entries, plus the ids removed in one run).
    pending: HashMap<EntryId, Option<Arc<Entry>>>,
    /// The lookups of pending entries, until they are committed.
    overlay: HashMap<(Link, u64), Vec<EntryId>>,
    overlay_hashes: HashMap<ContentHash, EntryId>,
    /// While the first run into an empty store lasts: every key it has put, so that a lookup of
    /// a key never put (nearly every lookup of a cold index) skips the store.
    seen: Option<Seen>,
    /// One more than the largest entry id known here.
    next_id: EntryId,
    /// How far this index has followed the store's feed of changes (a shared store).
    seq: u64,
    /// Listed (top-level) entries: newest first up to `sorted`, then in the order found.
    listed: Vec<EntryId>,
    sorted: usize,
    /// Listed entries removed since the list was last sorted.
    unlisted: HashSet<EntryId>,
    /// The folder of every listed entry, by entry id ([`NO_FOLDER`] for others).
    folder_of: Vec<FolderId>,
    /// Folder paths by id, how many listed messages each holds, ids by path, and how many of the
    /// paths the store has.
    folders: Vec<String>,
    folder_counts: Vec<usize>,
    folder_ids: HashMap<String, FolderId>,
    folders_saved: usize,
    /// How many listed messages carry each label (the store's counts and ours not yet committed),
    /// and our changes to them that the store lacks.
    label_counts: HashMap<String, usize>,
    label_changes: HashMap<String, i64>,
    /// Bumped by every change, so what was derived from the index (rewritten documents, whose
    /// `cid:`/`mid:` links may reach other messages) knows when it may be stale.
    generation: u64,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("listed", &self.listed.len()).field("pending", &self.pending.len()).finish()
    }
}

impl Index {
    /// The index as the store left it: the list, the folders and the labels are read; entries are
    /// read when asked for.
    pub fn open(store: Arc<dyn Store>) -> Result<Index, Error> {
        let next_id = store.next_id()?;
        let mut index = Index {
            names: store.names().clone(),
            cache: quick_cache::sync::Cache::new(CACHED_ENTRIES),
            pending: HashMap::new(),
            overlay: HashMap::new(),
            overlay_hashes: HashMap::new(),
            seen: None,
            next_id,
            seq: 0,
            listed: Vec::new(),
            sorted: 0,
            unlisted: HashSet::new(),
            folder_of: Vec::new(),
            folders: Vec::new(),
            folder_counts: Vec::new(),
            folder_ids: HashMap::new(),
            folders_saved: 0,
            label_counts: HashMap::new(),
            label_changes: HashMap::new(),
            generation: 0,
            store,
        };
        index.reload()?;
        Ok(index)
    }

    /// Reads the folders, labels and list back from the store, with what is not committed yet in
    /// its place.
    fn reload(&mut self) -> Result<(), Error> {
        // Taken first: what others commit while this reads is applied again, which changes nothing.
        self.seq = self.store.change_seq()?;
        self.reload_folders()?;
        self.reload_labels()?;
        self.reload_order()?;
        let mut ours: Vec<(EntryId, Arc<Entry>)> =
            self.pending.iter().filter_map(|(&id, c)| Some((id, Arc::clone(c.as_ref()?)))).collect();
        ours.sort_unstable_by_key(|(id, _)| *id);
        for (id, e) in ours {
            if matches!(e.location, Location::Top { .. }) && self.folder_of(id) == NO_FOLDER {
                self.place(id, e.folder);
            }
        }
        Ok(())
    }

    /// Reads every folder path from the store (a shared store's other replicas may have added some).
    fn reload_folders(&mut self) -> Result<(), Error> {
        for (id, path) in self.store.folders()? {
            let slot = id as usize;
            if self.folders.len() <= slot {
                self.folders.resize(slot + 1, String::new());
                self.folder_counts.resize(slot + 1, 0);
            }
            self.folder_ids.insert(path.clone(), id);
            self.folders[slot] = path;
        }
        self.folders_saved = self.folders_saved.max(self.folders.len());
        Ok(())
    }

    /// The store's label counts, with our changes not yet committed added.
    fn reload_labels(&mut self) -> Result<(), Error> {
        let mut counts: HashMap<String, i64> =
            self.store.labels()?.into_iter().map(|(l, n)| (l, i64::try_from(n).unwrap_or(i64::MAX))).collect();
        for (l, d) in &self.label_changes {
            *counts.entry(l.clone()).or_default() += d;
        }
        self.label_counts = counts.into_iter().map(|(l, n)| (l, usize::try_from(n).unwrap_or(0))).collect();
        Ok(())
    }

    /// How far this index has followed the store's feed of changes.
    pub fn feed_position(&self) -> u64 {
        self.seq
    }

    /// Applies what other replicas committed to a shared store since feed position `from` (read
    /// with [`Store::changes_since`] without holding the index): new messages join the list,
    /// removed ones leave it, changed entries are read afresh. Returns whether anything changed.
    pub fn apply_changes(&mut self, from: u64, changes: Changes) -> Result<bool, Error> {
        let Changes { upto, gap, entries } = changes;
        if from != self.seq {
            // Read again meanwhile: these changes are in it, or come at the next call.
            return Ok(false);
        }
        if gap {
            tracing::info!("the change feed no longer reaches back here; reading the list again");
            self.cache.clear();
            self.reload()?;
            self.generation += 1;
            return Ok(true);
        }
        self.seq = upto;
        if entries.is_empty() {
            return Ok(false);
        }
        self.reload_folders()?;
        for (id, now) in entries {
            // Changed here since: ours is newer until it is committed.
            if self.pending.contains_key(&id) {
                continue;
            }
            self.cache.remove(&id);
            self.next_id = self.next_id.max(id.saturating_add(1));
            if let (Some(seen), Some(e)) = (&mut self.seen, &now) {
                // Put by another replica during our first run: no longer a key never put.
                for (link, h) in crate::store::links_of(e, &self.names) {
                    seen.insert(link_key(link, h));
                }
                seen.insert(hash_key(&e.hash));
            }
            let listed_now = now.filter(|e| matches!(e.location, Location::Top { .. }));
            let here = self.folder_of(id);
            match listed_now {
                Some(e) if here == NO_FOLDER => self.place(id, e.folder),
                Some(e) if here != e.folder => {
                    if let Some(n) = self.folder_counts.get_mut(here as usize) {
                        *n = n.saturating_sub(1);
                    }
                    self.file_in(id, e.folder);
                }
                Some(_) => {}
                None if here != NO_FOLDER => self.unlist(id, here),
                None => {}
            }
        }
        self.reload_labels()?;
        self.generation += 1;
        self.sort();
        Ok(true)
    }

    /// Puts a listed entry at the end of the list, in its folder.
    fn place(&mut self, id: EntryId, folder: FolderId) {
        self.listed.push(id);
        self.file_in(id, folder);
    }

    /// Records a listed entry's folder, and counts it there.
    fn file_in(&mut self, id: EntryId, folder: FolderId) {
        let slot = id as usize;
        if self.folder_of.len() <= slot {
            self.folder_of.resize(slot + 1, NO_FOLDER);
        }
        self.folder_of[slot] = folder;
        let f = folder as usize;
        if self.folder_counts.len() <= f && folder != NO_FOLDER {
            self.folder_counts.resize(f + 1, 0);
            self.folders.resize(f + 1, String::new());
        }
        if let Some(n) = self.folder_counts.get_mut(f) {
            *n += 1;
        }
    }

    /// Takes a listed entry out of the list (at the next sort) and out of its folder's count.
    fn unlist(&mut self, id: EntryId, folder: FolderId) {
        self.unlisted.insert(id);
        if let Some(n) = self.folder_counts.get_mut(folder as usize) {
            *n = n.saturating_sub(1);
        }
        if let Some(slot) = self.folder_of.get_mut(id as usize) {
            *slot = NO_FOLDER;
        }
    }

    /// Reads the list and each listed message's folder back from the store.
    fn reload_order(&mut self) -> Result<(), Error> {
        let mut listed = Vec::with_capacity(self.listed.len());
        let mut folder_of = vec![NO_FOLDER; self.next_id as usize];
        let mut counts = vec![0usize; self.folders.len()];
        self.store.each_listed(&mut |id, folder| {
            listed.push(id);
            let slot = id as usize;
            if folder_of.len() <= slot {
                // Another replica's message, newer than this index.
                folder_of.resize(slot + 1, NO_FOLDER);
            }
            folder_of[slot] = folder;
            if let Some(n) = counts.get_mut(folder as usize) {
                *n += 1;
            }
        })?;
        self.sorted = listed.len();
        self.listed = listed;
        self.next_id = self.next_id.max(folder_of.len() as EntryId);
        self.folder_of = folder_of;
        self.folder_counts = counts;
        self.unlisted.clear();
        Ok(())
    }

    pub fn get(&self, id: EntryId) -> Option<Arc<Entry>> {
        if let Some(change) = self.pending.get(&id) {
            return change.clone();
        }
        if let Some(hit) = self.cache.get(&id) {
            return Some(hit);
        }
        match self.store.entry(id) {
            Ok(Some(e)) => {
                let e = Arc::new(e);
                self.cache.insert(id, Arc::clone(&e));
                Some(e)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(id, error = %e, "index entry unreadable");
                None
            }
        }
    }

    /// The entries of `ids` that exist, in the order given: what is not pending or cached is read
    /// from the store in one call.
    pub fn get_many(&self, ids: &[EntryId]) -> Vec<(EntryId, Arc<Entry>)> {
        let mut found: HashMap<EntryId, Arc<Entry>> = HashMap::with_capacity(ids.len());
        let mut missing = Vec::new();
        for &id in ids {
            match self.pending.get(&id) {
                Some(Some(e)) => {
                    found.insert(id, Arc::clone(e));
                }
                Some(None) => {}
                None => match self.cache.get(&id) {
                    Some(e) => {
                        found.insert(id, e);
                    }
                    None => missing.push(id),
                },
            }
        }
        if !missing.is_empty() {
            match self.store.entries(&missing) {
                Ok(read) => {
                    for (id, e) in read {
                        let e = Arc::new(e);
                        self.cache.insert(id, Arc::clone(&e));
                        found.insert(id, e);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "index entries unreadable"),
            }
        }
        ids.iter().filter_map(|id| Some((*id, found.get(id)?.clone()))).collect()
    }

    /// Entries a name is linked to by `link`, to be checked against the entries.
    fn candidates(&self, link: Link, hash: u64) -> Vec<EntryId> {
        let never_put = self.seen.as_ref().is_some_and(|s| !s.may_hold(link_key(link, hash)));
        let stored = if never_put { Ok(Vec::new()) } else { self.store.linked(link, hash) };
        let mut ids = stored.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "index lookup failed");
            Vec::new()
        });
        if let Some(more) = self.overlay.get(&(link, hash)) {
            for &id in more {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// The entries linked to `name` by `link` that pass `test`, in id order.
    fn named(&self, link: Link, name: &str, test: impl Fn(&Entry) -> bool) -> Vec<EntryId> {
        let mut ids: Vec<EntryId> = self
            .candidates(link, self.names.of(name))
            .into_iter()
            .filter(|&id| self.get(id).is_some_and(|e| test(&e)))
            .collect();
        ids.sort_unstable();
        ids
    }

    pub fn by_key(&self, key: &str) -> Option<EntryId> {
        self.named(Link::Name, key, |e| e.key == key).first().copied()
    }

    /// Every entry carrying this Message-ID (several when real archives reuse one).
    pub fn by_message_id(&self, message_id: &str) -> Vec<EntryId> {
        self.named(Link::Name, message_id, |e| e.message_id() == Some(message_id))
    }

    /// The first entry carrying this Message-ID.
    pub fn first_by_message_id(&self, message_id: &str) -> Option<EntryId> {
        self.by_message_id(message_id).first().copied()
    }

    pub fn by_content_id(&self, content_id: &str) -> Vec<EntryId> {
        self.named(Link::ContentId, content_id, |e| e.content_ids.iter().any(|c| c == content_id))
    }

    pub fn by_hash(&self, hash: &ContentHash) -> Option<EntryId> {
        if let Some(&id) = self.overlay_hashes.get(hash) {
            return Some(id);
        }
        if self.seen.as_ref().is_some_and(|s| !s.may_hold(hash_key(hash))) {
            return None;
        }
        let id = self.store.by_hash(hash).ok()??;
        // Removed and not yet committed: gone.
        self.get(id).filter(|e| e.hash == *hash).map(|_| id)
    }

    /// The listed messages, newest first (those added since the last [`Index::sort`] at the end).
    pub fn listed(&self) -> &[EntryId] {
        &self.listed
    }

    pub fn listed_count(&self) -> usize {
        self.listed.len().saturating_sub(self.unlisted.len())
    }

    /// Records a change: the entry now reads as `new`, and its lookups find it until committed.
    fn put(&mut self, id: EntryId, new: Option<Arc<Entry>>) {
        self.generation += 1;
        if let Some(e) = &new {
            for (link, h) in crate::store::links_of(e, &self.names) {
                if let Some(seen) = &mut self.seen {
                    seen.insert(link_key(link, h));
                }
                let ids = self.overlay.entry((link, h)).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            self.overlay_hashes.insert(e.hash, id);
            if let Some(seen) = &mut self.seen {
                seen.insert(hash_key(&e.hash));
            }
        } else if let Some(Some(e)) = self.pending.get(&id) {
            if self.overlay_hashes.get(&e.hash) == Some(&id) {
                self.overlay_hashes.remove(&e.hash);
            }
        }
        self.pending.insert(id, new);
    }

    /// Adds a parsed message and every message nested in it. Fails only when a shared store
    /// cannot hand out an id.
    pub fn add(&mut self, msg: &Message, location: Location) -> Result<Added, Error> {
        // Keyed by the message that was read, not the file: a `.partial.emlx` is completed from the
        // files beside it, so two identical files may hold two different messages.
        self.add_hashed(msg, content_hash(&msg.raw), location)
    }

    /// [`Index::add`] with the message's [`content_hash`] worked out already (by a parse worker,
    /// off the one thread that adds).
    pub fn add_hashed(&mut self, msg: &Message, hash: ContentHash, location: Location) -> Result<Added, Error> {
        let listed = matches!(location, Location::Top { .. });
        if let Some(existing) = self.by_hash(&hash) {
            if let Some(e) = self.get(existing) {
                match (&e.location, &location) {
                    // Found before only inside another message, now given on its own: list it,
                    // read from its own source from now on.
                    (Location::Nested { .. }, Location::Top { .. }) => {
                        let mut e = (*e).clone();
                        e.location = location;
                        e.folder = self.file(&e)?;
                        self.list(existing, &e);
                        self.put(existing, Some(Arc::new(e)));
                    }
                    // Found again in the file it was read from (re-read after a change), maybe at
                    // another place in it: the same message, now there.
                    (Location::Top { source: was, .. }, Location::Top { source: now, .. })
                        if was.path() == now.path() && was != now =>
                    {
                        let mut e = (*e).clone();
                        e.location = location;
                        self.put(existing, Some(Arc::new(e)));
                    }
                    _ => {}
                }
            }
            return Ok(Added::Duplicate(existing));
        }
        let key = match &msg.message_id {
            Some(mid) if self.by_key(mid).is_none() => mid.clone(),
            _ => crate::ids::derived_message_id(&msg.raw),
        };
        let id = self.store.new_id()?;
        self.next_id = self.next_id.max(id.saturating_add(1));
        let mut content_ids: Vec<String> =
            msg.parts.iter().filter_map(|p| p.reference_id().map(str::to_string)).collect();
        content_ids.dedup();
        let has_attachments = msg.has_attachments();
        let parent = msg
            .summary
            .references
            .last()
            .or_else(|| msg.summary.in_reply_to.first())
            .filter(|p| Some(*p) != msg.message_id.as_ref())
            .cloned();
        let summary = Listing {
            subject: msg.summary.subject.clone(),
            from: msg.summary.from.clone(),
            timestamp: msg.summary.timestamp,
            zone: msg.summary.date.as_deref().and_then(crate::dates::offset_minutes),
        };
        let attachments = msg
            .attachments()
            .take(crate::limits::MAX_LISTED_ATTACHMENTS)
            .map(|p| AttachmentInfo { content_type: p.content_type.clone(), size: p.size() as u64 })
            .collect();
        let mut entry = Entry::new(key, msg.message_id.clone(), location, hash);
        entry.summary = summary;
        entry.size = msg.given().len() as u64;
        entry.content_ids = content_ids;
        entry.has_attachments = has_attachments;
        entry.parent = parent;
        entry.labels = msg.summary.labels.clone();
        entry.list = msg.summary.list.clone();
        entry.attachments = attachments;
        if listed {
            entry.folder = self.file(&entry)?;
            self.list(id, &entry);
        }
        self.put(id, Some(Arc::new(entry)));
        for (part, nested) in msg.nested() {
            self.add(nested, Location::Nested { parent: id, part })?;
        }
        Ok(Added::New(id))
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Puts a listed entry at the end of the list, counted in its folder and labels.
    fn list(&mut self, id: EntryId, e: &Entry) {
        self.place(id, e.folder);
        for l in &e.labels {
            *self.label_counts.entry(l.clone()).or_default() += 1;
            *self.label_changes.entry(l.clone()).or_default() += 1;
        }
    }

    /// The folder a listed entry is filed in, by its location (a new folder gets an id).
    fn file(&mut self, e: &Entry) -> Result<FolderId, Error> {
        let Location::Top { source, rel, uploaded, .. } = &e.location else { return Ok(NO_FOLDER) };
        let path = if let Source::Stored { folder, .. } = source {
            if folder.is_empty() {
                crate::index::folders::UPLOADS.to_string()
            } else {
                format!("{}/{folder}", crate::index::folders::UPLOADS)
            }
        } else if let (true, Source::Pst { path, folder, .. }) = (*uploaded, source) {
            // An uploaded Outlook data file keeps its folders, under the name it came with.
            let name = std::path::Path::new(path.file_name().unwrap_or_default());
            format!("{}/{}", crate::index::folders::UPLOADS, crate::index::folders::pst_folder(name, folder))
        } else if *uploaded {
            crate::index::folders::UPLOADS.to_string()
        } else {
            let full = source.path().to_string_lossy();
            let rel_path = full.get(usize::from(*rel)..).unwrap_or(&full);
            match source {
                Source::Pst { folder, .. } => crate::index::folders::pst_folder(std::path::Path::new(rel_path), folder),
                _ => crate::index::folders::folder_of(
                    std::path::Path::new(rel_path),
                    matches!(source, Source::Mbox { .. }),
                ),
            }
        };
        if let Some(&f) = self.folder_ids.get(&path) {
            return Ok(f);
        }
        let f = match self.store.folder_id(&path)? {
            // Numbered by a shared store, which has it already.
            Some(f) => {
                let slot = f as usize;
                if self.folders.len() <= slot {
                    self.folders.resize(slot + 1, String::new());
                    self.folder_counts.resize(slot + 1, 0);
                }
                self.folders[slot] = path.clone();
                self.folders_saved = self.folders_saved.max(self.folders.len());
                f
            }
            None => {
                let f = self.folders.len() as FolderId;
                self.folders.push(path.clone());
                self.folder_counts.push(0);
                f
            }
        };
        self.folder_ids.insert(path, f);
        Ok(f)
    }

    /// The path of a folder (`""` for messages at the top of a PATH and for enclosed ones).
    pub fn folder_path(&self, folder: FolderId) -> &str {
        self.folders.get(folder as usize).map_or("", String::as_str)
    }

    /// The id of the folder at `path`, if any message was ever filed there.
    pub fn folder_id(&self, path: &str) -> Option<FolderId> {
        self.folder_ids.get(path).copied()
    }

    /// Every folder that holds listed messages, with how many.
    pub fn folder_counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.folders.iter().zip(&self.folder_counts).filter(|(_, &n)| n > 0).map(|(p, &n)| (p.as_str(), n))
    }

    /// Every label on a listed message, with how many carry it.
    pub fn label_counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.label_counts.iter().filter(|(_, &n)| n > 0).map(|(l, &n)| (l.as_str(), n))
    }

    /// Adds what changed since the last commit to `batch` (they stay pending until
    /// [`Index::committed`]).
    pub fn take_changes(&self, batch: &mut Batch) {
        let mut ids: Vec<EntryId> = self.pending.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            match self.pending.get(&id) {
                Some(Some(new)) => batch.entries.push((id, Arc::clone(new))),
                Some(None) => batch.removed.push(id),
                None => {}
            }
        }
        batch
            .folders
            .extend(self.folders.iter().enumerate().skip(self.folders_saved).map(|(i, p)| (i as FolderId, p.clone())));
        batch.labels.extend(self.label_changes.iter().filter(|(_, &d)| d != 0).map(|(l, &d)| (l.clone(), d)));
    }

    /// The store now holds `batch`: its changes are no longer pending (unless changed again since).
    pub fn committed(&mut self, batch: &Batch) {
        for (id, new) in &batch.entries {
            if self.pending.get(id).is_some_and(|c| c.as_ref().is_some_and(|n| Arc::ptr_eq(n, new))) {
                self.pending.remove(id);
                self.cache.insert(*id, Arc::clone(new));
            }
        }
        for id in &batch.removed {
            if self.pending.get(id).is_some_and(Option::is_none) {
                self.pending.remove(id);
                self.cache.remove(id);
            }
        }
        self.folders_saved =
            self.folders_saved.max(batch.folders.iter().map(|(f, _)| *f as usize + 1).max().unwrap_or(0));
        for (l, d) in &batch.labels {
            if let Some(left) = self.label_changes.get_mut(l) {
                *left -= d;
                if *left == 0 {
                    self.label_changes.remove(l);
                }
            }
        }
        self.overlay.clear();
        self.overlay_hashes.clear();
        let still: Vec<(EntryId, Arc<Entry>)> =
            self.pending.iter().filter_map(|(&id, c)| Some((id, Arc::clone(c.as_ref()?)))).collect();
        for (id, e) in still {
            for (link, h) in crate::store::links_of(&e, &self.names) {
                self.overlay.entry((link, h)).or_default().push(id);
            }
            self.overlay_hashes.insert(e.hash, id);
        }
        if self.pending.is_empty() {
            self.pending.shrink_to(1024);
            self.overlay.shrink_to(1024);
            self.overlay_hashes.shrink_to(1024);
        }
    }

    /// Removes an entry and the messages nested in it.
    pub fn remove(&mut self, id: EntryId) {
        let Some(entry) = self.get(id) else { return };
        self.put(id, None);
        if matches!(entry.location, Location::Top { .. }) {
            // Not in this list yet when another replica added it and this one has not followed
            // the feed that far: nothing to take out here, but the store's counts still change.
            let here = self.folder_of(id);
            if here != NO_FOLDER {
                self.unlist(id, here);
            }
            for l in &entry.labels {
                if let Some(n) = self.label_counts.get_mut(l) {
                    *n = n.saturating_sub(1);
                }
                *self.label_changes.entry(l.clone()).or_default() -= 1;
            }
        }
        for c in self.candidates(Link::EnclosedIn, u64::from(id)) {
            // A child since given on its own stays.
            if matches!(self.get(c).map(|e| e.location.clone()), Some(Location::Nested { parent, .. }) if parent == id)
            {
                self.remove(c);
            }
        }
    }

    /// The thread `id` belongs to, in reading order, each with its depth: up through In-Reply-To /
    /// References to the root, then every reply below it, oldest first. Loops and missing parents
    /// (common in real archives) end the walk rather than the thread.
    pub fn thread(&self, id: EntryId) -> Vec<(usize, EntryId)> {
        const MAX: usize = 500;
        let mut root = id;
        let mut seen = HashSet::new();
        seen.insert(id);
        while let Some(parent) = self.get(root).and_then(|e| e.parent.clone()) {
            match self.first_by_message_id(&parent) {
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

    /// Starts what only the first run into an empty store needs ([`Seen`]), when the store is
    /// empty: nearly every lookup of such a run is of a key never put.
    pub fn begin_first_run(&mut self) {
        if self.next_id == 0 && self.listed.is_empty() && self.store.next_id().is_ok_and(|n| n == 0) {
            self.seen = Some(Seen::new());
        }
    }

    /// Ends what only the first run into an empty store needs ([`Seen`]): later runs and uploads
    /// add a few messages each, and look them up in the store.
    pub fn end_first_run(&mut self) {
        self.seen = None;
    }

    /// Orders the list newest first (undated last), then in the order found: the messages added
    /// since the last sort are placed into it, and removed ones dropped.
    pub fn sort(&mut self) {
        if !self.unlisted.is_empty() {
            let unlisted = std::mem::take(&mut self.unlisted);
            let mut head = 0;
            let mut i = 0;
            let sorted = self.sorted;
            self.listed.retain(|id| {
                let keep = !unlisted.contains(id);
                if i < sorted {
                    head += usize::from(keep);
                }
                i += 1;
                keep
            });
            self.sorted = head;
        }
        if self.sorted == self.listed.len() {
            return;
        }
        // Once everything is committed, the order table has the whole list in order.
        let tail_len = self.listed.len() - self.sorted;
        if tail_len > RELOAD_ORDER_AFTER && self.pending.is_empty() {
            match self.reload_order() {
                Ok(()) => return,
                Err(e) => tracing::warn!(error = %e, "list order not read back; sorting in memory"),
            }
        }
        let rank_of = |id: EntryId| (self.get(id).map_or(u64::MAX, |e| rank(e.summary.timestamp)), id);
        let mut tail: Vec<(u64, EntryId)> = self.listed[self.sorted..].iter().map(|&id| rank_of(id)).collect();
        tail.sort_unstable();
        let head = &self.listed[..self.sorted];
        // Where each new message goes among the sorted ones: a binary search reading the entries
        // it passes (the first levels are the same for every search, so they come from the cache).
        let mut merged = Vec::with_capacity(self.listed.len());
        let mut from = 0;
        for &(r, id) in &tail {
            let at = from + head[from..].partition_point(|&h| rank_of(h) < (r, id));
            merged.extend_from_slice(&head[from..at]);
            merged.push(id);
            from = at;
        }
        merged.extend_from_slice(&head[from..]);
        self.listed = merged;
        self.sorted = self.listed.len();
    }

    /// The listed messages of one folder, in list order: the `limit` from `offset`, and how many.
    pub fn folder_page(&self, folder: FolderId, offset: usize, limit: usize) -> (Vec<EntryId>, usize) {
        let mut total = 0;
        let mut page = Vec::new();
        for &id in &self.listed {
            if self.folder_of.get(id as usize) == Some(&folder)
                && (self.unlisted.is_empty() || !self.unlisted.contains(&id))
            {
                if total >= offset && page.len() < limit {
                    page.push(id);
                }
                total += 1;
            }
        }
        (page, total)
    }

    /// The listed messages among `ids`, in list order.
    pub fn listed_in(&self, ids: &HashSet<EntryId>) -> Vec<EntryId> {
        self.listed.iter().copied().filter(|id| ids.contains(id)).collect()
    }

    /// The listed messages `keep` accepts, in list order. Reads every listed entry (one pass over
    /// the store): for what no table answers (a label).
    pub fn listed_where(&self, keep: impl Fn(&Entry) -> bool) -> Vec<EntryId> {
        let mut accepted = HashSet::new();
        self.each_listed_entry(|id, e| {
            if keep(e) {
                accepted.insert(id);
            }
        });
        self.listed_in(&accepted)
    }

    /// Listed entries that `keep` accepts, in list order: the `limit` from `offset`, and how many
    /// it accepts in all (see [`Index::listed_where`]).
    pub fn page_where(
        &self,
        offset: usize,
        limit: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> (Vec<(EntryId, Arc<Entry>)>, usize) {
        let accepted = self.listed_where(keep);
        let ids: Vec<EntryId> = accepted.iter().skip(offset).take(limit).copied().collect();
        let page = self.get_many(&ids);
        (page, accepted.len())
    }

    /// A pass over every entry that can run without the index held (see [`EntryPass`]).
    pub fn pass(&self) -> EntryPass {
        EntryPass { store: Arc::clone(&self.store), pending: self.pending.clone() }
    }

    /// Calls `f` with every listed entry, in no particular order: one sequential pass over the
    /// store (plus what is not committed yet), without filling the cache.
    pub fn each_listed_entry(&self, f: impl FnMut(EntryId, &Entry)) {
        self.pass().each_listed_entry(f);
    }

    /// Calls `f` with every entry, listed or enclosed, as [`Index::each_listed_entry`] does.
    pub fn each_entry(&self, f: impl FnMut(EntryId, &Entry)) {
        self.pass().each_entry(f);
    }

    /// Every entry, listed or enclosed, in id order, read into memory at once: for tools and tests
    /// on small archives (the server itself never holds them all).
    pub fn entries(&self) -> impl Iterator<Item = (EntryId, Arc<Entry>)> {
        let mut all = Vec::new();
        self.each_entry(|id, e| all.push((id, Arc::new(e.clone()))));
        all.sort_unstable_by_key(|(id, _)| *id);
        all.into_iter()
    }

    /// One more than the largest entry id: the length of a table indexed by entry id.
    pub fn id_bound(&self) -> usize {
        self.next_id as usize
    }

    /// The folder of a listed entry, without reading it.
    pub fn folder_of(&self, id: EntryId) -> FolderId {
        self.folder_of.get(id as usize).copied().unwrap_or(NO_FOLDER)
    }

    /// Entries that are messages given to mailshelf (not nested), in list order.
    pub fn page(&self, offset: usize, limit: usize) -> Vec<(EntryId, Arc<Entry>)> {
        let ids: Vec<EntryId> = if self.unlisted.is_empty() {
            self.listed.iter().skip(offset).take(limit).copied().collect()
        } else {
            self.listed.iter().filter(|id| !self.unlisted.contains(id)).skip(offset).take(limit).copied().collect()
        };
        self.get_many(&ids)
    }
}

/// One sequential pass over every stored entry, with the changes not yet committed in their place:
/// taken while the index is held (the store and a copy of what is pending, at most a commit's
/// worth), run after it is let go, so that counting a million entries keeps neither indexing nor
/// any page waiting. A commit in between is seen or not, entry by entry; each entry is whole.
pub struct EntryPass {
    store: Arc<dyn Store>,
    pending: HashMap<EntryId, Option<Arc<Entry>>>,
}

impl EntryPass {
    /// Calls `f` with every entry, listed or enclosed, in no particular order.
    pub fn each_entry(&self, mut f: impl FnMut(EntryId, &Entry)) {
        let result = self.store.each_entry(&mut |id, e| {
            if !self.pending.contains_key(&id) {
                f(id, &e);
            }
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, "index entries unreadable");
        }
        for (&id, change) in &self.pending {
            if let Some(e) = change {
                f(id, e);
            }
        }
    }

    /// Calls `f` with every listed entry, in no particular order.
    pub fn each_listed_entry(&self, mut f: impl FnMut(EntryId, &Entry)) {
        self.each_entry(|id, e| {
            if matches!(e.location, Location::Top { .. }) {
                f(id, e);
            }
        });
    }
}

/// The keys of a first run, as a Bloom filter: a key it says was never put is in neither the
/// overlay nor the store (which was empty when the run began, and has had only what was put
/// since); a key it says may have been put is looked up as usual. 4 MiB, three probes: about 1%
/// of lookups still reach the store after three million keys (a million messages), and the
/// memory is handed back when the run ends.
struct Seen {
    bits: Vec<u64>,
}

impl Seen {
    const BITS: u64 = 1 << 25;
    const PROBES: u64 = 3;

    fn new() -> Seen {
        Seen { bits: vec![0; (Self::BITS / 64) as usize] }
    }

    /// Where `key` is marked: the keys are hashes already, mixed once more and split in two
    /// for double hashing.
    fn probes(key: u64) -> impl Iterator<Item = usize> {
        let mixed = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let (a, b) = (mixed >> 32, (mixed & 0xFFFF_FFFF) | 1);
        (0..Self::PROBES).map(move |i| (a.wrapping_add(i.wrapping_mul(b)) % Self::BITS) as usize)
    }

    fn insert(&mut self, key: u64) {
        for bit in Self::probes(key) {
            if let Some(word) = self.bits.get_mut(bit / 64) {
                *word |= 1 << (bit % 64);
            }
        }
    }

    fn may_hold(&self, key: u64) -> bool {
        Self::probes(key).all(|bit| self.bits.get(bit / 64).is_some_and(|w| w & (1 << (bit % 64)) != 0))
    }
}

fn hash_key(hash: &ContentHash) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.0[..8]);
    u64::from_le_bytes(first)
}

fn link_key(link: Link, hash: u64) -> u64 {
    hash ^ (link as u64 + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_run_filter_never_forgets_a_key() {
        let mut seen = Seen::new();
        let key = |n: u64| crate::index::string_hash(&n.to_string());
        for n in 0..300_000 {
            seen.insert(key(n));
        }
        assert!((0..300_000).all(|n| seen.may_hold(key(n))));
        let strangers = (300_000..400_000).filter(|&n| seen.may_hold(key(n))).count();
        assert!(strangers < 100, "{strangers} of 100,000 keys never put pass");
    }
    use crate::ingest::Source;
    use crate::store::Batch;

    fn message(n: u64, date_minute: u64, parent: Option<u64>, nested: bool) -> Message {
        let reply = parent.map(|p| format!("In-Reply-To: <m{p}@x>\r\n")).unwrap_or_default();
        let head = format!(
            "Message-ID: <m{n}@x>\r\nFrom: a{n}@x\r\nSubject: s{n}\r\n{reply}Date: Mon, 2 Nov 2026 {:02}:{:02}:00 +0000\r\n",
            date_minute / 60 % 24,
            date_minute % 60
        );
        let raw = if nested {
            format!(
                "{head}Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee\r\n\
                 --b\r\nContent-Type: message/rfc822\r\n\r\nMessage-ID: <inner{n}@x>\r\nSubject: inner\r\n\r\ninner {n}\r\n--b--\r\n"
            )
        } else {
            format!("{head}\r\nbody {n}\r\n")
        };
        crate::parse::parse_message(Arc::from(raw.into_bytes())).expect("parses")
    }

    fn top(n: u64) -> Location {
        let path = std::path::PathBuf::from(format!("/mail/f{}/cur/{n}", n % 3));
        Location::Top { source: Source::File { path }, rel: 5, flags: None, uploaded: false }
    }

    fn commit(store: &Arc<dyn Store>, index: &mut Index) {
        let mut batch = Batch::default();
        index.take_changes(&mut batch);
        store.commit(&batch).expect("commit");
        index.committed(&batch);
    }

    /// What the list must be: every live message, newest first, then by id.
    fn expected(index: &Index, live: &HashMap<u64, EntryId>) -> Vec<EntryId> {
        let mut ids: Vec<EntryId> = live.values().copied().collect();
        ids.sort_by_key(|&id| (rank(index.get(id).and_then(|e| e.summary.timestamp)), id));
        ids
    }

    /// A long pseudo-random run of adds, removals, commits, sorts and reopenings checked against
    /// a plain model after every step: the list order, folder counts, lookups, threads, enclosed
    /// messages and what survives a reopening.
    #[test]
    fn the_stored_index_agrees_with_a_plain_model() {
        let dir = tempfile::tempdir().expect("dir");
        let mut store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
        let mut index = Index::open(Arc::clone(&store)).expect("index");
        let mut live: HashMap<u64, EntryId> = HashMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for step in 0..600u64 {
            match next(10) {
                0..=5 => {
                    let n = step;
                    let parent = live.keys().next().copied().filter(|_| next(2) == 0);
                    let added = index.add(&message(n, next(1440), parent, next(5) == 0), top(n)).expect("added");
                    assert!(matches!(added, Added::New(_)), "step {step}");
                    live.insert(n, added.id());
                }
                6 => {
                    if let Some(&n) = live.keys().nth(next(live.len().max(1) as u64) as usize) {
                        let id = live.remove(&n).expect("live");
                        index.remove(id);
                        assert!(index.get(id).is_none() && index.by_key(&format!("m{n}@x")).is_none());
                    }
                }
                7 => commit(&store, &mut index),
                8 => index.sort(),
                _ => {
                    commit(&store, &mut index);
                    drop(index);
                    // Closed (which copies the list order for the next start) or just dropped.
                    if next(2) == 0 {
                        store.close();
                    }
                    drop(store);
                    store = Arc::new(crate::store::RedbStore::open(dir.path()).expect("reopen"));
                    index = Index::open(Arc::clone(&store)).expect("index");
                }
            }
            // Same bytes again are the same message.
            if let Some((&n, &id)) = live.iter().next() {
                let again = index.add(&message(n, 0, None, false), top(n)).expect("added");
                if again != Added::Duplicate(id) {
                    // Different date, so different bytes: take it back out.
                    index.remove(again.id());
                }
            }
        }
        index.sort();
        assert_eq!(index.listed(), expected(&index, &live).as_slice());
        assert_eq!(index.listed_count(), live.len());
        let total: usize = index.folder_counts().map(|(_, n)| n).sum();
        assert_eq!(total, live.len(), "folder counts add up");
        for (&n, &id) in &live {
            assert_eq!(index.by_key(&format!("m{n}@x")), Some(id));
            assert_eq!(index.by_message_id(&format!("m{n}@x")), vec![id]);
            let e = index.get(id).expect("entry");
            let (page, count) = index.folder_page(e.folder, 0, usize::MAX);
            assert!(
                page.contains(&id)
                    && count
                        == index.folder_counts().find(|(p, _)| *p == index.folder_path(e.folder)).expect("folder").1
            );
            assert!(index.thread(id).iter().any(|&(_, t)| t == id));
        }
        // Reopened, everything reads the same.
        commit(&store, &mut index);
        let before: Vec<EntryId> = index.listed().to_vec();
        let counts: Vec<(String, usize)> = index.folder_counts().map(|(p, n)| (p.to_string(), n)).collect();
        drop(index);
        store.close();
        drop(store);
        let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("reopen"));
        let index = Index::open(store).expect("index");
        assert_eq!(index.listed(), before.as_slice());
        let reopened: Vec<(String, usize)> = index.folder_counts().map(|(p, n)| (p.to_string(), n)).collect();
        assert_eq!(reopened, counts);
        for (&n, &id) in &live {
            assert_eq!(index.by_key(&format!("m{n}@x")), Some(id));
        }
    }

    /// Entries written before the store's dictionary exists, with it, and after reopening all
    /// read back; removals find the rows of compressed entries.
    #[test]
    fn compressed_entries_read_back_across_reopenings() {
        let dir = tempfile::tempdir().expect("dir");
        let open = || -> (Arc<dyn Store>, Index) {
            let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
            let index = Index::open(Arc::clone(&store)).expect("index");
            (store, index)
        };
        let (store, mut index) = open();
        let mut ids = HashMap::new();
        // A small first commit (stored as is), then one large enough to train the dictionary.
        for range in [0..5u64, 5..1_600] {
            for n in range {
                ids.insert(
                    n,
                    index.add(&message(n, n % 1440, n.checked_sub(1), n % 50 == 0), top(n)).expect("added").id(),
                );
            }
            commit(&store, &mut index);
        }
        drop(index);
        drop(store);
        let (store, mut index) = open();
        for n in 1_600..1_610 {
            ids.insert(n, index.add(&message(n, 7, Some(3), false), top(n)).expect("added").id());
        }
        for n in [2u64, 700, 1_605] {
            index.remove(ids.remove(&n).expect("id"));
        }
        commit(&store, &mut index);
        drop(index);
        drop(store);
        let (_store, mut index) = open();
        index.sort();
        assert_eq!(index.listed_count(), ids.len());
        for (&n, &id) in &ids {
            let e = index.get(id).expect("entry");
            assert_eq!(e.summary.subject.as_deref(), Some(format!("s{n}").as_str()));
            assert_eq!(index.by_key(&format!("m{n}@x")), Some(id));
        }
        assert!(index.by_key("m700@x").is_none());
        assert!(index.first_by_message_id("inner50@x").is_some(), "enclosed messages too");
    }

    #[test]
    fn replies_and_enclosed_messages_are_found_through_the_store() {
        let dir = tempfile::tempdir().expect("dir");
        let store: Arc<dyn Store> = Arc::new(crate::store::RedbStore::open(dir.path()).expect("store"));
        let mut index = Index::open(Arc::clone(&store)).expect("index");
        let root = index.add(&message(1, 10, None, false), top(1)).expect("added").id();
        let reply = index.add(&message(2, 20, Some(1), true), top(2)).expect("added").id();
        let late = index.add(&message(3, 30, Some(2), false), top(3)).expect("added").id();
        commit(&store, &mut index);
        index.sort();
        drop(index);
        let index = Index::open(store).expect("index");
        let ids: Vec<EntryId> = index.thread(late).into_iter().map(|(_, id)| id).collect();
        assert_eq!(ids, vec![root, reply, late]);
        let inner = index.first_by_message_id("inner2@x").expect("enclosed message indexed");
        assert!(
            matches!(index.get(inner).map(|e| e.location.clone()), Some(Location::Nested { parent, .. }) if parent == reply)
        );
        assert_eq!(index.listed(), &[late, reply, root]);
    }
}

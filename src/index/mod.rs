//! The index: every indexed message by key, Message-ID, Content-ID and content hash, and the order of
//! the list. The entries and their lookups live in the [`Store`]; memory holds only what stays small
//! per message (the list order and each message's folder: 8 bytes a message), the changes not yet
//! committed, and a bounded cache of entries recently read. So a million messages cost megabytes,
//! not a gigabyte, and a warm start reads the list, not every entry. No HTTP: the archive fills it,
//! routes and pages read it.
//!
//! Its rooms: this file holds the [`Index`] and its writes (adding a parsed message, removing one,
//! handing changes to a commit); [`Draft`] is what it keeps of a parsed message, taken where the
//! message was parsed; `lookup` reads entries and finds them by name or hash; `order`
//! keeps the list's order and the folder and label counts; `numbering` gives folders their
//! numbers, one for all the spellings of one folder; `feed` follows other replicas' commits;
//! `thread` walks conversations; [`folders`] decides every folder's name, [`labels`] what is
//! counted of a label and the label tree; [`access`] answers whether a reader may see a folder or
//! a message. The records
//! themselves are the store's ([`crate::store::entry`]), re-exported here.

pub(crate) mod access;
pub(crate) mod folders;
pub(crate) mod labels;

mod draft;
mod feed;
mod lookup;
mod numbering;
mod order;
mod thread;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub use crate::store::entry::{
    content_hash, AttachmentInfo, ContentHash, Entry, EntryId, FolderId, Listing, Location, NO_ENTRY, NO_FOLDER,
};
pub use access::{Access, FolderTable, Way};
pub use draft::Draft;
pub use lookup::EntryPass;

use crate::error::Error;
use crate::model::Message;
use crate::store::{Batch, Link, NameHasher, Store};
use lookup::{hash_key, link_key, Seen};

/// What [`Index::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    New(EntryId),
    /// The same bytes were already indexed under this entry.
    Duplicate(EntryId),
    /// The same bytes were indexed only inside another message: now given on their own, that
    /// entry is listed (and read from here).
    Relisted(EntryId),
    /// The same bytes, found again in the file they were read from, with other labels there (a
    /// keyword set in Dovecot's index): the entry has them now, and its search document must too.
    Relabelled(EntryId),
}

/// How a new entry's key is chosen ([`Index::add_draft_as`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keying {
    /// Its Message-ID when no entry has that key yet, else a key derived from its bytes: the same
    /// archive indexed again, or on another machine, gives every message the same key.
    Stable,
    /// A random key, for what an admin limited to some folders uploads: which of the stable keys
    /// an upload would get depends on whether its Message-ID or its bytes are held already,
    /// perhaps in a folder that admin may not read, and the answer must not tell them.
    Unguessable,
}

impl Added {
    pub fn id(self) -> EntryId {
        match self {
            Added::New(id) | Added::Duplicate(id) | Added::Relisted(id) | Added::Relabelled(id) => id,
        }
    }
}

/// The hash a copy of a message is kept under in a folder. The same bytes in two folders are two
/// copies, each listed, counted and readable where it is filed (a reader of one folder sees the
/// copy filed there), while the same bytes found twice in one folder, or inside another message,
/// are one message. The first copy is kept under the hash of its bytes alone (as every message
/// was before copies were told apart), the others under this.
pub fn in_folder(hash: &ContentHash, folder: &str) -> ContentHash {
    content_hash(&[&hash.0[..], folder.as_bytes()].concat())
}

/// Whether the bytes read back for `entry` from its source (hashed `hash`, naming `message_id`)
/// are still the message it was indexed from: the bytes hashed as it is kept (under their hash or,
/// a copy filed in a folder, under [`in_folder`]), or, when they differ, a message with its
/// Message-ID (the same message read to another length after `--max-message` changed, or edited
/// in place, which the next scan indexes again). Another message there (an mbox compacted since)
/// is not.
pub fn reads_as(entry: &Entry, hash: &ContentHash, message_id: Option<&str>) -> bool {
    entry.hash == *hash
        || folders::of_location(&entry.location).is_some_and(|f| in_folder(hash, &f) == entry.hash)
        || entry.message_id().is_some_and(|m| Some(m) == message_id)
}

/// The folder a message found at `location` is filed in, for telling copies apart: `None`
/// inside another message, and for an upload that is not a copy (bytes held already, uploaded
/// again or found under a mounted path, are the message held: uploading a file twice adds
/// nothing).
fn filed_in(location: &Location, copy: bool) -> Option<String> {
    let uploaded = matches!(location, Location::Top { uploaded: true, .. });
    folders::of_location(location).filter(|_| copy || !uploaded)
}

/// What [`Index::placement`] finds for bytes found somewhere.
enum Placement {
    /// Held already there, as this entry under this hash.
    Held(EntryId, ContentHash),
    /// Not held there: a new entry, kept under this hash.
    New(ContentHash),
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
    /// Entries filed on their own until their file went, kept as enclosed in another message
    /// (see [`Index::remove`]): their search documents go at the next commit.
    unfiled: HashSet<EntryId>,
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
    /// Folder paths by id (as first spelled), how many listed messages each holds, the number
    /// each is counted under, ids by [`folders::key`], how many of the paths the store has, how
    /// the folders met so far are spelled, and whether some folder has several numbers (see
    /// [`numbering`]).
    folders: Vec<String>,
    folder_counts: Vec<usize>,
    folder_canon: Vec<FolderId>,
    folder_ids: HashMap<String, FolderId>,
    folders_saved: usize,
    spellings: folders::Spellings,
    /// The number of every path filed in so far, as it was given.
    folder_paths: HashMap<String, FolderId>,
    folders_merged: bool,
    /// How many listed messages carry each label, and each label or one below it (see
    /// [`labels::counted`]): the store's counts and ours not yet committed, and our changes to
    /// them that the store lacks.
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
            unfiled: HashSet::new(),
            seen: None,
            next_id,
            seq: 0,
            listed: Vec::new(),
            sorted: 0,
            unlisted: HashSet::new(),
            folder_of: Vec::new(),
            folders: Vec::new(),
            folder_counts: Vec::new(),
            folder_canon: Vec::new(),
            folder_ids: HashMap::new(),
            folders_saved: 0,
            spellings: folders::Spellings::default(),
            folder_paths: HashMap::new(),
            folders_merged: false,
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
        self.add_draft(Draft::of(msg), location)
    }

    /// [`Index::add`] of what a parse worker took from the message ([`Draft::of`]), off the one
    /// thread that adds. Keyed by the message that was read, not the file: a `.partial.emlx` is
    /// completed from the files beside it, so two identical files may hold two different messages.
    pub fn add_draft(&mut self, msg: Draft, location: Location) -> Result<Added, Error> {
        self.add_draft_as(msg, location, false, Keying::Stable)
    }

    /// [`Index::add_draft`] of an upload whose bytes are held already in a folder its uploader may
    /// not read (`copy`): kept as a copy in its own folder (see [`in_folder`]), as a copy in
    /// another mounted folder is. `keying` says how a new entry, and each message it encloses, is
    /// keyed.
    pub fn add_draft_as(&mut self, msg: Draft, location: Location, copy: bool, keying: Keying) -> Result<Added, Error> {
        let folder = filed_in(&location, copy);
        let hash = match self.placement(&msg.hash, folder.as_deref(), copy) {
            Placement::Held(existing, hash) => return self.found_again(existing, hash, location, msg.labels),
            Placement::New(hash) => hash,
        };
        let listed = matches!(location, Location::Top { .. });
        let key = match &msg.message_id {
            _ if keying == Keying::Unguessable => self.unguessable_key()?,
            Some(mid) if self.by_key(mid).is_none() => mid.clone(),
            _ => {
                let derived = crate::ids::derived_message_id(&msg.raw);
                match &folder {
                    // A copy in another folder of a message without a Message-ID: a key of its own.
                    Some(f) if hash != msg.hash && self.by_key(&derived).is_some() => {
                        crate::ids::derived_message_id(&[msg.raw.as_ref(), f.as_bytes()].concat())
                    }
                    _ => derived,
                }
            }
        };
        let id = self.store.new_id()?;
        self.next_id = self.next_id.max(id.saturating_add(1));
        let mut entry = Entry::new(key, msg.message_id, location, hash);
        entry.summary = msg.summary;
        entry.size = msg.size;
        entry.content_ids = msg.content_ids;
        entry.has_attachments = msg.has_attachments;
        entry.parent = msg.parent;
        entry.labels = msg.labels;
        entry.list = msg.list;
        entry.attachments = msg.attachments;
        entry.plain = (hash != msg.hash).then_some(msg.hash);
        if listed {
            entry.folder = self.file(&entry)?;
            self.list(id, &entry);
        }
        self.put(id, Some(Arc::new(entry)));
        for (part, nested) in msg.nested {
            self.add_draft_as(nested, Location::Nested { parent: id, part }, false, keying)?;
        }
        Ok(Added::New(id))
    }

    /// A key no entry has, of 128 random bits, shaped as the keys derived from bytes are.
    fn unguessable_key(&self) -> Result<String, Error> {
        for _ in 0..4 {
            let mut bits = [0u8; 16];
            getrandom::fill(&mut bits)
                .map_err(|e| Error::internal("random message key", std::io::Error::other(e.to_string())))?;
            let key = format!("{}@mailshelf.invalid", bits.iter().map(|b| format!("{b:02x}")).collect::<String>());
            if self.by_key(&key).is_none() {
                return Ok(key);
            }
        }
        Err(Error::internal("random message key", std::io::Error::other("every key drawn was taken")))
    }

    /// The entry the bytes hashed `hash` would be found as at `location`, added as a copy or not
    /// ([`Index::add_draft_as`]), if they are held there already.
    pub fn held_as(&self, hash: &ContentHash, location: &Location, copy: bool) -> Option<EntryId> {
        match self.placement(hash, filed_in(location, copy).as_deref(), copy) {
            Placement::Held(id, _) => Some(id),
            Placement::New(_) => None,
        }
    }

    /// Where the bytes hashed `hash` go when found in `folder` (see [`filed_in`]): the message
    /// held already there, or the hash a new entry keeps. Held anywhere but in another folder,
    /// they are the message held; in another folder, a copy of their own here, kept under
    /// [`in_folder`], unless that copy is held already.
    fn placement(&self, hash: &ContentHash, folder: Option<&str>, copy: bool) -> Placement {
        let existing = self.by_hash(hash);
        if let Some(existing) = existing {
            let same_place = !copy
                && match (self.get(existing).map(|e| folders::of_location(&e.location)), folder) {
                    // Found inside another message, or filed here already: the same message.
                    (Some(None), _) | (_, None) | (None, _) => true,
                    (Some(Some(was)), Some(now)) => was == now,
                };
            if same_place {
                return Placement::Held(existing, *hash);
            }
        }
        let Some(scoped) = folder.map(|f| in_folder(hash, f)) else { return Placement::New(*hash) };
        match self.by_hash(&scoped) {
            Some(copy) => Placement::Held(copy, scoped),
            None if existing.is_some() => Placement::New(scoped),
            None => Placement::New(*hash),
        }
    }

    /// The bytes of a message indexed already as `existing` found again at `location` (its hash
    /// there is `hash`): a message found before only inside another one is listed now; one found
    /// again in the file it was read from is there now.
    fn found_again(
        &mut self,
        existing: EntryId,
        hash: ContentHash,
        location: Location,
        labels: Vec<String>,
    ) -> Result<Added, Error> {
        if let Some(e) = self.get(existing) {
            match (&e.location, &location) {
                // Found before only inside another message, now given on its own: list it,
                // read from its own source from now on.
                (Location::Nested { parent, part }, Location::Top { .. }) => {
                    let mut e = (*e).clone();
                    // Still enclosed in the message it was found in: whoever reads that one
                    // reads it there, wherever it is filed now.
                    let (parent, part) = (*parent, *part);
                    e.enclose_in(parent, part);
                    e.location = location;
                    e.hash = hash;
                    e.folder = self.file(&e)?;
                    self.list(existing, &e);
                    self.put(existing, Some(Arc::new(e)));
                    return Ok(Added::Relisted(existing));
                }
                // Found again in the file it was read from (re-read after a change), maybe at
                // another place in it, with other flags or labels (those Dovecot's indexes or MH's
                // sequences give it): the same message, now as it is there. The same bytes
                // uploaded again (from another file, with labels of their own, or none) keep
                // what the first upload gave them.
                (
                    Location::Top { source: was, uploaded: was_uploaded, .. },
                    Location::Top { source: now, uploaded: now_uploaded, .. },
                ) if was.path() == now.path()
                    && (was != now
                        || (!was_uploaded && !now_uploaded && (e.location != location || e.labels != labels))) =>
                {
                    let relabelled = !was_uploaded && !now_uploaded && e.labels != labels;
                    let mut e = (*e).clone();
                    e.location = location;
                    if relabelled {
                        self.count_labels(&e.labels, false);
                        e.labels = labels;
                        self.count_labels(&e.labels, true);
                    }
                    self.put(existing, Some(Arc::new(e)));
                    if relabelled {
                        return Ok(Added::Relabelled(existing));
                    }
                }
                // Found inside another message besides where it is (filed on its own, or inside
                // a third one): noted, so that whoever reads this one reads it here too.
                (was, &Location::Nested { parent, part }) => {
                    let here = matches!(was, Location::Nested { parent: p, part: q } if *p == parent && *q == part);
                    let mut noted = (*e).clone();
                    if !here && noted.enclose_in(parent, part) {
                        self.put(existing, Some(Arc::new(noted)));
                    }
                }
                _ => {}
            }
        }
        Ok(Added::Duplicate(existing))
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The folder a listed entry is filed in, by its location (a new folder gets a number).
    fn file(&mut self, e: &Entry) -> Result<FolderId, Error> {
        match folders::of_location(&e.location) {
            Some(path) => self.folder_number(&path),
            None => Ok(NO_FOLDER),
        }
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
        batch.unfiled.extend(self.unfiled.iter().copied());
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
        for id in &batch.unfiled {
            self.unfiled.remove(id);
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

    /// Removes an entry and the messages nested in it. An entry filed on its own that is also
    /// enclosed in other messages stays, as enclosed in the first of them (no longer listed,
    /// filed or searched on its own), with what it encloses: the messages that enclose it still
    /// link to it.
    pub fn remove(&mut self, id: EntryId) {
        let Some(entry) = self.get(id) else { return };
        let still_enclosed = matches!(entry.location, Location::Top { .. }) && !entry.enclosed_in.is_empty();
        if still_enclosed {
            let mut kept = (*entry).clone();
            let (parent, part) = kept.enclosed_in.remove(0);
            kept.location = Location::Nested { parent, part };
            kept.folder = NO_FOLDER;
            self.put(id, Some(Arc::new(kept)));
            self.unfiled.insert(id);
        } else {
            self.put(id, None);
        }
        if matches!(entry.location, Location::Top { .. }) {
            // Not in this list yet when another replica added it and this one has not followed
            // the feed that far: nothing to take out here, but the store's counts still change.
            let here = self.folder_of(id);
            if here != NO_FOLDER {
                self.unlist(id, here);
            }
            self.count_labels(&entry.labels, false);
        }
        if still_enclosed {
            return;
        }
        for c in self.candidates(Link::EnclosedIn, u64::from(id)) {
            let Some(child) = self.get(c) else { continue };
            let mut kept = (*child).clone();
            kept.enclosed_in.retain(|&(parent, _)| parent != id);
            match child.location {
                // Enclosed in other messages too: it stays, enclosed in the first of them.
                Location::Nested { parent, .. } if parent == id && !kept.enclosed_in.is_empty() => {
                    let (parent, part) = kept.enclosed_in.remove(0);
                    kept.location = Location::Nested { parent, part };
                    self.put(c, Some(Arc::new(kept)));
                }
                Location::Nested { parent, .. } if parent == id => self.remove(c),
                // A child since given on its own stays, no longer enclosed here.
                _ if kept.enclosed_in.len() != child.enclosed_in.len() => self.put(c, Some(Arc::new(kept))),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;

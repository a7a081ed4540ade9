//! The persistent index, behind one narrow interface: [`Store`] is everything the index (and so
//! the web layer and the indexer above it) asks of storage. [`redb::RedbStore`] is the embedded
//! default: one file in `--data-dir`. [`crate::postgres::PgStore`] is the shared one, for several
//! replicas on one PostgreSQL; what it adds to the embedded engine's answers is how replicas agree
//! (ids and folder ids handed out by the store, label counts kept as sums of changes) and a feed
//! of changes, by which each replica learns what the others committed.
//!
//! What is stored: every index entry by id; links from names (keys, Message-IDs, Content-IDs, the
//! Message-ID replied to, the enclosing entry) to entries, by a keyed hash of the name; content
//! hashes; the list order with each listed message's folder; folder paths; label counts; and, per
//! source file, what was indexed from it, so a restart re-reads only what changed. The records
//! themselves are in [`entry`].

mod codec;
pub(crate) mod entry;
pub(crate) mod redb;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use self::entry::{ContentHash, Entry, EntryId, FolderId, Location};
use crate::error::Error;

pub(crate) use self::redb::RedbStore;

/// What the index asks of storage. Reads see the last commit; [`Store::commit`] applies a batch
/// atomically (all of it or none, also across a crash).
pub trait Store: Send + Sync {
    /// The keyed hash names are linked under (the key is drawn when the store is made and kept).
    fn names(&self) -> &NameHasher;
    /// One entry.
    fn entry(&self, id: EntryId) -> Result<Option<Entry>, Error>;
    /// Several entries at once (those found, in no particular order): a page's worth, which a
    /// database answers in one round trip.
    fn entries(&self, ids: &[EntryId]) -> Result<Vec<(EntryId, Entry)>, Error> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(e) = self.entry(id)? {
                out.push((id, e));
            }
        }
        Ok(out)
    }
    /// The entries linked to a name by `link` (candidates: the caller checks the name), at most
    /// [`crate::limits::MAX_SHARED_NAME`].
    fn linked(&self, link: Link, hash: u64) -> Result<Vec<EntryId>, Error>;
    /// The entry of a message with these bytes.
    fn by_hash(&self, hash: &ContentHash) -> Result<Option<EntryId>, Error>;
    /// Every listed message, newest first ([`rank`], then id), with its folder.
    fn each_listed(&self, f: &mut dyn FnMut(EntryId, FolderId)) -> Result<(), Error>;
    /// Every entry, in id order: one sequential pass, for what counts or groups them all.
    fn each_entry(&self, f: &mut dyn FnMut(EntryId, Entry)) -> Result<(), Error>;
    /// One more than the largest entry id stored.
    fn next_id(&self) -> Result<EntryId, Error>;
    /// An entry id never handed out before (by this store to anyone: replicas of a shared store
    /// draw from one sequence).
    fn new_id(&self) -> Result<EntryId, Error>;
    /// The folder id of `path`, handed out by a shared store so that every replica gives a path
    /// the same one (kept at once, committed or not); `None` from an embedded store, where the
    /// index numbers folders itself and commits them with its batch.
    fn folder_id(&self, _path: &str) -> Result<Option<FolderId>, Error> {
        Ok(None)
    }
    /// Where the feed of changes stands now (0 for a store without one).
    fn change_seq(&self) -> Result<u64, Error> {
        Ok(0)
    }
    /// The entries others changed after feed position `after`, each as it is now (`None`:
    /// removed); `None` from a store that only this process writes. Changes this store object
    /// committed itself are left out: its index has them already.
    fn changes_since(&self, _after: u64) -> Result<Option<Changes>, Error> {
        Ok(None)
    }
    /// The bytes of an upload kept in the store (see [`Batch::uploads`]).
    fn upload(&self, name: &str) -> Result<Option<Vec<u8>>, Error>;
    /// Every folder path by id.
    fn folders(&self) -> Result<Vec<(FolderId, String)>, Error>;
    /// Every label on a listed message, with how many carry it.
    fn labels(&self) -> Result<Vec<(String, u64)>, Error>;
    /// The stored state of each of `keys` (`None`: nothing known, the source is read again). An
    /// error (a shared database out of reach) ends the scan that asked: reading every source
    /// again because none could be looked up would be the costliest answer.
    fn sources_of(&self, keys: &[String]) -> Result<Vec<Option<SourceState>>, Error>;
    /// The stored source paths that `keep` accepts.
    fn source_keys_where(&self, keep: &dyn Fn(&str) -> bool) -> Result<Vec<String>, Error>;
    /// Writes a batch atomically and durably: once it returns, the batch survives a crash.
    fn commit(&self, batch: &Batch) -> Result<(), Error>;
    /// Gives back space after a large indexing run (an engine that manages its own may do nothing).
    fn compact(&self);
    /// Ends the store's use by this process, when the server stops: later calls answer errors. An
    /// embedded engine finishes its file so that the next open is quick; a server engine lets go
    /// of its connections.
    fn close(&self);
    /// Rows and bytes in each table: name, rows, bytes of data, bytes in all (for the log).
    fn table_sizes(&self) -> Result<Vec<(&'static str, u64, u64, u64)>, Error>;

    /// One source's state.
    fn source(&self, key: &str) -> Option<SourceState> {
        self.sources_of(std::slice::from_ref(&key.to_string())).ok()?.pop().flatten()
    }
}

/// What others committed since a position of the change feed.
#[derive(Debug, Default)]
pub struct Changes {
    /// The feed's position after these changes.
    pub upto: u64,
    /// The feed no longer reaches back to the position asked for: read everything again.
    pub gap: bool,
    /// Each changed entry as it is now; `None` when it was removed.
    pub entries: Vec<(EntryId, Option<Entry>)>,
}

/// What a link row links an entry by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Link {
    /// Its key or its Message-ID.
    Name = 1,
    /// A Content-ID of one of its parts.
    ContentId = 2,
    /// The Message-ID it replies to.
    ReplyTo = 3,
    /// An entry it is enclosed in (the hash is the parent's id): the one its location names, and
    /// those of [`Entry::enclosed_in`].
    EnclosedIn = 4,
}

/// What was indexed from one source file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SourceState {
    pub size: u64,
    /// Its modification time in nanoseconds, mixed with a digest of what the files beside it say
    /// of its messages where they do ([`crate::ingest::version`]).
    pub mtime_ns: i64,
    /// Top-level entries read from it.
    pub ids: Vec<EntryId>,
    /// For an mbox: where its last indexed message ended, and a hash of the bytes before that
    /// point, so an appended mbox is read only from there.
    pub mbox_end: u64,
    pub mbox_tail: Option<[u8; 16]>,
}

impl SourceState {
    /// The state of a source that was not read whole: no file has its size and modification
    /// time, so the next run reads it again from the start, and it holds `ids`, every entry the
    /// source may still list, so that they go with it if it goes.
    pub fn to_read_again(ids: Vec<EntryId>) -> SourceState {
        SourceState { size: u64::MAX, mtime_ns: i64::MIN, ids, mbox_end: 0, mbox_tail: None }
    }
}

/// Changes to write in one transaction.
#[derive(Debug, Default)]
pub struct Batch {
    /// Entries added or changed (the rows of what was stored under the id are replaced).
    pub entries: Vec<(EntryId, Arc<Entry>)>,
    /// Entries removed, with their rows.
    pub removed: Vec<EntryId>,
    /// Entries among `entries` no longer filed on their own (kept as enclosed in another
    /// message): their search documents go.
    pub unfiled: Vec<EntryId>,
    /// Folders first used since the last commit.
    pub folders: Vec<(FolderId, String)>,
    /// Labels whose counts changed, by how much (sums of changes, so that writers on several
    /// replicas never overwrite each other's counts).
    pub labels: Vec<(String, i64)>,
    pub sources: Vec<(String, SourceState)>,
    pub removed_sources: Vec<String>,
    /// Uploads kept in the store itself, by name ([`crate::ingest::Source::Stored`]): written in
    /// the same transaction as their entries, so an acknowledged upload has both or, after a
    /// crash, neither.
    pub uploads: Vec<(String, Arc<[u8]>)>,
    pub removed_uploads: Vec<String>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
            && self.removed.is_empty()
            && self.unfiled.is_empty()
            && self.sources.is_empty()
            && self.removed_sources.is_empty()
            && self.folders.is_empty()
            && self.labels.is_empty()
            && self.uploads.is_empty()
            && self.removed_uploads.is_empty()
    }
}

/// The place of a listed message in the list: newest first, undated last.
pub(crate) fn rank(timestamp: Option<i64>) -> u64 {
    // Order-preserving map of i64 onto u64, then reversed.
    !((timestamp.unwrap_or(i64::MIN) as u64) ^ (1 << 63))
}

/// The link rows of an entry (see [`Link`]).
pub(crate) fn links_of(e: &Entry, hash: &NameHasher) -> Vec<(Link, u64)> {
    let mut out = vec![(Link::Name, hash.of(&e.key))];
    if let Some(name) = e.answers_to().filter(|n| *n != e.key) {
        out.push((Link::Name, hash.of(&name)));
    }
    out.extend(e.content_ids.iter().map(|c| (Link::ContentId, hash.of(c))));
    if let Some(p) = &e.parent {
        out.push((Link::ReplyTo, hash.of(p)));
    }
    if let Location::Nested { parent, .. } = e.location {
        out.push((Link::EnclosedIn, u64::from(parent)));
    }
    out.extend(e.enclosed_in.iter().map(|&(parent, _)| (Link::EnclosedIn, u64::from(parent))));
    out.sort_unstable_by_key(|&(k, h)| (k as u8, h));
    out.dedup();
    out
}

/// The keyed hash names are stored under: BLAKE3 under a key drawn when the store was made, so a
/// message cannot be crafted to pile its names onto one row (which would make lookups scans).
#[derive(Clone)]
pub struct NameHasher([u8; 32]);

impl NameHasher {
    pub fn from_key(key: [u8; 32]) -> NameHasher {
        NameHasher(key)
    }

    pub fn of(&self, name: &str) -> u64 {
        let h = blake3::keyed_hash(&self.0, name.as_bytes());
        let mut b = [0u8; 8];
        b.copy_from_slice(&h.as_bytes()[..8]);
        u64::from_le_bytes(b)
    }
}

//! The embedded store: `index.redb` in `--data-dir`. redb is a pure-Rust, copy-on-write B-tree
//! store with atomic commits, so a `kill -9` at any moment leaves the last committed state, never a
//! torn one. One table per kind of row (see [`super`]); names are linked by `(kind, hash, entry)`
//! keys, so a lookup is one range read and a name shared by many entries costs a row each.

use std::path::Path;

use ::redb::{Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::Serialize;

use super::codec::Codec;
use super::entry::{ContentHash, Entry, EntryId, FolderId, Location};
use super::{links_of, rank, Batch, Link, NameHasher, SourceState, Store};
use crate::error::Error;

const ENTRIES: TableDefinition<u32, &[u8]> = TableDefinition::new("entries");
const SOURCES: TableDefinition<&str, &[u8]> = TableDefinition::new("sources");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// `(kind, hash of a name, entry)`: every lookup of a name to entries, one row per pair (see
/// [`Link`]). Checked against the entry on reading, so a collision costs a read, never a wrong answer.
const LINKS: TableDefinition<(u8, u64, u32), ()> = TableDefinition::new("links");
/// The first 128 bits of BLAKE3 over a message's bytes → its entry: the same bytes are one message.
const HASHES: TableDefinition<u128, u32> = TableDefinition::new("hashes");
/// `(rank, entry)` → folder, for every listed message: the list, newest first, in key order.
const ORDER: TableDefinition<(u64, u32), u32> = TableDefinition::new("order");
const FOLDERS: TableDefinition<u32, &str> = TableDefinition::new("folders");
const LABELS: TableDefinition<&str, u64> = TableDefinition::new("labels");
/// Uploads kept in the store itself, by name (see [`Batch::uploads`]).
const UPLOADS: TableDefinition<&str, &[u8]> = TableDefinition::new("uploads");
/// The zstd dictionary entries are compressed with, under "entries" (see [`super::codec`]).
const DICTIONARY: TableDefinition<&str, &[u8]> = TableDefinition::new("dictionary");
/// Copies of whole tables, read in one piece at start: under "order", [`ORDER`]'s rows as
/// `(entry, folder)` pairs of little-endian u32, in its order. A commit that changes `ORDER`
/// removes the copy in the same transaction, so a copy present is always the table as it is; it
/// is written again when the store closes or is compacted. Reading a million rows one by one
/// was most of a warm start (0.15 s); the copy reads in a few milliseconds.
const SNAPSHOTS: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshots");
const ORDER_SNAPSHOT: &str = "order";

/// Bumped whenever the stored form changes, or what parsing puts in it (6: the Content-IDs of
/// external bodies' phantom headers; 7: labels, list ids and attachment types; 8: the items of
/// Outlook data files, which earlier versions skipped; 9: lookups, order, folders and labels kept
/// in the store rather than rebuilt in memory; 10: entries compressed against a dictionary; 11:
/// Gmail's encoded and quoted labels read whole, and counts of labels with those below them; 12:
/// the other messages an entry is enclosed in, which an index of 11 never noted); an index of
/// another version is rebuilt from sources.
const SCHEMA: u64 = 12;

pub(crate) struct RedbStore {
    /// Read and write transactions share the database; [`Store::compact`] needs it alone, and
    /// [`Store::close`] takes it away (`None`).
    db: std::sync::RwLock<Option<Database>>,
    names: NameHasher,
    path: std::path::PathBuf,
    /// Replaced once, when the dictionary is trained.
    codec: std::sync::RwLock<std::sync::Arc<Codec>>,
    /// The next entry id to hand out.
    next: std::sync::atomic::AtomicU32,
}

/// redb's page cache. Its default (1 GiB) would let the cache, not the archive's size, set the
/// memory mailshelf takes; the index keeps its own small cache of decoded entries.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

fn fail<E: Into<::redb::Error>>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::internal(what, e.into())
}

/// Puts the codec that was in use back when a commit that trained a new one fails (its dictionary
/// was not stored, so nothing may be compressed with it).
struct Untrain<'a> {
    codec: &'a std::sync::RwLock<std::sync::Arc<Codec>>,
    previous: Option<std::sync::Arc<Codec>>,
}

impl Drop for Untrain<'_> {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            *self.codec.write().unwrap_or_else(|e| e.into_inner()) = previous;
        }
    }
}

fn closed() -> Error {
    Error::internal("index store", std::io::Error::other("closed: the server is stopping"))
}

fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>, Error> {
    postcard::to_stdvec(v).map_err(|e| Error::internal("index store: encode", e))
}

/// Opens a table for reading; a table never written reads as empty (`None`).
macro_rules! read_table {
    ($txn:expr, $def:expr) => {
        match $txn.open_table($def) {
            Ok(t) => Some(t),
            Err(::redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(fail("index store: read")(e)),
        }
    };
}

impl RedbStore {
    /// Opens (or creates) the store in `dir`. A store of another schema is emptied, to be rebuilt.
    pub(crate) fn open(dir: &Path) -> Result<RedbStore, Error> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("index.redb");
        let db = Database::builder().set_cache_size(CACHE_BYTES).create(&path).map_err(|e| match e {
            ::redb::DatabaseError::DatabaseAlreadyOpen => Error::BadPath {
                path: dir.to_path_buf(),
                reason: "this data folder is in use by another mailshelf".into(),
            },
            e => fail("index store: open")(e),
        })?;
        let meta = |db: &Database, key: &str| -> Result<Option<u64>, Error> {
            let txn = db.begin_read().map_err(fail("index store: read"))?;
            let Some(t) = read_table!(txn, META) else { return Ok(None) };
            Ok(t.get(key).map_err(fail("index store: read"))?.map(|v| v.value()))
        };
        if meta(&db, "schema")? != Some(SCHEMA) {
            reset(&db)?;
        }
        let mut key = [0u8; 32];
        for (i, chunk) in key.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&meta(&db, &format!("name_key{i}"))?.unwrap_or(0).to_le_bytes());
        }
        let dict = {
            let txn = db.begin_read().map_err(fail("index store: read"))?;
            match read_table!(txn, DICTIONARY) {
                Some(t) => t.get("entries").map_err(fail("index store: read"))?.map(|v| v.value().to_vec()),
                None => None,
            }
        };
        let next = {
            let txn = db.begin_read().map_err(fail("index store: read"))?;
            match read_table!(txn, ENTRIES) {
                Some(t) => t.last().map_err(fail("index store: read"))?.map_or(0, |(k, _)| k.value().saturating_add(1)),
                None => 0,
            }
        };
        Ok(RedbStore {
            next: std::sync::atomic::AtomicU32::new(next),
            db: std::sync::RwLock::new(Some(db)),
            names: NameHasher(key),
            path,
            codec: std::sync::RwLock::new(std::sync::Arc::new(Codec::new(dict))),
        })
    }

    fn codec(&self) -> std::sync::Arc<Codec> {
        std::sync::Arc::clone(&self.codec.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// An entry from its stored form; unreadable ones are logged and skipped (the source is read
    /// again when its state is found wanting).
    fn decode_entry(&self, id: EntryId, stored: &[u8]) -> Option<Entry> {
        match self.codec().unpack(stored, |b| postcard::from_bytes::<Entry>(b)) {
            Some(Ok(e)) => Some(e),
            Some(Err(e)) => {
                tracing::warn!(id, error = %e, "unreadable index entry skipped");
                None
            }
            None => {
                tracing::warn!(id, "undecodable index entry skipped");
                None
            }
        }
    }

    fn db(&self) -> std::sync::RwLockReadGuard<'_, Option<Database>> {
        self.db.read().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> Result<::redb::ReadTransaction, Error> {
        let db = self.db();
        db.as_ref().ok_or_else(closed)?.begin_read().map_err(fail("index store: read"))
    }

    /// Calls `f` with every row of a table, in key order (a table never written has no rows).
    fn each_row<K: ::redb::Key + 'static, V: ::redb::Value + 'static>(
        &self,
        table: TableDefinition<K, V>,
        mut f: impl FnMut(K::SelfType<'_>, V::SelfType<'_>),
    ) -> Result<(), Error> {
        let txn = self.read()?;
        let Some(t) = read_table!(txn, table) else { return Ok(()) };
        for row in t.iter().map_err(fail("index store: read"))? {
            let (k, v) = row.map_err(fail("index store: read"))?;
            f(k.value(), v.value());
        }
        Ok(())
    }
}

impl Store for RedbStore {
    fn names(&self) -> &NameHasher {
        &self.names
    }

    /// One entry.
    fn entry(&self, id: EntryId) -> Result<Option<Entry>, Error> {
        let txn = self.read()?;
        let Some(t) = read_table!(txn, ENTRIES) else { return Ok(None) };
        let Some(v) = t.get(id).map_err(fail("index store: read"))? else { return Ok(None) };
        Ok(self.decode_entry(id, v.value()))
    }

    /// The entries linked to a name by `link` (candidates: the caller checks the name).
    fn linked(&self, link: Link, hash: u64) -> Result<Vec<EntryId>, Error> {
        let txn = self.read()?;
        let Some(t) = read_table!(txn, LINKS) else { return Ok(Vec::new()) };
        let k = link as u8;
        let mut out = Vec::new();
        for row in t.range((k, hash, 0)..=(k, hash, u32::MAX)).map_err(fail("index store: read"))? {
            let (key, _) = row.map_err(fail("index store: read"))?;
            out.push(key.value().2);
            if out.len() >= crate::limits::MAX_SHARED_NAME {
                break;
            }
        }
        Ok(out)
    }

    /// The entry of a message with these bytes.
    fn by_hash(&self, hash: &ContentHash) -> Result<Option<EntryId>, Error> {
        let txn = self.read()?;
        let Some(t) = read_table!(txn, HASHES) else { return Ok(None) };
        Ok(t.get(u128::from_le_bytes(hash.0)).map_err(fail("index store: read"))?.map(|v| v.value()))
    }

    /// Every listed message, newest first, with its folder.
    fn each_listed(&self, f: &mut dyn FnMut(EntryId, FolderId)) -> Result<(), Error> {
        {
            let txn = self.read()?;
            if let Some(t) = read_table!(txn, SNAPSHOTS) {
                if let Some(copy) = t.get(ORDER_SNAPSHOT).map_err(fail("index store: read"))? {
                    for pair in copy.value().chunks_exact(8) {
                        let [a, b, c, d, e, g, h, i] = pair else { continue };
                        f(u32::from_le_bytes([*a, *b, *c, *d]), u32::from_le_bytes([*e, *g, *h, *i]));
                    }
                    return Ok(());
                }
            }
        }
        self.each_row(ORDER, |(_, id), folder| f(id, folder))
    }

    /// Every stored entry, in id order: one sequential pass, for what counts or groups them all.
    fn each_entry(&self, f: &mut dyn FnMut(EntryId, Entry)) -> Result<(), Error> {
        self.each_row(ENTRIES, |id, bytes| {
            if let Some(e) = self.decode_entry(id, bytes) {
                f(id, e);
            }
        })
    }

    /// One more than the largest entry id stored.
    fn next_id(&self) -> Result<EntryId, Error> {
        let txn = self.read()?;
        let Some(t) = read_table!(txn, ENTRIES) else { return Ok(0) };
        let last = t.last().map_err(fail("index store: read"))?;
        Ok(last.map_or(0, |(k, _)| k.value().saturating_add(1)))
    }

    fn new_id(&self) -> Result<EntryId, Error> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if id == EntryId::MAX {
            return Err(Error::internal("index store", std::io::Error::other("no entry ids left")));
        }
        Ok(id)
    }

    fn upload(&self, name: &str) -> Result<Option<Vec<u8>>, Error> {
        let txn = self.read()?;
        let Some(t) = read_table!(txn, UPLOADS) else { return Ok(None) };
        Ok(t.get(name).map_err(fail("index store: read"))?.map(|v| v.value().to_vec()))
    }

    /// Every folder path by id.
    fn folders(&self) -> Result<Vec<(FolderId, String)>, Error> {
        let mut out = Vec::new();
        self.each_row(FOLDERS, |id, path| out.push((id, path.to_string())))?;
        Ok(out)
    }

    /// Every label on a listed message, with how many carry it.
    fn labels(&self) -> Result<Vec<(String, u64)>, Error> {
        let mut out = Vec::new();
        self.each_row(LABELS, |label, n| out.push((label.to_string(), n)))?;
        Ok(out)
    }

    /// The stored state of each of `keys`, looked up on every core (a warm start compares every
    /// source file with what was indexed from it).
    fn sources_of(&self, keys: &[String]) -> Result<Vec<Option<SourceState>>, Error> {
        Ok(crate::par::map_slices(keys, |part| {
            // A missing table or a failed read means "nothing known": the source is read again.
            let txn = self.read().ok();
            let table = txn.as_ref().and_then(|t| t.open_table(SOURCES).ok());
            part.iter()
                .map(|k| {
                    let v = table.as_ref()?.get(k.as_str()).ok()??;
                    postcard::from_bytes(v.value()).ok()
                })
                .collect()
        }))
    }

    /// The stored source paths that `keep` accepts.
    fn source_keys_where(&self, keep: &dyn Fn(&str) -> bool) -> Result<Vec<String>, Error> {
        let mut keys = Vec::new();
        self.each_row(SOURCES, |k, _| {
            if keep(k) {
                keys.push(k.to_string());
            }
        })?;
        Ok(keys)
    }

    /// Rows and bytes stored in each table (for the log, and for sizing the index).
    fn table_sizes(&self) -> Result<Vec<(&'static str, u64, u64, u64)>, Error> {
        let txn = self.read()?;
        let mut out = Vec::new();
        macro_rules! size {
            ($name:literal, $def:expr) => {
                if let Some(t) = read_table!(txn, $def) {
                    let s = t.stats().map_err(fail("index store: read"))?;
                    let n = t.len().map_err(fail("index store: read"))?;
                    out.push((
                        $name,
                        n,
                        s.stored_bytes(),
                        s.stored_bytes() + s.metadata_bytes() + s.fragmented_bytes(),
                    ));
                }
            };
        }
        size!("entries", ENTRIES);
        size!("links", LINKS);
        size!("hashes", HASHES);
        size!("order", ORDER);
        size!("sources", SOURCES);
        Ok(out)
    }

    /// Gives back the space that copy-on-write commits leave behind (after a large indexing run),
    /// when there is enough of it to be worth rewriting the file for (an eighth: after adding a
    /// few thousand messages to a million there is not, and the compaction would take seconds
    /// during which nothing can be read).
    fn compact(&self) {
        if let Some(db) = self.db().as_ref() {
            if let Err(e) = snapshot_order(db) {
                tracing::debug!(error = %e, "list order not copied");
            }
        }
        let in_use = self
            .db()
            .as_ref()
            .and_then(|db| db.begin_write().ok())
            .and_then(|txn| {
                let stats = txn.stats().ok()?;
                let _ = txn.abort();
                Some(stats.allocated_pages() * stats.page_size() as u64)
            })
            .unwrap_or(0);
        let file = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        if file < in_use + in_use / 8 + (8 << 20) {
            tracing::debug!(file, in_use, "index not compacted: little to gain");
            return;
        }
        tracing::debug!(file, in_use, "compacting the index");
        let mut guard = self.db.write().unwrap_or_else(|e| e.into_inner());
        let Some(db) = guard.as_mut() else { return };
        // Each pass moves what it can towards the start of the file; a few reach the end of it.
        for _ in 0..4 {
            match db.compact() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "index not compacted");
                    break;
                }
            }
        }
        tracing::debug!(file = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0), "index compacted");
    }

    /// Closes the database once the commit under way (if any) is done. redb marks an open file
    /// as needing recovery and clears the mark on a clean close; a file left marked is checked
    /// whole at the next open (a quarter of a second at a million messages, more with the archive).
    fn close(&self) {
        let mut guard = self.db.write().unwrap_or_else(|e| e.into_inner());
        if let Some(db) = guard.as_ref() {
            if let Err(e) = snapshot_order(db) {
                tracing::debug!(error = %e, "list order not copied");
            }
        }
        drop(guard.take());
    }

    /// Writes a batch atomically and durably. Every commit waits for the disk: pages a commit frees
    /// by copy-on-write are reused only after a durable one, and those freed by commits that were
    /// not stay where they are, past what compaction can give back.
    fn commit(&self, batch: &Batch) -> Result<(), Error> {
        let w = fail::<::redb::TableError>("index store: write");
        // Held to the end: closing waits for a commit under way.
        let guard = self.db();
        let db = guard.as_ref().ok_or_else(closed)?;
        let mut txn = db.begin_write().map_err(fail("index store: write"))?;
        txn.set_durability(Durability::Immediate).map_err(fail("index store: write"))?;
        let mut untrained: Option<Untrain<'_>> = None;
        {
            let mut entries = txn.open_table(ENTRIES).map_err(&w)?;
            let mut links = txn.open_table(LINKS).map_err(&w)?;
            let mut hashes = txn.open_table(HASHES).map_err(&w)?;
            let mut order = txn.open_table(ORDER).map_err(&w)?;
            let s = fail::<::redb::StorageError>("index store: write");
            // The first commit large enough to learn from trains the entries' dictionary, kept in
            // the same transaction as the entries it compresses.
            let mut codec = self.codec();
            if !codec.has_dictionary() && batch.entries.len() >= super::codec::TRAIN_MIN {
                let encoded: Vec<Vec<u8>> = batch.entries.iter().filter_map(|(_, e)| encode(&**e).ok()).collect();
                let samples: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
                if let Some(dict) = Codec::train(&samples) {
                    let trained = std::sync::Arc::new(Codec::new(Some(dict)));
                    if let Some(d) = trained.dictionary() {
                        txn.open_table(DICTIONARY).map_err(&w)?.insert("entries", d).map_err(&s)?;
                        // In use at once (it reads what is stored already too), and put back
                        // unless this transaction commits.
                        let mut current = self.codec.write().unwrap_or_else(|e| e.into_inner());
                        let previous = std::mem::replace(&mut *current, std::sync::Arc::clone(&trained));
                        untrained = Some(Untrain { codec: &self.codec, previous: Some(previous) });
                        codec = trained;
                    }
                }
            }
            let mut order_changed = false;
            // The rows of what is stored under an id come from the stored entry itself, so a
            // removal costs the caller only the id.
            for &id in &batch.removed {
                let old = entries.remove(id).map_err(&s)?.and_then(|v| self.decode_entry(id, v.value()));
                let Some(old) = old else { continue };
                for (link, h) in links_of(&old, &self.names) {
                    links.remove((link as u8, h, id)).map_err(&s)?;
                }
                let hash = u128::from_le_bytes(old.hash.0);
                if hashes.get(hash).map_err(&s)?.is_some_and(|v| v.value() == id) {
                    hashes.remove(hash).map_err(&s)?;
                }
                if matches!(old.location, Location::Top { .. }) {
                    order.remove((rank(old.summary.timestamp), id)).map_err(&s)?;
                    order_changed = true;
                }
            }
            // The lookup rows of a batch are gathered and written in key order: their keys are
            // hashes and dates, spread over the whole table, and a batch written as it came
            // visited the same pages again after the cache had let them go (at a million
            // messages the store's commits were an eighth of a cold index).
            let mut link_rows = Rows::default();
            let mut hash_rows: Vec<(u128, u32)> = Vec::new();
            let mut order_rows = Rows::default();
            for (id, e) in &batch.entries {
                let id = *id;
                let old = entries.get(id).map_err(&s)?.and_then(|v| self.decode_entry(id, v.value()));
                let new_links = links_of(e, &self.names);
                let old_links = old.as_ref().map(|o| links_of(o, &self.names)).unwrap_or_default();
                // Only the rows that differ are written: a re-read message that moved within its
                // file changes its entry, not its lookups.
                for row in old_links.iter().filter(|r| !new_links.contains(r)) {
                    link_rows.gone.push((row.0 as u8, row.1, id));
                }
                for row in new_links.iter().filter(|r| !old_links.contains(r)) {
                    link_rows.new.push(((row.0 as u8, row.1, id), ()));
                }
                if old.as_ref().is_none_or(|o| o.hash != e.hash) {
                    hash_rows.push((u128::from_le_bytes(e.hash.0), id));
                }
                let was_listed = old.as_ref().filter(|o| matches!(o.location, Location::Top { .. }));
                let listed = matches!(e.location, Location::Top { .. });
                if let Some(o) = was_listed {
                    if !listed || rank(o.summary.timestamp) != rank(e.summary.timestamp) {
                        order_rows.gone.push((rank(o.summary.timestamp), id));
                    }
                }
                if listed
                    && was_listed.is_none_or(|o| o.folder != e.folder || o.summary.timestamp != e.summary.timestamp)
                {
                    order_rows.new.push(((rank(e.summary.timestamp), id), e.folder));
                }
                entries.insert(id, codec.pack(&encode(&**e)?).as_slice()).map_err(&s)?;
            }
            link_rows.write(&mut links).map_err(&s)?;
            order_changed |= !order_rows.gone.is_empty() || !order_rows.new.is_empty();
            order_rows.write(&mut order).map_err(&s)?;
            if order_changed {
                txn.open_table(SNAPSHOTS).map_err(&w)?.remove(ORDER_SNAPSHOT).map_err(&s)?;
            }
            // Stable: of two entries with the same bytes in one batch, the later is the one kept,
            // as when they are written one after the other.
            hash_rows.sort_by_key(|&(hash, _)| hash);
            for (hash, id) in hash_rows {
                hashes.insert(hash, id).map_err(&s)?;
            }
            let mut folders = txn.open_table(FOLDERS).map_err(&w)?;
            for (id, path) in &batch.folders {
                folders.insert(id, path.as_str()).map_err(&s)?;
            }
            let mut labels = txn.open_table(LABELS).map_err(&w)?;
            for (label, change) in &batch.labels {
                let was = labels.get(label.as_str()).map_err(&s)?.map_or(0, |v| v.value());
                let now = was.saturating_add_signed(*change);
                if now == 0 {
                    labels.remove(label.as_str()).map_err(&s)?;
                } else {
                    labels.insert(label.as_str(), now).map_err(&s)?;
                }
            }
            if !batch.uploads.is_empty() || !batch.removed_uploads.is_empty() {
                let mut uploads = txn.open_table(UPLOADS).map_err(&w)?;
                for name in &batch.removed_uploads {
                    uploads.remove(name.as_str()).map_err(&s)?;
                }
                for (name, bytes) in &batch.uploads {
                    uploads.insert(name.as_str(), &**bytes).map_err(&s)?;
                }
            }
            let mut sources = txn.open_table(SOURCES).map_err(&w)?;
            for k in &batch.removed_sources {
                sources.remove(k.as_str()).map_err(&s)?;
            }
            for (k, st) in &batch.sources {
                sources.insert(k.as_str(), encode(st)?.as_slice()).map_err(&s)?;
            }
        }
        txn.commit().map_err(fail("index store: commit"))?;
        if let Some(mut u) = untrained {
            u.previous = None;
        }
        Ok(())
    }
}

/// Rows a commit removes from and writes to one table, written in key order. No key is in both:
/// every key carries the entry's id, and an entry's removed rows are the ones it no longer has.
struct Rows<K, V> {
    gone: Vec<K>,
    new: Vec<(K, V)>,
}

impl<K, V> Default for Rows<K, V> {
    fn default() -> Self {
        Rows { gone: Vec::new(), new: Vec::new() }
    }
}

impl<K, V> Rows<K, V>
where
    K: ::redb::Key + Ord + Copy + 'static,
    V: ::redb::Value + 'static,
    for<'a> K: std::borrow::Borrow<K::SelfType<'a>>,
    for<'a> V: std::borrow::Borrow<V::SelfType<'a>>,
{
    fn write(mut self, table: &mut ::redb::Table<'_, K, V>) -> Result<(), ::redb::StorageError> {
        self.gone.sort_unstable();
        self.new.sort_unstable_by_key(|(k, _)| *k);
        for k in self.gone {
            table.remove(k)?;
        }
        for (k, v) in self.new {
            table.insert(k, v)?;
        }
        Ok(())
    }
}

/// Writes [`SNAPSHOTS`]' copy of the list order, unless it is there already.
fn snapshot_order(db: &Database) -> Result<(), Error> {
    let w = fail::<::redb::TableError>("index store: write");
    let s = fail::<::redb::StorageError>("index store: write");
    let txn = db.begin_write().map_err(fail("index store: write"))?;
    {
        let mut copies = txn.open_table(SNAPSHOTS).map_err(&w)?;
        if copies.get(ORDER_SNAPSHOT).map_err(&s)?.is_some() {
            drop(copies);
            txn.abort().map_err(&s)?;
            return Ok(());
        }
        let order = txn.open_table(ORDER).map_err(&w)?;
        let mut copy = Vec::with_capacity(order.len().map_err(&s)? as usize * 8);
        for row in order.iter().map_err(&s)? {
            let (key, folder) = row.map_err(&s)?;
            copy.extend_from_slice(&key.value().1.to_le_bytes());
            copy.extend_from_slice(&folder.value().to_le_bytes());
        }
        copies.insert(ORDER_SNAPSHOT, copy.as_slice()).map_err(&s)?;
    }
    txn.commit().map_err(fail("index store: commit"))
}

/// Empties a store of another schema, and draws the key names are hashed under.
fn reset(db: &Database) -> Result<(), Error> {
    let r = fail::<::redb::TableError>("index store: reset");
    let txn = db.begin_write().map_err(fail("index store: write"))?;
    txn.delete_table(ENTRIES).map_err(&r)?;
    txn.delete_table(DICTIONARY).map_err(&r)?;
    txn.delete_table(SOURCES).map_err(&r)?;
    txn.delete_table(LINKS).map_err(&r)?;
    txn.delete_table(HASHES).map_err(&r)?;
    txn.delete_table(ORDER).map_err(&r)?;
    txn.delete_table(FOLDERS).map_err(&r)?;
    txn.delete_table(LABELS).map_err(&r)?;
    txn.delete_table(SNAPSHOTS).map_err(&r)?;
    {
        let s = fail::<::redb::StorageError>("index store: reset");
        let mut meta = txn.open_table(META).map_err(&r)?;
        meta.insert("schema", SCHEMA).map_err(&s)?;
        let random = std::collections::hash_map::RandomState::new();
        for i in 0..4u64 {
            use std::hash::BuildHasher;
            meta.insert(format!("name_key{i}").as_str(), random.hash_one(i)).map_err(&s)?;
        }
    }
    txn.commit().map_err(fail("index store: commit"))
}

//! The persistent index: `index.redb` in `--data-dir`. redb is an embedded, pure-Rust, copy-on-write
//! B-tree store with atomic commits, so a `kill -9` at any moment leaves the last committed state,
//! never a torn one. It holds every index entry and, per source file, what was indexed from it
//! (size, modification time, mbox end offset), so a restart re-reads only what changed.

use std::path::Path;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::index::{Entry, EntryId};

const ENTRIES: TableDefinition<u32, &[u8]> = TableDefinition::new("entries");
const SOURCES: TableDefinition<&str, &[u8]> = TableDefinition::new("sources");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Bumped whenever the stored form changes, or what parsing puts in it (6: the Content-IDs of
/// external bodies' phantom headers; 7: labels, list ids and attachment types; 8: the items of Outlook data files, which
/// earlier versions skipped); an index of another
/// version is rebuilt from sources.
const SCHEMA: u64 = 8;

/// What was indexed from one source file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SourceState {
    pub size: u64,
    pub mtime_ns: i64,
    /// Top-level entries read from it.
    pub ids: Vec<EntryId>,
    /// For an mbox: where its last indexed message ended, and a hash of the bytes before that
    /// point, so an appended mbox is read only from there.
    pub mbox_end: u64,
    pub mbox_tail: Option<[u8; 16]>,
}

/// Changes to write in one transaction.
#[derive(Debug, Default)]
pub struct Batch {
    pub entries: Vec<(EntryId, Entry)>,
    pub removed: Vec<EntryId>,
    pub sources: Vec<(String, SourceState)>,
    pub removed_sources: Vec<String>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.removed.is_empty() && self.sources.is_empty() && self.removed_sources.is_empty()
    }
}

pub struct Store {
    /// Behind a lock only so that [`Store::compact`] can have it alone; transactions are
    /// serialised by the archive anyway.
    db: std::sync::Mutex<Database>,
}

/// redb's page cache. Its default (1 GiB) would let the cache, not the index, set the memory a
/// large archive takes; what is read back at start-up is read once.
const CACHE_BYTES: usize = 4 * 1024 * 1024;

fn fail(what: &'static str) -> impl Fn(redb::Error) -> Error {
    move |e| Error::internal(what, e)
}

fn encode<T: Serialize>(v: &T) -> Result<Vec<u8>, Error> {
    postcard::to_stdvec(v).map_err(|e| Error::internal("index store: encode", e))
}

impl Store {
    /// Opens (or creates) the store in `dir`. A store of another schema is emptied, to be rebuilt.
    pub fn open(dir: &Path) -> Result<Store, Error> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("index.redb");
        let db = Database::builder().set_cache_size(CACHE_BYTES).create(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => Error::BadPath {
                path: dir.to_path_buf(),
                reason: "this data folder is in use by another mailshelf".into(),
            },
            e => fail("index store: open")(e.into()),
        })?;
        let store = Store { db: std::sync::Mutex::new(db) };
        let version = {
            let db = store.db();
            let txn = db.begin_read().map_err(|e| fail("index store: read")(e.into()))?;
            match txn.open_table(META) {
                Ok(t) => t.get("schema").map_err(|e| fail("index store: read")(e.into()))?.map(|v| v.value()),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(fail("index store: read")(e.into())),
            }
        };
        if version != Some(SCHEMA) {
            store.reset()?;
        }
        Ok(store)
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Database> {
        self.db.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reset(&self) -> Result<(), Error> {
        let txn = self.db().begin_write().map_err(|e| fail("index store: write")(e.into()))?;
        txn.delete_table(ENTRIES).map_err(|e| fail("index store: reset")(e.into()))?;
        txn.delete_table(SOURCES).map_err(|e| fail("index store: reset")(e.into()))?;
        txn.open_table(META)
            .and_then(|mut m| m.insert("schema", SCHEMA).map(|_| ()).map_err(Into::into))
            .map_err(|e| fail("index store: reset")(e.into()))?;
        txn.commit().map_err(|e| fail("index store: commit")(e.into()))
    }

    /// Calls `f` with every row of a table, in key order (a missing table has no rows).
    fn each_row<K: redb::Key + 'static>(
        &self,
        table: TableDefinition<K, &'static [u8]>,
        mut f: impl FnMut(K::SelfType<'_>, &[u8]),
    ) -> Result<(), Error> {
        let db = self.db();
        let txn = db.begin_read().map_err(|e| fail("index store: read")(e.into()))?;
        let t = match txn.open_table(table) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(fail("index store: read")(e.into())),
        };
        for row in t.iter().map_err(|e| fail("index store: read")(e.into()))? {
            let (k, v) = row.map_err(|e| fail("index store: read")(e.into()))?;
            f(k.value(), v.value());
        }
        Ok(())
    }

    /// Hands every stored entry to `f`, in id order, without holding them all twice.
    pub fn load(&self, mut f: impl FnMut(EntryId, Entry)) -> Result<(), Error> {
        self.each_row(ENTRIES, |id, bytes| match postcard::from_bytes::<Entry>(bytes) {
            Ok(e) => f(id, e),
            Err(e) => tracing::warn!(id, error = %e, "unreadable index entry dropped"),
        })
    }

    /// How many entries are stored.
    pub fn entry_count(&self) -> Result<u64, Error> {
        let db = self.db();
        let txn = db.begin_read().map_err(|e| fail("index store: read")(e.into()))?;
        match txn.open_table(ENTRIES) {
            Ok(t) => t.len().map_err(|e| fail("index store: read")(e.into())),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(fail("index store: read")(e.into())),
        }
    }

    /// The stored state of each of `keys`, looked up on every core (a warm start compares every
    /// source file with what was indexed from it).
    pub fn sources_of(&self, keys: &[String]) -> Vec<Option<SourceState>> {
        crate::par::map_slices(keys, |part| {
            // A missing table or a failed read means "nothing known": the source is read again.
            let txn = self.db().begin_read().ok();
            let table = txn.as_ref().and_then(|t| t.open_table(SOURCES).ok());
            part.iter()
                .map(|k| {
                    let v = table.as_ref()?.get(k.as_str()).ok()??;
                    postcard::from_bytes(v.value()).ok()
                })
                .collect()
        })
    }

    /// The stored source paths that `keep` accepts.
    pub fn source_keys_where(&self, keep: impl Fn(&str) -> bool) -> Result<Vec<String>, Error> {
        let mut keys = Vec::new();
        self.each_row(SOURCES, |k, _| {
            if keep(k) {
                keys.push(k.to_string());
            }
        })?;
        Ok(keys)
    }

    /// One source's state.
    pub fn source(&self, key: &str) -> Option<SourceState> {
        self.sources_of(std::slice::from_ref(&key.to_string())).pop().flatten()
    }

    /// Gives back the space that copy-on-write commits leave behind (after a large indexing run).
    pub fn compact(&self) {
        match self.db().compact() {
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "index not compacted"),
        }
    }

    /// Writes a batch atomically. `durable` waits for the disk; otherwise the batch becomes durable
    /// with the next durable commit (and a crash before that loses it whole, never in part).
    pub fn commit(&self, batch: &Batch, durable: bool) -> Result<(), Error> {
        if batch.is_empty() && !durable {
            return Ok(());
        }
        let db = self.db();
        let mut txn = db.begin_write().map_err(|e| fail("index store: write")(e.into()))?;
        txn.set_durability(if durable { Durability::Immediate } else { Durability::None })
            .map_err(|e| fail("index store: write")(e.into()))?;
        {
            let mut entries = txn.open_table(ENTRIES).map_err(|e| fail("index store: write")(e.into()))?;
            for id in &batch.removed {
                entries.remove(id).map_err(|e| fail("index store: write")(e.into()))?;
            }
            for (id, e) in &batch.entries {
                entries.insert(id, encode(e)?.as_slice()).map_err(|e| fail("index store: write")(e.into()))?;
            }
            let mut sources = txn.open_table(SOURCES).map_err(|e| fail("index store: write")(e.into()))?;
            for k in &batch.removed_sources {
                sources.remove(k.as_str()).map_err(|e| fail("index store: write")(e.into()))?;
            }
            for (k, s) in &batch.sources {
                sources.insert(k.as_str(), encode(s)?.as_slice()).map_err(|e| fail("index store: write")(e.into()))?;
            }
        }
        txn.commit().map_err(|e| fail("index store: commit")(e.into()))
    }
}

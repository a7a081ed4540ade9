//! The loaded archive: keeps the [`Index`] current with the given paths and the persistent
//! [`Store`] and search index, and reads any indexed message back from its source on demand.
//!
//! Its rooms: this file holds the archive itself, the scan that decides what to read and the
//! collector that adds what was read and commits it; `pipeline` reads and parses sources on every
//! core; `load` reads a message back for viewing; `uploads` takes and deletes uploads; `doc`
//! makes what the search index gets of a message; `excerpts` what a search result shows of it
//! (and keeps the text of documents read for results and for reading); `backend` says which
//! backend keeps it; `within` finds and searches within the folders one reader may read. A
//! source's state is written only once all its messages are, so a crash re-reads exactly the
//! sources that were not finished.

pub mod replica;
pub mod watch;

mod backend;
mod doc;
mod excerpts;
mod in_order;
mod load;
mod pipeline;
mod progress;
mod uploads;
mod within;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

pub use backend::Backend;
pub use doc::{documents, message_at, search_doc, DocumentAt};
pub use excerpts::Excerpt;
pub use load::Loaded;
pub use progress::{Progress, Readiness};

use crate::error::Error;
use crate::index::{Added, EntryId, Index, Location};
use crate::ingest;
use crate::model::Message;
use crate::search::{Doc, Embedded, Hits, SearchIndex};
use crate::store::{Batch, RedbStore, SourceState, Store};
use pipeline::{stat, tail_hash, Outcome};

/// How many parsed top-level messages stay in memory.
const CACHE_SIZE: usize = 32;

/// An indexing run that parsed this many messages compacts the store afterwards.
const COMPACT_AFTER: usize = 10_000;

/// Files stat'ed and compared per slice of a scan.
const SCAN_CHUNK: usize = 8192;

/// Messages between two commits to the store while indexing. Each commit rewrites every page its
/// rows land on, and the lookup tables' rows land anywhere: larger batches share pages (at a
/// million messages, 2,000 a commit wrote 13 KB a message). What waits is some 700 bytes a message.
const BATCH: usize = 10_000;

pub struct Archive {
    index: RwLock<Index>,
    /// Parsed top-level messages recently read.
    cache: quick_cache::sync::Cache<EntryId, Arc<Message>>,
    /// Text of documents read for search results and for reading.
    documents: excerpts::DocumentCache,
    store: Arc<dyn Store>,
    /// The full-text index; `None` when search is turned off.
    search: Option<Box<dyn SearchIndex>>,
    /// Whether the text of attached documents goes into the search index.
    attachment_text: bool,
    /// Bytes read of one message (`--max-message`).
    max_message: usize,
    /// Whether the search index was checked against the index since start.
    search_checked: AtomicBool,
    /// Set by [`Archive::close`]: commits after it are not errors.
    closing: AtomicBool,
    /// One indexing run at a time (start-up, a watch event, an upload).
    ingest_lock: Mutex<()>,
    /// What the last scan learnt of the files beside the sources (Dovecot's indexes): a store
    /// whose index files did not change is not read again to compare.
    sidecars: Mutex<ingest::Sidecars>,
    /// The shared database, when this server is one of its replicas, and the lock that makes one
    /// of them the indexer.
    database: Option<Arc<crate::postgres::Database>>,
    indexer_lock: Option<crate::postgres::IndexerLock>,
    /// With `--index-decrypted`: the keys every message is decrypted with as it is read, so that
    /// what its encrypted layers hide is indexed too (see [`Archive::index_decrypted`]).
    index_keys: std::sync::OnceLock<Arc<crate::crypto::Keyring>>,
    /// The paths this archive serves, as given and made canonical: where message files may be
    /// read from ([`Archive::within`]).
    served: RwLock<Vec<(PathBuf, Option<PathBuf>)>>,
    pub progress: Progress,
}

/// How far a commit goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Commit {
    /// Durable in the store, not yet visible to searches: a batch in the middle of indexing.
    Checkpoint,
    /// Durable, and visible to searches: the end of an indexing run, an upload.
    Done,
}

/// A source to read: the file, where to start (an appended mbox), and the entries it already gave.
struct ToRead {
    found: ingest::Found,
    key: String,
    start: u64,
    /// Its size and modification time when the scan compared it with what was indexed: what the
    /// index records of it once read (with what the files beside it say, see [`ingest::Sidecars`]).
    stat: (u64, i64),
    ids: Vec<EntryId>,
    /// A source read again from the start: what it gave before. Messages found again keep their
    /// entries (and ids); the rest are removed once the source is read.
    replaced: Vec<EntryId>,
}

/// A source whose messages are still on their way.
struct Pending {
    key: String,
    /// Where the source is, to tell a message found again in it from a copy elsewhere.
    path: PathBuf,
    ids: Vec<EntryId>,
    replaced: Vec<EntryId>,
    received: usize,
    done: Option<(usize, SourceState)>,
    /// It could not be read, or a message of it could not be indexed: its state is kept as one
    /// to read again ([`SourceState::to_read_again`]).
    failed: bool,
    /// It (or the file of a message of it) could not be read: what it gave before stays listed
    /// until a run reads it.
    unread: bool,
}

impl Archive {
    /// An archive with its index in `data_dir` (created if needed), loaded as it was left, with
    /// full-text search.
    pub fn open(data_dir: &Path) -> Result<Archive, Error> {
        Self::open_with(data_dir, true)
    }

    /// As [`Archive::open`], with full-text search on or off.
    pub fn open_with(data_dir: &Path, search: bool) -> Result<Archive, Error> {
        let store: Arc<dyn Store> = Arc::new(RedbStore::open(data_dir)?);
        let search: Option<Box<dyn SearchIndex>> = if search {
            let t = std::time::Instant::now();
            let s = Embedded::open(&data_dir.join("search"))?;
            tracing::debug!(seconds = t.elapsed().as_secs_f64(), "search index opened");
            Some(Box::new(s))
        } else {
            None
        };
        let archive = Self::with_parts(store, search, None)?;
        archive.take_in_file_uploads(&data_dir.join("uploads"));
        Ok(archive)
    }

    /// An archive kept in a shared PostgreSQL database: its index, its search and its uploads, so
    /// that any number of replicas over the same database and paths serve the same answers.
    pub fn open_shared(database: Arc<crate::postgres::Database>, search: bool) -> Result<Archive, Error> {
        let store: Arc<dyn Store> = Arc::new(crate::postgres::PgStore::open(Arc::clone(&database))?);
        let search: Option<Box<dyn SearchIndex>> =
            if search { Some(Box::new(crate::postgres::PgSearch::new(Arc::clone(&database)))) } else { None };
        Self::with_parts(store, search, Some(database))
    }

    /// The same archive, with the text of attached documents searched or not (it is by default).
    pub fn with_attachment_text(self, on: bool) -> Archive {
        Archive { attachment_text: on, ..self }
    }

    /// The same archive, reading at most `bytes` of one message (a longer one is listed, shown and
    /// searched as far as that, with a notice).
    pub fn with_max_message(self, bytes: usize) -> Archive {
        Archive { max_message: bytes, ..self }
    }

    fn with_parts(
        store: Arc<dyn Store>,
        search: Option<Box<dyn SearchIndex>>,
        database: Option<Arc<crate::postgres::Database>>,
    ) -> Result<Archive, Error> {
        let t = std::time::Instant::now();
        let index = Index::open(Arc::clone(&store))?;
        tracing::debug!(seconds = t.elapsed().as_secs_f64(), messages = index.listed_count(), "index opened");
        Ok(Archive {
            index: RwLock::new(index),
            cache: quick_cache::sync::Cache::new(CACHE_SIZE),
            documents: excerpts::document_cache(),
            store,
            search,
            attachment_text: true,
            max_message: crate::limits::DEFAULT_MAX_MESSAGE,
            search_checked: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            ingest_lock: Mutex::new(()),
            sidecars: Mutex::default(),
            indexer_lock: database.as_ref().map(|d| crate::postgres::IndexerLock::new(Arc::clone(d))),
            index_keys: std::sync::OnceLock::new(),
            served: RwLock::new(Vec::new()),
            progress: Progress::default(),
            database,
        })
    }

    /// `--index-decrypted`: from now on, every message read (for the index, and back for viewing)
    /// is decrypted with `keys` where it can be, so that search finds what encrypted mail says and
    /// the messages it encloses are indexed. Call it before indexing starts; later calls change
    /// nothing.
    pub fn index_decrypted(&self, keys: Arc<crate::crypto::Keyring>) {
        let _ = self.index_keys.set(keys);
    }

    /// `msg` as the index sees it: decrypted with the `--index-decrypted` keys, else as parsed.
    fn as_indexed(keys: Option<&crate::crypto::Keyring>, msg: Message) -> Message {
        match keys {
            Some(k) => crate::parse::secure::decrypt(&msg, k).unwrap_or(msg),
            None => msg,
        }
    }

    /// Read access to the index. A poisoned lock (a panic elsewhere) still yields the data: the
    /// index is only ever changed by whole-entry inserts and removals.
    pub fn index(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner())
    }

    fn index_mut(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the index when the server stops, leaving the store so that it opens quickly. An
    /// indexing run still going can commit no more: what it committed is kept, the rest is read
    /// again at the next start.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
        if let Some(lock) = &self.indexer_lock {
            lock.release();
        }
        self.store.close();
    }

    /// The folders and files indexing reads for the given paths: the paths themselves (uploads
    /// are in the store, never read from a folder). They are remembered as what this archive
    /// serves: message files are read only where they really lie inside them.
    pub fn roots(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let mut served = self.served.write().unwrap_or_else(|e| e.into_inner());
        for p in paths {
            if !served.iter().any(|(given, _)| given == p) {
                served.push((p.clone(), p.canonicalize().ok()));
            }
        }
        paths.to_vec()
    }

    /// Where message files may be read from: the paths served, made canonical (again, for one
    /// that could not be when it was given).
    pub(crate) fn within(&self) -> ingest::Within {
        let served = self.served.read().unwrap_or_else(|e| e.into_inner());
        ingest::Within::canonical(
            served.iter().filter_map(|(given, canonical)| canonical.clone().or_else(|| given.canonicalize().ok())),
        )
    }

    /// Brings the index up to date with `roots`: new and changed sources are read, unchanged ones
    /// (same size and modification time, and the same said of them by the files beside them:
    /// [`ingest::Sidecars`]) are not, appended mbox files are read from where they
    /// ended, and sources that are gone are dropped. Never fatal: unreadable files are logged.
    pub fn ingest_paths(&self, roots: &[PathBuf]) {
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.roots(roots);
        self.progress.running.store(true, Ordering::Release);
        let started = std::time::Instant::now();
        self.index_mut().begin_first_run();
        self.reconcile_search();
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), "search index checked");
        let found: Vec<ingest::Found> = roots.iter().flat_map(|r| ingest::walk(r)).collect();
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), files = found.len(), "sources found");
        self.progress.total.store(found.len(), Ordering::Relaxed);
        self.progress.indexed.store(0, Ordering::Relaxed);

        let mut batch = Batch::default();
        // Paths seen, by hash: enough to tell which stored sources are gone.
        let mut seen: HashSet<u64> = HashSet::with_capacity(found.len());
        let mut stale: Vec<EntryId> = Vec::new();
        let mut todo: Vec<ToRead> = Vec::new();
        let mut found = found.into_iter();
        // What Dovecot's indexes and MH's sequences say of a file is compared with the file:
        // they change (a flag set, a message moved or expunged) where the file does not.
        let mut sidecars = self.sidecars.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            // Stat files and look up what was indexed from them on all cores, a slice at a time
            // so that a large tree never needs it all in memory at once.
            let chunk: Vec<ingest::Found> = found.by_ref().take(SCAN_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let keys: Vec<String> = chunk.iter().map(|f| f.path.to_string_lossy().into_owned()).collect();
            let stats = stat_all(&chunk);
            let states = match self.store.sources_of(&keys) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "indexing stopped: what was indexed cannot be looked up");
                    sidecars.forget_read();
                    self.progress.running.store(false, Ordering::Release);
                    return;
                }
            };
            for (((f, key), stat), known) in chunk.into_iter().zip(keys).zip(stats).zip(states) {
                let Some((size, mtime_ns)) = stat else {
                    self.progress.indexed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                seen.insert(crate::index::string_hash(&key));
                // The walker records the version from its own reading of the files beside.
                let version = ingest::version(mtime_ns, sidecars.digest(&f.path));
                match known {
                    Some(st) if st.size == size && st.mtime_ns == version => {
                        self.progress.indexed.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(st) if st.mbox_end > 0 && size > st.size && mbox_prefix_unchanged(&f.path, &st) => {
                        // An mbox that only grew: read from where its last message ended.
                        todo.push(ToRead {
                            found: f,
                            key,
                            start: st.mbox_end,
                            stat: (size, mtime_ns),
                            ids: st.ids,
                            replaced: Vec::new(),
                        });
                    }
                    old => {
                        // Removed only after the source is read again: a message still in it
                        // keeps its entry, and memory holds ids, not a copy of every entry.
                        let replaced = old.map(|st| st.ids).unwrap_or_default();
                        todo.push(ToRead {
                            found: f,
                            key,
                            start: 0,
                            stat: (size, mtime_ns),
                            ids: Vec::new(),
                            replaced,
                        });
                    }
                }
            }
        }
        // The indexes read for the comparison are not held while the sources are read.
        sidecars.forget_read();
        drop(sidecars);
        // Sources that are gone, and the entries of sources that changed.
        let gone = self.store.source_keys_where(&|k| !seen.contains(&crate::index::string_hash(k))).unwrap_or_default();
        drop(seen);
        if !gone.is_empty() {
            stale.extend(self.store.sources_of(&gone).unwrap_or_default().into_iter().flatten().flat_map(|st| st.ids));
            batch.removed_sources = gone;
        }
        if !stale.is_empty() {
            let mut index = self.index_mut();
            for id in stale {
                index.remove(id);
            }
        }
        let parsed_before = self.progress.parsed.load(Ordering::Relaxed);
        tracing::debug!(seconds = started.elapsed().as_secs_f64(), to_read = todo.len(), "sources compared");
        // A run started by the holder of the indexer lock stops if the lock is lost on the way.
        let holding = self.indexer_lock.is_some() && self.is_indexer();
        let finished = self.run_pipeline(todo, &mut batch, holding) && !self.lost_lock(holding);
        if finished {
            let _ = self.commit(std::mem::take(&mut batch), Commit::Done);
        }
        let large = self.progress.parsed.load(Ordering::Relaxed) - parsed_before >= COMPACT_AFTER;
        if finished && large {
            self.store.compact();
            for (table, rows, stored, total) in self.store.table_sizes().unwrap_or_default() {
                tracing::debug!(table, rows, stored, total, "index table");
            }
        }
        {
            let mut index = self.index_mut();
            index.sort();
            index.end_first_run();
        }
        self.cache.clear();
        // What a run parsed, batched and buffered is free now; without this the process would
        // stay at the run's high-water mark while it serves.
        crate::memory::release();
        // A run given up (this replica lost the indexer lock) leaves it following the new holder,
        // with the shared state as loaded and followed since.
        self.progress.set_ready(if finished { Readiness::Indexed } else { Readiness::Loaded });
        self.progress.running.store(false, Ordering::Release);
    }

    /// Writes a batch, with every change the index holds, to the store, then (when done: a search
    /// commit costs a segment) the search index. The store is the reference; a search index behind
    /// it is caught up at the next start ([`Archive::reconcile_search`]).
    fn commit(&self, mut batch: Batch, how: Commit) -> Result<(), Error> {
        self.index().take_changes(&mut batch);
        let started = std::time::Instant::now();
        let result = self.store.commit(&batch);
        tracing::debug!(
            entries = batch.entries.len(),
            removed = batch.removed.len(),
            seconds = started.elapsed().as_secs_f64(),
            "index committed"
        );
        match &result {
            Ok(()) => self.index_mut().committed(&batch),
            Err(_) if self.closing.load(Ordering::Acquire) => {}
            Err(e) => tracing::error!(error = %e, "could not save the index; it will be rebuilt from sources"),
        }
        if let Some(search) = &self.search {
            for &id in batch.removed.iter().chain(&batch.unfiled) {
                search.delete(id);
            }
            if matches!(how, Commit::Done) {
                search.commit();
            }
        }
        // A batch's parsed messages and rows are free now: hand them back between batches, so the
        // peak is one batch's worth, not the sum of what the arenas kept.
        crate::memory::release();
        result
    }

    /// Brings the search index in line with the index after a crash between the two commits.
    fn reconcile_search(&self) {
        let Some(search) = &self.search else { return };
        if self.search_checked.swap(true, Ordering::AcqRel) {
            return;
        }
        // Sorted lists rather than sets: four bytes an id, at a million messages too.
        let have = search.ids();
        let mut want: Vec<EntryId> = self.index().listed().to_vec();
        want.sort_unstable();
        let (extra, missing) = sorted_differences(&have, &want);
        let changed = !extra.is_empty() || !missing.is_empty();
        for id in extra {
            search.delete(id);
        }
        if !missing.is_empty() {
            tracing::info!(messages = missing.len(), "adding messages to the search index");
        }
        for id in missing {
            if let Ok(loaded) = self.load(id) {
                search
                    .add(&Doc { folder: self.folder_of(id), ..search_doc(id, loaded.message(), self.attachment_text) });
            }
        }
        if changed {
            search.commit();
        }
    }

    /// Takes the search document of `id` out (before its new one goes in).
    fn unindex_for_search(&self, id: EntryId) {
        if let Some(search) = &self.search {
            search.delete(id);
        }
    }

    fn index_for_search(&self, id: EntryId, msg: &Message) {
        if let Some(search) = &self.search {
            search.add(&Doc { folder: self.folder_of(id), ..search_doc(id, msg, self.attachment_text) });
        }
    }

    /// The folder a listed entry is filed in, for its search document.
    fn folder_of(&self, id: EntryId) -> String {
        let index = self.index();
        index.folder_path(index.folder_of(id)).to_string()
    }

    /// Runs a search; ids of listed messages, best first.
    pub fn search(&self, q: &str, offset: usize, limit: usize) -> Result<Hits, Error> {
        match &self.search {
            Some(search) => search.search(q, offset, limit, &|m| self.index().by_message_id(m)),
            None => Err(Error::BadQuery("search is turned off on this server".into())),
        }
    }

    /// Every listed id a query matches, unranked (for exports).
    pub fn search_ids(&self, q: &str) -> Result<HashSet<EntryId>, Error> {
        match &self.search {
            Some(search) => search.matching(q, &|m| self.index().by_message_id(m)),
            None => Err(Error::BadQuery("search is turned off on this server; only an empty query can run".into())),
        }
    }

    /// The indexing thread: adds parsed messages, finishes sources, commits in batches.
    fn collect(
        &self,
        out_rx: impl Iterator<Item = Outcome>,
        pending: &mut [Option<Pending>],
        batch: &mut Batch,
        holding: bool,
    ) -> bool {
        let mut since_commit = 0;
        // Entries this run added since its last checkpoint, to take back out if it is given up.
        let mut uncommitted: Vec<EntryId> = Vec::new();
        for outcome in out_rx {
            let src = match outcome {
                Outcome::Parsed { src, draft, location, doc, held: _held } => {
                    self.progress.parsed.fetch_add(1, Ordering::Relaxed);
                    let added = self.index_mut().add_draft(*draft, location);
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        match added {
                            Err(e) => {
                                // No id to give it (the database is away): the source stays
                                // unfinished and is read again by the next run.
                                tracing::warn!(error = %e, "message not indexed");
                                p.failed = true;
                            }
                            Ok(added) => match added {
                                Added::New(id) => {
                                    if let (Some(search), Some(mut doc)) = (&self.search, doc) {
                                        doc.id = id;
                                        doc.folder = self.folder_of(id);
                                        search.add(&doc);
                                    }
                                    p.ids.push(id);
                                    uncommitted.push(id);
                                }
                                // Found again where it was read from before: still this source's.
                                // Listed from now on, not new: no longer only enclosed in another;
                                // or with other labels there.
                                Added::Relisted(id) | Added::Relabelled(id) => {
                                    if matches!(added, Added::Relabelled(_)) {
                                        self.unindex_for_search(id);
                                    }
                                    if let (Some(search), Some(mut doc)) = (&self.search, doc) {
                                        doc.id = id;
                                        doc.folder = self.folder_of(id);
                                        search.add(&doc);
                                    }
                                    p.ids.push(id);
                                }
                                Added::Duplicate(id) if self.read_from(id, &p.path) => p.ids.push(id),
                                Added::Duplicate(_) => {}
                            },
                        }
                        p.received += 1;
                    }
                    since_commit += 1;
                    src
                }
                Outcome::Failed { src, held: _held } => {
                    self.progress.failed.fetch_add(1, Ordering::Relaxed);
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        p.received += 1;
                    }
                    src
                }
                Outcome::Unread { src, held: _held } => {
                    self.progress.failed.fetch_add(1, Ordering::Relaxed);
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        // Its state is kept as one to read again (see where it finishes).
                        p.failed = true;
                        p.unread = true;
                        p.received += 1;
                    }
                    src
                }
                Outcome::NotMail { src, held: _held } => {
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        p.received += 1;
                    }
                    src
                }
                Outcome::Done { src, count, state, whole } => {
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        p.done = Some((count, state));
                        p.failed |= !whole;
                        p.unread |= !whole;
                    }
                    src
                }
            };
            let slot = pending.get_mut(src);
            let finished = slot
                .as_ref()
                .and_then(|p| p.as_ref())
                .is_some_and(|p| p.done.as_ref().is_some_and(|(count, _)| p.received >= *count));
            if finished {
                if let Some(mut p) = slot.and_then(Option::take) {
                    p.ids.sort_unstable();
                    p.ids.dedup();
                    if !p.replaced.is_empty() && !p.unread {
                        p.replaced.sort_unstable();
                        let (gone, _) = sorted_differences(&p.replaced, &p.ids);
                        let mut index = self.index_mut();
                        for id in gone {
                            index.remove(id);
                        }
                    }
                    match p.done {
                        Some((_, mut state)) if !p.failed => {
                            state.ids = p.ids;
                            batch.sources.push((p.key, state));
                        }
                        // Read again by the next run; until then it holds what it gave now and,
                        // when not read to its end, what it gave before.
                        Some(_) => {
                            let mut ids = p.ids;
                            if p.unread {
                                ids.extend(p.replaced);
                                ids.sort_unstable();
                                ids.dedup();
                            }
                            batch.sources.push((p.key, SourceState::to_read_again(ids)));
                        }
                        None => {}
                    }
                }
                self.progress.indexed.fetch_add(1, Ordering::Relaxed);
            }
            if since_commit >= BATCH {
                if self.lost_lock(holding) {
                    self.give_up(uncommitted, batch);
                    return false;
                }
                // Each commit is durable (see the store's): at a million messages, one durable
                // commit in four left a 398 MB index after compaction, every one 289 MB, for a
                // second of syncing in all.
                if self.commit(std::mem::take(batch), Commit::Checkpoint).is_ok() {
                    uncommitted.clear();
                }
                since_commit = 0;
            }
        }
        if self.lost_lock(holding) {
            self.give_up(uncommitted, batch);
            return false;
        }
        true
    }

    /// Whether a run begun under the indexer lock (`holding`) has lost it since.
    fn lost_lock(&self, holding: bool) -> bool {
        holding && !self.is_indexer()
    }

    /// Gives up a run of a replica that no longer holds the indexer lock (its lock's connection
    /// ended while the run went on): another replica may be reading the same sources already, and
    /// both committing would list their messages twice. What was read since the last checkpoint
    /// is taken back out, and its sources are left for the new holder to read.
    fn give_up(&self, uncommitted: Vec<EntryId>, batch: &mut Batch) {
        tracing::warn!(messages = uncommitted.len(), "this replica lost the indexer lock: its run stops here");
        *batch = Batch::default();
        let mut index = self.index_mut();
        for id in uncommitted {
            index.remove(id);
            if let Some(search) = &self.search {
                search.delete(id);
            }
        }
    }

    /// Whether a listed entry's message is read from the file at `path`.
    fn read_from(&self, id: EntryId, path: &Path) -> bool {
        self.index()
            .get(id)
            .is_some_and(|e| matches!(&e.location, Location::Top { source, .. } if source.path() == path))
    }

    /// Finds an entry by its URL id: the key, or else any message with that Message-ID.
    pub fn find(&self, key: &str) -> Option<EntryId> {
        let index = self.index();
        index.by_key(key).or_else(|| index.by_message_id(key).first().copied())
    }
}

/// What only `a` holds and what only `b` holds, of two sorted lists without repeats.
fn sorted_differences(a: &[EntryId], b: &[EntryId]) -> (Vec<EntryId>, Vec<EntryId>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(&x), Some(&y)) if x < y => {
                only_a.push(x);
                i += 1;
            }
            (Some(_), Some(&y)) | (None, Some(&y)) => {
                only_b.push(y);
                j += 1;
            }
            (Some(&x), None) => {
                only_a.push(x);
                i += 1;
            }
            (None, None) => break,
        }
    }
    (only_a, only_b)
}

/// Size and modification time of every file, using every core (`None` where stat failed).
fn stat_all(found: &[ingest::Found]) -> Vec<Option<(u64, i64)>> {
    crate::par::map_slices(found, |part| part.iter().map(|f| stat(&f.path).ok()).collect())
}

fn mbox_prefix_unchanged(path: &Path, st: &SourceState) -> bool {
    st.mbox_tail.is_some() && tail_hash(path, st.mbox_end).ok() == st.mbox_tail
}

#[cfg(test)]
mod tests {
    use super::in_order::{InOrder, Numbered};
    use super::{sorted_differences, Archive, Batch, Outcome, Pending, SourceState};

    /// A source read again from its start that could not be read to its end keeps the messages
    /// it gave before, and is kept as one to read again holding those and the ones it gave now;
    /// read whole, those it no longer holds go, and its state is the one the walker gave.
    #[test]
    fn a_source_not_read_to_its_end_keeps_its_messages() {
        let dir = tempfile::tempdir().expect("dir");
        let mail = dir.path().join("mail");
        std::fs::create_dir_all(&mail).expect("mkdir");
        std::fs::write(mail.join("one.eml"), "Subject: one\nMessage-ID: <one@example.org>\n\nbody\n").expect("write");
        let archive = Archive::open_with(&dir.path().join("data"), false).expect("opens");
        archive.ingest_paths(&archive.roots(std::slice::from_ref(&mail)));
        let ids = archive.index().listed().to_vec();
        assert_eq!(ids.len(), 1);
        // An entry the run added from the source (not found in the index: only its id counts).
        let added = ids[0] + 1;
        for whole in [false, true] {
            let mut pending = vec![Some(Pending {
                key: "one.eml".into(),
                path: mail.join("one.eml"),
                ids: vec![added],
                replaced: ids.clone(),
                received: 0,
                done: None,
                failed: false,
                unread: false,
            })];
            let state = SourceState { size: 52, mtime_ns: 7, ..SourceState::default() };
            let done = Outcome::Done { src: 0, count: 0, state: state.clone(), whole };
            let outcomes = vec![Numbered { place: None, items: vec![done], turn: None }];
            let mut batch = Batch::default();
            assert!(archive.collect(InOrder::new(outcomes.into_iter()), &mut pending, &mut batch, false));
            assert_eq!(archive.index().get(ids[0]).is_some(), !whole, "read whole: {whole}");
            let kept = if whole {
                SourceState { ids: vec![added], ..state }
            } else {
                // Read again next time, holding what it gave before and now.
                SourceState::to_read_again(vec![ids[0], added])
            };
            assert_eq!(batch.sources, vec![("one.eml".to_string(), kept)], "read whole: {whole}");
        }
    }

    #[test]
    fn search_reconciliation_finds_what_each_side_lacks() {
        /// One side, the other, what only the first holds, what only the second holds.
        type Case<'a> = (&'a [u32], &'a [u32], &'a [u32], &'a [u32]);
        let cases: [Case; 5] = [
            (&[], &[], &[], &[]),
            (&[1, 2, 3], &[1, 2, 3], &[], &[]),
            (&[1, 3, 5], &[2, 3, 4], &[1, 5], &[2, 4]),
            (&[], &[7, 9], &[], &[7, 9]),
            (&[7, 9], &[], &[7, 9], &[]),
        ];
        for (a, b, only_a, only_b) in cases {
            assert_eq!(sorted_differences(a, b), (only_a.to_vec(), only_b.to_vec()), "{a:?} vs {b:?}");
        }
    }
}

//! The loaded archive: keeps the [`Index`] current with the given paths and the persistent
//! [`Store`], and reads any indexed message back from its source on demand, keeping only a few
//! parsed messages in memory.
//!
//! Indexing is a small pipeline: one thread walks the sources (and streams mbox files), a worker per
//! core reads and parses messages, and the calling thread adds them to the index and commits them
//! to the store in batches. A source's state is written only once all its messages are, so a crash
//! re-reads exactly the sources that were not finished.

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use crate::error::Error;
use crate::index::{content_hash, Added, Entry, EntryId, Index, Location};
use crate::ingest::{self, Kind, MboxReader, Source};
use crate::model::{Body, Message, PartIdx};
use crate::parse::parse_message;
use crate::rewrite::visible_text;
use crate::search::{Doc, Hits, Search};
use crate::store::{Batch, SourceState, Store};

/// How many parsed top-level messages stay in memory.
const CACHE_SIZE: usize = 32;

/// An indexing run that parsed this many messages compacts the store afterwards.
const COMPACT_AFTER: usize = 10_000;

/// Messages waiting to be parsed, and parsed ones waiting to be indexed: enough to keep every
/// core busy, few enough that memory does not grow with a backlog.
const IN_FLIGHT: usize = 32;

/// Files stat'ed and compared per slice of a scan.
const SCAN_CHUNK: usize = 8192;

/// Messages between two commits to the store while indexing.
const BATCH: usize = 2000;

/// Progress of indexing, readable while it runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// True once the first indexing of every given path has finished.
    pub ready: AtomicBool,
    /// Source files finished in the current run.
    pub indexed: AtomicUsize,
    /// Source files found in the current run.
    pub total: AtomicUsize,
    /// Messages parsed for the index since start (unchanged sources are not parsed again).
    pub parsed: AtomicUsize,
    /// Messages that could not be read or parsed.
    pub failed: AtomicUsize,
}

pub struct Archive {
    index: RwLock<Index>,
    cache: Mutex<VecDeque<(EntryId, Arc<Message>)>>,
    store: Store,
    /// The full-text index; `None` when search is turned off.
    search: Option<Search>,
    /// Whether the search index was checked against the index since start.
    search_checked: AtomicBool,
    /// One indexing run at a time (start-up, a watch event, an upload).
    ingest_lock: Mutex<()>,
    uploads: PathBuf,
    pub progress: Progress,
}

/// A message ready to show: the parsed top-level message it lives in, and the way down to it.
#[derive(Clone)]
pub struct Loaded {
    pub id: EntryId,
    pub entry: Entry,
    top: Arc<Message>,
    path: Vec<PartIdx>,
}

impl Loaded {
    pub fn message(&self) -> &Message {
        let mut m: &Message = &self.top;
        for &p in &self.path {
            match m.parts.get(p).map(|p| &p.body) {
                Some(Body::Message(inner)) => m = inner,
                _ => break,
            }
        }
        m
    }
}

/// Work for the parse workers.
enum Job {
    /// A file that is one message.
    File { src: usize, root: Arc<Path>, path: PathBuf, uploaded: bool },
    /// One message of an mbox, already read.
    Mbox { src: usize, source: Source, rel: u16, raw: Vec<u8> },
}

/// What comes back to the indexing thread.
enum Outcome {
    Parsed {
        src: usize,
        msg: Box<Message>,
        location: Location,
        /// What the search index gets, made by the worker (its id is set once known).
        doc: Option<Box<Doc>>,
    },
    Failed {
        src: usize,
    },
    /// The walker finished a source: it gave `count` jobs.
    Done {
        src: usize,
        count: usize,
        state: SourceState,
    },
}

/// A source to read: the file, where to start (an appended mbox), and the entries it already gave.
struct ToRead {
    found: ingest::Found,
    key: String,
    start: u64,
    ids: Vec<EntryId>,
}

/// A source whose messages are still on their way.
struct Pending {
    key: String,
    ids: Vec<EntryId>,
    received: usize,
    done: Option<(usize, SourceState)>,
}

impl Archive {
    /// An archive with its index in `data_dir` (created if needed), loaded as it was left, with
    /// full-text search.
    pub fn open(data_dir: &Path) -> Result<Archive, Error> {
        Self::open_with(data_dir, true)
    }

    /// As [`Archive::open`], with full-text search on or off.
    pub fn open_with(data_dir: &Path, search: bool) -> Result<Archive, Error> {
        let store = Store::open(data_dir)?;
        let t = std::time::Instant::now();
        let mut index = Index::default();
        index.reserve(usize::try_from(store.entry_count()?).unwrap_or(0));
        store.load(|id, e| index.restore(id, e))?;
        tracing::debug!(seconds = t.elapsed().as_secs_f64(), "entries read");
        index.sort();
        let _ = index.take_changes();
        Ok(Archive {
            index: RwLock::new(index),
            cache: Mutex::new(VecDeque::new()),
            store,
            search: if search {
                let t = std::time::Instant::now();
                let s = Search::open(&data_dir.join("search"))?;
                tracing::debug!(seconds = t.elapsed().as_secs_f64(), "search index opened");
                Some(s)
            } else {
                None
            },
            search_checked: AtomicBool::new(false),
            ingest_lock: Mutex::new(()),
            uploads: data_dir.join("uploads"),
            progress: Progress::default(),
        })
    }

    /// Read access to the index. A poisoned lock (a panic elsewhere) still yields the data: the
    /// index is only ever changed by whole-entry inserts and removals.
    pub fn index(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner())
    }

    fn index_mut(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Where uploads are kept.
    pub fn uploads_dir(&self) -> &Path {
        &self.uploads
    }

    /// The folders and files indexing reads: the given paths and the uploads folder.
    pub fn roots(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let mut roots = paths.to_vec();
        roots.push(self.uploads.clone());
        roots
    }

    /// Brings the index up to date with `roots`: new and changed sources are read, unchanged ones
    /// (same size and modification time) are not, appended mbox files are read from where they
    /// ended, and sources that are gone are dropped. Never fatal: unreadable files are logged.
    pub fn ingest_paths(&self, roots: &[PathBuf]) {
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        let started = std::time::Instant::now();
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
        loop {
            // Stat files and look up what was indexed from them on all cores, a slice at a time
            // so that a large tree never needs it all in memory at once.
            let chunk: Vec<ingest::Found> = found.by_ref().take(SCAN_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let keys: Vec<String> = chunk.iter().map(|f| f.path.to_string_lossy().into_owned()).collect();
            let stats = stat_all(&chunk);
            let states = self.store.sources_of(&keys);
            for (((f, key), stat), known) in chunk.into_iter().zip(keys).zip(stats).zip(states) {
                let Some((size, mtime_ns)) = stat else {
                    self.progress.indexed.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                seen.insert(crate::index::string_hash(&key));
                match known {
                    Some(st) if st.size == size && st.mtime_ns == mtime_ns => {
                        self.progress.indexed.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(st) if st.mbox_end > 0 && size > st.size && mbox_prefix_unchanged(&f.path, &st) => {
                        // An mbox that only grew: read from where its last message ended.
                        todo.push(ToRead { found: f, key, start: st.mbox_end, ids: st.ids });
                    }
                    old => {
                        stale.extend(old.into_iter().flat_map(|st| st.ids));
                        todo.push(ToRead { found: f, key, start: 0, ids: Vec::new() });
                    }
                }
            }
        }
        // Sources that are gone, and the entries of sources that changed.
        let gone = self.store.source_keys_where(|k| !seen.contains(&crate::index::string_hash(k))).unwrap_or_default();
        drop(seen);
        if !gone.is_empty() {
            stale.extend(self.store.sources_of(&gone).into_iter().flatten().flat_map(|st| st.ids));
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
        self.run_pipeline(todo, &mut batch);
        let (entries, removed) = self.index_mut().take_changes();
        batch.entries.extend(entries);
        batch.removed.extend(removed);
        self.commit(&batch, true);
        if self.progress.parsed.load(Ordering::Relaxed) - parsed_before >= COMPACT_AFTER {
            self.store.compact();
        }
        self.index_mut().sort();
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.progress.ready.store(true, Ordering::Release);
    }

    /// Writes a batch to the store, then (on durable commits: a search commit costs a segment)
    /// the search index. The store is the reference; a search index behind it is caught up at the
    /// next start ([`Archive::reconcile_search`]).
    fn commit(&self, batch: &Batch, durable: bool) {
        if let Err(e) = self.store.commit(batch, durable) {
            tracing::error!(error = %e, "could not save the index; it will be rebuilt from sources");
        }
        if let Some(search) = &self.search {
            for &id in &batch.removed {
                search.delete(id);
            }
            if durable {
                search.commit();
            }
        }
    }

    /// Brings the search index in line with the index after a crash between the two commits.
    fn reconcile_search(&self) {
        let Some(search) = &self.search else { return };
        if self.search_checked.swap(true, Ordering::AcqRel) {
            return;
        }
        let have = search.ids();
        let listed: Vec<EntryId> = self.index().listed().to_vec();
        let want: HashSet<EntryId> = listed.iter().copied().collect();
        for &id in have.difference(&want) {
            search.delete(id);
        }
        let missing: Vec<EntryId> = listed.into_iter().filter(|id| !have.contains(id)).collect();
        if !missing.is_empty() {
            tracing::info!(messages = missing.len(), "adding messages to the search index");
        }
        for id in missing {
            if let Ok(loaded) = self.load(id) {
                search.add(&search_doc(id, loaded.message()));
            }
        }
        search.commit();
    }

    fn index_for_search(&self, id: EntryId, msg: &Message) {
        if let Some(search) = &self.search {
            search.add(&search_doc(id, msg));
        }
    }

    /// Runs a search; ids of listed messages, best first.
    pub fn search(&self, q: &str, offset: usize, limit: usize) -> Result<Hits, Error> {
        match &self.search {
            Some(search) => search.search(q, offset, limit),
            None => Err(Error::BadQuery("search is turned off on this server".into())),
        }
    }

    /// A highlighted excerpt of each message's text for a query (`None` where there is none).
    pub fn snippets(&self, q: &str, ids: &[EntryId]) -> Vec<Option<String>> {
        let Some(search) = &self.search else { return vec![None; ids.len()] };
        let texts: Vec<String> =
            ids.iter().map(|&id| self.load(id).map(|l| reader_text(l.message())).unwrap_or_default()).collect();
        search.snippets(q, &texts)
    }

    fn run_pipeline(&self, todo: Vec<ToRead>, batch: &mut Batch) {
        if todo.is_empty() {
            return;
        }
        let workers = crate::par::cores();
        let (job_tx, job_rx) = sync_channel::<Job>(IN_FLIGHT);
        let (out_tx, out_rx) = sync_channel::<Outcome>(IN_FLIGHT);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let mut pending: Vec<Option<Pending>> = Vec::with_capacity(todo.len());
        let mut files = Vec::with_capacity(todo.len());
        for t in todo {
            pending.push(Some(Pending { key: t.key, ids: t.ids, received: 0, done: None }));
            files.push((t.found, t.start));
        }
        std::thread::scope(|scope| {
            let walker_out = out_tx.clone();
            let uploads = self.uploads.as_path();
            scope.spawn(move || walk_sources(files, uploads, job_tx, walker_out));
            for _ in 0..workers {
                let rx = Arc::clone(&job_rx);
                let tx = out_tx.clone();
                let search = self.search.is_some();
                scope.spawn(move || parse_worker(&rx, &tx, search));
            }
            drop(out_tx);
            self.collect(out_rx, &mut pending, batch);
        });
    }

    /// The indexing thread: adds parsed messages, finishes sources, commits in batches.
    fn collect(&self, out_rx: Receiver<Outcome>, pending: &mut [Option<Pending>], batch: &mut Batch) {
        let mut since_commit = 0;
        for outcome in out_rx {
            let src = match outcome {
                Outcome::Parsed { src, msg, location, doc } => {
                    self.progress.parsed.fetch_add(1, Ordering::Relaxed);
                    let added = self.index_mut().add(&msg, location);
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        if let Added::New(id) = added {
                            if let (Some(search), Some(mut doc)) = (&self.search, doc) {
                                doc.id = id;
                                search.add(&doc);
                            }
                            p.ids.push(id);
                        }
                        p.received += 1;
                    }
                    since_commit += 1;
                    src
                }
                Outcome::Failed { src } => {
                    self.progress.failed.fetch_add(1, Ordering::Relaxed);
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        p.received += 1;
                    }
                    src
                }
                Outcome::Done { src, count, state } => {
                    if let Some(p) = pending.get_mut(src).and_then(Option::as_mut) {
                        p.done = Some((count, state));
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
                if let Some(p) = slot.and_then(Option::take) {
                    if let Some((_, mut state)) = p.done {
                        state.ids = p.ids;
                        batch.sources.push((p.key, state));
                    }
                }
                self.progress.indexed.fetch_add(1, Ordering::Relaxed);
            }
            if since_commit >= BATCH {
                let (entries, removed) = self.index_mut().take_changes();
                batch.entries.extend(entries);
                batch.removed.extend(removed);
                self.commit(batch, false);
                *batch = Batch::default();
                since_commit = 0;
            }
        }
    }

    /// Stores uploaded bytes (one message, or an mbox of several) and indexes them. Each message
    /// is written to its own file named by its hash and synced to disk, and its index entry
    /// committed durably, before this returns: what was acknowledged survives a crash, and the
    /// same bytes twice are one file and one message.
    pub fn store_upload(&self, bytes: Vec<u8>) -> Result<Vec<EntryId>, Error> {
        let dir = self.uploads.clone();
        let messages: Vec<Vec<u8>> = match ingest::sniff(&bytes[..bytes.len().min(8192)]) {
            Kind::Mbox => MboxReader::new(bytes.as_slice(), 0)
                .filter_map(Result::ok)
                .filter(|m| m.len > 0)
                .map(|m| ingest::unescape_from_lines(m.raw))
                .collect(),
            Kind::Message => vec![bytes],
            Kind::Other => return Err(Error::Unparseable),
        };
        // Parse everything first: a batch with an unreadable message stores nothing.
        let parsed = messages.into_iter().map(|m| parse_message(Arc::from(m))).collect::<Result<Vec<_>, _>>()?;
        if parsed.is_empty() {
            return Err(Error::Unparseable);
        }
        std::fs::create_dir_all(&dir)?;
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut ids = Vec::new();
        let mut batch = Batch::default();
        for msg in parsed {
            let name = format!("{}.eml", content_hash(&msg.raw));
            let path = dir.join(&name);
            if !path.exists() {
                write_durably(&dir, &path, &msg.raw)?;
            }
            let key = path.to_string_lossy().into_owned();
            let rel = relative_start(&dir, &path);
            let location =
                Location::Top { source: Source::File { path: path.clone() }, rel, flags: None, uploaded: true };
            let added = {
                let mut index = self.index_mut();
                let added = index.add(&msg, location);
                index.sort();
                added
            };
            if let Added::New(id) = added {
                self.index_for_search(id, &msg);
            }
            let (size, mtime_ns) = stat(&path)?;
            let mut state = self.store.source(&key).unwrap_or_default();
            state.size = size;
            state.mtime_ns = mtime_ns;
            if let Added::New(id) = added {
                state.ids.push(id);
            }
            batch.sources.push((key, state));
            ids.push(added.id());
        }
        let (entries, removed) = self.index_mut().take_changes();
        batch.entries = entries;
        batch.removed = removed;
        self.store.commit(&batch, true)?;
        if let Some(search) = &self.search {
            search.commit();
        }
        Ok(ids)
    }

    /// Deletes an uploaded message: its file and its entries. Mounted messages are read-only.
    pub fn delete_upload(&self, id: EntryId) -> Result<(), Error> {
        let location = self.index().get(id).map(|e| e.location.clone()).ok_or(Error::MessageNotFound)?;
        let Location::Top { uploaded: true, source: Source::File { path }, .. } = location else {
            return Err(Error::ReadOnly);
        };
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        let key = path.to_string_lossy().into_owned();
        let (_, removed) = {
            let mut index = self.index_mut();
            index.remove(id);
            index.take_changes()
        };
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).retain(|(i, _)| *i != id);
        self.store.commit(&Batch { removed: removed.clone(), removed_sources: vec![key], ..Batch::default() }, true)?;
        if let Some(search) = &self.search {
            for id in removed {
                search.delete(id);
            }
            search.commit();
        }
        Ok(())
    }

    /// Finds an entry by its URL id: the key, or else any message with that Message-ID.
    pub fn find(&self, key: &str) -> Option<EntryId> {
        let index = self.index();
        index.by_key(key).or_else(|| index.by_message_id(key).first().copied())
    }

    /// A message from the cache only: no I/O, `None` when it would have to be read.
    pub fn load_cached(&self, id: EntryId) -> Option<Loaded> {
        let (top_id, path) = self.way_down(id).ok()?;
        let top = self.cache_get(top_id)?;
        let entry = self.index().get(id).cloned()?;
        Some(Loaded { id, entry, top, path })
    }

    /// Reads a message back from its source and parses it (or takes it from the cache).
    pub fn load(&self, id: EntryId) -> Result<Loaded, Error> {
        let entry = self.index().get(id).cloned().ok_or(Error::MessageNotFound)?;
        let (top_id, path) = self.way_down(id)?;
        let top = self.load_top(top_id)?;
        Ok(Loaded { id, entry, top, path })
    }

    /// The top-level message an entry lives in, and the parts that lead down to it.
    fn way_down(&self, id: EntryId) -> Result<(EntryId, Vec<PartIdx>), Error> {
        let mut path = Vec::new();
        let mut top_id = id;
        let index = self.index();
        // Walk up to the top-level message, remembering the way back down.
        loop {
            match index.get(top_id).map(|e| &e.location) {
                Some(Location::Nested { parent, part }) => {
                    path.push(*part);
                    top_id = *parent;
                }
                Some(Location::Top { .. }) => break,
                None => return Err(Error::MessageNotFound),
            }
            if path.len() > 64 {
                return Err(Error::MessageNotFound);
            }
        }
        path.reverse();
        Ok((top_id, path))
    }

    fn load_top(&self, id: EntryId) -> Result<Arc<Message>, Error> {
        if let Some(hit) = self.cache_get(id) {
            return Ok(hit);
        }
        let source = match self.index().get(id).map(|e| e.location.clone()) {
            Some(Location::Top { source, .. }) => source,
            _ => return Err(Error::MessageNotFound),
        };
        let raw = source.read().map_err(|e| {
            tracing::warn!(path = %source.path().display(), error = %e, "source unreadable");
            Error::SourceGone
        })?;
        let msg = Arc::new(parse_message(Arc::from(raw))?);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_SIZE {
            cache.pop_front();
        }
        cache.push_back((id, Arc::clone(&msg)));
        Ok(msg)
    }

    fn cache_get(&self, id: EntryId) -> Option<Arc<Message>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let pos = cache.iter().position(|(i, _)| *i == id)?;
        let hit = cache.remove(pos)?;
        let msg = Arc::clone(&hit.1);
        cache.push_back(hit);
        Some(msg)
    }
}

/// Most text of one message that goes into the search index.
const MAX_INDEXED_TEXT: usize = 1 << 20;

/// What the search index gets of a message: its headers, the text a reader sees and the names of
/// its files (its own and those of the messages it encloses).
pub fn search_doc(id: EntryId, msg: &Message) -> Doc {
    let mut filenames = Vec::new();
    let mut stack = vec![msg];
    while let Some(m) = stack.pop() {
        filenames.extend(m.parts.iter().filter_map(|p| p.filename.clone()));
        stack.extend(m.nested().map(|(_, n)| n));
    }
    Doc {
        id,
        subject: msg.summary.subject.clone().unwrap_or_default(),
        from: msg.summary.from.clone().unwrap_or_default(),
        to: msg.summary.to.clone().unwrap_or_default(),
        cc: msg.summary.cc.clone().unwrap_or_default(),
        body: reader_text(msg),
        filenames: filenames.join(" "),
        message_id: msg.message_id.clone(),
        timestamp: msg.summary.timestamp,
        size: msg.raw.len() as u64,
        has_attachment: msg.has_attachments(),
    }
}

/// The text a reader sees: the text body, else the visible text of the HTML body, of the message
/// and of every message it encloses; at most [`MAX_INDEXED_TEXT`].
fn reader_text(msg: &Message) -> String {
    let mut body = String::new();
    let mut stack = vec![msg];
    while let Some(m) = stack.pop() {
        let text = match (m.text_body, m.html_body) {
            (Some(t), _) => match &m.parts[t].body {
                Body::Text(t) => t.clone(),
                _ => String::new(),
            },
            (None, Some(h)) => match &m.parts[h].body {
                Body::Text(h) => visible_text(h),
                _ => String::new(),
            },
            _ => String::new(),
        };
        if body.len() < MAX_INDEXED_TEXT {
            body.push_str(&text);
            body.push('\n');
        }
        stack.extend(m.nested().map(|(_, n)| n));
    }
    if body.len() > MAX_INDEXED_TEXT {
        let mut cut = MAX_INDEXED_TEXT;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        body.truncate(cut);
    }
    body
}

/// The walker: tells files from mbox files, streams mbox files into single-message jobs, and
/// reports each source done with its job count.
fn walk_sources(files: Vec<(ingest::Found, u64)>, uploads: &Path, jobs: SyncSender<Job>, out: SyncSender<Outcome>) {
    for (src, (found, start)) in files.into_iter().enumerate() {
        let uploaded = found.path.starts_with(uploads);
        let (count, state) = match walk_one(&found, src, start, uploaded, &jobs) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(path = %found.path.display(), error = %e, "skipped");
                (0, SourceState::default())
            }
        };
        if out.send(Outcome::Done { src, count, state }).is_err() {
            return;
        }
    }
}

fn walk_one(
    found: &ingest::Found,
    src: usize,
    start: u64,
    uploaded: bool,
    jobs: &SyncSender<Job>,
) -> std::io::Result<(usize, SourceState)> {
    let (size, mtime_ns) = stat(&found.path)?;
    let mut state = SourceState { size, mtime_ns, ..SourceState::default() };
    match ingest::sniff_file(&found.path)? {
        Kind::Other => Ok((0, state)),
        Kind::Message => {
            let job = Job::File { src, root: found.root.clone(), path: found.path.clone(), uploaded };
            let _ = jobs.send(job);
            Ok((1, state))
        }
        Kind::Mbox => {
            let mut f = File::open(&found.path)?;
            f.seek(SeekFrom::Start(start))?;
            let rel = relative_start(&found.root, &found.path);
            let mut count = 0;
            let mut end = start;
            for m in MboxReader::new(BufReader::with_capacity(256 * 1024, f), start) {
                let m = m?;
                end = m.offset + m.len;
                if m.len == 0 {
                    continue;
                }
                let source = Source::Mbox { path: found.path.clone(), offset: m.offset, len: m.len };
                let job = Job::Mbox { src, source, rel, raw: ingest::unescape_from_lines(m.raw) };
                if jobs.send(job).is_err() {
                    break;
                }
                count += 1;
            }
            state.mbox_end = end;
            state.mbox_tail = tail_hash(&found.path, end).ok();
            Ok((count, state))
        }
    }
}

fn parse_worker(jobs: &Mutex<Receiver<Job>>, out: &SyncSender<Outcome>, search: bool) {
    // Search documents are made here, on every core, rather than on the indexing thread.
    let doc = |msg: &Message| search.then(|| Box::new(search_doc(0, msg)));
    loop {
        let job = {
            let rx = jobs.lock().unwrap_or_else(|e| e.into_inner());
            rx.recv()
        };
        let Ok(job) = job else { return };
        let outcome = match job {
            Job::File { src, root, path, uploaded } => {
                let rel = relative_start(&root, &path);
                let flags = ingest::maildir_flags(&path);
                let source = Source::File { path };
                match source.read().map_err(Error::from).and_then(|raw| parse_message(Arc::from(raw))) {
                    Ok(msg) => Outcome::Parsed {
                        src,
                        doc: doc(&msg),
                        msg: Box::new(msg),
                        location: Location::Top { source, rel, flags, uploaded },
                    },
                    Err(e) => {
                        tracing::warn!(path = %source.path().display(), error = %e, "skipped");
                        Outcome::Failed { src }
                    }
                }
            }
            Job::Mbox { src, source, rel, raw } => match parse_message(Arc::from(raw)) {
                Ok(msg) => Outcome::Parsed {
                    src,
                    doc: doc(&msg),
                    msg: Box::new(msg),
                    location: Location::Top { source, rel, flags: None, uploaded: false },
                },
                Err(e) => {
                    tracing::warn!(path = %source.path().display(), error = %e, "skipped");
                    Outcome::Failed { src }
                }
            },
        };
        if out.send(outcome).is_err() {
            return;
        }
    }
}

/// Size and modification time of every file, using every core (`None` where stat failed).
fn stat_all(found: &[ingest::Found]) -> Vec<Option<(u64, i64)>> {
    crate::par::map_slices(found, |part| part.iter().map(|f| stat(&f.path).ok()).collect())
}

fn stat(path: &Path) -> std::io::Result<(u64, i64)> {
    let meta = std::fs::metadata(path)?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);
    Ok((meta.len(), mtime_ns))
}

/// A hash of the (up to) 4 KiB before `end`: if they are unchanged, so (in practice) is everything
/// before them, and an mbox that grew was only appended to.
fn tail_hash(path: &Path, end: u64) -> std::io::Result<[u8; 16]> {
    let from = end.saturating_sub(4096);
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::with_capacity((end - from) as usize);
    f.take(end - from).read_to_end(&mut buf)?;
    let mut out = [0u8; 16];
    out.copy_from_slice(&blake3::hash(&buf).as_bytes()[..16]);
    Ok(out)
}

fn mbox_prefix_unchanged(path: &Path, st: &SourceState) -> bool {
    st.mbox_tail.is_some() && tail_hash(path, st.mbox_end).ok() == st.mbox_tail
}

/// Writes a file so that it is whole or absent after a crash: a temporary file, synced, renamed
/// into place, and the folder synced.
fn write_durably(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!(".{}.tmp", std::process::id()));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()
}

/// Where the part of `path` relative to `root` begins (the file name, when `root` is the file).
fn relative_start(root: &Path, path: &Path) -> u16 {
    let full = path.to_string_lossy();
    let start = match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => full.len() - rel.to_string_lossy().len(),
        _ => full.len() - path.file_name().map_or(0, |n| n.to_string_lossy().len()),
    };
    u16::try_from(start).unwrap_or(0)
}

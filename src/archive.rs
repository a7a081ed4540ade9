//! The loaded archive: ingests the given paths into the [`Index`], and reads any indexed message back
//! from its source on demand, keeping only a few parsed messages in memory.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use crate::error::Error;
use crate::index::{content_hash, Added, Entry, EntryId, Index, Location};
use crate::ingest::{self, Kind, Source};
use crate::model::{Body, Message, PartIdx};
use crate::parse::parse_message;

/// How many parsed top-level messages stay in memory.
const CACHE_SIZE: usize = 32;

/// Progress of indexing, readable while it runs.
#[derive(Debug, Default)]
pub struct Progress {
    pub ready: AtomicBool,
    /// Files (or mbox messages) looked at so far.
    pub indexed: AtomicUsize,
    /// Files found so far (grows while the walk runs).
    pub total: AtomicUsize,
    /// Files that could not be read or parsed.
    pub failed: AtomicUsize,
}

pub struct Archive {
    index: RwLock<Index>,
    cache: Mutex<VecDeque<(EntryId, Arc<Message>)>>,
    uploads: std::sync::OnceLock<PathBuf>,
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

impl Default for Archive {
    fn default() -> Self {
        Self::new()
    }
}

impl Archive {
    pub fn new() -> Self {
        Archive {
            index: RwLock::new(Index::default()),
            cache: Mutex::new(VecDeque::new()),
            uploads: std::sync::OnceLock::new(),
            progress: Progress::default(),
        }
    }

    /// Read access to the index. A poisoned lock (a panic elsewhere) still yields the data: the
    /// index is only ever mutated by whole-entry inserts.
    pub fn index(&self) -> RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|e| e.into_inner())
    }

    fn index_mut(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.index.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Indexes every message under `paths`. Unreadable files are logged and counted, never fatal.
    pub fn ingest_paths(&self, paths: &[PathBuf]) {
        for root in paths {
            for found in ingest::walk(root) {
                self.progress.total.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = self.ingest_file(&found.root, &found.path) {
                    self.progress.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(path = %found.path.display(), error = %e, "skipped");
                }
                self.progress.indexed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.index_mut().sort();
        self.progress.ready.store(true, Ordering::Release);
    }

    /// Indexes one file: a message, an mbox, or nothing (other files are passed over quietly).
    pub fn ingest_file(&self, root: &Path, path: &Path) -> Result<Vec<Added>, Error> {
        let shown = display_path(root, path);
        let uploaded = self.uploads_dir().is_some_and(|d| path.starts_with(d));
        match ingest::sniff_file(path)? {
            Kind::Other => Ok(Vec::new()),
            Kind::Message => {
                let source = Source::File { path: path.to_path_buf() };
                let flags = ingest::maildir_flags(path);
                Ok(vec![self.ingest_source(source, shown, flags, uploaded)?])
            }
            Kind::Mbox => {
                let data = std::fs::read(path)?;
                let mut added = Vec::new();
                for (i, (offset, len)) in ingest::split_mbox(&data).into_iter().enumerate() {
                    let source = Source::Mbox { path: path.to_path_buf(), offset, len };
                    match self.ingest_source(source, format!("{shown}#{}", i + 1), None, uploaded) {
                        Ok(a) => added.push(a),
                        Err(e) => tracing::warn!(path = %shown, message = i + 1, error = %e, "skipped"),
                    }
                }
                Ok(added)
            }
        }
    }

    fn ingest_source(
        &self,
        source: Source,
        display: String,
        flags: Option<String>,
        uploaded: bool,
    ) -> Result<Added, Error> {
        let raw: Arc<[u8]> = Arc::from(source.read()?);
        let msg = parse_message(raw)?;
        let location = Location::Top { source, display, flags, uploaded };
        Ok(self.index_mut().add(&msg, location))
    }

    /// Where uploads are kept, once [`Archive::set_uploads_dir`] was called.
    pub fn uploads_dir(&self) -> Option<&Path> {
        self.uploads.get().map(PathBuf::as_path)
    }

    pub fn set_uploads_dir(&self, dir: PathBuf) {
        let _ = self.uploads.set(dir);
    }

    /// Stores uploaded bytes (one message, or an mbox of several) and indexes them. Each message
    /// is written to its own file named by its hash, synced to disk before this returns, so what
    /// was acknowledged survives a crash, and the same bytes twice are one file and one message.
    pub fn store_upload(&self, bytes: Vec<u8>) -> Result<Vec<EntryId>, Error> {
        let dir = self
            .uploads_dir()
            .ok_or_else(|| Error::Internal("no uploads folder configured".into()))?
            .to_path_buf();
        let messages: Vec<Vec<u8>> = match ingest::sniff(&bytes[..bytes.len().min(8192)]) {
            Kind::Mbox => ingest::split_mbox(&bytes)
                .into_iter()
                .map(|(o, l)| ingest::unescape_from_lines(bytes[o as usize..(o + l) as usize].to_vec()))
                .collect(),
            Kind::Message => vec![bytes],
            Kind::Other => return Err(Error::Unparseable),
        };
        // Parse everything first: a batch with an unreadable message stores nothing.
        let parsed = messages
            .into_iter()
            .map(|m| parse_message(Arc::from(m)))
            .collect::<Result<Vec<_>, _>>()?;
        if parsed.is_empty() {
            return Err(Error::Unparseable);
        }
        std::fs::create_dir_all(&dir)?;
        let mut ids = Vec::new();
        for msg in parsed {
            let name = format!("{}.eml", content_hash(&msg.raw));
            let path = dir.join(&name);
            if !path.exists() {
                write_durably(&dir, &path, &msg.raw)?;
            }
            let location = Location::Top {
                source: Source::File { path },
                display: name,
                flags: None,
                uploaded: true,
            };
            ids.push(self.add_parsed(&msg, location).id());
        }
        Ok(ids)
    }

    /// Deletes an uploaded message: its file and its entries. Mounted messages are read-only.
    pub fn delete_upload(&self, id: EntryId) -> Result<(), Error> {
        let location = self.index().get(id).map(|e| e.location.clone()).ok_or(Error::MessageNotFound)?;
        match location {
            Location::Top { uploaded: true, source: Source::File { path }, .. } => {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
                self.index_mut().remove(id);
                self.cache.lock().unwrap_or_else(|e| e.into_inner()).retain(|(i, _)| *i != id);
                Ok(())
            }
            _ => Err(Error::ReadOnly),
        }
    }

    /// Adds a message that is already parsed (uploads) and keeps the list in order.
    pub fn add_parsed(&self, msg: &Message, location: Location) -> Added {
        let mut index = self.index_mut();
        let added = index.add(msg, location);
        index.sort();
        added
    }

    /// Finds an entry by its URL id: the key, or else any message with that Message-ID.
    pub fn find(&self, key: &str) -> Option<EntryId> {
        let index = self.index();
        index
            .by_key(key)
            .or_else(|| index.by_message_id(key).first().copied())
    }

    /// Reads a message back from its source and parses it (or takes it from the cache).
    pub fn load(&self, id: EntryId) -> Result<Loaded, Error> {
        let mut path = Vec::new();
        let mut top_id = id;
        let entry = self.index().get(id).cloned().ok_or(Error::MessageNotFound)?;
        // Walk up to the top-level message, remembering the way back down.
        loop {
            let loc = self.index().get(top_id).map(|e| e.location.clone());
            match loc {
                Some(Location::Nested { parent, part }) => {
                    path.push(part);
                    top_id = parent;
                }
                Some(Location::Top { .. }) => break,
                None => return Err(Error::MessageNotFound),
            }
        }
        path.reverse();
        let top = self.load_top(top_id)?;
        Ok(Loaded { id, entry, top, path })
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

/// The path of a source relative to the PATH it was found under (the file name when given directly).
fn display_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).ok().filter(|r| !r.as_os_str().is_empty());
    match rel {
        Some(r) => r.to_string_lossy().into_owned(),
        None => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.to_string_lossy().into_owned()),
    }
}

//! Uploads: bytes given over HTTP stored durably under `DATA_DIR/uploads`, indexed before the
//! answer, and deleted on request. Mounted sources are never written.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::pipeline::{relative_start, stat};
use super::Archive;
use super::Commit;
use crate::error::Error;
use crate::index::{content_hash, Added, EntryId, Location};
use crate::ingest::{self, Kind, MboxReader, Source};
use crate::parse::parse_message;
use crate::store::Batch;

impl Archive {
    /// Stores uploaded bytes (one message, or an mbox of several) and indexes them. Each message
    /// is written to its own file named by its hash and synced to disk, and its index entry
    /// committed durably, before this returns: what was acknowledged survives a crash, and the
    /// same bytes twice are one file and one message.
    pub fn store_upload(&self, bytes: Vec<u8>) -> Result<Vec<EntryId>, Error> {
        let dir = self.uploads.clone();
        let messages: Vec<Vec<u8>> = match ingest::sniff_claimed(&bytes[..bytes.len().min(8192)], ingest::Claim::Given)
        {
            Kind::Mbox => MboxReader::new(bytes.as_slice(), 0)
                .filter_map(Result::ok)
                .filter(|m| m.len > 0)
                .map(|m| ingest::unescape_from_lines(m.raw))
                .collect(),
            Kind::Message => vec![bytes],
            // An uploaded Outlook data file: each item is stored as the `.msg` it stands for (in
            // Uploads; its folders are not kept).
            Kind::Pst => pst_items(&bytes)?,
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
            let name = format!("{}.eml", content_hash(msg.given()));
            let path = dir.join(&name);
            if !path.exists() {
                // The bytes as given: a file in another format stays in it, and reads back the same.
                write_durably(&dir, &path, msg.given())?;
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
        self.commit(batch, Commit::Done)?;
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
        {
            let mut index = self.index_mut();
            index.remove(id);
            index.sort();
        }
        self.cache.remove(&id);
        self.commit(Batch { removed_sources: vec![key], ..Batch::default() }, Commit::Done)
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

/// The items of an Outlook data file given as bytes, each as a `.msg`; the reader needs a file, so
/// the bytes go to a temporary one first, removed when this returns.
fn pst_items(bytes: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    use std::io::Write as _;
    let mut tmp = tempfile::NamedTempFile::new()?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    let listing = crate::pst::list(tmp.path())?;
    listing.items.iter().map(|i| crate::pst::item_msg(tmp.path(), i.node)).collect()
}

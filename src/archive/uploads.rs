//! Uploads: bytes given over HTTP stored durably (under `DATA_DIR/uploads`, or in the shared
//! database), indexed before the answer, and deleted on request. Mounted sources are never written.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::pipeline::{relative_start, stat};
use super::Archive;
use super::Commit;
use crate::error::Error;
use crate::index::{content_hash, Added, EntryId, Location};
use crate::ingest::{self, Kind, MboxReader, Source};
use crate::model::Message;
use crate::parse::parse_message;
use crate::store::Batch;

impl Archive {
    /// Stores uploaded bytes (one message, an mbox of several, or an Outlook data file) and
    /// indexes them. Each message is kept whole before this returns, and its index entry
    /// committed durably: what was acknowledged survives a crash, and the same bytes twice are
    /// one message. With a data folder each message is a file named by its hash, synced to disk;
    /// with a shared database its bytes go into the same transaction as its entry. `name` is the
    /// file name the upload came with, if any (an Outlook data file's folders are shown under it).
    pub fn store_upload(&self, bytes: Vec<u8>, name: Option<&str>) -> Result<Vec<EntryId>, Error> {
        let messages: Vec<Vec<u8>> = match ingest::sniff_claimed(&bytes[..bytes.len().min(8192)], ingest::Claim::Given)
        {
            Kind::Mbox => MboxReader::new(bytes.as_slice(), 0)
                .filter_map(Result::ok)
                .filter(|m| m.len > 0)
                .map(|m| ingest::unescape_from_lines(m.raw))
                .collect(),
            Kind::Message => vec![bytes],
            Kind::Pst => return self.store_outlook_upload(bytes, name),
            Kind::Other => return Err(Error::Unparseable),
        };
        // Parse everything first: a batch with an unreadable message stores nothing.
        let keys = self.index_keys.get().map(Arc::as_ref);
        let parsed = messages
            .into_iter()
            .map(|m| parse_message(Arc::from(m)).map(|m| Archive::as_indexed(keys, m)))
            .collect::<Result<Vec<_>, _>>()?;
        if parsed.is_empty() {
            return Err(Error::Unparseable);
        }
        let Some(dir) = &self.uploads else {
            let items = parsed.into_iter().map(|m| (m, String::new())).collect();
            return self.keep_in_store(items, "eml");
        };
        std::fs::create_dir_all(dir)?;
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut ids = Vec::new();
        let mut batch = Batch::default();
        for msg in parsed {
            let name = format!("{}.eml", content_hash(msg.given()));
            let path = dir.join(&name);
            if !path.exists() {
                // The bytes as given: a file in another format stays in it, and reads back the same.
                write_durably(dir, &path, msg.given())?;
            }
            let key = path.to_string_lossy().into_owned();
            let rel = relative_start(dir, &path);
            let location =
                Location::Top { source: Source::File { path: path.clone() }, rel, flags: None, uploaded: true };
            let added = {
                let mut index = self.index_mut();
                let added = index.add(&msg, location)?;
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

    /// Indexes uploaded messages kept in the store, each shown in its folder under Uploads and
    /// named by its hash and `extension`, and commits them with their bytes in one transaction
    /// (the same bytes indexed already are not stored twice). When that fails nothing of them
    /// stays, here or there: an upload is acknowledged whole or not at all.
    fn keep_in_store(&self, items: Vec<(Message, String)>, extension: &str) -> Result<Vec<EntryId>, Error> {
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut batch = Batch::default();
        let mut ids = Vec::with_capacity(items.len());
        let mut new = Vec::new();
        let mut added_all = || -> Result<(), Error> {
            for (msg, folder) in &items {
                let name = format!("{}.{extension}", content_hash(msg.given()));
                let source = Source::Stored { name: name.clone(), folder: folder.clone() };
                let location = Location::Top { source, rel: 0, flags: None, uploaded: true };
                let added = self.index_mut().add(msg, location)?;
                if let Added::New(id) = added {
                    new.push(id);
                    self.index_for_search(id, msg);
                    batch.uploads.push((name, Arc::from(msg.given())));
                }
                ids.push(added.id());
            }
            Ok(())
        };
        let result = added_all();
        let result = result.and_then(|()| self.commit(std::mem::take(&mut batch), Commit::Done));
        let mut index = self.index_mut();
        if let Err(e) = result {
            for id in new {
                index.remove(id);
                if let Some(search) = &self.search {
                    search.delete(id);
                }
            }
            index.sort();
            return Err(e);
        }
        index.sort();
        Ok(ids)
    }

    /// Stores an uploaded Outlook data file whole, as `uploads/<hash>/<name>.pst`, and indexes it as
    /// a source of its own: its items keep their folders, under `Uploads/<name>/`. Returns its
    /// items' entries. With a shared database, each item is kept there as the `.msg` Outlook would
    /// save it as, in the same folders.
    fn store_outlook_upload(&self, bytes: Vec<u8>, name: Option<&str>) -> Result<Vec<EntryId>, Error> {
        let Some(uploads) = &self.uploads else { return self.store_outlook_items(&bytes, name) };
        // Refused before anything is stored when it cannot be read at all.
        check_pst(&bytes)?;
        let hash = content_hash(&bytes).to_string();
        let sub = uploads.join(&hash);
        std::fs::create_dir_all(&sub)?;
        File::open(uploads)?.sync_all()?;
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        // The same file uploaded again under another name is the same upload.
        let existing = std::fs::read_dir(&sub)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pst") || x.eq_ignore_ascii_case("ost")));
        let path = match existing {
            Some(p) => p,
            None => {
                let path = sub.join(outlook_file_name(name));
                write_durably(&sub, &path, &bytes)?;
                path
            }
        };
        drop(bytes);
        let key = path.to_string_lossy().into_owned();
        let (size, mtime_ns) = stat(&path)?;
        if let Some(st) = self.store.source(&key).filter(|st| st.size == size && st.mtime_ns == mtime_ns) {
            return Ok(st.ids);
        }
        let found = ingest::Found { root: Arc::from(uploads.as_path()), path };
        let todo = vec![super::ToRead { found, key: key.clone(), start: 0, ids: Vec::new(), replaced: Vec::new() }];
        let mut batch = Batch::default();
        self.run_pipeline(todo, &mut batch, false);
        let ids = batch.sources.iter().find(|(k, _)| *k == key).map(|(_, st)| st.ids.clone()).unwrap_or_default();
        self.commit(batch, Commit::Done)?;
        self.index_mut().sort();
        if ids.is_empty() {
            return Err(Error::Unparseable);
        }
        Ok(ids)
    }

    /// An uploaded Outlook data file, item by item into the store: the reader needs a file, so the
    /// bytes are one while they are read, and gone when this returns.
    fn store_outlook_items(&self, bytes: &[u8], name: Option<&str>) -> Result<Vec<EntryId>, Error> {
        use std::io::Write as _;
        let mut tmp = tempfile::NamedTempFile::new()?;
        tmp.write_all(bytes)?;
        tmp.flush()?;
        let listing = crate::ingest::pst::list(tmp.path())?;
        let file_name = outlook_file_name(name);
        let shown = Path::new(&file_name);
        let mut items = Vec::new();
        for item in &listing.items {
            let Ok(raw) = crate::ingest::pst::item_msg(tmp.path(), item.node) else { continue };
            let Ok(msg) = parse_message(Arc::from(raw)) else { continue };
            items.push((msg, crate::index::folders::pst_folder(shown, &item.folder)));
        }
        if !listing.notices.is_empty() {
            let notice = crate::ingest::pst::notice_message(shown, &listing.notices);
            if let Ok(msg) = parse_message(Arc::from(notice)) {
                items.push((msg, crate::index::folders::pst_folder(shown, "")));
            }
        }
        if items.is_empty() {
            return Err(Error::Unparseable);
        }
        self.keep_in_store(items, "msg")
    }

    /// Deletes an uploaded message: its file (or its bytes in the store) and its entries. Mounted
    /// messages are read-only.
    pub fn delete_upload(&self, id: EntryId) -> Result<(), Error> {
        let location = self.index().get(id).map(|e| e.location.clone()).ok_or(Error::MessageNotFound)?;
        let mut batch = Batch::default();
        let path = match location {
            Location::Top { uploaded: true, source: Source::File { path }, .. } => Some(path),
            Location::Top { uploaded: true, source: Source::Stored { name, .. }, .. } => {
                batch.removed_uploads.push(name);
                None
            }
            _ => return Err(Error::ReadOnly),
        };
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(path) = path {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
            batch.removed_sources.push(path.to_string_lossy().into_owned());
        }
        {
            let mut index = self.index_mut();
            index.remove(id);
            index.sort();
        }
        self.cache.remove(&id);
        self.commit(batch, Commit::Done)
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

/// Whether bytes given as an Outlook data file can be read as one; the reader needs a file, so the
/// bytes go to a temporary one, removed when this returns.
fn check_pst(bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write as _;
    let mut tmp = tempfile::NamedTempFile::new()?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    crate::ingest::pst::list(tmp.path()).map(|_| ())
}

/// The name an uploaded Outlook data file is kept under: the name it came with, reduced to a
/// plain file name (no folders, no leading dot, no control characters, at most 100 characters),
/// with its `.pst` or `.ost` extension.
fn outlook_file_name(given: Option<&str>) -> String {
    let base = given.and_then(|n| n.rsplit(['/', '\\']).next()).unwrap_or("");
    let (stem, ext) = match base.rsplit_once('.') {
        Some((s, e)) if e.eq_ignore_ascii_case("ost") => (s, "ost"),
        Some((s, e)) if e.eq_ignore_ascii_case("pst") => (s, "pst"),
        _ => (base, "pst"),
    };
    let stem: String = stem
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect::<String>()
        .trim()
        .trim_start_matches('.')
        .to_string();
    let stem = if stem.is_empty() { "Outlook data file".to_string() } else { stem };
    format!("{stem}.{ext}")
}

#[cfg(test)]
mod tests {
    use super::outlook_file_name;

    #[test]
    fn uploaded_outlook_files_keep_a_plain_name() {
        let cases = [
            (Some("Mail 2019.pst"), "Mail 2019.pst"),
            (Some("C:\\Users\\ann\\Documents\\archive.PST"), "archive.pst"),
            (Some("../../etc/passwd"), "passwd.pst"),
            (Some(".hidden.ost"), "hidden.ost"),
            (Some("offline.OST"), "offline.ost"),
            (Some("bell\u{7}.pst"), "bell.pst"),
            (Some(""), "Outlook data file.pst"),
            (None, "Outlook data file.pst"),
        ];
        for (given, kept) in cases {
            assert_eq!(outlook_file_name(given), kept, "{given:?}");
        }
    }
}

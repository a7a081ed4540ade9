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
    /// Stores uploaded bytes (one message, an mbox of several, or an Outlook data file) and
    /// indexes them. Each message is written to its own file named by its hash and synced to disk,
    /// and its index entry committed durably, before this returns: what was acknowledged survives
    /// a crash, and the same bytes twice are one file and one message. `name` is the file name the
    /// upload came with, if any (an Outlook data file's folders are shown under it).
    pub fn store_upload(&self, bytes: Vec<u8>, name: Option<&str>) -> Result<Vec<EntryId>, Error> {
        let dir = self.uploads.clone();
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

    /// Stores an uploaded Outlook data file whole, as `uploads/<hash>/<name>.pst`, and indexes it as
    /// a source of its own: its items keep their folders, under `Uploads/<name>/`. Returns its
    /// items' entries.
    fn store_outlook_upload(&self, bytes: Vec<u8>, name: Option<&str>) -> Result<Vec<EntryId>, Error> {
        // Refused before anything is stored when it cannot be read at all.
        check_pst(&bytes)?;
        let hash = content_hash(&bytes).to_string();
        let sub = self.uploads.join(&hash);
        std::fs::create_dir_all(&sub)?;
        File::open(&self.uploads)?.sync_all()?;
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
        let found = ingest::Found { root: Arc::from(self.uploads.as_path()), path };
        let todo = vec![super::ToRead { found, key: key.clone(), start: 0, ids: Vec::new(), replaced: Vec::new() }];
        let mut batch = Batch::default();
        self.run_pipeline(todo, &mut batch);
        let ids = batch.sources.iter().find(|(k, _)| *k == key).map(|(_, st)| st.ids.clone()).unwrap_or_default();
        self.commit(batch, Commit::Done)?;
        self.index_mut().sort();
        if ids.is_empty() {
            return Err(Error::Unparseable);
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

/// Whether bytes given as an Outlook data file can be read as one; the reader needs a file, so the
/// bytes go to a temporary one, removed when this returns.
fn check_pst(bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write as _;
    let mut tmp = tempfile::NamedTempFile::new()?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    crate::pst::list(tmp.path()).map(|_| ())
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

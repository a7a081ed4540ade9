//! Uploads: bytes given over HTTP kept in the store itself, on both backends (redb's file in the
//! data folder, or the shared database), indexed before the answer, and deleted on request. One
//! path for every kind of upload: one message, an mbox of several, or an Outlook data file become
//! a list of parsed messages with their folders, which are indexed and committed with their bytes
//! in one transaction, and handed back as they were parsed. Mounted sources are never written.
//!
//! Data folders of earlier versions kept uploads as files under `DATA_DIR/uploads`; those are
//! moved into the store once, when such a data folder is opened ([`Archive::take_in_file_uploads`]).

use std::path::Path;
use std::sync::Arc;

use super::{Archive, Commit, Loaded};
use crate::error::Error;
use crate::index::{content_hash, folders, Access, Added, Draft, Entry, EntryId, Keying, Location};
use crate::ingest::{self, Kind, MboxReader, Source};
use crate::model::Message;
use crate::parse::parse_message;
use crate::store::Batch;

/// One message of an upload: parsed, with the folder below Uploads it is shown in (`""`: Uploads
/// itself) and the extension of the name its bytes are kept under.
struct Upload {
    msg: Message,
    folder: String,
    extension: &'static str,
    /// The flags the upload kept for it (an mbox message's status fields), as Maildir letters.
    flags: Option<String>,
}

impl Archive {
    /// Stores uploaded bytes (one message, an mbox of several, or an Outlook data file) and
    /// indexes them. Each message's bytes and its index entry are committed durably, in one
    /// transaction, before this returns: what was acknowledged survives a crash, what was not left
    /// nothing, and the same bytes twice are one message. `name` is the file name the upload came
    /// with, if any (an Outlook data file's folders are shown under it). Returns the messages as
    /// they were parsed, not read back.
    ///
    /// `uploader` is what the uploader may read: bytes held already in a folder beyond it are
    /// kept as a copy of their own under Uploads, so that the answer tells nothing of that folder.
    pub fn store_upload(&self, bytes: Vec<u8>, name: Option<&str>, uploader: &Access) -> Result<Vec<Loaded>, Error> {
        // With `--index-decrypted`, what encrypted layers hide is indexed too.
        let keys = self.index_keys.get().map(Arc::as_ref);
        let uploads = read_upload(bytes, name)?
            .into_iter()
            .map(|u| Upload { msg: Archive::as_indexed(keys, u.msg), ..u })
            .collect();
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.keep(uploads, Batch::default(), uploader)
    }

    /// Indexes uploaded messages in their folders under Uploads, each kept in the store under the
    /// hash of its bytes, and commits them with their bytes and what `batch` holds already in one
    /// transaction (the same bytes indexed already are not stored twice). When that fails nothing
    /// of them stays, here or there: an upload is acknowledged whole or not at all. The caller
    /// holds the ingest lock.
    fn keep(&self, uploads: Vec<Upload>, mut batch: Batch, uploader: &Access) -> Result<Vec<Loaded>, Error> {
        let mut kept: Vec<(EntryId, Option<Message>)> = Vec::with_capacity(uploads.len());
        let mut new = Vec::new();
        let mut stored = std::collections::HashSet::new();
        // An admin limited to some folders must not learn from an upload's key whether its
        // Message-ID or its bytes are held where they may not read.
        let keying = if uploader.is_everything() { Keying::Stable } else { Keying::Unguessable };
        let add_all = |batch: &mut Batch| -> Result<(), Error> {
            for Upload { msg, folder, extension, flags } in uploads {
                let name = format!("{}.{extension}", content_hash(msg.given()));
                let source = Source::Stored { name: name.clone(), folder };
                let location = Location::Top { source: source.clone(), rel: 0, flags, uploaded: true };
                let is_ours = |e: &Entry| matches!(&e.location, Location::Top { source: s, .. } if *s == source);
                let (added, ours, had) = {
                    let mut index = self.index_mut();
                    let draft = Draft::of(&msg);
                    // Held already where the uploader may not read: a copy of their own.
                    let hidden = index.by_hash(&draft.hash).is_some_and(|id| !uploader.files(&index, id));
                    let had = index
                        .held_as(&draft.hash, &location, hidden)
                        .and_then(|id| index.get(id))
                        .is_some_and(|e| is_ours(&e));
                    let added = index.add_draft_as(draft, location, hidden, keying)?;
                    // New, or found before only inside another message and listed as this upload
                    // now: read from this name from now on.
                    let ours = index.get(added.id()).is_some_and(|e| is_ours(&e));
                    (added, ours, had)
                };
                match added {
                    Added::New(id) => {
                        new.push(id);
                        self.index_for_search(id, &msg);
                    }
                    Added::Relisted(id) => self.index_for_search(id, &msg),
                    Added::Relabelled(id) => {
                        self.unindex_for_search(id);
                        self.index_for_search(id, &msg);
                    }
                    Added::Duplicate(_) => {}
                }
                if ours && !had && stored.insert(name.clone()) {
                    batch.uploads.push((name, Arc::from(msg.given())));
                }
                kept.push((added.id(), ours.then_some(msg)));
            }
            Ok(())
        };
        let result = add_all(&mut batch).and_then(|()| self.commit(batch, Commit::Done));
        {
            let mut index = self.index_mut();
            if result.is_err() {
                for &id in &new {
                    index.remove(id);
                    if let Some(search) = &self.search {
                        search.delete(id);
                    }
                }
            }
            index.sort();
        }
        result?;
        // Handed back as parsed: a message read from elsewhere (the same bytes under a mounted
        // path) is loaded from there.
        kept.into_iter()
            .map(|(id, msg)| match msg {
                Some(msg) => {
                    let top = Arc::new(msg);
                    self.cache.insert(id, Arc::clone(&top));
                    let entry = self.index().get(id).ok_or(Error::MessageNotFound)?;
                    Ok(Loaded::whole(id, entry, top))
                }
                None => self.load(id),
            })
            .collect()
    }

    /// Moves the uploads an earlier version kept as files in `dir` (`DATA_DIR/uploads`:
    /// `<hash>.eml`, and `<hash>/<name>.pst` for an Outlook data file) into the store, each file
    /// in one transaction that also drops the entries read from it, then removes the file. A file
    /// that cannot be read stays, and is tried again at the next start; the folder goes once it
    /// is empty. Messages keep their URLs.
    pub(super) fn take_in_file_uploads(&self, dir: &Path) {
        if !dir.is_dir() {
            return;
        }
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        let files: Vec<ingest::Found> = ingest::walk(dir).collect();
        if !files.is_empty() {
            tracing::info!(files = files.len(), folder = %dir.display(), "moving uploads kept as files into the index");
        }
        for found in files {
            let path = found.path;
            let key = path.to_string_lossy().into_owned();
            let read = std::fs::read(&path).map_err(Error::from).and_then(|bytes| {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                read_upload(bytes, name.as_deref())
            });
            let uploads = match read {
                Ok(u) => u,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "an upload kept as a file could not be read");
                    continue;
                }
            };
            let mut batch = Batch::default();
            let before = self.store.source(&key).map(|st| st.ids).unwrap_or_default();
            {
                let mut index = self.index_mut();
                for id in before {
                    index.remove(id);
                }
            }
            batch.removed_sources.push(key);
            match self.keep(uploads, batch, &Access::EVERYTHING) {
                Ok(_) => {
                    if let Err(e) = std::fs::remove_file(&path) {
                        tracing::warn!(path = %path.display(), error = %e, "an upload moved into the index stays as a file too");
                    }
                }
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "an upload kept as a file was not moved"),
            }
        }
        // Then the folders, once empty (what could not be moved stays where it was), with the
        // temporary files of uploads a crash cut short, which were never acknowledged.
        for e in walkdir::WalkDir::new(dir).contents_first(true).into_iter().filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy();
            if e.file_type().is_dir() {
                let _ = std::fs::remove_dir(e.path());
            } else if name.starts_with('.') && name.ends_with(".tmp") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Deletes an uploaded message: its bytes in the store and its entries. Mounted messages are
    /// read-only.
    pub fn delete_upload(&self, id: EntryId) -> Result<(), Error> {
        let location = self.index().get(id).map(|e| e.location.clone()).ok_or(Error::MessageNotFound)?;
        let Location::Top { uploaded: true, source: Source::Stored { name, .. }, .. } = location else {
            return Err(Error::ReadOnly);
        };
        let _one_at_a_time = self.ingest_lock.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut index = self.index_mut();
            index.remove(id);
            index.sort();
        }
        self.cache.remove(&id);
        self.commit(Batch { removed_uploads: vec![name], ..Batch::default() }, Commit::Done)
    }
}

/// The messages of an upload, parsed, with their folders: one message, each message of an mbox
/// (either kept compressed with gzip, bzip2, xz, zstd or LZ4), of an MMDF or Babyl file or of a
/// Dovecot dbox file, or each item of an Outlook data file (as
/// the `.msg` Outlook would save it, in the folder it is filed in there, under the file's name). An upload with a message that cannot be read stores
/// nothing.
fn read_upload(bytes: Vec<u8>, name: Option<&str>) -> Result<Vec<Upload>, Error> {
    // A compressed upload (`.eml.gz`, a mailing list's `.txt.gz` month) is what it inflates to,
    // held whole in memory as any upload is, so a compressed mbox too.
    let bytes = match ingest::packing(&bytes) {
        Some(packing) => {
            let given = ingest::read_unpacked(bytes.as_slice(), packing, crate::limits::MAX_UPLOAD_INFLATED)
                .map_err(|_| Error::Unparseable)?;
            if given.cut_from.is_some() {
                return Err(Error::TooLarge);
            }
            given.bytes
        }
        None => bytes,
    };
    let kind = match ingest::sniff_claimed(&bytes[..bytes.len().min(ingest::HEAD)], ingest::Claim::Given) {
        Kind::Mbox if name.map(ingest::name_beneath).is_some_and(ingest::named_message) => Kind::Message,
        kind => kind,
    };
    let messages: Vec<(Vec<u8>, Option<String>, Vec<String>)> = match kind {
        // Kept whole (an upload is within `--max-upload`): what is stored is what was given.
        Kind::Mbox => MboxReader::new(std::io::Cursor::new(bytes.as_slice()), 0)
            .limit(usize::MAX)
            .filter_map(Result::ok)
            .filter(|m| m.len > 0)
            .filter_map(|m| {
                // Deleted in Thunderbird, left in the file until the folder is compacted.
                let status = ingest::mbox_status(&m.raw);
                (!status.expunged).then(|| (ingest::unescape_from_lines(m.raw), status.flags, Vec::new()))
            })
            .collect(),
        Kind::Dbox => {
            // What Dovecot compressed inside the file inflates within what an upload may hold, all
            // of its messages together.
            let mut messages = Vec::new();
            let mut room = crate::limits::MAX_UPLOAD_INFLATED;
            let mut dbox = ingest::DboxReader::new(bytes.as_slice(), room);
            while let Some(Ok(m)) = dbox.next() {
                if m.given.cut_from.is_some() {
                    return Err(Error::TooLarge);
                }
                room -= m.given.bytes.len().min(room);
                dbox.limit_to(room);
                messages.push((m.given.bytes, None, Vec::new()));
            }
            messages
        }
        Kind::Framed(framing) => {
            let mut messages = Vec::new();
            for m in ingest::SpansReader::new(bytes.as_slice(), framing, usize::MAX) {
                let Ok(m) = m else { break };
                if let Some(flags) = m.listed_flags() {
                    messages.push((m.given.bytes, flags, m.labels));
                }
            }
            messages
        }
        Kind::Message => vec![(bytes, None, Vec::new())],
        Kind::Pst => return read_outlook_upload(&bytes, name),
        Kind::Other => return Err(Error::Unparseable),
    };
    let uploads = messages
        .into_iter()
        .map(|(m, flags, labels)| {
            let mut msg = parse_message(Arc::from(m))?;
            crate::parse::labels::add_labels(&mut msg.summary.labels, labels);
            Ok(Upload { msg, folder: String::new(), extension: "eml", flags })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if uploads.is_empty() {
        return Err(Error::Unparseable);
    }
    Ok(uploads)
}

/// The items of an uploaded Outlook data file: the reader needs a file, so the bytes are one
/// while they are read, and gone when this returns. A file that cannot be read at all is refused.
fn read_outlook_upload(bytes: &[u8], name: Option<&str>) -> Result<Vec<Upload>, Error> {
    use std::io::Write as _;
    let mut tmp = tempfile::NamedTempFile::new()?;
    tmp.write_all(bytes)?;
    tmp.flush()?;
    let listing = crate::ingest::pst::list(tmp.path())?;
    let file_name = outlook_file_name(name);
    let mut uploads = Vec::new();
    for item in &listing.items {
        let Ok(raw) = crate::ingest::pst::item_msg(tmp.path(), item.node) else { continue };
        let Ok(msg) = parse_message(Arc::from(raw)) else { continue };
        uploads.push(Upload {
            msg,
            folder: folders::uploaded_item(&file_name, &item.folder),
            extension: "msg",
            flags: None,
        });
    }
    if !listing.notices.is_empty() {
        let notice = crate::ingest::pst::notice_message(Path::new(&file_name), &listing.notices);
        if let Ok(msg) = parse_message(Arc::from(notice)) {
            uploads.push(Upload { msg, folder: folders::uploaded_item(&file_name, ""), extension: "msg", flags: None });
        }
    }
    if uploads.is_empty() {
        return Err(Error::Unparseable);
    }
    Ok(uploads)
}

/// The name an uploaded Outlook data file is shown under: the name it came with, reduced to a
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
    use super::*;

    /// What Dovecot compressed inside an uploaded dbox file inflates within what one upload may
    /// hold, its messages together: three messages of 100 MiB each are too large, not 300 MiB
    /// held in memory.
    #[test]
    fn a_dbox_upload_inflates_within_the_upload_bound_all_told() {
        use std::io::Read as _;
        let packed = zstd::encode_all(std::io::repeat(b'a').take(100 << 20), 19).expect("zstd");
        let mut file = b"2 M1e C6b16396f\n".to_vec();
        for _ in 0..3 {
            file.extend_from_slice(format!("\x01\x02N          {:016x}\n", packed.len()).as_bytes());
            file.extend_from_slice(&packed);
            file.extend_from_slice(b"\n\x01\x03\nR6b16396f\n\n");
        }
        assert!(matches!(read_upload(file, Some("m.1")), Err(Error::TooLarge)));
    }

    /// A data folder as an earlier version left it: uploads kept as files under `uploads/`, a
    /// message as `<hash>.eml` and an Outlook data file as `<hash>/<name>.pst` (when the corpus is
    /// there), indexed as read from there, and the temporary file of an upload a crash cut short.
    fn data_folder_with_file_uploads(data: &Path) -> Vec<(String, String)> {
        let uploads = data.join("uploads");
        let archive = Archive::open(data).expect("archive");
        std::fs::create_dir_all(&uploads).expect("uploads folder");
        let mut files = Vec::new();
        let message = b"Message-ID: <kept-as-a-file@example.org>\r\nSubject: kept as a file\r\n\r\nbody\r\n";
        let eml = uploads.join(format!("{}.eml", content_hash(message)));
        std::fs::write(&eml, message).expect("write");
        files.push((eml, None));
        let pst = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/corpus/java-libpst/src/test/resources/dist-list.pst");
        if pst.is_file() {
            let kept = uploads.join("0123abcd").join("dist-list.pst");
            std::fs::create_dir_all(kept.parent().expect("parent")).expect("folder");
            std::fs::copy(&pst, &kept).expect("copy");
            files.push((kept, Some(crate::ingest::pst::list(&pst).expect("listed"))));
        } else {
            eprintln!("skipped the Outlook data file: no corpus at {}", pst.display());
        }
        std::fs::write(uploads.join(".4242.tmp"), b"cut short").expect("write");
        let mut batch = Batch::default();
        for (path, listing) in files {
            let rel = super::super::pipeline::relative_start(&uploads, &path);
            let mut ids = Vec::new();
            let mut index = archive.index_mut();
            match listing {
                None => {
                    let msg = parse_message(Arc::from(std::fs::read(&path).expect("read"))).expect("parses");
                    let source = Source::File { path: path.clone() };
                    ids.push(
                        index
                            .add(&msg, Location::Top { source, rel, flags: None, uploaded: true })
                            .expect("added")
                            .id(),
                    );
                }
                Some(listing) => {
                    for item in listing.items {
                        let raw = crate::ingest::pst::item_msg(&path, item.node).expect("item");
                        let msg = parse_message(Arc::from(raw)).expect("parses");
                        let source = Source::Pst { path: path.clone(), node: item.node, folder: item.folder };
                        let location = Location::Top { source, rel, flags: None, uploaded: true };
                        ids.push(index.add(&msg, location).expect("added").id());
                    }
                }
            }
            drop(index);
            let (size, mtime_ns) = super::super::pipeline::stat(&path).expect("stat");
            let state = crate::store::SourceState { size, mtime_ns, ids, ..Default::default() };
            batch.sources.push((path.to_string_lossy().into_owned(), state));
        }
        archive.commit(batch, Commit::Done).expect("committed");
        archive.index_mut().sort();
        let listed = listing(&archive);
        archive.close();
        listed
    }

    /// Every listed message's key and folder.
    fn listing(archive: &Archive) -> Vec<(String, String)> {
        let index = archive.index();
        let mut out: Vec<(String, String)> = index
            .page(0, usize::MAX)
            .into_iter()
            .map(|(_, e)| (e.key.clone(), index.folder_path(e.folder).to_string()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn uploads_kept_as_files_move_into_the_store_once() {
        let dir = tempfile::tempdir().expect("dir");
        let before = data_folder_with_file_uploads(dir.path());
        assert!(before.iter().any(|(k, f)| k == "kept-as-a-file@example.org" && f == "Uploads"), "{before:?}");

        let archive = Archive::open(dir.path()).expect("reopened");
        assert_eq!(listing(&archive), before, "the same messages, in the same folders");
        assert!(!dir.path().join("uploads").exists(), "the files and their folder are gone");
        let ids: Vec<EntryId> = archive.index().listed().to_vec();
        for &id in &ids {
            let loaded = archive.load(id).expect("read back from the store");
            assert!(
                matches!(&loaded.entry.location, Location::Top { source: Source::Stored { .. }, uploaded: true, .. }),
                "{:?}",
                loaded.entry.location
            );
        }
        let id = archive.find("kept-as-a-file@example.org").expect("found");
        assert_eq!(archive.load(id).expect("loaded").message().summary.subject.as_deref(), Some("kept as a file"));
        archive.delete_upload(id).expect("an upload like any other");
        archive.close();
        drop(archive);

        let archive = Archive::open(dir.path()).expect("reopened again");
        assert_eq!(archive.index().listed_count(), before.len() - 1);
    }

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

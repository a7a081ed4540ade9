//! Where messages come from: files, folder trees (Maildir included), mbox, MMDF and Babyl files,
//! Dovecot's dbox stores, Outlook data files. [`walk`](mod@walk) finds them,
//! [`sniff`](mod@sniff) tells a message from other files by its first bytes, `mbox` splits mbox
//! files into messages, `spans` MMDF and Babyl files, `dbox` Dovecot's sdbox and mdbox files,
//! `dovecot_index` Dovecot's index files (flags, and where an mdbox message is now), `mh` reads MH
//! folders' sequences as flags, `sidecars` tells the scan when those say something new of a file
//! that did not change itself, `packed` reads message files kept compressed, [`pst`] lists the
//! items of Outlook data files; [`Source`] says where one message's bytes live and reads them
//! back. Sources are opened read-only; nothing here ever writes under a given path.

mod dbox;
mod dbox_attachments;
mod dovecot_index;
mod mbox;
mod mh;
mod packed;
pub mod pst;
mod sidecars;
mod sniff;
mod spans;
mod walk;
mod within;

pub use dbox::{is_dbox, is_sdbox_file, sdbox_file, sdbox_mailbox, sdbox_place, DboxMessage, DboxReader};
pub use dbox_attachments::{put_back as put_back_dbox_attachments, ExternalRef};
pub use dovecot_index::{
    read_mailbox_index, read_map_index, Held, IndexedMessage, Indexes, MailboxIndex, MapIndex, MapMail, Mdbox, Placed,
};
pub use mbox::{mbox_status, split_mbox, unescape_from_lines, MboxMessage, MboxReader, MboxStatus};
pub use mh::{mh_number, MhSequences};
pub use packed::{mbox_bound, name_beneath, packing, packing_of, read_unpacked, unpacked_head, unpacked_mbox, Packing};
pub use sidecars::{version, Sidecars};
pub(crate) use sniff::starts_with_field;
pub use sniff::{
    after_emlx_count, emlx_count_line, kind_of, maildir_message, named_message, sniff, sniff_claimed, sniff_file,
    sniff_found, utf16_to_bytes, Claim, Kind, HEAD, OLE_MAGIC,
};
pub use spans::{framing, splice, Framing, SpanMessage, SpansReader};
pub use walk::{apple_attachment, maildir_flags, standard_flags, walk, Found, StoredAttachment};
pub use within::{Opener, Within};

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where one message's bytes live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// A whole file is one message (.eml, .mht, a Maildir entry, an upload).
    File {
        #[serde(with = "path_bytes")]
        path: PathBuf,
    },
    /// A byte range of an mbox file, `From ` line excluded.
    Mbox {
        #[serde(with = "path_bytes")]
        path: PathBuf,
        offset: u64,
        len: u64,
    },
    /// One item of an Outlook data file (`.pst`, `.ost`), by its node id (stable for the life of
    /// the file), with the folder it is filed in there (Outlook's names, `/`-separated). Node
    /// [`crate::ingest::pst::NOTICE_NODE`] is the file's notices.
    Pst {
        #[serde(with = "path_bytes")]
        path: PathBuf,
        node: u32,
        folder: String,
    },
    /// An upload kept in the store itself (a shared database: no replica's disk holds it), by
    /// its name there, with the folder it is shown in under Uploads (`""`: Uploads itself).
    Stored { name: String, folder: String },
    // Kept last: entries store a variant by its number.
    /// The bytes of one message of a Dovecot dbox file (sdbox or mdbox), as saved there (maybe
    /// compressed), with the mailbox Dovecot filed it in (its name on disk, `/`-separated).
    Dbox {
        #[serde(with = "path_bytes")]
        path: PathBuf,
        offset: u64,
        len: u64,
        mailbox: String,
    },
    /// One message of an MMDF or Babyl file: the bytes from `offset`, `len` of them, as they lie
    /// (nothing un-escaped), less what `skip` covers (where, how long: Babyl's shown header).
    Framed {
        #[serde(with = "path_bytes")]
        path: PathBuf,
        offset: u64,
        len: u64,
        skip: Option<(u64, u64)>,
    },
}

/// A path kept as its bytes, as the file system has them: a name that is not UTF-8 (`caf\xe9/`,
/// written by an older system in Latin-1) is a path like any other, where serde's own form of a
/// path fails on it, and the whole index with it. Written as a string is in the index's encoding
/// (a length, then the bytes), so indexes written before read as they are.
mod path_bytes {
    use std::ffi::OsString;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::{Path, PathBuf};

    use serde::de::{Error, Visitor};
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(path.as_os_str().as_bytes())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        d.deserialize_byte_buf(PathVisitor)
    }

    struct PathVisitor;

    impl Visitor<'_> for PathVisitor {
        type Value = PathBuf;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a path's bytes")
        }

        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<PathBuf, E> {
            Ok(PathBuf::from(OsString::from_vec(v.to_vec())))
        }

        fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<PathBuf, E> {
            Ok(PathBuf::from(OsString::from_vec(v)))
        }

        fn visit_str<E: Error>(self, v: &str) -> Result<PathBuf, E> {
            Ok(PathBuf::from(v))
        }
    }
}

impl Source {
    pub fn path(&self) -> &Path {
        match self {
            Source::File { path }
            | Source::Mbox { path, .. }
            | Source::Dbox { path, .. }
            | Source::Framed { path, .. }
            | Source::Pst { path, .. } => path,
            Source::Stored { name, .. } => Path::new(name),
        }
    }

    /// The file that is this message alone (a `.eml`, a Maildir file), where some formats find
    /// what belongs beside it; `None` for a message inside a larger file or in the store.
    pub fn own_file(&self) -> Option<&Path> {
        match self {
            Source::File { path } => Some(path),
            Source::Mbox { .. }
            | Source::Dbox { .. }
            | Source::Framed { .. }
            | Source::Pst { .. }
            | Source::Stored { .. } => None,
        }
    }

    /// Reads the message's bytes, at most `limit` of them, from a file that really lies `within`
    /// the paths served (else an error of kind `PermissionDenied`). mbox ranges are un-escaped
    /// (`>From ` → `From `, mboxrd rules).
    pub fn read(&self, limit: usize, within: &Within) -> std::io::Result<Given> {
        match self {
            Source::File { path } => {
                let file = within.open(path)?;
                let size = file.metadata()?.len();
                read_message(file, size, limit)
            }
            Source::Mbox { path, offset, len } => {
                let mut f = within.open(path)?;
                let want = (*len).min(limit as u64);
                let packing = packing_of(&mut f)?;
                let buf = read_range(path, f, packing, *offset, want)?;
                if buf.len() as u64 != want {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "mbox file is shorter than indexed",
                    ));
                }
                Ok(Given {
                    bytes: unescape_from_lines(buf),
                    cut_from: (*len > want).then_some(*len),
                    notices: Vec::new(),
                })
            }
            Source::Framed { path, offset, len, skip } => {
                let mut f = within.open(path)?;
                let packing = packing_of(&mut f)?;
                // Each side of the skip read on its own: a shown header of any length is read past.
                let mut opened = Some(f);
                spans::splice(*offset, *len, *skip, limit, |at, want| {
                    let f = match opened.take() {
                        Some(f) => f,
                        None => within.open(path)?,
                    };
                    read_range(path, f, packing, at, want)
                })
            }
            // As saved, maybe compressed: inflated within the limit, as a Maildir file is.
            // Its attachments kept outside it (its metadata, after its bytes, says) put back.
            Source::Dbox { path, offset, len, .. } => {
                let mut f = within.open(path)?;
                f.seek(SeekFrom::Start(*offset))?;
                let given = read_message((&mut f).take(*len), *len, limit)?;
                if given.bytes.is_empty() && *len > 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "dbox file is shorter than indexed",
                    ));
                }
                let end = offset.saturating_add(*len);
                f.seek(SeekFrom::Start(end))?;
                let refs = match dbox::read_metadata(&mut std::io::BufReader::new(f), end) {
                    Ok(metadata) => metadata.external_refs,
                    Err(e) => {
                        tracing::warn!(path = %path.display(), offset, error = %e, "a dbox message's metadata does not read");
                        Vec::new()
                    }
                };
                Ok(dbox_attachments::put_back(path, *offset, given, &refs, within, limit))
            }
            // An Outlook data file is read in many places: where it leads is asked just before.
            Source::Pst { path, .. } if let Err(e) = within.refuse_outside(path) => Err(e),
            // The item as the `.msg` Outlook would save it as.
            Source::Pst { path, node, .. } if *node == crate::ingest::pst::NOTICE_NODE => {
                let listing = crate::ingest::pst::list(path).map_err(std::io::Error::other)?;
                Ok(Given::whole(crate::ingest::pst::notice_message(path, &listing.notices)))
            }
            // Bounded on its own (`MAX_PST_ITEM`), and the item says what it left out.
            Source::Pst { path, node, .. } => {
                crate::ingest::pst::item_msg(path, *node).map(Given::whole).map_err(std::io::Error::other)
            }
            // Read through the store, which holds it (see `Archive::load`).
            Source::Stored { .. } => Err(std::io::Error::other("an upload kept in the store")),
        }
    }
}

/// A message's bytes as read from its source: all of them, or the first ones of a longer message
/// than the reader keeps.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub bytes: Vec<u8>,
    /// The message's whole size in its source, when `bytes` is only its start.
    pub cut_from: Option<u64>,
    /// What the source could not give of it, for the reader (a dbox message's attachments kept
    /// outside it and not found).
    pub notices: Vec<String>,
}

impl Given {
    pub fn whole(bytes: Vec<u8>) -> Given {
        Given { bytes, cut_from: None, notices: Vec::new() }
    }
}

/// The message a file holds, from its start, at most `limit` bytes of it (`size`: the file's, as
/// last seen), inflated when the file is kept compressed ([`packing`]).
pub fn read_message(mut file: impl Read + Send, size: u64, limit: usize) -> std::io::Result<Given> {
    let mut bytes = Vec::new();
    let head = HEAD.min(limit);
    reserve(&mut bytes, head)?;
    (&mut file).take(head as u64).read_to_end(&mut bytes)?;
    read_message_on(bytes, file, size, limit)
}

/// [`read_message`] with the file's first `min(HEAD, limit)` bytes (or all of a shorter file)
/// read already into `bytes`, and `file` where they end.
pub fn read_message_on(
    mut bytes: Vec<u8>,
    mut file: impl Read + Send,
    size: u64,
    limit: usize,
) -> std::io::Result<Given> {
    if let Some(packing) = packing(&bytes) {
        return read_unpacked(std::io::Cursor::new(bytes).chain(file), packing, limit);
    }
    // Fewer first bytes than asked for: the file has ended already (most mail is a few KiB).
    if bytes.len() < HEAD.min(limit) {
        return Ok(Given::whole(bytes));
    }
    let cut_from = read_within(&mut file, &mut bytes, size, limit)?;
    Ok(Given { bytes, cut_from, notices: Vec::new() })
}

/// `want` bytes (fewer at its end) at `at` of what the file `f` at `path` holds, inflated when it
/// is kept compressed with `packing` (offsets count what the file inflates to).
fn read_range(
    path: &Path,
    mut f: std::fs::File,
    packing: Option<Packing>,
    at: u64,
    want: u64,
) -> std::io::Result<Vec<u8>> {
    match packing {
        Some(p) => packed::read_unpacked_range(path, f, p, at, want),
        None => {
            f.seek(SeekFrom::Start(at))?;
            let mut buf = Vec::new();
            reserve(&mut buf, want as usize)?;
            f.take(want).read_to_end(&mut buf)?;
            Ok(buf)
        }
    }
}

/// Fills `buf` from `r` as far as `r` goes: how many bytes it holds (fewer than `buf` only at
/// the end of `r`).
pub(crate) fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// An error of kind `InvalidData` saying `what`: a file of a format read here that breaks it.
pub(crate) fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// Room for `more` bytes in `bytes`, asked for and not taken: a size the machine cannot give is an
/// error (as with `fs::read`), not an abort.
pub fn reserve(bytes: &mut Vec<u8>, more: usize) -> std::io::Result<()> {
    bytes.try_reserve_exact(more).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))
}

/// Reads on from `from` onto `bytes`, up to `limit` bytes in all; the source's whole size when it
/// holds more (at least `size`, its size as last seen). Room is asked for from `size` (a sparse
/// file of a terabyte is an error).
pub fn read_within(from: &mut impl Read, bytes: &mut Vec<u8>, size: u64, limit: usize) -> std::io::Result<Option<u64>> {
    // One byte past the limit tells a source that holds more.
    let past = limit.saturating_add(1);
    reserve(bytes, usize::try_from(size).unwrap_or(usize::MAX).min(past).saturating_sub(bytes.len()))?;
    from.by_ref().take(past.saturating_sub(bytes.len()) as u64).read_to_end(bytes)?;
    if bytes.len() <= limit {
        return Ok(None);
    }
    bytes.truncate(limit);
    Ok(Some(size.max(past as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path that is not UTF-8 is kept as its bytes, and a path kept as a string by an older
    /// index reads as it was.
    #[test]
    fn paths_are_kept_as_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/mail/caf\xe9/bad\xffname.eml"));
        for source in [
            Source::File { path: odd.clone() },
            Source::Mbox { path: odd.clone(), offset: 7, len: 9 },
            Source::Pst { path: odd.clone(), node: 33, folder: "Inbox".into() },
        ] {
            let bytes = postcard::to_stdvec(&source).expect("encodes");
            assert_eq!(postcard::from_bytes::<Source>(&bytes).expect("decodes"), source);
        }
        #[derive(serde::Serialize)]
        enum Before {
            File { path: String },
        }
        let old = postcard::to_stdvec(&Before::File { path: "/mail/a.eml".into() }).expect("encodes");
        assert_eq!(
            postcard::from_bytes::<Source>(&old).expect("decodes"),
            Source::File { path: PathBuf::from("/mail/a.eml") }
        );
    }

    /// A source read within a limit: all of it when it fits (exactly, too), else its first bytes
    /// and its whole size.
    #[test]
    fn sources_are_read_within_the_limit() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("m.eml");
        std::fs::write(&file, b"Subject: x\n\n>From body\n").expect("write");
        let source = Source::File { path: file.clone() };
        let range = Source::Mbox { path: file, offset: 12, len: 11 };
        for (source, limit, bytes, cut_from) in [
            (&source, 100, &b"Subject: x\n\n>From body\n"[..], None),
            (&source, 23, b"Subject: x\n\n>From body\n", None),
            (&source, 22, b"Subject: x\n\n>From body", Some(23)),
            (&source, 0, b"", Some(23)),
            (&range, 11, b"From body\n", None),
            (&range, 6, b"From ", Some(11)),
        ] {
            let read = source.read(limit, &Within::new([dir.path()])).expect("reads");
            assert_eq!((&read.bytes[..], read.cut_from), (bytes, cut_from), "{source:?} within {limit}");
        }
    }
}

//! Attachments Dovecot keeps outside a dbox message (single instance attachment storage,
//! `mail_attachment_dir`). Such a message is saved without the bodies of its large attachments;
//! its metadata's `X` line says, for each one, where it goes in the whole message (its first
//! byte's offset there), how many bytes it takes there, how it was encoded (`-`: as it is in its
//! file; `B<n>`: the file holds the decoded bytes, base64-encoded back with `n` characters a line,
//! `C` for CRLF line ends, no line end after the last line) and the file that holds it, relative
//! to the attachments folder. The message is rebuilt as Dovecot rebuilds it: the stored bytes up
//! to each attachment, the attachment, and so on, then the rest. The attachments folder is
//! `attachments` beside the store's `mailboxes` (sdbox) or `storage` (mdbox) folder; sdbox names
//! each file with `-<mailbox GUID>-<uid>` after the path the `X` line gives, which is found by
//! listing its folder. A file read must lie inside that folder and inside the paths served.
//! When an attachment cannot be read, or does not fit, the message is given as stored and a
//! warning logged.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use base64::Engine;

use super::{reserve, Given, Within};

/// The most attachments one message may refer to.
pub(super) const MAX_EXTERNAL_REFS: usize = 256;

/// The most entries of a folder looked through for an sdbox attachment's file.
const MAX_LISTED: usize = 100_000;

/// One attachment kept outside a dbox message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalRef {
    /// Where its first byte goes in the whole message.
    pub start: u64,
    /// The bytes it takes in the whole message (encoded, line ends included).
    pub size: u64,
    /// Base64 blocks (of 4 characters) a line; 0: the file holds the bytes as they go.
    pub base64_blocks_per_line: u32,
    /// Base64 lines end with CRLF (else LF).
    pub crlf: bool,
    /// Its file, relative to the attachments folder.
    pub path: String,
}

/// The references an `X` metadata line (without its `X`) gives; `None` for a line that breaks
/// the format (fields not in fours, a number or option that does not read, references out of
/// order or overlapping, more than [`MAX_EXTERNAL_REFS`]).
pub(super) fn parse_external_refs(line: &str) -> Option<Vec<ExternalRef>> {
    let fields: Vec<&str> = line.split(' ').collect();
    if !fields.len().is_multiple_of(4) || fields.len() / 4 > MAX_EXTERNAL_REFS {
        return None;
    }
    let mut refs = Vec::with_capacity(fields.len() / 4);
    let mut end = 0u64;
    for group in fields.chunks_exact(4) {
        let [start, size, options, path] = group else { return None };
        let start: u64 = decimal(start)?;
        let size: u64 = decimal(size)?;
        if start < end || path.is_empty() {
            return None;
        }
        end = start.checked_add(size)?;
        let (base64_blocks_per_line, crlf) = decode_options(options)?;
        refs.push(ExternalRef { start, size, base64_blocks_per_line, crlf, path: (*path).to_string() });
    }
    Some(refs)
}

fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `-`, or `B<characters a line>` and/or `C`: (base64 blocks a line, CRLF).
fn decode_options(options: &str) -> Option<(u32, bool)> {
    if options == "-" {
        return Some((0, false));
    }
    let (mut blocks, mut crlf) = (0u32, false);
    let mut rest = options;
    if rest.is_empty() {
        return None;
    }
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            'B' => {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let chars: u32 = rest[..digits].parse().ok()?;
                if chars == 0 || !chars.is_multiple_of(4) {
                    return None;
                }
                blocks = chars / 4;
                rest = &rest[digits..];
            }
            'C' => crlf = true,
            _ => return None,
        }
    }
    Some((blocks, crlf))
}

/// Why a message is given as stored.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum NotPutBack {
    /// This many of its attachments' files could not be read.
    Missing(usize),
    /// The references do not fit the message, or an attachment's file does not fit its place.
    Mismatch(String),
}

/// The whole message: `stored` (the message as the dbox file holds it, perhaps only its first
/// bytes) with each attachment of `refs` put in its place, kept to `limit` bytes. `fetch` reads an
/// attachment's file, at most the given number of bytes (one more tells a file too long).
/// Attachments that start past the limit are not read.
pub(super) fn rebuild(
    stored: &Given,
    refs: &[ExternalRef],
    limit: usize,
    mut fetch: impl FnMut(&ExternalRef, u64) -> std::io::Result<Vec<u8>>,
) -> Result<Given, NotPutBack> {
    let stored_size = stored.cut_from.unwrap_or(stored.bytes.len() as u64);
    // Where each attachment's preceding stored bytes begin, checked against the stored size.
    let mut full_size = stored_size;
    let mut at_full = 0u64;
    let mut at_stored = 0u64;
    for r in refs {
        let before = r.start.checked_sub(at_full).ok_or_else(|| mismatch("references out of order"))?;
        at_stored = at_stored.checked_add(before).filter(|&s| s <= stored_size).ok_or_else(|| {
            mismatch(&format!("an attachment at {} lies past the stored message's {stored_size} bytes", r.start))
        })?;
        at_full = r.start.checked_add(r.size).ok_or_else(|| mismatch("an attachment's size overflows"))?;
        full_size = full_size.checked_add(r.size).ok_or_else(|| mismatch("the message's size overflows"))?;
    }
    let mut out = Vec::new();
    reserve(&mut out, usize::try_from(full_size).unwrap_or(usize::MAX).min(limit))
        .map_err(|e| mismatch(&e.to_string()))?;
    let take_stored = |out: &mut Vec<u8>, from: u64, len: u64| {
        let room = limit.saturating_sub(out.len()) as u64;
        let from = usize::try_from(from).unwrap_or(usize::MAX).min(stored.bytes.len());
        let len = usize::try_from(len.min(room)).unwrap_or(usize::MAX);
        let to = from.saturating_add(len).min(stored.bytes.len());
        out.extend_from_slice(&stored.bytes[from..to]);
    };
    let (mut at_full, mut at_stored) = (0u64, 0u64);
    let mut missing = 0;
    for r in refs {
        let before = r.start - at_full;
        take_stored(&mut out, at_stored, before);
        at_stored += before;
        at_full = r.start + r.size;
        // Past the limit: nothing more is read, save to count what cannot be.
        if out.len() >= limit && missing == 0 {
            continue;
        }
        let decoded_bound = if r.base64_blocks_per_line == 0 { r.size } else { r.size / 4 * 3 + 3 };
        let decoded = match fetch(r, decoded_bound.saturating_add(1)) {
            Ok(d) => d,
            Err(_) => {
                missing += 1;
                continue;
            }
        };
        if missing > 0 {
            continue;
        }
        let encoded = encode(&decoded, r)
            .ok_or_else(|| mismatch(&format!("the attachment {} does not fill its {} bytes", r.path, r.size)))?;
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&encoded[..encoded.len().min(room)]);
    }
    if missing > 0 {
        return Err(NotPutBack::Missing(missing));
    }
    take_stored(&mut out, at_stored, stored_size.saturating_sub(at_stored));
    let cut_from = (full_size > out.len() as u64).then_some(full_size);
    Ok(Given { bytes: out, cut_from, notices: stored.notices.clone() })
}

/// The notice on a message whose attachments kept outside it could not be put back.
fn not_put_back(count: usize, why: &str) -> String {
    let which = if count == 1 { "1 attachment".to_string() } else { format!("{count} attachments") };
    format!("Dovecot keeps {which} of this message outside it, {why}: shown as saved, without their contents.")
}

fn mismatch(what: &str) -> NotPutBack {
    NotPutBack::Mismatch(what.to_string())
}

/// An attachment's bytes as they lie in the message: exactly `r.size` of them, or `None`.
fn encode(decoded: &[u8], r: &ExternalRef) -> Option<Vec<u8>> {
    let size = usize::try_from(r.size).ok()?;
    if r.base64_blocks_per_line == 0 {
        return (decoded.len() == size).then(|| decoded.to_vec());
    }
    let text = base64::engine::general_purpose::STANDARD.encode(decoded);
    let eol: &[u8] = if r.crlf { b"\r\n" } else { b"\n" };
    let per_line = (r.base64_blocks_per_line as usize).saturating_mul(4);
    let mut out = Vec::with_capacity(size);
    for (i, line) in text.as_bytes().chunks(per_line).enumerate() {
        if i > 0 {
            out.extend_from_slice(eol);
        }
        out.extend_from_slice(line);
        if out.len() > size {
            return None;
        }
    }
    // A last line ended too, when that is what its place holds.
    if out.len() + eol.len() == size {
        out.extend_from_slice(eol);
    }
    (out.len() == size).then_some(out)
}

/// Where a dbox file's attachments are: the store's `attachments` folder, and for an sdbox file
/// its uid (sdbox names attachment files after it).
#[derive(Debug)]
pub(super) struct AttachmentFolder {
    folder: PathBuf,
    sdbox_uid: Option<String>,
}

impl AttachmentFolder {
    /// The attachments folder of the store holding the dbox file at `file`: beside `storage`
    /// (mdbox's `storage/m.<n>`) or beside `mailboxes` (sdbox's `mailboxes/…/dbox-Mails/u.<uid>`).
    pub(super) fn of(file: &Path) -> Option<AttachmentFolder> {
        let parent = file.parent()?;
        if parent.file_name().is_some_and(|n| n == "storage") {
            return Some(AttachmentFolder { folder: parent.parent()?.join("attachments"), sdbox_uid: None });
        }
        let uid = file.file_name()?.to_str()?.strip_prefix("u.")?.to_string();
        let root = match super::dbox::sdbox_place(parent) {
            Some((root, _)) => root,
            None => {
                parent.ancestors().find(|a| a.file_name().is_some_and(|n| n == "mailboxes"))?.parent()?.to_path_buf()
            }
        };
        Some(AttachmentFolder { folder: root.join("attachments"), sdbox_uid: Some(uid) })
    }

    /// Opens an attachment's file, at most `bound` bytes of it read, when it lies inside the
    /// folder (really: links followed) and the folder inside the paths `served`.
    fn read(&self, inside: &Within, r: &ExternalRef, bound: u64) -> std::io::Result<Vec<u8>> {
        let relative = Path::new(&r.path);
        if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "not a path inside the folder"));
        }
        let path = self.folder.join(relative);
        let file = match inside.open(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.sdbox_uid.is_some() => {
                inside.open(&self.sdbox_file(&path)?)?
            }
            other => other?,
        };
        let mut bytes = Vec::new();
        file.take(bound).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// sdbox's file for `path`: `<path>-<mailbox GUID>-<uid>`, this file's uid preferred (a
    /// copy of the attachment saved with another message holds the same bytes).
    fn sdbox_file(&self, path: &Path) -> std::io::Result<PathBuf> {
        let not_found = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
            return Err(not_found());
        };
        let uid = self.sdbox_uid.as_deref().unwrap_or_default();
        let mut other = None;
        for entry in std::fs::read_dir(dir)?.take(MAX_LISTED) {
            let entry = entry?;
            let Some(listed) = entry.file_name().to_str().map(str::to_string) else { continue };
            let Some((guid, listed_uid)) =
                listed.strip_prefix(name).and_then(|s| s.strip_prefix('-')).and_then(|s| s.split_once('-'))
            else {
                continue;
            };
            if guid.len() != 32
                || !guid.bytes().all(|b| b.is_ascii_hexdigit())
                || listed_uid.is_empty()
                || !listed_uid.bytes().all(|b| b.is_ascii_digit())
            {
                continue;
            }
            if listed_uid == uid {
                return Ok(dir.join(listed));
            }
            other.get_or_insert(listed);
        }
        other.map(|o| dir.join(o)).ok_or_else(not_found)
    }
}

/// The message at `offset` of the dbox file `file`, `stored` as the file holds it, with the
/// attachments `refs` names put back, within `limit`; as stored (and a warning logged) when they
/// cannot be.
pub fn put_back(file: &Path, offset: u64, stored: Given, refs: &[ExternalRef], served: &Within, limit: usize) -> Given {
    if refs.is_empty() {
        return stored;
    }
    let Some(folder) = AttachmentFolder::of(file) else {
        tracing::warn!(path = %file.display(), offset, attachments = refs.len(), "a dbox message whose attachments are kept outside it, in a store laid out otherwise: given as stored");
        let mut stored = stored;
        stored.notices.push(not_put_back(refs.len(), "in a store not laid out as Dovecot lays out its own"));
        return stored;
    };
    // Opened only inside the attachments folder, itself inside the paths served.
    let inside = Within::new([folder.folder.as_path()]);
    let served_folder = folder.folder.canonicalize().is_ok_and(|real| served.holds(&real));
    let result = rebuild(&stored, refs, limit, |r, bound| {
        if !served_folder {
            return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        }
        folder.read(&inside, r, bound)
    });
    let mut stored = stored;
    match result {
        Ok(whole) => whole,
        Err(NotPutBack::Missing(missing)) => {
            tracing::warn!(path = %file.display(), offset, missing, folder = %folder.folder.display(), "a dbox message's attachments kept outside it were not found: given as stored");
            stored.notices.push(not_put_back(refs.len(), "not all found in the store's attachments folder"));
            stored
        }
        Err(NotPutBack::Mismatch(why)) => {
            tracing::warn!(path = %file.display(), offset, why, "a dbox message's attachments kept outside it do not fit: given as stored");
            stored.notices.push(not_put_back(refs.len(), "its files do not fit their places"));
            stored
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u64, size: u64, blocks: u32, crlf: bool, path: &str) -> ExternalRef {
        ExternalRef { start, size, base64_blocks_per_line: blocks, crlf, path: path.into() }
    }

    #[test]
    fn external_ref_lines_are_read_as_dovecot_writes_them() {
        let line = "443 2709 B64 5e/4c/5e4c-e320 3302 3180 - 39/d2/39d2-e420 9000 10 B76C x 9010 4 C y";
        assert_eq!(
            parse_external_refs(line),
            Some(vec![
                r(443, 2709, 16, false, "5e/4c/5e4c-e320"),
                r(3302, 3180, 0, false, "39/d2/39d2-e420"),
                r(9000, 10, 19, true, "x"),
                r(9010, 4, 0, true, "y"),
            ])
        );
        for broken in [
            "",
            "1 2 B76",
            "1 2 B75 p",
            "1 2 B0 p",
            "1 2 Bx p",
            "1 2 -C p",
            "1 2 é p",
            "1 2  p",
            "-1 2 - p",
            "1 2 - ",
            "10 5 - a 12 1 - b",
            "18446744073709551615 1 - a",
            "99999999999999999999 1 - a",
        ] {
            assert_eq!(parse_external_refs(broken), None, "{broken:?}");
        }
        let many = vec!["1 0 - a"; MAX_EXTERNAL_REFS + 1].join(" ");
        assert_eq!(parse_external_refs(&many), None);
    }

    /// The message with each attachment's place emptied, and the references, as Dovecot stores it.
    fn split(whole: &[u8], parts: &[(usize, usize, u32, bool, &[u8])]) -> (Vec<u8>, Vec<ExternalRef>) {
        let mut stored = Vec::new();
        let mut at = 0;
        let mut refs = Vec::new();
        for (i, (start, size, blocks, crlf, _)) in parts.iter().enumerate() {
            stored.extend_from_slice(&whole[at..*start]);
            at = start + size;
            refs.push(r(*start as u64, *size as u64, *blocks, *crlf, &format!("a/{i}")));
        }
        stored.extend_from_slice(&whole[at..]);
        (stored, refs)
    }

    fn files<'a>(
        parts: &'a [(usize, usize, u32, bool, &'a [u8])],
    ) -> impl FnMut(&ExternalRef, u64) -> std::io::Result<Vec<u8>> + 'a {
        move |r, bound| {
            let i: usize = r.path.trim_start_matches("a/").parse().map_err(std::io::Error::other)?;
            let data = parts.get(i).map(|p| p.4).ok_or(std::io::ErrorKind::NotFound)?;
            Ok(data[..data.len().min(bound as usize)].to_vec())
        }
    }

    #[test]
    fn messages_are_rebuilt_within_the_limit() {
        let data: Vec<u8> = (0..200u8).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
        let lines = |width: usize, eol: &str| {
            b64.as_bytes().chunks(width).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(eol)
        };
        // LF, 76 a line (the last one shorter); CRLF, 16 a line; as it is; a line end after a last full line.
        let lf = lines(76, "\n");
        let crlf = lines(16, "\r\n");
        let exact = "abcd".repeat(3);
        let whole = format!("H: 1\n\n--b\n\n{lf}\n--b\r\n\r\n{crlf}\r\n--b\n\nplain text\n--b\n\n{exact}\n\n--b--\n");
        let at = |s: &str| whole.find(s).unwrap_or(0);
        let exact_data = base64::engine::general_purpose::STANDARD.decode(&exact).unwrap_or_default();
        let parts: Vec<(usize, usize, u32, bool, &[u8])> = vec![
            (at(&lf), lf.len(), 19, false, &data),
            (at(&crlf), crlf.len(), 4, true, &data),
            (at("plain text"), 10, 0, false, b"plain text"),
            (at(&exact), exact.len() + 1, 3, false, &exact_data),
        ];
        let (stored, refs) = split(whole.as_bytes(), &parts);
        for limit in [usize::MAX, whole.len(), whole.len() - 1, 300, 12, 0] {
            let got = rebuild(&Given::whole(stored.clone()), &refs, limit, files(&parts)).expect("rebuilt");
            let want = &whole.as_bytes()[..whole.len().min(limit)];
            assert!(got.bytes == want, "within {limit}");
            assert_eq!(got.cut_from, (whole.len() > limit).then_some(whole.len() as u64), "within {limit}");
            // The stored message itself cut at the limit.
            let cut = Given {
                bytes: stored[..stored.len().min(limit)].to_vec(),
                cut_from: (stored.len() > limit).then_some(stored.len() as u64),
                notices: Vec::new(),
            };
            let got = rebuild(&cut, &refs, limit, files(&parts)).expect("rebuilt");
            assert!(got.bytes == want, "cut within {limit}");
        }
        assert_eq!(rebuild(&Given::whole(stored.clone()), &[], 10, files(&parts)).expect("as is").bytes, stored[..10]);
    }

    #[test]
    fn hostile_references_never_rebuild_wrongly() {
        let data: &[u8] = b"0123456789";
        let parts: Vec<(usize, usize, u32, bool, &[u8])> = vec![(5, 10, 0, false, data)];
        let whole = b"head:0123456789:tail";
        let (stored, refs) = split(whole, &parts);
        let given = Given::whole(stored.clone());
        assert_eq!(rebuild(&given, &refs, 1000, files(&parts)).expect("fits").bytes, whole);
        for (refs, what) in [
            (vec![r(50, 10, 0, false, "a/0")], "past the end"),
            (vec![r(5, 10, 0, false, "a/0"), r(8, 10, 0, false, "a/0")], "overlapping"),
            (vec![r(5, 9, 0, false, "a/0")], "shorter than its file"),
            (vec![r(5, 11, 0, false, "a/0")], "longer than its file"),
            (vec![r(5, 10, 1, false, "a/0")], "not base64 of that size"),
            (vec![r(u64::MAX, 10, 0, false, "a/0")], "overflowing"),
            (vec![r(5, u64::MAX, 0, false, "a/0")], "overflowing size"),
        ] {
            assert!(matches!(rebuild(&given, &refs, 1000, files(&parts)), Err(NotPutBack::Mismatch(_))), "{what}");
        }
        let gone = vec![r(5, 10, 0, false, "a/0"), r(15, 1, 0, false, "a/7"), r(16, 1, 0, false, "a/8")];
        assert_eq!(rebuild(&given, &gone, 1000, files(&parts)).err(), Some(NotPutBack::Missing(2)));
        // Through a folder: a path out of it is refused, never read.
        let dir = tempfile::tempdir().expect("dir");
        let store = dir.path().join("store");
        std::fs::create_dir_all(store.join("storage")).expect("mkdir");
        std::fs::create_dir_all(store.join("attachments/ab")).expect("mkdir");
        std::fs::write(store.join("attachments/ab/one"), data).expect("write");
        std::fs::write(dir.path().join("secret"), data).expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret"), store.join("attachments/ab/link")).expect("link");
        let file = store.join("storage/m.1");
        let served = Within::new([store.as_path()]);
        for (path, whole_back) in [
            ("ab/one", true),
            ("../secret", false),
            ("/etc/passwd", false),
            ("ab/../../secret", false),
            ("ab/link", false),
            ("ab/none", false),
        ] {
            let refs = vec![r(5, 10, 0, false, path)];
            let got = put_back(&file, 0, given.clone(), &refs, &served, 1000);
            assert_eq!(got.bytes == whole, whole_back, "{path}");
            assert_eq!(got.bytes == stored, !whole_back, "{path}: as stored");
        }
        // The folder outside the paths served.
        let refs = vec![r(5, 10, 0, false, "ab/one")];
        let elsewhere = Within::new([store.join("storage").as_path()]);
        assert!(put_back(&file, 0, given.clone(), &refs, &elsewhere, 1000).bytes == stored);
    }

    #[test]
    fn attachment_folders_are_found_beside_the_store() {
        let of = |p: &str| AttachmentFolder::of(Path::new(p)).map(|f| (f.folder, f.sdbox_uid));
        assert_eq!(of("/m/mdbox/storage/m.3"), Some((PathBuf::from("/m/mdbox/attachments"), None)));
        assert_eq!(
            of("/m/s/mailboxes/Work/Sub/dbox-Mails/u.12"),
            Some((PathBuf::from("/m/s/attachments"), Some("12".to_string())))
        );
        assert_eq!(of("/m/s/other/u.12"), None);
    }
}

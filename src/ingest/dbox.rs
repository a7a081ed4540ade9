//! Dovecot's own mail stores, sdbox and mdbox. Both keep messages in dbox files: a header line
//! (`2 M<size> C<stamp>`, the format's version and its fields in hex), then each message framed —
//! a message header of the size the file header gave (`\x01\x02N`, the message's size in 16 hex
//! digits), the message's bytes as they were saved (or compressed, when Dovecot's `zlib` plugin
//! wrote them: told by their first bytes, as for Maildir files), and metadata lines after
//! `\n\x01\x03\n` up to an empty line. sdbox keeps one message a file
//! (`mailboxes/<mailbox>/dbox-Mails/u.<uid>`), mdbox many (`storage/m.<n>`), each noting the
//! mailbox it was saved to (`B`). A damaged frame ends the file's reading there: the messages
//! before it are read. A message whose large attachments Dovecot keeps outside it (`X` metadata)
//! is put back together by [`super::dbox_attachments`].
//!
//! What Dovecot keeps in its own index files — flags, and in mdbox where a message is now (a move
//! changes only the index) and whether it was deleted (its bytes stay in the file until `doveadm
//! purge`) — is read by [`super::dovecot_index`]; without it an mdbox message shows in the
//! mailbox it was saved to.

use std::ffi::OsStr;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::dbox_attachments::{parse_external_refs, ExternalRef};
use super::{invalid, read_message, read_up_to, Given};

/// The largest message header a file may announce (Dovecot's is 30 bytes).
const MAX_MESSAGE_HEADER: usize = 4096;

/// The most metadata kept after a message (Dovecot writes a few short lines).
const MAX_METADATA: usize = 64 * 1024;

/// What ends a message's bytes and begins its metadata.
const METADATA_START: &[u8] = b"\n\x01\x03\n";

/// Whether a file's first bytes are a dbox file's header: `2 `, fields of a letter and hex digits
/// separated by spaces, among them the message header's size (`M`), then a line feed.
pub fn is_dbox(head: &[u8]) -> bool {
    file_header(head).is_some()
}

/// The message header's size a dbox file's first line gives, and where the first line ends.
fn file_header(head: &[u8]) -> Option<(usize, usize)> {
    let line_end = head.iter().take(256).position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&head[..line_end]).ok()?;
    let mut fields = line.split(' ');
    if fields.next()? != "2" {
        return None;
    }
    let mut size = None;
    for field in fields.filter(|f| !f.is_empty()) {
        let (key, value) = field.split_at(field.char_indices().nth(1).map_or(field.len(), |(i, _)| i));
        if !key.chars().all(|c| c.is_ascii_uppercase()) || !value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        if key == "M" {
            size = usize::from_str_radix(value, 16).ok();
        }
    }
    let size = size.filter(|&s| (19..=MAX_MESSAGE_HEADER).contains(&s))?;
    Some((size, line_end + 1))
}

/// One message of a dbox file: where its bytes lie (as saved, perhaps compressed), what was read
/// of them (inflated, within the limit), and the mailbox its metadata names.
#[derive(Debug)]
pub struct DboxMessage {
    pub offset: u64,
    pub len: u64,
    pub given: Given,
    /// The mailbox it was saved to (mdbox's `B` line), in Dovecot's own name for it.
    pub mailbox: Option<String>,
    /// The attachments Dovecot keeps outside it (its `X` line), in their order in the message.
    pub external_refs: Vec<ExternalRef>,
}

/// What a message's metadata says, and how many bytes it took.
#[derive(Debug, Default)]
pub(super) struct Metadata {
    pub(super) mailbox: Option<String>,
    pub(super) external_refs: Vec<ExternalRef>,
    pub(super) len: u64,
}

/// The messages of a dbox file, read forward from its start, each kept to `limit` bytes.
pub struct DboxReader<R> {
    input: R,
    at: u64,
    header_size: Option<usize>,
    limit: usize,
    done: bool,
}

impl<R: BufRead + Send> DboxReader<R> {
    pub fn new(input: R, limit: usize) -> DboxReader<R> {
        DboxReader { input, at: 0, header_size: None, limit, done: false }
    }

    /// Keeps each message read from now on to `limit` bytes.
    pub fn limit_to(&mut self, limit: usize) {
        self.limit = limit;
    }

    fn next_message(&mut self) -> std::io::Result<Option<DboxMessage>> {
        let header_size = match self.header_size {
            Some(size) => size,
            None => {
                let mut line = Vec::new();
                (&mut self.input).take(257).read_until(b'\n', &mut line)?;
                let (size, used) = file_header(&line).ok_or_else(|| invalid("not a dbox file"))?;
                self.at = used as u64;
                self.header_size = Some(size);
                size
            }
        };
        let mut header = vec![0u8; header_size];
        let got = read_up_to(&mut self.input, &mut header)?;
        if got == 0 {
            return Ok(None);
        }
        if got < header_size {
            return Err(invalid("a dbox file cut short in a message header"));
        }
        let len = message_size(&header).ok_or_else(|| invalid("a damaged dbox message header"))?;
        let offset = self.at + header_size as u64;
        let mut body = (&mut self.input).take(len);
        let given = read_message(&mut body, len, self.limit)?;
        // What the limit left unread, and a file cut short within the message.
        std::io::copy(&mut body, &mut std::io::sink())?;
        if body.limit() > 0 {
            return Err(invalid("a dbox file cut short in a message"));
        }
        let metadata = read_metadata(&mut self.input, offset + len)?;
        self.at = offset + len + metadata.len;
        Ok(Some(DboxMessage { offset, len, given, mailbox: metadata.mailbox, external_refs: metadata.external_refs }))
    }
}

/// Reads a message's metadata from where its bytes end (`at`, in the file, for a warning): the
/// mailbox it names, the attachments kept outside it, and how many bytes it took. A broken `X`
/// line gives no attachments, with a warning.
pub(super) fn read_metadata(input: &mut impl BufRead, at: u64) -> std::io::Result<Metadata> {
    let mut start = [0u8; METADATA_START.len()];
    if read_up_to(input, &mut start)? < start.len() || start != METADATA_START {
        return Err(invalid("a dbox message without its metadata"));
    }
    let mut metadata = Metadata { len: start.len() as u64, ..Metadata::default() };
    let mut line = Vec::new();
    loop {
        line.clear();
        let room = (MAX_METADATA as u64).saturating_sub(metadata.len);
        input.take(room).read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\n") {
            return Err(invalid("a dbox message's metadata does not end"));
        }
        metadata.len += line.len() as u64;
        if line == b"\n" {
            return Ok(metadata);
        }
        let value = &line[1..line.len() - 1];
        match line[0] {
            b'B' => {
                let name = String::from_utf8_lossy(value).into_owned();
                metadata.mailbox = Some(name).filter(|n| !n.is_empty());
            }
            b'X' => match std::str::from_utf8(value).ok().and_then(parse_external_refs) {
                Some(refs) => metadata.external_refs = refs,
                None => {
                    tracing::warn!(
                        at,
                        "a dbox message's list of attachments kept outside it does not read: given as stored"
                    );
                    metadata.external_refs.clear();
                }
            },
            _ => {}
        }
    }
}

impl<R: BufRead + Send> Iterator for DboxReader<R> {
    type Item = std::io::Result<DboxMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_message() {
            Ok(Some(m)) => Some(Ok(m)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// The size of the message a message header frames: `\x01\x02`, its type (`N`), then its size
/// in hex as the header's last word before its line feed.
fn message_size(header: &[u8]) -> Option<u64> {
    let rest = header.strip_prefix(b"\x01\x02N")?.strip_suffix(b"\n")?;
    let word = std::str::from_utf8(rest).ok()?.split(' ').rfind(|w| !w.is_empty())?;
    u64::from_str_radix(word, 16).ok()
}

/// The mailbox of a file laid out as sdbox keeps its messages (`…/mailboxes/<mailbox>/dbox-Mails/
/// u.<uid>`), from its path; `None` for any other path.
pub fn sdbox_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let uid = name.strip_prefix("u.")?;
    if uid.is_empty() || !uid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    sdbox_mailbox(path.parent()?)
}

/// Whether `path` is laid out as an sdbox message file ([`sdbox_file`]), told without building the
/// mailbox's name: asked of every file at every scan.
pub fn is_sdbox_file(path: &Path) -> bool {
    let uid = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("u."));
    let Some(dir) = path.parent() else { return false };
    uid.is_some_and(|u| !u.is_empty() && u.bytes().all(|b| b.is_ascii_digit()))
        && dir.file_name().is_some_and(|n| n == "dbox-Mails")
        && dir.parent().is_some_and(|p| p.ancestors().skip(1).any(|a| a.file_name().is_some_and(|n| n == "mailboxes")))
}

/// The mailbox of the sdbox folder `dir` (`…/mailboxes/<mailbox>/dbox-Mails`): the folders
/// between the store's `mailboxes` and `dbox-Mails`, as Dovecot names them on disk; `None` for a
/// folder not laid out so. See [`sdbox_place`].
pub fn sdbox_mailbox(dir: &Path) -> Option<String> {
    sdbox_place(dir).map(|(_, mailbox)| mailbox)
}

/// The store and mailbox of the sdbox folder `dir`: the folder that holds the store's
/// `mailboxes`, and the folders between that and `dbox-Mails`. A mailbox may itself be named
/// `mailboxes` (Dovecot keeps `Work/mailboxes/2019` in `mailboxes/Work/mailboxes/2019`), and a
/// store may lie in a folder so named (`/srv/mailboxes/alice/mailboxes/INBOX`): of several
/// `mailboxes` on the path, the store's is the innermost whose folder holds a store's own files
/// (`dovecot-uidvalidity`, the mailbox list's index, `subscriptions`), else the innermost.
pub fn sdbox_place(dir: &Path) -> Option<(PathBuf, String)> {
    let dirs: Vec<&OsStr> = dir.iter().collect();
    let (last, above) = dirs.split_last()?;
    if *last != "dbox-Mails" {
        return None;
    }
    let store_at = |i: usize| above[..i].iter().collect::<PathBuf>();
    // A `mailboxes` right above `dbox-Mails` is a mailbox of that name, not the store's.
    let candidates: Vec<usize> = (0..above.len().saturating_sub(1)).filter(|&i| above[i] == "mailboxes").collect();
    let at = match candidates.as_slice() {
        [] => return None,
        [one] => *one,
        several => {
            let innermost = several.last().copied()?;
            several.iter().rev().copied().find(|&i| holds_store_files(&store_at(i))).unwrap_or(innermost)
        }
    };
    let names: Vec<_> = above[at + 1..].iter().map(|n| n.to_string_lossy()).collect();
    Some((store_at(at), names.join("/")))
}

/// Whether `dir` holds the files Dovecot keeps beside a store's `mailboxes`.
fn holds_store_files(dir: &Path) -> bool {
    ["dovecot-uidvalidity", "dovecot.list.index.log", "dovecot.list.index", "dovecot.mailbox.log", "subscriptions"]
        .iter()
        .any(|f| dir.join(f).symlink_metadata().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dbox file of `messages` (bytes, mailbox), framed as Dovecot 2.3 frames them.
    pub(crate) fn dbox(messages: &[(&[u8], Option<&str>)]) -> Vec<u8> {
        let mut out = b"2 M1e C6b16396f\n".to_vec();
        for (bytes, mailbox) in messages {
            out.extend_from_slice(format!("\x01\x02N          {:016x}\n", bytes.len()).as_bytes());
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\n\x01\x03\nR6b16396f\nV20fc\n");
            if let Some(m) = mailbox {
                out.extend_from_slice(format!("B{m}\n").as_bytes());
            }
            out.extend_from_slice(b"\n");
        }
        out
    }

    fn read(bytes: &[u8], limit: usize) -> Vec<std::io::Result<DboxMessage>> {
        DboxReader::new(bytes, limit).collect()
    }

    #[test]
    fn messages_are_read_with_their_places_and_mailboxes() {
        let one = b"Subject: one\n\nfirst\n";
        let two = b"Subject: two\n\nsecond, with\n\x01\x03\n inside\n";
        let file = dbox(&[(one, Some("INBOX")), (two, Some("Work/Plans")), (b"Subject: 3\n\n", None)]);
        assert!(is_dbox(&file));
        let messages: Vec<DboxMessage> = read(&file, 1 << 20).into_iter().map(|m| m.expect("reads")).collect();
        assert_eq!(messages.len(), 3);
        for (m, (bytes, mailbox)) in messages.iter().zip([(&one[..], Some("INBOX")), (two, Some("Work/Plans"))]) {
            assert_eq!(m.given.bytes, bytes);
            assert_eq!(&file[m.offset as usize..(m.offset + m.len) as usize], bytes);
            assert_eq!(m.mailbox.as_deref(), mailbox);
        }
        assert_eq!(messages[2].mailbox, None);
        // Kept to the limit, the rest counted.
        let cut = read(&file, 5);
        let first = cut[0].as_ref().expect("reads");
        assert_eq!((first.given.bytes.as_slice(), first.given.cut_from), (&b"Subje"[..], Some(one.len() as u64)));
        assert_eq!(cut.len(), 3);
    }

    #[test]
    fn a_damaged_file_gives_the_messages_before_the_damage() {
        let file = dbox(&[(b"Subject: one\n\n1\n", None), (b"Subject: two\n\n2\n", None)]);
        for cut in [file.len() - 1, file.len() - 12, file.len() - 30] {
            let messages = read(&file[..cut], 1 << 20);
            assert!(messages[0].is_ok(), "{cut}");
            assert!(messages.last().is_some_and(|r| r.is_err()), "{cut}: the damage is told");
        }
        let mut noise = file.clone();
        noise[30] = b'x';
        assert!(read(&noise, 100)[0].is_err());
        for head in [&b"2 C6b\n"[..], b"1 M1e\n", b"2 M1e C6z\n", b"2 MFFFFFFFFFFFFFFFFFF\n", b"From x\n", b"2 M1e"] {
            assert!(!is_dbox(head), "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn sdbox_mailboxes_come_from_the_path() {
        let dir = |p: &str| sdbox_mailbox(Path::new(p));
        assert_eq!(dir("sdbox/mailboxes/INBOX/dbox-Mails").as_deref(), Some("INBOX"));
        assert_eq!(dir("x/mailboxes/Work/Sub/dbox-Mails").as_deref(), Some("Work/Sub"));
        assert_eq!(dir("mdbox/storage"), None);
        assert_eq!(dir("mailboxes/dbox-Mails"), None);
        let file = |p: &str| sdbox_file(Path::new(p));
        assert_eq!(file("/m/sdbox/mailboxes/Work/dbox-Mails/u.12").as_deref(), Some("Work"));
        assert!(is_sdbox_file(Path::new("/m/sdbox/mailboxes/Work/dbox-Mails/u.12")));
        assert!(is_sdbox_file(Path::new("mailboxes/A/B/dbox-Mails/u.1")));
        for other in [
            "/m/sdbox/mailboxes/Work/dbox-Mails/dovecot.index.log",
            "/m/x/dbox-Mails/u.1",
            "/m/mailboxes/W/dbox-Mails/u.",
            "/m/mailboxes/dbox-Mails/u.1",
        ] {
            assert_eq!(file(other), None, "{other}");
            assert!(!is_sdbox_file(Path::new(other)), "{other}");
        }
    }

    /// Mailboxes named `mailboxes` (as Dovecot lays out `Work/mailboxes/2019`), and stores kept in
    /// a folder so named: the store's own `mailboxes` is the one beside the store's files.
    #[test]
    fn an_sdbox_store_is_told_from_mailboxes_named_mailboxes() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path();
        let store = root.join("mailboxes/alice/sdbox");
        std::fs::create_dir_all(&store)?;
        std::fs::write(store.join("dovecot-uidvalidity"), "6b16ea94")?;
        let place = |p: &str| sdbox_place(&store.join(p));
        for (dir, mailbox) in [
            ("mailboxes/INBOX/dbox-Mails", "INBOX"),
            ("mailboxes/Work/mailboxes/dbox-Mails", "Work/mailboxes"),
            ("mailboxes/Work/mailboxes/2019/dbox-Mails", "Work/mailboxes/2019"),
            ("mailboxes/mailboxes/mailboxes/dbox-Mails", "mailboxes/mailboxes"),
        ] {
            assert_eq!(place(dir), Some((store.clone(), mailbox.to_string())), "{dir}");
        }
        // Without the store's files (its `mailboxes` copied alone), the innermost is taken.
        let bare = root.join("copy");
        assert_eq!(
            sdbox_place(&bare.join("mailboxes/Work/mailboxes/2019/dbox-Mails")),
            Some((bare.join("mailboxes/Work"), "2019".to_string()))
        );
        Ok(())
    }
}

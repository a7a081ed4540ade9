//! Where messages come from: files, folder trees (Maildir included), mbox files. Finds them, tells a
//! message from other files by its first bytes, splits mbox files into byte ranges, and reads any one
//! message back. Sources are opened read-only; nothing here ever writes under a given path.

use std::fs::File;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where one message's bytes live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// A whole file is one message (.eml, .mht, a Maildir entry, an upload).
    File { path: PathBuf },
    /// A byte range of an mbox file, `From ` line excluded.
    Mbox { path: PathBuf, offset: u64, len: u64 },
    /// One item of an Outlook data file (`.pst`, `.ost`), by its node id (stable for the life of
    /// the file), with the folder it is filed in there (Outlook's names, `/`-separated). Node
    /// [`crate::pst::NOTICE_NODE`] is the file's notices.
    Pst { path: PathBuf, node: u32, folder: String },
    /// An upload kept in the store itself (a shared database: no replica's disk holds it), by
    /// its name there, with the folder it is shown in under Uploads (`""`: Uploads itself).
    Stored { name: String, folder: String },
}

impl Source {
    pub fn path(&self) -> &Path {
        match self {
            Source::File { path } | Source::Mbox { path, .. } | Source::Pst { path, .. } => path,
            Source::Stored { name, .. } => Path::new(name),
        }
    }

    /// Reads the message's bytes. mbox ranges are un-escaped (`>From ` → `From `, mboxrd rules).
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        match self {
            Source::File { path } => std::fs::read(path),
            Source::Mbox { path, offset, len } => {
                let mut f = File::open(path)?;
                f.seek(SeekFrom::Start(*offset))?;
                let mut buf = Vec::with_capacity(*len as usize);
                f.take(*len).read_to_end(&mut buf)?;
                if buf.len() as u64 != *len {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "mbox file is shorter than indexed",
                    ));
                }
                Ok(unescape_from_lines(buf))
            }
            // The item as the `.msg` Outlook would save it as.
            Source::Pst { path, node, .. } if *node == crate::pst::NOTICE_NODE => {
                let listing = crate::pst::list(path).map_err(std::io::Error::other)?;
                Ok(crate::pst::notice_message(path, &listing.notices))
            }
            Source::Pst { path, node, .. } => crate::pst::item_msg(path, *node).map_err(std::io::Error::other),
            // Read through the store, which holds it (see `Archive::load`).
            Source::Stored { .. } => Err(std::io::Error::other("an upload kept in the store")),
        }
    }
}

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Message,
    Mbox,
    /// An Outlook data file: a tree of folders and items.
    Pst,
    Other,
}

/// Header names that mark the start of a message (or a saved page) — one must appear in the first
/// header block, so a YAML or `key: value` file is not taken for mail.
const MAIL_HEADERS: &[&str] = &[
    "from",
    "to",
    "cc",
    "subject",
    "date",
    "message-id",
    "mime-version",
    "content-type",
    "received",
    "return-path",
    "delivered-to",
    "x-mailer",
    "snapshot-content-location",
    "content-location",
    "reply-to",
    "sender",
    "in-reply-to",
    "references",
    "x-original-to",
    "envelope-to",
    "dkim-signature",
    "content-transfer-encoding",
    "resent-from",
    "user-agent",
    "newsgroups",
    "path",
    "arc-seal",
];

/// Tells a message, an mbox, and anything else apart from the start of a file.
pub fn sniff(head: &[u8]) -> Kind {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = head.iter().position(|&c| !matches!(c, b'\r' | b'\n')).unwrap_or(head.len());
    let head = &head[start..];
    if head.starts_with(b"From ") {
        return Kind::Mbox;
    }
    let mut known = false;
    let mut fields = 0;
    for line in head.split(|&c| c == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            if fields == 0 {
                return Kind::Other;
            }
            continue;
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            // A header block line without a colon: tolerated once a few real fields were seen
            // (broken mailers), otherwise this is not mail.
            if fields >= 2 && known {
                continue;
            }
            return Kind::Other;
        };
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&c| (33..=126).contains(&c)) {
            return Kind::Other;
        }
        fields += 1;
        if let Ok(n) = std::str::from_utf8(name) {
            known |= MAIL_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(n));
        }
        if fields > 64 {
            break;
        }
    }
    if known && fields > 0 {
        Kind::Message
    } else {
        Kind::Other
    }
}

/// What a file's place and name already say about it, which decides how much its first bytes must
/// prove before it is taken for mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The user said so: a PATH given as a file, an upload, or a file named `.eml`, `.mht`,
    /// `.mhtml`, `.mbox`. A message even when its header block is broken (a stray line, a
    /// continuation without its white space): what can be parsed is shown.
    Given,
    /// Found in a walked folder with no extension (or in a Maildir's `cur/` or `new/`): a message
    /// when it starts with a header field of any name (Usenet articles start with `Path:`,
    /// `Xref:` or `Newsgroups:`), however the later lines look.
    Bare,
    /// Found with some other extension: a message only when its header block reads as one and
    /// names a field mail has (so a `key: value` or YAML file is not taken for mail).
    Other,
}

/// Extensions that name a message or an mbox (Outlook's `.msg`, Apple Mail's `.emlx` and
/// `.partial.emlx`, Safari's `.webarchive` included).
const MAIL_EXTENSIONS: &[&str] = &["eml", "mht", "mhtml", "mbox", "mbx", "msg", "emlx", "webarchive"];

/// The first bytes of an OLE compound file, the container of Outlook `.msg` files (and of other
/// Office documents, so it counts only where a file is claimed to be a message).
pub const OLE_MAGIC: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";

impl Claim {
    /// The claim of a file found under `root`: `Given` when it is the root itself.
    pub fn of(found: &Found) -> Claim {
        let path = found.path.as_path();
        let ext = path.extension().and_then(|e| e.to_str());
        let in_maildir = path.parent().and_then(Path::file_name).is_some_and(|d| d == "cur" || d == "new");
        match ext {
            _ if path == &*found.root => Claim::Given,
            Some(e) if MAIL_EXTENSIONS.iter().any(|m| m.eq_ignore_ascii_case(e)) => Claim::Given,
            None => Claim::Bare,
            Some(_) if in_maildir => Claim::Bare,
            Some(_) => Claim::Other,
        }
    }
}

/// [`sniff`], as strict as the file's [`Claim`] asks. Files in other formats that hold one message
/// are looked through: a UTF-16 file (by its byte order mark) is sniffed as the text it holds, an
/// Apple Mail `.emlx` after its byte-count line; a binary property list (a Safari `.webarchive`)
/// is a message when the file is claimed as one.
pub fn sniff_claimed(head: &[u8], claim: Claim) -> Kind {
    // An Outlook data file says so in its first ten bytes, whatever its name.
    if head.starts_with(crate::pst::PST_MAGIC) && head.get(8..10) == Some(b"SM") {
        return Kind::Pst;
    }
    if claim == Claim::Given && head.starts_with(OLE_MAGIC) {
        return Kind::Message;
    }
    if let Some(text) = utf16_to_bytes(head) {
        return sniff_claimed(&text, claim);
    }
    if head.starts_with(b"bplist00") {
        return if claim == Claim::Given { Kind::Message } else { Kind::Other };
    }
    if let Some(rest) = after_emlx_count(head) {
        if sniff_claimed(rest, claim) == Kind::Message {
            return Kind::Message;
        }
    }
    match sniff(head) {
        Kind::Other if claim != Claim::Other => {
            let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
            let text = &text[text.iter().position(|&c| !c.is_ascii_whitespace()).unwrap_or(text.len())..];
            let binary = text.is_empty() || text.contains(&0);
            match claim {
                Claim::Given if !binary => Kind::Message,
                Claim::Bare if !binary && starts_with_field(text) => Kind::Message,
                _ => Kind::Other,
            }
        }
        kind => kind,
    }
}

/// The bytes a UTF-16 file stands for, when it starts with a byte order mark (`FF FE` little
/// endian, `FE FF` big endian), as some Windows tools save `.eml` files: its text, in UTF-8 (which
/// is what an 8-bit message's bytes are read as). `None` for anything else. An odd last byte or a
/// lone surrogate becomes U+FFFD.
pub fn utf16_to_bytes(bytes: &[u8]) -> Option<Vec<u8>> {
    let encoding = match bytes {
        [0xFF, 0xFE, ..] => encoding_rs::UTF_16LE,
        [0xFE, 0xFF, ..] => encoding_rs::UTF_16BE,
        _ => return None,
    };
    let (text, _) = encoding.decode_without_bom_handling(&bytes[2..]);
    Some(text.into_owned().into_bytes())
}

/// What follows the first line of an Apple Mail `.emlx` (the message's length in bytes, in ASCII
/// digits, maybe padded with spaces), when the first line is one.
pub fn after_emlx_count(bytes: &[u8]) -> Option<&[u8]> {
    let (digits, rest) = emlx_count_line(bytes)?;
    digits.parse::<u64>().ok()?;
    Some(rest)
}

/// The digits of an `.emlx` byte-count line and what follows the line.
pub fn emlx_count_line(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let end = bytes.iter().take(32).position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&bytes[..end]).ok()?.trim_end_matches([' ', '\t', '\r']);
    (!line.is_empty() && line.len() <= 20 && line.bytes().all(|b| b.is_ascii_digit()))
        .then_some((line, &bytes[end + 1..]))
}

/// Whether the first line is a header field: a name of printable characters, then a colon.
fn starts_with_field(text: &[u8]) -> bool {
    let line = text.split(|&c| c == b'\n').next().unwrap_or(text);
    match line.iter().position(|&c| c == b':') {
        Some(colon) if colon > 0 => line[..colon].iter().all(|&c| (33..=126).contains(&c)),
        _ => false,
    }
}

/// Reads the first bytes of a file for [`sniff_claimed`].
pub fn sniff_file(path: &Path, claim: Claim) -> std::io::Result<Kind> {
    let mut f = File::open(path)?;
    let mut head = vec![0u8; 8192];
    let mut filled = 0;
    while filled < head.len() {
        let n = f.read(&mut head[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(sniff_claimed(&head[..filled], claim))
}

/// A file found under a given PATH, with that PATH (for display as a relative source).
#[derive(Debug, Clone)]
pub struct Found {
    /// Shared by every file found under it.
    pub root: std::sync::Arc<Path>,
    pub path: PathBuf,
}

/// Every regular file under the given paths, in a stable order. Maildir `tmp/` folders (messages
/// still being delivered) and hidden files are skipped (but not Maildir++ folders); symbolic links to folders are not followed,
/// so a link loop cannot trap the walk.
pub fn walk(root: &Path) -> impl Iterator<Item = Found> + '_ {
    let shared: std::sync::Arc<Path> = std::sync::Arc::from(root);
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            let is_dir = e.file_type().is_dir();
            // Maildir++ keeps subfolders as hidden folders (`.Lists.rust/cur`): those are mail.
            let hidden = name.starts_with('.') && !(is_dir && e.path().join("cur").is_dir());
            e.depth() == 0 || !(hidden || (is_dir && name == "tmp") || (is_dir && is_apple_attachments(e.path())))
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() || (e.depth() == 0 && e.path().is_file()))
        .map(move |e| Found { root: std::sync::Arc::clone(&shared), path: e.into_path() })
}

/// Apple Mail's `Attachments/` folder beside a `Messages/` folder: the attachments of its
/// `.partial.emlx` messages, read with them, never messages of their own.
fn is_apple_attachments(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "Attachments") && dir.parent().is_some_and(|p| p.join("Messages").is_dir())
}

/// A file Apple Mail stored beside a `.partial.emlx` for one of its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredAttachment {
    Found {
        name: String,
        bytes: Vec<u8>,
    },
    /// No file for the part (Apple Mail had not downloaded it, or the tree was copied without it).
    Missing,
    /// A file larger than `max` bytes: not read.
    TooLarge {
        name: String,
        size: u64,
    },
}

/// The attachment Apple Mail stored for part `section` (`2`, `1.2`) of the message at `path`
/// (`…/Messages/<n>.partial.emlx`): the first file in `…/Attachments/<n>/<section>/`. Read-only,
/// and never more than `max` bytes.
pub fn apple_attachment(path: &Path, section: &str, max: u64) -> StoredAttachment {
    if section.is_empty() || !section.bytes().all(|b| b.is_ascii_digit() || b == b'.') || section.starts_with('.') {
        return StoredAttachment::Missing;
    }
    let Some(number) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.split('.').next()) else {
        return StoredAttachment::Missing;
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return StoredAttachment::Missing;
    }
    let Some(mailbox) = path.parent().and_then(Path::parent) else { return StoredAttachment::Missing };
    let dir = mailbox.join("Attachments").join(number).join(section);
    let Ok(entries) = std::fs::read_dir(&dir) else { return StoredAttachment::Missing };
    let mut files: Vec<(String, PathBuf, u64)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(std::fs::Metadata::is_file)?;
            Some((e.file_name().to_string_lossy().into_owned(), e.path(), meta.len()))
        })
        .filter(|(name, _, _)| !name.starts_with('.'))
        .collect();
    files.sort();
    let Some((name, file, size)) = files.into_iter().next() else { return StoredAttachment::Missing };
    if size > max {
        return StoredAttachment::TooLarge { name, size };
    }
    let mut bytes = Vec::new();
    match File::open(&file).and_then(|f| f.take(max + 1).read_to_end(&mut bytes)) {
        Ok(n) if n as u64 > max => StoredAttachment::TooLarge { name, size: n as u64 },
        Ok(_) => StoredAttachment::Found { name, bytes },
        Err(_) => StoredAttachment::Missing,
    }
}

/// Maildir flags from a file name (`…:2,FS` → "FS"); `None` outside Maildir naming.
pub fn maildir_flags(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    // `:2,` is the standard; `!2,` and `;2,` are the forms used where `:` cannot be in a name.
    let (_, info) = name.rsplit_once(":2,").or_else(|| name.rsplit_once("!2,")).or_else(|| name.rsplit_once(";2,"))?;
    Some(info.chars().filter(|c| c.is_ascii_alphabetic()).collect())
}

/// One message of an mbox: where it lies in the file (the `From ` line excluded) and its bytes as
/// they are there (still `>From `-escaped).
#[derive(Debug, Clone)]
pub struct MboxMessage {
    pub offset: u64,
    pub len: u64,
    pub raw: Vec<u8>,
}

/// Streams an mbox a message at a time, so an mbox of any size is read with the memory of one
/// message. A separator is a line starting with `From ` at the start, after an empty line, or
/// followed by a header field. When a
/// message declares a Content-Length that lands exactly on the next separator (or the end), it is
/// trusted (the Content-Length variant), so unescaped `From ` lines inside such bodies stay inside.
pub struct MboxReader<R: BufRead> {
    reader: R,
    /// Offset in the file of the next byte to read.
    pos: u64,
    /// True once the `From ` line of the next message has been consumed.
    at_message: bool,
    done: bool,
}

impl<R: BufRead> MboxReader<R> {
    /// `start` is the file offset `reader` begins at (for reading an appended tail).
    pub fn new(reader: R, start: u64) -> Self {
        MboxReader { reader, pos: start, at_message: false, done: false }
    }

    fn read_line(&mut self, line: &mut Vec<u8>) -> std::io::Result<usize> {
        line.clear();
        let n = self.reader.read_until(b'\n', line)?;
        self.pos += n as u64;
        Ok(n)
    }

    /// Whether the next line reads as a header field: a `From ` line right after a non-blank line is
    /// a separator only when a message's headers follow it (writers that do not leave a blank line).
    fn header_follows(&mut self) -> std::io::Result<bool> {
        let buf = self.reader.fill_buf()?;
        let line = buf.split(|&c| c == b'\n').next().unwrap_or(&[]);
        let Some(colon) = line.iter().position(|&c| c == b':') else { return Ok(false) };
        Ok(colon > 0 && line[..colon].iter().all(|&c| (33..=126).contains(&c)))
    }

    /// After a trusted Content-Length: is the next thing a separator (or the end)?
    fn separator_follows(&mut self) -> std::io::Result<bool> {
        let buf = self.reader.fill_buf()?;
        let trimmed = buf.iter().position(|&c| !matches!(c, b'\r' | b'\n')).map_or(&buf[buf.len()..], |p| &buf[p..]);
        Ok(buf.is_empty() || trimmed.starts_with(b"From ") || (trimmed.is_empty() && buf.len() < 3))
    }

    fn next_message(&mut self) -> std::io::Result<Option<MboxMessage>> {
        let mut line_buf = Vec::new();
        // Find the first separator.
        while !self.at_message {
            if self.read_line(&mut line_buf)? == 0 {
                self.done = true;
                return Ok(None);
            }
            let line = line_buf.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line_buf);
            self.at_message = line.starts_with(b"From ");
        }
        let offset = self.pos;
        let mut raw = Vec::new();
        let mut prev_blank = false;
        let mut in_headers = true;
        let mut content_length: Option<u64> = None;
        loop {
            // Each line is read straight onto the message and taken back off if it ends it.
            let start = raw.len();
            let n = self.reader.read_until(b'\n', &mut raw)?;
            self.pos += n as u64;
            if n == 0 {
                self.done = true;
                break;
            }
            if raw[start..].starts_with(b"From ") && (prev_blank || self.header_follows()?) {
                raw.truncate(start);
                // The blank line before a separator belongs to the format, not the message.
                strip_one_newline(&mut raw);
                break;
            }
            let line = &raw[start..];
            let blank = matches!(line, b"\n" | b"\r\n");
            if in_headers {
                if blank {
                    in_headers = false;
                    if let Some(cl) = content_length {
                        let got = (&mut self.reader).take(cl).read_to_end(&mut raw)?;
                        self.pos += got as u64;
                        if got as u64 == cl && self.separator_follows()? {
                            // Exact: skip the blank lines up to the next `From ` line.
                            loop {
                                if self.read_line(&mut line_buf)? == 0 {
                                    self.done = true;
                                    break;
                                }
                                if line_buf.starts_with(b"From ") {
                                    break;
                                }
                            }
                            let len = raw.len() as u64;
                            return Ok(Some(MboxMessage { offset, len, raw }));
                        }
                        prev_blank = raw.ends_with(b"\n\n") || raw.ends_with(b"\r\n\r\n");
                        continue;
                    }
                } else if line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
                    content_length = std::str::from_utf8(&line[15..]).ok().and_then(|v| v.trim().parse().ok());
                }
            }
            prev_blank = blank;
        }
        let len = raw.len() as u64;
        if raw.is_empty() && self.done {
            return Ok(None);
        }
        Ok(Some(MboxMessage { offset, len, raw }))
    }
}

fn strip_one_newline(raw: &mut Vec<u8>) {
    if raw.ends_with(b"\n") {
        raw.pop();
        if raw.ends_with(b"\r") {
            raw.pop();
        }
    }
}

impl<R: BufRead> Iterator for MboxReader<R> {
    type Item = std::io::Result<MboxMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.next_message().transpose()
    }
}

/// Message ranges of an mbox held in memory.
pub fn split_mbox(data: &[u8]) -> Vec<(u64, u64)> {
    MboxReader::new(data, 0).filter_map(Result::ok).filter(|m| m.len > 0).map(|m| (m.offset, m.len)).collect()
}

/// mboxrd: one `>` is removed from every line matching `^>+From `.
pub fn unescape_from_lines(buf: Vec<u8>) -> Vec<u8> {
    let needs = buf.starts_with(b">From ")
        || memchr::memmem::find_iter(&buf, b"\n>").any(|at| matches!(buf.get(at + 2), Some(b'F' | b'>')));
    if !needs {
        return buf;
    }
    let mut out = Vec::with_capacity(buf.len());
    for line in buf.split_inclusive(|&c| c == b'\n') {
        let gts = line.iter().take_while(|&&c| c == b'>').count();
        if gts > 0 && line[gts..].starts_with(b"From ") {
            out.extend_from_slice(&line[1..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing() {
        let cases: &[(&[u8], Kind)] = &[
            (b"From: a@b\r\nSubject: x\r\n\r\nbody", Kind::Message),
            (b"\xef\xbb\xbfContent-Type: text/html\n\n<p>", Kind::Message),
            (b"From a@b Sat Jan  3 01:05:34 1996\nFrom: a\n", Kind::Mbox),
            (b"{\"json\": true}", Kind::Other),
            (b"name: value\nother: 2\n", Kind::Other),
            (b"<?xml version=\"1.0\"?>", Kind::Other),
            (b"", Kind::Other),
        ];
        for (input, want) in cases {
            assert_eq!(sniff(input), *want, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn what_a_claim_lets_through() {
        let broken = b"From: a@b\r\nSubject: x\r\nthis line is no field\r\nTo: c\r\n\r\nbody";
        let cases: &[(&[u8], Claim, Kind)] = &[
            (broken, Claim::Given, Kind::Message),
            (b"Subject: x\r\nunfolded continuation\r\n\r\nbody", Claim::Given, Kind::Message),
            (b"just some text someone saved as .eml", Claim::Given, Kind::Message),
            (b"\x00\x01binary", Claim::Given, Kind::Other),
            (b"", Claim::Given, Kind::Other),
            (b"Path: news.example!not-for-mail\r\nXref: x\r\nbroken\r\n\r\nbody", Claim::Bare, Kind::Message),
            (b"X-Anything: 1\nno field here\n", Claim::Bare, Kind::Message),
            (b"plain words: not a field name\n", Claim::Bare, Kind::Other),
            (b"just text", Claim::Bare, Kind::Other),
            (b"name: value\nother: 2\n", Claim::Other, Kind::Other),
            (b"Path: x\r\nXref: y\r\n\r\nb", Claim::Other, Kind::Message),
            (b"From a@b Sat Jan  3 01:05:34 1996\nFrom: a\n", Claim::Bare, Kind::Mbox),
        ];
        for (input, claim, want) in cases {
            assert_eq!(sniff_claimed(input, *claim), *want, "{claim:?}: {}", String::from_utf8_lossy(input));
        }
        let found = |root: &str, path: &str| Found { root: std::sync::Arc::from(Path::new(root)), path: path.into() };
        assert_eq!(Claim::of(&found("/m/a.txt", "/m/a.txt")), Claim::Given);
        assert_eq!(Claim::of(&found("/m", "/m/saved.EML")), Claim::Given);
        assert_eq!(Claim::of(&found("/m", "/m/news/12345")), Claim::Bare);
        assert_eq!(Claim::of(&found("/m", "/m/cur/1.M1P1.host:2,S")), Claim::Bare);
        assert_eq!(Claim::of(&found("/m", "/m/notes.yaml")), Claim::Other);
    }

    #[test]
    fn other_formats_are_looked_through() {
        let utf16 = |text: &str, le: bool| -> Vec<u8> {
            let bom: [u8; 2] = if le { [0xFF, 0xFE] } else { [0xFE, 0xFF] };
            let units = text.encode_utf16().flat_map(|u| if le { u.to_le_bytes() } else { u.to_be_bytes() });
            bom.into_iter().chain(units).collect()
        };
        let mail = "From: a@b\r\nSubject: x\r\n\r\nbody";
        let cases: Vec<(&str, Vec<u8>, Claim, Kind)> = vec![
            ("utf-16 le", utf16(mail, true), Claim::Other, Kind::Message),
            ("utf-16 be", utf16(mail, false), Claim::Given, Kind::Message),
            ("utf-16 text", utf16("just words", true), Claim::Other, Kind::Other),
            ("emlx", format!("{}      \n{mail}", mail.len()).into_bytes(), Claim::Given, Kind::Message),
            ("emlx in a walk", format!("{}\n{mail}", mail.len()).into_bytes(), Claim::Bare, Kind::Message),
            ("numbers only", b"12345\n67890\n".to_vec(), Claim::Other, Kind::Other),
            ("binary plist given", b"bplist00\xd1\x01\x02".to_vec(), Claim::Given, Kind::Message),
            ("binary plist found", b"bplist00\xd1\x01\x02".to_vec(), Claim::Other, Kind::Other),
            ("outlook data file", b"!BDN\x00\x00\x00\x00SM\x17\x00".to_vec(), Claim::Other, Kind::Pst),
            ("not quite one", b"!BDN\x00\x00\x00\x00XX".to_vec(), Claim::Given, Kind::Other),
        ];
        for (name, input, claim, want) in cases {
            assert_eq!(sniff_claimed(&input, claim), want, "{name}");
        }
        let found = |root: &str, path: &str| Found { root: std::sync::Arc::from(Path::new(root)), path: path.into() };
        assert_eq!(Claim::of(&found("/m", "/m/Inbox.mbox/Messages/1.partial.emlx")), Claim::Given);
        assert_eq!(Claim::of(&found("/m", "/m/saved/page.webarchive")), Claim::Given);
        assert_eq!(after_emlx_count(b"12 \r\nrest"), Some(&b"rest"[..]));
        assert_eq!(after_emlx_count(b"Subject: 12\n"), None);
    }

    #[test]
    fn mbox_split_and_unescape() {
        let mbox = b"From a Mon Jan 1 00:00:00 2024\nSubject: one\n\nhello\n>From the start\n\nFrom b Mon Jan 1 00:00:00 2024\nSubject: two\n\nbye\n";
        let ranges = split_mbox(mbox);
        assert_eq!(ranges.len(), 2);
        let (o, l) = ranges[0];
        let first = unescape_from_lines(mbox[o as usize..(o + l) as usize].to_vec());
        assert_eq!(first, b"Subject: one\n\nhello\nFrom the start\n");
        let (o, l) = ranges[1];
        assert_eq!(&mbox[o as usize..(o + l) as usize], b"Subject: two\n\nbye\n");
    }

    #[test]
    fn mbox_content_length_keeps_unescaped_from_lines() {
        let body = "x\n\nFrom inside\n";
        let mbox = format!(
            "From a Mon Jan 1 00:00:00 2024\nContent-Length: {}\n\n{body}\nFrom b Mon Jan 1 00:00:00 2024\nSubject: 2\n\nb\n",
            body.len()
        );
        assert_eq!(split_mbox(mbox.as_bytes()).len(), 2);
    }

    #[test]
    fn maildir_flag_names() {
        assert_eq!(maildir_flags(Path::new("cur/1.M1P1.h:2,FS")).as_deref(), Some("FS"));
        assert_eq!(maildir_flags(Path::new("cur/1.M1P1.h!2,S")).as_deref(), Some("S"));
        assert_eq!(maildir_flags(Path::new("cur/1.M1.h,S=10;2,STln")).as_deref(), Some("STln"));
        assert_eq!(maildir_flags(Path::new("new/1.M1P1.h")), None);
    }
}

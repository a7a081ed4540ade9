//! Where messages come from: files, folder trees (Maildir included), mbox files. Finds them, tells a
//! message from other files by its first bytes, splits mbox files into byte ranges, and reads any one
//! message back. Sources are opened read-only; nothing here ever writes under a given path.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where one message's bytes live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Source {
    /// A whole file is one message (.eml, .mht, a Maildir entry, an upload).
    File { path: PathBuf },
    /// A byte range of an mbox file, `From ` line excluded.
    Mbox { path: PathBuf, offset: u64, len: u64 },
}

impl Source {
    pub fn path(&self) -> &Path {
        match self {
            Source::File { path } | Source::Mbox { path, .. } => path,
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
        }
    }
}

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Message,
    Mbox,
    Other,
}

/// Header names that mark the start of a message (or a saved page) — one must appear in the first
/// header block, so a YAML or `key: value` file is not taken for mail.
const MAIL_HEADERS: &[&str] = &[
    "from", "to", "cc", "subject", "date", "message-id", "mime-version", "content-type", "received",
    "return-path", "delivered-to", "x-mailer", "snapshot-content-location", "content-location",
    "reply-to", "sender", "in-reply-to", "references", "x-original-to", "envelope-to", "dkim-signature",
    "content-transfer-encoding", "resent-from", "user-agent", "newsgroups", "path", "arc-seal",
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

/// Reads the first bytes of a file for [`sniff`].
pub fn sniff_file(path: &Path) -> std::io::Result<Kind> {
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
    Ok(sniff(&head[..filled]))
}

/// A file found under a given PATH, with that PATH (for display as a relative source).
#[derive(Debug, Clone)]
pub struct Found {
    pub root: PathBuf,
    pub path: PathBuf,
}

/// Every regular file under the given paths, in a stable order. Maildir `tmp/` folders (messages
/// still being delivered) and hidden files are skipped; symbolic links to folders are not followed,
/// so a link loop cannot trap the walk.
pub fn walk(root: &Path) -> impl Iterator<Item = Found> + '_ {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0 || !(name.starts_with('.') || (e.file_type().is_dir() && name == "tmp"))
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() || (e.depth() == 0 && e.path().is_file()))
        .map(move |e| Found { root: root.to_path_buf(), path: e.into_path() })
}

/// Maildir flags from a file name (`…:2,FS` → "FS"); `None` outside Maildir naming.
pub fn maildir_flags(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let (_, info) = name.rsplit_once(":2,").or_else(|| name.rsplit_once("!2,"))?;
    Some(info.chars().filter(|c| c.is_ascii_alphabetic()).collect())
}

/// Splits an mbox into message ranges (the `From ` separator line excluded). A separator is a line
/// starting with `From ` at the start of the file or after an empty line; when a message declares a
/// Content-Length that lands exactly on the next separator, it is trusted (the Content-Length mbox
/// variant), so unescaped `From ` lines inside such bodies do not split them.
pub fn split_mbox(data: &[u8]) -> Vec<(u64, u64)> {
    let mut ranges = Vec::new();
    let mut pos = 0usize;
    // Find the first separator.
    while pos < data.len() && !data[pos..].starts_with(b"From ") {
        match memchr_nl(data, pos) {
            Some(nl) => pos = nl + 1,
            None => return ranges,
        }
    }
    while pos < data.len() {
        // `pos` is at a "From " line: the message starts after it.
        let start = match memchr_nl(data, pos) {
            Some(nl) => nl + 1,
            None => break,
        };
        let mut end = find_next_separator(data, start);
        let mut exact = false;
        if let Some(cl_end) = content_length_end(data, start) {
            if cl_end <= data.len() && is_separator_at(data, cl_end) {
                end = cl_end;
                exact = true;
            }
        }
        // The blank line before the next separator belongs to the mbox format, not the message.
        let mut msg_end = end;
        if !exact && msg_end > start && data[msg_end - 1] == b'\n' {
            msg_end -= 1;
            if msg_end > start && data[msg_end - 1] == b'\r' {
                msg_end -= 1;
            }
        }
        if msg_end > start {
            ranges.push((start as u64, (msg_end - start) as u64));
        }
        pos = end;
        // Skip stray blank lines between messages.
        while pos < data.len() && matches!(data[pos], b'\r' | b'\n') {
            pos += 1;
        }
        if pos < data.len() && !data[pos..].starts_with(b"From ") {
            break;
        }
    }
    ranges
}

fn memchr_nl(data: &[u8], from: usize) -> Option<usize> {
    data[from..].iter().position(|&c| c == b'\n').map(|p| from + p)
}

fn is_separator_at(data: &[u8], at: usize) -> bool {
    let mut p = at;
    while p < data.len() && matches!(data[p], b'\r' | b'\n') {
        p += 1;
    }
    p >= data.len() || data[p..].starts_with(b"From ")
}

/// The next `From ` line that follows an empty line, or the end.
fn find_next_separator(data: &[u8], from: usize) -> usize {
    let mut line_start = from;
    let mut prev_blank = false;
    while line_start < data.len() {
        let line_end = memchr_nl(data, line_start).map_or(data.len(), |e| e + 1);
        let line = &data[line_start..line_end];
        if prev_blank && line.starts_with(b"From ") {
            return line_start;
        }
        prev_blank = matches!(line, b"\n" | b"\r\n");
        line_start = line_end;
    }
    data.len()
}

/// Where a message ends if its header block holds a Content-Length.
fn content_length_end(data: &[u8], start: usize) -> Option<usize> {
    let mut p = start;
    let mut length = None;
    loop {
        let end = memchr_nl(data, p)?;
        let line = &data[p..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return length.map(|l: usize| end + 1 + l);
        }
        if line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
            length = std::str::from_utf8(&line[15..]).ok()?.trim().parse().ok();
        }
        p = end + 1;
    }
}

/// mboxrd: one `>` is removed from every line matching `^>+From `.
pub fn unescape_from_lines(buf: Vec<u8>) -> Vec<u8> {
    let needs = buf.starts_with(b">From ") || buf.windows(3).any(|w| w == b"\n>F" || w == b"\n>>");
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
    fn mbox_split_and_unescape() {
        let mbox = b"From a Mon Jan 1 00:00:00 2024\nSubject: one\n\nhello\n>From the start\n\nFrom b Mon Jan 1 00:00:00 2024\nSubject: two\n\nbye\n";
        let ranges = split_mbox(mbox);
        assert_eq!(ranges.len(), 2);
        let (o, l) = ranges[0];
        let first = unescape_from_lines(mbox[o as usize..(o + l) as usize].to_vec());
        assert_eq!(first, b"Subject: one\n\nhello\nFrom the start\n");
        let (o, l) = ranges[1];
        assert_eq!(&mbox[o as usize..(o + l) as usize], b"Subject: two\n\nbye");
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
        assert_eq!(maildir_flags(Path::new("new/1.M1P1.h")), None);
    }
}

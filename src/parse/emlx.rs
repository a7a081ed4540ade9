//! Apple Mail's `.emlx`: a line with the message's length in bytes, the RFC 822 message, then an
//! XML property list of what Apple Mail knows about it (its `flags` bitfield above all). A
//! `.partial.emlx` is the same with the bodies of some parts left out (each such part keeps its
//! header and an `X-Apple-Content-Length`); Apple Mail keeps those bodies as files in
//! `Attachments/<message number>/<part number>/` beside the `Messages/` folder. They are put back
//! as base64 bodies, so the message reads as the one that was received.

use std::path::Path;
use std::sync::Arc;

use super::{build, mime, proplist};
use crate::error::Error;
use crate::ingest::{self, StoredAttachment};
use crate::limits::{MAX_STORED_ATTACHMENT, MAX_STORED_ATTACHMENTS};
use crate::model::{Message, Origin};

/// Whether bytes read as an `.emlx`: a byte-count line, then something.
pub(super) fn is_emlx(raw: &[u8]) -> bool {
    ingest::after_emlx_count(raw).is_some_and(|rest| !rest.is_empty())
}

/// The message of an `.emlx` file, its flags, and its stored attachments when `path` says where
/// the file is.
pub(super) fn parse(raw: Arc<[u8]>, path: Option<&Path>) -> Result<Message, Error> {
    let mut notices = Vec::new();
    let (declared, start) = match ingest::emlx_count_line(&raw) {
        Some((digits, rest)) => (digits.parse::<usize>().ok(), raw.len() - rest.len()),
        None => {
            notices.push(
                "This Apple Mail file has no byte-count line; the message is read up to its property list.".into(),
            );
            (None, 0)
        }
    };
    let rest = &raw[start..];
    let trailer = plist_start(rest);
    let fits =
        |n: usize| n <= rest.len() && trailer.is_none_or(|t| t >= n && rest[n..t].iter().all(u8::is_ascii_whitespace));
    let len = match (declared, trailer) {
        (Some(n), _) if fits(n) => n,
        (declared, Some(t)) => {
            if declared.is_some() {
                notices.push(
                    "The byte count at the start of this Apple Mail file does not match the message; the message is read up to its property list."
                        .into(),
                );
            }
            t
        }
        (_, None) => {
            notices.push("This Apple Mail file is shorter than its byte count says; what is there is shown.".into());
            rest.len()
        }
    };
    let flags = read_flags(&rest[len..], &mut notices);
    let message = &rest[..len];
    let message: Arc<[u8]> = match put_back_attachments(message, path, &mut notices) {
        Some(full) => Arc::from(full),
        None => Arc::from(message),
    };
    let mut msg = match mime::parse(message.clone()) {
        Ok(m) => m,
        Err(_) => {
            notices
                .push("This Apple Mail file holds no message that could be read; its text is shown as it is.".into());
            mime::parse(Arc::from(as_text_message(&raw, &message)))?
        }
    };
    msg.origin = Origin { original: Some(raw), flags, notices, cut_from: None };
    Ok(msg)
}

/// A message whose body is `text`, named by the file's bytes, for a file with no readable message.
fn as_text_message(file: &[u8], text: &[u8]) -> Vec<u8> {
    let id = crate::ids::derived_message_id(file);
    let mut out = format!(
        "Message-ID: <{id}>\r\nSubject: (no readable message)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    )
    .into_bytes();
    build::base64_lines(String::from_utf8_lossy(text).as_bytes(), &mut out);
    out
}

/// Where the property list after the message starts: the last `<?xml` that opens a plist.
fn plist_start(rest: &[u8]) -> Option<usize> {
    let at = rest.windows(5).rposition(|w| w == b"<?xml")?;
    let head = &rest[at..rest.len().min(at + 400)];
    head.windows(6).any(|w| w == b"<plist" || w == b"DOCTYP").then_some(at)
}

/// Apple Mail's `flags` as Maildir letters: read `S`, deleted `T`, answered `R`, flagged `F`,
/// draft `D`, forwarded or redirected `P`.
fn read_flags(trailer: &[u8], notices: &mut Vec<String>) -> Option<String> {
    if trailer.iter().all(u8::is_ascii_whitespace) {
        notices.push("No property list follows the message in this Apple Mail file, so its flags are unknown.".into());
        return None;
    }
    let read = proplist::read(trailer);
    if let Some(problem) = read.problem {
        notices.push(format!("The property list after the message could not be read fully: {problem}."));
    }
    let bits = read.value.as_ref()?.get("flags")?.as_integer()?;
    Some(maildir_letters(bits))
}

fn maildir_letters(bits: i128) -> String {
    const LETTERS: &[(u32, char)] = &[(6, 'D'), (4, 'F'), (8, 'P'), (9, 'P'), (2, 'R'), (0, 'S'), (1, 'T')];
    let mut out = String::new();
    for &(bit, letter) in LETTERS {
        if bits >> bit & 1 == 1 && !out.ends_with(letter) {
            out.push(letter);
        }
    }
    out
}

/// The message with the bodies Apple Mail left out put back from its `Attachments/` folder; `None`
/// when nothing was left out or nothing could be put back. Parts whose file is missing stay empty
/// and are named in a notice.
fn put_back_attachments(message: &[u8], path: Option<&Path>, notices: &mut Vec<String>) -> Option<Vec<u8>> {
    if !contains_ignore_case(message, b"x-apple-content-length") {
        return None;
    }
    let parsed = mime::parse(Arc::from(message)).ok()?;
    let mut edits: Vec<(std::ops::Range<usize>, Vec<u8>)> = Vec::new();
    let mut budget = MAX_STORED_ATTACHMENTS;
    for part in &parsed.parts {
        if part.is_multipart() {
            continue;
        }
        let body = part.raw_range.clone();
        let header_start = header_start(message, body.start);
        let Some(header) = message.get(header_start..body.start) else { continue };
        if !contains_ignore_case(header, b"x-apple-content-length") {
            continue;
        }
        let name = part.filename.clone().unwrap_or_else(|| format!("part {}", part.section));
        let found = match path {
            Some(p) => ingest::apple_attachment(p, &part.section, MAX_STORED_ATTACHMENT.min(budget)),
            None => StoredAttachment::Missing,
        };
        match found {
            StoredAttachment::Found { bytes, .. } => {
                budget -= bytes.len() as u64;
                let mut new = rewrite_header(header);
                build::base64_lines(&bytes, &mut new);
                edits.push((header_start..body.end, new));
            }
            StoredAttachment::Missing => notices.push(format!(
                "The attachment {name} (part {}) was not downloaded by Apple Mail: it is not in the Attachments folder beside this message, so it is shown empty.",
                part.section
            )),
            StoredAttachment::TooLarge { size, .. } => notices.push(format!(
                "The attachment {name} (part {}) stored beside this message is too large to show ({size} bytes).",
                part.section
            )),
        }
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = Vec::with_capacity(message.len() + edits.iter().map(|(_, b)| b.len()).sum::<usize>());
    let mut at = 0;
    for (range, bytes) in edits {
        if range.start < at {
            continue;
        }
        out.extend_from_slice(&message[at..range.start]);
        out.extend_from_slice(&bytes);
        at = range.end;
    }
    out.extend_from_slice(&message[at..]);
    Some(out)
}

/// Where the header of the part whose body starts at `body` begins: after the boundary line before
/// it (a header never has a line starting with `--`), else at the start of the message.
fn header_start(message: &[u8], body: usize) -> usize {
    let before = &message[..body.min(message.len())];
    match before.windows(3).rposition(|w| w == b"\n--") {
        Some(at) => before[at + 1..].iter().position(|&b| b == b'\n').map_or(body, |nl| at + 1 + nl + 1),
        None => 0,
    }
}

/// A part header with its transfer encoding made base64 and Apple's length dropped.
fn rewrite_header(header: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.len() + 40);
    let mut skipping = false;
    for line in header.split_inclusive(|&b| b == b'\n') {
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if content.is_empty() {
            break;
        }
        if content[0] == b' ' || content[0] == b'\t' {
            if !skipping {
                out.extend_from_slice(content);
                out.extend_from_slice(b"\r\n");
            }
            continue;
        }
        let name = content.split(|&b| b == b':').next().unwrap_or(&[]);
        skipping = name.eq_ignore_ascii_case(b"content-transfer-encoding")
            || name.eq_ignore_ascii_case(b"x-apple-content-length");
        if !skipping {
            out.extend_from_slice(content);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"Content-Transfer-Encoding: base64\r\n\r\n");
    out
}

fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emlx(message: &str, count: Option<usize>, trailer: &str) -> Arc<[u8]> {
        let message = message.replace('\n', "\r\n");
        let count = count.unwrap_or(message.len());
        Arc::from(format!("{count}       \n{message}{trailer}").into_bytes())
    }

    const PLIST: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\"><dict><key>flags</key><integer>8623689857</integer></dict></plist>\n";
    const MESSAGE: &str = "Subject: hello\nFrom: a@example.com\nMessage-ID: <e@x>\n\nbody text\n";

    #[test]
    fn emlx_files_read_as_their_message_and_flags() {
        struct Case {
            name: &'static str,
            raw: Arc<[u8]>,
            flags: Option<&'static str>,
            notices: usize,
        }
        let cases = [
            Case { name: "well formed", raw: emlx(MESSAGE, None, PLIST), flags: Some("S"), notices: 0 },
            Case { name: "no trailer", raw: emlx(MESSAGE, None, ""), flags: None, notices: 1 },
            Case { name: "count too large", raw: emlx(MESSAGE, Some(5000), PLIST), flags: Some("S"), notices: 1 },
            Case { name: "count too small", raw: emlx(MESSAGE, Some(20), PLIST), flags: Some("S"), notices: 1 },
            Case {
                name: "no count line",
                raw: Arc::from(format!("{}{PLIST}", MESSAGE.replace('\n', "\r\n")).into_bytes()),
                flags: Some("S"),
                notices: 1,
            },
            Case {
                name: "damaged trailer",
                raw: emlx(MESSAGE, None, "<?xml version=\"1.0\"?><plist><dict><key>flags"),
                flags: None,
                notices: 1,
            },
        ];
        for c in cases {
            let m = parse(c.raw.clone(), None).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            assert_eq!(m.summary.subject.as_deref(), Some("hello"), "{}", c.name);
            assert_eq!(m.origin.flags.as_deref(), c.flags, "{}", c.name);
            assert_eq!(m.origin.notices.len(), c.notices, "{}: {:?}", c.name, m.origin.notices);
            assert_eq!(m.origin.original.as_deref(), Some(&c.raw[..]), "{}", c.name);
            let body = m.text_body.map(|i| String::from_utf8_lossy(m.parts[i].bytes()).into_owned());
            assert_eq!(body.as_deref().map(str::trim), Some("body text"), "{}", c.name);
        }
    }

    #[test]
    fn flag_bits_become_maildir_letters() {
        let cases: &[(i128, &str)] = &[
            (0, ""),
            (1, "S"),
            (1 | 4, "RS"),
            (1 | 16, "FS"),
            (2 | 64, "DT"),
            (256 | 512 | 1, "PS"),
            (8_623_689_857, "S"),
        ];
        for &(bits, want) in cases {
            assert_eq!(maildir_letters(bits), want, "{bits:#x}");
        }
    }

    #[test]
    fn partial_emlx_without_its_folder_names_the_missing_part() {
        let message = "Subject: p\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhi\n--b\nContent-Type: application/pdf; name=a.pdf\nContent-Disposition: attachment; filename=a.pdf\nContent-Transfer-Encoding: base64\nX-Apple-Content-Length: 10\n\n\n--b--\n";
        let m = parse(emlx(message, None, PLIST), None).expect("parses");
        assert_eq!(m.origin.notices.len(), 1, "{:?}", m.origin.notices);
        assert!(m.origin.notices[0].contains("a.pdf"));
        assert_eq!(m.parts.len(), 3);
    }

    #[test]
    fn stored_attachment_headers_become_base64() {
        let header = b"Content-Type: text/plain;\r\n\tname=a.txt\r\nContent-Transfer-Encoding: 7bit\r\nX-Apple-Content-Length: 3\r\n\r\n";
        let out = String::from_utf8(rewrite_header(header)).expect("ascii");
        assert_eq!(out, "Content-Type: text/plain;\r\n\tname=a.txt\r\nContent-Transfer-Encoding: base64\r\n\r\n");
        let msg = b"H: v\n\n--b\nContent-Type: x/y\n\nbody";
        assert_eq!(header_start(msg, msg.len() - 4), 10);
        assert_eq!(header_start(b"Subject: x\n\nbody", 12), 0);
    }
}

//! Telling a message from other files by its first bytes: an Internet message, an mbox, an Outlook
//! data file, or one of the formats that stand for a message (`.emlx`, a web archive, UTF-16 text),
//! with how much a file's name and place let through (a file given by name is trusted more than one
//! found in a walk).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::walk::Found;

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Message,
    Mbox,
    /// A Dovecot dbox file: one message (sdbox) or many (mdbox), framed.
    Dbox,
    /// An Outlook data file: a tree of folders and items.
    Pst,
    /// An MMDF or Babyl file: messages between separators.
    Framed(super::Framing),
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
    let head = first_line_on(head);
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
        // Looked up until one is found: a header block has tens of fields, the list tens of names.
        if !known {
            known = std::str::from_utf8(name).is_ok_and(|n| MAIL_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(n)));
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
        let ext = extension(path);
        let in_maildir = in_maildir(path);
        match ext {
            _ if path == &*found.root => Claim::Given,
            Some(e) if MAIL_EXTENSIONS.iter().any(|m| m.eq_ignore_ascii_case(e)) => Claim::Given,
            None => Claim::Bare,
            Some(_) if in_maildir => Claim::Bare,
            Some(_) => Claim::Other,
        }
    }
}

/// The extension of a file's name, or of the name beneath a compression suffix (`a.eml.gz`:
/// `eml`; `a.gz`: none).
fn extension(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let beneath = super::name_beneath(name);
    let (stem, ext) = beneath.rsplit_once('.')?;
    (!stem.is_empty()).then_some(ext)
}

/// [`sniff`], as strict as the file's [`Claim`] asks. Files in other formats that hold one message
/// are looked through: a UTF-16 file (by its byte order mark) is sniffed as the text it holds, an
/// Apple Mail `.emlx` after its byte-count line; a binary property list (a Safari `.webarchive`)
/// is a message when the file is claimed as one.
pub fn sniff_claimed(head: &[u8], claim: Claim) -> Kind {
    // An Outlook data file says so in its first ten bytes, whatever its name.
    if crate::ingest::pst::is_data_file(head) {
        return Kind::Pst;
    }
    if super::is_dbox(head) {
        return Kind::Dbox;
    }
    if let Some(framing) = super::framing(head) {
        return Kind::Framed(framing);
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
        // A text file of another name that opens with a sentence starting "From " (a provenance
        // note, a letter): an mbox only when a header field follows its first line, as in every
        // mbox writer's output (a mailing list's `.txt` archive included).
        Kind::Mbox if claim == Claim::Other && !second_line_is_field(head) => Kind::Other,
        kind => kind,
    }
}

/// What follows a byte order mark and the blank lines before the first line of text.
fn first_line_on(head: &[u8]) -> &[u8] {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    &head[head.iter().position(|&c| !matches!(c, b'\r' | b'\n')).unwrap_or(head.len())..]
}

/// Whether the line after the first (past a byte order mark and blank lines) is a header field.
fn second_line_is_field(head: &[u8]) -> bool {
    let text = first_line_on(head);
    text.iter().position(|&c| c == b'\n').is_some_and(|end| starts_with_field(&text[end + 1..]))
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

/// Whether the first line is a header field: a name of printable characters, then a colon (the
/// one test of that shape, for every reader that tells a header from other text).
pub(crate) fn starts_with_field(text: &[u8]) -> bool {
    let line = text.split(|&c| c == b'\n').next().unwrap_or(text);
    match line.iter().position(|&c| c == b':') {
        Some(colon) if colon > 0 => line[..colon].iter().all(|&c| (33..=126).contains(&c)),
        _ => false,
    }
}

/// Whether a file is in a Maildir folder (`cur/` or `new/`, a Maildir++ `.Folder`'s too): there,
/// each file is one message.
fn in_maildir(path: &Path) -> bool {
    path.parent().and_then(Path::file_name).is_some_and(|d| d == "cur" || d == "new")
}

/// What a file found under a PATH is: its first bytes read as strictly as its [`Claim`] asks,
/// except that a file in a Maildir is one message whatever its first line (see [`kind_of`]).
/// A file kept compressed (see [`super::packed`]) is what it inflates to, when that is one message.
pub fn sniff_found(found: &Found) -> std::io::Result<Kind> {
    let head = head(&found.path)?;
    let Some(packing) = super::packing(&head) else { return Ok(kind_of(found, &head)) };
    let inflated = super::unpacked_head(File::open(&found.path)?, packing, HEAD).unwrap_or_default();
    Ok(match kind_of(found, &inflated) {
        Kind::Message => Kind::Message,
        Kind::Mbox => Kind::Mbox,
        Kind::Framed(f) => Kind::Framed(f),
        Kind::Pst => {
            tracing::warn!(path = %found.path.display(), "an Outlook data file kept compressed is not read: uncompress it first");
            Kind::Other
        }
        // Dovecot compresses the messages inside a dbox file, never the file.
        Kind::Dbox => Kind::Other,
        Kind::Other => Kind::Other,
    })
}

/// The first [`HEAD`] bytes of a file, or all of a shorter one.
fn head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD);
    File::open(path)?.take(HEAD as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// How many first bytes of a file tell what it is.
pub const HEAD: usize = 8192;

/// What a file found under a PATH is, from its first bytes (at least [`HEAD`] of them, or all).
/// Some delivery agents write the mbox separator (`From sender date`) at the top of each Maildir
/// file; such a file is not a one-message mbox (which would make a folder of each), unless its
/// name says it is one (`.mbox`, `.mbx`).
pub fn kind_of(found: &Found, bytes: &[u8]) -> Kind {
    let kind = sniff_claimed(&bytes[..bytes.len().min(HEAD)], Claim::of(found));
    let ext = extension(&found.path);
    let named_mbox = ext.is_some_and(|e| e.eq_ignore_ascii_case("mbox") || e.eq_ignore_ascii_case("mbx"));
    let named_one = ext.is_some_and(|e| ONE_MESSAGE.iter().any(|m| m.eq_ignore_ascii_case(e)));
    match kind {
        Kind::Mbox if in_maildir(&found.path) && !named_mbox => Kind::Message,
        Kind::Mbox if named_one => Kind::Message,
        kind => kind,
    }
}

/// Whether a file's name says it holds one message (`.eml`, `.mht`, `.mhtml`): such a file that
/// starts with an mbox separator (as Thunderbird and some tools save one) is that one message,
/// never split at a `From ` line of its body (an attached `git format-patch` file starts with
/// one).
pub fn named_message(name: &str) -> bool {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    ONE_MESSAGE.iter().any(|m| m.eq_ignore_ascii_case(ext))
}

/// The extensions of a file that holds one message.
const ONE_MESSAGE: &[&str] = &["eml", "mht", "mhtml"];

/// Whether `found` is a file of a Maildir's `cur/` or `new/` whose name claims nothing else (an
/// mbox, an Outlook file, a saved page): one message, taken as such without opening it first. The
/// reader of its bytes still tells one that is not a message ([`kind_of`]) and leaves it out.
pub fn maildir_message(found: &Found) -> bool {
    let data_file =
        found.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pst") || e.eq_ignore_ascii_case("ost"));
    in_maildir(&found.path) && Claim::of(found) == Claim::Bare && !data_file
}

/// Reads the first bytes of a file for [`sniff_claimed`].
pub fn sniff_file(path: &Path, claim: Claim) -> std::io::Result<Kind> {
    Ok(sniff_claimed(&head(path)?, claim))
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
            (b"From a@b Sat Jan  3 01:05:34 1996\r\nFrom: a\r\n", Claim::Other, Kind::Mbox),
            (b"From qqilihq/converter @ 3e87600\nand skip-emlx/invalid.emlx. input/\n", Claim::Other, Kind::Other),
            (b"From qqilihq/converter @ 3e87600\nand skip-emlx/invalid.emlx. input/\n", Claim::Bare, Kind::Mbox),
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
}

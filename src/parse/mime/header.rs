//! A message's own header: the fields the index and the page summarise (subject, addresses,
//! date, threading ids, labels, list), each read as first written and cleaned of controls, and
//! every field decoded for the page's header view. 8-bit text without a charset, raw bytes inside
//! encoded words and mailboxes missing their commas are read here as mail clients read them.

use mail_parser::{HeaderName, HeaderValue};

use super::{rebuild, PARSER};
use crate::ids::strip_angles;
use crate::limits::{MAX_ADDRESS_LINE, MAX_SUBJECT};
use crate::model::{HeaderAt, Message, Summary};
use crate::parse::charset;

pub(super) fn summary(msg: &mail_parser::Message<'_>, f: &Firsts<'_, '_>) -> Summary {
    let date = f.date.and_then(|h| h.value.as_text()).and_then(crate::dates::parse_mail_date);
    let whole: &[u8] = &msg.raw_message;
    let address = |h: Option<&mail_parser::Header<'_>>| {
        let h = h?;
        // A field of comments alone names no one.
        address_line(h, whole).map(|line| cut(clean_owned(line), MAX_ADDRESS_LINE)).filter(|line| !line.is_empty())
    };
    let ids = |h: Option<&mail_parser::Header<'_>>| h.map(|h| id_list(&h.value)).unwrap_or_default();
    Summary {
        subject: f.subject.and_then(|h| text_field(h, whole)).map(|s| cut(clean_text(&s), MAX_SUBJECT)),
        from: address(f.from),
        to: address(f.to),
        cc: address(f.cc),
        date: date.map(|(t, zone)| crate::dates::rfc3339(t, zone)),
        timestamp: date.map(|(t, _)| t),
        in_reply_to: ids(f.in_reply_to),
        references: ids(f.references),
        labels: labels(msg),
        list: msg.header_raw("List-Id").and_then(list_id),
    }
}

/// A field's bytes, when they are not UTF-8: 8-bit text no charset labels (`Subject: Fr\xf6sche`,
/// as old Outlook wrote it), read as an unlabelled body is ([`charset::decode_unlabelled`]), where
/// mail-parser replaced each such byte; 8-bit bytes inside an encoded-word are first escaped, to be
/// decoded in the charset the word names ([`crate::parse::words::raw_bytes_escaped`]).
fn eight_bit_field(h: &mail_parser::Header<'_>, whole: &[u8]) -> Option<String> {
    let field = whole.get(h.offset_start as usize..h.offset_end as usize)?;
    if std::str::from_utf8(field).is_ok() {
        return None;
    }
    let escaped = crate::parse::words::raw_bytes_escaped(field);
    Some(charset::decode_unlabelled(escaped.as_deref().unwrap_or(field)))
}

/// A text field (the Subject, one mail-parser gives raw) decoded: its encoded-words, its folding,
/// and 8-bit text without a charset.
fn text_field(h: &mail_parser::Header<'_>, whole: &[u8]) -> Option<String> {
    match eight_bit_field(h, whole) {
        Some(text) => Some(crate::parse::words::decode_header_text(&text)),
        None => h.value.as_text().map(crate::parse::words::decode_header_text),
    }
}

/// An address field as one line ([`crate::parse::addresses::line`]); one holding 8-bit names without a
/// charset is read as text first and its addresses parsed from that; one whose mailboxes lack
/// the comma between them ([`crate::parse::addresses::glued`]) is parsed again with the commas in,
/// and a sender hidden as Mailman hides it ([`crate::parse::addresses::unhidden`]) with its `@`.
fn address_line(h: &mail_parser::Header<'_>, whole: &[u8]) -> Option<String> {
    let text = eight_bit_field(h, whole).map(|text| format!("{text}\r\n").into_bytes());
    let field = match &text {
        Some(text) => text.as_slice(),
        None => whole.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default(),
    };
    // The field's bytes mended, read again as an address field.
    let read_again = |mended: Vec<u8>| {
        let value = mail_parser::parsers::MessageStream::new(&mended).parse_address();
        value.as_address().map(|address| crate::parse::addresses::line(address, &mended))
    };
    let reparsed = text.as_deref().map(|t| mail_parser::parsers::MessageStream::new(t).parse_address());
    let address = reparsed.as_ref().unwrap_or(&h.value).as_address()?;
    if crate::parse::addresses::glued(address) {
        if let Some(line) = crate::parse::addresses::commas_mended(field).and_then(read_again) {
            return Some(line);
        }
    }
    if let Some(line) = crate::parse::addresses::unhidden(field).and_then(read_again) {
        return Some(line);
    }
    Some(crate::parse::addresses::line(address, field))
}

/// The first field of each name the summary reads, found in one pass over the header. A field
/// that may appear once but appears twice counts as it is first written, as most mail programs
/// show it (and as a doubled `Content-Type` does); mail-parser's own getters give the last.
#[derive(Default)]
pub(super) struct Firsts<'a, 'x> {
    pub(super) message_id: Option<&'a mail_parser::Header<'x>>,
    subject: Option<&'a mail_parser::Header<'x>>,
    from: Option<&'a mail_parser::Header<'x>>,
    to: Option<&'a mail_parser::Header<'x>>,
    cc: Option<&'a mail_parser::Header<'x>>,
    date: Option<&'a mail_parser::Header<'x>>,
    in_reply_to: Option<&'a mail_parser::Header<'x>>,
    references: Option<&'a mail_parser::Header<'x>>,
}

impl<'a, 'x> Firsts<'a, 'x> {
    pub(super) fn of(msg: &'a mail_parser::Message<'x>) -> Self {
        let mut f = Firsts::default();
        for h in msg.headers() {
            let slot = match h.name {
                HeaderName::MessageId => &mut f.message_id,
                HeaderName::Subject => &mut f.subject,
                HeaderName::From => &mut f.from,
                HeaderName::To => &mut f.to,
                HeaderName::Cc => &mut f.cc,
                HeaderName::Date => &mut f.date,
                HeaderName::InReplyTo => &mut f.in_reply_to,
                HeaderName::References => &mut f.references,
                _ => continue,
            };
            slot.get_or_insert(h);
        }
        f
    }
}

/// `s` within `max` bytes: cut at a character's end, with `…` after it.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max - '…'.len_utf8();
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// The labels of the message's header fields, read from each field's own bytes: mail-parser
/// gives a field it does not know (`X-Gmail-Labels`) with its encoded-words undecoded, and the
/// list it makes of `Keywords` has lost the quoting (and `as_text` keeps only its last item).
fn labels(msg: &mail_parser::Message<'_>) -> Vec<String> {
    let whole: &[u8] = &msg.raw_message;
    let fields = msg
        .headers()
        .iter()
        .map(|h| (h.name(), whole.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default()));
    let mut out = crate::parse::labels::fields_labels(fields);
    crate::parse::labels::tidy_labels(&mut out);
    out
}

/// A List-Id's identifier (RFC 2919: `Name <list.example.org>`); the whole value when it has none,
/// its encoded-words decoded (the identifier in brackets is never encoded, a name may be).
fn list_id(raw: &str) -> Option<String> {
    let id = match (raw.rfind('<'), raw.rfind('>')) {
        (Some(a), Some(b)) if a < b => clean_text(&raw[a + 1..b]),
        _ => clean_text(&crate::parse::words::decode_header_text(raw)),
    };
    (!id.is_empty() && id.len() <= 255).then_some(id)
}

fn id_list(v: &HeaderValue<'_>) -> Vec<String> {
    let items: Vec<&str> = match v {
        HeaderValue::Text(t) => vec![t.as_ref()],
        HeaderValue::TextList(l) => l.iter().map(|s| s.as_ref()).collect(),
        _ => Vec::new(),
    };
    items.into_iter().map(|s| strip_angles(s).to_string()).filter(|s| !s.is_empty()).collect()
}

/// Control characters (CR and LF above all) never survive into a header value we show or send:
/// each becomes a space, and white space at either end goes.
pub(super) fn clean_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_clean(&mut out, s);
    trimmed(out)
}

/// [`clean_text`] for a value already owned: most are clean, and are kept as they are.
pub(super) fn clean_owned(s: String) -> String {
    if has_control(&s) {
        clean_text(&s)
    } else {
        trimmed(s)
    }
}

/// [`clean_text`] of bytes read as UTF-8 (each invalid sequence a U+FFFD, as
/// `String::from_utf8_lossy` reads them), in one pass: the value of a header the parser keeps raw
/// (`Received`, signatures), most of them folded over several lines.
pub(super) fn clean_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    // Nearly every value is valid UTF-8, which one validation of the whole says at once.
    if let Ok(s) = std::str::from_utf8(bytes) {
        push_clean(&mut out, s);
        return trimmed(out);
    }
    for chunk in bytes.utf8_chunks() {
        push_clean(&mut out, chunk.valid());
        if !chunk.invalid().is_empty() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    trimmed(out)
}

/// Appends `s` with each control character as a space.
fn push_clean(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some((here, width)) = next_control(bytes, from) {
        out.push_str(s.get(from..here).unwrap_or_default());
        out.push(' ');
        from = here + width;
    }
    out.push_str(s.get(from..).unwrap_or_default());
}

/// `s` without white space at either end, in place.
fn trimmed(mut s: String) -> String {
    let end = s.trim_end().len();
    s.truncate(end);
    let start = s.len() - s.trim_start().len();
    s.drain(..start);
    s
}

/// The length in bytes of the control character (`char::is_control`: C0, DEL, and C1, which is
/// U+0080..U+009F, 0xC2 0x80..0x9F in UTF-8) starting at `at`, or 0 when there is none there. A
/// byte test: header values are long (signatures, folded lists) and nearly all of their
/// characters are ASCII.
fn control_width(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(&b) if b < 0x20 || b == 0x7F => 1,
        Some(0xC2) if matches!(bytes.get(at + 1), Some(0x80..=0x9F)) => 2,
        _ => 0,
    }
}

/// A byte that may begin a control character: C0, DEL, or 0xC2 (which begins C1 and others).
fn maybe_control(b: u8) -> bool {
    b < 0x20 || b == 0x7F || b == 0xC2
}

/// Where the first byte that may begin a control character is. Header values are long and such
/// bytes rare: each 16 bytes are tested at once, without a branch per byte (which the compiler
/// makes vector instructions of), and only a block that has one is searched.
fn first_maybe_control(bytes: &[u8]) -> Option<usize> {
    const BLOCK: usize = 16;
    let mut blocks = bytes.chunks_exact(BLOCK);
    let mut at = 0;
    for block in blocks.by_ref() {
        if block.iter().fold(false, |any, &b| any | maybe_control(b)) {
            return block.iter().position(|&b| maybe_control(b)).map(|i| at + i);
        }
        at += BLOCK;
    }
    blocks.remainder().iter().position(|&b| maybe_control(b)).map(|i| at + i)
}

/// The first control character (as [`control_width`] tells them) at or after `at`: where it
/// starts and its length in bytes.
fn next_control(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    loop {
        let here = at + bytes.get(at..).and_then(first_maybe_control)?;
        match control_width(bytes, here) {
            0 => at = here + 1,
            width => return Some((here, width)),
        }
    }
}

/// Whether `s` holds a C0 or C1 control or DEL.
fn has_control(s: &str) -> bool {
    next_control(s.as_bytes(), 0).is_some()
}

/// Every header field of a message in order, RFC 2047 decoded and unfolded: its header read
/// again from its bytes, as parsing read it (see [`HeaderAt`]).
pub(in crate::parse) fn header_fields(msg: &Message) -> Vec<(String, String)> {
    let raw = &msg.raw[..];
    match &msg.header {
        HeaderAt::From(at) => raw.get(*at..).and_then(|h| PARSER.parse_headers(h)).map(|m| headers(&m)),
        HeaderAt::Within(range) => raw.get(range.clone()).map(|h| headers(&rebuild::parse_header(h))),
    }
    .unwrap_or_default()
}

fn headers(msg: &mail_parser::Message<'_>) -> Vec<(String, String)> {
    let whole: &[u8] = &msg.raw_message;
    msg.headers()
        .iter()
        .map(|h| {
            // Each header's own bytes (the parser's raw-header list skips those that are not
            // UTF-8, so it cannot be paired with this one by position).
            let value = match h.value() {
                // Fields given raw (the Subject, those mail-parser does not know) are decoded
                // here; in the others nothing is left to decode.
                HeaderValue::Text(_) => clean_text(&text_field(h, whole).unwrap_or_default()),
                HeaderValue::TextList(l) => clean_owned(l.join(", ")),
                HeaderValue::Address(_) => clean_owned(address_line(h, whole).unwrap_or_default()),
                HeaderValue::DateTime(d) => d.to_rfc3339(),
                _ => clean_bytes(whole.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default()),
            };
            (clean_text(h.name()), value)
        })
        .collect()
}

//! Internet messages (RFC 5322, MIME: RFC 2045–2049) through mail-parser, which decodes transfer
//! encodings and charsets; we copy what we need into our own model. The only module that knows
//! mail-parser.
//!
//! mail-parser reads well-formed mail as the RFCs say. Where its reading of a message's structure
//! is in doubt (a part it could not end, a delimiter it found in the middle of a line or as the
//! start of a longer boundary, a part lost after an enclosed message, a header line it skipped:
//! [`misread`] tells them by the traces they leave), the structure is read again by RFC 2046
//! itself ([`rebuild`], with [`super::boundary`]), as Python's `email` package and mail clients
//! read it, and mail-parser reads each part's header.
//!
//! This file walks the tree and decodes bodies; [`describe`] reads a part's header into a
//! [`crate::model::Part`], and [`header`] the message's own header into its summary.

mod describe;
mod header;
mod misread;
mod rebuild;

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use mail_parser::{Encoding, HeaderName, MessageParser, MimeHeaders, PartType};

use super::{boundary, charset, mhtml, secure, tnef, transfer, MAX_DEPTH};
use crate::error::Error;
use crate::ids::{derived_message_id, strip_angles};
use crate::limits::MAX_PARTS;
use crate::model::{Body, HeaderAt, Message, PartIdx};
use describe::{described, filename_again, has_content_type, is_enclosed_type};
pub(in crate::parse) use header::header_fields;
use header::{summary, Firsts};

/// mail-parser's own choice of parser for each header, except `Received`: its structured form is
/// never used here (the header is shown as written), and parsing it was a noticeable share of
/// indexing time on mail that passed through several hops. Naming one header's parser replaces
/// the built-in table, so the rest of that table is restated.
static PARSER: LazyLock<MessageParser> = LazyLock::new(|| {
    use HeaderName as H;
    let mut p = MessageParser::new().with_mime_headers().with_date_headers().with_address_headers().with_message_ids();
    for h in [H::ListArchive, H::ListHelp, H::ListId, H::ListOwner, H::ListPost, H::ListSubscribe, H::ListUnsubscribe] {
        p = p.header_address(h);
    }
    p.header_raw(H::Subject)
        .header_text(H::Comments)
        .header_id(H::ReturnPath)
        .header_comma_separated(H::Keywords)
        .header_comma_separated(H::ContentLanguage)
        .header_raw(H::Received)
        // Read by `dates::parse_mail_date` from the value alone: mail-parser, reading a zone of
        // one or two letters in a message, takes the next field's first letter with it.
        .header_raw(H::Date)
        .header_raw(H::ResentDate)
});

/// One message from its bytes; `Unparseable` when mail-parser finds no message at all.
pub(super) fn parse(raw: Arc<[u8]>) -> Result<Message, Error> {
    let mut parts_left = MAX_PARTS;
    read(Bytes::from_owner(raw), 0, &mut parts_left, 0).ok_or(Error::Unparseable)
}

/// A MIME entity found inside a signed or encrypted layer (`layers` deep), read as a message of
/// its own, within what is left of the enclosing message's part budget.
pub(super) fn parse_entity(raw: Bytes, depth: usize, parts_left: &mut usize, layers: usize) -> Option<Message> {
    read(raw, depth, parts_left, layers)
}

/// A message, top-level or enclosed `depth` deep, from its bytes; `None` when they hold none.
/// `parts_left` is what remains of the part budget shared with the messages around it; `layers`
/// counts the signed and encrypted layers it lies inside.
fn read(raw: Bytes, depth: usize, parts_left: &mut usize, layers: usize) -> Option<Message> {
    // Lines of white space before the header are no part of it (mail-parser would end the header
    // at the first and read the whole message as its body).
    let skip = blank_lead(&raw);
    // An enclosed message that does not begin with a header has none: it is all body, as Python's
    // `email` reads it (mail-parser would skip its lines until one looked like a field).
    if depth > 0 && !boundary::opens_header(&raw[skip..]) {
        return Some(rebuild::message(raw, skip, depth, parts_left, layers));
    }
    // A message mail-parser finds nothing in (a file of text with no header) is its text, as
    // Python's `email` and MIME4J read it; only no bytes at all is no message.
    let Some(parsed) = PARSER.parse(&raw[skip..]).filter(|p| !p.parts.is_empty()) else {
        return (depth > 0 || skip < raw.len()).then(|| rebuild::message(raw.clone(), skip, depth, parts_left, layers));
    };
    if misread::misread(&parsed) {
        return Some(rebuild::message(raw.clone(), skip, depth, parts_left, layers));
    }
    // `skip` is below the message's length, which fits an offset.
    Some(convert(&parsed, raw.clone(), HeaderAt::From(skip), skip as isize, depth, parts_left, layers))
}

/// The length of the lines of spaces and tabs that open `raw`.
fn blank_lead(raw: &[u8]) -> usize {
    let mut at = 0;
    loop {
        let spaces = raw[at..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        let rest = &raw[at + spaces..];
        let eol = if rest.starts_with(b"\r\n") { 2 } else { usize::from(rest.starts_with(b"\n")) };
        if spaces == 0 || eol == 0 {
            return at;
        }
        at += spaces + eol;
    }
}

/// The bytes of an enclosed message: a view into the enclosing message's buffer when they lie in
/// it (a message nested 48 deep would otherwise hold 48 copies of its innermost body), a copy only
/// when the parser decoded them (a transfer-encoded `message/rfc822`, smaller at every level).
fn enclosed_bytes(outer: &Bytes, inner: &[u8]) -> Bytes {
    let (start, end) = (outer.as_ptr() as usize, outer.as_ptr() as usize + outer.len());
    let (at, len) = (inner.as_ptr() as usize, inner.len());
    if at >= start && at + len <= end {
        outer.slice(at - start..at - start + len)
    } else {
        Bytes::copy_from_slice(inner)
    }
}

/// Our model of a parsed message; `raw` is the message's bytes, and an offset of mail-parser's is
/// at `offset + delta` in them (mail-parser numbers the parts of an enclosed message from the start
/// of the outermost message it parsed). `parts_left` is what remains of the part budget shared
/// with the messages it encloses; `layers` counts the signed and encrypted layers it lies inside.
fn convert(
    msg: &mail_parser::Message<'_>,
    raw: Bytes,
    header: HeaderAt,
    delta: isize,
    depth: usize,
    parts_left: &mut usize,
    layers: usize,
) -> Message {
    let mut out = new_message(msg, raw, header);
    let mut walk = Walk { depth, delta, layers, seen: vec![false; msg.parts.len()], parts_left };
    add_part(msg, 0, None, String::new(), &mut walk, &mut out);
    finish(out, &mut walk)
}

/// A message with no part yet: its identity and what its header (`head`, read from `header`)
/// says.
fn new_message(head: &mail_parser::Message<'_>, raw: Bytes, header: HeaderAt) -> Message {
    let firsts = Firsts::of(head);
    let message_id = firsts
        .message_id
        .and_then(|h| h.value.as_text())
        .map(|m| strip_angles(m).to_string())
        .filter(|m| !m.is_empty());
    let id = message_id.clone().unwrap_or_else(|| derived_message_id(&raw));
    Message {
        message_id,
        id,
        summary: summary(head, &firsts),
        header,
        parts: Vec::new(),
        html_body: None,
        text_body: None,
        image_body: None,
        more_bodies: Vec::new(),
        truncated: false,
        too_deep: false,
        raw,
        origin: Default::default(),
        lookups: Default::default(),
        seals: Vec::new(),
    }
}

/// What follows the parts: a winmail.dat's contents, signed layers unwrapped, resolved
/// locations, the body shown.
fn finish(mut out: Message, walk: &mut Walk<'_>) -> Message {
    // What a winmail.dat hides becomes parts too; its body is taken only when the message has none
    // of that kind.
    let (tnef_html, tnef_text) = tnef::expand(&mut out, walk.parts_left);
    // What is only signed is unwrapped into parts; what is encrypted is noted for the view stage.
    secure::unwrap(&mut out, walk.depth, walk.parts_left, walk.layers);
    choose_bodies(&mut out, tnef_html, tnef_text);
    out
}

/// Resolves the parts' locations and chooses the bodies shown (the HTML and text bodies, else an
/// image), with those found in a winmail.dat as the fallback. Run again when parts are grafted
/// in later (a decrypted layer).
pub(super) fn choose_bodies(out: &mut Message, tnef_html: Option<PartIdx>, tnef_text: Option<PartIdx>) {
    mhtml::resolve_locations(out);
    let (html, text) = mhtml::select_body(out, 0, 0);
    out.html_body = html.or(tnef_html);
    let blank = |t: PartIdx| out.parts[t].bytes().iter().all(u8::is_ascii_whitespace);
    out.text_body = text.filter(|&t| !blank(t)).or(tnef_text).or(text);
    out.more_bodies = mhtml::select_more(out, out.html_body, out.text_body);
    out.image_body = None;
    if out.html_body.is_none() && out.text_body.is_none() {
        out.image_body = mhtml::select_image(out, 0, 0);
    }
    mhtml::adopt_page_base(out);
}

/// Where a walk over one message's parts stands.
struct Walk<'a> {
    /// How deep the message is enclosed.
    depth: usize,
    /// What turns one of mail-parser's offsets into one in the message's bytes (see [`convert`]).
    delta: isize,
    /// Signed and encrypted layers the message lies inside.
    layers: usize,
    /// mail-parser's parts already added: a part listed twice is taken once.
    seen: Vec<bool>,
    /// What is left of the part budget shared with enclosing and enclosed messages.
    parts_left: &'a mut usize,
}

impl Walk<'_> {
    /// One of mail-parser's offsets as one in the message's `len` bytes.
    fn at(&self, offset: u32, len: usize) -> usize {
        usize::try_from(offset as isize + self.delta).unwrap_or(0).min(len)
    }

    /// Takes one part from the budget; false when it is spent.
    fn take_part(&mut self, out: &mut Message) -> bool {
        if *self.parts_left == 0 {
            out.truncated = true;
            return false;
        }
        *self.parts_left -= 1;
        true
    }
}

fn add_part(
    msg: &mail_parser::Message<'_>,
    pid: usize,
    parent: Option<PartIdx>,
    section: String,
    walk: &mut Walk<'_>,
    out: &mut Message,
) {
    let Some(src) = msg.parts.get(pid) else { return };
    if walk.seen.get(pid).copied().unwrap_or(true) {
        return;
    }
    walk.seen[pid] = true;
    if !walk.take_part(out) {
        return;
    }
    let depth = walk.depth;
    let begin = walk.at(src.offset_body, out.raw.len());
    let end = walk.at(src.offset_end, out.raw.len()).max(begin);
    let mut part = described(src, Some(&src.body), begin..end, out);
    if part.filename.as_deref().is_some_and(|f| f.contains('\u{FFFD}')) {
        if let Some(name) = filename_again(src, walk, &out.raw) {
            part.filename = Some(name);
        }
    }
    part.section = if section.is_empty() {
        // The root: "1" for a single-part message, "0" for the whole of a multipart body.
        if matches!(src.body, PartType::Multipart(_)) {
            "0".into()
        } else {
            "1".into()
        }
    } else {
        section
    };
    part.parent = parent;
    let cte = src.content_transfer_encoding();
    let raw_body = &out.raw[begin..end];
    part.body = match &src.body {
        // What an external body carries is a phantom, not its data: the part holds nothing.
        _ if part.external.is_some() => Body::Binary(bytes::Bytes::new()),
        // Bodies mail-parser leaves encoded (uuencode) or decodes otherwise than the RFC's robust
        // decoder would (see `transfer::parser_misdecodes`) are decoded here.
        PartType::Text(_) | PartType::Html(_) | PartType::Binary(_) | PartType::InlineBinary(_)
            if transfer::is_uuencode(cte)
                || (matches!(src.encoding, Encoding::Base64 | Encoding::QuotedPrintable)
                    && transfer::parser_misdecodes(raw_body, cte)) =>
        {
            let decoded = transfer::decode(raw_body, cte);
            part.damaged |= !decoded.clean;
            leaf_body(&part.content_type, part.declared_type, part.charset.as_deref(), &decoded.bytes)
        }
        PartType::Text(t) if !part.declared_type && t.contains('\u{fffd}') && has_content_type(src) => {
            // A Content-Type no one can read, on a body that is not text: its bytes are kept as
            // they are rather than turned into replacement characters.
            let bytes = transfer::decoded(raw_body, cte);
            match std::str::from_utf8(&bytes) {
                Ok(text) => Body::Text(text.to_string()),
                Err(_) => Body::Binary(Bytes::copy_from_slice(&bytes)),
            }
        }
        PartType::Text(t) | PartType::Html(t)
            if part.charset.is_none() && (undeclared_charset_matters(&part.content_type) || t.contains('\u{fffd}')) =>
        {
            // mail-parser reads a text part without a charset as UTF-8, and replaces what is not;
            // a saved page says what it is in its own bytes, and other text is read as mail
            // clients read it (see `charset::decode_unlabelled`).
            let bytes = transfer::decoded(raw_body, cte);
            Body::Text(text(&part.content_type, None, &bytes))
        }
        PartType::Text(t) | PartType::Html(t)
            if !t.is_ascii() && part.charset.as_deref().is_some_and(charset::is_ascii_label) =>
        {
            // Labelled US-ASCII, yet 8-bit: the label is wrong (see `charset::decode_mislabelled_ascii`).
            Body::Text(charset::decode_mislabelled_ascii(&transfer::decoded(raw_body, cte)))
        }
        PartType::Text(t) | PartType::Html(t) => Body::Text(t.to_string()),
        // Text by RFC 2045 §5.2 (see `unreadable_type`), which mail-parser read as data: text when
        // a charset is named or the bytes are UTF-8; else the bytes are kept, as for any
        // Content-Type no one can read on a body that is not text.
        PartType::Binary(b) | PartType::InlineBinary(b)
            if part.content_type == "text/plain" && (part.charset.is_some() || std::str::from_utf8(b).is_ok()) =>
        {
            Body::Text(text(&part.content_type, part.charset.as_deref(), b))
        }
        // XHTML is a document of text as HTML is, though not `text/*`: mail-parser reads it as data.
        PartType::Binary(b) | PartType::InlineBinary(b) if part.content_type == XHTML => {
            Body::Text(text(&part.content_type, part.charset.as_deref(), b))
        }
        PartType::Binary(b) | PartType::InlineBinary(b)
            if is_enclosed_type(&part.content_type) && depth < MAX_DEPTH =>
        {
            // A type mail-parser does not open (`message/news`) that is a message all the same.
            match read(enclosed_bytes(&out.raw, b), depth + 1, walk.parts_left, walk.layers) {
                Some(inner) => {
                    out.cuts_of(&inner);
                    Body::Message(Box::new(inner))
                }
                None => Body::Binary(bytes::Bytes::copy_from_slice(b)),
            }
        }
        PartType::Binary(b) | PartType::InlineBinary(b) => {
            out.too_deep |= is_enclosed_type(&part.content_type);
            Body::Binary(bytes::Bytes::copy_from_slice(b))
        }
        PartType::Multipart(_) => Body::Multipart,
        PartType::Message(inner) if depth < MAX_DEPTH && !inner.parts.is_empty() => {
            let inner_raw = enclosed_bytes(&out.raw, inner.raw_message());
            // The enclosed message's bytes start at its header, which is where mail-parser's
            // offsets for it are counted from.
            let delta = -(inner.parts[0].offset_header as isize);
            let inner = convert(inner, inner_raw, HeaderAt::From(0), delta, depth + 1, walk.parts_left, walk.layers);
            out.cuts_of(&inner);
            Body::Message(Box::new(inner))
        }
        PartType::Message(inner) => {
            out.too_deep |= depth >= MAX_DEPTH;
            Body::Binary(bytes::Bytes::copy_from_slice(inner.raw_message()))
        }
    };
    let section = part.section.clone();
    let idx = out.parts.len();
    out.parts.push(part);
    if let Some(p) = parent {
        out.parts[p].children.push(idx);
    }
    if let PartType::Multipart(children) = &src.body {
        if depth + section.matches('.').count() >= MAX_DEPTH {
            out.too_deep |= !children.is_empty();
            return;
        }
        for (n, &child) in children.iter().enumerate() {
            let child_section = if section == "0" { format!("{}", n + 1) } else { format!("{section}.{}", n + 1) };
            add_part(msg, child as usize, Some(idx), child_section, walk, out);
        }
    }
}

/// XHTML's type: a document shown as HTML is, and read as text.
const XHTML: &str = "application/xhtml+xml";

/// The body of a leaf from its decoded bytes: text for the types mail-parser reads as text (every
/// `text/*`, and a part with no type at all) and for XHTML, decoded by its charset; the bytes for
/// the rest.
fn leaf_body(content_type: &str, declared: bool, charset: Option<&str>, bytes: &[u8]) -> Body {
    if content_type.starts_with("text/") || content_type == XHTML || !declared {
        Body::Text(text(content_type, charset, bytes))
    } else {
        Body::Binary(Bytes::copy_from_slice(bytes))
    }
}

/// A text part's decoded bytes as text: by its charset as mail-parser decodes every text part
/// (its table of charsets), else, when none is declared, as a browser reads a page or a
/// stylesheet, or as mail clients read unlabelled text; a charset no table knows reads as UTF-8.
fn text(content_type: &str, charset: Option<&str>, bytes: &[u8]) -> String {
    match charset {
        Some(label) if charset::is_ascii_label(label) && !bytes.is_ascii() => charset::decode_mislabelled_ascii(bytes),
        Some(label) => match mail_parser::decoders::charsets::map::charset_decoder(label.as_bytes()) {
            Some(decode) => decode(bytes),
            None => String::from_utf8_lossy(bytes).into_owned(),
        },
        None => match charset::Document::of_type(content_type) {
            Some(document) => charset::decode_document(document, bytes),
            None => charset::decode_unlabelled(bytes),
        },
    }
}

/// Documents whose bytes declare their own encoding (HTML, XHTML, XML, CSS), when their MIME type
/// does not.
fn undeclared_charset_matters(content_type: &str) -> bool {
    charset::Document::of_type(content_type).is_some()
}

#[cfg(test)]
mod tests;

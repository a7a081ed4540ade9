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

mod misread;
mod rebuild;

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use mail_parser::{ContentType, Encoding, HeaderName, HeaderValue, MessageParser, MimeHeaders, PartType};

use super::{boundary, charset, external, mhtml, secure, tnef, transfer, MAX_DEPTH};
use crate::error::Error;
use crate::ids::{derived_message_id, strip_angles};
use crate::limits::{MAX_ADDRESS_LINE, MAX_PARTS, MAX_SUBJECT};
use crate::model::{Body, External, HeaderAt, Message, Part, PartIdx, Summary};
use crate::uri;

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

/// A file name mail-parser read with replacement characters, read again from the part's
/// Content-Disposition (`filename`) or Content-Type (`name`) field: continued over RFC 2231
/// segments (mail-parser decoded each segment alone), or written in raw 8-bit bytes without a
/// charset (mail-parser read them as UTF-8).
fn filename_again(src: &mail_parser::MessagePart<'_>, walk: &Walk<'_>, raw: &[u8]) -> Option<String> {
    [(HeaderName::ContentDisposition, "filename"), (HeaderName::ContentType, "name")].into_iter().find_map(
        |(h, name)| {
            let h = src.headers.iter().find(|f| f.name == h)?;
            let field = raw.get(walk.at(h.offset_start, raw.len())..walk.at(h.offset_end, raw.len()))?;
            let continued = super::params::continued(&String::from_utf8_lossy(field), name);
            let eight_bit = || std::str::from_utf8(field).is_err().then(|| super::params::unlabelled(field, name));
            continued.or_else(|| eight_bit().flatten()).map(|f| f.trim().to_string())
        },
    )
}

/// A part as its header describes it (type, parameters, identifiers, name, disposition, and for
/// an external body where its data lives), with no place in the tree yet and no body. `body` is
/// what mail-parser made of the body, if it read it; `range` is where the body lies in `out.raw`.
fn described(
    src: &mail_parser::MessagePart<'_>,
    body: Option<&PartType<'_>>,
    range: std::ops::Range<usize>,
    out: &Message,
) -> Part {
    let ct = first_content_type(src);
    let (content_type, declared) = match ct {
        Some(ct) => {
            let main = ct.ctype().trim();
            let sub = ct.subtype().unwrap_or("").trim();
            if is_token(main) && is_token(sub) {
                let mut content_type = String::with_capacity(main.len() + 1 + sub.len());
                content_type.push_str(main);
                content_type.push('/');
                content_type.push_str(sub);
                content_type.make_ascii_lowercase();
                (content_type, true)
            } else {
                (unreadable_type(src, main).to_string(), true)
            }
        }
        None => match body {
            Some(PartType::Message(_)) => ("message/rfc822".to_string(), false),
            Some(PartType::Multipart(_)) => ("multipart/mixed".to_string(), false),
            Some(PartType::Html(_)) => ("text/html".to_string(), false),
            _ => ("text/plain".to_string(), false),
        },
    };
    let charset = ct.and_then(|c| c.attribute("charset")).map(|s| s.trim().to_string());
    let start = ct.and_then(|c| c.attribute("start")).map(|s| strip_angles(s).to_string());
    let params: Vec<(String, String)> = ct
        .and_then(|c| c.attributes())
        .unwrap_or(&[])
        .iter()
        .map(|a| (a.name.to_ascii_lowercase(), a.value.trim().to_string()))
        .collect();
    let is_external = content_type == "message/external-body";
    let raw_body = out.raw.get(range.clone()).unwrap_or(&[]);
    let external = is_external.then(|| external_body(src, body, &params, raw_body));
    Part {
        section: String::new(),
        parent: None,
        children: Vec::new(),
        content_type,
        declared_type: declared,
        charset,
        start,
        params,
        content_id: src.content_id().map(|c| strip_angles(c).to_string()).filter(|c| !c.is_empty()),
        content_location: src.content_location().map(uri::clean_reference).filter(|c| !c.is_empty()),
        location: None,
        base: String::new(),
        related_scope: None,
        // An external body's `name` parameter says where the data is, not what a file here is called.
        filename: if is_external { disposition_filename(src) } else { src.attachment_name() }
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty()),
        disposition: src.content_disposition().map(|d| d.ctype().trim().to_ascii_lowercase()),
        body: Body::Multipart,
        raw_range: range,
        transfer_encoding: transfer::named(src.content_transfer_encoding()),
        damaged: src.is_encoding_problem,
        external,
    }
}

/// Whether `s` is an RFC 2045 token, as each half of a media type must be: printable ASCII but
/// its specials (`()<>@,;:\"/[]?=`).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_graphic()
                && !matches!(
                    b,
                    b'(' | b')'
                        | b'<'
                        | b'>'
                        | b'@'
                        | b','
                        | b';'
                        | b':'
                        | b'\\'
                        | b'"'
                        | b'/'
                        | b'['
                        | b']'
                        | b'?'
                        | b'='
                )
        })
}

/// The type of a part whose Content-Type names none that can be read (no subtype: `X-ZIP`,
/// `application-x-gzip`; not a type at all: `<html>`), `main` being what it names first. RFC 2045
/// §5.2 makes such a part `text/plain`; one sent as a file (it has a file name, or is an
/// attachment, as those in the mail seen are: `a.zip`, `document.xml.gz`) is data of a type no
/// one has named, `application/octet-stream`, whose name gives what is served. A multipart stays
/// one, of parts in order (RFC 2046 §5.1.3). Never a type made up of what was written, which
/// would be served as one.
fn unreadable_type(src: &mail_parser::MessagePart<'_>, main: &str) -> &'static str {
    let attachment = || src.content_disposition().is_some_and(|d| d.ctype().trim().eq_ignore_ascii_case("attachment"));
    if main.eq_ignore_ascii_case("multipart") {
        "multipart/mixed"
    } else if src.attachment_name().is_some() || attachment() {
        "application/octet-stream"
    } else {
        "text/plain"
    }
}

/// The first Content-Type of a part that says it twice (mail-parser's accessor gives the last),
/// as Python's `email` and mail clients read it.
fn first_content_type<'a>(src: &'a mail_parser::MessagePart<'_>) -> Option<&'a ContentType<'a>> {
    src.headers.iter().find(|h| h.name == HeaderName::ContentType).and_then(|h| h.value.as_content_type())
}

/// The first Content-Transfer-Encoding, likewise.
fn first_transfer_encoding<'a>(src: &'a mail_parser::MessagePart<'_>) -> Option<&'a str> {
    src.headers.iter().find(|h| h.name == HeaderName::ContentTransferEncoding).and_then(|h| h.value.as_text())
}

/// Whether a part has a Content-Type header, readable or not.
fn has_content_type(src: &mail_parser::MessagePart<'_>) -> bool {
    src.headers.iter().any(|h| h.name == HeaderName::ContentType)
}

/// Types that are a message though mail-parser does not open them: `message/news` (RFC 5537 made
/// it `message/rfc822`, which is what it always held).
fn is_enclosed_type(content_type: &str) -> bool {
    content_type == "message/news"
}

/// The body of a leaf from its decoded bytes: text for the types mail-parser reads as text (every
/// `text/*`, and a part with no type at all), decoded by its charset; the bytes for the rest.
fn leaf_body(content_type: &str, declared: bool, charset: Option<&str>, bytes: &[u8]) -> Body {
    if content_type.starts_with("text/") || !declared {
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
        None if content_type == "text/css" => charset::decode_css(bytes),
        None if undeclared_charset_matters(content_type) => charset::decode_html(bytes),
        None => charset::decode_unlabelled(bytes),
    }
}

/// Documents whose bytes declare their own encoding, when their MIME type does not.
fn undeclared_charset_matters(content_type: &str) -> bool {
    matches!(content_type, "text/html" | "application/xhtml+xml" | "text/css")
}

fn disposition_filename<'a>(src: &'a mail_parser::MessagePart<'_>) -> Option<&'a str> {
    src.content_disposition().and_then(|d| d.attribute("filename"))
}

/// A `message/external-body` part described: its parameters, and its phantom header read with the
/// same header parser as everything else. `raw_body` is the body as it sits in the message (an
/// external body is 7bit, RFC 2046 §5.2.3); a decoded body is preferred when the parser made one.
fn external_body(
    src: &mail_parser::MessagePart<'_>,
    body: Option<&PartType<'_>>,
    params: &[(String, String)],
    raw_body: &[u8],
) -> External {
    let body: &[u8] = match body {
        Some(PartType::Text(t) | PartType::Html(t)) => t.as_bytes(),
        Some(PartType::Binary(b) | PartType::InlineBinary(b)) => b,
        Some(PartType::Message(inner)) => inner.raw_message(),
        Some(PartType::Multipart(_)) | None => raw_body,
    };
    let (header, after) = external::split_phantom(body);
    let phantom = if header.is_empty() {
        external::Phantom::default()
    } else {
        PARSER
            .parse_headers(header)
            .map(|h| external::Phantom {
                content_type: h
                    .content_type()
                    .map(|ct| (ct.ctype().to_string(), ct.subtype().unwrap_or("").to_string())),
                content_id: h.content_id().map(str::to_string),
                description: h.content_description().map(clean_text),
            })
            .unwrap_or_default()
    };
    let expires_at = params
        .iter()
        .find(|(n, _)| n == "expiration")
        .and_then(|(_, v)| mail_parser::DateTime::parse_rfc822(v))
        .filter(|d| d.is_valid())
        .map(|d| d.to_timestamp());
    let description = src.content_description().map(clean_text);
    external::describe(params, phantom, after, description.as_deref(), expires_at)
}

fn summary(msg: &mail_parser::Message<'_>, f: &Firsts<'_, '_>) -> Summary {
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
/// decoded in the charset the word names ([`super::words::raw_bytes_escaped`]).
fn eight_bit_field(h: &mail_parser::Header<'_>, whole: &[u8]) -> Option<String> {
    let field = whole.get(h.offset_start as usize..h.offset_end as usize)?;
    if std::str::from_utf8(field).is_ok() {
        return None;
    }
    let escaped = super::words::raw_bytes_escaped(field);
    Some(charset::decode_unlabelled(escaped.as_deref().unwrap_or(field)))
}

/// A text field (the Subject, one mail-parser gives raw) decoded: its encoded-words, its folding,
/// and 8-bit text without a charset.
fn text_field(h: &mail_parser::Header<'_>, whole: &[u8]) -> Option<String> {
    match eight_bit_field(h, whole) {
        Some(text) => Some(super::words::decode_header_text(&text)),
        None => h.value.as_text().map(super::words::decode_header_text),
    }
}

/// An address field as one line ([`super::addresses::line`]); one holding 8-bit names without a
/// charset is read as text first and its addresses parsed from that, and one whose mailboxes lack
/// the comma between them ([`super::addresses::glued`]) is parsed again with the commas in.
fn address_line(h: &mail_parser::Header<'_>, whole: &[u8]) -> Option<String> {
    let text = eight_bit_field(h, whole).map(|text| format!("{text}\r\n").into_bytes());
    let field = match &text {
        Some(text) => text.as_slice(),
        None => whole.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default(),
    };
    let reparsed = text.as_deref().map(|t| mail_parser::parsers::MessageStream::new(t).parse_address());
    let address = reparsed.as_ref().unwrap_or(&h.value).as_address()?;
    if super::addresses::glued(address) {
        if let Some(mended) = super::addresses::commas_mended(field) {
            let value = mail_parser::parsers::MessageStream::new(&mended).parse_address();
            if let Some(address) = value.as_address() {
                return Some(super::addresses::line(address, &mended));
            }
        }
    }
    Some(super::addresses::line(address, field))
}

/// The first field of each name the summary reads, found in one pass over the header. A field
/// that may appear once but appears twice counts as it is first written, as most mail programs
/// show it (and as a doubled `Content-Type` does); mail-parser's own getters give the last.
#[derive(Default)]
struct Firsts<'a, 'x> {
    message_id: Option<&'a mail_parser::Header<'x>>,
    subject: Option<&'a mail_parser::Header<'x>>,
    from: Option<&'a mail_parser::Header<'x>>,
    to: Option<&'a mail_parser::Header<'x>>,
    cc: Option<&'a mail_parser::Header<'x>>,
    date: Option<&'a mail_parser::Header<'x>>,
    in_reply_to: Option<&'a mail_parser::Header<'x>>,
    references: Option<&'a mail_parser::Header<'x>>,
}

impl<'a, 'x> Firsts<'a, 'x> {
    fn of(msg: &'a mail_parser::Message<'x>) -> Self {
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
    let mut out = Vec::new();
    for h in msg.headers().iter().filter(|h| crate::parse::labels::is_label_field(h.name())) {
        let bytes = whole.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default();
        crate::parse::labels::header_labels(h.name(), &String::from_utf8_lossy(bytes), &mut out);
    }
    crate::parse::labels::tidy_labels(&mut out);
    out
}

/// A List-Id's identifier (RFC 2919: `Name <list.example.org>`); the whole value when it has none.
fn list_id(raw: &str) -> Option<String> {
    let inner = match (raw.rfind('<'), raw.rfind('>')) {
        (Some(a), Some(b)) if a < b => &raw[a + 1..b],
        _ => raw,
    };
    let id = clean_text(inner);
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
fn clean_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_clean(&mut out, s);
    trimmed(out)
}

/// [`clean_text`] for a value already owned: most are clean, and are kept as they are.
fn clean_owned(s: String) -> String {
    if has_control(&s) {
        clean_text(&s)
    } else {
        trimmed(s)
    }
}

/// [`clean_text`] of bytes read as UTF-8 (each invalid sequence a U+FFFD, as
/// `String::from_utf8_lossy` reads them), in one pass: the value of a header the parser keeps raw
/// (`Received`, signatures), most of them folded over several lines.
fn clean_bytes(bytes: &[u8]) -> String {
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
pub(super) fn header_fields(msg: &Message) -> Vec<(String, String)> {
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

#[cfg(test)]
mod tests;

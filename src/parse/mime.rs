//! Internet messages (RFC 5322, MIME: RFC 2045–2049) through mail-parser, which decodes transfer
//! encodings and charsets; we copy what we need into our own model. The only module that knows
//! mail-parser.

use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use mail_parser::{Address, HeaderName, HeaderValue, MessageParser, MimeHeaders, PartType};

use super::{charset, external, mhtml, tnef, transfer, MAX_DEPTH};
use crate::error::Error;
use crate::ids::{derived_message_id, strip_angles};
use crate::limits::MAX_PARTS;
use crate::model::{Body, External, Message, Part, PartIdx, Summary};
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
    p.header_text(H::Subject)
        .header_text(H::Comments)
        .header_id(H::ReturnPath)
        .header_comma_separated(H::Keywords)
        .header_comma_separated(H::ContentLanguage)
        .header_raw(H::Received)
});

/// One message from its bytes; `Unparseable` when mail-parser finds no message at all.
pub(super) fn parse(raw: Arc<[u8]>) -> Result<Message, Error> {
    let raw = Bytes::from_owner(raw);
    let parsed = PARSER.parse(&raw[..]).ok_or(Error::Unparseable)?;
    if parsed.parts.is_empty() {
        return Err(Error::Unparseable);
    }
    let mut parts_left = MAX_PARTS;
    Ok(convert(&parsed, raw.clone(), 0, &mut parts_left))
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

/// Our model of a parsed message; `parts_left` is what remains of the part budget shared with the
/// messages it encloses.
fn convert(msg: &mail_parser::Message<'_>, raw: Bytes, depth: usize, parts_left: &mut usize) -> Message {
    let message_id = msg.message_id().map(|m| strip_angles(m).to_string()).filter(|m| !m.is_empty());
    let id = message_id.clone().unwrap_or_else(|| derived_message_id(&raw));
    let mut out = Message {
        message_id,
        id,
        summary: summary(msg),
        headers: headers(msg),
        parts: Vec::new(),
        html_body: None,
        text_body: None,
        image_body: None,
        truncated: false,
        raw,
        origin: Default::default(),
        lookups: Default::default(),
    };
    let mut walk = Walk { depth, seen: vec![false; msg.parts.len()], parts_left };
    add_part(msg, 0, None, String::new(), &mut walk, &mut out);
    // What a winmail.dat hides becomes parts too; its body is taken only when the message has none
    // of that kind.
    let (tnef_html, tnef_text) = tnef::expand(&mut out, walk.parts_left);
    mhtml::resolve_locations(&mut out);
    let (html, text) = mhtml::select_body(&out, 0, 0);
    out.html_body = html.or(tnef_html);
    let blank = |t: PartIdx| out.parts[t].bytes().iter().all(u8::is_ascii_whitespace);
    out.text_body = text.filter(|&t| !blank(t)).or(tnef_text).or(text);
    if out.html_body.is_none() && out.text_body.is_none() {
        out.image_body = mhtml::select_image(&out, 0, 0);
    }
    mhtml::adopt_page_base(&mut out);
    out
}

/// Where a walk over one message's parts stands.
struct Walk<'a> {
    /// How deep the message is enclosed.
    depth: usize,
    /// mail-parser's parts already added: a part listed twice is taken once.
    seen: Vec<bool>,
    /// What is left of the part budget shared with enclosing and enclosed messages.
    parts_left: &'a mut usize,
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
    if *walk.parts_left == 0 {
        out.truncated = true;
        return;
    }
    *walk.parts_left -= 1;
    let depth = walk.depth;
    let ct = src.content_type();
    let (content_type, declared) = match ct {
        Some(ct) => {
            let main = ct.ctype().trim().to_ascii_lowercase();
            let sub = ct.subtype().unwrap_or("").trim().to_ascii_lowercase();
            if sub.is_empty() {
                (format!("{main}/octet-stream"), true)
            } else {
                (format!("{main}/{sub}"), true)
            }
        }
        None => match &src.body {
            PartType::Message(_) => ("message/rfc822".to_string(), false),
            PartType::Multipart(_) => ("multipart/mixed".to_string(), false),
            PartType::Html(_) => ("text/html".to_string(), false),
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
    let raw_len = out.raw.len();
    let begin = (src.offset_body as usize).min(raw_len);
    let end = (src.offset_end as usize).clamp(begin, raw_len);
    let section = if section.is_empty() {
        // The root: "1" for a single-part message, "0" for the whole of a multipart body.
        if matches!(src.body, PartType::Multipart(_)) {
            "0".into()
        } else {
            "1".into()
        }
    } else {
        section
    };
    let is_external = content_type == "message/external-body";
    let external = is_external.then(|| external_body(src, &params, out.raw.get(begin..end).unwrap_or(&[])));
    let body = match &src.body {
        // What an external body carries is a phantom, not its data: the part holds nothing.
        _ if is_external => Body::Binary(bytes::Bytes::new()),
        PartType::Text(_) | PartType::Html(_) if charset.is_none() && undeclared_charset_matters(&content_type) => {
            // mail-parser reads a text part without a charset as UTF-8; a saved page may be
            // anything, and says so in its own bytes.
            let bytes = transfer::decoded(&out.raw[begin..end], src.content_transfer_encoding());
            Body::Text(if content_type == "text/css" {
                charset::decode_css(&bytes)
            } else {
                charset::decode_html(&bytes)
            })
        }
        PartType::Text(t) | PartType::Html(t) => Body::Text(t.to_string()),
        PartType::Binary(b) | PartType::InlineBinary(b) => Body::Binary(bytes::Bytes::copy_from_slice(b)),
        PartType::Multipart(_) => Body::Multipart,
        PartType::Message(inner) if depth < MAX_DEPTH && !inner.parts.is_empty() => {
            let inner_raw = enclosed_bytes(&out.raw, inner.raw_message());
            let inner = convert(inner, inner_raw, depth + 1, walk.parts_left);
            out.truncated |= inner.truncated;
            Body::Message(Box::new(inner))
        }
        PartType::Message(inner) => Body::Binary(bytes::Bytes::copy_from_slice(inner.raw_message())),
    };
    let idx = out.parts.len();
    out.parts.push(Part {
        section: section.clone(),
        parent,
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
        body,
        raw_range: begin..end,
        damaged: src.is_encoding_problem,
        external,
    });
    if let Some(p) = parent {
        out.parts[p].children.push(idx);
    }
    if let PartType::Multipart(children) = &src.body {
        if depth + section.matches('.').count() >= MAX_DEPTH {
            return;
        }
        for (n, &child) in children.iter().enumerate() {
            let child_section = if section == "0" { format!("{}", n + 1) } else { format!("{section}.{}", n + 1) };
            add_part(msg, child as usize, Some(idx), child_section, walk, out);
        }
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
fn external_body(src: &mail_parser::MessagePart<'_>, params: &[(String, String)], raw_body: &[u8]) -> External {
    let body: &[u8] = match &src.body {
        PartType::Text(t) | PartType::Html(t) => t.as_bytes(),
        PartType::Binary(b) | PartType::InlineBinary(b) => b,
        PartType::Message(inner) => inner.raw_message(),
        PartType::Multipart(_) => raw_body,
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

fn summary(msg: &mail_parser::Message<'_>) -> Summary {
    let date = msg.date();
    Summary {
        subject: msg.subject().map(clean_text),
        from: msg.from().map(format_address),
        to: msg.to().map(format_address),
        cc: msg.cc().map(format_address),
        date: date.map(|d| d.to_rfc3339()),
        timestamp: date.map(|d| d.to_timestamp()),
        in_reply_to: id_list(msg.in_reply_to()),
        references: id_list(msg.references()),
        labels: labels(msg),
        list: msg.header_raw("List-Id").and_then(list_id),
    }
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

/// Control characters (CR and LF above all) never survive into a header value we show or send.
fn clean_text(s: &str) -> String {
    let kept = s.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    if has_control(kept) {
        let mut out = String::with_capacity(kept.len());
        for (i, piece) in kept.split(char::is_control).enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(piece);
        }
        out
    } else {
        kept.to_string()
    }
}

/// [`clean_text`] for a value already owned: most are clean, and are kept as they are.
fn clean_owned(s: String) -> String {
    let kept = s.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    if kept.len() == s.len() && !has_control(&s) {
        s
    } else {
        clean_text(&s)
    }
}

/// Whether `s` holds a C0 or C1 control or DEL (C1 controls are U+0080..U+009F, led by 0xC2 in
/// UTF-8); a byte scan, as nearly every header value has none.
fn has_control(s: &str) -> bool {
    s.bytes().any(|b| b < 0x20 || b == 0x7F || b == 0xC2) && s.chars().any(char::is_control)
}

fn format_address(a: &Address<'_>) -> String {
    let one = |addr: &mail_parser::Addr<'_>| match (&addr.name, &addr.address) {
        (Some(n), Some(a)) if !n.trim().is_empty() => format!("{} <{}>", n.trim(), a),
        (_, Some(a)) => a.to_string(),
        (Some(n), None) => n.to_string(),
        (None, None) => String::new(),
    };
    let joined = match a {
        Address::List(list) => list.iter().map(one).collect::<Vec<_>>().join(", "),
        Address::Group(groups) => groups
            .iter()
            .map(|g| {
                let members = g.addresses.iter().map(one).collect::<Vec<_>>().join(", ");
                match &g.name {
                    Some(n) => format!("{n}: {members};"),
                    None => members,
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    };
    clean_owned(joined)
}

fn headers(msg: &mail_parser::Message<'_>) -> Vec<(String, String)> {
    let whole: &[u8] = &msg.raw_message;
    msg.headers()
        .iter()
        .map(|h| {
            // Each header's own bytes (the parser's raw-header list skips those that are not
            // UTF-8, so it cannot be paired with this one by position).
            let raw_value = || {
                let bytes = whole.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default();
                String::from_utf8_lossy(bytes).into_owned()
            };
            let value = match h.value() {
                HeaderValue::Text(t) => t.to_string(),
                HeaderValue::TextList(l) => l.join(", "),
                HeaderValue::Address(a) => format_address(a),
                HeaderValue::DateTime(d) => d.to_rfc3339(),
                _ => raw_value(),
            };
            (clean_text(h.name()), clean_owned(value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{clean_owned, clean_text, parse};

    #[test]
    fn header_text_loses_controls_and_outer_space() {
        let cases = [
            ("plain", "plain"),
            ("  padded \t", "padded"),
            ("line\r\n folded", "line   folded"),
            ("\u{1}\u{7f}edge\u{85}", "edge"),
            ("in\u{9c}side", "in side"),
            ("caf\u{e9} \u{a0}nbsp", "caf\u{e9} \u{a0}nbsp"),
            ("", ""),
            ("\r\n", ""),
        ];
        for (raw, want) in cases {
            let reference: String = raw.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            assert_eq!(reference.trim(), want, "{raw:?}");
            assert_eq!(clean_text(raw), want, "{raw:?}");
            assert_eq!(clean_owned(raw.to_string()), want, "{raw:?}");
        }
    }

    #[test]
    fn every_header_is_shown_with_its_own_value() {
        let raw: &[u8] = b"Received: from a.example by b.example;\r\n Mon, 1 Jan 2024 00:00:00 +0000\r\n\
X-Latin1: caf\xe9\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
List-Id: Team <team.example.org>\r\n\
Subject: =?utf-8?q?caf=C3=A9?=\r\n\r\nbody\r\n";
        let msg = parse(raw.into()).expect("parses");
        let want = [
            ("Received", "from a.example by b.example;   Mon, 1 Jan 2024 00:00:00 +0000"),
            ("X-Latin1", "caf\u{fffd}"),
            ("Content-Type", "text/plain; charset=utf-8"),
            ("List-ID", "Team <team.example.org>"),
            ("Subject", "caf\u{e9}"),
        ];
        let got: Vec<(&str, &str)> = msg.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(got, want);
        assert_eq!(msg.summary.list.as_deref(), Some("team.example.org"));
    }
}

//! Bytes → [`crate::model::Message`]. The only module that knows mail-parser: it decodes transfer
//! encodings and charsets, and we copy what we need into our own model.

use std::sync::Arc;

use mail_parser::{Address, HeaderValue, MessageParser, MimeHeaders, PartType};

use crate::error::Error;
use crate::ids::{derived_message_id, strip_angles};
use crate::model::{Body, Message, Part, PartIdx, Summary};
use crate::uri::{self, THIS_MESSAGE};

/// Deeper nesting than this (multiparts or enclosed messages) is shown as opaque data. mail-parser
/// caps its own recursion; this keeps our walk bounded too.
const MAX_DEPTH: usize = 48;

/// Parses one message. Fails only when there is nothing that reads as a message at all; a message
/// that is partly broken comes back with its good parts and `damaged` set where decoding guessed.
pub fn parse_message(raw: Arc<[u8]>) -> Result<Message, Error> {
    // Hostile input must never take the server down: should the parser panic on some message, that
    // message is reported unparseable and everything else goes on.
    std::panic::catch_unwind(|| {
        let parsed = MessageParser::default().parse(&raw[..]).ok_or(Error::Unparseable)?;
        if parsed.parts.is_empty() {
            return Err(Error::Unparseable);
        }
        Ok(convert(&parsed, raw.clone(), 0))
    })
    .unwrap_or_else(|_| {
        tracing::warn!(bytes = raw.len(), "the parser gave up on a message");
        Err(Error::Unparseable)
    })
}

fn convert(msg: &mail_parser::Message<'_>, raw: Arc<[u8]>, depth: usize) -> Message {
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
        raw,
    };
    let mut seen = vec![false; msg.parts.len()];
    add_part(msg, 0, None, String::new(), depth, &mut seen, &mut out);
    resolve_locations(&mut out);
    let (html, text) = select_body(&out, 0, 0);
    out.html_body = html;
    out.text_body = text;
    out
}

fn add_part(
    msg: &mail_parser::Message<'_>,
    pid: usize,
    parent: Option<PartIdx>,
    section: String,
    depth: usize,
    seen: &mut [bool],
    out: &mut Message,
) {
    let Some(src) = msg.parts.get(pid) else { return };
    if seen.get(pid).copied().unwrap_or(true) {
        return;
    }
    seen[pid] = true;
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
    let params = ct
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
    let body = match &src.body {
        PartType::Text(t) | PartType::Html(t) => Body::Text(t.to_string()),
        PartType::Binary(b) | PartType::InlineBinary(b) => Body::Binary(bytes::Bytes::copy_from_slice(b)),
        PartType::Multipart(_) => Body::Multipart,
        PartType::Message(inner) if depth < MAX_DEPTH && !inner.parts.is_empty() => {
            let inner_raw: Arc<[u8]> = Arc::from(inner.raw_message());
            Body::Message(Box::new(convert(inner, inner_raw, depth + 1)))
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
        filename: src.attachment_name().map(|f| f.trim().to_string()).filter(|f| !f.is_empty()),
        disposition: src.content_disposition().map(|d| d.ctype().trim().to_ascii_lowercase()),
        body,
        raw_range: begin..end,
        damaged: src.is_encoding_problem,
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
            add_part(msg, child as usize, Some(idx), child_section, depth, seen, out);
        }
    }
}

/// RFC 2557 §5: every part's Content-Location made absolute against the nearest base outward, and
/// the base its own content resolves against. Parents come before children in `parts`.
fn resolve_locations(msg: &mut Message) {
    for i in 0..msg.parts.len() {
        let parent = msg.parts[i].parent;
        let parent_base = parent.map(|p| msg.parts[p].base.clone()).unwrap_or_else(|| THIS_MESSAGE.to_string());
        let location = msg.parts[i].content_location.as_deref().and_then(|cl| uri::resolve(&parent_base, cl));
        let related_scope = parent.and_then(|p| {
            std::iter::once(p).chain(msg.ancestors(p)).find(|&a| msg.parts[a].is_type("multipart/related"))
        });
        let part = &mut msg.parts[i];
        part.base = location.clone().unwrap_or(parent_base);
        part.location = location;
        part.related_scope = related_scope;
    }
}

/// Chooses the HTML and text bodies under `idx`: multipart/related → its root (`start`, else the
/// part of the `type` given, else the first part; RFC 2557 §7, RFC 2387); multipart/alternative →
/// the last HTML alternative and the first text one; other multiparts → the first part that is not
/// an attachment.
fn select_body(msg: &Message, idx: PartIdx, depth: usize) -> (Option<PartIdx>, Option<PartIdx>) {
    let Some(part) = msg.parts.get(idx) else { return (None, None) };
    if depth > MAX_DEPTH {
        return (None, None);
    }
    match part.content_type.as_str() {
        "multipart/related" => {
            let root = part
                .start
                .as_deref()
                .and_then(|s| part.children.iter().copied().find(|&c| msg.parts[c].content_id.as_deref() == Some(s)))
                // No `start`: the part of the type the `type` parameter names (RFC 2387), which
                // some savers put after the resources, else the first part.
                .or_else(|| {
                    let wanted = part.param("type")?.to_ascii_lowercase();
                    part.children.iter().copied().find(|&c| msg.parts[c].content_type == wanted)
                })
                .or_else(|| part.children.first().copied());
            root.map_or((None, None), |r| select_body(msg, r, depth + 1))
        }
        "multipart/alternative" => {
            // Mail puts the preferred alternative last. A saved page whose root is an
            // alternative of several HTML documents (Internet Explorer's frames) means the first:
            // the others are its frames.
            let is_related_root = part.parent.is_some_and(|p| msg.parts[p].is_type("multipart/related"));
            let (mut html, mut text) = (None, None);
            for &c in &part.children {
                let (h, t) = select_body(msg, c, depth + 1);
                html = if is_related_root { html.or(h) } else { h.or(html) };
                text = text.or(t);
            }
            (html, text)
        }
        _ if part.is_multipart() => part
            .children
            .iter()
            .filter(|&&c| msg.parts[c].disposition.as_deref() != Some("attachment"))
            .map(|&c| select_body(msg, c, depth + 1))
            .find(|(h, t)| h.is_some() || t.is_some())
            .unwrap_or((None, None)),
        _ if part.disposition.as_deref() == Some("attachment") => (None, None),
        "text/html" | "application/xhtml+xml" if part.is_text() => (Some(idx), None),
        "text/plain" | "text/enriched" if part.is_text() => (None, Some(idx)),
        _ => (None, None),
    }
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
    }
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
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().trim().to_string()
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
    clean_text(&joined)
}

fn headers(msg: &mail_parser::Message<'_>) -> Vec<(String, String)> {
    let raw: Vec<(&str, &str)> = msg.headers_raw().collect();
    msg.headers()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let raw_value = raw.get(i).map(|(_, v)| *v).unwrap_or("");
            let value = match h.value() {
                HeaderValue::Text(t) => t.to_string(),
                HeaderValue::TextList(l) => l.join(", "),
                HeaderValue::Address(a) => format_address(a),
                HeaderValue::DateTime(d) => d.to_rfc3339(),
                _ => raw_value.to_string(),
            };
            (clean_text(h.name()), clean_text(&value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Message {
        parse_message(Arc::from(s.replace('\n', "\r\n").into_bytes())).expect("parses")
    }

    #[test]
    fn related_root_follows_start_parameter() {
        let m = parse(
            "Message-ID: <m@x>\nContent-Type: multipart/related; boundary=b; start=\"<two@x>\"\n\n--b\nContent-Type: text/html\nContent-ID: <one@x>\n\n<p>one</p>\n--b\nContent-Type: text/html\nContent-ID: <two@x>\n\n<p>two</p>\n--b--\n",
        );
        let html = m.html_body.expect("html body");
        assert_eq!(m.parts[html].content_id.as_deref(), Some("two@x"));
        assert_eq!(m.parts[html].section, "2");
    }

    #[test]
    fn relative_location_resolves_against_outer() {
        let m = parse(
            "Content-Type: multipart/related; boundary=b\nContent-Location: http://e.example/dir/\n\n--b\nContent-Type: text/html\nContent-Location: page.html\n\n<img src=a.png>\n--b\nContent-Type: image/png\nContent-Location: a.png\n\nx\n--b--\n",
        );
        assert_eq!(m.parts[1].location.as_deref(), Some("http://e.example/dir/page.html"));
        assert_eq!(m.parts[2].location.as_deref(), Some("http://e.example/dir/a.png"));
        assert_eq!(m.parts[2].related_scope, Some(0));
        assert!(m.id.ends_with("@mailshelf.invalid"));
    }

    #[test]
    fn unparseable_input_is_an_error() {
        assert!(matches!(parse_message(Arc::from(&b""[..])), Err(Error::Unparseable)));
    }
}

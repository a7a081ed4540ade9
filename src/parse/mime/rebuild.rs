//! A message's parts read by RFC 2046 itself, for the messages whose structure mail-parser
//! misreads ([`super::misread`]): each multipart is cut at the whole delimiter lines of its own
//! boundary, inside the range its parent gave it ([`crate::parse::boundary`]), so an enclosing
//! delimiter ends a multipart that never closed and a part cut short ends where the message does;
//! each part's header ends at its blank line or where it runs into its body; mail-parser reads
//! the fields of each header, [`transfer`] undoes each body's transfer encoding (robustly: a stray
//! character in base64 is skipped, not a reason to leave the part encoded), and an enclosed
//! message is read like any message ([`super::read`]). This is how Python's `email` package and
//! mail clients read such mail.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;

use super::describe::{described, first_content_type, first_transfer_encoding, is_enclosed_type};
use super::{finish, leaf_body, new_message, read, Walk, PARSER};
use crate::model::{Body, HeaderAt, Message, PartIdx};
use crate::parse::{boundary, transfer, MAX_DEPTH};

/// The message in `raw` (from `skip` on: lines of white space before it are no part of it), read
/// again; `depth`, `parts_left` and `layers` as for [`read`].
pub(super) fn message(raw: Bytes, skip: usize, depth: usize, parts_left: &mut usize, layers: usize) -> Message {
    let len = raw.len();
    let (header_end, body_start) = boundary::header_end(&raw, skip..len);
    let head = parse_header(&raw[skip..header_end]);
    let mut out = new_message(&head, raw, HeaderAt::Within(skip..header_end));
    let mut walk = Walk { depth, delta: 0, layers, seen: Vec::new(), parts_left };
    let root = Entity { header: skip..header_end, body: body_start..len, in_digest: false, cut_short: false };
    entity(root, None, String::new(), &mut walk, &mut out);
    finish(out, &mut walk)
}

/// A header's fields as mail-parser reads them (once [`boundary::mended_header`] has made them
/// readable); a message with one part and no field when there are none.
pub(super) fn parse_header(header: &[u8]) -> mail_parser::Message<'static> {
    let mended = boundary::mended_header(header);
    let parsed = PARSER.parse_headers(mended.as_deref().unwrap_or(header)).map(mail_parser::Message::into_owned);
    match parsed {
        Some(m) if !m.parts.is_empty() => m,
        _ => mail_parser::Message { parts: vec![mail_parser::MessagePart::default()], ..Default::default() },
    }
}

/// One MIME entity: where its header and body lie in the message's bytes.
struct Entity {
    header: Range<usize>,
    body: Range<usize>,
    /// A part of a `multipart/digest`, whose default type is `message/rfc822`.
    in_digest: bool,
    /// The last part of a multipart that was never closed.
    cut_short: bool,
}

fn entity(e: Entity, parent: Option<PartIdx>, section: String, walk: &mut Walk<'_>, out: &mut Message) {
    if !walk.take_part(out) {
        return;
    }
    let raw = out.raw.clone();
    let head = parse_header(&raw[e.header.clone()]);
    let src = &head.parts[0];
    let ct = first_content_type(src);
    let main = ct.map(|c| c.ctype().trim().to_ascii_lowercase()).unwrap_or_default();
    let boundary = ct
        .filter(|_| main == "multipart")
        .and_then(|c| c.attribute("boundary"))
        .map(|b| b.trim_end().as_bytes())
        .filter(|b| !b.is_empty());
    let (cut, body_range) = match boundary.map(|b| boundary::cut(&raw, e.body.clone(), b)) {
        Some(cut) if !cut.parts.is_empty() => (Some(cut), e.body.clone()),
        // A multipart with no part is the text it holds, as Python's `email` reads it.
        Some(cut) => (None, cut.preamble),
        None => (None, e.body.clone()),
    };
    let mut part = described(src, None, body_range.clone(), out);
    part.parent = parent;
    part.damaged = e.cut_short;
    part.section = match (section.is_empty(), &cut) {
        (false, _) => section,
        (true, Some(_)) => "0".into(),
        (true, None) => "1".into(),
    };
    if ct.is_none() && e.in_digest {
        part.content_type = "message/rfc822".into();
    }
    // A multipart that cannot be cut into parts (no boundary, an empty one, no delimiter of it) is
    // no multipart but the text it holds, shown as any text is. One that holds nothing but white
    // space (a multipart its parent's delimiters ended at once) has no text to show, and stays
    // what it says it is, so that it never stands for the message's text.
    let blank = || raw[body_range.clone()].iter().all(u8::is_ascii_whitespace);
    if main == "multipart" && cut.is_none() && !blank() {
        part.content_type = "text/plain".into();
        // Said, as Python's `email` records its defect: what the sender meant as parts (an
        // attachment among them) may be in this text, and the page tells the reader so.
        part.damaged = true;
    }
    let enclosed = matches!(part.content_type.as_str(), "message/rfc822" | "message/global")
        || is_enclosed_type(&part.content_type);
    part.body = if cut.is_some() {
        Body::Multipart
    } else if part.external.is_some() {
        Body::Binary(Bytes::new())
    } else {
        let decoded = transfer::decode(&raw[body_range.clone()], first_transfer_encoding(src));
        part.damaged |= !decoded.clean;
        let bytes = match decoded.bytes {
            Cow::Borrowed(_) => raw.slice(body_range.clone()),
            Cow::Owned(v) => Bytes::from(v),
        };
        out.too_deep |= enclosed && walk.depth >= MAX_DEPTH;
        let inner = (enclosed && walk.depth < MAX_DEPTH)
            .then(|| read(bytes.clone(), walk.depth + 1, walk.parts_left, walk.layers));
        match inner.flatten() {
            Some(inner) => {
                out.cuts_of(&inner);
                Body::Message(Box::new(inner))
            }
            // A multipart without its boundary is text, as mail-parser reads it.
            None => leaf_body(
                &part.content_type,
                part.declared_type && main != "multipart",
                part.charset.as_deref(),
                &bytes,
            ),
        }
    };
    let section = part.section.clone();
    let digest = part.content_type == "multipart/digest";
    let idx = out.parts.len();
    out.parts.push(part);
    if let Some(p) = parent {
        out.parts[p].children.push(idx);
    }
    let Some(cut) = cut else { return };
    if !cut.closed {
        out.parts[idx].damaged = true;
    }
    if walk.depth + section.matches('.').count() >= MAX_DEPTH {
        out.too_deep |= !cut.parts.is_empty();
        return;
    }
    let last = cut.parts.len().saturating_sub(1);
    for (n, range) in cut.parts.into_iter().enumerate() {
        let (header_end, body_start) = boundary::header_end(&raw, range.clone());
        let child = Entity {
            header: range.start..header_end,
            body: body_start..range.end,
            in_digest: digest,
            cut_short: !cut.closed && n == last,
        };
        let child_section = if section == "0" { format!("{}", n + 1) } else { format!("{section}.{}", n + 1) };
        entity(child, Some(idx), child_section, walk, out);
    }
}

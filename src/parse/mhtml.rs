//! MHTML (RFC 2557): the rules that turn a `multipart/related` tree into a web page — every part's
//! Content-Location made absolute against its base, the related scope each part resolves in, and
//! which part is the page (RFC 2387's `start` and `type`, and what real savers write).

use super::MAX_DEPTH;
use crate::model::{Body, Message, PartIdx};
use crate::uri::{self, THIS_MESSAGE};

/// RFC 2557 §5: every part's Content-Location made absolute against the nearest base outward, and
/// the base its own content resolves against. Parents come before children in `parts`.
pub(super) fn resolve_locations(msg: &mut Message) {
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

/// Chrome saves the stylesheets it generated as parts located at `cid:…@mhtml.blink`, a URL no
/// relative reference can resolve against; their `url()`s are written as authored, and Chromium
/// resolves them against the page. So such a part's base is the page's.
pub(super) fn adopt_page_base(msg: &mut Message) {
    let Some(page_base) = msg.html_body.map(|h| msg.parts[h].base.clone()) else { return };
    for part in &mut msg.parts {
        if part.location.as_deref().is_some_and(|l| l.starts_with("cid:")) {
            part.base.clone_from(&page_base);
        }
    }
}

/// The root of the `multipart/related` part `idx`: the part `start` names, else the part of the
/// type the `type` parameter names (RFC 2387), which some savers put after the resources, else the
/// first part.
fn related_root(msg: &Message, idx: PartIdx) -> Option<PartIdx> {
    let part = msg.parts.get(idx)?;
    part.start
        .as_deref()
        .and_then(|s| part.children.iter().copied().find(|&c| msg.parts[c].reference_id() == Some(s)))
        .or_else(|| {
            let wanted = part.param("type")?.to_ascii_lowercase();
            part.children.iter().copied().find(|&c| msg.parts[c].content_type == wanted)
        })
        .or_else(|| part.children.first().copied())
}

/// Chooses the HTML and text bodies under `idx`: multipart/related → its root (`start`, else the
/// part of the `type` given, else the first part; RFC 2557 §7, RFC 2387); multipart/alternative →
/// the last HTML alternative and the first text one; other multiparts → the first part that is not
/// an attachment.
pub(super) fn select_body(msg: &Message, idx: PartIdx, depth: usize) -> (Option<PartIdx>, Option<PartIdx>) {
    let Some(part) = msg.parts.get(idx) else { return (None, None) };
    if depth > MAX_DEPTH {
        return (None, None);
    }
    // A signed or decrypted layer: its content stands where it is.
    if let Some(content) = msg.seal_content(idx) {
        return select_body(msg, content, depth + 1);
    }
    // A signature, or encrypted data not opened: never the body.
    if msg.is_seal_machinery(idx) {
        return (None, None);
    }
    match part.content_type.as_str() {
        "multipart/related" => related_root(msg, idx).map_or((None, None), |r| select_body(msg, r, depth + 1)),
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
        _ if part.is_html() => (Some(idx), None),
        "text/plain" | "text/enriched" if part.is_text() => (None, Some(idx)),
        _ => (None, None),
    }
}

/// The text shown after the body, in order: the other inline text parts of a `multipart/mixed`
/// (or any multipart that is neither related nor alternative), which RFC 2046 §5.1.3 bundles as
/// independent parts of one message and mail readers show one after another (a mailing list's
/// footer, a "PS" written after an attachment, the second text of Apple Mail's text, picture,
/// text). A related or alternative part among them is one text, chosen as the body is. Parts
/// with a file name are attachments and listed as such; `html` and `text` are the body.
pub(super) fn select_more(msg: &Message, html: Option<PartIdx>, text: Option<PartIdx>) -> Vec<PartIdx> {
    let mut more = Vec::new();
    more_under(msg, 0, 0, &mut more);
    more.retain(|&i| Some(i) != html && Some(i) != text);
    more.truncate(MAX_MORE_BODIES);
    more
}

/// At most this many texts are shown after the body (each may be a frame of its own).
const MAX_MORE_BODIES: usize = 32;

fn more_under(msg: &Message, idx: PartIdx, depth: usize, more: &mut Vec<PartIdx>) {
    let Some(part) = msg.parts.get(idx) else { return };
    if depth > MAX_DEPTH || msg.is_seal_machinery(idx) || part.disposition.as_deref() == Some("attachment") {
        return;
    }
    if let Some(content) = msg.seal_content(idx) {
        return more_under(msg, content, depth + 1, more);
    }
    match part.content_type.as_str() {
        "multipart/related" | "multipart/alternative" => {
            // One text: the body is one of these, taken out by the caller when it is.
            let (h, t) = select_body(msg, idx, depth + 1);
            if h.or(t).is_some_and(|b| msg.parts[b].filename.is_none()) {
                more.extend(h.or(t));
            }
        }
        _ if part.is_multipart() => {
            for &c in &part.children {
                more_under(msg, c, depth + 1, more);
            }
        }
        "text/html" | "application/xhtml+xml" | "text/plain" | "text/enriched"
            if part.is_text() && part.filename.is_none() =>
        {
            more.push(idx)
        }
        _ => {}
    }
}

/// Image types a browser shows by themselves, as an image document. Not SVG: a browser opens that
/// as a document of its own, not as a picture.
pub(crate) const IMAGE_DOCUMENT_TYPES: &[&str] = &[
    "image/png",
    "image/apng",
    "image/jpeg",
    "image/jpg",
    "image/pjpeg",
    "image/gif",
    "image/webp",
    "image/avif",
    "image/bmp",
    "image/x-icon",
    "image/vnd.microsoft.icon",
];

/// The image that stands where the page would, for a message with neither an HTML nor a text body:
/// a saved page whose root part is an image (Chromium saves an image it shows by itself so, and
/// shows such a file as that image), or a message whose body is one. The same walk as
/// [`select_body`]: a related part's root, the alternatives, the first part of another multipart
/// that is not an attachment.
pub(super) fn select_image(msg: &Message, idx: PartIdx, depth: usize) -> Option<PartIdx> {
    let part = msg.parts.get(idx)?;
    if depth > MAX_DEPTH || part.disposition.as_deref() == Some("attachment") {
        return None;
    }
    if let Some(content) = msg.seal_content(idx) {
        return select_image(msg, content, depth + 1);
    }
    match part.content_type.as_str() {
        "multipart/related" => select_image(msg, related_root(msg, idx)?, depth + 1),
        _ if part.is_multipart() => part.children.iter().find_map(|&c| select_image(msg, c, depth + 1)),
        t if IMAGE_DOCUMENT_TYPES.contains(&t) && matches!(part.body, Body::Binary(_)) => Some(idx),
        _ => None,
    }
}

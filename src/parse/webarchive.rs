//! Safari's `.webarchive`: a property list (binary or XML) whose `WebMainResource` is the page,
//! whose `WebSubresources` are what the page loads (each at its URL), and whose
//! `WebSubframeArchives` are its frames, each a web archive of its own. It is read as the MHTML it
//! is equivalent to (RFC 2557): one `multipart/related` whose root is the page at its URL, with
//! every subresource and every frame's page and subresources as further parts at their URLs. The
//! MIME reader then resolves, rewrites and sandboxes it exactly as a saved MHTML page. Frames are
//! put in the same `multipart/related` as the page, not in nested ones, because a page reaches
//! its frames by URL and RFC 2557 resolves a URL only in the same or an enclosing one.
//!
//! [`Message::raw`] is that MHTML; [`crate::model::Origin::original`] keeps the file as given.

use std::collections::HashSet;
use std::sync::Arc;

use super::proplist::{self, Value};
use super::{build, mime};
use crate::error::Error;
use crate::limits::MAX_PARTS;
use crate::model::{Message, Origin};

/// Whether bytes are a web archive: a binary property list, or an XML one whose start names
/// `WebMainResource`.
pub(super) fn is_webarchive(raw: &[u8]) -> bool {
    if raw.starts_with(b"bplist00") {
        return true;
    }
    let head = &raw[..raw.len().min(64 * 1024)];
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let text = &text[text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len())..];
    (text.starts_with(b"<?xml") || text.starts_with(b"<!DOCTYPE plist") || text.starts_with(b"<plist"))
        && head.windows(15).any(|w| w == b"WebMainResource")
}

/// One resource of the archive.
struct Resource<'a> {
    url: Option<&'a str>,
    mime_type: Option<String>,
    charset: Option<&'a str>,
    data: &'a [u8],
}

impl<'a> Resource<'a> {
    fn of(v: &'a Value) -> Option<Resource<'a>> {
        let data = v.get("WebResourceData").and_then(Value::as_data)?;
        Some(Resource {
            url: v.get("WebResourceURL").and_then(Value::as_str).map(str::trim).filter(|u| !u.is_empty()),
            mime_type: v.get("WebResourceMIMEType").and_then(Value::as_str).and_then(build::clean_type),
            charset: v.get("WebResourceTextEncodingName").and_then(Value::as_str).map(str::trim),
            data,
        })
    }
}

/// The page of a web archive, its resources and frames, as a message; a damaged archive shows
/// what could be read, with a notice.
pub(super) fn parse(raw: Arc<[u8]>) -> Result<Message, Error> {
    let read = proplist::read(&raw);
    let mut notices: Vec<String> = Vec::new();
    if let Some(problem) = &read.problem {
        notices.push(format!("This Safari web archive is damaged ({problem}); what could be read is shown."));
    }
    let root = read.value.unwrap_or(Value::Dict(Vec::new()));
    let mut resources: Vec<Resource<'_>> = Vec::new();
    let mut frames = 0usize;
    collect(&root, &mut resources, &mut frames, 0);
    let main = root.get("WebMainResource").and_then(Resource::of);
    if main.is_none() {
        notices.push("This Safari web archive has no main resource (page) that could be read.".into());
    }
    // The made message is named by the file's bytes, as a message without a Message-ID is, so
    // two archives that read alike (two damaged ones) stay two messages.
    let id = crate::ids::derived_message_id(&raw);
    let mime = to_mhtml(&id, main.as_ref(), &resources);
    let mut msg = mime::parse(Arc::from(mime))?;
    msg.origin = Origin { original: Some(raw), flags: None, notices, cut_from: None };
    Ok(msg)
}

/// Every subresource, and every frame's page and subresources, frames depth first; each frame
/// level is one nesting of the property list, which bounds the walk.
fn collect<'a>(archive: &'a Value, out: &mut Vec<Resource<'a>>, frames: &mut usize, depth: usize) {
    for r in archive.get("WebSubresources").map(Value::as_array).unwrap_or(&[]) {
        out.extend(Resource::of(r));
    }
    if depth > crate::limits::MAX_DEPTH {
        return;
    }
    for frame in archive.get("WebSubframeArchives").map(Value::as_array).unwrap_or(&[]) {
        *frames += 1;
        out.extend(frame.get("WebMainResource").and_then(Resource::of));
        collect(frame, out, frames, depth + 1);
    }
}

/// The MHTML document: headers naming the page, then one part per resource, the page first.
fn to_mhtml<'a>(id: &str, main: Option<&Resource<'a>>, resources: &[Resource<'a>]) -> Vec<u8> {
    let boundary = "----=_mailshelf_webarchive_7f3c9a1e";
    let mut out = format!("Message-ID: <{id}>\r\n").into_bytes();
    let title = main.and_then(page_title);
    let subject = title.as_deref().or(main.and_then(|m| m.url)).unwrap_or("Safari web archive");
    out.extend_from_slice(format!("Subject: {}\r\n", build::header_text(subject)).as_bytes());
    if let Some(url) = main.and_then(|m| m.url).filter(|u| u.chars().all(|c| c.is_ascii_graphic())) {
        out.extend_from_slice(format!("Snapshot-Content-Location: {url}\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "MIME-Version: 1.0\r\nContent-Type: multipart/related; type=\"{}\"; boundary=\"{boundary}\"\r\n\r\n",
            main.and_then(|m| m.mime_type.clone()).unwrap_or_else(|| "text/html".into())
        )
        .as_bytes(),
    );
    let mut seen: HashSet<&'a str> = HashSet::new();
    let mut write = |r: &Resource<'a>, out: &mut Vec<u8>| {
        if let Some(url) = r.url {
            // The first resource at a URL is the one a browser would have; later copies add nothing.
            if !seen.insert(url) {
                return;
            }
        }
        let ct = r.mime_type.clone().unwrap_or_else(|| "application/octet-stream".into());
        out.extend_from_slice(format!("--{boundary}\r\nContent-Type: {ct}").as_bytes());
        if let Some(cs) =
            r.charset.filter(|_| ct.starts_with("text/") || ct.contains("xml") || ct.contains("javascript"))
        {
            if let Some(q) = build::quoted(cs) {
                out.extend_from_slice(format!("; charset={q}").as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
        if let Some(url) = r.url.filter(|u| u.chars().all(|c| c.is_ascii_graphic())) {
            out.extend_from_slice(format!("Content-Location: {url}\r\n").as_bytes());
        }
        out.extend_from_slice(b"Content-Transfer-Encoding: base64\r\n\r\n");
        build::base64_lines(r.data, out);
    };
    if let Some(m) = main {
        write(m, &mut out);
    }
    for r in resources.iter().take(MAX_PARTS) {
        write(r, &mut out);
    }
    if main.is_none() && resources.is_empty() {
        out.extend_from_slice(format!("--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nNothing in this web archive could be read.\r\n").as_bytes());
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    out
}

/// The text of the page's `<title>`, when it is HTML and has one near its start.
fn page_title(main: &Resource<'_>) -> Option<String> {
    if !main.mime_type.as_deref().is_some_and(|t| t.contains("html")) {
        return None;
    }
    let head = &main.data[..main.data.len().min(64 * 1024)];
    let lower = head.to_ascii_lowercase();
    let open = lower.windows(6).position(|w| w == b"<title")?;
    let start = open + lower[open..].iter().position(|&b| b == b'>')? + 1;
    let end = start + lower[start..].windows(8).position(|w| w == b"</title>")?;
    let encoding =
        main.charset.and_then(|c| encoding_rs::Encoding::for_label(c.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    let (text, _) = encoding.decode_without_bom_handling(&head[start..end]);
    let text = html_escape::decode_html_entities(&text).split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Body;

    fn xml_archive(main: &str, subs: &str, frames: &str) -> Arc<[u8]> {
        Arc::from(
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\"><dict><key>WebMainResource</key>{main}<key>WebSubresources</key><array>{subs}</array><key>WebSubframeArchives</key><array>{frames}</array></dict></plist>"
            )
            .into_bytes(),
        )
    }

    fn resource(url: &str, mime: &str, data: &[u8]) -> String {
        let mut b = Vec::new();
        build::base64_lines(data, &mut b);
        format!(
            "<dict><key>WebResourceData</key><data>{}</data><key>WebResourceMIMEType</key><string>{mime}</string><key>WebResourceTextEncodingName</key><string>UTF-8</string><key>WebResourceURL</key><string>{url}</string></dict>",
            String::from_utf8_lossy(&b)
        )
    }

    #[test]
    fn page_resources_and_frames_become_located_parts() {
        let main = resource(
            "https://e.example/a/",
            "text/html",
            "<title>Caf\u{e9} page</title><img src=i.png><iframe src=f.html></iframe>".as_bytes(),
        );
        let sub = resource("https://e.example/a/i.png", "image/png", b"\x89PNG");
        let frame = format!(
            "<dict><key>WebMainResource</key>{}<key>WebSubresources</key><array>{}</array></dict>",
            resource("https://e.example/a/f.html", "text/html", b"<img src=j.png>"),
            resource("https://e.example/a/j.png", "image/png", b"jpng"),
        );
        let raw = xml_archive(&main, &sub, &frame);
        assert!(is_webarchive(&raw));
        let m = parse(raw.clone()).expect("parses");
        assert_eq!(m.summary.subject.as_deref(), Some("Café page"));
        assert!(m.origin.notices.is_empty(), "{:?}", m.origin.notices);
        assert_eq!(m.origin.original.as_deref(), Some(&raw[..]));
        let html = m.html_body.expect("page");
        assert_eq!(m.parts[html].location.as_deref(), Some("https://e.example/a/"));
        for url in ["https://e.example/a/i.png", "https://e.example/a/f.html", "https://e.example/a/j.png"] {
            assert!(m.part_by_location(Some(0), url).is_some(), "{url}");
        }
        let png = m.part_by_location(Some(0), "https://e.example/a/i.png").expect("png");
        assert!(matches!(&m.parts[png].body, Body::Binary(b) if &b[..] == b"\x89PNG"));
    }

    #[test]
    fn damaged_archives_show_what_was_read() {
        let main = resource("https://e.example/", "text/html", b"<p>kept</p>");
        let full = xml_archive(&main, "", "");
        let cut: Arc<[u8]> = Arc::from(&full[..full.len() - 60]);
        let cases: &[(&str, Arc<[u8]>, bool)] = &[
            ("cut short", cut, true),
            ("no main resource", xml_archive("<dict/>", "", ""), false),
            ("binary garbage", Arc::from(&b"bplist00\x00\x01garbage"[..]), false),
        ];
        for (name, raw, has_page) in cases {
            let m = parse(raw.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!m.origin.notices.is_empty(), "{name}");
            assert_eq!(m.html_body.is_some(), *has_page, "{name}");
        }
    }
}

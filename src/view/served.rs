//! The type each part is served under and the file name it goes by: the declared type, or one
//! guessed from its name where the message declares none; whether a browser would render it as a
//! page; a name made for a part that has none.

use crate::model::{Body, Part};

/// The Content-Type to serve: as declared; guessed from the file name or Content-Location when the
/// message declares none or only `application/octet-stream`.
pub fn served_type(part: &Part) -> String {
    let declared = part.content_type.as_str();
    let valid = is_token_type(declared);
    if part.declared_type && valid && declared != "application/octet-stream" {
        return declared.to_string();
    }
    if let Body::Message(_) = part.body {
        return "message/rfc822".into();
    }
    let guess = part.filename.as_deref().and_then(|f| mime_guess::from_path(f).first()).or_else(|| {
        part.content_location
            .as_deref()
            .map(|l| l.split(['?', '#']).next().unwrap_or(l))
            .and_then(|l| mime_guess::from_path(l).first())
    });
    match guess {
        Some(m) => m.essence_str().to_string(),
        None if valid => declared.to_string(),
        None => "application/octet-stream".into(),
    }
}

/// The type a part's `/part/` URL answers with: [`served_type`], but HTML for an XHTML document
/// rewritten. The rewrite reads XHTML as HTML and writes HTML, and the browser must read what it
/// wrote as it did: read as XML, what HTML takes for text (a `<title>`, a `<textarea>`, a
/// `<style>`) would be markup the rewrite never saw.
pub fn answered_type(part: &Part) -> String {
    let served = served_type(part);
    if served == "application/xhtml+xml" && is_document(part, &served) {
        "text/html".into()
    } else {
        served
    }
}

/// Types served rewritten rather than as they are.
pub fn is_document(part: &Part, served: &str) -> bool {
    matches!((&part.body, served), (Body::Text(_), "text/html" | "application/xhtml+xml" | "text/css"))
}

/// Whether a browser shows a part served as `served` as a document that can load things, run
/// style sheets or frame other pages (HTML, XHTML, SVG, any XML with its style sheets). Such a part
/// that is not rewritten ([`is_document`]: an SVG, an HTML attachment of undeclared charset or
/// binary transfer, a file whose `.html` name gave its type) keeps its references as written: it
/// is only ever downloaded, never shown as a page, so that nothing in it can load remote content
/// or frame another part with remote content switched on. Pictures still show where a message
/// places them: an `<img>` ignores how the answer asks to be saved.
pub fn renders_as_page(served: &str) -> bool {
    matches!(
        served,
        "text/html"
            | "application/xhtml+xml"
            | "image/svg+xml"
            | "text/xml"
            | "application/xml"
            | "text/xsl"
            | "application/xslt+xml"
            | "multipart/x-mixed-replace"
    ) || served.ends_with("+xml")
}

fn is_token_type(ct: &str) -> bool {
    matches!(ct.split_once('/'), Some((a, b)) if is_restricted_name(a) && is_restricted_name(b))
}

/// Whether `s` is safe to name a type or a charset in an answer's Content-Type: RFC 6838's
/// restricted name (letters, digits and `!#$&-^_.+`, at most 127 characters).
pub(crate) fn is_restricted_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 127 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
}

/// Whether `c` has no place in a file name offered to save: a control character, or one that
/// changes how the text around it is shown without being seen itself (the bidirectional overrides
/// and isolates, zero-width characters), with which `invoice\u{202E}gpj.exe` shows as
/// `invoiceexe.jpg`.
pub fn hidden_in_file_name(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// A file name for a part: its own, else the last segment of its Content-Location, else one made
/// from its section and type.
pub fn part_filename(part: &Part) -> String {
    if let Some(f) = &part.filename {
        return f.clone();
    }
    let from_location = part
        .content_location
        .as_deref()
        .map(|l| l.split(['?', '#']).next().unwrap_or(l))
        .and_then(|l| l.rsplit('/').next())
        .filter(|s| !s.is_empty() && s.contains('.'))
        .map(crate::ids::decode_percent);
    from_location.unwrap_or_else(|| format!("part-{}.{}", part.section, extension_for(&served_type(part))))
}

/// The extension a file of `content_type` usually has: mime_guess lists a type's extensions in
/// alphabetical order (`text/plain` first as `.asm`, `image/jpeg` as `.jfif`), so the common types
/// are named here, the rest take the first it knows, else `.bin`.
fn extension_for(content_type: &str) -> &'static str {
    let usual = match content_type.to_ascii_lowercase().as_str() {
        "text/plain"
        | "text/enriched"
        | "message/delivery-status"
        | "message/disposition-notification"
        | "text/rfc822-headers" => "txt",
        "text/html" => "html",
        "image/jpeg" | "image/pjpeg" => "jpg",
        "audio/mpeg" => "mp3",
        "video/mpeg" => "mpg",
        "text/xml" | "application/xml" => "xml",
        "text/javascript" | "application/javascript" => "js",
        "text/rtf" => "rtf",
        "text/vcard" | "text/x-vcard" => "vcf",
        "application/ics" => "ics",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.ms-powerpoint" => "ppt",
        "application/pkcs7-mime" | "application/x-pkcs7-mime" => "p7m",
        "application/ms-tnef" | "application/vnd.ms-tnef" => "dat",
        "application/octet-stream" => "bin",
        _ => "",
    };
    if !usual.is_empty() {
        return usual;
    }
    mime_guess::get_mime_extensions_str(content_type).and_then(|e| e.first().copied()).unwrap_or("bin")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_without_a_name_get_the_usual_extension() {
        for (content_type, ext) in [
            ("text/plain", "txt"),
            ("TEXT/HTML", "html"),
            ("image/jpeg", "jpg"),
            ("image/png", "png"),
            ("application/pdf", "pdf"),
            ("message/rfc822", "eml"),
            ("message/delivery-status", "txt"),
            ("application/octet-stream", "bin"),
            ("application/x-no-such-type", "bin"),
        ] {
            assert_eq!(extension_for(content_type), ext, "{content_type}");
        }
    }
}

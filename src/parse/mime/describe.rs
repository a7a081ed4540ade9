//! A part as its header describes it: its media type (the first Content-Type, read as RFC 2045
//! allows and never a type made up of what was written), parameters, identifiers, file name,
//! disposition and transfer encoding, and for `message/external-body` where its data lives. No
//! place in the tree and no body: [`super`] gives it those.

use mail_parser::{ContentType, HeaderName, MimeHeaders, PartType};

use super::header::clean_text;
use super::{Walk, PARSER};
use crate::ids::strip_angles;
use crate::model::{Body, External, Message, Part};
use crate::parse::{external, params, transfer};
use crate::uri;

/// A file name mail-parser read with replacement characters, read again from the part's
/// Content-Disposition (`filename`) or Content-Type (`name`) field: continued over RFC 2231
/// segments (mail-parser decoded each segment alone), or written in raw 8-bit bytes without a
/// charset (mail-parser read them as UTF-8).
pub(super) fn filename_again(src: &mail_parser::MessagePart<'_>, walk: &Walk<'_>, raw: &[u8]) -> Option<String> {
    [(HeaderName::ContentDisposition, "filename"), (HeaderName::ContentType, "name")].into_iter().find_map(
        |(h, name)| {
            let h = src.headers.iter().find(|f| f.name == h)?;
            let field = raw.get(walk.at(h.offset_start, raw.len())..walk.at(h.offset_end, raw.len()))?;
            let continued = params::continued(&String::from_utf8_lossy(field), name);
            let eight_bit = || std::str::from_utf8(field).is_err().then(|| params::unlabelled(field, name));
            continued.or_else(|| eight_bit().flatten()).map(|f| f.trim().to_string())
        },
    )
}

/// A part as its header describes it (type, parameters, identifiers, name, disposition, and for
/// an external body where its data lives), with no place in the tree yet and no body. `body` is
/// what mail-parser made of the body, if it read it; `range` is where the body lies in `out.raw`.
pub(super) fn described(
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
pub(super) fn first_content_type<'a>(src: &'a mail_parser::MessagePart<'_>) -> Option<&'a ContentType<'a>> {
    src.headers.iter().find(|h| h.name == HeaderName::ContentType).and_then(|h| h.value.as_content_type())
}

/// The first Content-Transfer-Encoding, likewise.
pub(super) fn first_transfer_encoding<'a>(src: &'a mail_parser::MessagePart<'_>) -> Option<&'a str> {
    src.headers.iter().find(|h| h.name == HeaderName::ContentTransferEncoding).and_then(|h| h.value.as_text())
}

/// Whether a part has a Content-Type header, readable or not.
pub(super) fn has_content_type(src: &mail_parser::MessagePart<'_>) -> bool {
    src.headers.iter().any(|h| h.name == HeaderName::ContentType)
}

/// Types that are a message though mail-parser does not open them: `message/news` (RFC 5537 made
/// it `message/rfc822`, which is what it always held).
pub(super) fn is_enclosed_type(content_type: &str) -> bool {
    content_type == "message/news"
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

//! RFC 2392 identifiers: `cid:` / `mid:` URLs, header values, and the path segments mailshelf routes by.
//!
//! A Message-ID or Content-ID travels in three spellings: the header (`<a@b>`), the URL (`cid:a@b`,
//! percent-encoded), and our own path segment (`/part/<mid>/<cid>`). Everything that converts between
//! them lives here, so the codec is pinned by one table of tests.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Characters left as they are in a path segment: RFC 3986 unreserved plus the few sub-delims that
/// are common in ids and harmless in a path and in an HTML attribute. `/`, `%`, `&`, `;`, `?`, `#`,
/// quotes and angle brackets are always encoded, so a segment never splits, never reads as a query,
/// and never decodes differently inside HTML.
const SEGMENT_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'+')
    .remove(b'=')
    .remove(b':')
    .remove(b',');

/// Encodes a Message-ID or Content-ID (without angle brackets) as one URL path segment.
pub fn encode_segment(id: &str) -> String {
    utf8_percent_encode(id, SEGMENT_KEEP).to_string()
}

/// Decodes a percent-encoded segment or URL value; invalid UTF-8 is kept lossily rather than refused,
/// since hostile ids must still address something or fail cleanly.
pub fn decode_percent(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Strips white space and one pair of angle brackets from a header's msg-id.
pub fn strip_angles(raw: &str) -> &str {
    let t = raw.trim();
    t.strip_prefix('<').and_then(|s| s.strip_suffix('>')).unwrap_or(t).trim()
}

/// A parsed `cid:` or `mid:` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdUrl {
    /// `cid:C` — a body part by Content-ID.
    Content(String),
    /// `mid:M` — a whole message.
    Message(String),
    /// `mid:M/C` — a body part inside message M.
    MessagePart(String, String),
}

/// Splits off a URL scheme, case-insensitively; `None` when `url` does not start with `scheme:`.
pub fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let head = url.get(..scheme.len() + 1)?;
    if head[..scheme.len()].eq_ignore_ascii_case(scheme) && head.ends_with(':') {
        Some(&url[scheme.len() + 1..])
    } else {
        None
    }
}

/// Parses a `cid:` or `mid:` URL (RFC 2392). The value is percent-decoded; angle brackets that
/// some writers leave in are tolerated. Returns `None` for other schemes or an empty id.
pub fn parse_id_url(url: &str) -> Option<IdUrl> {
    let url = url.trim();
    if let Some(rest) = strip_scheme(url, "cid") {
        let id = decode_percent(rest);
        let id = strip_angles(&id);
        return (!id.is_empty()).then(|| IdUrl::Content(id.to_string()));
    }
    let rest = strip_scheme(url, "mid")?;
    // A `/` inside a Message-ID is encoded as %2F, so the first literal `/` separates the two ids.
    let (m, c) = match rest.split_once('/') {
        Some((m, c)) => (m, Some(c)),
        None => (rest, None),
    };
    let mid = decode_percent(m);
    let mid = strip_angles(&mid).to_string();
    if mid.is_empty() {
        return None;
    }
    match c.map(decode_percent) {
        Some(c) if !strip_angles(&c).is_empty() => Some(IdUrl::MessagePart(mid, strip_angles(&c).to_string())),
        _ => Some(IdUrl::Message(mid)),
    }
}

/// Builds the `cid:` URL for a Content-ID (without angle brackets).
pub fn cid_url(content_id: &str) -> String {
    format!("cid:{}", encode_segment(content_id))
}

/// Builds the `mid:` URL for a Message-ID, optionally naming a part.
pub fn mid_url(message_id: &str, content_id: Option<&str>) -> String {
    match content_id {
        Some(c) => format!("mid:{}/{}", encode_segment(message_id), encode_segment(c)),
        None => format!("mid:{}", encode_segment(message_id)),
    }
}

/// The id given to a message that has no Message-ID: derived from its bytes, so it is stable
/// across restarts and the same for the same message wherever it is found.
pub fn derived_message_id(raw: &[u8]) -> String {
    let hash = blake3::hash(raw);
    let mut first = [0u8; 16];
    first.copy_from_slice(&hash.as_bytes()[..16]);
    derived_id(&first)
}

/// The id derived from the first 128 bits of BLAKE3 over a message's bytes (a content hash, as
/// the index keeps it): what [`derived_message_id`] gives for those bytes.
pub fn derived_id(hash: &[u8; 16]) -> String {
    let mut id = String::with_capacity(32 + "@mailshelf.invalid".len());
    for b in hash {
        id.push_str(&format!("{b:02x}"));
    }
    id.push_str("@mailshelf.invalid");
    id
}

/// The prefix of a part segment that addresses a part by its MIME section number (`~1.2`) rather
/// than by Content-ID: used for parts that have no Content-ID.
pub const SECTION_PREFIX: char = '~';

/// The path segment naming a part by section number.
pub fn section_segment(section: &str) -> String {
    format!("{SECTION_PREFIX}{section}")
}

/// Reads a section segment (`~1.2.3`) back; `None` when `seg` is not of that form.
pub fn parse_section_segment(seg: &str) -> Option<Vec<usize>> {
    let rest = seg.strip_prefix(SECTION_PREFIX)?;
    if rest.is_empty() {
        return None;
    }
    rest.split('.')
        .map(
            |n| {
                if n.is_empty() || n.len() > 6 || !n.bytes().all(|b| b.is_ascii_digit()) {
                    None
                } else {
                    n.parse().ok()
                }
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cid_and_mid_urls() {
        let cases: &[(&str, Option<IdUrl>)] = &[
            ("cid:foo4*foo1@bar.net", Some(IdUrl::Content("foo4*foo1@bar.net".into()))),
            ("CID:foo4%25foo1@bar.net", Some(IdUrl::Content("foo4%foo1@bar.net".into()))),
            ("cid:<a@b>", Some(IdUrl::Content("a@b".into()))),
            ("cid:%3Ca@b%3E", Some(IdUrl::Content("a@b".into()))),
            ("cid:", None),
            ("mid:960830.1639@XIson.com", Some(IdUrl::Message("960830.1639@XIson.com".into()))),
            (
                "mid:960830.1639@XIson.com/partA.960830.1639@XIson.com",
                Some(IdUrl::MessagePart("960830.1639@XIson.com".into(), "partA.960830.1639@XIson.com".into())),
            ),
            ("mid:a%2Fb@c/d", Some(IdUrl::MessagePart("a/b@c".into(), "d".into()))),
            ("mid:a@b/", Some(IdUrl::Message("a@b".into()))),
            ("http://x/", None),
            ("midi:x", None),
        ];
        for (url, want) in cases {
            assert_eq!(&parse_id_url(url), want, "{url}");
        }
    }

    #[test]
    fn segments_round_trip() {
        for id in ["a@b", "a/b@c", "x y%z", "é@ü", "<>\"&;?#", "~1"] {
            let seg = encode_segment(id);
            assert!(!seg.contains(['/', '&', '"', '<', '>', '?', '#', ';', ' ']), "{seg}");
            assert_eq!(decode_percent(&seg), id);
            assert_eq!(parse_id_url(&cid_url(id)), Some(IdUrl::Content(strip_angles(id).into())));
        }
        assert_eq!(mid_url("a/b@c", Some("d@e")), "mid:a%2Fb@c/d@e");
    }

    #[test]
    fn sections() {
        assert_eq!(parse_section_segment("~1.2"), Some(vec![1, 2]));
        assert_eq!(parse_section_segment("~"), None);
        assert_eq!(parse_section_segment("~1..2"), None);
        assert_eq!(parse_section_segment("1.2"), None);
        assert_eq!(section_segment("3.1"), "~3.1");
    }
}

//! Bytes in memory answered like files on a good web server: a strong ETag and conditional GET
//! (`If-Match`, `If-None-Match`, `If-Range`, in RFC 9110 §13.2.2's order), one byte range (RFC 9110 §14), a safe Content-Disposition (RFC 6266), the cache lifetime, and the
//! sandboxing policy on anything that came from a message.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::csp::content_csp;
use crate::view::{etag_of, hidden_in_file_name};

/// RFC 5987 attr-char: what may stand unencoded in `filename*`.
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `inline; filename="ascii"; filename*=UTF-8''…` (RFC 6266). Control characters, path separators
/// and quotes never reach the header, so a hostile name cannot add headers or escape a folder.
pub(crate) fn content_disposition(kind: &str, name: &str) -> String {
    let clean: String =
        name.chars().map(|c| if hidden_in_file_name(c) || matches!(c, '/' | '\\') { '_' } else { c }).collect();
    let clean = clean.trim().trim_start_matches('.');
    let clean = if clean.is_empty() { "part" } else { clean };
    let ascii: String = clean.chars().map(|c| if c.is_ascii() && !matches!(c, '"' | '%') { c } else { '_' }).collect();
    let encoded = utf8_percent_encode(clean, ATTR_CHAR);
    format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// Bytes in memory answered with file semantics.
pub(crate) struct FileResponse {
    bytes: Bytes,
    etag: Option<String>,
    content_type: String,
    disposition: Option<String>,
    csp: Option<String>,
    cache: &'static str,
}

/// Cache lifetimes, from the most to the least shareable.
pub(crate) mod cache {
    /// mailshelf's own assets: the URL changes whenever the bytes do.
    pub(crate) const PUBLIC_IMMUTABLE: &str = "public, max-age=31536000, immutable";
    /// Decoded parts and raw messages: never change at their URL, and are nobody else's.
    pub(crate) const PRIVATE_IMMUTABLE: &str = "private, max-age=31536000, immutable";
    /// Rewritten documents: revalidated, since where a reference leads may change.
    pub(crate) const REVALIDATE: &str = "private, no-cache";
}

impl FileResponse {
    pub(crate) fn new(bytes: Bytes, content_type: String) -> Self {
        FileResponse { bytes, etag: None, content_type, disposition: None, csp: None, cache: cache::REVALIDATE }
    }

    /// A validator known in advance (otherwise one is computed from the bytes).
    pub(crate) fn etag(mut self, etag: String) -> Self {
        self.etag = Some(etag);
        self
    }

    pub(crate) fn disposition(mut self, d: String) -> Self {
        self.disposition = Some(d);
        self
    }

    /// Marks the bytes as message content: sandboxed, nothing but our own resources.
    pub(crate) fn content_policy(self, allow_remote: bool) -> Self {
        self.content_policy_as(allow_remote, false)
    }

    /// [`FileResponse::content_policy`], with the sandbox of a server people sign in to (see
    /// [`super::csp::sandbox`]).
    pub(crate) fn content_policy_as(mut self, allow_remote: bool, same_origin: bool) -> Self {
        self.csp = Some(content_csp(allow_remote, same_origin));
        self
    }

    /// How long the bytes may be kept; one of [`cache`].
    pub(crate) fn cache(mut self, cache_control: &'static str) -> Self {
        self.cache = cache_control;
        self
    }

    /// Answers `If-None-Match` with 304 and `Range` with 206/416; otherwise 200.
    pub(crate) fn respond(self, req: &HeaderMap) -> Response {
        let (headers, etag) = self.head();
        answer(headers, &etag, self.bytes, req)
    }

    /// The headers every answer for these bytes carries, and their validator: what [`answer`]
    /// needs besides the bytes, so that a handler can keep both and answer again without
    /// building either.
    pub(crate) fn head(&self) -> (HeaderMap, String) {
        let etag = self.etag.clone().unwrap_or_else(|| etag_of(&self.bytes));
        let mut headers = HeaderMap::new();
        let mut set = |name: header::HeaderName, value: &str| {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(name, v);
            }
        };
        set(header::ETAG, &etag);
        set(header::CACHE_CONTROL, self.cache);
        set(header::ACCEPT_RANGES, "bytes");
        set(header::CONTENT_TYPE, &self.content_type);
        if let Some(d) = &self.disposition {
            set(header::CONTENT_DISPOSITION, d);
        }
        if let Some(csp) = &self.csp {
            set(header::CONTENT_SECURITY_POLICY, csp);
        }
        (headers, etag)
    }

    /// The bytes, for a handler that keeps them with their [`FileResponse::head`].
    pub(crate) fn into_bytes(self) -> Bytes {
        self.bytes
    }
}

/// What a request gets of `bytes` with `headers` (from [`FileResponse::head`]): 412 for an
/// `If-Match` of other bytes, 304 for a matching `If-None-Match`, 206 or 416 for a `Range`, else
/// 200.
pub(crate) fn answer(mut headers: HeaderMap, etag: &str, bytes: Bytes, req: &HeaderMap) -> Response {
    if !if_match_holds(req, etag) {
        for name in [header::CONTENT_LENGTH, header::CONTENT_TYPE, header::CONTENT_DISPOSITION] {
            headers.remove(name);
        }
        return response(StatusCode::PRECONDITION_FAILED, headers, Body::empty());
    }
    if etag_matches(req, etag) {
        headers.remove(header::CONTENT_LENGTH);
        return response(StatusCode::NOT_MODIFIED, headers, Body::empty());
    }
    let total = bytes.len();
    let range = range_asked(req, etag, total);
    if matches!(range, Some(RangeAnswer::Unsatisfiable | RangeAnswer::Range(..))) {
        // `headers` may carry the whole answer's length; the router writes the one sent.
        headers.remove(header::CONTENT_LENGTH);
    }
    match range {
        Some(RangeAnswer::Unsatisfiable) => {
            headers.insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{total}")).unwrap_or(HeaderValue::from_static("bytes */0")),
            );
            headers.remove(header::CONTENT_TYPE);
            response(StatusCode::RANGE_NOT_SATISFIABLE, headers, Body::empty())
        }
        Some(RangeAnswer::Range(start, end)) => {
            if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{end}/{total}")) {
                headers.insert(header::CONTENT_RANGE, v);
            }
            let slice = bytes.slice(start..=end);
            response(StatusCode::PARTIAL_CONTENT, headers, Body::from(slice))
        }
        Some(RangeAnswer::Whole) | None => response(StatusCode::OK, headers, Body::from(bytes)),
    }
}

/// A response with these headers as they are (not added one by one to an empty map).
pub(crate) fn response(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut res = Response::new(body);
    *res.status_mut() = status;
    *res.headers_mut() = headers;
    res
}

/// Whether a request is answered with every byte of `total`, 200 (no `Range`, one not taken, or an
/// `If-Range` for other bytes), rather than 304, 206 or 416.
pub(crate) fn whole_answer(req: &HeaderMap, etag: &str, total: usize) -> bool {
    if_match_holds(req, etag)
        && !etag_matches(req, etag)
        && matches!(range_asked(req, etag, total), None | Some(RangeAnswer::Whole))
}

/// `If-Match` (RFC 9110 §13.1.1): absent, `*`, or one of its tags equal to ours by the strong
/// comparison (a weak tag never is). A script that read these bytes and asks for them again only
/// if they are still the same learns that they are not.
fn if_match_holds(req: &HeaderMap, etag: &str) -> bool {
    let mut fields = req.get_all(header::IF_MATCH).iter().peekable();
    if fields.peek().is_none() {
        return true;
    }
    fields.filter_map(|v| v.to_str().ok()).any(|v| v.split(',').map(str::trim).any(|t| t == "*" || t == etag))
}

/// The `Range` a request asks for, if it asks for one of these bytes.
fn range_asked(req: &HeaderMap, etag: &str, total: usize) -> Option<RangeAnswer> {
    req.get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        // If-Range with a different validator means: send the whole thing.
        .filter(|_| req.get(header::IF_RANGE).and_then(|v| v.to_str().ok()).is_none_or(|v| v == etag))
        .map(|r| parse_range(r, total))
}

/// `If-None-Match` (RFC 9110 §13.1.2): `*`, or any listed tag equal to ours by the weak comparison.
pub(crate) fn etag_matches(req: &HeaderMap, etag: &str) -> bool {
    req.get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').map(str::trim).any(|t| t == "*" || t == etag || t.strip_prefix("W/") == Some(etag)))
}

#[derive(Debug, PartialEq, Eq)]
enum RangeAnswer {
    /// Inclusive byte positions.
    Range(usize, usize),
    Unsatisfiable,
    /// A header we do not take (several ranges, another unit, bad syntax): send everything.
    Whole,
}

/// RFC 9110 §14.1.2 for one byte range: `a-b`, `a-`, `-n`.
fn parse_range(h: &str, total: usize) -> RangeAnswer {
    let Some(spec) = h.trim().strip_prefix("bytes=") else { return RangeAnswer::Whole };
    if spec.contains(',') {
        return RangeAnswer::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else { return RangeAnswer::Whole };
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| s.parse::<usize>().ok();
    match (a.is_empty(), b.is_empty()) {
        (true, false) => match num(b) {
            Some(0) => RangeAnswer::Unsatisfiable,
            Some(n) if total > 0 => RangeAnswer::Range(total.saturating_sub(n), total - 1),
            Some(_) => RangeAnswer::Unsatisfiable,
            None => RangeAnswer::Whole,
        },
        (false, _) => match (num(a), if b.is_empty() { Some(usize::MAX) } else { num(b) }) {
            (Some(s), Some(e)) if s <= e => {
                if s >= total {
                    RangeAnswer::Unsatisfiable
                } else {
                    RangeAnswer::Range(s, e.min(total - 1))
                }
            }
            _ => RangeAnswer::Whole,
        },
        (true, true) => RangeAnswer::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let cases = [
            ("bytes=0-3", 10, RangeAnswer::Range(0, 3)),
            ("bytes=5-", 10, RangeAnswer::Range(5, 9)),
            ("bytes=-3", 10, RangeAnswer::Range(7, 9)),
            ("bytes=-30", 10, RangeAnswer::Range(0, 9)),
            ("bytes=8-20", 10, RangeAnswer::Range(8, 9)),
            ("bytes=10-", 10, RangeAnswer::Unsatisfiable),
            ("bytes=-0", 10, RangeAnswer::Unsatisfiable),
            ("bytes=0-1,3-4", 10, RangeAnswer::Whole),
            ("items=0-1", 10, RangeAnswer::Whole),
            ("bytes=4-2", 10, RangeAnswer::Whole),
        ];
        for (h, total, want) in cases {
            assert_eq!(parse_range(h, total), want, "{h}");
        }
    }

    #[test]
    fn dispositions_cannot_inject() {
        let d = content_disposition("inline", "evil\r\nX-Injected: yes\".txt");
        assert!(!d.contains(['\r', '\n']));
        assert!(d.starts_with(
            "inline; filename=\"evil__X-Injected: yes_.txt\"; filename*=UTF-8''evil__X-Injected%3A%20yes%22.txt"
        ));
        let d = content_disposition("attachment", "Rechnung März.pdf");
        assert!(d.ends_with("filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf"), "{d}");
        assert!(content_disposition("inline", "../../etc/passwd").contains("filename=\"_.._etc_passwd\""));
        // A right-to-left override would show `invoice\u{202E}gpj.exe` as `invoiceexe.jpg`.
        let d = content_disposition("attachment", "invoice\u{202E}gpj.exe");
        assert!(d.contains("filename=\"invoice_gpj.exe\"") && d.ends_with("filename*=UTF-8''invoice_gpj.exe"), "{d}");
    }
}

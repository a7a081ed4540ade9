//! Parts and raw messages served like files on a good web server: the right Content-Type, a safe
//! Content-Disposition (RFC 6266), a strong ETag from the bytes, conditional GET, byte ranges, and
//! the sandboxing CSP on everything that came from a message.

use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use crate::app::{blocking, content_csp, ApiError, AppState};
use crate::archive::Loaded;
use crate::error::Error;
use crate::model::{Body as PartBody, Part, PartIdx};
use crate::rewrite::{self, Options};
use crate::route::{self, Resolver};

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PartQuery {
    /// `1`: let remote images, styles, fonts and media load in this document.
    #[serde(default)]
    pub remote: Option<String>,
    /// `1`: `Content-Disposition: attachment` (save rather than show).
    #[serde(default)]
    pub download: Option<String>,
    /// `1`: the body still transfer-encoded, exactly as it sits in the message.
    #[serde(default)]
    pub raw: Option<String>,
}

/// Rewritten HTML and CSS parts, so a body viewed again (or by many clients) is not rewritten per
/// request. Keyed by the index generation too: a change anywhere may change where a reference in
/// it leads.
#[derive(Default)]
pub struct RenderCache(std::sync::Mutex<std::collections::VecDeque<(RenderKey, Rendered)>>);

/// Entry, part, remote content allowed, index generation.
type RenderKey = (crate::index::EntryId, PartIdx, bool, u64);

/// Rewritten documents kept.
const RENDERED: usize = 64;

/// A rewritten HTML or CSS part.
#[derive(Clone)]
pub struct Rendered {
    pub bytes: Bytes,
    pub etag: String,
    /// Remote resources it would have loaded and does not.
    pub blocked: usize,
}

impl RenderCache {
    fn get(&self, key: RenderKey) -> Option<Rendered> {
        let cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cache.iter().find(|(k, _)| *k == key).map(|(_, r)| r.clone())
    }

    fn put(&self, key: RenderKey, rendered: Rendered) {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= RENDERED {
            cache.pop_front();
        }
        cache.push_back((key, rendered));
    }
}

/// A text part rewritten (as CSS for `text/css`, else as HTML), taken from the cache when there:
/// the message page counts what its body blocks, and the frame then loads the same rewrite.
pub fn render(state: &AppState, loaded: &Loaded, idx: PartIdx, remote: bool) -> Rendered {
    let key = (loaded.id, idx, remote, state.archive.index().generation());
    if let Some(hit) = state.rendered.get(key) {
        return hit;
    }
    let msg = loaded.message();
    let part = &msg.parts[idx];
    let resolver = Resolver { archive: &state.archive, key: &loaded.entry.key, msg, part: idx, remote };
    let opts = Options { allow_remote: remote, ..Options::default() };
    let text = match &part.body {
        PartBody::Text(t) => t.as_str(),
        _ => "",
    };
    let out = if served_type(part) == "text/css" {
        rewrite::rewrite_css(text, &part.base, &resolver, opts)
    } else {
        rewrite::rewrite_html(text, &part.base, &resolver, opts)
    };
    let bytes = Bytes::from(out.output);
    let rendered = Rendered { etag: etag_of(&bytes), bytes, blocked: out.blocked };
    state.rendered.put(key, rendered.clone());
    rendered
}

/// A strong validator for bytes: a hash of them.
fn etag_of(bytes: &[u8]) -> String {
    format!("\"{}\"", &blake3::hash(bytes).to_hex()[..32])
}

pub fn flag(v: &Option<String>) -> bool {
    matches!(v.as_deref(), Some("1" | "true" | "yes" | "on" | ""))
}

/// Looks up and loads a message by the id in its URL: from the cache when it is there, else read
/// and parsed off the async threads.
pub async fn load_message(state: &AppState, key: String) -> Result<Loaded, Error> {
    let id = state.archive.find(&key).ok_or(Error::MessageNotFound)?;
    if let Some(hit) = state.archive.load_cached(id) {
        return Ok(hit);
    }
    let archive = state.archive.clone();
    blocking(move || archive.load(id)).await
}

/// A part's decoded bytes (HTML and CSS rewritten to mailshelf's URLs), with file semantics:
/// ETag, conditional GET, byte ranges, `?download=1`, `?raw=1`.
#[utoipa::path(get, path = "/part/{mid}/{cid}", tag = "parts",
    params(
        ("mid" = String, Path, description = "The message id"),
        ("cid" = String, Path, description = "The part's Content-ID, or `~` and its MIME section number (`~1.2`)"),
        ("range" = Option<String>, Header, description = "One byte range, `bytes=a-b`"),
        ("if-none-match" = Option<String>, Header, description = "An ETag from an earlier answer"),
        PartQuery,
    ),
    responses(
        (status = 200, description = "The part, with its Content-Type", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 206, description = "The requested byte range", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 304, description = "Unchanged since the given ETag"),
        (status = 400, description = "Malformed id", body = crate::api::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message or part", body = crate::api::Problem, content_type = "application/problem+json"),
        (status = 416, description = "The range is beyond the part"),
    ))]
pub async fn part(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
    Query(q): Query<PartQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path((mid, cid)) = path.map_err(|_| Error::BadId)?;
    let loaded = load_message(&state, mid).await?;
    let msg = loaded.message();
    let idx = route::find_part(msg, &cid).ok_or(Error::PartNotFound)?;
    let part = &msg.parts[idx];
    let remote = flag(&q.remote);
    let disposition = disposition(part, flag(&q.download));
    if flag(&q.raw) {
        let bytes = Bytes::copy_from_slice(msg.raw.get(part.raw_range.clone()).unwrap_or(&[]));
        return Ok(FileResponse::new(bytes, "application/octet-stream".into())
            .disposition(disposition)
            .content_policy(false)
            .immutable()
            .respond(&headers));
    }
    let content_type = served_type(part);
    let is_document = matches!(
        (&part.body, content_type.as_str()),
        (PartBody::Text(_), "text/html" | "application/xhtml+xml" | "text/css")
    );
    let res = if is_document {
        let rendered = render(&state, &loaded, idx, remote);
        FileResponse::new(rendered.bytes, with_charset(part, &content_type)).etag(rendered.etag)
    } else {
        let bytes = match &part.body {
            PartBody::Multipart => Bytes::copy_from_slice(msg.raw.get(part.raw_range.clone()).unwrap_or(&[])),
            _ => part.shared_bytes(),
        };
        // The message's bytes decide the part's: their hash and the section name it for good.
        let etag = format!("\"{}-{}\"", loaded.entry.hash, part.section);
        FileResponse::new(bytes, with_charset(part, &content_type)).etag(etag).immutable()
    };
    let res = res.disposition(disposition).content_policy(remote);
    let mut response = res.respond(&headers);
    if is_font(&content_type) {
        // Fonts are fetched in CORS mode, and a sandboxed message has an opaque origin.
        response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    }
    Ok(response)
}

/// The message exactly as it was given (as text/plain, so no browser renders it).
#[utoipa::path(get, path = "/raw/{mid}", tag = "parts",
    params(("mid" = String, Path, description = "The message id"), PartQuery),
    responses(
        (status = 200, description = "The message's bytes", content_type = "text/plain", body = Vec<u8>),
        (status = 206, description = "The requested byte range", content_type = "text/plain", body = Vec<u8>),
        (status = 304, description = "Unchanged since the given ETag"),
        (status = 400, description = "Malformed id", body = crate::api::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message", body = crate::api::Problem, content_type = "application/problem+json"),
        (status = 416, description = "The range is beyond the message"),
    ))]
pub async fn raw(
    State(state): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    Query(q): Query<PartQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(mid) = path.map_err(|_| Error::BadId)?;
    let loaded = load_message(&state, mid).await?;
    let msg = loaded.message();
    let kind = if flag(&q.download) { "attachment" } else { "inline" };
    let name = format!("{}.eml", safe_stem(&loaded.entry.key));
    // Shown as text so a browser never interprets a message as a page.
    Ok(FileResponse::new(Bytes::copy_from_slice(&msg.raw), "text/plain; charset=utf-8".into())
        .etag(format!("\"{}\"", loaded.entry.hash))
        .disposition(content_disposition(kind, &name))
        .content_policy(false)
        .immutable()
        .respond(&headers))
}

/// The Content-Type to serve: as declared; guessed from the file name or Content-Location when the
/// message declares none or only `application/octet-stream`.
pub fn served_type(part: &Part) -> String {
    let declared = part.content_type.as_str();
    let valid = is_token_type(declared);
    if part.declared_type && valid && declared != "application/octet-stream" {
        return declared.to_string();
    }
    if let PartBody::Message(_) = part.body {
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

/// Text bodies were decoded to UTF-8 by the parser, so that is the charset we state; other bodies
/// are served as the bytes they are, with no charset claimed.
fn with_charset(part: &Part, content_type: &str) -> String {
    if part.is_text() {
        format!("{content_type}; charset=utf-8")
    } else {
        content_type.to_string()
    }
}

fn is_font(ct: &str) -> bool {
    ct.starts_with("font/") || ct.contains("font-") || ct == "application/vnd.ms-fontobject"
}

fn is_token_type(ct: &str) -> bool {
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    matches!(ct.split_once('/'), Some((a, b)) if token(a) && token(b))
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
    from_location.unwrap_or_else(|| {
        let ext =
            mime_guess::get_mime_extensions_str(&served_type(part)).and_then(|e| e.first().copied()).unwrap_or("bin");
        format!("part-{}.{ext}", part.section)
    })
}

fn disposition(part: &Part, download: bool) -> String {
    let kind = if download { "attachment" } else { "inline" };
    content_disposition(kind, &part_filename(part))
}

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
pub fn content_disposition(kind: &str, name: &str) -> String {
    let clean: String = name.chars().map(|c| if c.is_control() || matches!(c, '/' | '\\') { '_' } else { c }).collect();
    let clean = clean.trim().trim_start_matches('.');
    let clean = if clean.is_empty() { "part" } else { clean };
    let ascii: String = clean.chars().map(|c| if c.is_ascii() && !matches!(c, '"' | '%') { c } else { '_' }).collect();
    let encoded = utf8_percent_encode(clean, ATTR_CHAR);
    format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

fn safe_stem(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@') { c } else { '_' })
        .take(80)
        .collect()
}

/// Bytes in memory answered with file semantics.
pub struct FileResponse {
    bytes: Bytes,
    etag: Option<String>,
    content_type: String,
    disposition: Option<String>,
    csp: Option<String>,
    cache: &'static str,
}

impl FileResponse {
    pub fn new(bytes: Bytes, content_type: String) -> Self {
        FileResponse { bytes, etag: None, content_type, disposition: None, csp: None, cache: "private, no-cache" }
    }

    /// A validator known in advance (otherwise one is computed from the bytes).
    pub fn etag(mut self, etag: String) -> Self {
        self.etag = Some(etag);
        self
    }

    pub fn disposition(mut self, d: String) -> Self {
        self.disposition = Some(d);
        self
    }

    /// Marks the bytes as message content: sandboxed, nothing but our own resources.
    pub fn content_policy(mut self, allow_remote: bool) -> Self {
        self.csp = Some(content_csp(allow_remote));
        self
    }

    /// Bytes that never change at this URL (decoded parts, raw messages).
    pub fn immutable(mut self) -> Self {
        self.cache = "private, max-age=31536000, immutable";
        self
    }

    /// Answers `If-None-Match` with 304 and `Range` with 206/416; otherwise 200.
    pub fn respond(self, req: &HeaderMap) -> Response {
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
        if etag_matches(req, &etag) {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        let total = self.bytes.len();
        let range = req
            .get(header::RANGE)
            .and_then(|v| v.to_str().ok())
            // If-Range with a different validator means: send the whole thing.
            .filter(|_| req.get(header::IF_RANGE).and_then(|v| v.to_str().ok()).is_none_or(|v| v == etag))
            .map(|r| parse_range(r, total));
        match range {
            Some(RangeAnswer::Unsatisfiable) => {
                headers.insert(
                    header::CONTENT_RANGE,
                    HeaderValue::from_str(&format!("bytes */{total}")).unwrap_or(HeaderValue::from_static("bytes */0")),
                );
                headers.remove(header::CONTENT_TYPE);
                (StatusCode::RANGE_NOT_SATISFIABLE, headers).into_response()
            }
            Some(RangeAnswer::Range(start, end)) => {
                if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{end}/{total}")) {
                    headers.insert(header::CONTENT_RANGE, v);
                }
                let slice = self.bytes.slice(start..=end);
                (StatusCode::PARTIAL_CONTENT, headers, Body::from(slice)).into_response()
            }
            Some(RangeAnswer::Whole) | None => (StatusCode::OK, headers, Body::from(self.bytes)).into_response(),
        }
    }
}

fn etag_matches(req: &HeaderMap, etag: &str) -> bool {
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
    }
}

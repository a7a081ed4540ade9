//! `/part/<mid>/<cid>` and `/raw/<mid>`: a message's parts and its source, served like files, with
//! HTML and CSS rewritten to mailshelf's URLs and the sandboxing policy on everything; a
//! document's text with `?text=1`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::error::{ApiError, Problem};
use super::extract::{flag, Ids, Params, PartIds};
use super::file::{cache, content_disposition, FileResponse};
use super::gate::Viewer;
use super::served;
use super::state::AppState;
use crate::error::Error;
use crate::model::{Body as PartBody, Part};
use crate::route;
use crate::view::{answered_type, blocking, external_place, is_document, part_filename, renders_as_page, served_type};

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PartQuery {
    /// `1`: let remote images, styles, fonts and media load in this document.
    #[serde(default)]
    pub remote: Option<String>,
    /// `1`: `Content-Disposition: attachment` (save rather than show), with the file as it was
    /// sent: a text or HTML part in its own charset and never rewritten.
    #[serde(default)]
    pub download: Option<String>,
    /// `1`: the body still transfer-encoded, exactly as it sits in the message.
    #[serde(default)]
    pub raw: Option<String>,
    /// `1`: an HTML part with its quoted passages folded away behind “Quoted text” (as a
    /// conversation page shows each reply).
    #[serde(default)]
    pub fold: Option<String>,
    /// `1`: the text of a document (PDF, Office, OpenDocument, RTF, HTML, text, zip archive) as
    /// `text/plain; charset=utf-8`, what search finds in it; a document cut at a bound, or with
    /// parts that could not be read, says so in its first lines.
    #[serde(default)]
    pub text: Option<String>,
}

/// A part's decoded bytes (HTML and CSS rewritten to mailshelf's URLs), with file semantics:
/// ETag, conditional GET, byte ranges, `?download=1`, `?raw=1`. An external body
/// (`message/external-body`) has no bytes here: `303` to its data's http or https URL, else `404`
/// saying where the data is; mailshelf never fetches it.
#[utoipa::path(get, path = "/part/{mid}/{cid}", tag = "parts",
    params(
        ("mid" = String, Path, description = "The message id"),
        ("cid" = String, Path, description = "The part's Content-ID, or `~` and its MIME section number (`~1.2`)"),
        ("range" = Option<String>, Header, description = "One byte range, `bytes=a-b`"),
        ("if-none-match" = Option<String>, Header, description = "An ETag from an earlier answer"),
        PartQuery,
    ),
    responses(
        (status = 200, description = "The part, with its own Content-Type (as declared, else guessed from its name, else application/octet-stream); with `text=1`, the document's text as text/plain",
            content((Vec<u8> = "*/*"), (String = "text/plain"))),
        (status = 206, description = "The requested byte range, with the part's Content-Type", content_type = "*/*", body = Vec<u8>),
        (status = 303, description = "An external body (message/external-body) whose data is at an http or https URL: that URL",
            headers(("location" = String, description = "The URL the message gives for the data"))),
        (status = 304, description = "Unchanged since the given ETag"),
        (status = 412, description = "An If-Match of other bytes"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message or part, or an external body whose data is not at a web URL (the detail says where it is)", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "The range is beyond the part"),
        (status = 422, description = "With `text=1`: a part that is no document mailshelf reads, or one it could not read (the detail says why)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn part(
    State(state): State<AppState>,
    Viewer(view, _): Viewer,
    PartIds(mid, cid): PartIds,
    Params(q, _): Params<PartQuery>,
    // The request itself, for its conditional and range headers: taking them as a `HeaderMap`
    // would copy them for every request.
    request: Request,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    let same_origin = state.signs_in();
    // The generation is read first: an answer made while the index changes is kept under the
    // older one, where nothing asks for it again.
    let generation = state.archive().index().generation();
    let (remote, download, raw, fold) = (flag(&q.remote), flag(&q.download), flag(&q.raw), flag(&q.fold));
    let key = served::Key {
        generation,
        mid,
        cid,
        switches: served::Key::switches(remote, download, raw, fold, same_origin),
        access: view.access().clone(),
    };
    let text = flag(&q.text);
    if !text {
        if let Some(kept) = state.served.get(&key) {
            // Asked again of every request, kept answer or not: whether this reader may read the
            // message the answer was made from.
            if view.may_read(kept.entry()).await? {
                return Ok(state.served.respond(&kept, headers).await);
            }
        }
    }
    let entry = view.find_entry(&key.mid).await?;
    let loaded = view.load_found(entry).await?;
    let msg = loaded.message();
    let idx = route::find_part(msg, &key.cid).ok_or(Error::PartNotFound)?;
    let part = &msg.parts[idx];
    if let Some(external) = &part.external {
        // Never the phantom: a web URL is where the browser goes instead (under the CSP of the
        // document asking, as any remote reference), anything else is only described.
        return match external.redirect() {
            Some(url) => Ok(see_other(url)),
            None => Err(Error::ExternalBody(external_place(external)).into()),
        };
    }
    if text {
        return document_text(&view, &loaded, idx, headers).await;
    }
    let content_type = served_type(part);
    let lasting = lasting(&loaded);
    // A download is a file saved, never shown: a text part's bytes as they were sent.
    let sent = if download && !raw { crate::parse::sent_bytes(msg, idx) } else { None };
    let rewritten = is_document(part, &content_type) && sent.is_none();
    let disposition = disposition(part, download || (!rewritten && renders_as_page(&content_type)));
    let (res, font) = if let Some(sent) = sent {
        let content_type = match part.charset.as_deref().filter(|c| crate::view::is_restricted_name(c)) {
            Some(charset) => format!("{content_type}; charset={charset}"),
            None => content_type,
        };
        let etag = format!("\"{}-{}-sent\"", view.bytes_hash(&loaded), part.section);
        let res = FileResponse::new(Bytes::copy_from_slice(&sent), content_type)
            .etag(etag)
            .disposition(disposition)
            .content_policy_as(false, same_origin)
            .cache(lasting);
        (res, false)
    } else if raw {
        let bytes = Bytes::copy_from_slice(msg.raw.get(part.raw_range.clone()).unwrap_or(&[]));
        let res = FileResponse::new(bytes, "application/octet-stream".into())
            .disposition(disposition)
            .content_policy_as(false, same_origin)
            .cache(lasting);
        (res, false)
    } else {
        let res = if rewritten {
            let fold = fold && content_type != "text/css";
            let rendered = view.rendered_as(&loaded, idx, remote, fold).await?;
            FileResponse::new(rendered.bytes, with_charset(part, &answered_type(part))).etag(rendered.etag)
        } else {
            let bytes = match &part.body {
                PartBody::Multipart => Bytes::copy_from_slice(msg.raw.get(part.raw_range.clone()).unwrap_or(&[])),
                _ => part.shared_bytes(),
            };
            // The message's bytes decide the part's: their hash and the section name it for good
            // (the bytes' own hash, never the entry's: see `View::bytes_hash`).
            let etag = format!("\"{}-{}\"", view.bytes_hash(&loaded), part.section);
            FileResponse::new(bytes, with_charset(part, &content_type)).etag(etag).cache(lasting)
        };
        // Remote content is for documents rewritten with the choice carried along, never for a
        // part that keeps what it was written with.
        (res.disposition(disposition).content_policy_as(remote && rewritten, same_origin), is_font(&content_type))
    };
    // Fonts are fetched in CORS mode, and a sandboxed message has an opaque origin (unless people
    // sign in: see `csp::sandbox`).
    let extra: &[_] = if font { &[(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"))] } else { &[] };
    let kept = state.served.keep(key, served::Answer::new(res, extra, entry));
    Ok(state.served.respond(&kept, headers).await)
}

/// `?text=1`: a document's text, with what stopped its reading said first.
async fn document_text(
    view: &Arc<crate::view::View>,
    loaded: &crate::archive::Loaded,
    idx: crate::model::PartIdx,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let (reader, for_view) = (Arc::clone(view), loaded.clone());
    let read = blocking(move || reader.document_text(&for_view, idx)).await?;
    let mut body = String::with_capacity(read.text.len() + 256);
    for notice in &read.notices {
        body.push_str(&format!("[mailshelf: {notice}]\n"));
    }
    if !read.notices.is_empty() {
        body.push('\n');
    }
    body.push_str(read.text.trim_start_matches('\n'));
    let part = &loaded.message().parts[idx];
    let name = format!("{}.txt", part_filename(part));
    // The text depends on the reader too: a newer mailshelf may read more of the same bytes.
    let etag = format!("\"{}-{}-text-{}\"", view.bytes_hash(loaded), part.section, env!("CARGO_PKG_VERSION"));
    Ok(FileResponse::new(Bytes::from(body), "text/plain; charset=utf-8".into())
        .etag(etag)
        .cache(cache::REVALIDATE)
        .disposition(content_disposition("inline", &name))
        .content_policy(false)
        .respond(headers))
}

/// `303 See Other` to an external body's web URL. Nothing is fetched: the client decides, and a
/// message's frame still answers to its own policy for where the redirect lands.
fn see_other(url: &str) -> Response {
    match HeaderValue::from_str(url) {
        Ok(location) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, location), (header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"))],
        )
            .into_response(),
        Err(_) => ApiError(Error::ExternalBody(format!("it is at {url}"))).into_response(),
    }
}

/// The message exactly as it was given: as text/plain, so no browser renders it; an Outlook
/// message as the `.msg` file it was (`application/vnd.ms-outlook`).
#[utoipa::path(get, path = "/raw/{mid}", tag = "parts",
    params(("mid" = String, Path, description = "The message id"), PartQuery),
    responses(
        (status = 200, description = "The message's bytes as text/plain; a file in another format as it was given: an Outlook message as the .msg file (application/vnd.ms-outlook), another binary one as application/octet-stream",
            content((Vec<u8> = "text/plain"), (Vec<u8> = "application/vnd.ms-outlook"), (Vec<u8> = "application/octet-stream"))),
        (status = 206, description = "The requested byte range, with the Content-Type of the whole",
            content((Vec<u8> = "text/plain"), (Vec<u8> = "application/vnd.ms-outlook"), (Vec<u8> = "application/octet-stream"))),
        (status = 304, description = "Unchanged since the given ETag"),
        (status = 412, description = "An If-Match of other bytes"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such message", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "The range is beyond the message"),
    ))]
pub(crate) async fn raw(
    Viewer(view, _): Viewer,
    Ids(mid, _): Ids<String>,
    Params(q, _): Params<PartQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let loaded = view.load(&mid).await?;
    let msg = loaded.message();
    let kind = if flag(&q.download) { "attachment" } else { "inline" };
    // A file in another format is given back as it is: an Outlook message under its own type,
    // other binary ones (a binary property list, UTF-16) as data, the rest as text so a browser
    // never interprets a message as a page.
    let file = crate::export::GivenFile::of(&loaded.entry, msg);
    let (ext, content_type) = (file.ext, file.served_as);
    let name = format!("{}.{ext}", safe_stem(&loaded.entry.key));
    let lasting = lasting(&loaded);
    Ok(FileResponse::new(msg.given_bytes(), content_type.into())
        .etag(format!("\"{}\"", view.bytes_hash(&loaded)))
        .disposition(content_disposition(kind, &name))
        .content_policy(false)
        .cache(lasting)
        .respond(&headers))
}

/// How long a browser may keep what a message's bytes decide: for good, as its URL always answers
/// the same, unless its file has changed since it was indexed (what it holds now is not what the
/// URL will answer once the folder is read again).
pub(crate) fn lasting(loaded: &crate::archive::Loaded) -> &'static str {
    if loaded.changed {
        cache::REVALIDATE
    } else {
        cache::PRIVATE_IMMUTABLE
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

fn disposition(part: &Part, download: bool) -> String {
    let kind = if download { "attachment" } else { "inline" };
    content_disposition(kind, &part_filename(part))
}

/// A file name made from a message's key, for its source.
fn safe_stem(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@') { c } else { '_' })
        .take(80)
        .collect()
}

//! `/message/<mid>/print`, a message laid out for paper, and `/message/<mid>.pdf`, the same page
//! printed to PDF on the server with the original message attached inside (see [`crate::export::pdf`]).
//!
//! On the message page the body sits in a sandboxed frame, and a frame prints only its visible
//! slice. The print view inlines the body instead: the same rewritten, script-free HTML the frame
//! loads, in a document served under the same sandboxing policy as the frame's (no script, nothing
//! remote unless `?remote=1`), with the headers and the list of attachments before it.
//!
//! The PDF is that page printed by Chromium, whose every request is answered in-process by a small
//! router of this file's own (`printer`): the print view, the parts it loads and mailshelf's
//! static files (the handlers of [`super::parts`] and [`super::assets`]), with the headers every
//! answer carries. The `/message/<mid>.pdf` URL itself is the message page's route (see
//! [`super::pages::message`]), which hands such a request to [`pdf()`].

use std::sync::Arc;

use askama::Template;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use tower::ServiceExt;

use super::error::{ApiError, PageError, Problem};
use super::extract::{flag, Ids, Params};
use super::file::content_disposition;
use super::gate::Viewer;
use super::state::AppState;
use super::{assets, guard, parts};
use crate::archive::Loaded;
use crate::auth::Reader;
use crate::dates::long_date;
use crate::error::Error;
use crate::export::pdf::{self, Fetched, PdfMeta};
use crate::model::{Body as PartBody, Message, PartIdx};
use crate::view::format::{human_size, shown_subject};
use crate::view::{blocking, external_place, part_filename, served_type, text, View};
use crate::{rewrite, route};

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PrintQuery {
    /// `1`: load this message's remote images, styles and fonts (as on its page).
    #[serde(default)]
    pub remote: Option<String>,
    /// `text`: print the text alternative rather than the HTML body.
    #[serde(default)]
    pub view: Option<String>,
}

/// An enclosed message's headers, as the print view shows them.
pub(crate) struct PrintNested {
    subject: String,
    from: Option<String>,
    date: Option<String>,
}

/// A body to print, after the headers of the enclosed message it belongs to (none for the
/// message's own). A body is either a rewritten HTML part (scripts, handlers and remote references
/// already gone) or text escaped by [`crate::view::text::render`].
pub(crate) struct PrintSection {
    nested: Option<PrintNested>,
    body: Option<String>,
}

#[derive(Template)]
#[template(path = "print.html")]
pub(crate) struct PrintPage {
    subject: String,
    from: Option<String>,
    to: Option<String>,
    cc: Option<String>,
    date: Option<String>,
    message_id: Option<String>,
    /// Name, type, size.
    attachments: Vec<(String, String, String)>,
    /// What it is, and where.
    externals: Vec<(String, String)>,
    blocked: usize,
    remote: bool,
    notices: Vec<String>,
    /// Its signatures and encryption, one line each, with the certificate or key behind them.
    security: Vec<crate::view::security::Line>,
    /// The message's body, then each enclosed message with its body.
    sections: Vec<PrintSection>,
}

/// A message laid out for printing: headers, attachments and the whole body, inline images in
/// place, remote content only with `remote=1`. Served with the message content policy.
#[utoipa::path(get, path = "/message/{mid}/print", tag = "pages",
    params(("mid" = String, Path, description = "The message id"), PrintQuery),
    responses(
        (status = 200, description = "An HTML page for printing", content_type = "text/html"),
        (status = 400, description = "Malformed id", content_type = "text/html"),
        (status = 404, description = "No such message", content_type = "text/html"),
    ))]
pub(crate) async fn print(
    Viewer(view, _): Viewer,
    Ids(mid, _): Ids<String, PageError>,
    Params(q, _): Params<PrintQuery, PageError>,
) -> Result<Response, PageError> {
    let remote = flag(&q.remote);
    let want_text = q.view.as_deref() == Some("text");
    let loaded = view.load(&mid).await?;
    let page = blocking(move || Ok(print_page(&view, &loaded, remote, want_text))).await?;
    let html = page.render().map_err(|e| PageError(Error::internal("template", e)))?;
    let mut res = Html(html).into_response();
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&super::csp::content_csp(remote, false)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    Ok(res)
}

fn print_page(view: &View, loaded: &Loaded, remote: bool, want_text: bool) -> PrintPage {
    let msg = loaded.message();
    let mut blocked = 0;
    let mut printed = |l: &Loaded, idx: PartIdx| {
        let rendered = view.render(l, idx, remote);
        blocked += rendered.blocked;
        rewrite::paper::for_paper(&String::from_utf8_lossy(&rendered.bytes))
    };
    let mut sections = Vec::new();
    let mut body = match body_of(msg, want_text) {
        (Some(idx), _) => Some(printed(loaded, idx)),
        (None, text) => text.map(text_block),
    };
    // The other inline texts follow it, as on the page.
    for &i in &msg.more_bodies {
        let more = if msg.parts[i].is_html() {
            Some(printed(loaded, i))
        } else {
            text::render_part(msg, i, false).map(text_block)
        };
        if let Some(more) = more {
            body.get_or_insert_with(String::new).push_str(&more);
        }
    }
    sections.push(PrintSection { nested: None, body });
    for (_, m) in msg.nested() {
        // An enclosed message is an entry of its own: its body is rewritten as its page does.
        let body = match body_of(m, false) {
            (Some(_), _) => view
                .find(&view.enclosed_key(m))
                .and_then(|id| view.read_now(id))
                .and_then(|l| Some(printed(&l, l.message().html_body?))),
            (None, text) => text.map(text_block),
        };
        let nested = PrintNested {
            subject: shown_subject(m.summary.subject.as_deref()),
            from: m.summary.from.clone(),
            date: m.summary.date.as_deref().map(long_date),
        };
        sections.push(PrintSection { nested: Some(nested), body });
    }
    // Enclosed messages are printed in full, not listed.
    let attachments = msg
        .attachments()
        .filter(|p| !matches!(p.body, PartBody::Message(_)))
        .map(|p| (part_filename(p), served_type(p), human_size(p.size() as u64)))
        .collect();
    let externals = msg
        .parts
        .iter()
        .filter_map(|p| {
            let e = p.external.as_ref()?;
            let label =
                e.description.clone().or_else(|| e.name.clone()).unwrap_or_else(|| format!("Part {}", p.section));
            Some((label, external_place(e)))
        })
        .collect();
    PrintPage {
        subject: shown_subject(msg.summary.subject.as_deref()),
        from: msg.summary.from.clone(),
        to: msg.summary.to.clone(),
        cc: msg.summary.cc.clone(),
        date: msg.summary.date.as_deref().map(long_date),
        message_id: msg.message_id.clone(),
        attachments,
        externals,
        blocked,
        remote,
        notices: crate::view::format::notices(msg),
        security: view.security(loaded).summary(),
        sections,
    }
}

/// The HTML body to inline, or else the text one rendered: as on the message page.
fn body_of(msg: &Message, want_text: bool) -> (Option<PartIdx>, Option<String>) {
    let text = msg.text_body.and_then(|i| text::render_part(msg, i, false));
    match msg.html_body {
        Some(i) if !(want_text && text.is_some()) => (Some(i), None),
        _ => (None, text),
    }
}

/// Text rendered for the page, in a block that keeps its lines.
fn text_block(html: String) -> String {
    format!("<pre class=\"mailshelf-text\">{html}</pre>")
}

/// The print view of a message as a PDF, rendered on the server by headless Chromium, with the
/// message's exact bytes (those of `/raw/<mid>`) embedded as a `message/rfc822` file associated as
/// its source (PDF/A-3 style), Title = subject, Author = From, CreationDate = the Date header.
/// Nothing remote is fetched while rendering unless `remote=1`. 501 when the server has no
/// Chromium.
#[utoipa::path(get, path = "/message/{mid}.pdf", tag = "pages",
    params(("mid" = String, Path, description = "The message id"), PrintQuery),
    responses(
        (status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>,
            headers(("x-mailshelf-blocked-requests" = u64, description = "Requests the page made that were refused while rendering"))),
        (status = 400, description = "Malformed id", content_type = "text/html"),
        (status = 404, description = "No such message", content_type = "text/html"),
        (status = 501, description = "This server has no PDF renderer (Chromium); a page, or problem+json when asked for JSON", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The PDF renderer could not be started; worth a retry, and the print view works", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn pdf(
    state: &AppState,
    view: &Arc<View>,
    reader: Reader,
    mid: &str,
    remote: bool,
    want_text: bool,
    headers: &HeaderMap,
) -> Response {
    match make_pdf(state, view, reader, mid, remote, want_text).await {
        Ok(res) => res,
        // Scripts that ask for JSON get problem+json; a person who followed the link, a page.
        Err(e) if wants_json(headers) => ApiError(e).into_response(),
        Err(e) => PageError(e).into_response(),
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("json"))
}

async fn make_pdf(
    state: &AppState,
    view: &Arc<View>,
    reader: Reader,
    mid: &str,
    remote: bool,
    want_text: bool,
) -> Result<Response, Error> {
    let chromium = state.config.chromium.clone().ok_or(Error::NoRenderer)?;
    let loaded = view.load(mid).await?;
    let query = if remote {
        "?remote=1"
    } else if want_text {
        "?view=text"
    } else {
        ""
    };
    let path = format!("{}/print{query}", route::message_url(&loaded.entry.key));
    let (printed, blocked) =
        pdf::render(&chromium, &path, fetcher(state.clone(), reader, path.clone()), remote).await?;
    if !blocked.is_empty() {
        tracing::info!(blocked = blocked.len(), "requests refused while printing a message");
    }
    let msg = loaded.message();
    let summary = &loaded.entry.summary;
    let subject = shown_subject(msg.summary.subject.as_deref());
    let stem = crate::export::safe_file_stem(&subject);
    let stem = if stem.is_empty() { "message".to_string() } else { stem };
    let file = crate::export::GivenFile::of(&loaded.entry, msg);
    let meta = PdfMeta {
        title: subject,
        author: msg.summary.from.clone(),
        date: summary.timestamp.map(|ts| (ts, summary.zone.unwrap_or(0))),
        file_name: format!("{stem}.{}", file.ext),
        file_type: file.file_type(),
    };
    let original = msg.given_bytes();
    let out = blocking(move || pdf::attach(&printed, &original, &meta)).await?;
    let mut res = Body::from(out).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/pdf"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    if let Ok(v) = HeaderValue::from_str(&content_disposition("inline", &format!("{stem}.pdf"))) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    // How many requests the page made that were refused (remote, or not allowed anywhere).
    h.insert("x-mailshelf-blocked-requests", HeaderValue::from(blocked.len()));
    Ok(res)
}

/// The routes that answer Chromium while it prints: the print view, the parts it loads and
/// mailshelf's static files, with the headers every answer carries. Nothing else exists there:
/// not the API, not other pages, nor a PDF (whose render would wait for this one).
fn printer(state: AppState) -> Router {
    Router::new()
        .route("/message/{mid}/print", get(print))
        .route("/part/{mid}/{cid}", get(parts::part))
        .route("/static/{file}", get(assets::get))
        .layer(middleware::from_fn(guard::security_headers))
        .with_state(state)
}

/// Answers the browser's requests under [`pdf::ORIGIN`](crate::export::pdf::cdp::ORIGIN) with [`printer`], in-process, as `reader`
/// (what the PDF shows is what they may read). Of the print views, only the one at `page` is there.
fn fetcher(state: AppState, reader: Reader, page: String) -> pdf::Fetcher {
    let router = printer(state);
    Arc::new(move |path: String| {
        let router = router.clone();
        let reader = reader.clone();
        let allowed = path == page || path.starts_with("/part/") || path.starts_with("/static/");
        Box::pin(async move {
            let failed = |status: u16| Fetched { status, headers: Vec::new(), body: Vec::new() };
            if !allowed {
                return failed(404);
            }
            let Ok(mut req) = Request::get(&path).header(header::HOST, "mailshelf.localhost").body(Body::empty())
            else {
                return failed(400);
            };
            req.extensions_mut().insert(reader);
            let Ok(res) = router.oneshot(req).await;
            let status = res.status().as_u16();
            let headers = Fetched::fields_of(res.headers());
            match axum::body::to_bytes(res.into_body(), pdf::cdp::MAX_PDF).await {
                Ok(body) => Fetched { status, headers, body: body.to_vec() },
                Err(_) => failed(502),
            }
        })
    })
}

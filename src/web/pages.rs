//! HTML pages: the message list and a message's page, each from a template in `templates/`.

use std::sync::atomic::Ordering;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::assets::AssetUrls;
use super::error::PageError;
use super::extract::{flag, Ids, Params};
use super::state::AppState;
use crate::archive::Loaded;
use crate::error::Error;
use crate::index::{Entry, EntryId, Location};
use crate::model::{External, Message, Part, PartIdx};
use crate::route;
use crate::text;
use crate::view::{blocking, part_filename, served_type, Found, View};

/// Messages per list page.
pub const PAGE_SIZE: usize = 50;

/// Renders a template, turning a template failure into a logged 500.
fn render<T: Template>(t: &T) -> Result<Html<String>, PageError> {
    t.render().map(Html).map_err(|e| PageError(Error::internal("template", e)))
}

pub struct Row {
    url: String,
    snippet: Option<String>,
    subject: String,
    from: String,
    date: String,
    size: String,
    attachment: bool,
    flags: String,
}

#[derive(Template)]
#[template(path = "list.html")]
pub struct ListPage {
    assets: AssetUrls,
    q: String,
    /// Why the query could not run, if it could not.
    query_error: Option<String>,
    rows: Vec<Row>,
    total: usize,
    first: usize,
    last: usize,
    prev: Option<String>,
    next: Option<String>,
    ready: bool,
    indexed: usize,
    found: usize,
    upload_accept: &'static str,
}

/// What the upload form's file chooser offers: every kind of file mailshelf reads, by extension
/// and by type (mbox files often have no extension, and Maildir files none at all, so "all files"
/// stays one click away in every browser's chooser).
pub const UPLOAD_ACCEPT: &str = ".eml,.mht,.mhtml,.mbox,.mbx,.msg,.emlx,.webarchive,.txt,\
    message/rfc822,application/mbox,multipart/related,application/vnd.ms-outlook,application/x-webarchive";

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    page: Option<usize>,
    q: Option<String>,
}

/// The list page: the messages given to mailshelf, newest first, 50 a page; with `q`, the messages
/// matching that search, best first, with the matching words highlighted.
#[utoipa::path(get, path = "/", tag = "pages",
    params(
        ("page" = Option<usize>, Query, description = "Page number, from 1"),
        ("q" = Option<String>, Query, description = "A search (the API's query language)"),
    ),
    responses(
        (status = 200, description = "An HTML page", content_type = "text/html"),
        (status = 400, description = "The page, saying why the query could not run", content_type = "text/html"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    let page = q.page.unwrap_or(1).max(1);
    let offset = (page - 1).saturating_mul(PAGE_SIZE);
    let query = q.q.unwrap_or_default();
    let row = |e: &Entry, snippet: Option<String>| Row {
        url: route::message_url(&e.key),
        snippet,
        subject: shown_subject(e.summary.subject.as_deref()),
        from: e.summary.from.clone().unwrap_or_default(),
        date: short_date(e.summary.date().as_deref()),
        size: human_size(e.size),
        attachment: e.has_attachments,
        flags: match &e.location {
            Location::Top { flags: Some(f), .. } => f.clone(),
            _ => String::new(),
        },
    };
    let mut query_error = None;
    let (rows, total) = if query.trim().is_empty() {
        let index = state.archive().index();
        let rows = index.page(offset, PAGE_SIZE).map(|(_, e)| row(e, None)).collect::<Vec<_>>();
        (rows, index.listed_count())
    } else {
        let view = state.view.clone();
        let qs = query.clone();
        match blocking(move || view.search(&qs, offset, PAGE_SIZE)).await {
            Ok(Found { total, hits }) => (hits.into_iter().map(|h| row(&h.entry, h.snippet)).collect(), total),
            Err(Error::BadQuery(why)) => {
                query_error = Some(why);
                (Vec::new(), 0)
            }
            Err(e) => return Err(e.into()),
        }
    };
    let progress = &state.archive().progress;
    let shown = rows.len();
    let encoded_q = percent_encoding::utf8_percent_encode(&query, percent_encoding::NON_ALPHANUMERIC).to_string();
    let link = |p: usize| if query.is_empty() { format!("/?page={p}") } else { format!("/?q={encoded_q}&page={p}") };
    let status = if query_error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let html = render(&ListPage {
        assets: AssetUrls::get(),
        rows,
        total,
        first: if shown == 0 { 0 } else { offset + 1 },
        last: offset + shown,
        prev: (page > 1).then(|| link(page - 1)),
        next: (offset + shown < total).then(|| link(page + 1)),
        ready: progress.ready.load(Ordering::Acquire),
        indexed: progress.indexed.load(Ordering::Relaxed),
        found: progress.total.load(Ordering::Relaxed),
        q: query,
        query_error,
        upload_accept: UPLOAD_ACCEPT,
    })?;
    Ok((status, html).into_response())
}

pub struct Attachment {
    name: String,
    content_type: String,
    size: String,
    open_url: String,
    download_url: String,
    /// `/thumb/…` for an image a thumbnail can be made of; the file icon shows otherwise.
    thumb_url: Option<String>,
}

/// An external body as the page lists it: what the data is, and where.
pub struct ExternalRow {
    label: String,
    content_type: String,
    size: Option<String>,
    expiration: Option<String>,
    expired: bool,
    /// How the data is reached ("web", "anonymous FTP", "mail server", …).
    access: String,
    /// A URL to follow: `http`, `https` or `ftp` only, opened in a new tab without a referrer.
    link: Option<String>,
    /// Where the data is, in words, when there is no link.
    place: String,
    /// For `MAIL-SERVER`: a `mailto:` link that writes the request, and the request itself.
    mailto: Option<String>,
    request: Option<String>,
}

pub struct Nested {
    subject: String,
    from: Option<String>,
    date: Option<String>,
    page_url: String,
    html_src: Option<String>,
    text_html: Option<String>,
    /// The class that sets its frame's starting height (see [`crate::frame`]).
    frame_class: &'static str,
}

pub struct PartRow {
    section: String,
    content_type: String,
    label: String,
    size: String,
    url: Option<String>,
}

pub struct Link {
    url: String,
    label: String,
}

pub struct ThreadRow {
    /// Indentation in em, for the reply depth.
    indent: usize,
    subject: String,
    from: String,
    date: String,
    url: String,
    current: bool,
}

#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage {
    assets: AssetUrls,
    q: String,
    subject: String,
    from: Option<String>,
    to: Option<String>,
    cc: Option<String>,
    date: Option<String>,
    flags: Option<String>,
    source: Option<String>,
    headers: Vec<(String, String)>,
    html_src: Option<String>,
    text_html: Option<String>,
    has_html: bool,
    has_text: bool,
    view_text: bool,
    html_view_url: String,
    text_view_url: String,
    raw_url: String,
    raw_download_url: String,
    self_url: String,
    remote_url: String,
    remote: bool,
    blocked: usize,
    damaged: bool,
    truncated: bool,
    max_parts: usize,
    /// What could not be read of a file in another format (see [`crate::model::Origin`]).
    notices: Vec<String>,
    attachments: Vec<Attachment>,
    externals: Vec<ExternalRow>,
    nested: Vec<Nested>,
    parts: Vec<PartRow>,
    duplicates: Vec<Link>,
    thread: Vec<ThreadRow>,
    prev_in_thread: Option<String>,
    next_in_thread: Option<String>,
    /// The messages above and below this one in the list (newest first), for the "Newer" and
    /// "Older" links and the `k`/`j` keys.
    newer: Option<String>,
    older: Option<String>,
    /// The class that sets the body frame's starting height (see [`crate::frame`]).
    frame_class: &'static str,
}

#[derive(Debug, Default, Deserialize)]
pub struct MessageQuery {
    remote: Option<String>,
    view: Option<String>,
}

/// A message's page: headers, the body in a sandboxed frame (or its text), attachments, enclosed
/// messages, its thread, and every part.
#[utoipa::path(get, path = "/message/{mid}", tag = "pages",
    params(
        ("mid" = String, Path, description = "The message id"),
        ("remote" = Option<String>, Query, description = "`1`: load this message's remote images, styles and fonts"),
        ("view" = Option<String>, Query, description = "`text`: show the text alternative"),
    ),
    responses(
        (status = 200, description = "An HTML page", content_type = "text/html"),
        (status = 400, description = "Malformed id", content_type = "text/html"),
        (status = 404, description = "No such message", content_type = "text/html"),
    ))]
pub async fn message(
    State(state): State<AppState>,
    Ids(mid, _): Ids<String, PageError>,
    Params(q, _): Params<MessageQuery, PageError>,
) -> Result<Html<String>, PageError> {
    let remote = flag(&q.remote);
    let loaded = state.view.load(&mid).await?;
    let view = state.view.clone();
    let want_text = q.view.as_deref() == Some("text");
    let page = blocking(move || Ok(build_message_page(&view, &loaded, remote, want_text))).await?;
    render(&page)
}

fn build_message_page(view: &View, loaded: &Loaded, remote: bool, want_text: bool) -> MessagePage {
    let msg = loaded.message();
    let key = &loaded.entry.key;
    let self_url = route::message_url(key);
    let has_html = msg.html_body.is_some();
    let has_text = msg.text_body.is_some();
    let view_text = has_text && (want_text || !has_html);
    let remote_q = if remote { "?remote=1" } else { "" };
    let (html_src, blocked) = match msg.html_body {
        Some(idx) if !view_text => {
            (Some(format!("{}{remote_q}", route::part_url(key, msg, idx))), blocked_count(view, loaded, idx))
        }
        _ => (None, 0),
    };
    let text_html = if view_text { msg.text_body.map(|i| render_text(msg, i)) } else { None };
    let body_parts = [msg.html_body, msg.text_body];
    let attachments = msg
        .parts
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            // Resources of a multipart/related body (inline images, styles) are part of the page,
            // not attachments, unless the sender marked them so.
            let inline_resource = p.related_scope.is_some() && p.disposition.as_deref() != Some("attachment");
            !p.is_multipart()
                && !body_parts.contains(&Some(*i))
                && p.is_attachment_like()
                && !inline_resource
                && !matches!(p.body, crate::model::Body::Message(_))
        })
        .map(|(i, p)| {
            let url = route::part_url(key, msg, i);
            let content_type = served_type(p);
            Attachment {
                name: part_filename(p),
                thumb_url: crate::thumb::is_thumbnailable(&content_type).then(|| route::thumb_url(key, msg, i)),
                content_type,
                size: human_size(p.size() as u64),
                download_url: format!("{url}?download=1"),
                open_url: url,
            }
        })
        .collect();
    let now = crate::view::now();
    let externals = msg.parts.iter().filter_map(|p| Some(external_row(p, p.external.as_ref()?, now))).collect();
    let nested = msg.nested().map(|(_, m)| nested_view(view, m)).collect();
    let parts = msg
        .parts
        .iter()
        .enumerate()
        .map(|(i, p)| PartRow {
            section: format!("{}{}", "  ".repeat(p.section.matches('.').count()), p.section),
            content_type: p.content_type.clone(),
            label: p
                .filename
                .clone()
                .or_else(|| p.reference_id().map(|c| format!("<{c}>")))
                .or_else(|| p.content_location.clone())
                .unwrap_or_default(),
            size: if p.is_multipart() || p.external.is_some() { String::new() } else { human_size(p.size() as u64) },
            url: Some(route::part_url(key, msg, i)),
        })
        .collect();
    let duplicates = loaded
        .entry
        .message_id()
        .map(|mid| {
            let index = view.archive().index();
            index
                .by_message_id(mid)
                .iter()
                .filter(|&&id| id != loaded.id)
                .filter_map(|&id| index.get(id))
                .map(|e| Link {
                    url: route::message_url(&e.key),
                    label: format!(
                        "{} ({})",
                        shown_subject(e.summary.subject.as_deref()),
                        short_date(e.summary.date().as_deref())
                    ),
                })
                .collect()
        })
        .unwrap_or_default();
    let (thread, prev_in_thread, next_in_thread) = thread_view(view, loaded.id);
    let (newer, older) = list_neighbours(view, loaded.id);
    let frame_class = frame_class(msg);
    let (flags, source) = match &loaded.entry.location {
        Location::Top { flags, .. } => (flags.clone().filter(|f| !f.is_empty()), loaded.entry.location.display()),
        Location::Nested { .. } => (None, None),
    };
    MessagePage {
        assets: AssetUrls::get(),
        q: String::new(),
        subject: shown_subject(msg.summary.subject.as_deref()),
        from: msg.summary.from.clone(),
        to: msg.summary.to.clone(),
        cc: msg.summary.cc.clone(),
        date: msg.summary.date.as_deref().map(long_date),
        flags,
        source,
        headers: msg.headers.clone(),
        html_src,
        text_html,
        has_html,
        has_text,
        view_text,
        html_view_url: self_url.clone(),
        text_view_url: format!("{self_url}?view=text"),
        raw_url: route::raw_url(key),
        raw_download_url: format!("{}?download=1", route::raw_url(key)),
        remote_url: format!("{self_url}?remote=1"),
        self_url,
        remote,
        blocked,
        damaged: msg.parts.iter().any(|p| p.damaged),
        truncated: msg.truncated,
        max_parts: crate::limits::MAX_PARTS,
        notices: msg.origin.notices.clone(),
        attachments,
        externals,
        nested,
        parts,
        duplicates,
        thread,
        prev_in_thread,
        next_in_thread,
        newer,
        older,
        frame_class,
    }
}

/// The messages listed just before and after `id` (newest first). An enclosed message is not
/// listed, and has neither.
fn list_neighbours(view: &View, id: EntryId) -> (Option<String>, Option<String>) {
    let index = view.archive().index();
    let listed = index.listed();
    let Some(pos) = listed.iter().position(|&x| x == id) else { return (None, None) };
    let url_at = |i: usize| listed.get(i).and_then(|&n| index.get(n)).map(|e| route::message_url(&e.key));
    (pos.checked_sub(1).and_then(url_at), url_at(pos + 1))
}

/// An external body for the page. Only `http`, `https` and `ftp` URLs become links, a mail server
/// a `mailto:` link; a local file, a TFTP site or anything else is text. Nothing is loaded.
fn external_row(part: &Part, e: &External, now: i64) -> ExternalRow {
    let access = match e.access_type.as_deref() {
        Some("url") => "URL".to_string(),
        Some("anon-ftp") => "anonymous FTP".into(),
        Some("ftp") => "FTP (with a login)".into(),
        Some("tftp") => "TFTP".into(),
        Some("local-file") => "a file on another machine".into(),
        Some("mail-server") => "by mail, on request".into(),
        Some(other) => format!("unknown access type \u{201c}{other}\u{201d}"),
        None => "no access type given".into(),
    };
    let place = match (e.access_type.as_deref(), &e.url) {
        (Some("local-file"), _) => match (&e.name, &e.site) {
            (Some(n), Some(s)) => format!("{n} on {s}"),
            (Some(n), None) => n.clone(),
            (None, Some(s)) => format!("a file on {s}"),
            (None, None) => "a file it does not name".into(),
        },
        (Some("mail-server"), _) => match (&e.server, &e.subject) {
            (Some(s), Some(subject)) => format!("{s}, subject \u{201c}{subject}\u{201d}"),
            (Some(s), None) => s.clone(),
            (None, _) => "a server it does not name".into(),
        },
        (_, Some(url)) => url.clone(),
        (Some("url"), None) => "no URL given".into(),
        (Some("anon-ftp" | "ftp" | "tftp"), None) => "no usable site and file name given".into(),
        (Some(_), None) => "not a way mailshelf knows to name a place".into(),
        (None, None) => "it does not say where the data is".into(),
    };
    let from_url = e.url.as_deref().and_then(|u| {
        let url = url::Url::parse(u).ok()?;
        url.path_segments()?.rfind(|s| !s.is_empty()).map(crate::ids::decode_percent)
    });
    let label = e
        .description
        .clone()
        .or_else(|| e.name.clone())
        .or(from_url)
        .or_else(|| e.subject.clone())
        .or_else(|| e.content_id.as_ref().map(|c| format!("<{c}>")))
        .unwrap_or_else(|| format!("Part {}", part.section));
    ExternalRow {
        label,
        content_type: e.content_type.clone().unwrap_or_else(|| "type not given".into()),
        size: e.size.map(human_size),
        expiration: e.expiration.clone(),
        expired: e.is_expired(now),
        access,
        link: e.link.clone(),
        place,
        mailto: match e.access_type.as_deref() {
            Some("mail-server") => {
                e.server.as_deref().and_then(|s| mailto(s, e.subject.as_deref(), e.request.as_deref()))
            }
            _ => None,
        },
        request: e.request.clone(),
    }
}

/// `mailto:` (RFC 6068) for a plain address, with the subject and body the request needs; `None`
/// for anything that is not a plain address.
fn mailto(server: &str, subject: Option<&str>, body: Option<&str>) -> Option<String> {
    let (local, domain) = server.split_once('@')?;
    let local_ok =
        !local.is_empty() && local.chars().all(|c| c.is_ascii_alphanumeric() || "!$'*+-=^_`{|}~.".contains(c));
    let domain_ok = !domain.is_empty() && domain.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'));
    if !(local_ok && domain_ok) {
        return None;
    }
    // Everything but RFC 3986's unreserved characters is encoded (RFC 6068 §2).
    const FIELD: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, FIELD).to_string();
    let fields: Vec<String> = [("subject", subject), ("body", body)]
        .into_iter()
        .filter_map(|(k, v)| Some(format!("{k}={}", enc(v?))))
        .collect();
    Some(if fields.is_empty() { format!("mailto:{server}") } else { format!("mailto:{server}?{}", fields.join("&")) })
}

/// The message's thread, and the messages before and after it in reading order.
fn thread_view(view: &View, id: EntryId) -> (Vec<ThreadRow>, Option<String>, Option<String>) {
    let thread = view.thread(id);
    if thread.len() < 2 {
        return (Vec::new(), None, None);
    }
    let pos = thread.iter().position(|t| t.id == id);
    let url_at = |i: usize| thread.get(i).map(|t| route::message_url(&t.entry.key));
    let prev = pos.and_then(|p| p.checked_sub(1)).and_then(url_at);
    let next = pos.and_then(|p| url_at(p + 1));
    let rows = thread
        .iter()
        .map(|t| ThreadRow {
            indent: t.depth.min(12),
            subject: shown_subject(t.entry.summary.subject.as_deref()),
            from: t.entry.summary.from.clone().unwrap_or_default(),
            date: short_date(t.entry.summary.date().as_deref()),
            url: route::message_url(&t.entry.key),
            current: t.id == id,
        })
        .collect();
    (rows, prev, next)
}

/// How many remote resources the body and the stylesheets of its message would load. The rewrites
/// are kept, so the body's frame and its stylesheets then load without rewriting again.
fn blocked_count(view: &View, loaded: &Loaded, html: PartIdx) -> usize {
    let msg = loaded.message();
    let stylesheets =
        msg.parts.iter().enumerate().filter(|(_, p)| p.is_text() && p.is_type("text/css")).map(|(i, _)| i);
    std::iter::once(html).chain(stylesheets).map(|i| view.render(loaded, i, false).blocked).sum()
}

fn render_text(msg: &Message, idx: PartIdx) -> String {
    let p = &msg.parts[idx];
    let flowed = p.param("format").is_some_and(|f| f.eq_ignore_ascii_case("flowed"));
    let delsp = p.param("delsp").is_some_and(|d| d.eq_ignore_ascii_case("yes"));
    match &p.body {
        crate::model::Body::Text(t) => text::render(t, flowed, delsp),
        _ => String::new(),
    }
}

fn nested_view(view: &View, m: &Message) -> Nested {
    let key = view.enclosed_key(m);
    Nested {
        subject: shown_subject(m.summary.subject.as_deref()),
        from: m.summary.from.clone(),
        date: m.summary.date.as_deref().map(long_date),
        page_url: route::message_url(&key),
        html_src: m.html_body.map(|i| route::part_url(&key, m, i)),
        text_html: if m.html_body.is_none() { m.text_body.map(|i| render_text(m, i)) } else { None },
        frame_class: frame_class(m),
    }
}

/// The starting height of the frame for a message's HTML body, guessed from it.
fn frame_class(msg: &Message) -> &'static str {
    let html = msg.html_body.and_then(|i| match &msg.parts[i].body {
        crate::model::Body::Text(t) => Some(t.as_str()),
        _ => None,
    });
    html.map_or(crate::frame::FrameHeight::Tall, crate::frame::estimate).class()
}

/// A subject as the pages show it: an empty or missing one says so.
fn shown_subject(subject: Option<&str>) -> String {
    subject.filter(|s| !s.is_empty()).unwrap_or("(no subject)").to_string()
}

/// `2026-10-01T14:03:00+02:00` → `2026-10-01 14:03`.
pub fn short_date(rfc3339: Option<&str>) -> String {
    match rfc3339 {
        Some(d) if d.len() >= 16 => d[..16].replacen('T', " ", 1),
        Some(d) => d.to_string(),
        None => String::new(),
    }
}

/// `2026-10-01T14:03:00+02:00` → `2026-10-01 14:03:00 +02:00`.
pub fn long_date(rfc3339: &str) -> String {
    match rfc3339.get(..19) {
        Some(head) => format!("{} {}", head.replacen('T', " ", 1), rfc3339[19..].replace('Z', "+00:00")),
        None => rfc3339.to_string(),
    }
}

pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if v < 10.0 {
        format!("{v:.1} {}", UNITS[unit])
    } else {
        format!("{v:.0} {}", UNITS[unit])
    }
}

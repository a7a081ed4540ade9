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
use crate::view::browse::{self, Scope};
use crate::view::text;
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
    /// For a search: the attachments whose text matched ("order.pdf, terms.docx").
    matched_in: Option<String>,
    subject: String,
    from: String,
    date: String,
    size: String,
    attachment: bool,
    flags: String,
    labels: Vec<LabelLink>,
}

/// A row of the list grouped into conversations.
pub struct ConversationRow {
    url: String,
    subject: String,
    participants: String,
    count: usize,
    date: String,
    attachment: bool,
}

pub struct LabelLink {
    name: String,
    url: String,
}

/// The folder tree and labels beside the list, the one being shown marked.
pub struct Sidebar {
    all: usize,
    all_current: bool,
    folders: Vec<FolderRow>,
    labels: Vec<LabelRow>,
}

pub struct FolderRow {
    name: String,
    path: String,
    url: String,
    count: usize,
    depth: usize,
    current: bool,
}

pub struct LabelRow {
    name: String,
    url: String,
    count: usize,
    current: bool,
}

#[derive(Template)]
#[template(path = "list.html")]
pub struct ListPage {
    assets: AssetUrls,
    q: String,
    /// What is listed, when not everything: "Folder Archives/2017", "Label Work".
    heading: Option<String>,
    /// Why the query could not run, if it could not.
    query_error: Option<String>,
    rows: Vec<Row>,
    conversations: Vec<ConversationRow>,
    /// Grouped into conversations.
    threads: bool,
    messages_url: String,
    threads_url: String,
    overview_url: String,
    /// The scope's parameters for the export links (`&folder=…`), empty for the whole list.
    export_scope: String,
    sidebar: Sidebar,
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
    threads: Option<String>,
}

/// The list page: the messages given to mailshelf, newest first, 50 a page; with `q`, the messages
/// matching that search, best first, with the matching words highlighted; with `threads=1`, one
/// row per conversation.
#[utoipa::path(get, path = "/", tag = "pages",
    params(
        ("page" = Option<usize>, Query, description = "Page number, from 1"),
        ("q" = Option<String>, Query, description = "A search (the API's query language)"),
        ("threads" = Option<String>, Query, description = "`1`: one row per conversation (without `q`)"),
    ),
    responses(
        (status = 200, description = "An HTML page", content_type = "text/html"),
        (status = 400, description = "The page, saying why the query could not run", content_type = "text/html"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    list_of(state, Scope::All, q).await
}

/// One folder's own messages (not its subfolders'), as the list page shows them.
#[utoipa::path(get, path = "/folder/{path}", tag = "pages",
    params(
        ("path" = String, Path, description = "The folder's path, `/`-separated, each segment percent-encoded"),
        ("page" = Option<usize>, Query, description = "Page number, from 1"),
        ("q" = Option<String>, Query, description = "A search within the folder and those below it"),
        ("threads" = Option<String>, Query, description = "`1`: one row per conversation"),
    ),
    responses((status = 200, description = "An HTML page", content_type = "text/html")))]
pub async fn folder(
    State(state): State<AppState>,
    Ids(path, _): Ids<String, PageError>,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    list_of(state, Scope::Folder(path), q).await
}

/// The messages carrying one label, as the list page shows them.
#[utoipa::path(get, path = "/label/{name}", tag = "pages",
    params(
        ("name" = String, Path, description = "The label, percent-encoded; case does not matter"),
        ("page" = Option<usize>, Query, description = "Page number, from 1"),
        ("q" = Option<String>, Query, description = "A search among them"),
        ("threads" = Option<String>, Query, description = "`1`: one row per conversation"),
    ),
    responses((status = 200, description = "An HTML page", content_type = "text/html")))]
pub async fn label(
    State(state): State<AppState>,
    Ids(name, _): Ids<String, PageError>,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    list_of(state, Scope::Label(name), q).await
}

/// A value for a query string (`?q=…`, `&folder=…`), every byte but letters and digits encoded.
fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Where a scope's list lives.
fn scope_url(scope: &Scope) -> String {
    match scope {
        Scope::All => "/".into(),
        Scope::Folder(p) => route::folder_url(p),
        Scope::Label(l) => route::label_url(l),
    }
}

async fn list_of(state: AppState, scope: Scope, q: ListQuery) -> Result<Response, PageError> {
    let page = q.page.unwrap_or(1).max(1);
    let offset = (page - 1).saturating_mul(PAGE_SIZE);
    let query = q.q.unwrap_or_default();
    let threads = flag(&q.threads) && query.trim().is_empty();
    let labels_of = |e: &Entry| {
        e.labels.iter().map(|l| LabelLink { name: l.clone(), url: route::label_url(l) }).collect::<Vec<_>>()
    };
    let row = |e: &Entry, snippet: Option<String>, matched_in: Vec<String>| Row {
        url: route::message_url(&e.key),
        snippet,
        matched_in: (!matched_in.is_empty()).then(|| matched_in.join(", ")),
        subject: shown_subject(e.summary.subject.as_deref()),
        from: e.summary.from.clone().unwrap_or_default(),
        date: short_date(e.summary.date().as_deref()),
        size: human_size(e.size),
        attachment: e.has_attachments,
        flags: match &e.location {
            Location::Top { flags: Some(f), .. } => f.clone(),
            _ => String::new(),
        },
        labels: labels_of(e),
    };
    let mut query_error = None;
    let mut conversations = Vec::new();
    let (rows, total) = if threads {
        let (view, s) = (state.view.clone(), scope.clone());
        let (page, total) = blocking(move || Ok(view.conversations(&s, offset, PAGE_SIZE))).await?;
        conversations = page
            .into_iter()
            .map(|c| ConversationRow {
                url: route::thread_url(&c.key),
                subject: shown_subject(c.first.summary.subject.as_deref()),
                participants: c.participants.join(", "),
                count: c.count,
                date: short_date(c.latest.summary.date().as_deref()),
                attachment: c.first.has_attachments || c.latest.has_attachments,
            })
            .collect();
        (Vec::new(), total)
    } else if query.trim().is_empty() {
        let (view, listed_scope) = (state.view.clone(), scope.clone());
        let (page, total) = blocking(move || Ok(view.page(&listed_scope, offset, PAGE_SIZE))).await?;
        (page.into_iter().map(|(_, e)| row(&e, None, Vec::new())).collect::<Vec<_>>(), total)
    } else {
        let view = state.view.clone();
        let qs = scope.restrict(&query);
        match blocking(move || view.search(&qs, offset, PAGE_SIZE)).await {
            Ok(Found { total, hits }) => {
                (hits.into_iter().map(|h| row(&h.entry, h.snippet, h.matched_in)).collect(), total)
            }
            Err(Error::BadQuery(why)) => {
                query_error = Some(why);
                (Vec::new(), 0)
            }
            Err(e) => return Err(e.into()),
        }
    };
    let progress = &state.archive().progress;
    let shown = rows.len() + conversations.len();
    let base = scope_url(&scope);
    let mut params: Vec<String> = Vec::new();
    if !query.is_empty() {
        params.push(format!("q={}", enc(&query)));
    }
    if threads {
        params.push("threads=1".into());
    }
    let link = |p: usize| {
        let mut all = params.clone();
        all.push(format!("page={p}"));
        format!("{base}?{}", all.join("&"))
    };
    let overview_url = match &scope {
        Scope::All => "/overview".to_string(),
        Scope::Folder(p) => format!("/overview?folder={}", enc(p)),
        Scope::Label(l) => format!("/overview?label={}", enc(l)),
    };
    let overview_url = if query.is_empty() {
        overview_url
    } else {
        format!("{overview_url}{}q={}", if overview_url.contains('?') { "&" } else { "?" }, enc(&query))
    };
    let heading = match &scope {
        Scope::All => None,
        Scope::Folder(p) => Some(format!("Folder {p}")),
        Scope::Label(l) => Some(format!("Label {l}")),
    };
    let status = if query_error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let sidebar = sidebar(&state, &scope);
    let html = render(&ListPage {
        assets: AssetUrls::get(),
        heading,
        rows,
        conversations,
        threads,
        messages_url: base.clone(),
        threads_url: format!("{base}?threads=1"),
        overview_url,
        export_scope: match &scope {
            Scope::All => String::new(),
            Scope::Folder(p) => format!("&folder={}", enc(p)),
            Scope::Label(l) => format!("&label={}", enc(l)),
        },
        sidebar,
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

/// Folders the list page shows beside the list; a larger tree is whole in `/api/folders`.
const SIDEBAR_FOLDERS: usize = 2000;

/// Labels the list page shows, the most used first; all are in `/api/labels`.
const SIDEBAR_LABELS: usize = 200;

/// The folder tree (flattened, each row with its depth) and the labels, the shown one marked.
fn sidebar(state: &AppState, scope: &Scope) -> Sidebar {
    let index = state.archive().index();
    let (tree, _) = browse::folder_tree(&index);
    let mut folders = Vec::new();
    let mut stack: Vec<(usize, &crate::index::folders::FolderNode)> = tree.iter().rev().map(|f| (0, f)).collect();
    while let Some((depth, f)) = stack.pop() {
        if folders.len() >= SIDEBAR_FOLDERS {
            break;
        }
        folders.push(FolderRow {
            name: f.name.clone(),
            path: f.path.clone(),
            url: route::folder_url(&f.path),
            count: f.messages,
            depth: depth.min(12),
            current: matches!(scope, Scope::Folder(p) if p.trim_matches('/') == f.path),
        });
        stack.extend(f.folders.iter().rev().map(|c| (depth + 1, c)));
    }
    let mut labels = browse::labels(&index);
    if labels.len() > SIDEBAR_LABELS {
        labels.sort_by_key(|l| std::cmp::Reverse(l.1));
        labels.truncate(SIDEBAR_LABELS);
        labels.sort_by_key(|l| l.0.to_lowercase());
    }
    let labels = labels
        .into_iter()
        .map(|(name, count)| LabelRow {
            url: route::label_url(&name),
            current: matches!(scope, Scope::Label(l) if l.eq_ignore_ascii_case(&name)),
            name,
            count,
        })
        .collect();
    Sidebar { all: index.listed_count(), all_current: *scope == Scope::All, folders, labels }
}

/// One message of a conversation page.
pub struct ConversationMessage {
    subject: String,
    from: Option<String>,
    to: Option<String>,
    cc: Option<String>,
    date: Option<String>,
    url: String,
    html_src: Option<String>,
    text_html: Option<String>,
    attachments: Vec<Attachment>,
    labels: Vec<LabelLink>,
    /// The one the conversation was opened at.
    current: bool,
    /// The class that sets the body frame's starting height (see [`crate::view::frame`]).
    frame_class: &'static str,
}

#[derive(Template)]
#[template(path = "conversation.html")]
pub struct ConversationPage {
    assets: AssetUrls,
    q: String,
    subject: String,
    messages: Vec<ConversationMessage>,
    /// Messages of the thread not shown (beyond [`CONVERSATION_MAX`]).
    more: usize,
}

/// Messages a conversation page shows; a longer thread is listed on each message's page.
pub const CONVERSATION_MAX: usize = 100;

/// A whole conversation on one page: each message's headers and body in reading order (replies
/// after what they answer), quoted text folded, each HTML body in its own sandboxed frame.
#[utoipa::path(get, path = "/thread/{mid}", tag = "pages",
    params(("mid" = String, Path, description = "The id of any message of the conversation")),
    responses(
        (status = 200, description = "An HTML page", content_type = "text/html"),
        (status = 404, description = "No such message", content_type = "text/html"),
    ))]
pub async fn conversation(
    State(state): State<AppState>,
    Ids(mid, _): Ids<String, PageError>,
) -> Result<Html<String>, PageError> {
    let view = state.view.clone();
    let page = blocking(move || {
        let id = view.archive().find(&mid).ok_or(Error::MessageNotFound)?;
        Ok(build_conversation(&view, id))
    })
    .await?;
    render(&page)
}

fn build_conversation(view: &View, opened: EntryId) -> ConversationPage {
    let thread = view.thread(opened);
    let more = thread.len().saturating_sub(CONVERSATION_MAX);
    let messages: Vec<ConversationMessage> = thread
        .iter()
        .take(CONVERSATION_MAX)
        .filter_map(|t| {
            let loaded = view.archive().load(t.id).ok()?;
            let msg = loaded.message();
            let key = &loaded.entry.key;
            let html_src = msg
                .html_body
                .map(|i| format!("{}?fold=1", route::part_url(key, msg, i)))
                .or_else(|| msg.image_body.map(|i| route::part_url(key, msg, i)));
            let text_html = if html_src.is_none() { msg.text_body.map(|i| render_text_folded(msg, i)) } else { None };
            Some(ConversationMessage {
                subject: shown_subject(msg.summary.subject.as_deref()),
                from: msg.summary.from.clone(),
                to: msg.summary.to.clone(),
                cc: msg.summary.cc.clone(),
                date: msg.summary.date.as_deref().map(long_date),
                url: route::message_url(key),
                html_src,
                text_html,
                attachments: attachments_of(key, msg),
                labels: t
                    .entry
                    .labels
                    .iter()
                    .map(|l| LabelLink { name: l.clone(), url: route::label_url(l) })
                    .collect(),
                current: t.id == opened,
                frame_class: frame_class(msg),
            })
        })
        .collect();
    ConversationPage {
        assets: AssetUrls::get(),
        q: String::new(),
        subject: messages.first().map_or_else(|| shown_subject(None), |m| m.subject.clone()),
        messages,
        more,
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct OverviewQuery {
    q: Option<String>,
    folder: Option<String>,
    label: Option<String>,
}

#[derive(Template)]
#[template(path = "overview.html")]
pub struct OverviewPage {
    assets: AssetUrls,
    q: String,
    heading: String,
    query_error: Option<String>,
    messages: usize,
    undated: usize,
    period: String,
    first: Option<String>,
    last: Option<String>,
    timeline: String,
    senders: String,
    lists: String,
    types: String,
    sizes: String,
    attachments: usize,
    attachment_bytes: String,
    list_url: String,
}

/// What is in the archive, a folder, a label or a search, in pictures: messages per month, top
/// senders and lists, attachment types and sizes (drawn on the server; the numbers are
/// `/api/stats`).
#[utoipa::path(get, path = "/overview", tag = "pages",
    params(
        ("q" = Option<String>, Query, description = "Count only the messages matching this search"),
        ("folder" = Option<String>, Query, description = "Count only this folder's own messages"),
        ("label" = Option<String>, Query, description = "Count only the messages with this label"),
    ),
    responses(
        (status = 200, description = "An HTML page", content_type = "text/html"),
        (status = 400, description = "The page, saying why the query could not run", content_type = "text/html"),
    ))]
pub async fn overview(
    State(state): State<AppState>,
    Params(q, _): Params<OverviewQuery, PageError>,
) -> Result<Response, PageError> {
    let scope = Scope::named(q.folder, q.label);
    let query = q.q.unwrap_or_default();
    let view = state.view.clone();
    let (s2, q2) = (scope.clone(), query.clone());
    let (stats, query_error) = match blocking(move || view.stats(&s2, &q2)).await {
        Ok(s) => (s, None),
        Err(Error::BadQuery(why)) => (std::sync::Arc::default(), Some(why)),
        Err(e) => return Err(e.into()),
    };
    let page = overview_page(&scope, query, &stats, query_error);
    let status = if page.query_error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    Ok((status, render(&page)?).into_response())
}

fn overview_page(
    scope: &Scope,
    query: String,
    s: &crate::view::stats::Stats,
    query_error: Option<String>,
) -> OverviewPage {
    use crate::view::charts::{columns, rows, Bar};
    // A bar's messages: this overview's scope and search, narrowed by the bar's own query.
    let search_url = |extra: &str| {
        let q = if query.trim().is_empty() { extra.to_string() } else { format!("{extra} ({query})") };
        format!("{}?q={}", scope_url(scope), enc(&q))
    };
    let bar = |c: &crate::view::stats::Count| Bar {
        label: c.name.clone(),
        value: c.messages as u64,
        caption: None,
        link: c.query.as_deref().map(search_url),
    };
    let timeline = columns(&s.periods.iter().map(bar).collect::<Vec<_>>(), &format!("Messages per {}", s.period));
    let senders = rows(&s.senders.iter().map(bar).collect::<Vec<_>>(), "Top senders");
    let lists = rows(&s.lists.iter().map(bar).collect::<Vec<_>>(), "Top mailing lists");
    let types = rows(
        &s.attachments
            .types
            .iter()
            .map(|t| Bar {
                label: t.content_type.clone(),
                value: t.count as u64,
                caption: Some(format!("{} · {}", t.count, human_size(t.bytes))),
                link: None,
            })
            .collect::<Vec<_>>(),
        "Attachment types",
    );
    let sizes = rows(
        &s.attachments
            .sizes
            .iter()
            .map(|c| Bar { label: c.name.clone(), value: c.messages as u64, caption: None, link: None })
            .collect::<Vec<_>>(),
        "Attachment sizes",
    );
    let mut heading = match scope {
        Scope::All => "Overview".to_string(),
        Scope::Folder(p) => format!("Overview of folder {p}"),
        Scope::Label(l) => format!("Overview of label {l}"),
    };
    if !query.trim().is_empty() {
        heading.push_str(&format!(" — “{query}”"));
    }
    let list_url =
        if query.trim().is_empty() { scope_url(scope) } else { format!("{}?q={}", scope_url(scope), enc(&query)) };
    OverviewPage {
        assets: AssetUrls::get(),
        heading,
        query_error,
        messages: s.messages,
        undated: s.undated,
        first: s.periods.iter().find(|c| c.messages > 0).map(|c| c.name.clone()),
        last: s.periods.iter().rev().find(|c| c.messages > 0).map(|c| c.name.clone()),
        period: s.period.clone(),
        timeline,
        senders,
        lists,
        types,
        sizes,
        attachments: s.attachments.count,
        attachment_bytes: human_size(s.attachments.bytes),
        list_url,
        q: query,
    }
}

pub struct Attachment {
    name: String,
    content_type: String,
    size: String,
    open_url: String,
    download_url: String,
    /// `/thumb/…` for an image a thumbnail can be made of; the file icon shows otherwise.
    thumb_url: Option<String>,
    /// `?text=1` for a document whose text mailshelf reads.
    text_url: Option<String>,
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
    /// The class that sets its frame's starting height (see [`crate::view::frame`]).
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
    /// The folder it is filed in, and its list.
    folder: Option<LabelLink>,
    labels: Vec<LabelLink>,
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
    conversation_url: String,
    prev_in_thread: Option<String>,
    next_in_thread: Option<String>,
    /// The messages above and below this one in the list (newest first), for the "Newer" and
    /// "Older" links and the `k`/`j` keys.
    newer: Option<String>,
    older: Option<String>,
    /// The class that sets the body frame's starting height (see [`crate::view::frame`]).
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
        // A body that is an image: the frame opens it, and the browser shows it by itself.
        _ => (msg.image_body.map(|i| route::part_url(key, msg, i)), 0),
    };
    let text_html = if view_text { msg.text_body.map(|i| render_text(msg, i)) } else { None };
    let attachments = attachments_of(key, msg);
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
    let folder = match &loaded.entry.location {
        Location::Top { .. } => {
            let index = view.archive().index();
            let path = index.folder_path(loaded.entry.folder);
            (!path.is_empty()).then(|| LabelLink { name: path.to_string(), url: route::folder_url(path) })
        }
        Location::Nested { .. } => None,
    };
    let labels = loaded.entry.labels.iter().map(|l| LabelLink { name: l.clone(), url: route::label_url(l) }).collect();
    MessagePage {
        assets: AssetUrls::get(),
        q: String::new(),
        folder,
        labels,
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
        conversation_url: route::thread_url(key),
        prev_in_thread,
        next_in_thread,
        newer,
        older,
        frame_class,
    }
}

/// The files a reader would call attachments, with links to open and download each.
fn attachments_of(key: &str, msg: &Message) -> Vec<Attachment> {
    let body_parts = [msg.html_body, msg.text_body, msg.image_body];
    msg.parts
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
            let readable =
                matches!(crate::parse::extract::recognise(p), Some(crate::parse::extract::Recognised::Readable(_)));
            Attachment {
                name: part_filename(p),
                thumb_url: crate::view::thumb::is_thumbnailable(&content_type).then(|| route::thumb_url(key, msg, i)),
                text_url: readable.then(|| format!("{url}?text=1")),
                content_type,
                size: human_size(p.size() as u64),
                download_url: format!("{url}?download=1"),
                open_url: url,
            }
        })
        .collect()
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
    render_text_as(msg, idx, false)
}

/// As [`render_text`], each quoted passage folded away behind a “Quoted text” switch.
fn render_text_folded(msg: &Message, idx: PartIdx) -> String {
    render_text_as(msg, idx, true)
}

fn render_text_as(msg: &Message, idx: PartIdx, fold: bool) -> String {
    let p = &msg.parts[idx];
    let flowed = p.param("format").is_some_and(|f| f.eq_ignore_ascii_case("flowed"));
    let delsp = p.param("delsp").is_some_and(|d| d.eq_ignore_ascii_case("yes"));
    match &p.body {
        crate::model::Body::Text(t) => text::render_with(t, flowed, delsp, fold),
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
        html_src: m.html_body.or(m.image_body).map(|i| route::part_url(&key, m, i)),
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
    html.map_or(crate::view::frame::FrameHeight::Tall, crate::view::frame::estimate).class()
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

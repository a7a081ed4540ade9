//! The message list: all messages, a folder's, a label's, or a search's, newest (or best) first,
//! or grouped into conversations; with the folder tree, the labels and the upload form.

use std::sync::atomic::Ordering;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::render;
use crate::auth::Reader;
use crate::view::blocking;
use crate::view::browse::Scope;
use crate::view::list::ListView;
use crate::view::View;
use crate::web::assets::AssetUrls;
use crate::web::error::PageError;
use crate::web::extract::{flag, Ids, Params};
use crate::web::gate::Viewer;
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "list.html")]
pub(crate) struct ListPage {
    assets: AssetUrls,
    q: String,
    list: ListView,
    /// Indexing's progress: done, and how many files it has read of how many found.
    ready: bool,
    indexed: usize,
    found: usize,
    /// The upload form, for a reader who may upload.
    may_upload: bool,
    upload_accept: &'static str,
}

/// What the upload form's file chooser offers: every kind of file mailshelf reads, by extension
/// and by type (mbox files often have no extension, and Maildir files none at all, so "all files"
/// stays one click away in every browser's chooser).
pub(crate) const UPLOAD_ACCEPT: &str = ".eml,.mht,.mhtml,.mbox,.mbx,.mmdf,.babyl,.rmail,.msg,.pst,.ost,.emlx,.webarchive,.txt,\
    .gz,.zst,.bz2,.xz,.lz4,message/rfc822,application/mbox,multipart/related,application/vnd.ms-outlook,application/x-webarchive";

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
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
pub(crate) async fn list(
    State(state): State<AppState>,
    Viewer(view, reader): Viewer,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    list_of(state, view, &reader, Scope::All, q).await
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
pub(crate) async fn folder(
    State(state): State<AppState>,
    Viewer(view, reader): Viewer,
    Ids(path, _): Ids<String, PageError>,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    list_of(state, view, &reader, Scope::Folder(path), q).await
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
pub(crate) async fn label(
    State(state): State<AppState>,
    Viewer(view, reader): Viewer,
    Ids(name, _): Ids<String, PageError>,
    Params(q, _): Params<ListQuery, PageError>,
) -> Result<Response, PageError> {
    list_of(state, view, &reader, Scope::Label(name), q).await
}

async fn list_of(
    state: AppState,
    view: std::sync::Arc<View>,
    reader: &Reader,
    scope: Scope,
    q: ListQuery,
) -> Result<Response, PageError> {
    let query = q.q.unwrap_or_default();
    let asked = query.clone();
    // Files read and found are the whole archive's: a reader of some folders is not told them.
    let whole = view.access().is_everything();
    let (page, threads) = (q.page.unwrap_or(1), flag(&q.threads));
    let list = blocking(move || ListView::build(&view, &scope, &asked, page, threads)).await?;
    let status = if list.query_error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let progress = &state.archive().progress;
    let count = |n: &std::sync::atomic::AtomicUsize| if whole { n.load(Ordering::Relaxed) } else { 0 };
    let html = render(&ListPage {
        assets: AssetUrls::get(),
        q: query,
        list,
        ready: progress.ready.load(Ordering::Acquire),
        indexed: count(&progress.indexed),
        found: count(&progress.total),
        may_upload: reader.may_upload(),
        upload_accept: UPLOAD_ACCEPT,
    })?;
    Ok((status, html).into_response())
}

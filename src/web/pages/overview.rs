//! The overview (`/overview`): what is in the archive, a folder, a label or a search, in pictures.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::render;
use crate::view::blocking;
use crate::view::browse::Scope;
use crate::view::overview::OverviewView;
use crate::web::assets::AssetUrls;
use crate::web::error::PageError;
use crate::web::extract::Params;
use crate::web::gate::Viewer;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct OverviewQuery {
    q: Option<String>,
    folder: Option<String>,
    label: Option<String>,
}

#[derive(Template)]
#[template(path = "overview.html")]
pub(crate) struct OverviewPage {
    assets: AssetUrls,
    q: String,
    overview: OverviewView,
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
pub(crate) async fn overview(
    Viewer(view, _): Viewer,
    Params(q, _): Params<OverviewQuery, PageError>,
) -> Result<Response, PageError> {
    let scope = Scope::named(q.folder, q.label);
    let query = q.q.unwrap_or_default();
    let asked = query.clone();
    let overview = blocking(move || OverviewView::build(&view, &scope, &asked)).await?;
    let status = if overview.query_error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    Ok((status, render(&OverviewPage { assets: AssetUrls::get(), q: query, overview })?).into_response())
}

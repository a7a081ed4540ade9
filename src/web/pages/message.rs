//! A message's page (`/message/<mid>`).

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use serde::Deserialize;

use super::render;
use crate::view::blocking;
use crate::view::message::MessageView;
use crate::web::assets::AssetUrls;
use crate::web::error::PageError;
use crate::web::extract::{flag, Ids, Params};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage {
    assets: AssetUrls,
    q: String,
    msg: MessageView,
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
    let msg = blocking(move || Ok(MessageView::build(&view, &loaded, remote, want_text))).await?;
    render(&MessagePage { assets: AssetUrls::get(), q: String::new(), msg })
}

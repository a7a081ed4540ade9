//! A whole conversation on one page (`/thread/<mid>`).

use askama::Template;
use axum::extract::State;
use axum::response::Html;

use super::render;
use crate::view::blocking;
use crate::view::conversation::ConversationView;
use crate::web::assets::AssetUrls;
use crate::web::error::PageError;
use crate::web::extract::Ids;
use crate::web::gate::Viewer;
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "conversation.html")]
pub(crate) struct ConversationPage {
    assets: AssetUrls,
    q: String,
    conversation: ConversationView,
    /// The body frames' `sandbox` (see [`crate::web::csp::sandbox`]).
    sandbox: &'static str,
}

/// A whole conversation on one page: each message's headers and body in reading order (replies
/// after what they answer), quoted text folded, each HTML body in its own sandboxed frame.
#[utoipa::path(get, path = "/thread/{mid}", tag = "pages",
    params(("mid" = String, Path, description = "The id of any message of the conversation")),
    responses(
        (status = 200, description = "An HTML page", content_type = "text/html"),
        (status = 404, description = "No such message", content_type = "text/html"),
    ))]
pub(crate) async fn conversation(
    State(state): State<AppState>,
    Viewer(view, _): Viewer,
    Ids(mid, _): Ids<String, PageError>,
) -> Result<Html<String>, PageError> {
    let conversation = blocking(move || ConversationView::build(&view, &mid)).await?;
    let sandbox = crate::web::csp::sandbox(state.signs_in());
    render(&ConversationPage { assets: AssetUrls::get(), q: String::new(), conversation, sandbox })
}

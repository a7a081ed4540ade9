//! A message's page (`/message/<mid>`), and the route it shares with the message's PDF
//! (`/message/<mid>.pdf`, made by [`crate::web::print`]).

use askama::Template;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::render;
use crate::error::Error;
use crate::view::blocking;
use crate::view::message::MessageView;
use crate::web::assets::AssetUrls;
use crate::web::error::PageError;
use crate::web::extract::{flag, Ids, Params};
use crate::web::gate::Viewer;
use crate::web::print;
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "message.html")]
pub(crate) struct MessagePage {
    assets: AssetUrls,
    q: String,
    msg: MessageView,
    /// The body frames' `sandbox` (see [`crate::web::csp::sandbox`]).
    sandbox: &'static str,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageQuery {
    remote: Option<String>,
    view: Option<String>,
}

/// A message's page: headers, the body in a sandboxed frame (or its text), attachments, enclosed
/// messages, its thread, and every part.
///
/// The route is also the PDF's: for `<mid>.pdf` when no message has that id, the PDF of message
/// `<mid>` ([`print::pdf`]). (The router cannot match a suffix inside a path segment, and an id may
/// itself end in `.pdf`; such a message keeps its page, and its PDF is at `<mid>.pdf.pdf`.)
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
pub(crate) async fn message(
    State(state): State<AppState>,
    Viewer(view, reader): Viewer,
    Ids(mid, _): Ids<String, PageError>,
    Params(q, _): Params<MessageQuery, PageError>,
    headers: HeaderMap,
) -> Response {
    let remote = flag(&q.remote);
    let want_text = q.view.as_deref() == Some("text");
    let loaded = match view.load(&mid).await {
        Ok(loaded) => loaded,
        Err(Error::MessageNotFound) => match mid.strip_suffix(".pdf") {
            Some(pdf_of) => return print::pdf(&state, &view, reader, pdf_of, remote, want_text, &headers).await,
            None => return PageError(Error::MessageNotFound).into_response(),
        },
        Err(e) => return PageError(e).into_response(),
    };
    let sandbox = crate::web::csp::sandbox(state.signs_in());
    let page = async {
        let msg = blocking(move || Ok(MessageView::build(&view, &loaded, remote, want_text))).await?;
        render(&MessagePage { assets: AssetUrls::get(), q: String::new(), msg, sandbox })
    };
    page.await.into_response()
}

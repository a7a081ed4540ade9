//! HTML pages for people, one room a page family, each from a template in `templates/`: [`list`]
//! (all messages, a folder, a label, a search), [`message`] (a message, or its PDF),
//! [`conversation`] and [`overview`]. The handlers are thin: they read the request, have
//! [`crate::view`] build what the page shows (off the async threads), and render the template.

pub(crate) mod conversation;
pub(crate) mod list;
pub(crate) mod message;
pub(crate) mod overview;

use askama::Template;
use axum::response::Html;

use super::error::PageError;
use crate::error::Error;

/// Renders a template, turning a template failure into a logged 500.
fn render<T: Template>(t: &T) -> Result<Html<String>, PageError> {
    t.render().map(Html).map_err(|e| PageError(Error::internal("template", e)))
}

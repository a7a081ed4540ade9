//! How an [`Error`] becomes a response: RFC 9457 problem+json for scripts ([`ApiError`]) or an HTML
//! page for people ([`PageError`]). The status comes from [`Error::status`], the one mapping; a 5xx
//! is logged with its whole source chain and answered with a fixed text, never the internal one.

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::assets::AssetUrls;
use crate::error::Error;

/// An error, as RFC 9457 describes it: the body of every problem+json answer.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct Problem {
    /// A URI reference naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
}

impl Problem {
    pub(crate) fn of(e: &Error) -> Problem {
        let (slug, title) = e.kind();
        Problem {
            kind: format!("/api/problems/{slug}"),
            title: title.to_string(),
            status: e.status(),
            detail: e.public_detail(),
        }
    }
}

/// An error answered as `application/problem+json` (API, parts, raw messages).
#[derive(Debug)]
pub(crate) struct ApiError(pub Error);

/// An error answered as an HTML page.
#[derive(Debug)]
pub(crate) struct PageError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl From<Error> for PageError {
    fn from(e: Error) -> Self {
        PageError(e)
    }
}

/// Whether the client asked for a page (a browser navigating or submitting a form names
/// `text/html` in `Accept`; scripts, curl and `fetch` do not unless told to).
pub(crate) fn wants_html(headers: &axum::http::HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"))
}

fn status_of(e: &Error) -> StatusCode {
    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Our own failures go to the log with every cause; the answer says only that it was ours.
fn log_if_internal(e: &Error) {
    if e.status() >= 500 {
        let mut causes = String::new();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            causes.push_str(": ");
            causes.push_str(&s.to_string());
            source = s.source();
        }
        tracing::error!(error = %e, causes, "request failed");
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        log_if_internal(&self.0);
        let mut res = (status_of(&self.0), Json(Problem::of(&self.0))).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if matches!(self.0, Error::ReadOnly) {
            res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        }
        if matches!(self.0, Error::Unauthorized) {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"mailshelf\", charset=\"UTF-8\""),
            );
        }
        retry_later(&self.0, &mut res);
        res
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        log_if_internal(&self.0);
        let page = ErrorPage::new(status.as_u16(), self.0.kind().1, &self.0.public_detail());
        let mut res = (status, page.html()).into_response();
        retry_later(&self.0, &mut res);
        res
    }
}

/// How long a client should wait before asking again when the shared database is away: about
/// how long the replicas take to notice it is back.
const RETRY_AFTER_SECONDS: &str = "2";

fn retry_later(e: &Error, res: &mut Response) {
    if matches!(e, Error::StoreUnavailable) {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
    }
    if let Error::TooManyAttempts(seconds) = e {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*seconds));
    }
}

#[derive(Template)]
#[template(path = "error.html")]
pub(crate) struct ErrorPage {
    assets: AssetUrls,
    q: String,
    status: u16,
    title: String,
    detail: String,
}

impl ErrorPage {
    pub(crate) fn new(status: u16, title: &str, detail: &str) -> Self {
        ErrorPage { assets: AssetUrls::get(), q: String::new(), status, title: title.into(), detail: detail.into() }
    }

    pub(crate) fn html(&self) -> Html<String> {
        Html(self.render().unwrap_or_else(|_| format!("<h1>{}</h1>", self.status)))
    }
}

//! The web layer's spine: shared state, every route and layer on one screen, the security headers,
//! and how an [`Error`] becomes a response (an HTML page or RFC 9457 problem+json).

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tower_http::compression::predicate::{DefaultPredicate, Predicate};
use tower_http::compression::CompressionLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::TraceLayer;

use crate::archive::Archive;
use crate::config::Config;
use crate::error::Error;
use crate::{api, assets, files, pages};

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub archive: Arc<Archive>,
    pub config: Arc<Config>,
    /// Rewritten documents recently served.
    pub rendered: Arc<crate::files::RenderCache>,
}

impl AppState {
    pub fn new(archive: Arc<Archive>, config: Arc<Config>) -> AppState {
        AppState { archive, config, rendered: Arc::default() }
    }
}

/// The policy for mailshelf's own pages: no script at all, nothing from outside, never framed.
pub const APP_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
    frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The policy for anything that comes from a message: a sandbox without scripts or same-origin
/// access; images, styles, fonts and media only from our routes and `data:`. No `frame-ancestors`:
/// a frame inside a sandboxed message has an opaque-origin parent that no source list can name.
pub fn content_csp(allow_remote: bool) -> String {
    let remote = if allow_remote { " http: https:" } else { "" };
    format!(
        "sandbox allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation; \
         default-src 'none'; img-src 'self' data:{remote}; style-src 'self' 'unsafe-inline'{remote}; \
         font-src 'self' data:{remote}; media-src 'self' data:{remote}; frame-src 'self'; \
         form-action 'none'; base-uri 'none'"
    )
}

/// Builds the router. Tests drive it with `tower::ServiceExt::oneshot`.
pub fn app(state: AppState) -> Router {
    let cors = cors_layer(&state.config.cors_origins);
    // Compress text, never images or partial content (a 206 must carry the exact bytes asked for).
    let compress = CompressionLayer::new().compress_when(DefaultPredicate::new().and(
        |_: StatusCode, _: axum::http::Version, headers: &HeaderMap, _: &axum::http::Extensions| {
            !headers.contains_key(header::CONTENT_RANGE)
        },
    ));
    Router::new()
        .route("/", get(pages::list))
        .route("/message/{mid}", get(pages::message))
        .route("/part/{mid}/{cid}", get(files::part))
        .route("/raw/{mid}", get(files::raw))
        .route("/static/{file}", get(assets::get))
        .route("/api/openapi.json", get(api::openapi))
        .route("/api/status", get(api::status))
        .route(
            "/api/messages",
            get(api::list_messages).post(api::upload).layer(DefaultBodyLimit::max(state.config.max_upload)),
        )
        .route("/api/messages/{id}", get(api::get_message).delete(api::delete_message))
        .fallback(not_found)
        .layer(middleware::from_fn(security_headers))
        .layer(compress)
        .layer(cors)
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

fn cors_layer(origins: &[String]) -> CorsLayer {
    let base = CorsLayer::new()
        .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::DELETE])
        .allow_headers([header::CONTENT_TYPE, header::RANGE, header::IF_NONE_MATCH])
        .expose_headers([header::ETAG, header::CONTENT_RANGE, header::LOCATION]);
    if origins.iter().any(|o| o == "*") {
        base.allow_origin(AllowOrigin::any())
    } else {
        let list: Vec<HeaderValue> = origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect();
        // An empty list allows no origin: CORS stays off.
        base.allow_origin(AllowOrigin::list(list))
    }
}

/// Headers every response carries; pages that do not set their own CSP get the app's.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(APP_CSP));
    h.entry(HeaderName::from_static("cross-origin-opener-policy")).or_insert(HeaderValue::from_static("same-origin"));
    res
}

async fn not_found(req: Request) -> Response {
    if req.uri().path().starts_with("/api/") {
        ApiError(Error::NoRoute).into_response()
    } else {
        PageError(Error::NoRoute).into_response()
    }
}

/// An error answered as `application/problem+json` (API, parts, raw messages).
#[derive(Debug)]
pub struct ApiError(pub Error);

/// An error answered as an HTML page.
#[derive(Debug)]
pub struct PageError(pub Error);

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

fn status_of(e: &Error) -> StatusCode {
    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn log_if_internal(e: &Error) {
    if e.status() >= 500 {
        tracing::error!(error = %e, "request failed");
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        log_if_internal(&self.0);
        let (slug, title) = self.0.kind();
        let body = serde_json::json!({
            "type": format!("/api/problems/{slug}"),
            "title": title,
            "status": status.as_u16(),
            "detail": self.0.public_detail(),
        });
        let mut res = (status, Json(body)).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if matches!(self.0, Error::ReadOnly) {
            res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        }
        res
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        log_if_internal(&self.0);
        let page = pages::ErrorPage::new(status.as_u16(), self.0.kind().1, &self.0.public_detail());
        (status, page.html()).into_response()
    }
}

/// Renders a template, turning a template failure into a logged 500.
pub fn render<T: askama::Template>(t: &T) -> Result<Html<String>, PageError> {
    t.render().map(Html).map_err(|e| PageError(Error::Internal(format!("template: {e}"))))
}

/// Runs blocking work (reading and parsing a message) off the async threads.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::Internal(format!("worker: {e}")))?
}

//! The router: every route and layer on one screen. Nothing else lives here; the handlers and the
//! plumbing they share sit in their own rooms below. (The PDF renderer answers the browser it
//! drives with a small router of its own, in [`super::print`], so no handler needs this one.)

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower::ServiceBuilder;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::TraceLayer;

use super::error::{ApiError, PageError};
use super::guard::{self, Front, Guard};
use super::hot::PartsFirst;
use super::state::AppState;
use super::{api, assets, compress, export, gate, openapi, pages, parts, print, signin, thumbs};
use crate::error::Error;

/// The routes in their layers as a `Router`, which tests drive with `tower::ServiceExt::oneshot`;
/// the server runs the same [`service`] without the router around it.
pub fn app(state: AppState) -> Router {
    Router::new().fallback_service(service(state))
}

/// What the server runs for each request: the routes inside their layers, without a router around
/// them that would only forward to them (and clone and box them for every request on the way).
pub fn service(state: AppState) -> impl super::server::App {
    let cors = cors_layer(&state.config.cors_origins);
    let front = Arc::new(Front { guard: Guard::new(&state.config), state: state.clone() });
    let routes = Router::new()
        .route("/", get(pages::list::list))
        .route("/folder/{*path}", get(pages::list::folder))
        .route("/label/{name}", get(pages::list::label))
        .route("/thread/{mid}", get(pages::conversation::conversation))
        .route("/overview", get(pages::overview::overview))
        // The message page, or its PDF for `<mid>.pdf` (see pages::message::message).
        .route("/message/{mid}", get(pages::message::message))
        .route("/part/{mid}/{cid}", get(parts::part))
        .route("/raw/{mid}", get(parts::raw))
        .route("/thumb/{mid}/{cid}", get(thumbs::thumb))
        .route("/static/{file}", get(assets::get))
        .route("/api/openapi.json", get(openapi::openapi))
        .route("/api/status", get(api::status))
        .route(
            "/api/messages",
            get(api::list_messages).post(api::upload).layer(DefaultBodyLimit::max(state.config.max_upload)),
        )
        .route("/api/messages/{id}", get(api::get_message).delete(api::delete_message))
        .route("/api/folders", get(api::folders))
        .route("/api/labels", get(api::labels))
        .route("/api/stats", get(api::stats))
        // Taking mail out: exports of a search, the print view and its PDF.
        .route("/api/export", get(export::export))
        .route("/message/{mid}/print", get(print::print))
        // Signing in and out (see `signin`; `gate` decides who reads, `record` keeps the audit log).
        .route(
            "/login",
            get(signin::login_page).post(signin::login).layer(DefaultBodyLimit::max(crate::limits::MAX_SIGN_IN_FORM)),
        )
        .route("/logout", get(signin::logout_page).post(signin::logout))
        .route("/login/oidc", get(signin::oidc_start))
        .route("/login/oidc/callback", get(signin::oidc_callback))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone());
    let routes = PartsFirst { routes, state: state.clone() };
    // The layers wrap the router once, outermost first. (`Router::layer` would wrap every route
    // in each of them, boxed one inside the other.) Each middleware function clones and boxes
    // what lies below it for every request, so there are as few as can be: what every request
    // meets first (the host and cross-site checks, the shared database's absence, the headers
    // every answer carries) and who reads, with the audit log's line, are one layer. With CORS,
    // who reads sits inside it, a layer of its own: preflights need no reader, and the refusals
    // of an unknown reader carry the CORS headers a script of an allowed origin reads them by.
    let routes = ServiceBuilder::new().layer(compress::layer()).service(routes);
    let stack = match cors {
        None => tower::util::Either::Left(
            ServiceBuilder::new().layer(middleware::from_fn_with_state(front, front_and_gate)).service(routes),
        ),
        Some(cors) => tower::util::Either::Right(
            ServiceBuilder::new()
                .layer(middleware::from_fn_with_state(front, front_only))
                .layer(cors)
                .layer(middleware::from_fn_with_state(state, gate_only))
                .service(routes),
        ),
    };
    // A span and lines of the log for every request, when the log takes them
    // (`RUST_LOG=tower_http=debug`, or any of the layer's own targets at DEBUG): otherwise the
    // layer only made a span no one saw and wrapped every body. (Its error lines, for 5xx answers
    // and bodies that fail, have their own: the error mapping and the export log those.)
    let traced = tracing::enabled!(target: "tower_http::trace::make_span", tracing::Level::DEBUG)
        || tracing::enabled!(target: "tower_http::trace::on_request", tracing::Level::DEBUG)
        || tracing::enabled!(target: "tower_http::trace::on_response", tracing::Level::DEBUG)
        || tracing::enabled!(target: "tower_http::trace::on_eos", tracing::Level::DEBUG);
    let trace = traced
        .then(|| ServiceBuilder::new().map_response(IntoResponse::into_response).layer(TraceLayer::new_for_http()));
    let stack = ServiceBuilder::new().option_layer(trace).service(stack);
    tower::ServiceExt::map_response(stack, IntoResponse::into_response)
}

/// The front ([`guard::front`]) around who reads ([`gate::gate`]).
async fn front_and_gate(State(front): State<Arc<Front>>, req: Request, next: Next) -> Response {
    guard::front(&front, req, |req| gate::gate(&front.state, req, next)).await
}

/// The front alone, outside CORS.
async fn front_only(State(front): State<Arc<Front>>, req: Request, next: Next) -> Response {
    guard::front(&front, req, |req| next.run(req)).await
}

/// Who reads alone, inside CORS.
async fn gate_only(State(state): State<AppState>, req: Request, next: Next) -> Response {
    gate::gate(&state, req, next).await
}

/// CORS for the origins configured; none when there are none (no answer then says anything to
/// another origin, and no request pays for cloning the layer's lists).
fn cors_layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let base = CorsLayer::new()
        .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::DELETE])
        .allow_headers([header::CONTENT_TYPE, header::RANGE, header::IF_NONE_MATCH, header::IF_MATCH])
        .expose_headers([header::ETAG, header::CONTENT_RANGE, header::LOCATION]);
    if origins.iter().any(|o| o == "*") {
        Some(base.allow_origin(AllowOrigin::any()))
    } else {
        let list: Vec<HeaderValue> = origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect();
        Some(base.allow_origin(AllowOrigin::list(list)))
    }
}

/// A method a route does not take: the problem, as every other error is told (the router adds
/// the `Allow` header).
async fn method_not_allowed(req: Request) -> Response {
    // The routes of data (JSON, parts, raw messages, thumbnails) answer problems as JSON.
    let path = req.uri().path();
    if ["/api/", "/part/", "/raw/", "/thumb/"].iter().any(|p| path.starts_with(p)) {
        ApiError(Error::MethodNotAllowed).into_response()
    } else {
        PageError(Error::MethodNotAllowed).into_response()
    }
}

async fn not_found(req: Request) -> Response {
    if req.uri().path().starts_with("/api/") {
        ApiError(Error::NoRoute).into_response()
    } else {
        PageError(Error::NoRoute).into_response()
    }
}

//! Who is asking, before any handler runs: the reader a request comes from, put in its extensions
//! for the handlers' [`Viewer`], or the answer to a request from nobody.
//!
//! On a server without accounts every request is the owner's (everything, uploads and deletes).
//! With accounts a reader is, in this order: the name in `--trusted-header`, only on a request
//! whose connection comes from a `--trusted-proxy` address (from anywhere else the header is
//! ignored); HTTP Basic credentials (for `curl -u`), checked like a sign-in and counted against its
//! limits (a success is remembered for a minute by a digest of the credentials, so a script's
//! requests do not each cost a hash); the session cookie. Without any, a page answers `303` to
//! `/login` (and back afterwards), anything else `401` with `WWW-Authenticate: Basic
//! realm="mailshelf"`; `/api/status` is answered (saying only whether the server is ready), and so
//! are the sign-in routes and the static files. Uploads and deletes need an admin (`403`).
//!
//! The client's address is the connection's peer; behind a trusted proxy, the last address of
//! `X-Forwarded-For` that is not itself a trusted proxy.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use super::error::{wants_html, ApiError, PageError};
use super::record::record;
use super::state::AppState;
use crate::auth::{Accounts, Reader};
use crate::error::Error;
use crate::index::Access;
use crate::view::View;

pub(crate) use super::guard::cookie_name;

/// The view of the request's reader; a request that reached a handler without one reads nothing.
pub(crate) struct Viewer(pub Arc<View>, pub Reader);

impl FromRequestParts<AppState> for Viewer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let reader = parts.extensions.get::<Reader>().cloned().unwrap_or_else(nobody);
        Ok(Viewer(state.view_for(&reader.access), reader))
    }
}

/// Someone who may read nothing.
fn nobody() -> Reader {
    Reader { name: String::new(), access: Access::nothing(), admin: false }
}

/// The client's address (see the module's notes); `None` without a connection (a test driving the
/// router directly).
pub(crate) fn client_address(
    req_headers: &HeaderMap,
    peer: Option<IpAddr>,
    accounts: Option<&Accounts>,
) -> Option<IpAddr> {
    let peer = peer?;
    let Some(accounts) = accounts.filter(|a| a.trusts(peer)) else { return Some(peer) };
    let forwarded = req_headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>();
    let hops: Vec<IpAddr> =
        forwarded.iter().flat_map(|v| v.split(',')).filter_map(|a| a.trim().parse::<IpAddr>().ok()).collect();
    Some(hops.into_iter().rev().find(|a| !accounts.trusts(*a)).unwrap_or(peer))
}

/// The connection's peer, when the server put it there.
pub(crate) fn peer_of(req: &Request) -> Option<IpAddr> {
    req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

/// Routes anyone may ask for.
fn public(path: &str) -> bool {
    path.starts_with("/static/") || matches!(path, "/login" | "/logout" | "/login/oidc" | "/login/oidc/callback")
}

/// Routes a script asks for, answered `401` rather than sent to the sign-in page.
fn for_scripts(path: &str) -> bool {
    ["/api/", "/part/", "/raw/", "/thumb/"].iter().any(|p| path.starts_with(p))
}

/// Finds the reader of every request (see the module's notes), and has what the requests it lets
/// through read recorded ([`super::record`]; in this layer rather than one of its own, which
/// would clone and box the rest of the stack once more per request).
pub(crate) async fn gate(state: &AppState, mut req: Request, next: Next) -> Response {
    let Some(accounts) = state.accounts.clone() else {
        req.extensions_mut().insert(Reader::owner());
        return record(state, req, next).await;
    };
    let path = req.uri().path().to_string();
    let peer = peer_of(&req);
    let address = client_address(req.headers(), peer, Some(&accounts));
    match identify(state, &accounts, req.headers(), peer, address).await {
        Ok(Some(reader)) => {
            // The methods some route writes with; any other (`PUT`, `PATCH`) is the router's `405`
            // for every reader, as it is for an admin.
            let writes = matches!(*req.method(), Method::POST | Method::DELETE);
            if writes && !reader.admin && !public(&path) {
                // A form sent from a page gets a page saying why.
                return match wants_html(req.headers()) {
                    true => PageError(Error::NotAdmin).into_response(),
                    false => ApiError(Error::NotAdmin).into_response(),
                };
            }
            req.extensions_mut().insert(reader);
            record(state, req, next).await
        }
        Ok(None) if public(&path) || path == "/api/status" => record(state, req, next).await,
        Ok(None) if for_scripts(&path) => ApiError(Error::Unauthorized).into_response(),
        Ok(None) => to_sign_in(&req),
        Err(e) => ApiError(e).into_response(),
    }
}

/// `303` to the sign-in page, which sends the reader back here afterwards.
fn to_sign_in(req: &Request) -> Response {
    let back = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let next = percent_encoding::utf8_percent_encode(back, percent_encoding::NON_ALPHANUMERIC);
    let location = format!("/login?next={next}");
    match HeaderValue::from_str(&location) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => (StatusCode::SEE_OTHER, [(header::LOCATION, HeaderValue::from_static("/login"))]).into_response(),
    }
}

/// The reader of a request: `Ok(None)` when it carries no credentials, an error when it carries
/// wrong ones (or too many were wrong lately).
async fn identify(
    state: &AppState,
    accounts: &Arc<Accounts>,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
    address: Option<IpAddr>,
) -> Result<Option<Reader>, Error> {
    if let (Some(name), Some(peer)) = (&accounts.settings.trusted_header, peer) {
        if let Some(value) = headers.get(name.as_str()) {
            if accounts.trusts(peer) {
                let named = value.to_str().map_err(|_| Error::Unauthorized)?;
                // A name the users file does not know, and no default folders: signed in, to nothing.
                let reader = accounts.vouched(named).unwrap_or_else(|| Reader {
                    name: named.trim().to_string(),
                    access: Access::nothing(),
                    admin: false,
                });
                return Ok(Some(reader));
            }
            tracing::debug!(%peer, "a user header from an address that is not a trusted proxy, ignored");
        }
    }
    if let Some(credentials) = basic(headers) {
        return basic_sign_in(state, accounts, credentials, address).await.map(Some);
    }
    let Some(id) = session_cookie(headers, accounts.settings.secure_cookies) else { return Ok(None) };
    if state.archive().backend().shared {
        let accounts = Arc::clone(accounts);
        return crate::view::blocking(move || accounts.reader_of_session(&id)).await;
    }
    accounts.reader_of_session(&id)
}

/// Name and password of an `Authorization: Basic` header.
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") || rest.len() > 4 * crate::limits::MAX_SIGN_IN_FORM {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (name, password) = text.split_once(':')?;
    Some((name.to_string(), password.to_string()))
}

async fn basic_sign_in(
    state: &AppState,
    accounts: &Arc<Accounts>,
    (name, password): (String, String),
    address: Option<IpAddr>,
) -> Result<Reader, Error> {
    if let Some(reader) = accounts.remembered_basic(&name, &password) {
        return Ok(reader);
    }
    if let Err(wait) = accounts.may_try(address, &name) {
        return Err(Error::TooManyAttempts(wait.as_secs().max(1)));
    }
    match accounts.check_password(&name, &password).await {
        Some(user) => {
            accounts.signed_in(address, &name);
            accounts.remember_basic(&name, &password, &user);
            Ok(Accounts::reader_of(&user))
        }
        None => {
            accounts.failed(address, &name);
            super::record::failed_sign_in(state, &name, address);
            Err(Error::Unauthorized)
        }
    }
}

/// The session id of the request's cookie, if any.
pub(crate) fn session_cookie(headers: &HeaderMap, secure: bool) -> Option<String> {
    cookie_value(headers, cookie_name(secure))
}

/// The value of the request's cookie `name`, if any.
pub(crate) fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
}

//! What stands between mailshelf and the other websites its user visits, run before any handler:
//!
//! - **Host allow-list** (DNS rebinding). A page on any site can re-point its own name at 127.0.0.1
//!   and then read this server same-origin. The browser still sends that name as `Host`, so only
//!   requests addressed to an IP literal, `localhost`, a `*.localhost` name (RFC 6761 keeps those on
//!   the loopback) or a name the user allowed are answered; the rest get 421.
//! - **Cross-site writes** (CSRF). A form on any site can POST a `multipart/form-data` upload with no
//!   preflight. Writes carrying `Sec-Fetch-Site: cross-site`/`same-site`, or (from a browser that
//!   sends no `Sec-Fetch-Site`) an `Origin` that is neither ours nor one allowed with
//!   `--cors-origin`, get 403. `Sec-Fetch-Site: same-origin` is mailshelf's own page, whatever its
//!   `Origin` (a form posted under `Referrer-Policy: no-referrer` says `null`). Requests with neither header
//!   (curl, scripts) are not from a browser page and go through. A message's PDF, which sets a
//!   browser to work for up to a minute, and thumbnails, which only mailshelf's own pages show
//!   and whose answer tells whether a message exists, are held to the same rule though they are
//!   reads.
//! - **Headers on every response**: `nosniff`, no referrer, a CSP for pages that set none, and
//!   `Cross-Origin-Opener-Policy`; with accounts, `Cross-Origin-Resource-Policy: same-origin`.
//! - **A shared database that is away** answers 503 with `Retry-After` (rather than pages that
//!   say a message is missing when it is only out of reach), except `/api/status`, which says so,
//!   and the static files.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::csp::add_security_headers;
use super::error::{wants_html, ApiError, PageError};
use super::state::AppState;
use crate::config::Config;
use crate::error::Error;

/// Who may address this server and who may write to it, from the configuration.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// Extra host names, lower case; `*` switches the check off.
    allowed_hosts: Vec<String>,
    /// Origins allowed to call the API (`*` for any).
    cors_origins: Vec<String>,
}

impl Guard {
    pub(crate) fn new(config: &Config) -> Arc<Guard> {
        Arc::new(Guard { allowed_hosts: config.allowed_hosts.clone(), cors_origins: config.cors_origins.clone() })
    }

    /// Whether a `Host` value (name or address, with or without a port) is one we answer to.
    pub(crate) fn host_allowed(&self, host: &str) -> bool {
        if self.allowed_hosts.iter().any(|h| h == "*") {
            return true;
        }
        let Some(name) = host_name(host) else { return false };
        if name.parse::<IpAddr>().is_ok() {
            return true;
        }
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        name == "localhost" || name.ends_with(".localhost") || self.allowed_hosts.contains(&name)
    }

    /// Whether a write with these headers comes from a page of another site that was not allowed.
    /// `api` is false for the sign-in routes, which no other origin may use, allowed or not (a
    /// form there would sign the reader's browser in as whoever it names: login CSRF).
    fn cross_site(&self, headers: &HeaderMap, api: bool) -> bool {
        let origin = headers.get(header::ORIGIN).map(|o| o.to_str().unwrap_or("null"));
        if let (Some(origin), true) = (origin, api) {
            // An origin the user allowed to call the API may write, from whichever site it is,
            // without credentials. A browser attaches the session cookie, or Basic credentials
            // typed into its own dialog, to another site's form by itself (a script of another
            // origin cannot set `Authorization`: CORS does not allow that header), so a write
            // carrying either is held to the same rule as any other page's: else a site allowed
            // by `--cors-origin` could act as whoever is signed in.
            let allowed = self.cors_origins.iter().any(|o| o == "*" || o.eq_ignore_ascii_case(origin));
            if allowed && !carries_credentials(headers) {
                return false;
            }
        }
        let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
        match fetch_site {
            Some("cross-site" | "same-site") => return true,
            // Only a browser sets `Sec-Fetch-*` (pages cannot), and it says the page is ours. The
            // `Origin` is then often `null`: mailshelf's pages send no referrer, and a browser
            // sends `Origin: null` on a form's POST under that policy.
            Some("same-origin") => return false,
            _ => {}
        }
        let Some(origin) = origin else { return false };
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let ours = host.is_some_and(|host| {
            ["http://", "https://"].iter().any(|s| origin.eq_ignore_ascii_case(&format!("{s}{host}")))
        });
        !ours
    }
}

/// The session cookie's name: with the `__Host-` prefix when cookies are `Secure` (the browser
/// then takes it only from HTTPS, for this host alone, for every path).
pub(crate) fn cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-mailshelf"
    } else {
        "mailshelf"
    }
}

/// Whether a request carries credentials a browser may have attached by itself: HTTP
/// authorization, or a session cookie (of either name).
fn carries_credentials(headers: &HeaderMap) -> bool {
    headers.contains_key(header::AUTHORIZATION)
        || headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|v| {
            v.split(';').filter_map(|c| c.split_once('=')).any(|(name, _)| {
                let name = name.trim();
                name == cookie_name(false) || name == cookie_name(true)
            })
        })
}

/// The host part of a `Host` header: the name, or the address without brackets; `None` when it
/// is not well formed.
fn host_name(host: &str) -> Option<&str> {
    if let Some(rest) = host.strip_prefix('[') {
        // An IPv6 literal: `[::1]` or `[::1]:8025`.
        let (addr, after) = rest.split_once(']')?;
        return (after.is_empty() || after.strip_prefix(':').is_some_and(is_port)).then_some(addr);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if is_port(port) => Some(name),
        Some(_) => None,
        None => Some(host),
    }
    .filter(|n| !n.is_empty())
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// An error as the client wants it: a page for a browser navigating, problem+json otherwise.
fn refuse(req: &Request, e: Error) -> Response {
    if wants_html(req.headers()) {
        PageError(e).into_response()
    } else {
        ApiError(e).into_response()
    }
}

/// The state of [`front`]: who may address the server and write to it, and the app's state.
pub(crate) struct Front {
    pub(crate) guard: Arc<Guard>,
    pub(crate) state: AppState,
}

/// What every request meets first: the host and cross-site checks ([`refusal`]), the shared
/// database's absence ([`database_away`]), then `inner` (who reads, and the rest of the stack),
/// and on the way out the headers every answer carries ([`with_security_headers`]). One layer in
/// [`super::app()`] runs it all: each layer of its own cloned and boxed the rest of the stack once
/// more for every request.
pub(crate) async fn front<F>(front: &Front, req: Request, inner: impl FnOnce(Request) -> F) -> Response
where
    F: Future<Output = Response>,
{
    let res = match refusal(&front.guard, &req) {
        Some(refused) => refused,
        None => database_away(&front.state, req, inner).await,
    };
    let mut res = with_security_headers(res);
    if front.state.accounts.is_some() {
        // On a server people sign in to, a message's frame is of this origin too, so every
        // request of its own is same-origin: no other page, of another site or of another port
        // on this host (which `SameSite` counts as the same site and sends the cookie to), may
        // embed an answer, and so none can tell from a picture's `load` or `error` whether a
        // message is there.
        res.headers_mut().insert(
            axum::http::HeaderName::from_static("cross-origin-resource-policy"),
            axum::http::HeaderValue::from_static("same-origin"),
        );
    }
    res
}

/// The answer to a request addressed to a name this server does not answer to, or to a
/// cross-site write; `None` for the others. A request without `Host` (HTTP/1.0, or a test driving
/// the router directly) is not from a browser, which always sends one.
fn refusal(guard: &Guard, req: &Request) -> Option<Response> {
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str())
        .or_else(|| req.headers().get(header::HOST).map(|h| h.to_str().unwrap_or_default()));
    if let Some(host) = host {
        if !guard.host_allowed(host) {
            tracing::warn!(host, "request for a host name this server does not answer to");
            return Some(refuse(req, Error::UnknownHost));
        }
    }
    let writes = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    // Reads held to the rule of writes: a message's PDF sets a browser to work for up to a
    // minute (`<img src=…/message/x.pdf>` on another site's page would keep the renderer busy),
    // and a thumbnail, shown only on mailshelf's own pages, answers a picture or an icon as the
    // message exists or not (another site's `<img>` could tell which from its `load` event).
    let guarded_read = req.method() == Method::GET && {
        let path = req.uri().path();
        (path.starts_with("/message/") && path.ends_with(".pdf")) || path.starts_with("/thumb/")
    };
    let sign_in = matches!(req.uri().path(), "/login" | "/logout");
    if (writes || guarded_read) && guard.cross_site(req.headers(), !sign_in) {
        return Some(refuse(req, Error::CrossSiteWrite));
    }
    None
}

/// 503 while the shared database is away (see the module's notes); a request during which it
/// went away, or a query failed for want of it, is answered the same, whatever the handler made
/// of its failed reads.
async fn database_away<F>(state: &AppState, req: Request, inner: impl FnOnce(Request) -> F) -> Response
where
    F: Future<Output = Response>,
{
    let before = state.archive().backend();
    let path = req.uri().path();
    if !before.shared || path == "/api/status" || path.starts_with("/static/") {
        return inner(req).await;
    }
    let api = path.starts_with("/api/") || !wants_html(req.headers());
    if before.reachable {
        let res = inner(req).await;
        let after = state.archive().backend();
        if after.reachable && after.failures == before.failures {
            return res;
        }
    }
    if api {
        ApiError(Error::StoreUnavailable).into_response()
    } else {
        PageError(Error::StoreUnavailable).into_response()
    }
}

/// The headers every response carries, as a layer of its own (for the router that answers the
/// PDF renderer, [`super::print`]).
pub(crate) async fn security_headers(req: Request, next: Next) -> Response {
    with_security_headers(next.run(req).await)
}

/// Headers every response carries ([`super::csp::add_security_headers`]).
fn with_security_headers(mut res: Response) -> Response {
    add_security_headers(res.headers_mut());
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderName, HeaderValue};

    fn guard(allowed: &[&str], cors: &[&str]) -> Guard {
        Guard {
            allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
            cors_origins: cors.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn hosts_answered() {
        let g = guard(&["mail.example.org"], &[]);
        let cases = [
            ("127.0.0.1", true),
            ("127.0.0.1:8025", true),
            ("192.168.1.20:8080", true),
            ("[::1]:8025", true),
            ("[::1]", true),
            ("localhost:8025", true),
            ("LOCALHOST", true),
            ("mailshelf.localhost:8025", true),
            ("localhost.:8025", true),
            ("mail.example.org", true),
            ("Mail.Example.Org:443", true),
            ("evil.example", false),
            ("evil.example:8025", false),
            ("localhost.evil.example", false),
            ("127.0.0.1.evil.example", false),
            ("example.org", false),
            ("", false),
            (":8025", false),
            ("[::1", false),
            ("[::1]x", false),
            ("127.0.0.1:port", false),
        ];
        for (host, want) in cases {
            assert_eq!(g.host_allowed(host), want, "{host}");
        }
        assert!(guard(&["*"], &[]).host_allowed("anything.example"));
    }

    #[test]
    fn cross_site_writes() {
        let g = guard(&[], &["https://tools.example"]);
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
            }
            h
        };
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[], false),
            (&[("sec-fetch-site", "same-origin")], false),
            (&[("host", "127.0.0.1:8025"), ("sec-fetch-site", "same-origin"), ("origin", "null")], false),
            (&[("sec-fetch-site", "none")], false),
            (&[("sec-fetch-site", "cross-site")], true),
            (&[("sec-fetch-site", "same-site")], true),
            (&[("host", "127.0.0.1:8025"), ("origin", "http://127.0.0.1:8025")], false),
            (&[("host", "127.0.0.1:8025"), ("origin", "http://evil.example")], true),
            (&[("host", "127.0.0.1:8025"), ("origin", "null")], true),
            (&[("host", "127.0.0.1:8025"), ("origin", "https://tools.example")], false),
            (&[("origin", "http://127.0.0.1:8025")], true),
            (&[("sec-fetch-site", "cross-site"), ("origin", "https://tools.example")], false),
            // An allowed origin writes without credentials, never on a reader's session.
            (&[("sec-fetch-site", "same-site"), ("origin", "https://tools.example"), ("cookie", "mailshelf=x")], true),
            (
                &[
                    ("sec-fetch-site", "cross-site"),
                    ("origin", "https://tools.example"),
                    ("authorization", "Basic eDp5"),
                ],
                true,
            ),
            (
                &[
                    ("sec-fetch-site", "cross-site"),
                    ("origin", "https://tools.example"),
                    ("cookie", "a=1; __Host-mailshelf=x"),
                ],
                true,
            ),
            (&[("sec-fetch-site", "cross-site"), ("origin", "https://tools.example"), ("cookie", "other=1")], false),
        ];
        for (pairs, want) in cases {
            assert_eq!(g.cross_site(&headers(pairs), true), *want, "{pairs:?}");
        }
    }
}

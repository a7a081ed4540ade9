//! Signing in and out: `GET /login` (a form of name and password, no script needed, and a link to
//! the OpenID Connect provider when there is one), `POST /login`, `POST /logout` (and `GET
//! /logout`, a page with that button), and the provider's round trip, `GET /login/oidc` and
//! `GET /login/oidc/callback`.
//!
//! A sign-in always starts a new session (a cookie the browser came with is ended first, so no
//! session id chosen by someone else survives it: no session fixation) and sets it in a cookie
//! that is `HttpOnly`, `SameSite=Lax`, for the whole site, and `Secure` on HTTPS or with
//! `--secure-cookies`. `POST /login` is a write, so the cross-site write guard refuses it from
//! another site's page. A failed sign-in says only "wrong name or password", whatever was wrong;
//! after too many, `429` with `Retry-After`. `next` (where to go back to) is followed only when it
//! is a path on this server.

use askama::Template;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use serde::Deserialize;

use super::assets::AssetUrls;
use super::error::PageError;
use super::extract::Params;
use super::gate::{client_address, cookie_name, peer_of, session_cookie};
use super::record;
use super::state::AppState;
use crate::auth::oidc::{Oidc, PENDING_SECS};
use crate::auth::session::Session;
use crate::auth::{Accounts, Reader};
use crate::error::Error;

/// The cookie that binds a sign-in at the provider to the browser that started it.
const OIDC_COOKIE: &str = "mailshelf_oidc";

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    assets: AssetUrls,
    q: String,
    heading: String,
    error: Option<String>,
    passwords: bool,
    issuer: Option<String>,
    next: String,
    next_query: String,
    signed_in: bool,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct LoginQuery {
    next: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: Option<String>,
}

/// Where to go after signing in: a path of this server (not `//host`, not `/\host`), else `/`.
fn local(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') && !n.chars().any(char::is_control) =>
        {
            n.to_string()
        }
        _ => "/".into(),
    }
}

fn page(accounts: Option<&Accounts>, status: StatusCode, error: Option<&str>, next: &str, signed_in: bool) -> Response {
    let passwords = accounts.is_some_and(|a| a.settings.users.is_some());
    let issuer = accounts.and_then(|a| a.oidc.as_ref()).map(|o| o.issuer().to_string());
    let heading = if signed_in { "Signed in" } else { "Sign in to mailshelf" };
    let html = LoginPage {
        assets: AssetUrls::get(),
        q: String::new(),
        heading: heading.into(),
        error: error.map(str::to_string),
        passwords: passwords && !signed_in,
        issuer: issuer.filter(|_| !signed_in),
        next_query: percent_encoding::utf8_percent_encode(next, percent_encoding::NON_ALPHANUMERIC).to_string(),
        next: next.to_string(),
        signed_in,
    }
    .render();
    match html {
        Ok(html) => {
            let mut res = (status, axum::response::Html(html)).into_response();
            res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            res
        }
        Err(e) => PageError(Error::internal("template", e)).into_response(),
    }
}

/// The sign-in page (a signed-in reader is sent on at once).
pub(crate) async fn login_page(
    State(state): State<AppState>,
    Params(q, _): Params<LoginQuery, PageError>,
    req: Request,
) -> Response {
    let next = local(q.next.as_deref());
    let Some(accounts) = state.accounts.as_deref() else { return see_other(&next, None) };
    if req.extensions().get::<Reader>().is_some() {
        return see_other(&next, None);
    }
    page(Some(accounts), StatusCode::OK, None, &next, false)
}

/// `POST /login`: name and password from the form.
pub(crate) async fn login(State(state): State<AppState>, headers: HeaderMap, req: Request) -> Response {
    let Some(accounts) = state.accounts.clone() else { return see_other("/", None) };
    let address = client_address(req.headers(), peer_of(&req), Some(&accounts));
    let form = match Form::<LoginForm>::from_request(req, &state).await {
        Ok(Form(form)) => form,
        // Over `MAX_SIGN_IN_FORM`: 413, as the limits say; anything else that is not the form is 400.
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return page(Some(&accounts), StatusCode::PAYLOAD_TOO_LARGE, Some("The form is too large."), "/", false);
        }
        Err(_) => return page(Some(&accounts), StatusCode::BAD_REQUEST, Some("wrong name or password"), "/", false),
    };
    let next = local(form.next.as_deref());
    if let Err(wait) = accounts.may_try(address, &form.name) {
        let seconds = wait.as_secs().max(1);
        let mut res = page(
            Some(&accounts),
            StatusCode::TOO_MANY_REQUESTS,
            Some(&format!("Too many failed sign-ins; try again in {seconds} seconds.")),
            &next,
            false,
        );
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return res;
    }
    let Some(user) = accounts.check_password(&form.name, &form.password).await else {
        accounts.failed(address, &form.name);
        record::failed_sign_in(&state, &form.name, address);
        return page(Some(&accounts), StatusCode::UNAUTHORIZED, Some("Wrong name or password."), &next, false);
    };
    accounts.signed_in(address, &form.name);
    let started = end_then_start(&state, &accounts, &headers, &user.name.clone(), Some(&user), address).await;
    match started {
        Ok(cookie) => see_other(&next, Some(cookie)),
        Err(e) => PageError(e).into_response(),
    }
}

/// Ends the session the browser came with, if any, starts a new one and records the sign-in:
/// its `Set-Cookie`. A sign-in the audit log could not take ends the session it started.
async fn end_then_start(
    state: &AppState,
    accounts: &std::sync::Arc<Accounts>,
    headers: &HeaderMap,
    name: &str,
    user: Option<&crate::auth::users::User>,
    address: Option<std::net::IpAddr>,
) -> Result<String, Error> {
    let secure = accounts.settings.secure_cookies;
    let old = session_cookie(headers, secure);
    let (accounts2, name2) = (std::sync::Arc::clone(accounts), name.to_string());
    let user_name_and_tag = user.map(|u| (u.name.clone(), u.credential_tag()));
    let run = move || -> Result<String, Error> {
        if let Some(old) = old {
            accounts2.sessions.end(&old)?;
        }
        let users = accounts2.users.users();
        let user = user_name_and_tag.and_then(|(n, tag)| users.get(&n).filter(|u| u.credential_tag() == tag));
        accounts2.start_session(&name2, user.as_deref())
    };
    let shared = state.archive().backend().shared;
    let id = if shared { crate::view::blocking(run).await? } else { run()? };
    if let Err(e) = record::signed_in(state, name, address) {
        let (a, started) = (std::sync::Arc::clone(accounts), id.clone());
        let end = move || a.sessions.end(&started);
        let ended = if shared { crate::view::blocking(end).await } else { end() };
        if let Err(e) = ended {
            tracing::error!(error = %e, "a sign-in the audit log did not take could not be undone");
        }
        return Err(e);
    }
    Ok(session_cookie_header(secure, &id, accounts.settings.session_hours * 3600))
}

fn session_cookie_header(secure: bool, id: &str, max_age: u64) -> String {
    let secure_attr = if secure { "; Secure" } else { "" };
    format!("{}={id}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure_attr}", cookie_name(secure))
}

fn see_other(to: &str, cookie: Option<String>) -> Response {
    let location = HeaderValue::from_str(to).unwrap_or(HeaderValue::from_static("/"));
    let mut res = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        res.headers_mut().append(header::SET_COOKIE, c);
    }
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// `GET /logout`: a page with the button that signs out.
pub(crate) async fn logout_page(State(state): State<AppState>, req: Request) -> Response {
    let signed_in = req.extensions().get::<Reader>().is_some();
    page(state.accounts.as_deref(), StatusCode::OK, None, "/", signed_in)
}

/// `POST /logout`: ends the session and forgets the cookie.
pub(crate) async fn logout(State(state): State<AppState>, req: Request) -> Response {
    let Some(accounts) = state.accounts.clone() else { return see_other("/", None) };
    let secure = accounts.settings.secure_cookies;
    let address = client_address(req.headers(), peer_of(&req), Some(&accounts));
    let name = req.extensions().get::<Reader>().map(|r| r.name.clone()).unwrap_or_default();
    if let Some(id) = session_cookie(req.headers(), secure) {
        let a = std::sync::Arc::clone(&accounts);
        let ended = crate::view::blocking(move || a.sessions.end(&id)).await;
        if let Err(e) = ended {
            return PageError(e).into_response();
        }
        record::event(&state, &name, "sign-out", address, 303);
    }
    see_other("/login", Some(session_cookie_header(secure, "", 0)))
}

/// `GET /login/oidc`: sends the browser to the provider, with a new sign-in under way.
pub(crate) async fn oidc_start(State(state): State<AppState>, Params(q, _): Params<LoginQuery, PageError>) -> Response {
    let Some((accounts, oidc)) = provider(&state) else { return PageError(Error::NoRoute).into_response() };
    let started = async {
        let pending = Oidc::prepare()?;
        let expires = crate::auth::now() + PENDING_SECS;
        let data = Some(serde_json::json!({ "oidc": pending, "next": local(q.next.as_deref()) }).to_string());
        let a = std::sync::Arc::clone(&accounts);
        let state_id = crate::view::blocking(move || {
            a.sessions.create(Session { user: String::new(), tag: String::new(), expires, data })
        })
        .await?;
        let url = oidc.url(&state_id, &pending).await?;
        Ok::<_, Error>((state_id, url))
    };
    match started.await {
        Ok((state_id, url)) => {
            let secure = if accounts.settings.secure_cookies { "; Secure" } else { "" };
            let cookie = format!(
                "{OIDC_COOKIE}={state_id}; Path=/login/oidc; HttpOnly; SameSite=Lax; Max-Age={PENDING_SECS}{secure}"
            );
            see_other(&url, Some(cookie))
        }
        Err(e) => page(
            Some(&accounts),
            StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY),
            Some(&e.public_detail()),
            "/",
            false,
        ),
    }
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /login/oidc/callback`: the provider sends the browser back with a code.
pub(crate) async fn oidc_callback(
    State(state): State<AppState>,
    Params(q, _): Params<Callback, PageError>,
    req: Request,
) -> Response {
    let Some((accounts, oidc)) = provider(&state) else { return PageError(Error::NoRoute).into_response() };
    let address = client_address(req.headers(), peer_of(&req), Some(&accounts));
    let headers = req.headers().clone();
    let fail = |why: &str| {
        tracing::warn!(why, "OpenID Connect sign-in refused");
        page(
            Some(&accounts),
            StatusCode::UNAUTHORIZED,
            Some("The sign-in with the identity provider did not succeed."),
            "/",
            false,
        )
    };
    let (Some(code), Some(state_id), None) = (q.code, q.state, q.error) else {
        return fail("the provider sent no code");
    };
    // The state must be this browser's own sign-in (its cookie), and is used once.
    let cookie = super::gate::cookie_value(&headers, OIDC_COOKIE);
    if cookie.as_deref().map(digest) != Some(digest(&state_id)) {
        return fail("the state is not this browser's sign-in");
    }
    let a = std::sync::Arc::clone(&accounts);
    let sid = state_id.clone();
    let kept = crate::view::blocking(move || {
        let kept = a.sessions.get(&sid)?;
        a.sessions.end(&sid)?;
        Ok(kept)
    })
    .await;
    let Ok(Some(Session { data: Some(data), .. })) = kept else { return fail("no such sign-in under way") };
    let Ok(data) = serde_json::from_str::<serde_json::Value>(&data) else { return fail("sign-in state unreadable") };
    let (Some(pending), next) = (data["oidc"].as_str(), local(data["next"].as_str())) else {
        return fail("sign-in state unreadable");
    };
    let name = match oidc.finish(&code, pending).await {
        Ok(name) => name,
        Err(_) => {
            record::failed_sign_in(&state, "", address);
            return fail("the provider's answer was refused");
        }
    };
    if accounts.vouched(&name).is_none() {
        record::failed_sign_in(&state, &name, address);
        return page(
            Some(&accounts),
            StatusCode::FORBIDDEN,
            Some("This account may not read this archive."),
            "/",
            false,
        );
    }
    match end_then_start(&state, &accounts, &headers, &name, None, address).await {
        Ok(cookie) => {
            let mut res = see_other(&next, Some(cookie));
            if let Ok(v) =
                HeaderValue::from_str(&format!("{OIDC_COOKIE}=; Path=/login/oidc; HttpOnly; SameSite=Lax; Max-Age=0"))
            {
                res.headers_mut().append(header::SET_COOKIE, v);
            }
            res
        }
        Err(e) => PageError(e).into_response(),
    }
}

fn provider(state: &AppState) -> Option<(std::sync::Arc<Accounts>, &Oidc)> {
    let accounts = state.accounts.as_ref()?;
    let oidc = accounts.oidc.as_ref()?;
    Some((std::sync::Arc::clone(accounts), oidc))
}

/// Compared by digest, so the comparison takes as long whatever is wrong.
fn digest(s: &str) -> [u8; 32] {
    *blake3::hash(s.as_bytes()).as_bytes()
}

#[cfg(test)]
mod tests {
    use super::local;

    #[test]
    fn only_paths_of_this_server_are_gone_back_to() {
        for (next, want) in [
            (Some("/message/a%40x?remote=1"), "/message/a%40x?remote=1"),
            (Some("//evil.example/"), "/"),
            (Some("/\\evil.example"), "/"),
            (Some("https://evil.example/"), "/"),
            (Some("javascript:alert(1)"), "/"),
            (Some("/\nx"), "/"),
            (None, "/"),
        ] {
            assert_eq!(local(next), want, "{next:?}");
        }
    }
}

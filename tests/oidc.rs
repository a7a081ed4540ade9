//! Signing in with OpenID Connect, against an identity provider of the tests' own: a small axum
//! server on a free loopback port with a discovery document, its keys (JWKS), an authorization
//! endpoint that signs in a preset person at once, and a token endpoint that checks the client's
//! secret and the PKCE verifier and answers an RS256-signed ID token. How it differs from a real
//! provider is in the README ("Single sign-on"). It can be told to misbehave: sign with a key it
//! does not publish, answer another nonce, or say the email is not verified.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::DecodePrivateKey;
use rsa::sha2::{Digest, Sha256};
use rsa::signature::{SignatureEncoding, Signer};
use rsa::traits::PublicKeyParts;

use crate::common::TestApp;
use crate::scopes::archive;

const CLIENT_ID: &str = "mailshelf-test";
const CLIENT_SECRET: &str = "s3cret-of-the-client";
const KEY_PEM: &str = include_str!("fixtures/oidc-test-key.pem");

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Honest,
    /// Signs with a key that is not in its JWKS.
    ForeignKey,
    /// Puts another nonce in the ID token than the one asked for.
    OtherNonce,
    /// Says the email is not verified (and gives a preferred_username).
    Unverified,
}

struct Grant {
    challenge: String,
    nonce: String,
    redirect: String,
}

#[derive(Clone)]
struct Idp {
    issuer: String,
    key: rsa::RsaPrivateKey,
    foreign: rsa::RsaPrivateKey,
    codes: Arc<Mutex<HashMap<String, Grant>>>,
    email: Arc<Mutex<String>>,
    mode: Arc<Mutex<Mode>>,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

async fn discovery(State(idp): State<Idp>) -> Json<serde_json::Value> {
    let i = &idp.issuer;
    Json(serde_json::json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "email", "profile"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn jwks(State(idp): State<Idp>) -> Json<serde_json::Value> {
    let public = idp.key.to_public_key();
    Json(serde_json::json!({ "keys": [{
        "kty": "RSA", "use": "sig", "alg": "RS256", "kid": "k1",
        "n": b64(&public.n().to_bytes_be()), "e": b64(&public.e().to_bytes_be()),
    }]}))
}

async fn authorize(State(idp): State<Idp>, Query(q): Query<HashMap<String, String>>) -> Response {
    let ok = q.get("client_id").map(String::as_str) == Some(CLIENT_ID)
        && q.get("response_type").map(String::as_str) == Some("code")
        && q.get("code_challenge_method").map(String::as_str) == Some("S256")
        && q.get("scope").is_some_and(|s| s.split(' ').any(|x| x == "openid"));
    let (Some(challenge), Some(nonce), Some(redirect), Some(state)) =
        (q.get("code_challenge"), q.get("nonce"), q.get("redirect_uri"), q.get("state"))
    else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if !ok {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let mut code = [0u8; 16];
    getrandom::fill(&mut code).unwrap();
    let code = b64(&code);
    idp.codes
        .lock()
        .unwrap()
        .insert(code.clone(), Grant { challenge: challenge.clone(), nonce: nonce.clone(), redirect: redirect.clone() });
    let to = format!(
        "{redirect}?code={code}&state={}",
        percent_encoding::utf8_percent_encode(state, percent_encoding::NON_ALPHANUMERIC)
    );
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

async fn token(State(idp): State<Idp>, headers: HeaderMap, Form(f): Form<HashMap<String, String>>) -> Response {
    let client =
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
    if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(client.as_str()) {
        return (StatusCode::UNAUTHORIZED, Json(serde_json::json!({"error": "invalid_client"}))).into_response();
    }
    let bad = || (StatusCode::BAD_REQUEST, Json(serde_json::json!({"error": "invalid_grant"}))).into_response();
    // A code is good once.
    let Some(grant) = f.get("code").and_then(|c| idp.codes.lock().unwrap().remove(c)) else { return bad() };
    let verifier = f.get("code_verifier").cloned().unwrap_or_default();
    if b64(&Sha256::digest(verifier.as_bytes())) != grant.challenge || f.get("redirect_uri") != Some(&grant.redirect) {
        return bad();
    }
    let mode = *idp.mode.lock().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let nonce = if mode == Mode::OtherNonce { "not-the-one".to_string() } else { grant.nonce };
    let email = idp.email.lock().unwrap().clone();
    let claims = serde_json::json!({
        "iss": idp.issuer, "sub": format!("sub-{email}"), "aud": CLIENT_ID, "iat": now, "exp": now + 300,
        "nonce": nonce, "email": email, "email_verified": mode != Mode::Unverified,
        "preferred_username": "scoped",
    });
    let head = b64(br#"{"alg":"RS256","typ":"JWT","kid":"k1"}"#);
    let body = b64(claims.to_string().as_bytes());
    let signing_input = format!("{head}.{body}");
    let key = if mode == Mode::ForeignKey { idp.foreign.clone() } else { idp.key.clone() };
    let signature = SigningKey::<Sha256>::new(key).sign(signing_input.as_bytes()).to_vec();
    let id_token = format!("{signing_input}.{}", b64(&signature));
    Json(serde_json::json!({ "access_token": "an-access-token", "token_type": "Bearer", "expires_in": 300, "id_token": id_token }))
        .into_response()
}

async fn start_idp() -> Idp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(KEY_PEM).unwrap();
    // Another key, never published.
    let foreign = rsa::RsaPrivateKey::from_pkcs8_pem(include_str!("fixtures/oidc-foreign-key.pem")).unwrap();
    let idp = Idp {
        issuer,
        key,
        foreign,
        codes: Arc::default(),
        email: Arc::new(Mutex::new("carol@example.org".into())),
        mode: Arc::new(Mutex::new(Mode::Honest)),
    };
    let router = Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(idp.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    idp
}

/// The users file: carol@example.org reads `Open`; `scoped` too (by preferred_username).
fn users(dir: &std::path::Path) -> std::path::PathBuf {
    let hash = mailshelf::auth::password::hash_with(b"unused", mailshelf::auth::password::test_params()).unwrap();
    let path = dir.join("users.toml");
    std::fs::write(
        &path,
        format!(
            "[[user]]\nname = \"carol@example.org\"\npassword = \"{hash}\"\nfolders = [\"Open\"]\n\n\
             [[user]]\nname = \"scoped\"\npassword = \"{hash}\"\nfolders = [\"Open/sub\"]\n"
        ),
    )
    .unwrap();
    path
}

/// Goes through the whole round trip as a browser would; the last answer of mailshelf.
async fn round_trip(app: &TestApp, idp: &Idp, cookie_override: Option<&str>) -> (crate::common::Reply, String) {
    let start = app.get("/login/oidc?next=%2Ffolder%2FOpen").await;
    assert_eq!(start.status, StatusCode::SEE_OTHER, "{}", start.text());
    let to_idp = start.header("location").to_string();
    assert!(to_idp.starts_with(&format!("{}/authorize?", idp.issuer)), "{to_idp}");
    assert!(to_idp.contains("code_challenge_method=S256") && to_idp.contains("nonce="), "{to_idp}");
    let oidc_cookie = start.header("set-cookie").split(';').next().unwrap().to_string();
    let http = openidconnect::reqwest::Client::builder()
        .redirect(openidconnect::reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let back = http.get(&to_idp).send().await.unwrap();
    assert_eq!(back.status().as_u16(), 302);
    let back = back.headers()["location"].to_str().unwrap().to_string();
    let path = back.split_once("/login/oidc/callback").map(|(_, rest)| format!("/login/oidc/callback{rest}")).unwrap();
    let cookie = cookie_override.unwrap_or(&oidc_cookie).to_string();
    let done = app.get_with(&path, &[("cookie", &cookie)]).await;
    (done, path)
}

fn app(idp: &Idp, dir: &std::path::Path, mail: std::path::PathBuf) -> TestApp {
    let users = users(dir);
    let secret = dir.join("client-secret");
    std::fs::write(&secret, format!("{CLIENT_SECRET}\n")).unwrap();
    let args = mailshelf::config::AccountsArgs {
        users: Some(users),
        oidc_issuer: Some(idp.issuer.clone()),
        oidc_client_id: Some(CLIENT_ID.into()),
        oidc_client_secret_file: Some(secret),
        public_url: Some("http://mail.localhost:8025".into()),
        ..Default::default()
    };
    let (accounts, _) = args.check().unwrap();
    TestApp::with_config(&[mail], |c| c.accounts = accounts)
}

#[tokio::test]
async fn openid_connect_signs_in_with_pkce_and_a_checked_id_token() {
    let idp = start_idp().await;
    let (dir, mail) = archive();
    let app = app(&idp, dir.path(), mail);
    let login = app.get("/login").await;
    assert!(login.text().contains(&format!("Sign in with {}", idp.issuer)), "{}", login.text());

    let (done, callback) = round_trip(&app, &idp, None).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.text());
    assert_eq!(done.header("location"), "/folder/Open");
    let session = done
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with("mailshelf="))
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let list = app.get_with("/api/messages", &[("cookie", &session)]).await;
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&list.body).unwrap()["total"], 2, "carol reads Open");

    // The same answer again (a replayed callback) signs nobody in: its state was used.
    let replay = app.get_with(&callback, &[("cookie", "mailshelf_oidc=whatever")]).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED);
    // Another browser's state: the cookie does not match.
    let (stolen, _) = round_trip(&app, &idp, Some("mailshelf_oidc=AAAA")).await;
    assert_eq!(stolen.status, StatusCode::UNAUTHORIZED);
    assert!(stolen.header("set-cookie").is_empty());

    for (mode, want) in [(Mode::ForeignKey, 401), (Mode::OtherNonce, 401)] {
        *idp.mode.lock().unwrap() = mode;
        let (refused, _) = round_trip(&app, &idp, None).await;
        assert_eq!(refused.status.as_u16(), want, "{mode:?}");
        assert!(
            !refused.headers.get_all("set-cookie").iter().any(|c| c.to_str().unwrap().starts_with("mailshelf=")),
            "{mode:?}"
        );
    }
    // An email the provider does not vouch for is not used: preferred_username names the user.
    *idp.mode.lock().unwrap() = Mode::Unverified;
    let (by_name, _) = round_trip(&app, &idp, None).await;
    assert_eq!(by_name.status, StatusCode::SEE_OTHER);
    // A person the users file does not know (and no default folders) reads nothing.
    *idp.mode.lock().unwrap() = Mode::Honest;
    *idp.email.lock().unwrap() = "stranger@example.org".into();
    let (stranger, _) = round_trip(&app, &idp, None).await;
    assert_eq!(stranger.status, StatusCode::FORBIDDEN);
}

//! Signing in, and the attacks on it: pages send people without a session to `/login`, scripts get
//! `401` with a Basic challenge; a sign-in sets a fresh `HttpOnly`, `SameSite=Lax` cookie (a new id
//! every time: no session fixation) and is refused from another site's page; failures are
//! answered alike for a wrong name and a wrong password (one hash checked either way), limited to
//! ten a minute per address and per name, and a megabyte password costs no hash; a trusted
//! header counts only from a trusted proxy; the users file is read again when it changes; the
//! audit log gets a line for every sign-in and read. Both backends.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};

use crate::common::{Reply, TestApp};
use crate::scopes::{archive, basic, users_file};

fn app_with(configure: impl FnOnce(&mut mailshelf::Config, &std::path::Path)) -> (TestApp, tempfile::TempDir) {
    let (dir, mail) = archive();
    let root = dir.path().to_path_buf();
    let app = TestApp::with_config(&[mail], |c| configure(c, &root));
    (app, dir)
}

fn with_users() -> (TestApp, tempfile::TempDir) {
    app_with(|c, root| c.accounts.users = Some(users_file(root)))
}

async fn send(app: &TestApp, req: axum::http::request::Builder, body: Body, from: &str) -> Reply {
    let mut req = req.body(body).unwrap();
    let peer: SocketAddr = from.parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(peer));
    app.request(req).await
}

async fn sign_in(app: &TestApp, name: &str, password: &str, cookie: Option<&str>) -> Reply {
    let form = format!("name={name}&password={password}&next=%2Ffolder%2FOpen");
    let mut req = Request::post("/login").header("content-type", "application/x-www-form-urlencoded");
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    send(app, req, Body::from(form), "192.0.2.10:5000").await
}

/// The session cookie a sign-in set, as `name=value`.
fn cookie_of(r: &Reply) -> String {
    let set = r
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with("mailshelf="))
        .expect("a session cookie");
    set.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn without_a_session_pages_go_to_sign_in_and_scripts_are_challenged() {
    let (app, _dir) = with_users();
    let page = app.get("/folder/Open?page=2").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.header("location"), "/login?next=%2Ffolder%2FOpen%3Fpage%3D2");
    for uri in ["/api/messages", "/raw/open-1@example.org", "/part/open-1@example.org/~1", "/api/openapi.json"] {
        let r = app.get(uri).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{uri}");
        assert_eq!(r.header("www-authenticate"), "Basic realm=\"mailshelf\", charset=\"UTF-8\"", "{uri}");
    }
    // The health check still works, and says only whether the server is ready.
    let status = app.get("/api/status").await;
    assert_eq!(status.status, StatusCode::OK);
    let json: serde_json::Value = serde_json::from_slice(&status.body).unwrap();
    assert_eq!(json.as_object().unwrap().keys().collect::<Vec<_>>(), ["ready"]);
    let login = app.get("/login?next=%2Ffolder%2FOpen").await;
    assert_eq!(login.status, StatusCode::OK);
    assert!(login.text().contains("name=\"password\"") && !login.text().contains("<script>"));
    assert_eq!(app.get("/static/style.css").await.status, StatusCode::OK);
    // With Basic credentials, a script reads (curl -u).
    let r = app.get_with("/api/messages", &[("authorization", &basic("scoped", "scoped-pw"))]).await;
    assert_eq!(r.status, StatusCode::OK);
    let wrong = app.get_with("/api/messages", &[("authorization", &basic("scoped", "nope"))]).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn every_sign_in_gets_a_new_session_and_the_old_one_ends() {
    let (app, _dir) = with_users();
    let first = sign_in(&app, "scoped", "scoped-pw", None).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    assert_eq!(first.header("location"), "/folder/Open");
    let set = first.header("set-cookie").to_string();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"] {
        assert!(set.contains(attr), "{set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP without --secure-cookies: {set}");
    let a = cookie_of(&first);
    assert_eq!(app.get_with("/folder/Open", &[("cookie", &a)]).await.status, StatusCode::OK);
    // Signing in again with a cookie (one planted by someone else, or one's own) ends it.
    let second = sign_in(&app, "scoped", "scoped-pw", Some(&a)).await;
    let b = cookie_of(&second);
    assert_ne!(a, b, "a new id at every sign-in");
    assert_eq!(app.get_with("/folder/Open", &[("cookie", &a)]).await.status, StatusCode::SEE_OTHER);
    assert_eq!(app.get_with("/folder/Open", &[("cookie", &b)]).await.status, StatusCode::OK);
    // A made-up id is no session.
    let made_up = format!("mailshelf={}", "A".repeat(43));
    assert_eq!(app.get_with("/", &[("cookie", &made_up)]).await.status, StatusCode::SEE_OTHER);
    // Signing out ends it.
    let out = send(&app, Request::post("/logout").header("cookie", &b), Body::empty(), "192.0.2.10:5000").await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(out.header("set-cookie").contains("Max-Age=0"));
    assert_eq!(app.get_with("/", &[("cookie", &b)]).await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn sign_in_forms_of_other_sites_are_refused_and_cookies_are_secure_on_request() {
    let (app, _dir) = app_with(|c, root| {
        c.accounts.users = Some(users_file(root));
        c.accounts.secure_cookies = true;
        c.cors_origins = vec!["https://tools.example".into()];
    });
    let form = "name=scoped&password=scoped-pw";
    let cross = send(
        &app,
        Request::post("/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("host", "127.0.0.1:8025")
            .header("sec-fetch-site", "cross-site")
            .header("origin", "https://evil.example"),
        Body::from(form),
        "192.0.2.10:5000",
    )
    .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN);
    assert!(cross.header("set-cookie").is_empty());
    // An origin `--cors-origin` allows may call the API, not sign a browser in.
    for (fetch_site, path) in [(Some("cross-site"), "/login"), (None, "/login"), (Some("cross-site"), "/logout")] {
        let mut req = Request::post(path)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("host", "127.0.0.1:8025")
            .header("origin", "https://tools.example");
        if let Some(site) = fetch_site {
            req = req.header("sec-fetch-site", site);
        }
        let allowed = send(&app, req, Body::from(form), "192.0.2.10:5000").await;
        assert_eq!(allowed.status, StatusCode::FORBIDDEN, "{path} {fetch_site:?}");
        assert!(allowed.header("set-cookie").is_empty(), "{path} {fetch_site:?}");
    }
    let ours = send(
        &app,
        Request::post("/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin"),
        Body::from(form),
        "192.0.2.10:5000",
    )
    .await;
    assert_eq!(ours.status, StatusCode::SEE_OTHER);
    let set = ours.header("set-cookie");
    assert!(set.starts_with("__Host-mailshelf=") && set.contains("; Secure"), "{set}");
}

/// Another origin, even one `--cors-origin` allows, gets nothing on a reader's credentials: CORS
/// answers never allow credentials (a browser then hides the reply from a script that sent the
/// cookie), and a write from another site that carries the session cookie or Basic credentials
/// (which a browser attaches by itself once they were typed into its dialog) is refused.
#[tokio::test]
async fn other_origins_neither_read_nor_write_on_a_readers_session() {
    let (app, _dir) = app_with(|c, root| {
        c.accounts.users = Some(users_file(root));
        c.cors_origins = vec!["https://tools.example".into()];
    });
    let boss = cookie_of(&sign_in(&app, "boss", "boss-pw", None).await);
    let read = app
        .get_with(
            "/api/messages",
            &[("cookie", &boss), ("origin", "https://tools.example"), ("sec-fetch-site", "same-site")],
        )
        .await;
    assert_eq!(read.header("access-control-allow-origin"), "https://tools.example");
    assert_eq!(read.header("access-control-allow-credentials"), "", "no reads on the cookie from elsewhere");
    let target = "/api/messages/openish-1@x.example";
    for (site, origin) in [("same-site", "https://tools.example"), ("cross-site", "https://evil.example")] {
        let req = Request::delete(target)
            .header("cookie", &boss)
            .header("origin", origin)
            .header("sec-fetch-site", site)
            .header("host", "127.0.0.1:8025");
        let r = send(&app, req, Body::empty(), "192.0.2.10:5000").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{origin}: a write on the session");
    }
    let own = Request::delete(target)
        .header("authorization", basic("boss", "boss-pw"))
        .header("origin", "https://tools.example")
        .header("sec-fetch-site", "cross-site");
    let r = send(&app, own, Body::empty(), "192.0.2.10:5000").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "a write on Basic credentials from another site");
    // The same credentials from a script that is no browser's page (no Origin) still write.
    let script = Request::delete(target).header("authorization", basic("boss", "boss-pw"));
    let r = send(&app, script, Body::empty(), "192.0.2.10:5000").await;
    assert!(![StatusCode::FORBIDDEN, StatusCode::UNAUTHORIZED].contains(&r.status), "{}: {}", r.status, r.text());
}

#[tokio::test]
async fn wrong_names_and_wrong_passwords_cost_one_hash_alike_and_a_megabyte_none() {
    let (app, _dir) = with_users();
    let accounts = app.state.accounts.clone().unwrap();
    let before = accounts.hashes_checked();
    let unknown = sign_in(&app, "nobody", "whatever", None).await;
    let after_unknown = accounts.hashes_checked();
    let wrong = sign_in(&app, "scoped", "whatever", None).await;
    let after_wrong = accounts.hashes_checked();
    assert_eq!((after_unknown - before, after_wrong - after_unknown), (1, 1), "one hash checked either way");
    assert_eq!((unknown.status, wrong.status), (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED));
    let says = |r: &Reply| r.text().replace("nobody", "X").replace("scoped", "X");
    assert_eq!(says(&unknown), says(&wrong), "the same words for both");
    assert!(unknown.text().contains("Wrong name or password."));
    // A megabyte of password: never hashed, in a form or in a Basic header.
    let huge = "x".repeat(1 << 20);
    let form = sign_in(&app, "scoped", &huge, None).await;
    assert_eq!(form.status, StatusCode::PAYLOAD_TOO_LARGE, "over the form's 16 KiB, as the limits say");
    let header = app.get_with("/api/messages", &[("authorization", &basic("scoped", &huge))]).await;
    assert_eq!(header.status, StatusCode::UNAUTHORIZED);
    assert_eq!(accounts.hashes_checked(), after_wrong, "no hash for a megabyte");
}

#[tokio::test]
async fn ten_failures_a_minute_then_429_per_address_and_per_name() {
    let (app, _dir) = with_users();
    for i in 0..10 {
        assert_eq!(sign_in(&app, "scoped", &format!("guess{i}"), None).await.status, StatusCode::UNAUTHORIZED);
    }
    let limited = sign_in(&app, "scoped", "scoped-pw", None).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "even the right password waits");
    let wait: u64 = limited.header("retry-after").parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // The name is limited from another address too; Basic counts the same.
    let other = send(
        &app,
        Request::get("/api/messages").header("authorization", basic("scoped", "scoped-pw")),
        Body::empty(),
        "198.51.100.7:1",
    )
    .await;
    assert_eq!(other.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(!other.header("retry-after").is_empty());
    // Another name from another address is not.
    let boss = send(
        &app,
        Request::get("/api/messages").header("authorization", basic("boss", "boss-pw")),
        Body::empty(),
        "198.51.100.7:1",
    )
    .await;
    assert_eq!(boss.status, StatusCode::OK);
}

async fn basic_from(app: &TestApp, name: &str, password: &str, from: &str) -> StatusCode {
    send(app, Request::get("/api/messages").header("authorization", basic(name, password)), Body::empty(), from)
        .await
        .status
}

#[tokio::test]
async fn failures_elsewhere_do_not_lock_a_user_out_where_they_signed_in() {
    let (app, _dir) = with_users();
    // The owner signs in at home (the sign-in form's address).
    assert_eq!(sign_in(&app, "scoped", "scoped-pw", None).await.status, StatusCode::SEE_OTHER);
    // Someone else fails ten times for that name.
    for i in 0..10 {
        assert_eq!(basic_from(&app, "scoped", &format!("guess{i}"), "203.0.113.66:1").await, StatusCode::UNAUTHORIZED);
    }
    // A new place waits; the place the owner signed in from does not.
    assert_eq!(basic_from(&app, "scoped", "scoped-pw", "203.0.113.99:1").await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(sign_in(&app, "scoped", "scoped-pw", None).await.status, StatusCode::SEE_OTHER);
    // Still, a wrong password at home is no free guess: the address's own count holds there.
    for i in 0..10 {
        assert_eq!(sign_in(&app, "scoped", &format!("again{i}"), None).await.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(sign_in(&app, "scoped", "scoped-pw", None).await.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_trusted_header_counts_only_from_a_trusted_proxy() {
    let (app, _dir) = app_with(|c, root| {
        c.accounts.users = Some(users_file(root));
        c.accounts.trusted_header = Some("x-forwarded-email".into());
        c.accounts.trusted_proxies = vec!["10.1.0.0/16".parse().unwrap()];
    });
    let ask = |from: &'static str, who: &'static str| {
        let app = &app;
        async move { send(app, Request::get("/api/messages").header("x-forwarded-email", who), Body::empty(), from).await }
    };
    let proxied = ask("10.1.2.3:4000", "scoped").await;
    assert_eq!(proxied.status, StatusCode::OK);
    let total = serde_json::from_slice::<serde_json::Value>(&proxied.body).unwrap()["total"].clone();
    assert_eq!(total, 2, "scoped's folders");
    // The same header from anywhere else is ignored: no credentials at all.
    assert_eq!(ask("192.0.2.99:4000", "boss").await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(ask("10.2.0.1:4000", "boss").await.status, StatusCode::UNAUTHORIZED);
    // A name the users file does not know reads nothing (no --default-folders).
    let stranger = ask("10.1.2.3:4000", "stranger@example.org").await;
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&stranger.body).unwrap()["total"], 0);
}

#[tokio::test]
async fn a_user_removed_from_the_file_is_signed_out() {
    let (app, dir) = with_users();
    let c = cookie_of(&sign_in(&app, "scoped", "scoped-pw", None).await);
    assert_eq!(app.get_with("/", &[("cookie", &c)]).await.status, StatusCode::OK);
    let path = dir.path().join("users.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let without: String = text.split("\n\n").filter(|t| !t.contains("\"scoped\"")).collect::<Vec<_>>().join("\n\n");
    std::fs::write(&path, without).unwrap();
    // The watcher reads it within a second; here it is read at once, as the watcher would.
    assert!(app.state.accounts.as_ref().unwrap().users.reload());
    assert_eq!(app.get_with("/", &[("cookie", &c)]).await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_audit_log_has_a_line_for_every_sign_in_and_read() {
    let (dir, mail) = archive();
    let users = users_file(dir.path());
    let log = dir.path().join("audit.jsonl");
    let app = TestApp::with_config(&[mail], |c| {
        c.accounts.users = Some(users);
        c.accounts.audit_log = Some(log.to_string_lossy().into_owned());
    });
    sign_in(&app, "scoped", "wrong", None).await;
    let c = cookie_of(&sign_in(&app, "scoped", "scoped-pw", None).await);
    for uri in [
        "/message/open-1@example.org",
        "/part/open-2@example.org/~2",
        "/raw/open-2@example.org",
        "/?q=plans",
        "/api/export?q=plans&format=mbox",
        "/message/hidden-1@far.example",
        "/thread/open-2@example.org",
    ] {
        send(&app, Request::get(uri).header("cookie", &c), Body::empty(), "192.0.2.10:5000").await;
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seen: Vec<(String, String, String, u64)> = lines
        .iter()
        .map(|l| {
            (
                l["user"].as_str().unwrap().to_string(),
                l["action"].as_str().unwrap().to_string(),
                l["id"].as_str().unwrap_or("").to_string(),
                l["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("scoped", "sign-in-failed", "", 401),
        ("scoped", "sign-in", "", 303),
        ("scoped", "read", "open-1@example.org", 200),
        ("scoped", "part", "open-2@example.org/~2", 200),
        ("scoped", "raw", "open-2@example.org", 200),
        ("scoped", "search", "plans", 200),
        ("scoped", "export", "plans", 200),
        ("scoped", "read", "hidden-1@far.example", 404),
        ("scoped", "conversation", "open-2@example.org", 200),
    ];
    let want: Vec<(String, String, String, u64)> =
        want.iter().map(|(u, a, i, s)| (u.to_string(), a.to_string(), i.to_string(), *s)).collect();
    assert_eq!(seen, want, "{text}");
    assert!(lines.iter().all(|l| l["address"] == "192.0.2.10" && l["time"].as_str().unwrap().ends_with('Z')), "{text}");
    println!("audit log:\n{text}");
}

/// With accounts, a message's frame is of mailshelf's origin, so every answer may say that only
/// that origin embeds it: another port on the same host (the same site to `SameSite`, which sends
/// the cookie) cannot tell from a picture whether a message is there. Without accounts the frame
/// is of an opaque origin and the header would keep its pictures out.
#[tokio::test]
async fn with_accounts_only_our_own_origin_embeds_an_answer() {
    let (app, _dir) = with_users();
    let c = cookie_of(&sign_in(&app, "scoped", "scoped-pw", None).await);
    for uri in [
        "/part/open-2@example.org/~2",
        "/part/no-such@example.org/~2",
        "/raw/open-2@example.org",
        "/message/open-1@example.org",
        "/login",
    ] {
        let r = app.get_with(uri, &[("cookie", &c), ("sec-fetch-site", "same-site")]).await;
        assert_eq!(r.header("cross-origin-resource-policy"), "same-origin", "{uri}: {}", r.status);
    }
    let open = TestApp::new(&[crate::common::repo_path("samples")]);
    let r = open.get("/part/newsletter-2026-10@example.com/logo@example.com").await;
    assert_eq!((r.status, r.header("cross-origin-resource-policy")), (StatusCode::OK, ""));
}

/// A sign-in the audit log cannot take (a full disk) starts no session, as a read it cannot take
/// is refused; a failed one is still refused as it was.
#[tokio::test]
async fn a_sign_in_the_audit_log_cannot_take_starts_no_session() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let (dir, mail) = archive();
    let users = users_file(dir.path());
    let app = TestApp::with_config(&[mail], |c| {
        c.accounts.users = Some(users);
        c.accounts.audit_log = Some("/dev/full".into());
    });
    let wrong = sign_in(&app, "scoped", "wrong", None).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let r = sign_in(&app, "scoped", "scoped-pw", None).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.text());
    assert!(!r.text().contains("audit") && !r.text().contains("/dev/full"), "nothing internal: {}", r.text());
    assert!(
        !r.headers.get_all("set-cookie").iter().any(|c| c.to_str().unwrap_or("").starts_with("mailshelf=")),
        "no session cookie"
    );
}

#[tokio::test]
async fn every_replica_knows_a_session_and_its_end() {
    if !crate::common::postgres::available("every_replica_knows_a_session_and_its_end") {
        return;
    }
    let (dir, mail) = archive();
    let users = users_file(dir.path());
    let url = crate::common::postgres::Cluster::shared().database();
    let paths = [mail];
    let configure = |c: &mut mailshelf::Config| c.accounts.users = Some(users.clone());
    let one = TestApp::open_with(&paths, tempfile::tempdir().unwrap(), Some(url.clone()), configure);
    let two = TestApp::open_with(&paths, tempfile::tempdir().unwrap(), Some(url), configure);
    let c = cookie_of(&sign_in(&one, "scoped", "scoped-pw", None).await);
    assert_eq!(
        two.get_with("/api/messages", &[("cookie", &c)]).await.status,
        StatusCode::OK,
        "signed in on one, read on two"
    );
    let out = send(&two, Request::post("/logout").header("cookie", &c), Body::empty(), "192.0.2.10:5000").await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(two.get_with("/api/messages", &[("cookie", &c)]).await.status, StatusCode::UNAUTHORIZED);
    // The other replica keeps what it looked up for a few seconds at most; a new sign-in there
    // with the ended cookie is a new session all the same.
    let fresh = cookie_of(&sign_in(&one, "scoped", "scoped-pw", Some(&c)).await);
    assert_ne!(fresh, c);
    assert_eq!(two.get_with("/api/messages", &[("cookie", &fresh)]).await.status, StatusCode::OK);
}

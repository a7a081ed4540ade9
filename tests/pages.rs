//! The HTML pages: the list, a message's page, and the headers that keep them safe.

use axum::http::StatusCode;

use crate::common::{repo_path, TestApp};

fn samples() -> TestApp {
    TestApp::new(&[repo_path("samples")])
}

#[tokio::test]
async fn list_shows_every_sample_with_safe_headers() {
    let app = samples();
    let r = app.get("/").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), "text/html; charset=utf-8");
    let csp = r.header("content-security-policy");
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("script-src"), "app pages run no script at all");
    assert_eq!(r.header("referrer-policy"), "no-referrer");
    assert_eq!(r.header("x-content-type-options"), "nosniff");
    let html = r.text();
    for subject in [
        "Nouveautés d&#39;automne",
        "Welcome to Maison Verte",
        "Field notes: a week in the hills",
        "Rechnung Nr. 2026-0315",
    ] {
        assert!(html.contains(subject), "{subject} in the list");
    }
    assert!(html.contains("/static/style.css?v="), "hashed stylesheet");
    assert!(!html.contains("http://") && !html.contains("https://"), "no asset from outside");
}

#[tokio::test]
async fn message_page_frames_the_body_in_a_sandbox() {
    let app = samples();
    let html = app.get("/message/newsletter-2026-10@example.com").await.text();
    let frame = html.split("<iframe").nth(1).expect("body frame");
    let frame = &frame[..frame.find('>').expect("tag end")];
    assert!(frame
        .contains("sandbox=\"allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation\""));
    assert!(!frame.contains("allow-scripts") && !frame.contains("allow-same-origin"));
    assert!(html.contains("?view=text"), "HTML/text switch");
    assert!(html.contains("/raw/newsletter-2026-10@example.com"));
    let text = app.get("/message/newsletter-2026-10@example.com?view=text").await.text();
    assert!(!text.contains("<iframe class=\"body\""));
    assert!(text.contains("<pre class=\"text\">"));
}

#[tokio::test]
async fn text_bodies_are_escaped_linked_and_reflowed() {
    let app = samples();
    let html = app.get("/message/welcome@example.com").await.text();
    assert!(html.contains("<a href=\"https://example.org/docs\" target=\"_blank\" rel=\"noopener noreferrer\">"));
    assert!(html.contains("<blockquote class=\"quote\">"));
    let jp = app.get("/message/20261008173000.4F2A@example.jp").await.text();
    assert!(jp.contains("定例会議"), "ISO-2022-JP decoded");
}

#[tokio::test]
async fn forwarded_messages_show_inline_and_on_their_own() {
    let app = samples();
    let html = app.get("/message/fwd-5b2c9a@example.net").await.text();
    assert!(html.contains("Enclosed message"));
    assert!(html.contains("/message/original-2026@example.net"));
    let nested = app.get("/message/original-2026@example.net").await;
    assert_eq!(nested.status, StatusCode::OK);
    let list = app.json("/api/messages?limit=100").await;
    assert!(
        !list["messages"].as_array().expect("list").iter().any(|m| m["message_id"] == "original-2026@example.net"),
        "a nested message is not listed on its own"
    );
}

#[tokio::test]
async fn attachments_list_files_not_inline_images() {
    let app = samples();
    let html = app.get("/message/rechnung-2026-0315@lefevre-it.example").await.text();
    assert!(html.contains("Rechnung März.pdf") && html.contains("?download=1"));
    let news = app.get("/message/newsletter-2026-10@example.com").await.text();
    assert!(!news.contains("<section class=\"attachments\">"), "inline images of the body are not attachments");
}

#[tokio::test]
async fn static_assets_are_cached_by_hash() {
    let app = samples();
    let css = app.get("/static/style.css").await;
    assert_eq!(css.status, StatusCode::OK);
    assert!(css.header("cache-control").contains("immutable"));
    let etag = css.header("etag").to_string();
    assert_eq!(app.get_with("/static/style.css", &[("if-none-match", &etag)]).await.status, StatusCode::NOT_MODIFIED);
    assert_eq!(app.get("/static/nope.js").await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/no/such/page").await.status, StatusCode::NOT_FOUND);
}

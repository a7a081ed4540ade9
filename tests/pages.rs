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
    let script_src = csp.split(';').map(str::trim).find(|d| d.starts_with("script-src")).expect("script-src");
    assert!(
        script_src.starts_with("script-src 'sha256-") && script_src.split(' ').count() == 2,
        "app pages run one script, named by its hash, and nothing else: {csp}"
    );
    assert!(!csp.contains("'self' 'sha") && !csp.contains("unsafe-"), "{csp}");
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
    if !crate::common::needs::chromium("attachments_list_files_not_inline_images") {
        return;
    }
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

#[tokio::test]
async fn the_keyboard_script_is_allowed_by_its_hash_alone() {
    use base64::Engine;
    use sha2::Digest;
    let app = samples();
    for page in ["/", "/message/welcome@example.com", "/no/such/page"] {
        let r = app.get(page).await;
        let csp = r.header("content-security-policy").to_string();
        let html = r.text();
        let tag = html.split("<script ").nth(1).unwrap_or_else(|| panic!("{page}: script tag"));
        let tag = &tag[..tag.find('>').expect("tag end")];
        let src = tag.split("src=\"").nth(1).and_then(|s| s.split('"').next()).expect("src");
        let integrity = tag.split("integrity=\"").nth(1).and_then(|s| s.split('"').next()).expect("integrity");
        assert!(src.starts_with("/static/keys.js?v="), "{page}: {tag}");
        assert_eq!(html.matches("<script").count(), 1, "{page}: one script, no inline script");
        assert!(csp.contains(&format!("script-src '{integrity}';")), "{page}: {csp}");
        let js = app.get(src).await;
        assert_eq!(js.header("content-type"), "text/javascript; charset=utf-8");
        let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&js.body));
        assert_eq!(integrity, format!("sha256-{hash}"), "{page}: the hash is of the bytes served");
    }
}

#[tokio::test]
async fn message_pages_link_their_neighbours_and_size_the_frame() {
    let app = samples();
    let list = app.json("/api/messages?limit=100").await;
    let urls: Vec<String> = list["messages"]
        .as_array()
        .expect("list")
        .iter()
        .map(|m| m["url"].as_str().expect("url").to_string())
        .collect();
    assert!(urls.len() >= 3);
    for (i, url) in urls.iter().enumerate() {
        let html = app.get(url).await.text();
        let newer = i.checked_sub(1).map(|j| format!("<a href=\"{}\" data-key=\"prev\"", urls[j]));
        let older = urls.get(i + 1).map(|u| format!("<a href=\"{u}\" data-key=\"next\""));
        assert_eq!(newer.as_ref().is_some_and(|n| html.contains(n)), newer.is_some(), "{url}: newer link");
        assert_eq!(older.as_ref().is_some_and(|o| html.contains(o)), older.is_some(), "{url}: older link");
        assert!(html.contains("data-key=\"up\""), "{url}: back to the list");
    }
    // The starting height of the body's frame follows the body: the sample newsletter (a card
    // of six paragraphs and a logo) gets the middle height, a one-line note the short one.
    let news = app.get("/message/newsletter-2026-10@example.com").await.text();
    assert!(news.contains("<iframe class=\"body h-medium\""), "the newsletter's frame");
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("p.eml"), crate::common::message_with_pictures()).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let short = app.get("/message/pictures@example.com").await.text();
    assert!(short.contains("<iframe class=\"body h-short\""), "a one-line note gets a short frame");
}

/// A message of `parts` (each a header block and a body) in a `multipart/mixed`.
fn mixed(id: &str, parts: &[(&str, &str)]) -> String {
    let mut out = format!(
        "From: a@example.com\r\nSubject: {id}\r\nMessage-ID: <{id}@test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
    );
    for (head, body) in parts {
        out.push_str(&format!("--b1\r\n{head}\r\n\r\n{body}\r\n"));
    }
    out + "--b1--\r\n"
}

#[tokio::test]
async fn inline_texts_after_the_body_are_shown_in_order() {
    let plain = "Content-Type: text/plain; charset=utf-8";
    let html = "Content-Type: text/html; charset=utf-8";
    let alternative = "Content-Type: multipart/alternative; boundary=\"b2\"";
    let both = "--b2\r\nContent-Type: text/plain\r\n\r\nThe plain alternative.\r\n--b2\r\n\
                Content-Type: text/html\r\n\r\n<p>The html alternative.</p>\r\n--b2--";
    let picture = "Content-Type: image/png\r\nContent-Disposition: inline; filename=\"dot.png\"\r\n\
                   Content-Transfer-Encoding: base64";
    let dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
    let named = "Content-Type: text/plain\r\nContent-Disposition: inline; filename=\"notes.txt\"";
    let attached = "Content-Type: text/plain\r\nContent-Disposition: attachment";
    // (message, its parts, the texts the page shows after the body in order, texts it must not
    // show there, how many of them are frames)
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a [&'a str], &'a [&'a str], usize);
    let cases: &[Case] = &[
        (
            "footer",
            vec![(plain, "First part body."), (plain, "To unsubscribe, e-mail: x@example.org")],
            &["To unsubscribe"],
            &[],
            0,
        ),
        (
            "postscript",
            vec![(plain, "See the picture."), (picture, dot), (plain, "PS: sent from the boat.")],
            &["PS: sent from the boat."],
            &[],
            0,
        ),
        (
            "alternative-then-footer",
            vec![(alternative, both), (plain, "List footer here.")],
            &["List footer here."],
            &["The plain alternative."],
            0,
        ),
        ("text-then-html", vec![(plain, "Plain first."), (html, "<p>Then <b>html</b>.</p>")], &[], &[], 1),
        (
            "named-and-attached",
            vec![(plain, "Body only."), (named, "A named file."), (attached, "An attached text.")],
            &[],
            &["A named file.", "An attached text."],
            0,
        ),
    ];
    let dir = tempfile::tempdir().expect("dir");
    for (id, parts, _, _, _) in cases {
        std::fs::write(dir.path().join(format!("{id}.eml")), mixed(id, parts)).expect("write");
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for (id, _, shown, hidden, frames) in cases {
        let page = app.get(&format!("/message/{id}@test")).await.text();
        let after = page
            .split("title=\"message body\"")
            .nth(1)
            .or_else(|| page.split("<pre class=\"text\">").nth(1))
            .expect(id);
        let mut at = 0;
        for text in *shown {
            let found = after[at..]
                .find(&format!("<pre class=\"text more\">{text}"))
                .unwrap_or_else(|| panic!("{id}: {text} after the body"));
            at += found;
        }
        for text in *hidden {
            assert!(!after.contains(&format!("more\">{text}")), "{id}: {text} is not shown after the body");
        }
        assert_eq!(page.matches("class=\"body more").count(), *frames, "{id}: frames after the body");
        let detail = app.json(&format!("/api/messages/{id}@test")).await;
        let more = detail["more_urls"].as_array().expect("more_urls");
        assert_eq!(more.len(), shown.len() + frames, "{id}: {detail}");
    }
    // What is shown is what search finds.
    let found = app.json("/api/messages?q=boat").await;
    assert_eq!(found["messages"][0]["subject"], "postscript", "{found}");
    // The print view prints it too.
    let print = app.get("/message/footer@test/print").await.text();
    assert!(print.contains("To unsubscribe"), "{print}");
}

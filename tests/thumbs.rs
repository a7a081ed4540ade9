//! Thumbnails of image attachments: small, never larger than the original, of the type they say,
//! cached by the browser; and anything that is not a picture mailshelf can shrink (broken, a
//! decompression bomb, a lie about its type, SVG) shows the file icon, never an error.

use axum::http::StatusCode;

use crate::common::{message_with_pictures, repo_path, TestApp};

fn app() -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("pictures.eml"), message_with_pictures()).expect("write");
    (TestApp::new(&[dir.path().to_path_buf(), repo_path("samples")]), dir)
}

/// The `/thumb/` URL of each attachment, by file name, from the message's part tree.
async fn thumb_urls(app: &TestApp) -> Vec<(String, String)> {
    let detail = app.json("/api/messages/pictures@example.com").await;
    detail["parts"][0]["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .filter_map(|p| {
            let name = p["filename"].as_str()?.to_string();
            Some((name, p["url"].as_str()?.replacen("/part/", "/thumb/", 1)))
        })
        .collect()
}

#[tokio::test]
async fn image_attachments_get_thumbnails_never_larger_than_the_original() {
    if !crate::common::needs::chromium("image_attachments_get_thumbnails_never_larger_than_the_original") {
        return;
    }
    let (app, _dir) = app();
    // name → (X-Thumbnail, Content-Type, width, height)
    let cases: &[(&str, &str, &str, u32, u32)] = &[
        ("photo.jpg", "made", "image/jpeg", 240, 180),
        ("diagram.png", "made", "image/png", 240, 80),
        ("icon.png", "original", "image/png", 32, 32),
        ("broken.png", "none", "image/svg+xml", 0, 0),
        ("bomb.png", "none", "image/svg+xml", 0, 0),
        ("lying.png", "none", "image/svg+xml", 0, 0),
        ("drawing.svg", "none", "image/svg+xml", 0, 0),
        ("notes.pdf", "none", "image/svg+xml", 0, 0),
    ];
    let urls = thumb_urls(&app).await;
    assert_eq!(urls.len(), cases.len(), "{urls:?}");
    for (name, kind, ct, w, h) in cases {
        let url = &urls.iter().find(|(n, _)| n == name).expect(name).1;
        let r = app.get(url).await;
        assert_eq!(r.status, StatusCode::OK, "{name}: never an error");
        assert_eq!(r.header("x-thumbnail"), *kind, "{name}");
        assert_eq!(r.header("content-type"), *ct, "{name}");
        assert!(
            r.header("content-security-policy").starts_with("sandbox"),
            "{name}: bytes from a message stay sandboxed"
        );
        if *kind != "none" {
            let img = image::load_from_memory(&r.body).expect("decodes");
            assert_eq!((img.width(), img.height()), (*w, *h), "{name}");
            assert!(r.header("cache-control").contains("immutable"), "{name}");
        } else {
            assert!(r.text().starts_with("<svg"), "{name}: the file icon");
        }
        if *kind == "original" {
            let original = app.get(&url.replacen("/thumb/", "/part/", 1)).await;
            assert_eq!(r.body, original.body, "{name}: a small picture is its own thumbnail");
        }
        // Conditional GET, as for parts.
        let etag = r.header("etag").to_string();
        let again = app.get_with(url, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{name}");
    }
}

#[tokio::test]
async fn unknown_messages_and_parts_are_404() {
    let (app, _dir) = app();
    let cases = [
        ("/thumb/nobody@example.com/~2", StatusCode::NOT_FOUND),
        ("/thumb/pictures@example.com/~99", StatusCode::NOT_FOUND),
        ("/thumb/pictures@example.com/~1", StatusCode::OK),
        ("/thumb/pictures@example.com/no-such-cid@x", StatusCode::NOT_FOUND),
    ];
    for (url, want) in cases {
        let r = app.get(url).await;
        assert_eq!(r.status, want, "{url}");
        if want == StatusCode::OK {
            assert_eq!(r.header("x-thumbnail"), "none", "{url}: an HTML part is no picture");
        } else {
            assert_eq!(r.header("content-type"), "application/problem+json", "{url}");
        }
    }
}

#[tokio::test]
async fn the_message_page_shows_thumbnails_and_icons() {
    let (app, _dir) = app();
    let html = app.get("/message/pictures@example.com").await.text();
    let urls = thumb_urls(&app).await;
    for (name, url) in &urls {
        let pictured =
            ["photo.jpg", "diagram.png", "icon.png", "broken.png", "bomb.png", "lying.png"].contains(&name.as_str());
        assert_eq!(html.contains(&format!("<img src=\"{url}\"")), pictured, "{name}: thumbnail asked for by type");
    }
    let icons = html.matches("<img src=\"/static/file.svg?v=").count();
    assert_eq!(icons, 2, "the SVG and the PDF show the file icon without a request");
    assert!(html.contains("Photos from the workshop"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_picture_in_the_corpus_gets_a_thumbnail_or_the_icon() {
    if !crate::common::needs::corpus("every_picture_in_the_corpus_gets_a_thumbnail_or_the_icon") {
        return;
    }
    // The corpora with pictures in messages: MUA samples, inline images, Outlook attachments,
    // Apple Mail's stored attachments.
    let corpus = crate::common::corpus_dir();
    let dirs = [
        "stalwart-mail-parser",
        "enmime",
        "mailpit",
        "nodemailer-mailparser",
        "postal-mime",
        "outlook-message-parser",
        "msgreader",
        "partial-emlx-converter",
        "email-outlook-message-perl",
    ];
    let paths: Vec<_> = dirs.iter().map(|d| corpus.join(d)).collect();
    for p in &paths {
        assert!(p.is_dir(), "corpus folder {} (see ../shared/corpus/README.md)", p.display());
    }
    let app = TestApp::new(&paths);
    let list = app.json("/api/messages?limit=1000").await;
    let ids: Vec<String> =
        list["messages"].as_array().expect("list").iter().map(|m| m["id"].as_str().expect("id").to_string()).collect();
    let (mut made, mut original, mut none) = (0, 0, 0);
    for id in &ids {
        let detail = app.json(&format!("/api/messages/{id}")).await;
        let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
        while let Some(p) = stack.pop() {
            stack.extend(p["parts"].as_array().expect("parts"));
            let ct = p["content_type"].as_str().unwrap_or("");
            if !ct.starts_with("image/") || p.get("external").is_some() {
                continue;
            }
            let url = p["url"].as_str().expect("url").replacen("/part/", "/thumb/", 1);
            let r = app.get(&url).await;
            assert_eq!(r.status, StatusCode::OK, "{url}: {}", r.text());
            match r.header("x-thumbnail") {
                "made" => {
                    made += 1;
                    let img = image::load_from_memory(&r.body).expect("a made thumbnail decodes");
                    assert!(img.width() <= 240 && img.height() <= 240, "{url}: {}×{}", img.width(), img.height());
                }
                "original" => original += 1,
                // In these corpora: uuencoded parts (not decoded), damaged or empty samples.
                "none" => none += 1,
                other => panic!("{url}: X-Thumbnail {other:?}"),
            }
        }
    }
    println!(
        "corpus pictures: {made} made, {original} served as they are, {none} the file icon ({} messages)",
        ids.len()
    );
    assert!(made + original >= 20, "pictures found and shrunk: {made} made, {original} original, {none} none");
}

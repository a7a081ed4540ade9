//! The JSON API and the file semantics of part and raw URLs, over the sample folder.

use axum::body::Body;
use axum::http::{Request, StatusCode};

use serde_json::json;

use crate::common::{repo_path, TestApp};

fn samples() -> TestApp {
    TestApp::new(&[repo_path("samples")])
}

/// The messages in `samples/`: 7 files, 4 in the mbox, 2 in the Maildir.
pub const SAMPLE_MESSAGES: u64 = 13;

#[tokio::test]
async fn status_reports_ready_and_counts() {
    let app = samples();
    let s = app.json("/api/status").await;
    assert_eq!(s["ready"], true);
    assert_eq!(s["messages"], SAMPLE_MESSAGES);
    assert!(s["indexed"].as_u64() >= Some(9));
    assert_eq!(s["indexed"], s["total"]);
}

#[tokio::test]
async fn list_paginates_newest_first() {
    let app = samples();
    let all = app.json("/api/messages?limit=100").await;
    assert_eq!(all["total"], SAMPLE_MESSAGES);
    let msgs = all["messages"].as_array().expect("messages");
    assert_eq!(msgs.len() as u64, SAMPLE_MESSAGES);
    let dates: Vec<&str> = msgs.iter().filter_map(|m| m["date"].as_str()).collect();
    let mut sorted = dates.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(dates, sorted, "newest first");
    let page = app.json("/api/messages?offset=2&limit=3").await;
    let page = page["messages"].as_array().expect("messages");
    assert_eq!(page.len(), 3);
    assert_eq!(page[0], msgs[2]);
    for m in msgs {
        for field in ["id", "message_id", "subject", "from", "date", "url"] {
            assert!(m.get(field).is_some(), "{field} in {m}");
        }
        assert_eq!(m["url"].as_str(), Some(format!("/message/{}", m["id"].as_str().unwrap_or("")).as_str()));
    }
}

#[tokio::test]
async fn message_detail_has_its_part_tree() {
    let app = samples();
    let m = app.json("/api/messages/newsletter-2026-10@example.com").await;
    assert_eq!(m["subject"], "Nouveautés d'automne");
    assert_eq!(m["source"], "newsletter.eml");
    assert_eq!(m["raw_url"], "/raw/newsletter-2026-10@example.com");
    let html = m["html_url"].as_str().expect("html body");
    assert!(m["text_url"].is_string());
    let root = &m["parts"][0];
    assert_eq!(root["content_type"], "multipart/related");
    let mut cids = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for key in ["content_type", "content_id", "content_location", "filename", "disposition", "size", "url", "parts"]
        {
            assert!(p.get(key).is_some(), "{key} in {p}");
        }
        if let Some(c) = p["content_id"].as_str() {
            cids.push(c.to_string());
        }
        stack.extend(p["parts"].as_array().expect("parts"));
    }
    cids.sort();
    assert_eq!(cids, ["banner@example.com", "bg@example.com", "logo@example.com"]);
    let body = app.get(html).await;
    assert_eq!(body.status, StatusCode::OK);
    let text = body.text();
    assert!(text.contains("/part/newsletter-2026-10@example.com/logo@example.com"), "{text}");
    assert!(!text.contains("cid:"));
}

#[tokio::test]
async fn parts_are_served_like_files() {
    let app = samples();
    let url = "/part/newsletter-2026-10@example.com/logo@example.com";
    let r = app.get(url).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), "image/png");
    assert!(r.body.starts_with(b"\x89PNG"));
    assert_eq!(r.header("x-content-type-options"), "nosniff");
    assert!(r.header("content-security-policy").contains("sandbox"));
    assert!(r.header("cache-control").contains("immutable"));
    assert_eq!(r.header("accept-ranges"), "bytes");
    let etag = r.header("etag").to_string();
    assert!(etag.starts_with('"') && etag.len() > 10);

    let again = app.get_with(url, &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.body.is_empty());

    // If-Match (RFC 9110 §13.1.1): the same bytes, or 412; a weak tag never matches; it is
    // looked at before If-None-Match.
    let preconditions: &[(&[(&str, &str)], StatusCode)] = &[
        (&[("if-match", &etag)], StatusCode::OK),
        (&[("if-match", "*")], StatusCode::OK),
        (&[("if-match", &format!("\"other\", {etag}"))], StatusCode::OK),
        (&[("if-match", "\"other\"")], StatusCode::PRECONDITION_FAILED),
        (&[("if-match", &format!("W/{etag}"))], StatusCode::PRECONDITION_FAILED),
        (&[("if-match", "\"other\""), ("if-none-match", &etag)], StatusCode::PRECONDITION_FAILED),
        (&[("if-match", "\"other\""), ("accept-encoding", "gzip")], StatusCode::PRECONDITION_FAILED),
        (&[("if-match", &etag), ("range", "bytes=0-7")], StatusCode::PARTIAL_CONTENT),
    ];
    for (headers, want) in preconditions {
        let got = app.get_with(url, headers).await;
        assert_eq!(got.status, *want, "{headers:?}");
        if *want == StatusCode::PRECONDITION_FAILED {
            assert!(got.body.is_empty(), "{headers:?}");
        }
    }

    let range = app.get_with(url, &[("range", "bytes=0-7")]).await;
    assert_eq!(range.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(range.body, &r.body[..8]);
    assert_eq!(range.header("content-range"), format!("bytes 0-7/{}", r.body.len()));

    let beyond = app.get_with(url, &[("range", "bytes=999999-")]).await;
    assert_eq!(beyond.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(beyond.header("content-range"), format!("bytes */{}", r.body.len()));

    let head = app.request(Request::head(url).body(Body::empty()).expect("request")).await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
}

#[tokio::test]
async fn attachments_get_safe_names_and_charsets() {
    if !crate::common::needs::chromium("attachments_get_safe_names_and_charsets") {
        return;
    }
    let app = samples();
    let m = app.json("/api/messages/rechnung-2026-0315@lefevre-it.example").await;
    let mut leaves = Vec::new();
    let mut stack = vec![&m["parts"][0]];
    while let Some(p) = stack.pop() {
        if p["parts"].as_array().is_some_and(|c| c.is_empty()) {
            leaves.push(p.clone());
        }
        stack.extend(p["parts"].as_array().expect("parts"));
    }
    let pdf = leaves.iter().find(|p| p["filename"] == "Rechnung März.pdf").expect("pdf attachment");
    let r = app.get(&format!("{}?download=1", pdf["url"].as_str().expect("url"))).await;
    assert_eq!(r.header("content-type"), "application/pdf");
    assert_eq!(
        r.header("content-disposition"),
        "attachment; filename=\"Rechnung M_rz.pdf\"; filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf"
    );
    let csv = leaves.iter().find(|p| p["filename"] == "totals.csv").expect("csv attachment");
    let r = app.get(csv["url"].as_str().expect("url")).await;
    assert_eq!(r.header("content-type"), "text/csv", "guessed from the file name");
    // The part tree says both: what the message declares, and what the URL answers with.
    assert_eq!((&csv["content_type"], &csv["served_type"]), (&json!("application/octet-stream"), &json!("text/csv")));
    assert_eq!((&pdf["content_type"], &pdf["served_type"]), (&json!("application/pdf"), &json!("application/pdf")));
    let text = app.get(m["text_url"].as_str().expect("text")).await;
    assert_eq!(text.header("content-type"), "text/plain; charset=utf-8");
    assert!(text.text().contains('é') && text.text().contains('ü'), "{}", text.text());
    let raw = app.get(&format!("{}?raw=1", csv["url"].as_str().expect("url"))).await;
    assert_eq!(raw.status, StatusCode::OK);
}

#[tokio::test]
async fn unknown_and_malformed_ids_are_problems() {
    let app = samples();
    let cases = [
        ("/api/messages/nope@nowhere", StatusCode::NOT_FOUND),
        ("/message/nope@nowhere", StatusCode::NOT_FOUND),
        ("/part/nope@nowhere/x", StatusCode::NOT_FOUND),
        ("/part/newsletter-2026-10@example.com/nope", StatusCode::NOT_FOUND),
        ("/raw/nope@nowhere", StatusCode::NOT_FOUND),
        ("/api/messages/%FF%FE", StatusCode::BAD_REQUEST),
        ("/part/%FF/x", StatusCode::BAD_REQUEST),
        ("/api/nothing-here", StatusCode::NOT_FOUND),
    ];
    for (uri, want) in cases {
        let r = app.get(uri).await;
        assert_eq!(r.status, want, "{uri}");
        if uri.starts_with("/api/") || uri.starts_with("/part/") || uri.starts_with("/raw/") {
            assert_eq!(r.header("content-type"), "application/problem+json", "{uri}");
            let p: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
            assert_eq!(p["status"], want.as_u16());
            assert!(p["type"].is_string() && p["title"].is_string());
        } else {
            assert!(r.header("content-type").starts_with("text/html"), "{uri}");
        }
    }
}

const UPLOAD: &str = "From: up@example.com\r\nTo: you@example.com\r\nSubject: Uploaded\r\nMessage-ID: <upload-1@example.com>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nHello from an upload.\r\n";

async fn post(app: &TestApp, content_type: &str, body: Vec<u8>) -> crate::common::Reply {
    app.request(
        Request::post("/api/messages").header("content-type", content_type).body(Body::from(body)).expect("request"),
    )
    .await
}

#[tokio::test]
async fn uploads_are_created_deduplicated_and_kept() {
    let app = samples();
    let r = post(&app, "message/rfc822", UPLOAD.into()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert_eq!(r.header("location"), "/api/messages/upload-1@example.com");
    let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(created[0]["subject"], "Uploaded");
    assert_eq!(created[0]["uploaded"], true);
    let again = post(&app, "message/rfc822", UPLOAD.into()).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(app.json("/api/status").await["messages"], SAMPLE_MESSAGES + 1, "same bytes, one message");

    // A multipart form with an mbox of two messages.
    let mbox = "From a Mon Jan  1 00:00:00 2024\nSubject: one\nMessage-ID: <form-1@x>\n\n1\n\nFrom b Mon Jan  1 00:00:00 2024\nSubject: two\nMessage-ID: <form-2@x>\n\n2\n";
    let form = format!(
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mbox\"\r\nContent-Type: application/mbox\r\n\r\n{mbox}\r\n--B--\r\n"
    );
    let r = post(&app, "multipart/form-data; boundary=B", form.into()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(created.as_array().map(Vec::len), Some(2));

    let garbage = post(&app, "message/rfc822", b"\x00\x01 not mail".to_vec()).await;
    assert_eq!(garbage.status, StatusCode::UNPROCESSABLE_ENTITY);

    let big = post(&app, "message/rfc822", format!("{UPLOAD}{}", "x".repeat(2 << 20)).into()).await;
    assert_eq!(big.status, StatusCode::PAYLOAD_TOO_LARGE);

    // Survives a restart with the same data folder.
    let restarted = app.restart(&[repo_path("samples")]);
    let m = restarted.json("/api/messages/upload-1@example.com").await;
    assert_eq!(m["uploaded"], true);

    let delete = |uri: &'static str| Request::delete(uri).body(Body::empty()).expect("request");
    let r = restarted.request(delete("/api/messages/upload-1@example.com")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(restarted.get("/api/messages/upload-1@example.com").await.status, StatusCode::NOT_FOUND);
    let r = restarted.request(delete("/api/messages/welcome@example.com")).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "mounted messages are read-only");
    assert_eq!(r.header("content-type"), "application/problem+json");
}

/// An upload compressed with gzip or zstd is what it inflates to: a mailing list's month of mail
/// as `.txt.gz`, one message as `.eml.zst`; bounded as it inflates. A file of Dovecot's (a Maildir
/// file it compressed with LZ4, an mdbox file), an MMDF or a Babyl file is what it holds.
#[tokio::test]
async fn compressed_uploads_are_what_they_inflate_to() {
    use std::io::Read as _;
    let app = samples();
    let mbox = "From a Mon Jan  1 00:00:00 2024\nSubject: one\nMessage-ID: <gz-1@x>\n\n1\n\nFrom b Mon Jan  1 00:00:00 2024\nSubject: two\nMessage-ID: <gz-2@x>\n\n2\n";
    let r = post(&app, "application/gzip", crate::common::gzip(mbox.as_bytes())).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(created.as_array().map(Vec::len), Some(2), "both messages of the mbox: {created}");

    let one = zstd::encode_all(&b"Subject: zstd\nMessage-ID: <zst-1@x>\n\nsqueezed\n"[..], 3).expect("zstd");
    let r = post(&app, "application/zstd", one).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert!(app.get("/raw/zst-1@x").await.text().contains("squeezed"));

    // A few kilobytes that inflate past what an upload may hold.
    let bomb = zstd::encode_all(std::io::repeat(b'a').take(300 << 20), 3).expect("zstd");
    assert!(bomb.len() < 64 << 10);
    assert_eq!(post(&app, "application/zstd", bomb).await.status, StatusCode::PAYLOAD_TOO_LARGE);
    let broken = [&[0x1f, 0x8b, 0x08][..], b"not deflate at all"].concat();
    assert_eq!(post(&app, "application/gzip", broken).await.status, StatusCode::UNPROCESSABLE_ENTITY);

    // What Dovecot wrote: a Maildir file in its LZ4 format, an mdbox file of four messages.
    let fixtures = crate::common::repo_path("tests/fixtures");
    let lz4 = std::fs::read(fixtures.join("dovecot-zlib/Maildir/new/1796617022.M897180P32414.vm,S=151093,W=153013"))
        .expect("fixture");
    let r = post(&app, "application/octet-stream", lz4).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert!(app.get("/raw/dovecot-lz4-1@example.org").await.text().contains("snowdrift"));
    let mdbox = std::fs::read(fixtures.join("dovecot-dbox/mdbox/storage/m.1")).expect("fixture");
    let r = post(&app, "application/octet-stream", mdbox).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(created.as_array().map(Vec::len), Some(4), "every message of the mdbox file: {created}");

    // An MMDF file, and an Emacs Rmail (Babyl) file kept compressed, with its labels.
    for (file, count) in [("mmdf-babyl/RMAIL.gz", 5), ("mmdf-babyl/archive.mmdf", 4)] {
        let bytes = std::fs::read(fixtures.join(file)).expect("fixture");
        let r = post(&app, "application/octet-stream", bytes).await;
        assert_eq!(r.status, StatusCode::CREATED, "{file}: {}", r.text());
        let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(created.as_array().map(Vec::len), Some(count), "{file}: every message: {created}");
    }
    let labelled = app.json("/api/messages?label=Clients/Acme").await;
    assert_eq!(labelled["total"], 1, "{labelled}");
}

#[tokio::test]
async fn openapi_document_is_valid_and_every_route_answers() {
    if !crate::common::needs::python_module(
        "openapi_document_is_valid_and_every_route_answers",
        "openapi_spec_validator",
        "pip install openapi-spec-validator",
    ) {
        return;
    }
    let app = samples();
    let doc = app.json("/api/openapi.json").await;
    assert_eq!(doc["openapi"].as_str().map(|v| v.starts_with("3.1")), Some(true));

    // Validated by an independent OpenAPI 3.1 validator (PyPI openapi-spec-validator).
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec(&doc).expect("json")).expect("write");
    let out = std::process::Command::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "openapi-spec-validator (pip install openapi-spec-validator): {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Every documented route and method, with real ids, answers one of its documented statuses.
    let fill = |path: &str| {
        path.replace("{id}", "welcome@example.com")
            .replace("{mid}", "newsletter-2026-10@example.com")
            .replace("{cid}", "logo@example.com")
    };
    let mut exercised = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("operations") {
            let documented: Vec<u16> =
                op["responses"].as_object().expect("responses").keys().filter_map(|k| k.parse().ok()).collect();
            let uri = fill(path);
            let req = match method.as_str() {
                "get" => Request::get(&uri).body(Body::empty()),
                "post" => Request::post(&uri).header("content-type", "message/rfc822").body(Body::from(UPLOAD)),
                "delete" => Request::delete(&uri).body(Body::empty()),
                m => panic!("undocumented method {m}"),
            }
            .expect("request");
            let r = app.request(req).await;
            assert!(documented.contains(&r.status.as_u16()), "{method} {uri}: {} not in {documented:?}", r.status);
            exercised += 1;
        }
    }
    assert!(exercised >= 10, "documented operations: {exercised}");
}

#[tokio::test]
async fn text_is_compressed_images_are_not() {
    let app = samples();
    let css = app.get_with("/static/style.css", &[("accept-encoding", "gzip, br, zstd")]).await;
    assert!(["gzip", "br", "zstd"].contains(&css.header("content-encoding")), "{:?}", css.headers);
    let html = app.get_with("/", &[("accept-encoding", "gzip")]).await;
    assert_eq!(html.header("content-encoding"), "gzip");
    let png =
        app.get_with("/part/newsletter-2026-10@example.com/logo@example.com", &[("accept-encoding", "gzip")]).await;
    assert_eq!(png.header("content-encoding"), "");
    let ranged = app.get_with("/raw/welcome@example.com", &[("accept-encoding", "gzip"), ("range", "bytes=0-9")]).await;
    assert_eq!(ranged.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(ranged.header("content-encoding"), "", "a range is sent as the exact bytes");
    assert_eq!(ranged.body.len(), 10);
}

#[tokio::test]
async fn kept_documents_answer_as_made_in_every_coding() {
    let app = samples();
    let m = app.json("/api/messages/newsletter-2026-10@example.com").await;
    let url = m["html_url"].as_str().expect("html body").to_string();
    let plain = app.get(&url).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.header("content-encoding"), "");
    let etag = plain.header("etag").to_string();
    // Twice each: the first answer is made (and its compressed form kept), the second is the kept one.
    for accept in ["gzip", "br", "zstd", "gzip, deflate, br, zstd", "gzip;q=0.5, br;q=0.9", "identity", "deflate"] {
        for round in 0..2 {
            let r = app.get_with(&url, &[("accept-encoding", accept)]).await;
            assert_eq!(r.status, StatusCode::OK, "{accept} {round}");
            let coding = r.header("content-encoding").to_string();
            let want = match accept {
                "gzip" => "gzip",
                "br" | "gzip;q=0.5, br;q=0.9" => "br",
                "zstd" | "gzip, deflate, br, zstd" => "zstd",
                _ => "",
            };
            assert_eq!(coding, want, "{accept} {round}");
            assert_eq!(r.decoded(), plain.body, "{accept} {round}");
            // A strong ETag names one form of the bytes: a compressed form's is weak.
            let want_etag = if want.is_empty() { etag.clone() } else { format!("W/{etag}") };
            assert_eq!(r.header("etag"), want_etag, "{accept} {round}");
            assert_eq!(r.header("content-type"), plain.header("content-type"), "{accept} {round}");
            assert_eq!(r.header("content-security-policy"), plain.header("content-security-policy"));
            if !want.is_empty() {
                assert!(r.header("vary").to_ascii_lowercase().contains("accept-encoding"), "{accept} {round}");
            }
        }
    }
    let not_modified = app.get_with(&url, &[("accept-encoding", "gzip"), ("if-none-match", &etag)]).await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    let weak = format!("W/{etag}");
    let not_modified = app.get_with(&url, &[("accept-encoding", "gzip"), ("if-none-match", &weak)]).await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED, "the weak ETag of the compressed form");
    assert!(not_modified.body.is_empty());
    let ranged = app.get_with(&url, &[("accept-encoding", "gzip"), ("range", "bytes=0-9")]).await;
    assert_eq!(ranged.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(ranged.header("content-encoding"), "");
    assert_eq!(ranged.body, plain.body[..10]);
    // Switches are part of what is kept: the download answer is not the inline one.
    let download = app.get(&format!("{url}?download=1")).await;
    assert!(download.header("content-disposition").starts_with("attachment"), "{:?}", download.headers);
    assert!(!app.get(&url).await.header("content-disposition").starts_with("attachment"));
}

#[tokio::test]
async fn cors_is_off_unless_origins_are_listed() {
    let app = samples();
    let r = app.get_with("/api/status", &[("origin", "https://tools.example")]).await;
    assert_eq!(r.header("access-control-allow-origin"), "");

    let data = tempfile::tempdir().expect("dir");
    let mut config = crate::common::config_for(&[repo_path("samples")], data.path());
    config.cors_origins = vec!["https://tools.example".into()];
    let archive = std::sync::Arc::new(mailshelf::Archive::open(data.path()).expect("open"));
    archive.ingest_paths(&archive.roots(&config.paths));
    let router = mailshelf::app(mailshelf::AppState::new(archive, std::sync::Arc::new(config)));
    use tower::ServiceExt;
    let res = router
        .clone()
        .oneshot(
            Request::get("/api/status").header("origin", "https://tools.example").body(Body::empty()).expect("request"),
        )
        .await
        .expect("response");
    assert_eq!(
        res.headers().get("access-control-allow-origin").map(|v| v.as_bytes()),
        Some(&b"https://tools.example"[..])
    );
    let other = router
        .oneshot(
            Request::get("/api/status").header("origin", "https://evil.example").body(Body::empty()).expect("request"),
        )
        .await
        .expect("response");
    assert!(other.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn part_tree_reaches_into_enclosed_messages() {
    let app = samples();
    let m = app.json("/api/messages/fwd-5b2c9a@example.net").await;
    let mut stack = vec![&m["parts"][0]];
    let (mut enclosed, mut leaves) = (Vec::new(), Vec::new());
    while let Some(p) = stack.pop() {
        if p["content_type"] == "message/rfc822" {
            enclosed.push(p);
            assert!(p["parts"].as_array().is_some_and(|c| !c.is_empty()), "the enclosed tree is here: {p}");
        }
        let children = p["parts"].as_array().expect("parts");
        if children.is_empty() {
            leaves.push(p["url"].as_str().expect("url").to_string());
        }
        stack.extend(children);
    }
    assert_eq!(enclosed.len(), 1, "{m:#}");
    let inner = &enclosed[0]["message"];
    assert_eq!(inner["message_id"], "original-2026@example.net");
    assert_eq!(inner["url"], "/message/original-2026@example.net");
    let api_url = inner["api_url"].as_str().expect("api_url");
    assert_eq!(app.json(api_url).await["message_id"], "original-2026@example.net");
    assert!(leaves.iter().any(|l| l.starts_with("/part/original-2026@example.net/")), "{leaves:?}");
    for leaf in &leaves {
        assert_eq!(app.get(leaf).await.status, StatusCode::OK, "{leaf}");
    }
    // Other nodes carry no `message`.
    assert!(m["parts"][0].get("message").is_none());
}

/// Reads of `/part/` are answered ahead of the router (`web::hot`), everything else of that
/// prefix by the router: either way each shape of request gets what the router gave it.
#[tokio::test]
async fn the_part_route_answers_every_shape_of_request_as_the_router_does() {
    let app = samples();
    let logo = "/part/newsletter-2026-10@example.com/logo@example.com";
    let cases: [(&str, &str, StatusCode, &str); 11] = [
        ("GET", logo, StatusCode::OK, "image/png"),
        ("HEAD", logo, StatusCode::OK, "image/png"),
        ("GET", "/part/newsletter-2026-10@example.com/logo%40example.com", StatusCode::OK, "image/png"),
        ("GET", "/part/newsletter-2026-10%40example.com/~2", StatusCode::OK, "image/png"),
        ("POST", logo, StatusCode::METHOD_NOT_ALLOWED, "application/problem+json"),
        ("DELETE", "/part/a/b", StatusCode::METHOD_NOT_ALLOWED, "application/problem+json"),
        ("GET", "/part//b", StatusCode::NOT_FOUND, "application/problem+json"),
        ("GET", "/part/%FF/x", StatusCode::BAD_REQUEST, "application/problem+json"),
        ("GET", "/part/a/b/c", StatusCode::NOT_FOUND, "text/html; charset=utf-8"),
        ("GET", "/part/a/", StatusCode::NOT_FOUND, "text/html; charset=utf-8"),
        ("GET", "/part/a", StatusCode::NOT_FOUND, "text/html; charset=utf-8"),
    ];
    let whole = app.get(logo).await;
    for (method, uri, status, content_type) in cases {
        let req = Request::builder().method(method).uri(uri).body(Body::empty()).expect("request");
        let r = app.request(req).await;
        assert_eq!((r.status, r.header("content-type")), (status, content_type), "{method} {uri}");
        if status == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(r.header("allow"), "GET,HEAD", "{method} {uri}");
            assert!(r.text().contains("/method-not-allowed\""), "{method} {uri}: {}", r.text());
        }
        if status == StatusCode::OK {
            assert_eq!(r.header("content-length"), whole.body.len().to_string(), "{method} {uri}");
            assert_eq!(r.body.is_empty(), method == "HEAD", "{method} {uri}");
        } else if method == "GET" {
            assert_eq!(r.header("content-length"), r.body.len().to_string(), "{method} {uri}");
        }
    }
}

/// Header fields as mail writes them: a date in an obsolete zone does not take the next field
/// with it, a field written twice counts as first written, a date that names no instant is no
/// date, a character split across two encoded words comes back whole (in the Subject and in
/// display names), and names and groups are
/// written so that the line splits again. Each case is a message of its own; (field of the detail's JSON, value wanted).
#[tokio::test]
async fn header_fields_read_as_first_written() {
    let cases: &[(&str, &[(&str, serde_json::Value)])] = &[
        (
            "Date: Mon, 6 Jan 2020 10:00:00 Z\r\nMessage-ID: <zone-z@example.com>\r\nSubject: zone Z\r\n",
            &[("message_id", json!("zone-z@example.com")), ("date", json!("2020-01-06T10:00:00Z"))],
        ),
        (
            "Subject: zone UT\r\nDate: Mon, 6 Jan 2020 10:00:00 UT\r\nTo: ann@example.com\r\n",
            &[("to", json!("ann@example.com")), ("date", json!("2020-01-06T10:00:00Z"))],
        ),
        ("Date: Mon, 6 Jan 2020 10:00:00 A\r\nSubject: military zone\r\n", &[("subject", json!("military zone"))]),
        (
            "Subject: First subject\r\nFrom: first@example.com\r\nSubject: Second subject\r\nFrom: second@example.com\r\n\
             Date: Tue, 7 Jan 2020 10:00:00 +0000\r\nDate: Wed, 8 Jan 2020 10:00:00 +0000\r\n",
            &[
                ("subject", json!("First subject")),
                ("from", json!("first@example.com")),
                ("date", json!("2020-01-07T10:00:00Z")),
            ],
        ),
        ("Subject: year 10000\r\nDate: Sat, 1 Jan 10000 00:00:00 +0000\r\n", &[("date", serde_json::Value::Null)]),
        ("Subject: no such day\r\nDate: 32 Feb 2020 25:61:00 +0000\r\n", &[("date", serde_json::Value::Null)]),
        ("Subject: three digits\r\nDate: Thu, 1 Jan 104 10:00:00 +0000\r\n", &[("date", json!("2004-01-01T10:00:00Z"))]),
        (
            "Subject: names\r\nFrom: \"Doe, John\" <jd@example.com>\r\n\
             To: Team: alice@example.com, Bob B <bob@example.com>;, carol@example.com\r\n",
            &[
                ("from", json!("\"Doe, John\" <jd@example.com>")),
                ("to", json!("Team: alice@example.com, Bob B <bob@example.com>;, carol@example.com")),
            ],
        ),
        ("Subject: =?utf-8?q?Gr=C3?= =?utf-8?q?=BC=C3=9Fe?=\r\n", &[("subject", json!("Grüße"))]),
        ("Subject: =?utf-8?b?w6nDqcOpw6k?=\r\n", &[("subject", json!("éééé"))]),
        (
            "Subject: =?ISO-2022-JP?B?GyRCRGpOYzJxNUQkTiQqQ04kaSQ7GyhC?=\r\n =?ISO-2022-JP?B?GyRCIUobKEIxMBskQjduGyhCMTUbJEJGfCFLGyhC?=\r\n",
            &[("subject", json!("定例会議のお知らせ（10月15日）"))],
        ),
        ("Subject: abc=?utf-8?q?=C3=A9?=def\r\n", &[("subject", json!("abcédef"))]),
        // Display names with a character split between two encoded words, as a run, folded,
        // inside a quoted string, beside plain words, and as a group's name.
        (
            "Subject: split names\r\nFrom: =?UTF-8?B?SsM=?= =?UTF-8?B?vHJnZW4=?= <j@x.de>\r\n\
             To: Hans =?UTF-8?Q?J=C3?=\r\n =?UTF-8?Q?=BCrgen?= Meier <h@x.de>, \"=?UTF-8?B?5bG=?= =?UTF-8?B?seeUsA==?=\" <y@x.jp>\r\n\
             Cc: =?UTF-8?Q?Gr=C3?= =?UTF-8?Q?=BC=C3=9Fe?=: k@x.de;\r\n",
            &[
                ("from", json!("Jürgen <j@x.de>")),
                ("to", json!("Hans Jürgen Meier <h@x.de>, 山田 <y@x.jp>")),
                ("cc", json!("Grüße: k@x.de;")),
            ],
        ),
        (
            "Subject: an address in an encoded word\r\nFrom: =?utf-8?q?Real_Name_=3Creal=40corp.com=3E?=\r\n",
            &[("from", json!("\"Real Name <real@corp.com>\""))],
        ),
        (
            "Subject: an address written inside an encoded word\r\nFrom: =?utf-8?q?Boss_<boss@corp.com>?=\r\n",
            &[("from", json!("\"Boss <boss@corp.com>\""))],
        ),
    ];
    let long = format!("Subject: {}\r\n", "x".repeat(10_000));
    let cut = json!(format!("{}…", "x".repeat(mailshelf::limits::MAX_SUBJECT - '…'.len_utf8())));
    let long_case: (&str, &[(&str, serde_json::Value)]) = (&long, &[("subject", cut)]);
    for (header, want) in cases.iter().chain([&long_case]) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("m.eml");
        std::fs::write(&path, format!("{header}Content-Type: text/plain\r\n\r\nBody.\r\n")).expect("write");
        let app = TestApp::new(&[path]);
        let list = app.json("/api/messages").await;
        let id = list["messages"][0]["id"].as_str().expect("one message").to_string();
        let detail = app.json(&format!("/api/messages/{id}")).await;
        for (field, value) in *want {
            assert_eq!(&detail[field], value, "{field} of {header:?}: {detail}");
        }
    }
}

/// 8-bit header text that no charset labels (old Outlook wrote the Subject and names in
/// Windows-1252) reads as the body of the same message does, not as replacement characters.
#[tokio::test]
async fn eight_bit_headers_read_as_their_unlabelled_body() {
    if !crate::common::needs::corpus("eight_bit_headers_read_as_their_unlabelled_body") {
        return;
    }
    let file = crate::common::corpus_dir().join("stalwart-mail-parser/resources/eml/legacy/052.eml");
    let app = TestApp::new(&[file]);
    let detail = app.json("/api/messages/NDBBIAKOPKHFGPLCODIGOEKDCHAA.doug@example.com").await;
    assert_eq!(detail["subject"], "Die Hasen und die Frösche (Microsoft Outlook 00)", "{detail}");
    assert_eq!(detail["to"], "Heinz Müller <mueller@example.com>", "{detail}");
    // The page and its list of every header field too.
    let page = app.get("/message/NDBBIAKOPKHFGPLCODIGOEKDCHAA.doug@example.com").await.text();
    assert!(page.contains("Heinz Müller") && !page.contains('\u{FFFD}'), "{page}");
}

/// Header fields and types real mail writes outside the RFCs read as mail clients read them: raw
/// 8-bit bytes in encoded-words and in file names, zone names in lower case and offsets of three
/// digits, a comment where a mailbox would be, mailboxes without the comma between them, a
/// multipart with an empty boundary, and Content-Types without a subtype.
#[tokio::test]
async fn malformed_fields_in_corpus_mail_read_as_mail_clients_read_them() {
    if !crate::common::needs::corpus("malformed_fields_in_corpus_mail_read_as_mail_clients_read_them") {
        return;
    }
    /// A corpus file, words of the subject of the message in it, and what its detail says: a field
    /// and its value, `leaf` for a leaf's type and file name, `text` for words of its text.
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: &[Case<'_>] = &[
        (
            "stalwart-mail-parser/resources/eml/legacy/009.eml",
            "Hasen",
            &[("subject", "Die Hasen und die Frösche"), ("to", "Jürgen Schmürgen <jschmuergen@example.com>")],
        ),
        (
            "stalwart-mail-parser/resources/eml/legacy/026.eml",
            "Hasen",
            &[("to", "Heinz Müller <mueller@example.com>"), ("leaf", "text/plain HasenundFrösche.txt")],
        ),
        (
            "mimekit/UnitTests/TestData/mbox/content-length.mbox.txt",
            "Frontier Technologies testing",
            &[("date", "1996-05-28T12:24:23-06:00")],
        ),
        (
            "james-mime4j/core/src/test/resources/mimetools-testmsgs/multi-bad.msg",
            "",
            &[("date", "1995-08-21T13:30:57-06:00")],
        ),
        ("mimekit/UnitTests/TestData/messages/delivery-status.txt", "", &[("to", "unlisted-recipients: ;")]),
        (
            "enmime/testdata/mail/malformed-multiple-address-header-values.raw",
            "",
            &[("from", "Bob Dunite <bob@extern>, Bobby Dunite <bobby@extern>")],
        ),
        ("mimekit/UnitTests/TestData/mbox/simple.mbox.txt", "correctly handle this", &[("text", "Hello world.")]),
        (
            "mimekit/UnitTests/TestData/compliance/invalid-content-type.eml",
            "",
            &[("leaf", "application/octet-stream attachment.zip")],
        ),
        (
            "mimekit/UnitTests/TestData/messages/missing-subtype.txt",
            "",
            &[("leaf", "application/octet-stream document.xml.gz")],
        ),
        ("enmime/testdata/parts/empty-ctype-bad-content.raw", "", &[("text", "Use the View Invoices function")]),
        // Mailman's archives hide every sender as `user at example.com (Name)`.
        (
            "perceval/tests/data/pipermail/pipermail_2016_march.mbox",
            "MLStats may change the semantic",
            &[("from", "Germán Poo-Caamaño <gpoo@example.com>")],
        ),
        // A UTF-8 file name cut inside its last character stays UTF-8.
        (
            "flanker/tests/fixtures/messages/russian-attachment-yahoo.eml",
            "",
            &[("leaf", "image/png Картинка с очень, очень длинным предлинным именем преименем таким чт\u{FFFD}")],
        ),
    ];
    for (file, subject, want) in cases {
        let app = TestApp::new(&[crate::common::corpus_dir().join(file)]);
        let list = app.json("/api/messages?limit=100").await;
        let listed = list["messages"].as_array().expect("messages");
        let found = listed.iter().find(|m| m["subject"].as_str().unwrap_or("").contains(subject)).expect(file);
        let detail = app.json(&format!("/api/messages/{}", found["id"].as_str().expect("id"))).await;
        let mut leaves = Vec::new();
        let mut stack = vec![&detail["parts"][0]];
        while let Some(p) = stack.pop() {
            let children = p["parts"].as_array().expect("parts");
            if children.is_empty() {
                leaves.push(format!(
                    "{} {}",
                    p["content_type"].as_str().unwrap_or(""),
                    p["filename"].as_str().unwrap_or("")
                ));
            }
            stack.extend(children);
        }
        for (field, value) in *want {
            match *field {
                "leaf" => assert!(leaves.iter().any(|l| l == value), "{file}: {leaves:?}"),
                "text" => {
                    let url = detail["text_url"].as_str().unwrap_or_else(|| panic!("{file} has text: {detail}"));
                    let text = app.get(url).await;
                    assert!(text.text().contains(value), "{file}: {}", text.text());
                    assert!(text.header("content-type").starts_with("text/plain"), "{file}");
                }
                _ => assert_eq!(detail[field], *value, "{file}: {field}"),
            }
        }
        // Every part is served as a type HTTP can carry.
        for part in &leaves {
            let ct = part.split(' ').next().unwrap_or("");
            assert!(
                ct.split_once('/').is_some_and(|(a, b)| !a.is_empty() && !b.is_empty() && !ct.contains(['<', '>'])),
                "{file}: {ct}"
            );
        }
    }
}

/// File names continued over RFC 2231 segments whose bytes split a character, or in a charset
/// other than UTF-8, come back whole.
#[tokio::test]
async fn file_names_continued_over_segments_read_whole() {
    let raw = "From: a@example.com\r\nMessage-ID: <names@example.com>\r\nMIME-Version: 1.0\r\n\
        Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nSee the files.\r\n\
        --b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment;\r\n filename*0*=UTF-8''%C3;\r\n \
        filename*1*=%A9t%C3%A9.txt\r\n\r\nsummer\r\n\
        --b\r\nContent-Type: text/plain; name*0*=iso-8859-1''caf%E9; name*1*=%E9.txt\r\n\r\ncoffee\r\n--b--\r\n";
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("names.eml");
    std::fs::write(&path, raw).expect("write");
    let app = TestApp::new(&[path]);
    let detail = app.json("/api/messages/names@example.com").await;
    let names: Vec<&str> =
        detail["parts"][0]["parts"].as_array().expect("parts").iter().filter_map(|p| p["filename"].as_str()).collect();
    assert_eq!(names, ["été.txt", "caféé.txt"], "{detail}");
}

#[tokio::test]
async fn downloads_are_the_files_as_they_were_sent() {
    let page = "<html><head><base href=\"http://example.org/\"><meta http-equiv=\"refresh\" content=\"5\"></head>\
                <body><a href=\"x.html\">x</a><script>1</script></body></html>";
    let message = format!(
        "From: a@example.com\r\nSubject: files\r\nMessage-ID: <files@test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n\
         --b1\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n\
         --b1\r\nContent-Type: text/html; charset=us-ascii\r\nContent-Disposition: attachment; filename=\"page.html\"\r\n\r\n{page}\r\n\
         --b1\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Disposition: attachment; filename=\"latin1.txt\"\r\n\
         Content-Transfer-Encoding: quoted-printable\r\n\r\nFr=F6sche\r\n\
         --b1\r\nContent-Type: text/csv; charset=utf-8\r\nContent-Disposition: attachment; filename=\"t.csv\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\nYcOkLGIK\r\n--b1--\r\n"
    );
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("files.eml"), message).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    // (part, the bytes sent, the Content-Type of the download, what showing it gives)
    let cases: &[(&str, &[u8], &str, &str)] = &[
        ("~2", page.as_bytes(), "text/html; charset=us-ascii", "<a href=\"http://example.org/x.html\""),
        ("~3", b"Fr\xf6sche", "text/plain; charset=iso-8859-1", "Fr\u{f6}sche"),
        ("~4", "a\u{e4},b\n".as_bytes(), "text/csv; charset=utf-8", "a\u{e4},b"),
    ];
    for (part, sent, content_type, shown) in cases {
        let url = format!("/part/files@test/{part}");
        let download = app.get(&format!("{url}?download=1")).await;
        assert_eq!(download.status, StatusCode::OK, "{part}");
        assert_eq!(download.body, *sent, "{part}: the file as it was sent");
        assert_eq!(download.header("content-type"), *content_type, "{part}");
        assert!(download.header("content-disposition").starts_with("attachment"), "{part}");
        let again = app.get_with(&format!("{url}?download=1"), &[("range", "bytes=0-1")]).await;
        assert_eq!(again.body, sent[..2], "{part}: ranges of the file sent");
        // Shown, it is still the text made safe and readable.
        let inline = app.get(&url).await;
        assert!(inline.text().contains(shown), "{part}: {}", inline.text());
        assert!(inline.header("content-type").ends_with("charset=utf-8"), "{part}");
    }
}

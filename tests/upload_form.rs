//! Uploading from the list page's form, without script: a browser's `Accept: text/html` gets a
//! redirect to what it uploaded (the message for one, the list for several) or an error page;
//! scripts keep getting JSON. The form's own origin may post; other sites may not.

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::common::{repo_path, Reply, TestApp};

const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

fn message(n: u32) -> String {
    format!(
        "From: up@example.com\r\nSubject: Form upload {n}\r\nMessage-ID: <form-{n}@example.com>\r\n\
         Date: Mon, 02 Nov 2026 10:0{n}:00 +0000\r\n\r\nUploaded from the page.\r\n"
    )
}

/// A `multipart/form-data` body as a browser sends the form: one `file` field per chosen file.
fn form(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--FORM\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--FORM--\r\n");
    body
}

async fn post(app: &TestApp, body: Vec<u8>, headers: &[(&str, &str)]) -> Reply {
    let mut req = Request::post("/api/messages").header("content-type", "multipart/form-data; boundary=FORM");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    app.request(req.body(Body::from(body)).expect("request")).await
}

#[tokio::test]
async fn the_list_page_has_a_form_that_works_without_script() {
    let app = TestApp::new(&[repo_path("samples")]);
    let html = app.get("/").await.text();
    let form = html.split("<form class=\"upload\"").nth(1).expect("upload form");
    let form = &form[..form.find("</form>").expect("form end")];
    assert!(form.contains("action=\"/api/messages\"") && form.contains("method=\"post\""), "{form}");
    assert!(form.contains("enctype=\"multipart/form-data\""), "{form}");
    assert!(form.contains("type=\"file\"") && form.contains(" multiple"), "{form}");
    let compressed = [".gz", ".zst", ".bz2", ".xz", ".lz4"];
    for ext in [".eml", ".mht", ".mhtml", ".mbox", ".msg", ".pst", ".ost", ".emlx", ".webarchive", "message/rfc822"]
        .into_iter()
        .chain(compressed)
    {
        assert!(form.contains(ext), "accept lists {ext}: {form}");
    }
}

#[tokio::test]
async fn form_uploads_redirect_to_what_was_uploaded() {
    let mbox = "From a Mon Jan  1 00:00:00 2024\nSubject: one\nMessage-ID: <mbox-1@x>\n\n1\n\nFrom b Mon Jan  1 00:00:00 2024\nSubject: two\nMessage-ID: <mbox-2@x>\n\n2\n";
    let (m1, m2, m3) = (message(1), message(2), message(3));
    type Files<'a> = Vec<(&'a str, &'a [u8])>;
    let cases: &[(&str, Files, &str)] = &[
        ("one message: its page", vec![("a.eml", m1.as_bytes())], "/message/form-1@example.com"),
        ("two files: the uploads", vec![("b.eml", m2.as_bytes()), ("c.eml", m3.as_bytes())], "/folder/Uploads"),
        ("an mbox of two: the uploads", vec![("box.mbox", mbox.as_bytes())], "/folder/Uploads"),
        (
            "an empty chooser beside a file is no file",
            vec![("", b""), ("a.eml", m1.as_bytes())],
            "/message/form-1@example.com",
        ),
    ];
    for (name, files, to) in cases {
        let app = TestApp::new(&[repo_path("samples")]);
        let r = post(&app, form(files), &[("accept", BROWSER_ACCEPT)]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{name}: {}", r.text());
        assert_eq!(r.header("location"), *to, "{name}");
        let landed = app.get(r.header("location")).await;
        assert_eq!(landed.status, StatusCode::OK, "{name}");
    }
}

#[tokio::test]
async fn every_format_read_can_be_uploaded_from_the_form() {
    if !crate::common::needs::corpus("every_format_read_can_be_uploaded_from_the_form") {
        return;
    }
    let corpus = crate::common::corpus_dir();
    let cases = [
        ("a saved web page", repo_path("samples/saved-page.mhtml"), "Field notes: a week in the hills"),
        ("an Outlook message", corpus.join("msgreader/MsgReaderTests/SampleFiles/TxtSampleEmail.msg"), ""),
    ];
    for (name, path, subject) in cases {
        let app = TestApp::new(&[]);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {}: {e}", path.display()));
        let file = path.file_name().and_then(|f| f.to_str()).expect("name");
        let r = post(&app, form(&[(file, &bytes)]), &[("accept", BROWSER_ACCEPT)]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{name}: {}", r.text());
        let to = r.header("location").to_string();
        assert!(to.starts_with("/message/"), "{name}: lands on its message, not {to}");
        let page = app.get(&to).await;
        assert_eq!(page.status, StatusCode::OK, "{name}");
        assert!(page.text().contains(subject), "{name}");
    }
}

#[tokio::test]
async fn form_errors_are_pages_and_scripts_still_get_json() {
    let app = TestApp::new(&[repo_path("samples")]);
    let big = vec![b'x'; 2 << 20];
    let cases: &[(&str, Vec<u8>, StatusCode, &str)] = &[
        ("nothing chosen", form(&[("", b"")]), StatusCode::BAD_REQUEST, "no file was chosen"),
        (
            "not a message",
            form(&[("x.eml", b"\x00\x01 not mail")]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "does not read as an email",
        ),
        ("too large", form(&[("big.eml", &big)]), StatusCode::PAYLOAD_TOO_LARGE, "larger than the limit"),
    ];
    for (name, body, status, says) in cases {
        let r = post(&app, body.clone(), &[("accept", BROWSER_ACCEPT)]).await;
        assert_eq!(r.status, *status, "{name}");
        assert!(r.header("content-type").starts_with("text/html"), "{name}: a page");
        assert!(r.text().contains(says), "{name}: {}", r.text());
        let script = post(&app, body.clone(), &[("accept", "application/json")]).await;
        assert_eq!(script.status, *status, "{name}: scripts get the same status");
        assert_eq!(script.header("content-type"), "application/problem+json", "{name}");
    }
    let created = post(&app, form(&[("a.eml", message(4).as_bytes())]), &[]).await;
    assert_eq!(created.status, StatusCode::CREATED, "a script still gets 201 and JSON");
    assert!(created.header("content-type").starts_with("application/json"));
}

#[tokio::test]
async fn the_page_own_origin_may_post_and_other_sites_may_not() {
    let host = "127.0.0.1:8025";
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: &[(&str, Headers, StatusCode)] = &[
        (
            "the list page's form (same origin)",
            &[("host", host), ("origin", "http://127.0.0.1:8025"), ("sec-fetch-site", "same-origin")],
            StatusCode::SEE_OTHER,
        ),
        ("same origin, Origin only", &[("host", host), ("origin", "http://127.0.0.1:8025")], StatusCode::SEE_OTHER),
        (
            "the form under no-referrer: Origin null, Sec-Fetch-Site same-origin",
            &[("host", host), ("origin", "null"), ("sec-fetch-site", "same-origin")],
            StatusCode::SEE_OTHER,
        ),
        ("Origin null without Sec-Fetch-Site", &[("host", host), ("origin", "null")], StatusCode::FORBIDDEN),
        (
            "a form on another site",
            &[("host", host), ("origin", "http://evil.example"), ("sec-fetch-site", "cross-site")],
            StatusCode::FORBIDDEN,
        ),
        ("another site's origin", &[("host", host), ("origin", "http://evil.example")], StatusCode::FORBIDDEN),
        ("a sibling site", &[("host", host), ("sec-fetch-site", "same-site")], StatusCode::FORBIDDEN),
    ];
    for (name, headers, want) in cases {
        let app = TestApp::new(&[repo_path("samples")]);
        let mut all = headers.to_vec();
        all.push(("accept", BROWSER_ACCEPT));
        let r = post(&app, form(&[("a.eml", message(5).as_bytes())]), &all).await;
        assert_eq!(r.status, *want, "{name}: {}", r.text());
        if *want == StatusCode::FORBIDDEN {
            assert!(r.header("content-type").starts_with("text/html"), "{name}: the refusal is a page too");
            assert_eq!(app.get("/api/messages/form-5@example.com").await.status, StatusCode::NOT_FOUND, "{name}");
        }
    }
}

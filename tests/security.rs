//! Other websites against the user's mailshelf: DNS rebinding (a foreign `Host`), cross-site writes
//! (a form or fetch from another origin), cross-origin reads, and hostile sizes. The header rules
//! are checked on the real server over a socket with crafted requests, and once in headless
//! Chromium with an attacker page served from another loopback address.

use std::io::{Read, Write};
use std::net::TcpStream;

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::common::process::Served;
use crate::common::{repo_path, TestApp};

/// The real server over the samples, on a free port; killed when dropped.
struct Server {
    _served: Served,
    addr: String,
    _data: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let data = tempfile::tempdir().expect("dir");
        let samples = repo_path("samples");
        let mut args = extra.to_vec();
        args.push(samples.to_str().expect("utf-8 path"));
        let served = Served::start(data.path(), &args);
        let server = Server { addr: served.addr.to_string(), _served: served, _data: data };
        // Ready once the samples are indexed.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !server
            .raw("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .contains("\"ready\":true")
        {
            assert!(std::time::Instant::now() < deadline, "server never became ready");
            std::thread::yield_now();
        }
        server
    }

    /// Sends a request exactly as written and returns the whole answer.
    fn raw(&self, request: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.write_all(request.as_bytes()).expect("send");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        let answer = self.raw(&req);
        let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, answer)
    }
}

const NOTE: &str = "From: a@example.com\r\nSubject: upload\r\nMessage-ID: <up-1@example.com>\r\n\r\nhello\r\n";

#[test]
fn only_local_and_allowed_host_names_are_answered() {
    let server = Server::start(&["--allowed-host", "mail.example.org"]);
    let port = server.addr.rsplit(':').next().expect("port").to_string();
    let cases = [
        ("127.0.0.1".to_string(), 200),
        (server.addr.clone(), 200),
        (format!("localhost:{port}"), 200),
        (format!("mailshelf.localhost:{port}"), 200),
        (format!("[::1]:{port}"), 200),
        ("192.168.1.20:8080".to_string(), 200),
        (format!("mail.example.org:{port}"), 200),
        ("evil.example".to_string(), 421),
        (format!("evil.example:{port}"), 421),
        (format!("127.0.0.1.nip.example:{port}"), 421),
        (format!("localhost.evil.example:{port}"), 421),
    ];
    for (host, want) in &cases {
        let (status, answer) = server.request("GET", "/api/messages", &[("Host", host)], "");
        assert_eq!(status, *want, "Host: {host}\n{answer}");
        if *want == 421 {
            assert!(answer.contains("application/problem+json"), "{answer}");
            assert!(!answer.contains("\"messages\""), "nothing of the archive leaks: {answer}");
        }
    }
    // A browser navigating gets a page, not JSON.
    let (status, page) = server.request("GET", "/", &[("Host", "evil.example"), ("Accept", "text/html")], "");
    assert_eq!(status, 421);
    assert!(page.contains("text/html") && page.contains("--allowed-host"), "{page}");
    // `*` turns the check off.
    let open = Server::start(&["--allowed-host", "*"]);
    assert_eq!(open.request("GET", "/api/status", &[("Host", "evil.example")], "").0, 200);
}

#[test]
fn cross_site_writes_are_refused_and_scripts_write() {
    let server = Server::start(&[]);
    let host = server.addr.clone();
    let own = format!("http://{host}");
    let upload = |headers: &[(&str, &str)]| {
        let mut all = vec![("Host", host.as_str()), ("Content-Type", "message/rfc822")];
        all.extend_from_slice(headers);
        server.request("POST", "/api/messages", &all, NOTE).0
    };
    let cases: &[(&[(&str, &str)], u16)] = &[
        (&[("Sec-Fetch-Site", "cross-site")], 403),
        (&[("Sec-Fetch-Site", "same-site")], 403),
        (&[("Origin", "http://evil.example")], 403),
        (&[("Origin", "null")], 403),
        (&[("Sec-Fetch-Site", "cross-site"), ("Origin", "http://evil.example")], 403),
        (&[("Sec-Fetch-Site", "same-origin"), ("Origin", own.as_str())], 201),
        (&[], 201),
    ];
    for (headers, want) in cases {
        assert_eq!(upload(headers), *want, "{headers:?}");
    }
    // A delete from another site is refused too; the message is still there.
    let (status, _) = server.request(
        "DELETE",
        "/api/messages/up-1@example.com",
        &[("Host", &host), ("Sec-Fetch-Site", "cross-site")],
        "",
    );
    assert_eq!(status, 403);
    assert_eq!(server.request("GET", "/api/messages/up-1@example.com", &[("Host", &host)], "").0, 200);
    // Nor may another site set the PDF renderer to work (a picture on its page would do), or
    // tell from a thumbnail whether a message exists.
    for path in ["/message/up-1@example.com.pdf", "/thumb/up-1@example.com/~1", "/thumb/nope@example.com/~1"] {
        let cross = [("Host", host.as_str()), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Dest", "image")];
        assert_eq!(server.request("GET", path, &cross, "").0, 403, "{path}");
    }
    let own = [("Host", host.as_str()), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Dest", "image")];
    assert_eq!(server.request("GET", "/thumb/up-1@example.com/~1", &own, "").0, 200);
    // Reads from another site are not refused (images in a sandboxed frame look cross-site), but
    // nothing lets the other site's script see them: no CORS grant on the API or raw messages.
    let (status, answer) = server.request(
        "GET",
        "/api/messages",
        &[("Host", &host), ("Origin", "http://evil.example"), ("Sec-Fetch-Site", "cross-site")],
        "",
    );
    assert_eq!(status, 200);
    assert!(!answer.to_ascii_lowercase().contains("access-control-allow-origin"), "{answer}");
    let (_, raw) =
        server.request("GET", "/raw/up-1@example.com", &[("Host", &host), ("Origin", "http://evil.example")], "");
    assert!(!raw.to_ascii_lowercase().contains("access-control-allow-origin"), "{raw}");
}

#[test]
fn an_origin_allowed_for_cors_may_write() {
    let server = Server::start(&["--cors-origin", "https://tools.example"]);
    let host = server.addr.clone();
    let headers = [
        ("Host", host.as_str()),
        ("Content-Type", "message/rfc822"),
        ("Origin", "https://tools.example"),
        ("Sec-Fetch-Site", "cross-site"),
    ];
    let (status, answer) = server.request("POST", "/api/messages", &headers, NOTE);
    assert_eq!(status, 201, "{answer}");
    assert!(answer.to_ascii_lowercase().contains("access-control-allow-origin: https://tools.example"), "{answer}");
}

/// Builds a message from a header block and a body, CRLF line ends.
fn message(headers: &str, body: &str) -> Vec<u8> {
    format!(
        "From: a@example.com\r\nMessage-ID: <{}@hostile.example>\r\n{headers}\r\n\r\n{body}",
        headers.len() + body.len()
    )
    .into_bytes()
}

/// Hostile shapes, each small enough to upload (the test server takes 1 MiB).
fn hostile_sizes() -> Vec<(&'static str, Vec<u8>)> {
    let mut nested = String::new();
    for i in 0..5000 {
        nested.push_str(&format!("--b{i}\r\nContent-Type: multipart/mixed; boundary=\"b{}\"\r\n\r\n", i + 1));
    }
    let mut many = String::new();
    for i in 0..30_000 {
        many.push_str(&format!("--B\r\nContent-ID: <p{i}>\r\n\r\nx\r\n"));
    }
    many.push_str("--B--\r\n");
    let fanout_refs: String = (0..40_000).map(|i| format!("<img src=\"cid:p{}\">", i % 50)).collect();
    let mut fanout = format!("--B\r\nContent-Type: text/html\r\n\r\n{fanout_refs}\r\n");
    for i in 0..50 {
        fanout.push_str(&format!("--B\r\nContent-ID: <p{i}>\r\nContent-Type: image/png\r\n\r\nx\r\n"));
    }
    fanout.push_str("--B--\r\n");
    let deep_html = format!("{}deep{}", "<div>".repeat(100_000), "</div>".repeat(10));
    let enclosed: String = (0..60)
        .map(|i| format!("Message-ID: <level-{i}@hostile.example>\r\nContent-Type: message/rfc822\r\n\r\n"))
        .collect::<String>()
        + "Subject: innermost\r\n\r\nbottom\r\n";
    vec![
        ("nested multiparts", message("Content-Type: multipart/mixed; boundary=\"b0\"", &nested)),
        ("many parts", message("Content-Type: multipart/mixed; boundary=\"B\"", &many)),
        ("nested messages", message("Content-Type: message/rfc822", &enclosed)),
        ("a long header line", message(&format!("Subject: {}", "long ".repeat(150_000)), "body")),
        ("cid fan-out", message("Content-Type: multipart/related; boundary=\"B\"", &fanout)),
        ("deeply nested HTML", message("Content-Type: text/html", &deep_html)),
    ]
}

#[tokio::test]
async fn hostile_sizes_get_an_answer_not_a_failure() {
    let app = TestApp::new(&[]);
    for (what, bytes) in hostile_sizes() {
        assert!(bytes.len() < 1 << 20, "{what}: {} bytes", bytes.len());
        let r = app
            .request(
                Request::post("/api/messages")
                    .header("content-type", "message/rfc822")
                    .body(Body::from(bytes))
                    .expect("request"),
            )
            .await;
        assert!(
            r.status == StatusCode::CREATED || r.status == StatusCode::UNPROCESSABLE_ENTITY,
            "{what}: {}",
            r.status
        );
        if r.status != StatusCode::CREATED {
            continue;
        }
        let detail: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        let id = detail[0]["id"].as_str().expect("id").to_string();
        for uri in [format!("/message/{id}"), format!("/api/messages/{id}")] {
            let page = app.get(&uri).await;
            assert!(page.status.is_success(), "{what}: {uri}: {}", page.status);
        }
        if let Some(html) = detail[0]["html_url"].as_str() {
            let body = app.get(html).await;
            assert!(body.status.is_success(), "{what}: {html}: {}", body.status);
        }
        let page = app.get(&format!("/message/{id}")).await.text();
        let said = [
            ("many parts", "more parts than mailshelf shows"),
            ("nested multiparts", "levels deep"),
            ("nested messages", "levels deep"),
        ];
        for (_, notice) in said {
            let wanted = said.contains(&(what, notice));
            assert_eq!(page.contains(notice), wanted, "{what}: the page says where it stopped ({notice})");
        }
    }
}

#[tokio::test]
async fn absurd_requests_get_clear_answers() {
    let app = TestApp::new(&[repo_path("samples")]);
    let ranges = format!("bytes={}", (0..5000).map(|i| format!("{i}-{i}")).collect::<Vec<_>>().join(","));
    // (URI, request headers, status)
    type Case = (String, Vec<(&'static str, String)>, StatusCode);
    let cases: Vec<Case> = vec![
        ("/api/messages?offset=18446744073709551615&limit=1000000".into(), vec![], StatusCode::OK),
        ("/?page=18446744073709551615".into(), vec![], StatusCode::OK),
        ("/api/messages?q=the&offset=18446744073709551615".into(), vec![], StatusCode::BAD_REQUEST),
        ("/api/messages?q=the&offset=9990&limit=1000".into(), vec![], StatusCode::BAD_REQUEST),
        ("/api/messages?q=the&offset=9000&limit=1000".into(), vec![], StatusCode::OK),
        ("/api/messages?offset=-1".into(), vec![], StatusCode::BAD_REQUEST),
        (format!("/api/messages?q={}", "a".repeat(5000)), vec![], StatusCode::BAD_REQUEST),
        (format!("/api/messages?q={}x", "(".repeat(500)), vec![], StatusCode::BAD_REQUEST),
        ("/raw/welcome@example.com".into(), vec![("range", ranges)], StatusCode::OK),
    ];
    for (uri, headers, want) in cases {
        let hs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = app.get_with(&uri, &hs).await;
        assert_eq!(r.status, want, "{}: {}", &uri[..uri.len().min(80)], r.text());
        if !r.status.is_success() && uri.starts_with("/api/") {
            assert_eq!(r.header("content-type"), "application/problem+json", "{uri}");
        }
    }
}

/// A part a browser would show as a page that can load things (an SVG, XML, an HTML file whose
/// type came from its name) but that is not rewritten is only ever downloaded, and never with
/// remote content switched on: framed by a message (`<iframe src="cid:…">`), it would otherwise
/// load what it likes, or frame another part of the message asking for remote content. Pictures
/// and rewritten documents are shown in place as before.
#[tokio::test]
async fn parts_that_are_not_rewritten_never_show_as_pages() {
    let raw = "From: a@example.com\r\nMessage-ID: <frames@example.com>\r\nMIME-Version: 1.0\r\n\
        Content-Type: multipart/related; boundary=b\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n\
        <iframe src=\"cid:svg@x\"></iframe><iframe src=\"cid:raw@x\"></iframe><img src=\"cid:png@x\">\r\n\
        --b\r\nContent-Type: image/svg+xml\r\nContent-ID: <svg@x>\r\n\r\n\
        <svg xmlns=\"http://www.w3.org/2000/svg\"><image href=\"http://remote.example/p.png\"/></svg>\r\n\
        --b\r\nContent-Type: application/octet-stream; name=\"r.html\"\r\nContent-ID: <raw@x>\r\n\
        Content-Transfer-Encoding: base64\r\n\r\nPGltZyBzcmM9Imh0dHA6Ly9yZW1vdGUuZXhhbXBsZS9wLnBuZyI+\r\n\
        --b\r\nContent-Type: image/png\r\nContent-ID: <png@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n\
        iVBORw0KGgo=\r\n--b--\r\n";
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("frames.eml");
    std::fs::write(&path, raw).expect("write");
    let app = TestApp::new(&[path]);
    for (cid, disposition) in [("svg@x", "attachment"), ("raw@x", "attachment"), ("png@x", "inline")] {
        for query in ["", "?remote=1"] {
            let res = app.get(&format!("/part/frames@example.com/{cid}{query}")).await;
            assert_eq!(res.status, StatusCode::OK, "{cid}{query}");
            assert!(res.header("content-disposition").starts_with(disposition), "{cid}{query}");
            let csp = res.header("content-security-policy");
            assert!(!csp.contains("http:"), "{cid}{query}: {csp}");
        }
    }
    let body = app.get("/message/frames@example.com").await.text();
    let frame = body.split("src=\"").find(|s| s.starts_with("/part/")).expect("the body's frame");
    let url = &frame[..frame.find('"').expect("end")];
    let res = app.get(&format!("{}?remote=1", url.split('?').next().expect("url"))).await;
    assert!(res.header("content-security-policy").contains("http:"), "the rewritten body takes remote content");
}

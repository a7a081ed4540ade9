//! Answers of `/part/` kept whole are kept for each reader's folders: a part one reader was given
//! is still not found by a reader who may not read its message, a rewritten document whose
//! references resolve differently for two readers gives each their own bytes (and ETag), a kept
//! answer carries the sandbox of the server that made it, and every read of a kept answer is in
//! the audit log. Both backends. Over a real connection, each request gets the length of what it
//! is sent: the whole answer, a range, nothing for a 304, the compressed form.

use std::path::Path;

use axum::http::StatusCode;

use crate::common::{Reply, TestApp};
use crate::scopes::{archive, basic, users_file};

/// A part of a message only `boss` may read (`Vaultroom`), and a message neither reader's id finds.
const HIDDEN_PART: &str = "/part/hidden-1@far.example/hidden-logo@far.example";
const MISSING_PART: &str = "/part/nobody-at-all@nowhere.example/hidden-logo@far.example";
/// A readable HTML body (`Open`) whose `cid:` and `mid:` references lead into `Vaultroom`.
const OPEN_BODY: &str = "/part/open-1@example.org/~1";

fn with_users(audit: Option<&Path>) -> (TestApp, tempfile::TempDir) {
    let (dir, mail) = archive();
    let users = users_file(dir.path());
    let app = TestApp::with_config(&[mail], |c| {
        c.accounts.users = Some(users);
        c.accounts.audit_log = audit.map(|p| p.to_string_lossy().into_owned());
    });
    (app, dir)
}

async fn get(app: &TestApp, uri: &str, who: &str, headers: &[(&str, &str)]) -> Reply {
    let password = format!("{who}-pw");
    let auth = basic(who, &password);
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    app.get_with(uri, &all).await
}

#[tokio::test]
async fn a_part_kept_for_one_reader_is_not_found_by_a_reader_of_other_folders() {
    let (app, _dir) = with_users(None);
    // Switches, conditions and ranges: each kept for `boss` first (asked twice, so the second is
    // the kept answer).
    let variants = ["", "?download=1", "?raw=1", "?remote=1"];
    for v in variants {
        let uri = format!("{HIDDEN_PART}{v}");
        let first = get(&app, &uri, "boss", &[]).await;
        assert_eq!(first.status, StatusCode::OK, "{uri}");
        let again = get(&app, &uri, "boss", &[]).await;
        assert_eq!((again.status, &again.body), (StatusCode::OK, &first.body), "{uri}");
        let etag = first.header("etag").to_string();
        let conditions: [&[(&str, &str)]; 5] = [
            &[],
            &[("if-none-match", &etag)],
            &[("if-match", "\"other\"")],
            &[("range", "bytes=0-9")],
            &[("accept-encoding", "gzip")],
        ];
        for headers in conditions {
            let missing = get(&app, &format!("{MISSING_PART}{v}"), "scoped", headers).await;
            assert_eq!(missing.status, StatusCode::NOT_FOUND, "{uri} {headers:?}");
            let scoped = get(&app, &uri, "scoped", headers).await;
            assert_eq!(scoped.status, StatusCode::NOT_FOUND, "{uri} {headers:?}");
            assert_eq!(scoped.body, missing.body, "{uri} {headers:?}: as a message that does not exist");
        }
        // And the kept answer is still `boss`'s.
        let after = get(&app, &uri, "boss", &[("if-none-match", &etag)]).await;
        assert_eq!(after.status, StatusCode::NOT_MODIFIED, "{uri}");
    }
}

#[tokio::test]
async fn a_kept_document_resolves_references_within_each_readers_folders() {
    let (app, _dir) = with_users(None);
    let boss = get(&app, OPEN_BODY, "boss", &[]).await;
    assert_eq!(boss.status, StatusCode::OK);
    assert!(boss.text().contains(HIDDEN_PART), "{}", boss.text());
    // Each reader in turn, after the other has had the body kept.
    for round in 0..2 {
        let scoped = get(&app, OPEN_BODY, "scoped", &[]).await;
        assert_eq!(scoped.status, StatusCode::OK, "{round}");
        let text = scoped.text();
        assert!(!text.contains("/part/hidden") && !text.contains("/message/hidden"), "{round}: {text}");
        assert_ne!(scoped.header("etag"), boss.header("etag"), "{round}");
        // `boss`'s validator is not `scoped`'s: the whole body, not 304.
        let conditional = get(&app, OPEN_BODY, "scoped", &[("if-none-match", boss.header("etag"))]).await;
        assert_eq!((conditional.status, &conditional.body), (StatusCode::OK, &scoped.body), "{round}");
        // Compressed forms are of each reader's own bytes.
        let gzip = get(&app, OPEN_BODY, "scoped", &[("accept-encoding", "gzip")]).await;
        assert_eq!(gzip.header("content-encoding"), "gzip", "{round}");
        assert_eq!(gzip.decoded(), scoped.body, "{round}");
        let again = get(&app, OPEN_BODY, "boss", &[]).await;
        assert_eq!((again.status, &again.body), (StatusCode::OK, &boss.body), "{round}");
        let gzip = get(&app, OPEN_BODY, "boss", &[("accept-encoding", "gzip")]).await;
        assert_eq!(gzip.decoded(), boss.body, "{round}");
    }
}

#[tokio::test]
async fn kept_parts_carry_the_sandbox_of_their_server() {
    // A server people sign in to sandboxes message content with its origin; one without accounts,
    // over the same mail, without.
    let (signed, _dir) = with_users(None);
    let (plain_dir, mail) = archive();
    let plain = TestApp::new(&[mail]);
    for uri in [OPEN_BODY, "/part/open-2@example.org/~2", "/part/open-2@example.org/~2?raw=1"] {
        for round in 0..2 {
            let r = get(&signed, uri, "scoped", &[]).await;
            assert_eq!(r.status, StatusCode::OK, "{uri} {round}");
            assert!(r.header("content-security-policy").contains("sandbox allow-same-origin "), "{uri} {round}");
            let r = plain.get(uri).await;
            assert_eq!(r.status, StatusCode::OK, "{uri} {round}");
            let csp = r.header("content-security-policy");
            assert!(csp.starts_with("sandbox ") && !csp.contains("allow-same-origin"), "{uri} {round}: {csp}");
        }
    }
    drop(plain_dir);
}

#[tokio::test]
async fn every_read_of_a_kept_part_is_in_the_audit_log() {
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("audit.jsonl");
    let (app, _dir) = with_users(Some(&log));
    let open_part = "/part/open-2@example.org/~2";
    let etag = get(&app, open_part, "scoped", &[]).await.header("etag").to_string();
    assert_eq!(get(&app, open_part, "scoped", &[]).await.status, StatusCode::OK);
    assert_eq!(get(&app, open_part, "scoped", &[("if-none-match", &etag)]).await.status, StatusCode::NOT_MODIFIED);
    assert_eq!(get(&app, open_part, "boss", &[]).await.status, StatusCode::OK);
    assert_eq!(get(&app, HIDDEN_PART, "boss", &[]).await.status, StatusCode::OK);
    assert_eq!(get(&app, HIDDEN_PART, "boss", &[]).await.status, StatusCode::OK);
    assert_eq!(get(&app, HIDDEN_PART, "scoped", &[]).await.status, StatusCode::NOT_FOUND);
    let text = std::fs::read_to_string(&log).unwrap();
    let seen: Vec<(String, String, String, u64)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["action"] == "part")
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_string();
            (s("user"), s("action"), s("id"), l["status"].as_u64().unwrap())
        })
        .collect();
    let line = |user: &str, id: &str, status: u64| (user.to_string(), "part".to_string(), id.to_string(), status);
    let (open, hidden) = ("open-2@example.org/~2", "hidden-1@far.example/hidden-logo@far.example");
    let want = vec![
        line("scoped", open, 200),
        line("scoped", open, 200),
        line("scoped", open, 304),
        line("boss", open, 200),
        line("boss", hidden, 200),
        line("boss", hidden, 200),
        line("scoped", hidden, 404),
    ];
    assert_eq!(seen, want, "{text}");
}

/// One kept-alive connection to a real server: each answer is read by its own `Content-Length`, so
/// a length that does not match its body (the whole answer's on a range or a 304, the plain one on
/// a compressed answer) would throw every later answer on the connection out of step.
struct Connection(std::io::BufReader<std::net::TcpStream>);

impl Connection {
    fn ask(&mut self, method: &str, path: &str, headers: &[(&str, &str)]) -> crate::common::process::HttpReply {
        use std::io::{BufRead, Read, Write};
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        self.0.get_mut().write_all(req.as_bytes()).expect("send");
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let read = self.0.read_until(b'\n', &mut head).expect("head");
            assert!(read > 0, "{method} {path}: the connection closed");
        }
        let mut reply = crate::common::process::parse_reply(&head, true).expect("a whole head");
        let length = reply.header("content-length").map_or(0, |l| l.parse().expect("a length"));
        if method != "HEAD" {
            reply.body = vec![0; length];
            self.0.read_exact(&mut reply.body).expect("the body its length announces");
        }
        reply
    }
}

#[test]
fn kept_answers_announce_the_length_of_what_each_request_gets() {
    let data = tempfile::tempdir().expect("dir");
    let samples = crate::common::repo_path("samples");
    let served = crate::common::process::Served::start(data.path(), &[samples.to_str().expect("utf-8")]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !crate::common::process::get(served.addr, "/api/status")
        .is_ok_and(|r| String::from_utf8_lossy(&r.body).contains("\"ready\":true"))
    {
        assert!(std::time::Instant::now() < deadline, "never ready");
        std::thread::yield_now();
    }
    let stream = std::net::TcpStream::connect(served.addr).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    let mut c = Connection(std::io::BufReader::new(stream));
    let html = "/part/newsletter-2026-10@example.com/~1";
    let image = "/part/newsletter-2026-10@example.com/logo@example.com";
    for path in [html, image] {
        // The first answer is made, the second kept; then what the kept one gives each request.
        let made = c.ask("GET", path, &[]);
        let whole = c.ask("GET", path, &[]);
        assert_eq!((made.status, whole.status), (200, 200), "{path}");
        assert_eq!(whole.body, made.body, "{path}");
        assert!(whole.body.len() > 10, "{path}");
        let etag = whole.header("etag").expect("an ETag").to_string();
        let head = c.ask("HEAD", path, &[]);
        assert_eq!(head.header("content-length"), Some(whole.body.len().to_string().as_str()), "{path}");
        let ranged = c.ask("GET", path, &[("range", "bytes=2-11")]);
        assert_eq!((ranged.status, &ranged.body[..]), (206, &whole.body[2..12]), "{path}");
        let beyond = c.ask("GET", path, &[("range", "bytes=999999999-")]);
        assert_eq!((beyond.status, beyond.body.len()), (416, 0), "{path}");
        let same = c.ask("GET", path, &[("if-none-match", &etag)]);
        assert_eq!((same.status, same.body.len()), (304, 0), "{path}");
        let gzip = c.ask("GET", path, &[("accept-encoding", "gzip")]);
        assert_eq!(gzip.status, 200, "{path}");
        let plain = if gzip.header("content-encoding") == Some("gzip") {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzip.body[..]), &mut out).expect("gzip");
            out
        } else {
            gzip.body.clone()
        };
        assert_eq!(plain, whole.body, "{path}");
        // A request naming no coding still learns that one naming a coding may get another form
        // of a text, not of an image (which is never compressed).
        let vary = whole.header("vary").unwrap_or("").to_ascii_lowercase();
        assert_eq!(vary.contains("accept-encoding"), path == html, "{path}: {vary:?}");
        assert_eq!(gzip.header("content-encoding").is_some(), path == html, "{path}");
    }
}

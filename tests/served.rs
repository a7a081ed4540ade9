//! Answers of `/part/` kept whole are kept for each reader's folders: a part one reader was given
//! is still not found by a reader who may not read its message, a rewritten document whose
//! references resolve differently for two readers gives each their own bytes (and ETag), a kept
//! answer carries the sandbox of the server that made it, and every read of a kept answer is in
//! the audit log. Both backends.

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
        let conditions: [&[(&str, &str)]; 4] =
            [&[], &[("if-none-match", &etag)], &[("range", "bytes=0-9")], &[("accept-encoding", "gzip")]];
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
        assert_eq!(gunzip(&gzip.body), scoped.body, "{round}");
        let again = get(&app, OPEN_BODY, "boss", &[]).await;
        assert_eq!((again.status, &again.body), (StatusCode::OK, &boss.body), "{round}");
        let gzip = get(&app, OPEN_BODY, "boss", &[("accept-encoding", "gzip")]).await;
        assert_eq!(gunzip(&gzip.body), boss.body, "{round}");
    }
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
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

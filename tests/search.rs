//! Full-text search: each operator, non-ASCII text, ranking ties, bad queries, and messages that
//! arrive while running.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};

use crate::common::TestApp;

struct Mail<'a> {
    file: &'a str,
    from: &'a str,
    to: &'a str,
    subject: &'a str,
    date: &'a str,
    body: &'a str,
    attachment: Option<&'a str>,
    html: bool,
}

fn write(dir: &Path, m: &Mail<'_>) {
    let date = if m.date.is_empty() { String::new() } else { format!("Date: {}\r\n", m.date) };
    let head = format!(
        "From: {}\r\nTo: {}\r\nCc: carol@example.org\r\nSubject: {}\r\n{date}Message-ID: <{}@test>\r\nMIME-Version: 1.0\r\n",
        m.from, m.to, m.subject, m.file
    );
    let ct = if m.html { "text/html" } else { "text/plain" };
    let text = match m.attachment {
        None => format!("{head}Content-Type: {ct}; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{}\r\n", m.body),
        Some(name) => format!(
            "{head}Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: {ct}; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{}\r\n--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--b--\r\n",
            m.body,
            "JVBERi0xLjQK".repeat(600)
        ),
    };
    std::fs::write(dir.join(format!("{}.eml", m.file)), text).expect("write");
}

fn corpus(dir: &Path) {
    let mails = [
        Mail { file: "build", from: "Alice Martin <alice@example.org>", to: "dev@lists.example.org", subject: "Build fails on ARM", date: "Mon, 05 Oct 2026 09:45:12 +0000", body: "The linker crashes when building for aarch64.", attachment: None, html: false },
        Mail { file: "reply", from: "Bob Okafor <bob@example.com>", to: "dev@lists.example.org", subject: "Re: Build fails on ARM", date: "Mon, 05 Oct 2026 11:02:37 +0000", body: "Works for me with the nightly linker.", attachment: None, html: false },
        Mail { file: "invoice", from: "René Lefèvre <billing@lefevre.example>", to: "alice@example.org", subject: "Rechnung März", date: "Thu, 02 Apr 2026 10:15:00 +0200", body: "Anbei die Rechnung für den Café crème.", attachment: Some("Rechnung-2026-03.pdf"), html: false },
        Mail { file: "meeting", from: "山田 太郎 <yamada@example.jp>", to: "team@example.jp", subject: "定例会議のお知らせ", date: "Thu, 08 Oct 2026 17:30:00 +0900", body: "来週の定例会議は水曜日です。", attachment: None, html: false },
        Mail { file: "newsletter", from: "news@shop.example", to: "alice@example.org", subject: "Autumn offers", date: "Thu, 01 Oct 2026 09:00:00 +0200", body: "<html><head><style>.x{}</style></head><body><p>Warm <b>blankets</b> on sale</p><script>tracker()</script></body></html>", attachment: None, html: true },
        Mail { file: "old", from: "Alice Martin <alice@example.org>", to: "bob@example.com", subject: "Linker notes from 2019", date: "Tue, 05 Mar 2019 08:00:00 +0000", body: "Old notes about the linker.", attachment: Some("notes.pdf"), html: false },
        Mail { file: "undated", from: "dora@example.net", to: "frank@example.net", subject: "Memo without a date", date: "", body: "Plain words about the budget.", attachment: None, html: false },
        Mail { file: "scripts", from: "eleni@example.gr", to: "frank@example.net", subject: "Ακρόπολη", date: "Sun, 01 Feb 2026 10:00:00 +0000", body: "Σίσυφος οδός ΣΟΦΟΚΛΕΟΥΣ. ЁЖИК. ｶﾀｶﾅ. A nai\u{308}ve trip to Zu\u{308}rich. ขอบคุณสำหรับการประชุมวันนี้ ສະບາຍດີ សួស្តីពិភពលោក မင်္ဂလာပါ", attachment: None, html: false },
    ];
    for m in &mails {
        write(dir, m);
    }
}

async fn subjects(app: &TestApp, q: &str) -> BTreeSet<String> {
    let uri =
        format!("/api/messages?q={}", percent_encoding::utf8_percent_encode(q, percent_encoding::NON_ALPHANUMERIC));
    let list = app.json(&uri).await;
    list["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["subject"].as_str().unwrap_or("").to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn every_operator_finds_what_it_says() {
    if !crate::common::needs::chromium("every_operator_finds_what_it_says") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    corpus(dir.path());
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let build = "Build fails on ARM";
    let reply = "Re: Build fails on ARM";
    let invoice = "Rechnung März";
    let meeting = "定例会議のお知らせ";
    let news = "Autumn offers";
    let old = "Linker notes from 2019";
    let undated = "Memo without a date";
    let scripts = "Ακρόπολη";
    let cases: &[(&str, &[&str])] = &[
        ("linker", &[build, reply, old]),
        ("from:alice", &[build, old]),
        ("from:alice@example.org", &[build, old]),
        ("from:\"Alice Martin\"", &[build, old]),
        ("to:bob@example.com", &[old]),
        ("cc:carol", &[build, reply, invoice, meeting, news, old, undated, scripts]),
        ("subject:build", &[build, reply]),
        ("subject:\"fails on ARM\"", &[build, reply]),
        ("\"nightly linker\"", &[reply]),
        ("\"linker nightly\"", &[]),
        ("linker -subject:build", &[old]),
        ("linker -from:bob", &[build, old]),
        ("blankets OR aarch64", &[news, build]),
        ("(blankets OR aarch64) -from:alice", &[news]),
        ("has:attachment", &[invoice, old]),
        ("filename:rechnung", &[invoice]),
        ("filename:notes.pdf", &[old]),
        ("message-id:reply@test", &[reply]),
        ("message-id:<reply@test>", &[reply]),
        // A message without a date is in no date range.
        ("before:2026-01-01", &[old]),
        ("before:2026-03-01 after:2026-01-01", &[scripts]),
        ("budget", &[undated]),
        // Punctuation between words holds no word to look for; AND and NOT in capitals are
        // operators.
        ("nightly - linker", &[reply]),
        ("nightly & linker —", &[reply]),
        ("linker NOT nightly", &[build, old]),
        ("linker AND nightly", &[reply]),
        ("NOT (linker OR budget) subject:build", &[]),
        // `field:(…)`: the field for every term inside.
        ("subject:(build arm)", &[build, reply]),
        ("subject:(linker OR offers)", &[old, news]),
        ("linker -subject:(build)", &[old]),
        ("from:(bob OR martin)", &[build, reply, old]),
        ("after:2026-10-05", &[build, reply, meeting]),
        ("after:2026-10-01 before:2026-10-06", &[build, reply, news]),
        ("larger:5K", &[invoice, old]),
        ("smaller:5K subject:build", &[build, reply]),
        // Non-ASCII: accents fold both ways, CJK matches inside longer runs.
        ("cafe", &[invoice]),
        ("CAFÉ", &[invoice]),
        ("marz", &[invoice]),
        ("会議", &[meeting]),
        ("定例", &[meeting]),
        ("from:山田", &[meeting]),
        ("水曜日", &[meeting]),
        // Decomposed accents, compatibility forms, Greek and ё fold as the composed, plain forms.
        ("naive", &[scripts]),
        ("naïve zürich", &[scripts]),
        ("\"nai\u{308}ve trip\"", &[scripts]),
        ("σισυφος", &[scripts]),
        ("οδός", &[scripts]),
        ("Σοφοκλέους", &[scripts]),
        ("subject:ακροπολη", &[scripts]),
        ("ежик", &[scripts]),
        ("カタカナ", &[scripts]),
        // Thai, Lao, Khmer and Myanmar words are found inside the runs they are written in.
        ("การประชุม", &[scripts]),
        ("ประชุม วันนี้", &[scripts]),
        ("\"ประชุมเช้า\"", &[]),
        ("ສະບາຍ", &[scripts]),
        ("ពិភពលោក", &[scripts]),
        ("မင်္ဂလာ", &[scripts]),
        // A `*` after a word: every word that starts so, in any field, folded as words are.
        ("link*", &[build, reply, old]),
        ("build*", &[build, reply]),
        ("subject:link*", &[old]),
        ("from:ali*", &[build, old]),
        ("filename:rech*", &[invoice]),
        ("rechn* -filename:rech*", &[]),
        ("CAF*", &[invoice]),
        ("\"nightly lin*\"", &[reply]),
        ("\"the lin*\"", &[build, old]),
        ("定例会*", &[meeting]),
        ("ακροπ*", &[scripts]),
        ("zzz*", &[]),
        // HTML bodies are searched by their visible text only.
        ("blankets", &[news]),
        ("tracker", &[]),
    ];
    for (q, want) in cases {
        assert_eq!(subjects(&app, q).await, set(want), "{q}");
    }
}

#[tokio::test]
async fn results_are_ranked_paginated_and_highlighted() {
    if !crate::common::needs::chromium("results_are_ranked_paginated_and_highlighted") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    corpus(dir.path());
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    // Equal relevance: newest first.
    let list = app.json("/api/messages?q=cc:carol&limit=2").await;
    assert_eq!(list["total"], 8);
    let got: Vec<&str> =
        list["messages"].as_array().expect("list").iter().filter_map(|m| m["subject"].as_str()).collect();
    assert_eq!(got, ["定例会議のお知らせ", "Re: Build fails on ARM"]);
    let next = app.json("/api/messages?q=cc:carol&limit=2&offset=2").await;
    assert_eq!(next["messages"][0]["subject"], "Build fails on ARM");
    // Found by its subject alone: the snippet is the body's opening.
    let by_subject = app.json("/api/messages?q=subject:build&limit=10").await;
    let openings: BTreeSet<&str> =
        by_subject["messages"].as_array().expect("list").iter().filter_map(|m| m["snippet"].as_str()).collect();
    let want = ["The linker crashes when building for aarch64.", "Works for me with the nightly linker."];
    assert_eq!(openings, want.into_iter().collect(), "{by_subject}");
    let hit = app.json("/api/messages?q=aarch64").await;
    let snippet = hit["messages"][0]["snippet"].as_str().expect("snippet");
    assert!(snippet.contains("<mark>aarch64</mark>"), "{snippet}");
    let page = app.get("/?q=aarch64").await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.text();
    assert!(html.contains("<mark>aarch64</mark>") && html.contains("Build fails on ARM"));
    assert!(html.contains("value=\"aarch64\""), "the search box keeps the query");
    // A word's start marks the words it found.
    let starts = app.json("/api/messages?q=crash*%20aarch*").await;
    let snippet = starts["messages"][0]["snippet"].as_str().expect("snippet");
    assert!(snippet.contains("<mark>crashes</mark>") && snippet.contains("<mark>aarch64</mark>"), "{snippet}");
}

#[tokio::test]
async fn bad_queries_get_a_clear_message() {
    if !crate::common::needs::chromium("bad_queries_get_a_clear_message") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    corpus(dir.path());
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    // Among them: a query that holds no word (it would otherwise list, and export, everything),
    // and a word's start of one letter.
    for q in [
        "%22unclosed",
        "before%3Ayesterday",
        "larger%3Ahuge",
        "(a",
        "has%3Awings",
        "a%20OR",
        "---",
        "%26",
        "%FF",
        "e*",
        "NOT",
        "AND%20AND",
    ] {
        let r = app.get(&format!("/api/messages?q={q}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{q}");
        assert_eq!(r.header("content-type"), "application/problem+json");
        let p: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        assert!(p["detail"].as_str().is_some_and(|d| d.starts_with("bad search query")), "{p}");
        let page = app.get(&format!("/?q={q}")).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST);
        assert!(page.text().contains("That search could not run"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploaded_and_delivered_messages_are_found() {
    if !crate::common::needs::chromium("uploaded_and_delivered_messages_are_found") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    corpus(dir.path());
    let paths = [dir.path().to_path_buf()];
    let app = TestApp::new(&paths);
    let upload = "From: up@example.com\r\nSubject: Uploaded\r\nMessage-ID: <u1@x>\r\n\r\nzeppelin hangar\r\n";
    let r = app
        .request(
            Request::post("/api/messages")
                .header("content-type", "message/rfc822")
                .body(Body::from(upload))
                .expect("req"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(subjects(&app, "zeppelin").await, set(&["Uploaded"]));

    let _watcher = mailshelf::archive::watch::watch(app.archive.clone(), app.archive.roots(&paths)).expect("watch");
    std::fs::write(
        dir.path().join("dropped.eml"),
        "From: d@example.com\r\nSubject: Dropped in\r\nMessage-ID: <d1@x>\r\n\r\nquokka sighting\r\n",
    )
    .expect("write");
    let deadline = Instant::now() + Duration::from_secs(30);
    while subjects(&app, "quokka").await.is_empty() {
        assert!(Instant::now() < deadline, "the dropped message was not found");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Deleted uploads leave the results, and survive nothing.
    let r = app.request(Request::delete("/api/messages/u1@x").body(Body::empty()).expect("req")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(subjects(&app, "zeppelin").await.is_empty());
    // After a restart the search index is still in line.
    drop(_watcher);
    let app = app.restart(&paths);
    assert_eq!(subjects(&app, "quokka").await, set(&["Dropped in"]));
    assert_eq!(subjects(&app, "linker").await.len(), 3);
}

/// Each folder of the tree with its path, its own count and the count of it with every folder
/// below it.
fn subtrees(nodes: &serde_json::Value, out: &mut Vec<(String, u64, u64)>) -> u64 {
    let mut sum = 0;
    for f in nodes.as_array().expect("folders") {
        let own = f["messages"].as_u64().expect("count");
        let at = out.len();
        out.push((f["path"].as_str().expect("path").to_string(), own, 0));
        let below = subtrees(&f["folders"], out);
        out[at].2 = own + below;
        sum += own + below;
    }
    sum
}

/// `folder:` finds what the folder tree counts in that folder and below it, when several trees
/// are served whose folders differ only by case (a Maildir's `INBOX` beside a mail client's
/// `Inbox`, `Work` beside `work`), nest (Maildir++ `.Work.Projects`, Thunderbird's `Inbox.sbd`),
/// or are named with quotes; and a folder's page lists what the tree counts as its own.
#[tokio::test]
async fn folder_search_counts_what_the_folder_tree_counts() {
    if !crate::common::needs::chromium("folder_search_counts_what_the_folder_tree_counts") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let (maildir, client) = (dir.path().join("maildir"), dir.path().join("client"));
    for sub in ["cur", "new", ".Work.Projects/cur", ".Work.Projects/new"] {
        std::fs::create_dir_all(maildir.join(sub)).expect("mkdir");
    }
    std::fs::create_dir_all(client.join("Inbox.sbd")).expect("mkdir");
    let message = |tag: &str, n: usize| {
        format!(
            "From: sender@example.org\nSubject: {tag} {n}\nMessage-ID: <{tag}-{n}@folders.test>\n\
             Date: Mon, {n} Jan 2024 10:00:00 +0000\n\nbody {tag} {n}\n"
        )
    };
    let mbox = |tag: &str, count: usize| {
        (1..=count)
            .map(|n| format!("From sender@example.org Mon Jan  1 00:00:00 2024\n{}\n", message(tag, n)))
            .collect::<String>()
    };
    for n in 1..=3 {
        std::fs::write(maildir.join(format!("cur/{n}.host:2,S")), message("maildir-inbox", n)).expect("write");
    }
    std::fs::write(maildir.join(".Work.Projects/cur/1.host:2,S"), message("projects", 1)).expect("write");
    std::fs::write(client.join("Inbox"), mbox("client-inbox", 2)).expect("write");
    std::fs::write(client.join("Inbox.sbd/Sub"), mbox("client-sub", 1)).expect("write");
    std::fs::write(client.join("work"), mbox("client-work", 2)).expect("write");
    std::fs::write(client.join("Notes \"2024\""), mbox("notes", 1)).expect("write");

    let app = TestApp::new(&[maildir, client]);
    let mut nodes = Vec::new();
    let all = subtrees(&app.json("/api/folders").await["folders"], &mut nodes);
    assert_eq!(all, 10, "every message is in a folder: {nodes:?}");
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string();
    for (path, own, with_below) in &nodes {
        // As the folder page's search box restricts a search, and as a person types it.
        let mut queries = vec![format!("folder:\"{}\"", path.replace('"', ""))];
        if !path.contains([' ', '"']) {
            queries.push(format!("folder:{}", path.to_lowercase()));
        }
        for q in queries {
            let found = app.json(&format!("/api/messages?q={}", enc(&q))).await["total"].as_u64();
            assert_eq!(found, Some(*with_below), "{q} against the tree's {path}: {nodes:?}");
        }
        let listed = app.json(&format!("/api/messages?folder={}", enc(path))).await["total"].as_u64();
        assert_eq!(listed, Some(*own), "the page of {path}: {nodes:?}");
    }
}

/// A message met first enclosed in another (a forward), then found on its own in a folder, is
/// listed there from then on; `folder:` and a search for its words find it there too.
#[tokio::test]
async fn a_message_first_found_enclosed_is_searchable_in_its_folder() {
    if !crate::common::needs::chromium("a_message_first_found_enclosed_is_searchable_in_its_folder") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let inner = "From: origin@example.org\r\nSubject: the original\r\nMessage-ID: <original@folders.test>\r\n\
                 Date: Mon, 1 Jan 2024 09:00:00 +0000\r\n\r\nquetzalcoatl\r\n";
    let forward = format!(
        "From: forwarder@example.org\r\nSubject: Fwd: the original\r\nMessage-ID: <forward@folders.test>\r\n\
         Date: Mon, 1 Jan 2024 10:00:00 +0000\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nsee below\r\n--b\r\nContent-Type: message/rfc822\r\n\r\n{inner}\r\n--b--\r\n"
    );
    std::fs::write(dir.path().join("forward.eml"), forward).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    assert_eq!(app.json("/api/status").await["messages"], 1);

    std::fs::create_dir_all(dir.path().join("Lists")).expect("mkdir");
    std::fs::write(dir.path().join("Lists/original.eml"), inner).expect("write");
    app.archive.ingest_paths(&[dir.path().to_path_buf()]);
    let folders = app.json("/api/folders").await;
    assert_eq!(folders["folders"][0]["path"], "Lists", "{folders}");
    assert_eq!(folders["folders"][0]["messages"], 1, "{folders}");
    for q in ["folder:Lists", "quetzalcoatl folder:lists", "from:origin@example.org"] {
        let found = app.json(&format!("/api/messages?q={}", q.replace(' ', "+"))).await;
        assert_eq!(found["total"], 1, "{q}: {found}");
        assert_eq!(found["messages"][0]["id"], "original@folders.test", "{q}: {found}");
    }
}

/// A phrase far into a long document is found, on either backend: a text attachment of 40,000
/// words (past the 16,383 positions PostgreSQL keeps for one field, where it is cut into
/// passages) and a body in which one word comes 600 times (past PostgreSQL's 256 places a word).
/// `matched_in` names the document, and a phrase across the end of the text finds nothing.
#[tokio::test]
async fn phrases_far_into_long_texts_are_found() {
    let dir = tempfile::tempdir().expect("dir");
    let ledger: String = (0..40_000).map(|i| format!("entry{i} ")).collect();
    let repeated = format!("{}ledger closed", "posted ".repeat(600));
    let mail = format!(
        "From: Ann <ann@example.org>\r\nSubject: The ledger\r\nMessage-ID: <ledger@test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n{repeated}\r\n\
         --b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"ledger.txt\"\r\n\r\n{ledger}\r\n--b--\r\n"
    );
    std::fs::write(dir.path().join("ledger.eml"), mail).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for (q, want) in [
        ("\"entry39998 entry39999\"", 1),
        ("\"entry20000 entry20001 entry20002\"", 1),
        ("attachment:\"entry30000 entry30001\"", 1),
        ("body:\"entry30000 entry30001\"", 0),
        ("\"posted ledger closed\"", 1),
        ("\"entry39999 entry0\"", 0),
    ] {
        assert_eq!(subjects(&app, q).await.len(), want, "{q}");
    }
    let uri = "/api/messages?q=%22entry30000%20entry30001%22";
    let list = app.json(uri).await;
    assert_eq!(list["messages"][0]["matched_in"], serde_json::json!(["ledger.txt"]), "{list}");
}

/// A message with a text and an HTML version is found by the words of either: its page shows the
/// HTML, and the two seldom say the same words.
#[tokio::test]
async fn both_versions_of_a_message_are_searched() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("both.eml"),
        "From: a@example.org\r\nSubject: Versions\r\nMessage-ID: <both@test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\
         This is the plain text. Reset: https://example.org/reset\r\n--b\r\nContent-Type: text/html\r\n\r\n\
         <p>This is what <b>displays</b> in most modern email clients. <a href=\"https://example.org/reset\">Reset</a></p>\r\n--b--\r\n",
    )
    .expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    for (q, found) in [
        ("plain", true),
        ("reset", true),
        ("modern", true),
        ("\"displays in most modern\"", true),
        ("body:clients", true),
        ("\"plain modern\"", false),
    ] {
        assert_eq!(subjects(&app, q).await, if found { set(&["Versions"]) } else { set(&[]) }, "{q}");
    }
    let list = app.json("/api/messages?q=modern").await;
    let snippet = list["messages"][0]["snippet"].as_str().unwrap_or("");
    assert!(snippet.contains("<mark>modern</mark>"), "{snippet}");
}

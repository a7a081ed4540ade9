//! Browsing as a mail client does: folder trees of every layout mail clients write (built from
//! corpus messages where the corpus has none), labels, conversations and the overview, through the
//! API and the pages.

use std::path::{Path, PathBuf};

use crate::common::{corpus_dir, files_with_ext, TestApp};

/// Every folder in `/api/folders`, flattened: (path, own messages).
fn flatten(v: &serde_json::Value, out: &mut Vec<(String, u64)>) {
    for f in v.as_array().expect("folders") {
        out.push((f["path"].as_str().expect("path").to_string(), f["messages"].as_u64().expect("count")));
        flatten(&f["folders"], out);
    }
}

async fn folders(app: &TestApp) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    flatten(&app.json("/api/folders").await["folders"], &mut out);
    out
}

/// `count` messages as an mbox, each with a Message-ID made from `tag`, and `extra` header lines.
fn mbox(tag: &str, count: usize, extra: &dyn Fn(usize) -> String) -> String {
    (0..count)
        .map(|i| {
            format!(
                "From sender@example.org Mon Jan  1 00:00:00 2024\nFrom: Sender {i} <s{i}@example.org>\nSubject: {tag} {i}\nDate: Mon, {} Jan 2024 10:00:00 +0000\nMessage-ID: <{tag}-{i}@example.org>\n{}\nbody {tag} {i}\n\n",
                i % 28 + 1,
                extra(i)
            )
        })
        .collect()
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

#[tokio::test]
async fn maildir_folders_of_a_real_tree() {
    if !crate::common::needs::corpus("maildir_folders_of_a_real_tree") {
        return;
    }
    // notmuch's corpus: a Maildir with cur/ and new/ at the top and folders below (`bar/baz`).
    let root = corpus_dir().join("notmuch/test/corpora/default");
    let files = crate::common::walk(&root);
    assert!(files.len() > 40, "the corpus Maildir is there ({})", files.len());
    // Files with the same bytes are one message in each folder they are filed in.
    let mut copies: std::collections::HashSet<(Vec<u8>, String)> = Default::default();
    for f in &files {
        let rel = f.parent().expect("dir").strip_prefix(&root).expect("under root").to_string_lossy().into_owned();
        let folder = rel.trim_end_matches("/cur").trim_end_matches("/new").to_string();
        let folder = if matches!(folder.as_str(), "cur" | "new") { "INBOX".to_string() } else { folder };
        copies.insert((std::fs::read(f).expect("read"), folder));
    }
    let mut want: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for (_, home) in &copies {
        want.entry(home.clone()).or_default().0 += 1;
    }
    let app = TestApp::new(&[root]);
    let tree = app.json("/api/folders").await;
    let got: std::collections::BTreeMap<String, u64> =
        folders(&app).await.into_iter().filter(|(_, n)| *n > 0).collect();
    for (folder, (sure, maybe)) in &want {
        let n =
            if folder.is_empty() { tree["top"].as_u64().expect("top") } else { got.get(folder).copied().unwrap_or(0) };
        assert!((*sure..=sure + maybe).contains(&n), "{folder}: {n} of {sure}+{maybe}: {got:?}");
    }
    let listed = app.json("/api/messages?limit=1").await["total"].as_u64().expect("total");
    assert_eq!(got.values().sum::<u64>() + tree["top"].as_u64().expect("top"), listed);
    assert_eq!(listed, copies.len() as u64);
    assert!(got.contains_key("bar/baz"), "{got:?}");
    let own = app.json("/api/messages?folder=bar").await;
    assert_eq!(own["total"].as_u64(), got.get("bar").copied());
    let below = app.json("/api/messages?q=folder:bar&limit=1").await;
    let bar_all: u64 = got.iter().filter(|(k, _)| *k == "bar" || k.starts_with("bar/")).map(|(_, n)| n).sum();
    assert_eq!(below["total"].as_u64(), Some(bar_all), "a prefix covers the folders below it");
}

#[tokio::test]
async fn maildir_plus_plus_names_are_folder_paths() {
    if !crate::common::needs::corpus("maildir_plus_plus_names_are_folder_paths") {
        return;
    }
    // The layout of mail-parser's Maildir++ sample (whose files are stubs), with real messages in it.
    let dir = tempfile::tempdir().expect("dir");
    let sample = corpus_dir().join("stalwart-mail-parser/resources/maildir");
    assert!(sample.join(".My Folder.Nested Folder/cur").is_dir(), "the corpus Maildir++ sample is there");
    let msg = |n: u32| format!("From: a@b\nSubject: n{n}\nMessage-ID: <pp{n}@x>\n\nbody\n");
    write(&dir.path().join("cur/1.host:2,S"), msg(1));
    write(&dir.path().join(".My Folder/cur/2.host:2,S"), msg(2));
    write(&dir.path().join(".My Folder.Nested Folder/new/3.host"), msg(3));
    write(&dir.path().join(".My Folder.Nested Folder/cur/4.host:2,RS"), msg(4));
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    assert_eq!(
        folders(&app).await,
        [("INBOX".to_string(), 1), ("My Folder".into(), 1), ("My Folder/Nested Folder".into(), 2)]
    );
    assert_eq!(app.json("/api/messages?folder=My%20Folder/Nested%20Folder").await["total"], 2);
    assert_eq!(app.json("/api/messages?q=folder:%22my%20folder%22").await["total"], 3);
    let page = app.get("/folder/My%20Folder/Nested%20Folder").await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("Folder My Folder/Nested Folder"));
    assert!(page.text().contains(r#"<strong aria-current="page">Nested Folder</strong>"#));
}

/// A tree as a mail client writes it: its name, its files, and the folders shown for it (path,
/// own messages).
type Layout<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, u64)]);

/// KMail keeps the subfolders of `X` in `.X.directory/` beside it, as Maildirs (or mbox files);
/// Dovecot and Courier write a Maildir folder's name in IMAP's modified UTF-7, in Maildir++ and in
/// Dovecot's `LAYOUT=fs` alike. Each is shown as the mail client shows it. A Maildir++ folder
/// copied without its empty `cur/` (zip and git keep no empty folder) is a folder still.
#[tokio::test]
async fn maildir_folders_are_named_as_their_clients_show_them() {
    let msg =
        |n: usize| format!("From: a@example.org\nSubject: n{n}\nMessage-ID: <layout{n}@example.org>\n\nbody {n}\n");
    let cases: &[Layout] = &[
        (
            "kmail",
            &[
                "inbox/cur/1.host:2,S",
                "inbox/new/2.host",
                ".inbox.directory/Lists/cur/3.host:2,S",
                ".inbox.directory/.Lists.directory/rust/new/4.host",
                "sent-mail/cur/5.host:2,S",
            ],
            &[("inbox", 2), ("inbox/Lists", 1), ("inbox/Lists/rust", 1), ("sent-mail", 1)],
        ),
        (
            "maildir++",
            &[
                "cur/1.host:2,S",
                ".Entw&APw-rfe/cur/2.host:2,S",
                ".Archiv.&AMQ-lter/cur/3.host:2,",
                ".R&-D/cur/4.host:2,",
            ],
            &[("INBOX", 1), ("Archiv", 0), ("Archiv/Älter", 1), ("Entwürfe", 1), ("R&D", 1)],
        ),
        (
            "dovecot fs",
            &["INBOX/cur/1.host:2,S", "&ZeVnLIqe-/cur/2.host:2,S", "&ZeVnLIqe-/Sub/new/3.host"],
            &[("INBOX", 1), ("日本語", 1), ("日本語/Sub", 1)],
        ),
        (
            "copied without empty folders",
            &["new/1.host", ".Lists.rust/new/2.host", ".Lists.rust/new/3.host"],
            &[("INBOX", 1), ("Lists", 0), ("Lists/rust", 2)],
        ),
    ];
    for (name, files, want) in cases {
        let dir = tempfile::tempdir().expect("dir");
        for (n, file) in files.iter().enumerate() {
            write(&dir.path().join(file), msg(n));
        }
        let app = TestApp::new(&[dir.path().to_path_buf()]);
        let want: Vec<(String, u64)> = want.iter().map(|(p, n)| (p.to_string(), *n)).collect();
        assert_eq!(folders(&app).await, want, "{name}");
        assert_eq!(app.json("/api/status").await["messages"], files.len(), "{name}: every message listed");
    }
}

#[tokio::test]
async fn thunderbird_apple_mail_and_mbox_trees() {
    if !crate::common::needs::corpus("thunderbird_apple_mail_and_mbox_trees") {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let tb = dir.path().join("Thunderbird");
    write(&tb.join("Inbox"), mbox("inbox", 3, &|_| String::new()));
    write(&tb.join("Inbox.msf"), "// Mork index, not mail\n");
    write(&tb.join("Archives.sbd/2017"), mbox("arch2017", 2, &|_| String::new()));
    write(&tb.join("Archives.sbd/2017.sbd/March"), mbox("march", 1, &|_| String::new()));
    let emlx = files_with_ext(&corpus_dir().join("emlx-rs/tests/emails"), &["emlx"]);
    let good: Vec<&PathBuf> = emlx.iter().filter(|p| !p.to_string_lossy().contains("broken")).collect();
    assert!(good.len() >= 3, "the corpus has .emlx files");
    let apple = dir.path().join("Apple");
    for (i, p) in good.iter().enumerate() {
        let mailbox = if i == 0 { "Work.mbox/Projects.mbox" } else { "INBOX.mbox" };
        let to = apple.join(format!("{mailbox}/1F2E-UUID/Data/{i}/Messages/{}.emlx", 100 + i));
        write(&to, std::fs::read(p).expect("read"));
    }
    let app = TestApp::new(&[tb, apple]);
    // Apple Mail's `INBOX` and Thunderbird's `Inbox` are one inbox, spelled as first met.
    let got: Vec<(String, u64)> = folders(&app)
        .await
        .into_iter()
        .map(|(path, n)| (if path.eq_ignore_ascii_case("inbox") { "INBOX".to_string() } else { path }, n))
        .collect();
    let want: Vec<(String, u64)> = vec![
        ("INBOX".into(), good.len() as u64 - 1 + 3),
        ("Archives".into(), 0),
        ("Archives/2017".into(), 2),
        ("Archives/2017/March".into(), 1),
        ("Work".into(), 0),
        ("Work/Projects".into(), 1),
    ];
    let mut sorted = got.clone();
    sorted.sort();
    let mut want_sorted = want.clone();
    want_sorted.sort();
    assert_eq!(sorted, want_sorted, "{got:?}");
    let archives = app.json("/api/messages?q=folder:Archives").await;
    assert_eq!(archives["total"], 3, "folder: covers the folders below");
    let own = app.json("/api/messages?folder=Archives/2017").await;
    assert_eq!(own["total"], 2, "a folder lists its own messages");
    let list = app.get("/").await.text();
    for name in ["Archives", "2017", "March", "Projects"] {
        assert!(list.contains(&format!(">{name}</")), "{name} in the tree");
    }
}

#[tokio::test]
async fn gmail_labels_and_maildir_keywords() {
    let dir = tempfile::tempdir().expect("dir");
    let takeout = dir.path().join("Takeout/Mail/All mail Including Spam and Trash.mbox");
    write(
        &takeout,
        mbox("gm", 4, &|i| match i {
            0 => "X-Gmail-Labels: Inbox,Important,\"Work, 2017\"".into(),
            1 => "X-Gmail-Labels: Archived,work, 2017".into(),
            2 => "X-Gmail-Labels: Inbox".into(),
            _ => "X-GM-THRID: 1".into(),
        }),
    );
    let maildir = dir.path().join("Maildir");
    write(&maildir.join("dovecot-keywords"), "0 $Travel\n1 receipts\n");
    let one = "From: a@example.org\nSubject: trip\nMessage-ID: <kw1@example.org>\n\nbooked\n";
    write(&maildir.join("cur/1.host:2,Sab"), one);
    write(&maildir.join("cur/2.host:2,S"), one.replace("kw1", "kw2"));
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let labels = app.json("/api/labels").await;
    let got: Vec<(String, u64)> = labels["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .map(|l| (l["name"].as_str().expect("name").to_string(), l["messages"].as_u64().expect("n")))
        .collect();
    let want: Vec<(String, u64)> = [
        ("$Travel", 1),
        ("Archived", 1),
        ("Important", 1),
        ("Inbox", 2),
        ("receipts", 1),
        ("work", 1),
        ("Work, 2017", 1),
        ("2017", 1),
    ]
    .iter()
    .map(|(n, c)| (n.to_string(), *c))
    .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    let mut want_sorted = want;
    want_sorted.sort();
    assert_eq!(got_sorted, want_sorted, "{got:?}");
    assert_eq!(app.json("/api/messages?q=label:inbox").await["total"], 2);
    assert_eq!(app.json("/api/messages?q=label:%22work,%202017%22").await["total"], 1);
    assert_eq!(app.json("/api/messages?label=RECEIPTS").await["total"], 1);
    assert_eq!(app.json("/api/messages?label=work,%202017").await["total"], 1, "a label holding a comma");
    assert_eq!(app.json("/api/messages?label=nowhere").await["total"], 0);
    let kw = app.json("/api/messages/kw1@example.org").await;
    assert_eq!(kw["flags"], "S", "keyword letters name labels, not flags: {kw}");
    let page = app.get("/label/Inbox").await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("Label Inbox"));
    assert!(page.text().contains("gm 0") && page.text().contains("gm 2") && !page.text().contains("gm 1<"));
    let message = app.get("/thread/gm-0@example.org").await.text();
    assert!(message.contains(r#"class="badge label" href="/label/Important""#), "labels shown on messages");
    let page = app.get("/message/gm-0@example.org").await.text();
    assert!(page.contains(r#"href="/folder/Takeout/Mail/All%20mail%20Including%20Spam%20and%20Trash""#), "{page}");
    assert!(page.contains(r#"href="/label/Work%2C%202017""#) || page.contains(r#"href="/label/Work,%202017""#));
    // The CSV export names each message's folder and labels, and exports one label's messages.
    let csv = app.get("/api/export?format=csv&label=inbox").await;
    assert_eq!(csv.status, 200, "{}", csv.text());
    assert!(csv.header("content-disposition").contains("mailshelf-label_inbox.csv"), "named for the label");
    let text = csv.text();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows.iter().all(|r| r.contains("Takeout/Mail/All mail Including Spam and Trash")), "{text}");
    assert!(
        text.contains("Inbox; Important; \"Work, 2017\"") || text.contains("Inbox; Important; Work, 2017"),
        "{text}"
    );
    let takeout_folder = app.json("/api/folders").await;
    assert!(takeout_folder.to_string().contains("Takeout/Mail/All mail Including Spam and Trash"));
}

#[tokio::test]
async fn uploads_are_a_folder_of_their_own() {
    let app = TestApp::new(&[]);
    let req = axum::http::Request::post("/api/messages")
        .header("content-type", "message/rfc822")
        .body(axum::body::Body::from("From: a@b\nSubject: up\nMessage-ID: <up@x>\n\nhi\n"))
        .expect("request");
    assert_eq!(app.request(req).await.status, 201);
    assert_eq!(folders(&app).await, [("Uploads".to_string(), 1)]);
    assert_eq!(app.json("/api/messages?folder=Uploads").await["total"], 1);
}

#[tokio::test]
async fn conversations_group_a_real_thread() {
    if !crate::common::needs::corpus("conversations_group_a_real_thread") {
        return;
    }
    let thread_dir = corpus_dir().join("notmuch/test/corpora/lkml");
    let files = crate::common::walk(&thread_dir);
    assert!(files.len() > 50, "the corpus LKML thread is there ({})", files.len());
    let app = TestApp::new(&[thread_dir]);
    let messages = app.json("/api/messages?limit=1").await["total"].as_u64().expect("total");
    let threads = app.json("/api/messages?threads=1&limit=1000").await;
    let groups = threads["threads"].as_array().expect("threads");
    assert_eq!(threads["total"].as_u64(), Some(groups.len() as u64));
    let grouped: u64 = groups.iter().map(|g| g["messages"].as_u64().expect("n")).sum();
    assert_eq!(grouped, messages, "every message is in one conversation");
    assert!(groups.len() < messages as usize / 2, "{} conversations of {messages}", groups.len());
    let biggest = groups.iter().max_by_key(|g| g["messages"].as_u64()).expect("one");
    assert!(!biggest["participants"].as_array().expect("names").is_empty());
    let page = app.get(biggest["url"].as_str().expect("url")).await;
    assert_eq!(page.status, 200);
    let html = page.text();
    let shown = html.matches("<article").count() as u64;
    assert_eq!(shown, biggest["messages"].as_u64().expect("n").min(100), "every message on one page");
    assert!(html.contains(r#"<details class="quoted"><summary>Quoted text</summary>"#), "quotes folded");
    assert_only_our_script(&html);
    let list = app.get("/?threads=1").await.text();
    assert!(list.contains("<strong>Conversations</strong>"));
}

#[tokio::test]
async fn the_overview_counts_and_draws_without_script() {
    if !crate::common::needs::corpus("the_overview_counts_and_draws_without_script") {
        return;
    }
    let dir = corpus_dir().join("apache-ponymail-unit-tests/corpus");
    let mboxes = files_with_ext(&dir, &["mbox"]);
    assert!(mboxes.len() > 10, "the corpus has list archives");
    let app = TestApp::new(&mboxes[..6]);
    let total = app.json("/api/messages?limit=1").await["total"].as_u64().expect("total");
    let stats = app.json("/api/stats").await;
    assert_eq!(stats["messages"].as_u64(), Some(total));
    let per_period: u64 =
        stats["periods"].as_array().expect("periods").iter().map(|c| c["messages"].as_u64().unwrap()).sum();
    assert_eq!(per_period + stats["undated"].as_u64().expect("undated"), total);
    assert!(!stats["senders"].as_array().expect("senders").is_empty());
    assert!(!stats["lists"].as_array().expect("lists").is_empty(), "List-Id counted");
    let list = stats["lists"][0]["query"].as_str().expect("a query per list").to_string();
    let by_list = app.json(&format!("/api/messages?q={}", urlencode(&list))).await;
    assert_eq!(by_list["total"], stats["lists"][0]["messages"]);
    let scoped = app.json(&format!("/api/stats?q={}", urlencode(&list))).await;
    assert_eq!(scoped["messages"], stats["lists"][0]["messages"]);
    let page = app.get("/overview").await;
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.matches("<svg").count() >= 2, "charts drawn");
    assert_only_our_script(&html);
    let folder = std::path::Path::new(&mboxes[0]).file_stem().expect("stem").to_string_lossy().into_owned();
    let one = app.get(&format!("/overview?folder={}", urlencode(&folder))).await;
    assert_eq!(one.status, 200);
    assert!(one.text().contains(&format!("Overview of folder {folder}")));
    assert_eq!(app.get("/overview?q=from:").await.status, 200, "an empty field searches everything");
    assert_eq!(app.get("/overview?q=(").await.status, 400);
}

/// The page's one script is mailshelf's own keyboard file, pinned by its hash; nothing a message
/// wrote runs.
fn assert_only_our_script(html: &str) {
    let scripts: Vec<&str> = html.split("<script").skip(1).collect();
    assert_eq!(scripts.len(), 1, "one script");
    assert!(scripts[0].contains("/static/keys") && scripts[0].contains("integrity=\"sha256-"), "{}", scripts[0]);
}

fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_keeps_folder_counts_current() {
    let mail = tempfile::tempdir().expect("dir");
    let msg = |n: u32| format!("From: a@b\nSubject: n{n}\nMessage-ID: <watch{n}@x>\n\nbody\n");
    write(&mail.path().join(".Lists.rust/cur/1.host:2,S"), msg(1));
    std::fs::create_dir_all(mail.path().join(".Lists.rust/new")).expect("mkdir");
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    let _watcher = mailshelf::archive::watch::watch(app.archive.clone(), app.archive.roots(&paths)).expect("watch");
    assert_eq!(folders(&app).await, [("Lists".to_string(), 0), ("Lists/rust".into(), 1)]);
    write(&mail.path().join(".Lists.rust/new/2.host"), msg(2));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.archive.find("watch2@x").is_none() {
        assert!(std::time::Instant::now() < deadline, "the delivered message arrives");
        tokio::task::yield_now().await;
        std::thread::yield_now();
    }
    assert_eq!(folders(&app).await, [("Lists".to_string(), 0), ("Lists/rust".into(), 2)]);
}

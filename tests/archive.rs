//! Archives as they are kept: Maildir and mbox trees from the corpus (counted independently),
//! restarts that re-read only what changed, duplicate and missing Message-IDs, new mail appearing
//! while running, and a `kill -9` in the middle of indexing.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::{corpus_dir, gzip, walk, TestApp};

/// Distinct contents in each folder among the files of a Maildir tree (its `cur/`, `new/` and, as notmuch's corpus
/// has them, plain message files), leaving out `tmp/` and hidden files.
fn maildir_messages(dir: &Path) -> usize {
    let files: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| {
            let rel = p.strip_prefix(dir).unwrap_or(p);
            !rel.components().any(|c| c.as_os_str() == "tmp")
                && !rel.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    // The same bytes are one message in each Maildir folder they are filed in.
    let folder = |f: &Path| {
        let dir = f.parent().unwrap_or(f);
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("cur" | "new") => dir.parent().unwrap_or(dir).to_path_buf(),
            _ => dir.to_path_buf(),
        }
    };
    let distinct: HashSet<(Vec<u8>, PathBuf)> =
        files.iter().map(|f| (std::fs::read(f).expect("read"), folder(f))).collect();
    distinct.len()
}

#[tokio::test]
async fn maildir_trees_are_indexed_with_flags() {
    if !crate::common::needs::corpus("maildir_trees_are_indexed_with_flags") {
        return;
    }
    let corpus = corpus_dir();
    let trees = ["notmuch/test/corpora/default", "mu/testdata/testdir", "mu/testdata/testdir2"];
    for tree in trees {
        let dir = corpus.join(tree);
        let want = maildir_messages(&dir);
        assert!(want > 0, "{tree}: no Maildir messages found");
        let app = TestApp::new(std::slice::from_ref(&dir));
        assert_eq!(app.archive.index().listed_count(), want, "{tree}");
    }
    // Flags from the file name are shown.
    let app = TestApp::new(&[corpus.join("mu/testdata/testdir")]);
    let flagged = app
        .archive
        .index()
        .entries()
        .filter(|(_, e)| matches!(&e.location, mailshelf::index::Location::Top { flags: Some(f), .. } if !f.is_empty()))
        .count();
    assert!(flagged > 0, "Maildir flags read from file names");
}

/// `From ` lines at the start of a line: the count an mbox reader must find (mboxrd escapes the
/// rest). Counted with a plain scan, independently of the splitter.
fn from_lines(data: &[u8]) -> usize {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    data.split(|&c| c == b'\n').filter(|l| l.starts_with(b"From ")).count()
}

#[tokio::test]
async fn mbox_files_split_into_every_message() {
    if !crate::common::needs::corpus("mbox_files_split_into_every_message") {
        return;
    }
    let dir = corpus_dir().join("apache-ponymail-unit-tests/corpus");
    let mut files: Vec<PathBuf> =
        walk(&dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "mbox")).collect();
    files.sort();
    assert!(files.len() >= 25, "ponymail mbox files: {}", files.len());
    let (mut total, mut agree) = (0, 0);
    for f in &files {
        let data = std::fs::read(f).expect("read");
        let want = from_lines(&data);
        let got = mailshelf::ingest::split_mbox(&data).len();
        total += 1;
        if got == want {
            agree += 1;
        } else {
            println!("{}: {got} messages, {want} From lines", f.display());
        }
    }
    assert_eq!(agree, total, "every ponymail mbox splits at its From lines");

    // MimeKit's Content-Length mbox, against the offsets MimeKit records for it.
    let mk = corpus_dir().join("mimekit/UnitTests/TestData/mbox");
    let data = std::fs::read(mk.join("content-length.mbox.txt")).expect("read");
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(mk.join("content-length.unix-offsets.json")).expect("read"))
            .expect("json");
    let want: Vec<(u64, u64)> = expected
        .as_array()
        .expect("array")
        .iter()
        .map(|m| (m["beginOffset"].as_u64().expect("begin"), m["endOffset"].as_u64().expect("end")))
        .collect();
    let got: Vec<(u64, u64)> = mailshelf::ingest::split_mbox(&data).into_iter().map(|(o, l)| (o, o + l)).collect();
    assert_eq!(got, want, "message ranges match MimeKit's offsets");

    // Served: every message of one list archive is listed.
    let one = dir.join("maven-dev-2017-11-listsao.mbox");
    let app = TestApp::new(std::slice::from_ref(&one));
    let distinct: HashSet<Vec<u8>> = mailshelf::ingest::split_mbox(&std::fs::read(&one).expect("read"))
        .into_iter()
        .map(|(o, l)| {
            mailshelf::ingest::Source::Mbox { path: one.clone(), offset: o, len: l }
                .read(usize::MAX, &mailshelf::ingest::Within::new([one.as_path()]))
                .expect("read")
                .bytes
        })
        .collect();
    assert_eq!(app.archive.index().listed_count(), distinct.len());
    assert!(distinct.len() >= 300);
}

fn message(n: usize, mid: Option<&str>, body: &str) -> String {
    let mid = mid.map(|m| format!("Message-ID: <{m}>\r\n")).unwrap_or_default();
    format!(
        "From: sender{n}@example.com\r\nTo: you@example.com\r\nSubject: Message {n}\r\n{mid}Date: Mon, 2 Nov 2026 10:{:02}:00 +0000\r\n\r\n{body}\r\n",
        n % 60
    )
}

/// Writes an mbox of the messages numbered `ns`, each with the Message-ID `<{prefix}{n}@x>` and the
/// text `text of {n}`.
fn write_mbox(path: &Path, prefix: &str, ns: &[usize]) {
    let text: String = ns
        .iter()
        .map(|&n| {
            format!(
                "From x Mon Nov  2 10:00:00 2026\n{}\n",
                message(n, Some(&format!("{prefix}{n}@x")), &format!("text of {n}"))
            )
        })
        .collect();
    std::fs::write(path, text).expect("write");
}

#[tokio::test]
async fn restarts_read_only_what_changed() {
    let mail = tempfile::tempdir().expect("dir");
    for n in 0..20 {
        std::fs::write(mail.path().join(format!("{n}.eml")), message(n, Some(&format!("m{n}@x")), "hello"))
            .expect("write");
    }
    let mbox = mail.path().join("list.mbox");
    let mut text = String::new();
    for n in 20..25 {
        text.push_str(&format!(
            "From x Mon Nov  2 10:00:00 2026\n{}\n",
            message(n, Some(&format!("m{n}@x")), "in mbox")
        ));
    }
    std::fs::write(&mbox, &text).expect("write");
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    assert_eq!(app.archive.index().listed_count(), 25);
    assert_eq!(app.archive.progress.parsed.load(Ordering::Relaxed), 25);

    let app = app.restart(&paths);
    assert_eq!(app.archive.index().listed_count(), 25, "everything still there");
    assert_eq!(app.archive.progress.parsed.load(Ordering::Relaxed), 0, "nothing parsed again");

    // A changed file, a deleted one, two messages appended to the mbox.
    std::fs::write(mail.path().join("3.eml"), message(3, Some("m3-new@x"), "changed")).expect("write");
    std::fs::remove_file(mail.path().join("4.eml")).expect("remove");
    let mut f = std::fs::OpenOptions::new().append(true).open(&mbox).expect("open");
    for n in 25..27 {
        write!(f, "From x Mon Nov  2 10:00:00 2026\n{}\n", message(n, Some(&format!("m{n}@x")), "appended"))
            .expect("append");
    }
    drop(f);
    let app = app.restart(&paths);
    assert_eq!(
        app.archive.progress.parsed.load(Ordering::Relaxed),
        3,
        "the changed file and the two appended messages"
    );
    assert_eq!(app.archive.index().listed_count(), 26);
    assert!(app.archive.find("m3-new@x").is_some() && app.archive.find("m3@x").is_none());
    assert!(app.archive.find("m4@x").is_none());
    assert!(app.archive.find("m26@x").is_some() && app.archive.find("m20@x").is_some());
    assert_eq!(app.get("/message/m26@x").await.status, 200);
}

/// A mail client that deletes a message rewrites the whole mbox: everything after it moves. The
/// messages still there keep their entries (found again by their bytes, now at their new places),
/// only the deleted one goes, and each opens with its own text.
#[tokio::test]
async fn a_rewritten_mbox_keeps_the_messages_still_in_it() {
    let mail = tempfile::tempdir().expect("dir");
    let mbox = mail.path().join("inbox.mbox");
    let write = |ns: &[usize]| write_mbox(&mbox, "r", ns);
    write(&[1, 2, 3, 4, 5, 6]);
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    let before: Vec<Option<u32>> = (1..=6).map(|n| app.archive.find(&format!("r{n}@x"))).collect();
    assert!(before.iter().all(Option::is_some));

    write(&[1, 2, 4, 5, 6]);
    let app = app.restart(&paths);
    assert_eq!(app.archive.index().listed_count(), 5);
    assert!(app.archive.find("r3@x").is_none(), "the deleted message is gone");
    for n in [1, 2, 4, 5, 6] {
        assert_eq!(app.archive.find(&format!("r{n}@x")), before[n - 1], "message {n} keeps its entry");
        let page = app.get(&format!("/message/r{n}@x")).await;
        assert_eq!(page.status, 200);
        assert!(page.text().contains(&format!("text of {n}")), "message {n} is read from its new place");
    }
    let search = app.json("/api/messages?q=text").await;
    assert_eq!(search["total"], 5, "the search index lost only the deleted message: {search}");
}

#[tokio::test]
async fn duplicate_and_missing_message_ids() {
    let mail = tempfile::tempdir().expect("dir");
    std::fs::write(mail.path().join("a.eml"), message(1, Some("same@x"), "first text")).expect("write");
    std::fs::write(mail.path().join("b.eml"), message(2, Some("same@x"), "second text")).expect("write");
    std::fs::write(mail.path().join("c.eml"), message(3, None, "no id")).expect("write");
    std::fs::write(mail.path().join("c-copy.eml"), message(3, None, "no id")).expect("write");
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    assert_eq!(app.archive.index().listed_count(), 3, "both duplicates kept, the identical copy once");
    let page = app.get("/message/same@x").await.text();
    assert!(page.contains("Other messages share this Message-ID"), "{page}");
    let list = app.json("/api/messages?limit=10").await;
    let ids: Vec<String> =
        list["messages"].as_array().expect("list").iter().map(|m| m["id"].as_str().expect("id").to_string()).collect();
    for id in &ids {
        assert_eq!(app.get(&format!("/message/{id}")).await.status, 200, "{id} reachable");
    }
    let derived: Vec<&String> = ids.iter().filter(|i| i.ends_with("@mailshelf.invalid")).collect();
    assert_eq!(derived.len(), 2, "the second same@x and the message without an id: {ids:?}");
    let app = app.restart(&paths);
    for id in &ids {
        assert_eq!(app.get(&format!("/message/{id}")).await.status, 200, "{id} stable across restarts");
    }
}

/// Messages are added in the order they were found, however the parse workers finish them: the
/// first of two messages with one Message-ID gets its plain address, and the same archive indexed
/// twice lists the same messages under the same ids. The first message is large (its worker is
/// still on it while the other one parses the next hundred), so an order of arrival put the later
/// duplicate first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_added_in_the_order_they_were_found() {
    let mail = tempfile::tempdir().expect("dir");
    // An HTML body, whose visible text the worker takes for the search index: long to make.
    let big = "<p>Lorem <b>ipsum</b> dolor sit amet, <i>consectetur</i> adipiscing elit.</p>\r\n".repeat(100_000);
    let first = format!(
        "From: sender0@example.com\r\nTo: you@example.com\r\nSubject: Message 0\r\nMessage-ID: <same@x>\r\n\
         Date: Mon, 2 Nov 2026 10:00:00 +0000\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{big}"
    );
    std::fs::write(mail.path().join("000.eml"), first).expect("write");
    for n in 1..200 {
        let mid = if n == 150 { "same@x".to_string() } else { format!("m{n}@x") };
        std::fs::write(mail.path().join(format!("{n:03}.eml")), message(n, Some(&mid), "a later one")).expect("write");
    }
    let paths = [mail.path().to_path_buf()];
    let listing = |app: &TestApp| {
        let index = app.archive.index();
        (0..200).filter_map(|n| index.by_key(&format!("m{n}@x"))).collect::<Vec<_>>()
    };
    let first = TestApp::new(&paths);
    let found = first.json("/api/messages/same@x").await;
    assert_eq!(found["subject"], "Message 0", "the message found first has the plain address");
    let second = TestApp::new(&paths);
    assert_eq!(listing(&first), listing(&second), "the same ids in a second index of the same archive");
}

async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_dropped_into_a_watched_folder_appears() {
    let mail = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(mail.path().join("Maildir/new")).expect("mkdir");
    std::fs::create_dir_all(mail.path().join("Maildir/cur")).expect("mkdir");
    std::fs::write(mail.path().join("Maildir/cur/1.host:2,S"), message(1, Some("w1@x"), "one")).expect("write");
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    let _watcher = mailshelf::archive::watch::watch(app.archive.clone(), app.archive.roots(&paths)).expect("watch");
    assert_eq!(app.archive.index().listed_count(), 1);
    // Delivery as a Maildir does it: write in tmp/, rename into new/.
    std::fs::create_dir_all(mail.path().join("Maildir/tmp")).expect("mkdir");
    let tmp = mail.path().join("Maildir/tmp/2.host");
    std::fs::write(&tmp, message(2, Some("w2@x"), "two")).expect("write");
    std::fs::rename(&tmp, mail.path().join("Maildir/new/2.host")).expect("deliver");
    wait_for("the delivered message", || app.archive.find("w2@x").is_some()).await;
    assert_eq!(app.get("/message/w2@x").await.status, 200);
    std::fs::remove_file(mail.path().join("Maildir/cur/1.host:2,S")).expect("remove");
    wait_for("the deleted message to go", || app.archive.find("w1@x").is_none()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_falls_back_to_rescans_when_events_cannot_be_had() {
    use mailshelf::archive::watch::{watch_with, Settings};
    // A path that is not there yet cannot be watched (nor can more folders than the inotify limit
    // allows): the watch re-scans on a timer instead, so mail that lands there still appears.
    let mail = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(mail.path().join("now/cur")).expect("mkdir");
    std::fs::write(mail.path().join("now/cur/1.host:2,S"), message(1, Some("r1@x"), "one")).expect("write");
    let later = mail.path().join("later");
    let paths = [mail.path().join("now"), later.clone()];
    let app = TestApp::new(&paths);
    let fast = Duration::from_millis(100);
    let _watch = watch_with(app.archive.clone(), app.archive.roots(&paths), Settings { events: true, rescan: fast })
        .expect("watch");
    std::fs::create_dir_all(later.join("cur")).expect("mkdir");
    std::fs::write(later.join("cur/2.host:2,S"), message(2, Some("r2@x"), "two")).expect("write");
    wait_for("mail in a folder that could not be watched", || app.archive.find("r2@x").is_some()).await;
    // With events off altogether (a network file system sends none), re-scans alone find mail.
    let quiet = tempfile::tempdir().expect("dir");
    let qpaths = [quiet.path().to_path_buf()];
    let other = TestApp::new(&qpaths);
    let _poll =
        watch_with(other.archive.clone(), other.archive.roots(&qpaths), Settings { events: false, rescan: fast })
            .expect("watch");
    std::fs::write(quiet.path().join("3.eml"), message(3, Some("r3@x"), "three")).expect("write");
    wait_for("mail found by a re-scan", || other.archive.find("r3@x").is_some()).await;
}

/// A plain HTTP GET over a socket, for tests that run the real binary.
fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(mail: &Path, data: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mailshelf"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .arg(mail)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("binary starts");
        let mut line = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        std::io::BufRead::read_line(&mut out, &mut line).expect("prints its URL");
        let addr = line.trim().trim_start_matches("mailshelf serving on http://").trim_end_matches('/').to_string();
        Server { child, addr }
    }

    fn status(&self) -> Option<serde_json::Value> {
        serde_json::from_str(&http_get(&self.addr, "/api/status")?).ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_during_indexing_then_restart_is_consistent() {
    let mail = tempfile::tempdir().expect("dir");
    let data = tempfile::tempdir().expect("dir");
    let count = 6000;
    for chunk in 0..6 {
        let dir = mail.path().join(format!("folder{chunk}/cur"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for n in chunk * 1000..(chunk + 1) * 1000 {
            std::fs::write(
                dir.join(format!("{n}.host:2,S")),
                message(n, Some(&format!("k{n}@x")), &"text ".repeat(50)),
            )
            .expect("write");
        }
    }
    let mut server = Server::start(mail.path(), data.path());
    // Kill it hard once indexing is under way but not finished.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "indexing never started");
        if let Some(s) = server.status() {
            if s["ready"] == true || s["messages"].as_u64().unwrap_or(0) > 0 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = server.child.kill();
    let _ = server.child.wait();
    let killed_at = server.status();
    drop(server);
    assert!(killed_at.is_none(), "the first server is gone");

    let server = Server::start(mail.path(), data.path());
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        assert!(Instant::now() < deadline, "restart never became ready");
        if let Some(s) = server.status() {
            if s["ready"] == true {
                break s;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status["messages"], count as u64, "nothing lost, nothing doubled");
    let list: serde_json::Value =
        serde_json::from_str(&http_get(&server.addr, "/api/messages?limit=1000&offset=5000").expect("list"))
            .expect("json");
    assert_eq!(list["messages"].as_array().map(Vec::len), Some(1000));
}

#[tokio::test]
async fn threads_link_parents_and_replies() {
    if !crate::common::needs::corpus("threads_link_parents_and_replies") {
        return;
    }
    let app = TestApp::new(&[crate::common::repo_path("samples/mbox")]);
    let root = app.json("/api/messages/20261005094512.GA1187@alice.example.org").await;
    let thread = root["thread"].as_array().expect("thread");
    assert_eq!(thread.len(), 4, "{thread:#?}");
    assert_eq!(thread[0]["message_id"], "20261005094512.GA1187@alice.example.org");
    assert_eq!(thread[0]["depth"], 0);
    assert!(thread[1..].iter().all(|t| t["depth"].as_u64() >= Some(1)));
    let reply = thread[2]["id"].as_str().expect("id");
    let page = app.get(&format!("/message/{reply}")).await.text();
    assert!(page.contains("Thread (4 messages)") && page.contains("rel=\"prev\"") && page.contains("aria-current"));

    // notmuch's LKML corpus: one long thread, and reference loops that must not hang.
    let app = TestApp::new(&[corpus_dir().join("notmuch/test/corpora/lkml")]);
    let longest = app.archive.index().listed().iter().map(|&id| app.archive.index().thread(id).len()).max();
    assert!(longest >= Some(20), "LKML threads found: {longest:?}");
    let app = TestApp::new(&[corpus_dir().join("notmuch/test/corpora/threading")]);
    for &id in app.archive.index().listed() {
        let t = app.archive.index().thread(id);
        assert!(t.iter().any(|&(_, e)| e == id), "a message is in its own thread");
    }
}

#[tokio::test]
async fn files_a_user_gives_are_shown_even_with_broken_headers() {
    let dir = tempfile::tempdir().expect("dir");
    let walked = dir.path().join("walked");
    std::fs::create_dir_all(walked.join("news")).expect("mkdir");
    let write = |path: &std::path::Path, text: &str| std::fs::write(path, text.replace('\n', "\r\n")).expect("write");
    write(
        &walked.join("broken.eml"),
        "From: a@example.com\nSubject: stray line\nthis line is no header field\nMessage-ID: <stray@example.com>\n\nbody one\n",
    );
    write(
        &walked.join("news/4711"),
        "Path: news.example!not-for-mail\nNewsgroups: comp.mail.misc\nSubject: a usenet article\nbroken line\n\nbody two\n",
    );
    write(&walked.join("settings.yaml"), "name: value\nother: 2\n");
    let given = dir.path().join("given.txt");
    write(&given, "Subject: given on the command line\nunfolded continuation\n\nbody three\n");
    let app = TestApp::new(&[walked, given]);
    let list = app.json("/api/messages?limit=100").await;
    let mut subjects: Vec<String> = list["messages"]
        .as_array()
        .expect("list")
        .iter()
        .map(|m| m["subject"].as_str().unwrap_or("").to_string())
        .collect();
    subjects.sort();
    assert_eq!(list["total"], 3, "{list:#}");
    assert!(subjects.iter().any(|s| s == "a usenet article"), "{subjects:?}");
    assert!(subjects.iter().any(|s| s == "given on the command line"), "{subjects:?}");
    for m in list["messages"].as_array().expect("list") {
        let page = app.get(m["url"].as_str().expect("url")).await;
        assert_eq!(page.status, axum::http::StatusCode::OK);
    }
}

/// A Maildir's files are taken as messages without being opened twice, but one that is not a
/// message (a picture, a JSON file, an empty file someone left in `cur/`) is still left out; a
/// file there named as an mbox is still split.
#[tokio::test]
async fn maildir_files_that_are_not_messages_are_left_out() {
    let dir = tempfile::tempdir().expect("dir");
    let mail = dir.path().join("Maildir");
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(mail.join(sub)).expect("mkdir");
    }
    let message = |n: usize| {
        format!(
            "From: Sender <sender@example.org>\nSubject: kept {n}\nMessage-ID: <kept-{n}@example.org>\n\
             Date: Mon, 1 Jan 2024 10:00:0{n} +0000\n\nbody {n}\n"
        )
    };
    std::fs::write(mail.join("cur/1704103200.M1P1.host:2,S"), message(1)).expect("write");
    std::fs::write(mail.join("new/1704103201.M2P1.host"), message(2)).expect("write");
    std::fs::write(mail.join("cur/1704103202.M3P1.host:2,S"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").expect("write");
    std::fs::write(mail.join("cur/notes.json"), b"[\n  {\"not\": \"mail\"}\n]\n").expect("write");
    std::fs::write(mail.join("new/1704103203.M4P1.host"), b"").expect("write");
    // A large file that is not mail, of which only the first bytes are read.
    std::fs::write(mail.join("cur/1704103204.M5P1.host:2,S"), vec![0u8; 4 << 20]).expect("write");
    std::fs::write(mail.join("cur/kept.mbox"), format!("From a\n{}\nFrom b\n{}", message(3), message(4)))
        .expect("write");

    let app = TestApp::new(std::slice::from_ref(&mail));
    let status = app.json("/api/status").await;
    assert_eq!(status["messages"], 4, "two files and an mbox of two: {status}");
    assert_eq!(status["indexed"], status["total"], "every file read: {status}");
    for n in 1..=4 {
        assert_eq!(app.json(&format!("/api/messages/kept-{n}@example.org")).await["subject"], format!("kept {n}"));
    }
}

/// A message longer than `--max-message` (a file, a message of an mbox, counted or not) is listed
/// with its whole size, and shown and searched as far as it was read, with a notice; the messages
/// after it in its mbox are whole.
#[tokio::test]
async fn messages_longer_than_the_limit_are_shown_as_far_as_read() {
    let dir = tempfile::tempdir().expect("dir");
    let mail = dir.path().join("mail");
    std::fs::create_dir_all(&mail).expect("mkdir");
    let message = |id: &str, body: &str| {
        format!(
            "From: Sender <sender@example.org>\nSubject: {id}\nMessage-ID: <{id}@example.org>\n\
             Date: Mon, 1 Jan 2024 10:00:00 +0000\n\nfirstword {id}\n{body}lastword\n"
        )
    };
    let filler = "lorem ipsum dolor sit amet\n".repeat(5000);
    let big = message("big", &filler);
    std::fs::write(mail.join("big.eml"), &big).expect("write");
    // A Maildir's file, which the worker tells from its first bytes.
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(mail.join("Maildir").join(sub)).expect("mkdir");
    }
    std::fs::write(mail.join("Maildir/cur/1704103200.M1P1.host:2,S"), message("filed", &filler)).expect("write");
    let counted = message("counted", &filler);
    let body = counted.split_once("\n\n").map_or(0, |(_, b)| b.len());
    let counted = counted.replacen("\n\n", &format!("\nContent-Length: {body}\n\n"), 1);
    let mbox = format!(
        "From a\n{}\nFrom b\n{}\nFrom c\n{counted}\nFrom d\n{}",
        message("before", ""),
        message("inside", &filler),
        message("after", "")
    );
    std::fs::write(mail.join("archive.mbox"), mbox).expect("write");

    let app = TestApp::with_config(std::slice::from_ref(&mail), |c| c.max_message = 64 * 1024);
    let status = app.json("/api/status").await;
    assert_eq!(status["messages"], 6, "{status}");
    for (id, cut) in
        [("big", true), ("filed", true), ("before", false), ("inside", true), ("counted", true), ("after", false)]
    {
        let m = app.json(&format!("/api/messages/{id}@example.org")).await;
        assert_eq!(m["subject"], id, "{m}");
        let notices = m["notices"].to_string();
        assert_eq!(notices.contains("only its first 64 KB"), cut, "{id}: {notices}");
    }
    let page = app.get("/message/big@example.org").await.text();
    assert!(page.contains("more than this server reads of one message"), "the page says so");
    let found = |q: &str| {
        let app = &app;
        let q = q.to_string();
        async move { app.json(&format!("/api/messages?q={q}")).await["total"].as_u64() }
    };
    assert_eq!(found("firstword").await, Some(6));
    assert_eq!(found("lastword").await, Some(2), "only the whole messages' last words are searched");
    assert_eq!(found("larger:100K").await, Some(4), "a cut message keeps its whole size");
}

/// Some delivery agents write the mbox separator line at the top of every Maildir file. Inside a
/// Maildir's `cur/` or `new/` (a Maildir++ `.Folder` too) a file is one message whatever its first
/// line: the separator is not a header, and the folder is the Maildir's, not one folder a file. An
/// mbox beside the Maildir is still split into its messages.
#[tokio::test]
async fn maildir_files_that_start_with_a_from_line_are_one_message_each() {
    let dir = tempfile::tempdir().expect("dir");
    let mail = dir.path().join("mail");
    for sub in ["cur", "new", "tmp", ".Lists.rust/cur", ".Lists.rust/new", "archive"] {
        std::fs::create_dir_all(mail.join(sub)).expect("mkdir");
    }
    let message = |n: usize| {
        format!(
            "From sender@example.org Mon Jan  1 00:00:0{n} 2024\nReturn-Path: <sender@example.org>\n\
             From: Sender <sender@example.org>\nSubject: delivered {n}\nMessage-ID: <delivered-{n}@example.org>\n\
             Date: Mon, 1 Jan 2024 10:00:0{n} +0000\n\nbody {n}\nFrom the desk of the sender.\n"
        )
    };
    let files = [
        ("cur/1704103200.M1P1.host:2,S", 1),
        ("cur/1704103201.M2P1.host:2,", 2),
        ("new/1704103202.M3P1.host", 3),
        (".Lists.rust/cur/1704103203.M4P1.host:2,S", 4),
        (".Lists.rust/new/1704103204.M5P1.host", 5),
    ];
    for (name, n) in files {
        std::fs::write(mail.join(name), message(n)).expect("write");
    }
    std::fs::write(mail.join("archive/old.mbox"), format!("{}\n{}", message(6), message(7))).expect("write");

    let app = TestApp::new(std::slice::from_ref(&mail));
    let mut folders: Vec<(String, u64)> = app.json("/api/folders").await["folders"]
        .as_array()
        .expect("folders")
        .iter()
        .flat_map(|f| {
            let mut all = vec![f.clone()];
            all.extend(f["folders"].as_array().cloned().unwrap_or_default());
            all
        })
        .filter(|f| f["messages"].as_u64() > Some(0))
        .map(|f| (f["path"].as_str().expect("path").to_string(), f["messages"].as_u64().expect("count")))
        .collect();
    folders.sort();
    assert_eq!(
        folders,
        [("INBOX".to_string(), 3), ("Lists/rust".to_string(), 2), ("archive/old".to_string(), 2)],
        "one folder a Maildir, one message a file"
    );
    for n in 1..=7 {
        let m = app.json(&format!("/api/messages/delivered-{n}@example.org")).await;
        assert_eq!(m["subject"], format!("delivered {n}"), "message {n}");
        assert_eq!(m["from"], "Sender <sender@example.org>", "message {n}");
    }
}

/// A `.eml` saved with an mbox separator on top (as Thunderbird and mail tools may save one) is
/// one message, never split at a `From ` line inside it: an attached `git format-patch` file
/// starts with such a line. Walked, given by name and uploaded alike.
#[tokio::test]
async fn an_eml_that_starts_with_a_from_line_is_one_message() {
    let eml = "From a@example.com  Sat Feb  5 09:19:10 2022\nFrom: A <a@example.com>\nSubject: patch attached\n\
               Message-ID: <patch@example.com>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"=-=-=\"\n\n\
               --=-=-=\nContent-Type: text/plain\n\nSee the patch.\n\n--=-=-=\nContent-Type: text/x-diff\n\
               Content-Disposition: inline; filename=0001-fix.patch\n\n\
               From fc88cba7f1f37b9cf3b296eace2422dd0e173502 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.com>\n\
               Subject: [PATCH] fix\n\n---\n a | 1 +\n--=-=-=--\n";
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("walked")).expect("mkdir");
    std::fs::write(dir.path().join("walked/saved.eml"), eml).expect("write");
    std::fs::write(dir.path().join("given.eml"), eml).expect("write");
    for root in ["walked", "given.eml"] {
        let app = TestApp::new(&[dir.path().join(root)]);
        let list = app.json("/api/messages").await;
        assert_eq!(list["total"], 1, "{root}: {list}");
        let m = app.json("/api/messages/patch@example.com").await;
        let parts = m["parts"].to_string();
        assert!(parts.contains("0001-fix.patch"), "{root}: the patch is an attachment: {parts}");
    }
    let app = TestApp::new(&[]);
    let form = format!(
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"saved.eml\"\r\n\
         Content-Type: message/rfc822\r\n\r\n{eml}\r\n--B--\r\n"
    );
    let request = axum::http::Request::post("/api/messages")
        .header("content-type", "multipart/form-data; boundary=B")
        .body(axum::body::Body::from(form))
        .expect("request");
    let upload = app.request(request).await;
    assert_eq!(upload.status, axum::http::StatusCode::CREATED, "{}", upload.text());
    assert_eq!(app.json("/api/messages").await["total"], 1);
    // Named as an mbox, the same bytes are an mbox.
    std::fs::write(dir.path().join("given.mbox"), eml).expect("write");
    let app = TestApp::new(&[dir.path().join("given.mbox")]);
    assert_eq!(app.json("/api/messages").await["total"], 2);
}

/// A message deleted in Thunderbird stays in the folder's mbox, flagged expunged in its
/// `X-Mozilla-Status`, until the folder is compacted; Thunderbird shows it nowhere, nor does the
/// archive (walked, given as a file, uploaded). The other bits are the flags Thunderbird shows
/// (read, starred), as Maildir letters.
#[tokio::test]
async fn messages_deleted_in_thunderbird_are_not_listed() {
    let message = |n: usize, status: &str| {
        format!(
            "From - Mon Jan  1 00:00:0{n} 2024\nX-Mozilla-Status: {status}\nX-Mozilla-Status2: 00000000\n\
             From: Sender <sender@example.org>\nSubject: tb {n}\nMessage-ID: <tb-{n}@example.org>\n\nbody {n}\n\n"
        )
    };
    let statuses =
        [(1, "0001", Some("S")), (2, "0009", None), (3, "0000", Some("")), (4, "0008", None), (5, "0005", Some("FS"))];
    let inbox: String = statuses.iter().map(|(n, status, _)| message(*n, status)).collect();
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("profile")).expect("mkdir");
    std::fs::write(dir.path().join("profile/Inbox"), &inbox).expect("write");
    for root in ["profile", "profile/Inbox"] {
        let app = TestApp::new(&[dir.path().join(root)]);
        assert_eq!(app.json("/api/messages").await["total"], 3, "{root}");
        for (n, status, flags) in statuses {
            let reply = app.get(&format!("/api/messages/tb-{n}@example.org")).await;
            assert_eq!(reply.status == 200, flags.is_some(), "{root}: status {status}");
            if let Some(flags) = flags {
                let m: serde_json::Value = serde_json::from_str(&reply.text()).expect("json");
                assert_eq!(m["flags"].as_str().unwrap_or(""), flags, "{root}: status {status}");
            }
        }
    }
    let app = TestApp::new(&[]);
    let request = axum::http::Request::post("/api/messages")
        .header("content-type", "message/rfc822")
        .body(axum::body::Body::from(inbox))
        .expect("request");
    let upload = app.request(request).await;
    assert_eq!(upload.status, axum::http::StatusCode::CREATED, "{}", upload.text());
    assert_eq!(app.json("/api/messages").await["total"], 3, "uploaded");
    // An uploaded mbox keeps its flags too.
    for (n, status, flags) in statuses.into_iter().filter(|(_, _, f)| f.is_some()) {
        let m = app.json(&format!("/api/messages/tb-{n}@example.org")).await;
        assert_eq!(m["flags"].as_str().unwrap_or(""), flags.unwrap_or(""), "uploaded: status {status}");
    }
}

/// Dovecot's `zlib` plugin keeps each Maildir file compressed (gzip or zstd), and a message is
/// often kept as `.eml.gz`, an mbox as `.mbox.gz`: each is what it holds, listed, searched, shown
/// and given back by `/raw/` inflated.
#[tokio::test]
async fn messages_kept_compressed_are_read() {
    let mail = tempfile::tempdir().expect("dir");
    let cur = mail.path().join("INBOX/cur");
    std::fs::create_dir_all(&cur).expect("mkdir");
    std::fs::create_dir_all(mail.path().join("INBOX/new")).expect("mkdir");
    let message = |n: &str, word: &str| {
        format!("From: a@example.org\nSubject: {n}\nMessage-ID: <{n}@x>\n\nthe word {word} inside\n")
    };
    std::fs::write(cur.join("1.host,S=100:2,S"), gzip(message("gz", "gzipped").as_bytes())).expect("write");
    std::fs::write(cur.join("2.host:2,"), zstd::encode_all(message("zst", "zstandard").as_bytes(), 19).expect("zstd"))
        .expect("write");
    std::fs::write(mail.path().join("saved.eml.gz"), gzip(message("eml", "saved").as_bytes())).expect("write");
    let mbox = format!("From x Mon Nov  2 10:00:00 2026\n{}", message("boxed", "boxed"));
    std::fs::write(mail.path().join("list.mbox.gz"), gzip(mbox.as_bytes())).expect("write");
    std::fs::write(mail.path().join("not-mail.gz"), gzip(b"\x00\x01 not a message")).expect("write");

    let app = TestApp::new(&[mail.path().to_path_buf()]);
    assert_eq!(
        app.json("/api/status").await["messages"],
        4,
        "the gzip and zstd Maildir files, the .eml.gz, the .mbox.gz"
    );
    for (id, word) in [("gz@x", "gzipped"), ("zst@x", "zstandard"), ("eml@x", "saved"), ("boxed@x", "boxed")] {
        let page = app.get(&format!("/message/{id}")).await;
        assert_eq!(page.status, 200, "{id}");
        assert!(page.text().contains(&format!("the word {word} inside")), "{id}");
        let raw = app.get(&format!("/raw/{id}")).await;
        assert!(raw.text().starts_with("From: a@example.org"), "{id}: /raw/ gives the message inflated");
        let found = app.json(&format!("/api/messages?q={word}")).await;
        assert_eq!(found["total"], 1, "{id}: {found}");
    }
    let flagged = app.json("/api/messages/gz@x").await;
    assert_eq!(flagged["flags"], "S", "a compressed Maildir file keeps its flags: {flagged}");
}

/// `file` compressed by the command-line tool `tool` (`gzip`, `bzip2`, `xz`, `zstd`, `lz4`): what
/// users' own files are made with, not the decoders' sibling encoders.
fn compressed_by(tool: &str, file: &Path) -> PathBuf {
    let status = std::process::Command::new(tool)
        // lz4 writes to its output unless told that its arguments are files to compress (`-m`).
        .args(if tool == "lz4" { &["-m", "-q", "-k", "-f"][..] } else { &["-q", "-k", "-f"][..] })
        .arg(file)
        .status()
        .unwrap_or_else(|e| panic!("{tool} is needed for this test (scripts/test installs it): {e}"));
    assert!(status.success(), "{tool} {}", file.display());
    let ext = match tool {
        "gzip" => "gz",
        "bzip2" => "bz2",
        "zstd" => "zst",
        other => other,
    };
    let mut name = file.as_os_str().to_os_string();
    name.push(format!(".{ext}"));
    std::fs::remove_file(file).expect("remove the original");
    PathBuf::from(name)
}

/// mbox files kept compressed (a mailing list's `2024-May.txt.gz`, an `Archive.mbox.xz`) and
/// Maildir files compressed with bzip2, xz or LZ4 are read as what they inflate to: each
/// message listed in the folder the name beneath the suffix gives, found, shown and given back
/// by `/raw/` byte for byte, in any order; a rewritten file is read again.
#[tokio::test]
async fn mail_kept_compressed_with_any_common_tool_is_read() {
    let mail = tempfile::tempdir().expect("dir");
    let tools = [
        ("gzip", "2024-May.txt"),
        ("bzip2", "old.mbox"),
        ("xz", "Archive.mbox"),
        ("zstd", "box.mbox"),
        ("lz4", "digest.mbox"),
    ];
    let mut bytes = std::collections::HashMap::new();
    for (t, (tool, name)) in tools.iter().enumerate() {
        let path = mail.path().join(name);
        let ns: Vec<usize> = (0..4).map(|i| t * 10 + i).collect();
        write_mbox(&path, tool, &ns);
        for &n in &ns {
            bytes.insert(format!("{tool}{n}@x"), message(n, Some(&format!("{tool}{n}@x")), &format!("text of {n}")));
        }
        compressed_by(tool, &path);
    }
    let cur = mail.path().join("INBOX/cur");
    std::fs::create_dir_all(&cur).expect("mkdir");
    for tool in ["bzip2", "xz", "lz4"] {
        let file = cur.join(format!("1.{tool}.host:2,S"));
        std::fs::write(&file, message(99, Some(&format!("dovecot-{tool}@x")), "maildir words")).expect("write");
        let packed = compressed_by(tool, &file);
        std::fs::rename(packed, file).expect("keep the Maildir name");
    }
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    assert_eq!(app.json("/api/status").await["messages"], 23, "five mbox files of four, three Maildir files");

    let mut ids: Vec<&String> = bytes.keys().collect();
    ids.sort();
    // Backwards first (each read inflates up to its message), then forwards (each goes on from
    // the place the one before reached).
    for id in ids.iter().rev().chain(ids.iter()) {
        let raw = app.get(&format!("/raw/{id}")).await;
        assert_eq!(raw.status, 200, "{id}");
        assert_eq!(raw.text().trim_end(), bytes[*id].trim_end(), "{id}");
    }
    for (t, (tool, _)) in tools.iter().enumerate() {
        let n = t * 10 + 2;
        let found = app.json(&format!("/api/messages?q=%22text+of+{n}%22")).await;
        assert_eq!(found["total"], 1, "{tool}: {found}");
        assert_eq!(found["messages"][0]["id"], format!("{tool}{n}@x"), "{found}");
        let page = app.get(&format!("/message/{tool}{n}@x")).await;
        assert!(page.text().contains(&format!("text of {n}")), "{tool}");
    }
    // Each folder is named by the name beneath the compression suffix.
    let mut folders: Vec<(String, u64)> = app.json("/api/folders").await["folders"]
        .as_array()
        .expect("folders")
        .iter()
        .map(|f| (f["path"].as_str().unwrap_or_default().to_owned(), f["messages"].as_u64().unwrap_or_default()))
        .collect();
    folders.sort();
    let want = [("2024-May.txt", 4), ("Archive", 4), ("INBOX", 3), ("box", 4), ("digest", 4), ("old", 4)];
    assert_eq!(folders, want.map(|(f, n)| (f.to_owned(), n)), "folders");
    for tool in ["bzip2", "xz", "lz4"] {
        let flagged = app.json(&format!("/api/messages/dovecot-{tool}@x")).await;
        assert_eq!(flagged["flags"], "S", "{tool}: {flagged}");
    }

    // The list's archive rewritten with another month's messages: read again, whole.
    let month = mail.path().join("2024-May.txt");
    write_mbox(&month, "june", &[1, 2]);
    compressed_by("gzip", &month);
    let app = app.restart(&paths);
    assert_eq!(app.json("/api/status").await["messages"], 21);
    assert!(app.archive.find("gzip1@x").is_none() && app.archive.find("june2@x").is_some());
    assert!(app.get("/message/june2@x").await.text().contains("text of 2"));
}

/// The Maildir files Dovecot's `zlib` plugin wrote itself (`tests/fixtures/dovecot-zlib`: its own
/// LZ4 format, gzip, bzip2, zstd, and one it left as it was): each listed, shown, searched (the
/// text of the CSV each carries too), and given back by `/raw/` at the size Dovecot noted in
/// the file's name (`S=`).
#[tokio::test]
async fn maildir_files_dovecot_compressed_are_read() {
    let maildir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-zlib/Maildir");
    let app = TestApp::new(std::slice::from_ref(&maildir));
    let sizes: Vec<usize> = std::fs::read_dir(maildir.join("new"))
        .expect("the fixture")
        .map(|file| {
            let name = file.expect("entry").file_name().to_string_lossy().into_owned();
            name.split(",S=").nth(1).and_then(|s| s.split(',').next()).and_then(|s| s.parse().ok()).expect("S=")
        })
        .collect();
    assert_eq!(sizes.len(), 5, "the fixture's five files");
    assert_eq!(app.json("/api/status").await["messages"], 5);
    for (kind, word) in [
        ("lz4", "snowdrift"),
        ("gz", "wordgzonly"),
        ("bz2", "wordbz2only"),
        ("zstd", "wordzstdonly"),
        ("xz", "wordxzonly"),
    ] {
        let id = format!("dovecot-{kind}-1@example.org");
        let page = app.get(&format!("/message/{id}")).await;
        assert_eq!(page.status, 200, "{kind}");
        assert!(page.text().contains(word), "{kind}: the body is shown");
        let raw = app.get(&format!("/raw/{id}")).await;
        assert!(raw.text().starts_with("From: Ada"), "{kind}: /raw/ gives the message inflated");
        assert!(sizes.contains(&raw.body.len()), "{kind}: {} bytes, as Dovecot noted", raw.body.len());
        let found = app.json(&format!("/api/messages?q={word}")).await;
        assert_eq!(found["total"], 1, "{kind}: {found}");
        assert_eq!(found["messages"][0]["id"], id.as_str(), "{kind}");
    }
    // 2026-12-07;55433;91.50 is the seventh row of each ledger: found in all four that carry one.
    let ledgers = app.json("/api/messages?q=attachment:55433").await;
    assert_eq!(ledgers["total"], 4, "{ledgers}");
}

/// Dovecot's index files say what its message files do not, and what Dovecot itself shows is
/// what mailshelf shows (`doveadm fetch`, kept beside the stores Dovecot wrote): each message's
/// flags and keywords, the mailbox a message was moved to, both mailboxes of a copy, and no
/// message that was expunged (in mdbox its bytes stay in the storage file until a purge).
#[tokio::test]
async fn dovecot_indexes_give_flags_mailboxes_and_deletions() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-index");
    for store in ["mdbox", "sdbox"] {
        let app = TestApp::new(&[fixtures.join(store)]);
        shows_what_dovecot_shows(&app, store).await;
    }
}

/// Dovecot changes its index files, not its message files, when a message is flagged, moved,
/// copied or expunged in an mdbox store, or flagged in an sdbox one: a store indexed before its
/// index files said so (here, before they were there at all) shows what Dovecot shows once it is
/// looked at again, as the watcher does on every change.
#[tokio::test]
async fn dovecot_index_changes_are_seen_without_new_message_files() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-index");
    let is_index = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("dovecot"));
    for store in ["mdbox", "sdbox"] {
        let mail = tempfile::tempdir().expect("dir");
        let copy = mail.path().join(store);
        let files = walk(&fixtures.join(store));
        let place = |file: &Path| copy.join(file.strip_prefix(fixtures.join(store)).expect("inside"));
        let copy_in = |file: &PathBuf| {
            std::fs::create_dir_all(place(file).parent().expect("parent")).expect("mkdir");
            std::fs::copy(file, place(file)).expect("copy");
        };
        files.iter().filter(|f| !is_index(f)).for_each(copy_in);
        let paths = [copy.clone()];
        let app = TestApp::new(&paths);
        // Without indexes: as the files say, without flags (mdbox: the expunged message too).
        let before = app.json("/api/messages/index-1@example.org").await;
        assert!(before["flags"].is_null(), "{store}: {before}");
        if store == "mdbox" {
            assert_eq!(app.get("/message/index-6@example.org").await.status, 200, "{store}: in m.1, unknown");
        }
        files.iter().filter(|f| is_index(f)).for_each(copy_in);
        app.archive.ingest_paths(&app.archive.roots(&paths));
        shows_what_dovecot_shows(&app, store).await;
    }
}

/// What `app`, over a copy of the fixture `store` of `tests/fixtures/dovecot-index`, lists is
/// what `doveadm fetch` listed of it: each mailbox's messages, their flags and keywords, and not
/// the expunged one.
async fn shows_what_dovecot_shows(app: &TestApp, store: &str) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-index");
    let expected = std::fs::read_to_string(fixtures.join(format!("expected-{store}.txt"))).expect("expected");
    // Dovecot's view: mailbox, uid, Message-ID, flags as Maildir letters, keywords.
    let want = crate::common::doveadm::fetched(&expected);
    assert_eq!(want.len(), 8, "{store}: Dovecot lists eight messages");
    for mailbox in ["INBOX", "Work"] {
        let listed = app.json(&format!("/api/messages?q=folder:{mailbox}&limit=50")).await;
        // A copy in a second folder is listed under a key of its own: matched by Message-ID.
        let mut ids: Vec<&str> = listed["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["message_id"].as_str())
            .map(|m| m.trim_matches(['<', '>']))
            .collect();
        ids.sort_unstable();
        let mut dovecot: Vec<&str> =
            want.iter().filter(|(m, ..)| m == mailbox).map(|(_, _, id, ..)| id.as_str()).collect();
        dovecot.sort_unstable();
        assert_eq!(ids, dovecot, "{store}: {mailbox} holds what Dovecot shows in it");
    }
    // Expunged (mdbox: still in `m.1`); moved from INBOX to Work.
    assert_eq!(app.get("/message/index-6@example.org").await.status, 404, "{store}: expunged");
    for (_, _, id, flags, keywords) in &want {
        let m = app.json(&format!("/api/messages/{id}")).await;
        assert_eq!(m["flags"].as_str().unwrap_or_default(), flags, "{store} {id}: {m}");
        for keyword in keywords {
            let q = format!("/api/messages?q=label:%22{}%22", keyword.replace('$', "%24"));
            let found = app.json(&q).await;
            // By Message-ID: a message moved after the store was indexed is keyed by its bytes
            // (its Message-ID was the key of the entry it left, still there when it was added).
            let ids: Vec<&str> =
                found["messages"].as_array().into_iter().flatten().filter_map(|m| m["message_id"].as_str()).collect();
            assert!(ids.contains(&id.as_str()), "{store} {id}: keyword {keyword} is a label: {found}");
        }
    }
    let custom = app.json("/api/messages?q=label:custom").await;
    assert_eq!(custom["total"], 2, "{store}: Custom on two messages: {custom}");
}

/// Dovecot's own stores, as Dovecot 2.3.19 wrote them (`tests/fixtures/dovecot-dbox`): sdbox,
/// a file a message under `mailboxes/<mailbox>/dbox-Mails/`, and mdbox, many messages a file
/// under `storage/`, each noting its mailbox. Every message is listed in its mailbox (IMAP's
/// modified UTF-7 decoded: `Entw&APw-rfe` is `Entwürfe`), shown, searched, and given back by
/// `/raw/` as the same bytes the Maildir fixture holds of it (Dovecot delivered both from one
/// file), inflated where Dovecot compressed it inside the frame (gzip in sdbox, LZ4 in mdbox).
#[tokio::test]
async fn dovecot_dbox_stores_are_read() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let maildir = TestApp::new(&[fixtures.join("dovecot-zlib/Maildir")]);
    for (store, folders, words) in [
        (
            "sdbox",
            &[("Entwürfe/Alt", 1), ("INBOX", 3)][..],
            &[("gz", "wordgzonly"), ("bz2", "wordbz2only"), ("zstd", "wordzstdonly"), ("xz", "wordxzonly")][..],
        ),
        (
            "mdbox",
            &[("Entwürfe/Alt", 1), ("INBOX", 2), ("Work", 1)][..],
            &[("gz", "wordgzonly"), ("bz2", "wordbz2only"), ("xz", "wordxzonly"), ("lz4", "snowdrift")][..],
        ),
    ] {
        let app = TestApp::new(&[fixtures.join("dovecot-dbox").join(store)]);
        assert_eq!(app.json("/api/status").await["messages"], 4, "{store}");
        let mut listed = Vec::new();
        let mut walk_folders = app.json("/api/folders").await["folders"].as_array().cloned().unwrap_or_default();
        while let Some(f) = walk_folders.pop() {
            if f["messages"].as_u64().unwrap_or(0) > 0 {
                listed.push((f["path"].as_str().unwrap_or_default().to_string(), f["messages"].as_u64().unwrap_or(0)));
            }
            walk_folders.extend(f["folders"].as_array().cloned().unwrap_or_default());
        }
        listed.sort();
        assert_eq!(listed, folders.iter().map(|(f, n)| (f.to_string(), *n)).collect::<Vec<_>>(), "{store}");
        for (kind, word) in words {
            let id = format!("dovecot-{kind}-1@example.org");
            let page = app.get(&format!("/message/{id}")).await;
            assert_eq!(page.status, 200, "{store} {kind}");
            assert!(page.text().contains(word), "{store} {kind}: the body is shown");
            let raw = app.get(&format!("/raw/{id}")).await;
            let delivered = maildir.get(&format!("/raw/{id}")).await;
            assert_eq!(raw.status, 200, "{store} {kind}");
            assert!(raw.body == delivered.body, "{store} {kind}: the bytes Dovecot was given");
            let found = app.json(&format!("/api/messages?q={word}")).await;
            assert_eq!(found["messages"][0]["id"], id.as_str(), "{store} {kind}: {found}");
        }
        let ledgers = app.json("/api/messages?q=attachment:55433").await;
        let with_csv = words.iter().filter(|(kind, _)| *kind != "lz4").count();
        assert_eq!(ledgers["total"], with_csv, "{store}: the CSV of each message that carries one: {ledgers}");
    }

    // Dovecot appends to an mdbox file as mail arrives: the file is read again, whole.
    let mail = tempfile::tempdir().expect("dir");
    let storage = mail.path().join("storage");
    std::fs::create_dir_all(&storage).expect("mkdir");
    let file = storage.join("m.1");
    std::fs::copy(fixtures.join("dovecot-dbox/mdbox/storage/m.1"), &file).expect("copy");
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    assert_eq!(app.json("/api/status").await["messages"], 4);
    let arrived = b"From: Ada <ada@example.org>\nSubject: Later\nMessage-ID: <later@example.org>\n\nfreshly arrived\n";
    let mut frame = format!("\x01\x02N          {:016x}\n", arrived.len()).into_bytes();
    frame.extend_from_slice(arrived);
    frame.extend_from_slice(b"\n\x01\x03\nR6b16397b\nBINBOX\n\n");
    let mut bytes = std::fs::read(&file).expect("read");
    bytes.extend_from_slice(&frame);
    std::fs::write(&file, &bytes).expect("append");
    let app = app.restart(&paths);
    assert_eq!(app.json("/api/status").await["messages"], 5);
    let inbox = app.json("/api/messages?folder=INBOX").await;
    assert_eq!(inbox["total"], 3, "{inbox}");
    assert!(inbox.to_string().contains("later@example.org"), "{inbox}");
    assert!(app.get("/raw/later@example.org").await.body == arrived);
}

/// Dovecot's stores keeping large attachments outside the messages (`mail_attachment_dir`), as
/// Dovecot 2.3.19 wrote them (`tests/fixtures/dovecot-sis`): each message is given back by `/raw/`
/// as Dovecot gives it (the bytes it was given; the CRLF message with LF line ends, as Dovecot
/// saved it), each attachment served as its original bytes, and each found by its word. Without
/// the attachments folder, each message is still listed and shown, as stored.
#[tokio::test]
async fn dovecot_external_attachments_are_put_back() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-sis");
    let words = ["quokka", "narwhal", "axolotl"];
    for store in ["sdbox", "mdbox"] {
        let app = TestApp::new(&[fixtures.join(store)]);
        assert_eq!(app.json("/api/status").await["messages"], 3, "{store}");
        for (i, word) in words.iter().enumerate() {
            let n = i + 1;
            let id = format!("sis-{n}@example.org");
            let given = std::fs::read(fixtures.join(format!("messages/{n}.eml"))).expect("original");
            let original = String::from_utf8_lossy(&given).replace("\r\n", "\n");
            let raw = app.get(&format!("/raw/{id}")).await;
            assert_eq!(raw.status, 200, "{store} {n}");
            assert!(raw.body == original.as_bytes(), "{store} {n}: the message as Dovecot gives it back");
            // Each attachment, as the original carries it, decoded.
            let m = app.json(&format!("/api/messages/{id}")).await;
            assert_eq!(m["notices"].as_array().map(Vec::len), Some(0), "{store} {id}: whole, nothing to say: {m}");
            let mut stack = vec![m["parts"][0].clone()];
            let mut served = Vec::new();
            while let Some(p) = stack.pop() {
                if let Some(name) = p["filename"].as_str() {
                    served.push((name.to_string(), p["url"].as_str().unwrap_or_default().to_string()));
                }
                stack.extend(p["parts"].as_array().cloned().unwrap_or_default());
            }
            let attached: Vec<(String, Vec<u8>)> = original
                .split("--=b=")
                .filter_map(|part| {
                    let name = part.split("filename=\"").nth(1)?.split('"').next()?.to_string();
                    let (head, body) = part.split_once("\n\n")?;
                    let bytes = if head.contains("base64") {
                        use base64::Engine;
                        let text: String = body.chars().filter(|c| !c.is_whitespace()).collect();
                        base64::engine::general_purpose::STANDARD.decode(text).ok()?
                    } else {
                        body.strip_suffix('\n')?.as_bytes().to_vec()
                    };
                    Some((name, bytes))
                })
                .collect();
            assert_eq!(attached.len(), if n == 3 { 2 } else { 1 }, "{store} {n}");
            for (name, bytes) in attached {
                let url = served.iter().find(|(s, _)| *s == name).map(|(_, u)| u.clone());
                let url = url.unwrap_or_else(|| panic!("{store} {n}: {name} among the parts: {m}"));
                let part = app.get(&url).await;
                assert_eq!(part.status, 200, "{store} {n} {name}");
                assert!(part.body == bytes, "{store} {n} {name}: the attachment's own bytes");
            }
            let found = app.json(&format!("/api/messages?q={word}")).await;
            assert_eq!(found["messages"][0]["id"], id.as_str(), "{store} {word}: {found}");
        }
        // Indexed whole: the text of the attachment kept outside the message is found.
        let ledger = app.json("/api/messages?q=attachment:ledgerrow42").await;
        assert_eq!(ledger["messages"][0]["id"], "sis-3@example.org", "{store}: {ledger}");
        // The same store without its attachments folder: each message listed and shown as stored.
        let copy = tempfile::tempdir().expect("dir");
        copy_files(&fixtures.join(store), copy.path(), |rel| (!rel.starts_with("attachments")).then(|| rel.into()));
        let bare = TestApp::new(&[copy.path().to_path_buf()]);
        assert_eq!(bare.json("/api/status").await["messages"], 3, "{store} without attachments");
        for (i, word) in words.iter().enumerate() {
            let id = format!("sis-{}@example.org", i + 1);
            let page = bare.get(&format!("/message/{id}")).await;
            assert_eq!(page.status, 200, "{store} {id} without attachments");
            assert!(page.text().contains(word), "{store} {id} without attachments");
            let raw = bare.get(&format!("/raw/{id}")).await;
            assert_eq!(raw.status, 200, "{store} {id} without attachments");
            let given = std::fs::read(fixtures.join(format!("messages/{}.eml", i + 1))).expect("original");
            assert!(raw.body.len() + 1000 < given.len(), "{store} {id}: as stored, without its attachments");
            let detail = bare.json(&format!("/api/messages/{id}")).await;
            let notices = detail["notices"].to_string();
            assert!(notices.contains("Dovecot keeps") && notices.contains("not all found"), "{store} {id}: {notices}");
            assert!(page.text().contains("Dovecot keeps"), "{store} {id}: the page says so");
        }
    }
}

/// Copies the files under `from` to `to`, each to where `place` puts its path relative to `from`
/// (`None`: left out).
fn copy_files(from: &Path, to: &Path, place: impl Fn(&Path) -> Option<PathBuf>) {
    let mut dirs = vec![from.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Some(rel) = place(path.strip_prefix(from).expect("inside")) {
                let target = to.join(rel);
                std::fs::create_dir_all(target.parent().expect("a folder")).expect("mkdir");
                std::fs::copy(&path, target).expect("copy");
            }
        }
    }
}

/// A mailbox may be named `mailboxes`, and a store may be kept in a folder so named: Dovecot lays
/// out `Work/mailboxes/2019` as `mailboxes/Work/mailboxes/2019/dbox-Mails`. The sdbox store of
/// `tests/fixtures/dovecot-sis`, its INBOX moved there and the store into `mailboxes/alice`:
/// the messages are in `Work/mailboxes/2019` of alice's store, as Dovecot names it, and the
/// attachments it keeps beside its `mailboxes` are put back.
#[tokio::test]
async fn sdbox_mailboxes_named_mailboxes_are_told_from_the_stores() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-sis/sdbox");
    let mail = tempfile::tempdir().expect("dir");
    let store = mail.path().join("mailboxes/alice");
    copy_files(&fixture, &store, |rel| match rel.strip_prefix("mailboxes/INBOX") {
        Ok(inside) => Some(Path::new("mailboxes/Work/mailboxes/2019").join(inside)),
        Err(_) => Some(rel.into()),
    });
    let app = TestApp::new(&[mail.path().to_path_buf()]);
    assert_eq!(app.json("/api/status").await["messages"], 3);
    let filed = app.json("/api/messages?folder=mailboxes/alice/Work/mailboxes/2019").await;
    assert_eq!(filed["total"], 3, "{filed}");
    let m = app.json("/api/messages/sis-3@example.org").await;
    assert_eq!(m["notices"].as_array().map(Vec::len), Some(0), "its attachments put back: {m}");
    let ledger = app.json("/api/messages?q=attachment:ledgerrow42").await;
    assert_eq!(ledger["messages"][0]["id"], "sis-3@example.org", "{ledger}");
}

/// MMDF and Babyl (Emacs Rmail's format) files, written by Python's `mailbox`
/// (`tests/fixtures/mmdf-babyl/make.py`) and by mutt (MMDF): every message is listed in the file's folder, with the
/// flags MMDF's header and Babyl's attributes keep and the labels a Babyl file gives it, shown
/// (its inline image too), found by its words and its attachment's, and given back by `/raw/` as
/// the bytes between its separators, as mutt and Emacs read them (MMDF: nothing un-escaped;
/// Babyl: the original header and the body, the header Rmail shows left out, or a copy of it, as
/// Python writes either).
/// A Babyl file kept compressed reads alike.
#[tokio::test]
async fn mmdf_and_babyl_files_are_read() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mmdf-babyl");
    for (file, kind, count) in
        [("archive.mmdf", "mmdf", 4), ("mutt.mmdf", "mutt", 4), ("RMAIL", "babyl", 5), ("RMAIL.gz", "babyl", 5)]
    {
        let app = TestApp::new(&[dir.join(file)]);
        assert_eq!(app.json("/api/status").await["messages"], count, "{file}");
        for n in 1..=count {
            let id = format!("babyl-{n}@example.org");
            let raw = app.get(&format!("/raw/{id}")).await;
            let want = std::fs::read(dir.join(format!("expected/{kind}-{n}.eml"))).expect("expected bytes");
            assert_eq!(raw.status, 200, "{file} {id}");
            assert!(raw.body == want, "{file} {id}: {:?}", String::from_utf8_lossy(&raw.body));
        }
        for (word, id) in [
            ("quillfeather", "babyl-1"),
            ("cogwheelian", "babyl-2"),
            ("cr%C3%A8mebr%C3%BBl%C3%A9e", "babyl-3"),
            ("attachment:abacusward", "babyl-4"),
        ] {
            // Babyl's fifth message is the first again (another Message-ID): either may rank first.
            let found = app.json(&format!("/api/messages?q={word}")).await;
            let ids: Vec<&str> =
                found["messages"].as_array().into_iter().flatten().filter_map(|m| m["id"].as_str()).collect();
            assert!(ids.contains(&format!("{id}@example.org").as_str()), "{file} {word}: {found}");
        }
        let page = app.get("/message/babyl-2@example.org").await.text();
        assert!(page.contains("/part/babyl-2@example.org/mill@example.org"), "{file}: the inline image is linked");
        let image = app.get("/part/babyl-2@example.org/mill@example.org").await;
        assert_eq!((image.status.as_u16(), image.header("content-type")), (200, "image/gif"), "{file}");
        let folders = app.json("/api/folders").await;
        assert_eq!(folders["folders"][0]["messages"], count, "{file}: one folder, the file's: {folders}");
        let mut flags = Vec::new();
        for n in 1..=4 {
            let m = app.json(&format!("/api/messages/babyl-{n}@example.org")).await;
            flags.push(m["flags"].as_str().map(str::to_string));
        }
        let want: &[Option<&str>] =
            if kind == "babyl" { &[Some("RS"), None, Some("PST"), Some("S")] } else { &[Some("S"), None, None, None] };
        assert_eq!(flags, want.iter().map(|f| f.map(str::to_string)).collect::<Vec<_>>(), "{file}");
        let labelled = app.json("/api/messages?label=Clients/Acme").await;
        let want = if kind == "babyl" { 1 } else { 0 };
        assert_eq!(labelled["total"], want, "{file}: Babyl's labels: {labelled}");
        if kind == "babyl" {
            assert_eq!(labelled["messages"][0]["id"], "babyl-1@example.org", "{file}");
            assert_eq!(app.json("/api/messages?q=label:work").await["total"], 1, "{file}");
        }
    }
}

/// Until the folder is read again, an mbox compacted under the server puts other messages where
/// the index points: each message read back is checked against the bytes it was indexed from, and
/// one that no longer matches is shown with a notice, never kept by the browser as the message's
/// for good, and left out of exports.
#[tokio::test]
async fn a_message_whose_file_changed_since_indexing_says_so() {
    let mail = tempfile::tempdir().expect("dir");
    let mbox = mail.path().join("inbox.mbox");
    let write = |ns: &[usize]| write_mbox(&mbox, "c", ns);
    write(&[1, 2, 3, 4]);
    let eml = mail.path().join("edited.eml");
    std::fs::write(&eml, message(9, Some("edited@x"), "first words")).expect("write");
    let app = TestApp::new(&[mail.path().to_path_buf()]);
    write(&[1, 2, 4]);
    std::fs::write(&eml, message(9, Some("edited@x"), "second words")).expect("write");
    let notice = "changed since it was indexed";

    // The same message, other bytes (edited in place, or read to another `--max-message`).
    let edited = app.get("/message/edited@x").await;
    assert!(edited.text().contains("second words") && !edited.text().contains(notice));

    let kept = app.get("/message/c1@x").await;
    assert_eq!(kept.status, 200);
    assert!(kept.text().contains("text of 1") && !kept.text().contains(notice));
    let part = app.get("/part/c1@x/~1").await;
    assert!(part.header("cache-control").contains("immutable"), "an unchanged message's part is kept");

    let moved = app.get("/message/c3@x").await;
    assert_eq!(moved.status, 200);
    assert!(moved.text().contains(notice), "the page says the file changed");
    let api = app.json("/api/messages/c3@x").await;
    assert!(api["notices"].to_string().contains(notice), "{api}");
    for url in ["/part/c3@x/~1", "/raw/c3@x"] {
        let r = app.get(url).await;
        assert_eq!(r.header("cache-control"), "private, no-cache", "{url} is asked for again");
    }
    let export = app.get("/api/export?format=mbox").await.text();
    assert!(export.contains("text of 1") && export.contains("text of 2") && export.contains("second words"));
    assert_eq!(export.matches("From ").count(), 3, "only the messages still there are exported: {export}");
}

/// A message file, or a folder above it, swapped for a link after it was indexed (by whoever may
/// write the mail folder) is read only if the link leads inside the paths served: never a file the
/// server can read and they cannot, through the page, the raw message or an export.
#[tokio::test]
async fn a_file_or_folder_swapped_for_a_link_outside_is_not_read() {
    let dir = tempfile::tempdir().expect("dir");
    let mail = dir.path().join("Mail");
    std::fs::create_dir_all(mail.join("INBOX/cur")).expect("mkdir");
    let message = |n: &str| format!("From: a@example.org\nSubject: {n}\nMessage-ID: <{n}@example.org>\n\nbody {n}\n");
    for n in ["kept", "swapped", "relinked"] {
        std::fs::write(mail.join(format!("INBOX/cur/{n}:2,S")), message(n)).expect("write");
    }
    std::fs::write(mail.join("INBOX/spare.eml"), message("relinked")).expect("write");
    std::fs::create_dir_all(mail.join("Sent/cur")).expect("mkdir");
    std::fs::write(mail.join("Sent/cur/folder:2,S"), message("folder")).expect("write");
    let secret = dir.path().join("secret.eml");
    std::fs::write(&secret, "From: root@example.org\nSubject: secret\n\nthe server's key\n").expect("write");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::copy(&secret, elsewhere.join("folder:2,S")).expect("copy");
    let app = TestApp::new(std::slice::from_ref(&mail));
    assert_eq!(app.json("/api/status").await["messages"], 4);
    let swap = |name: &str, to: &Path| {
        let at = mail.join(format!("INBOX/cur/{name}:2,S"));
        std::fs::remove_file(&at).expect("remove");
        std::os::unix::fs::symlink(to, &at).expect("link");
    };
    swap("swapped", &secret);
    swap("relinked", &mail.join("INBOX/spare.eml"));
    // A folder above a message swapped for a link leading out: the file's own name is no link.
    std::fs::remove_dir_all(mail.join("Sent/cur")).expect("remove");
    std::os::unix::fs::symlink(&elsewhere, mail.join("Sent/cur")).expect("link");
    for url in [
        "/message/swapped@example.org",
        "/raw/swapped@example.org",
        "/message/folder@example.org",
        "/raw/folder@example.org",
    ] {
        let r = app.get(url).await;
        assert_eq!(r.status, axum::http::StatusCode::GONE, "{url}");
        assert!(!r.text().contains("server's key"), "{url}");
    }
    let export = app.get("/api/export?format=mbox").await;
    assert!(!export.text().contains("server's key"));
    assert!(export.text().contains("body kept"));
    // A link inside the paths served is read.
    assert_eq!(app.get("/message/relinked@example.org").await.status, axum::http::StatusCode::OK);
}

/// A link to a message file within the folder given is that message (mairix and mu keep search
/// results as Maildirs of links; a mail folder may be assembled from links); a link to a file
/// outside it is not read, a link to a folder not followed, a link to nothing passed over.
#[tokio::test]
async fn linked_message_files_are_read() {
    let dir = tempfile::tempdir().expect("dir");
    let mail = dir.path().join("Mail");
    let (store, results) = (mail.join("INBOX"), mail.join("results"));
    for sub in ["INBOX/cur", "results/cur", "results/new", "results/tmp"] {
        std::fs::create_dir_all(mail.join(sub)).expect("mkdir");
    }
    for n in 1..=2 {
        let message =
            format!("From: a@example.org\nSubject: linked {n}\nMessage-ID: <linked-{n}@example.org>\n\nbody\n");
        std::fs::write(store.join(format!("cur/{n}.host:2,S")), message).expect("write");
        std::os::unix::fs::symlink(store.join(format!("cur/{n}.host:2,S")), results.join(format!("cur/{n}.host:2,S")))
            .expect("link");
    }
    // A file outside the folder given, which whoever put the link there may not read, is not.
    let outside = dir.path().join("secret.eml");
    std::fs::write(&outside, "From: root@example.org\nSubject: secret\nMessage-ID: <secret@example.org>\n\nkey\n")
        .expect("write");
    std::os::unix::fs::symlink(&outside, results.join("cur/9.host:2,S")).expect("link");
    std::os::unix::fs::symlink(dir.path().join("gone"), results.join("cur/3.host:2,S")).expect("link");
    std::os::unix::fs::symlink(&store, mail.join("store-link")).expect("link");
    let app = TestApp::new(std::slice::from_ref(&mail));
    let list = app.json("/api/messages?folder=results").await;
    assert_eq!(list["total"], 2, "{list}");
    assert_eq!(app.json("/api/status").await["messages"], 4, "the linked folder is not walked");
    let m = app.json("/api/messages/linked-1@example.org").await;
    assert_eq!((m["subject"].as_str(), m["flags"].as_str()), (Some("linked 1"), Some("S")));
    assert_eq!(app.get("/api/messages/secret@example.org").await.status, axum::http::StatusCode::NOT_FOUND);
    // Given by itself, a link is the file it leads to.
    let given = TestApp::new(&[results.join("cur/9.host:2,S")]);
    assert_eq!(given.json("/api/status").await["messages"], 1);
}

/// An MH tree (nmh, mh-e, Sylpheed): a folder of messages named by number, its sequences in
/// `.mh_sequences`, which give the flags Maildir names would (`unseen`, `flagged`, `replied`);
/// a folder without the file says nothing of its messages.
#[tokio::test]
async fn mh_folders_and_their_sequences() {
    let dir = tempfile::tempdir().expect("dir");
    let mail = dir.path().join("Mail");
    for sub in ["inbox", "inbox/sub", "archive"] {
        std::fs::create_dir_all(mail.join(sub)).expect("mkdir");
    }
    let message = |n: &str| format!("From: a@example.org\nSubject: {n}\nMessage-ID: <{n}@example.org>\n\nbody {n}\n");
    for (at, id) in [
        ("inbox/1", "mh-1"),
        ("inbox/2", "mh-2"),
        ("inbox/3", "mh-3"),
        ("inbox/sub/1", "mh-sub"),
        ("archive/7", "mh-7"),
    ] {
        std::fs::write(mail.join(at), message(id)).expect("write");
    }
    std::fs::write(mail.join("inbox/.mh_sequences"), "cur: 2\nunseen: 1\nflagged: 2\nreplied: 2-3\n").expect("write");
    std::fs::write(mail.join("inbox/sub/.mh_sequences"), "unseen: 1\n").expect("write");
    let app = TestApp::new(std::slice::from_ref(&mail));
    assert_eq!(app.json("/api/status").await["messages"], 5);
    for (id, flags) in [
        ("mh-1", serde_json::json!(null)),
        ("mh-2", serde_json::json!("FRS")),
        ("mh-3", serde_json::json!("RS")),
        ("mh-sub", serde_json::json!(null)),
        ("mh-7", serde_json::json!(null)),
    ] {
        let m = app.json(&format!("/api/messages/{id}@example.org")).await;
        assert_eq!(m["flags"], flags, "{id}: {m}");
    }
    let folders = app.json("/api/folders").await.to_string();
    assert!(folders.contains("inbox/sub") && !folders.contains("mh_sequences"), "{folders}");

    // The client reads mh-1 and flags mh-3, changing `.mh_sequences` alone: seen when the tree is
    // looked at again, as the watcher does on every change.
    std::fs::write(mail.join("inbox/.mh_sequences"), "cur: 3\nflagged: 2-3\nreplied: 2-3\n").expect("write");
    app.archive.ingest_paths(&app.archive.roots(std::slice::from_ref(&mail)));
    for (id, flags) in [("mh-1", "S"), ("mh-2", "FRS"), ("mh-3", "FRS"), ("mh-sub", "")] {
        let m = app.json(&format!("/api/messages/{id}@example.org")).await;
        assert_eq!(m["flags"].as_str().unwrap_or_default(), flags, "{id}: {m}");
    }
}

/// A message filed on its own and also forwarded inside another is one entry; when its own file
/// goes, the message that forwards it still opens it (it was removed with the file, and the
/// forwarding message's link answered 404), and it is no longer listed or found on its own.
#[tokio::test]
async fn a_forwarded_message_outlives_its_own_file() {
    let mail = tempfile::tempdir().expect("dir");
    let inner = |n: usize| message(n, Some(&format!("inner{n}@x")), &format!("forwarded words {n}"));
    let carrier = |n: usize| {
        format!(
            "From: c@example.com\r\nSubject: Fwd {n}\r\nMessage-ID: <carrier{n}@x>\r\nMIME-Version: 1.0\r\n\
             Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nsee below\r\n\
             --B\r\nContent-Type: message/rfc822\r\n\r\n{}\r\n--B--\r\n",
            inner(n)
        )
    };
    // Found first on its own (1), and first inside the message forwarding it (2).
    std::fs::write(mail.path().join("a-alone-1.eml"), inner(1)).expect("write");
    std::fs::write(mail.path().join("b-carrier-1.eml"), carrier(1)).expect("write");
    std::fs::write(mail.path().join("c-carrier-2.eml"), carrier(2)).expect("write");
    std::fs::write(mail.path().join("d-alone-2.eml"), inner(2)).expect("write");
    let paths = [mail.path().to_path_buf()];
    let app = TestApp::new(&paths);
    assert_eq!(app.json("/api/status").await["messages"], 4);

    std::fs::remove_file(mail.path().join("a-alone-1.eml")).expect("remove");
    std::fs::remove_file(mail.path().join("d-alone-2.eml")).expect("remove");
    let app = app.restart(&paths);
    assert_eq!(app.json("/api/status").await["messages"], 2, "the two forwarding messages");
    for n in [1, 2] {
        let page = app.get(&format!("/message/inner{n}@x")).await;
        assert_eq!(page.status, 200, "{n}");
        assert!(page.text().contains(&format!("forwarded words {n}")), "{n}");
        let found = app.json(&format!("/api/messages?q=%22forwarded+words+{n}%22")).await;
        assert_eq!(found["total"], 1, "{n}: found once, as the message forwarding it: {found}");
        assert_eq!(found["messages"][0]["id"], format!("carrier{n}@x"), "{found}");
    }
    let app = app.restart(&paths);
    assert_eq!(app.get("/message/inner1@x").await.status, 200, "kept so in the store too");
}

/// An mbox folder as Dovecot 2.3.19 writes it (`tests/fixtures/dovecot-mbox`, made by its
/// `make.sh`): the flags and keywords each message shows are those `doveadm fetch` listed, its
/// `X-Keywords` read as the space-separated IMAP keywords Dovecot writes there.
#[tokio::test]
async fn dovecot_mbox_flags_and_keywords_are_dovecots() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dovecot-mbox");
    let expected = std::fs::read_to_string(fixtures.join("expected.txt")).expect("expected");
    let want = crate::common::doveadm::fetched(&expected);
    assert_eq!(want.len(), 3, "Dovecot lists three messages");
    let app = TestApp::new(&[fixtures.join("Work")]);
    for (_, _, id, flags, keywords) in &want {
        let m = app.json(&format!("/api/messages/{id}")).await;
        assert_eq!(m["flags"].as_str().unwrap_or_default(), flags, "{id}: {m}");
        let index = app.archive.index();
        let entry = index.listed().iter().filter_map(|&e| index.get(e)).find(|e| e.message_id() == Some(id.as_str()));
        let mut labels = entry.map(|e| e.labels.clone()).unwrap_or_default();
        labels.sort();
        assert_eq!(&labels, keywords, "{id}");
    }
}

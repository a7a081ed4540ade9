//! Exports of a search (`/api/export`) round-trip: the mbox, served by a second mailshelf, holds
//! the same messages byte for byte; the zip's files are the `/raw/` bytes; the CSV has one row per
//! match. Driven in-process with `oneshot`.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use axum::http::StatusCode;
use mailshelf::{app, AppState, Archive};

use crate::common::{config_for, corpus_dir, repo_path, TestApp};

/// Plain Internet messages only (for these `/raw/` is the message itself): the samples, the
/// hostile cases, and corpus mbox files with `From ` lines to escape and messages without a date.
fn sources() -> Vec<PathBuf> {
    let ponymail = corpus_dir().join("apache-ponymail-unit-tests/corpus");
    vec![
        repo_path("samples"),
        repo_path("tests/fixtures/hostile"),
        ponymail.join("maven-dev-2017-11-mboxvm.mbox"),
        ponymail.join("no_date.mbox"),
        ponymail.join("empty_body.mbox"),
    ]
}

/// Every listed message's `/raw/` bytes, sorted (the same bytes found twice are one message).
async fn raw_messages(app: &TestApp) -> Vec<Vec<u8>> {
    let keys: Vec<String> = {
        let index = app.archive.index();
        index.listed().iter().filter_map(|&id| index.get(id).map(|e| e.key.clone())).collect()
    };
    let mut out = Vec::new();
    for key in keys {
        let r = app.get(&mailshelf::route::raw_url(&key)).await;
        assert_eq!(r.status, StatusCode::OK, "{key}");
        out.push(r.body);
    }
    out.sort();
    out
}

async fn export(app: &TestApp, query: &str) -> crate::common::Reply {
    let r = app.get(query).await;
    assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.text());
    r
}

#[tokio::test]
async fn mbox_export_served_again_holds_the_same_messages() {
    if !crate::common::needs::corpus("mbox_export_served_again_holds_the_same_messages") {
        return;
    }
    let app = TestApp::new(&sources());
    let r = export(&app, "/api/export?format=mbox").await;
    assert_eq!(r.header("content-type"), "application/mbox");
    assert!(r.header("content-disposition").starts_with("attachment; filename=\"mailshelf-all.mbox\""));
    let dir = tempfile::tempdir().unwrap();
    let mbox = dir.path().join("export.mbox");
    std::fs::write(&mbox, &r.body).unwrap();
    for line in r.body.split(|&b| b == b'\n').filter(|l| l.starts_with(b"From ")) {
        let line = String::from_utf8_lossy(line);
        assert_eq!(line.split_whitespace().count(), 7, "From line with an address and an asctime date: {line}");
    }

    let again = TestApp::new(&[mbox]);
    let (before, after) = (raw_messages(&app).await, raw_messages(&again).await);
    assert!(before.len() > 100, "{} messages", before.len());
    assert_eq!(before.len(), after.len());
    let changed = before.iter().filter(|m| !after.contains(m)).count();
    assert!(changed > 0 && changed < 10, "only the Maildir samples' flags are written in: {changed}");
    let (mut before, mut after): (Vec<_>, Vec<_>) =
        (before.iter().map(|m| without_state(m)).collect(), after.iter().map(|m| without_state(m)).collect());
    before.sort();
    after.sort();
    assert!(before == after, "every message comes back byte for byte, but for its state fields");
    assert_eq!(states(&again), states(&app));
}

/// A message without the fields an mbox keeps its state in (`Status`, `X-Status`, `X-Keywords`).
fn without_state(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let (mut in_header, mut dropping) = (true, false);
    for line in raw.split_inclusive(|&b| b == b'\n') {
        if in_header && (line == b"\n" || line == b"\r\n") {
            in_header = false;
        }
        if in_header {
            let lower = line.to_ascii_lowercase();
            if line.starts_with(b" ") || line.starts_with(b"\t") {
                if dropping {
                    continue;
                }
            } else {
                dropping = [&b"status:"[..], b"x-status:", b"x-keywords:"].iter().any(|n| lower.starts_with(n));
                if dropping {
                    continue;
                }
            }
        }
        out.extend_from_slice(line);
    }
    out
}

/// Messages an mbox has trouble with come back as they went: one without a line end at its end
/// (it gains one, and nothing else), one that begins with a line of white space, one whose body
/// ends with an empty line, last in the file (newest first, as the list is).
#[tokio::test]
async fn mbox_export_keeps_awkward_messages_apart() {
    let dir = tempfile::tempdir().unwrap();
    let messages: [(&str, &[u8]); 3] = [
        ("a.eml", b"From: a@example.com\nSubject: no line end\nDate: Wed, 3 Jan 2024 10:00:00 +0000\n\nbody a"),
        (
            "b.eml",
            b"   \nFrom: b@example.com\nSubject: white line first\nDate: Tue, 2 Jan 2024 10:00:00 +0000\n\nbody b\n",
        ),
        ("c.eml", b"From: c@example.com\nSubject: empty line last\nDate: Mon, 1 Jan 2024 10:00:00 +0000\n\nbody c\n\n"),
    ];
    for (name, bytes) in messages {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let r = export(&app, "/api/export?format=mbox").await;
    let mbox = dir.path().join("export.mbox");
    std::fs::write(&mbox, &r.body).unwrap();
    let again = TestApp::new(&[mbox]);
    let mut want: Vec<Vec<u8>> =
        messages.iter().map(|(_, b)| if b.ends_with(b"\n") { b.to_vec() } else { [*b, b"\n"].concat() }).collect();
    want.sort();
    assert_eq!(raw_messages(&again).await, want);
}

#[tokio::test]
async fn zip_export_files_are_the_raw_messages() {
    if !crate::common::needs::corpus("zip_export_files_are_the_raw_messages") {
        return;
    }
    let app = TestApp::new(&sources());
    let r = export(&app, "/api/export?format=zip&q=").await;
    assert_eq!(r.header("content-type"), "application/zip");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(r.body.clone())).expect("a zip");
    let mut files = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut folders = std::collections::BTreeMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let path = f.name().unwrap().to_string();
        assert!(names.insert(path.to_lowercase()), "unique: {path}");
        let (dirs, name) = path.rsplit_once('/').unwrap_or(("", &path));
        *folders.entry(dirs.to_string()).or_insert(0) += 1;
        assert!(name.ends_with(".eml"), "{name}");
        assert!(!path.contains(['\\', ':', '*', '?', '"', '<', '>', '|']), "{path}");
        assert!(!path.starts_with('/') && path.split('/').all(|d| !d.is_empty() && d != ".."), "{path}");
        let dated = name.get(..10).is_some_and(|d| d.chars().filter(|c| *c == '-').count() == 2);
        assert!(name.starts_with("undated-") || dated, "{name}");
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).unwrap();
        files.push(bytes);
    }
    files.sort();
    assert!(files == raw_messages(&app).await, "the zip holds exactly the /raw/ bytes of every message");
    // Each message lies in its folder: the samples' Maildir is the folder `Maildir` (its messages
    // in `cur/` and `new/`), the loose samples at the top.
    let want: std::collections::BTreeMap<String, usize> = {
        let index = app.archive.index();
        let mut by_folder = std::collections::BTreeMap::new();
        for &id in index.listed().iter() {
            let folder = index.get(id).map(|e| index.folder_path(e.folder).to_string()).unwrap_or_default();
            *by_folder.entry(folder).or_insert(0) += 1;
        }
        by_folder
    };
    assert_eq!(folders, want);
    assert!(folders.len() > 3, "{folders:?}");
}

#[tokio::test]
async fn csv_export_has_one_row_per_match() {
    if !crate::common::needs::corpus("csv_export_has_one_row_per_match") {
        return;
    }
    let app = TestApp::new(&sources());
    let query = "maven";
    let matches = app.archive.search_ids(query).unwrap();
    assert!(matches.len() > 10, "{} matches of {}", matches.len(), app.archive.index().listed_count());
    let r = export(&app, &format!("/api/export?format=csv&q={query}")).await;
    assert!(r.header("content-type").starts_with("text/csv"));
    assert!(r.header("content-disposition").contains("mailshelf-maven.csv"));
    let mut reader = csv::Reader::from_reader(r.body.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(
        header,
        [
            "date",
            "from",
            "to",
            "cc",
            "subject",
            "message_id",
            "folder",
            "labels",
            "attachment_count",
            "attachment_names",
            "size"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), matches.len());
    let index = app.archive.index();
    let mut ids: Vec<String> =
        matches.iter().filter_map(|&id| index.get(id)?.message_id().map(str::to_string)).collect();
    let mut got: Vec<String> = rows.iter().map(|r| r[5].to_string()).filter(|m| !m.is_empty()).collect();
    ids.sort();
    got.sort();
    assert_eq!(ids, got);
    for row in &rows {
        assert_eq!(row.len(), 11);
        assert!(row[10].parse::<u64>().unwrap() > 0);
        assert_eq!(row[8].parse::<usize>().unwrap(), row[9].split("; ").filter(|s| !s.is_empty()).count());
    }
}

#[tokio::test]
async fn csv_lists_attachment_names() {
    let app = TestApp::new(&[repo_path("samples")]);
    let r = export(&app, "/api/export?format=csv&q=has:attachment").await;
    let mut reader = csv::Reader::from_reader(r.body.as_slice());
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r[8].parse::<usize>().unwrap() >= 1), "{rows:?}");
}

/// A browser asks for compressed answers: each export streams to its end in every coding it may
/// ask for, and says the same as the plain one (the compression layer polls the body once more
/// after its end, which the export's stream must answer again).
#[tokio::test]
async fn exports_compressed_for_browsers_are_whole() {
    let app = TestApp::new(&[repo_path("samples")]);
    for format in ["csv", "mbox", "zip"] {
        let uri = format!("/api/export?format={format}");
        let plain = export(&app, &uri).await;
        assert!(!plain.body.is_empty(), "{format}");
        for coding in ["gzip", "deflate", "br", "zstd", "gzip, deflate, br, zstd"] {
            let r = app.get_with(&uri, &[("accept-encoding", coding)]).await;
            assert_eq!(r.status, StatusCode::OK, "{format} {coding}");
            let body = r.decoded();
            assert!(body == plain.body, "{format} {coding}: {} bytes against {}", body.len(), plain.body.len());
        }
    }
}

#[tokio::test]
async fn export_refuses_what_it_cannot_do() {
    let app = TestApp::new(&[repo_path("samples")]);
    // A query of no word is refused, not taken for "everything".
    for uri in ["/api/export?format=pdf", "/api/export?q=subject:(&format=csv", "/api/export?q=---&format=mbox"] {
        let r = app.get(uri).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(r.header("content-type"), "application/problem+json");
    }
    // A query with no match is an empty export, not an error.
    let r = export(&app, "/api/export?format=csv&q=zzzznotaword").await;
    assert_eq!(r.text().lines().count(), 1, "the header row only");
}

#[tokio::test]
async fn without_search_only_everything_can_be_exported() {
    let data = tempfile::tempdir().unwrap();
    let paths = [repo_path("samples")];
    let mut config = config_for(&paths, data.path());
    config.search = false;
    let archive = Arc::new(Archive::open_with(data.path(), false).unwrap());
    archive.ingest_paths(&archive.roots(&paths));
    let state = AppState::new(archive.clone(), Arc::new(config));
    let router = app(state.clone());
    let app = TestApp { router, archive, data_dir: data, database_url: None, state };
    let all = export(&app, "/api/export?format=csv").await;
    assert_eq!(all.text().lines().count(), 1 + app.archive.index().listed_count());
    let r = app.get("/api/export?format=csv&q=invoice").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.text().contains("search is turned off"), "{}", r.text());
}

/// The list page offers the export of the whole search, not of the page shown.
#[tokio::test]
async fn list_page_links_the_export() {
    let app = TestApp::new(&[repo_path("samples")]);
    let page = app.get("/?q=from%3Aclaire").await.text();
    assert!(page.contains("/api/export?q=from%3Aclaire&amp;format=mbox"), "{page}");
    assert!(page.contains("format=zip") && page.contains("format=csv"));
}

/// Files in other formats: the zip holds each file as given (`/raw/`, under its own extension), the
/// mbox the Internet message made of it, which a second mailshelf reads back with its subject.
#[tokio::test]
async fn other_formats_export_as_given_and_as_mail() {
    if !crate::common::needs::corpus("other_formats_export_as_given_and_as_mail") {
        return;
    }
    let msg = corpus_dir().join("msgreader/MsgReaderTests/SampleFiles/TxtSampleEmail.msg");
    let app = TestApp::new(&[repo_path("tests/fixtures/formats"), msg]);
    let count = app.archive.index().listed_count();
    assert!(count >= 4, "{count}");

    let zip = export(&app, "/api/export?format=zip").await;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(zip.body)).unwrap();
    let mut files = Vec::new();
    let mut extensions = std::collections::BTreeSet::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        extensions.insert(f.name().unwrap().rsplit('.').next().unwrap().to_string());
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).unwrap();
        files.push(bytes);
    }
    files.sort();
    assert!(files == raw_messages(&app).await, "the zip holds each file as /raw/ gives it");
    assert!(extensions.contains("msg") && extensions.contains("webarchive"), "{extensions:?}");

    let mbox = export(&app, "/api/export?format=mbox").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("export.mbox");
    std::fs::write(&path, &mbox.body).unwrap();
    let again = TestApp::new(&[path]);
    let subjects = |app: &TestApp| {
        let index = app.archive.index();
        let mut s: Vec<Option<String>> =
            index.listed().iter().filter_map(|&id| Some(index.get(id)?.summary.subject.clone())).collect();
        s.sort();
        s
    };
    assert_eq!(subjects(&app), subjects(&again));
}

/// What each listed message's source keeps beside it, by subject: its flags (those an mbox's
/// status fields can say: read, answered, flagged, deleted) and its labels.
fn states(app: &TestApp) -> std::collections::BTreeMap<String, (String, Vec<String>)> {
    let index = app.archive.index();
    index
        .listed()
        .iter()
        .filter_map(|&id| index.get(id))
        .map(|e| {
            let flags = match &e.location {
                mailshelf::index::Location::Top { flags, .. } => flags.clone().unwrap_or_default(),
                mailshelf::index::Location::Nested { .. } => String::new(),
            };
            let mut kept: Vec<char> = flags.chars().filter(|c| "FRST".contains(*c)).collect();
            kept.sort_unstable();
            let mut labels: Vec<String> = e.labels.iter().map(|l| l.to_lowercase()).collect();
            labels.sort();
            (e.summary.subject.clone().unwrap_or_default(), (kept.into_iter().collect(), labels))
        })
        .collect()
}

/// Flags and labels a Maildir keeps beside its messages (in file names, and letters named by its
/// `dovecot-keywords`) travel in an mbox export: served again, the mbox gives each message back
/// with them, and Python's `mailbox` reads the same flags from it.
#[tokio::test]
async fn mbox_export_keeps_flags_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("Mail");
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(maildir.join(sub)).unwrap();
    }
    std::fs::write(maildir.join("dovecot-keywords"), "0 Project X\n1 Later\n").unwrap();
    let messages = [
        ("cur/1.host:2,FS", "read and flagged", ""),
        ("cur/2.host:2,RSa", "answered with a keyword", ""),
        ("cur/3.host:2,Tb", "deleted with a keyword and a label", "X-Keywords: Travel\n"),
        ("cur/4.host:2,", "unread", "Status: RO\n"),
        ("new/5.host", "new", ""),
    ];
    for (i, (name, subject, more)) in messages.iter().enumerate() {
        let mail = format!(
            "From: a@example.com\nSubject: {subject}\nMessage-ID: <{i}@example.com>\n\
             Date: Mon, {} Jan 2024 10:00:00 +0000\n{more}\nbody {i}\n",
            i + 1
        );
        std::fs::write(maildir.join(name), mail).unwrap();
    }
    let app = TestApp::new(&[maildir]);
    let before = states(&app);
    assert_eq!(before["read and flagged"].0, "FS");
    assert_eq!(before["deleted with a keyword and a label"].1, ["later", "travel"]);
    let r = export(&app, "/api/export?format=mbox").await;
    let mbox = dir.path().join("export.mbox");
    std::fs::write(&mbox, &r.body).unwrap();
    let again = TestApp::new(std::slice::from_ref(&mbox));
    assert_eq!(states(&again), before);

    if !crate::common::needs::program("mbox_export_keeps_flags_and_labels", "python3", "apt-get install python3") {
        return;
    }
    let script = "import mailbox, sys\n\
                  for m in mailbox.mbox(sys.argv[1]):\n    print(m['Subject'] + '|' + ''.join(sorted(m.get_flags())))\n";
    let out = std::process::Command::new("python3").args(["-c", script]).arg(&mbox).output().expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read: std::collections::BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('|'))
        .map(|(s, f)| (s.to_string(), f.to_string()))
        .collect();
    // Python's letters: R read, O old, A answered, F flagged, D deleted.
    assert_eq!(read["read and flagged"], "FOR");
    assert_eq!(read["answered with a keyword"], "AOR");
    assert_eq!(read["deleted with a keyword and a label"], "DO");
    assert_eq!(read["unread"], "O");
    assert_eq!(read["new"], "");
}

//! Files in other formats than an Internet message: Apple Mail's `.emlx` and `.partial.emlx` (with
//! their `Attachments/` trees), Safari's `.webarchive` (binary and XML), and UTF-16 files. Every
//! such file in the corpus is listed and answers without a 5xx, with its parts; a web archive's
//! subresources are reached from its rewritten page; damaged and hostile files show what could be
//! read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mailshelf::index::{content_hash, Location};
use mailshelf::parse::parse_file;

use crate::common::{corpus_dir, files_with_ext, repo_path, TestApp};

/// The corpus folders that hold Apple Mail and Safari files.
const FOLDERS: &[&str] = &[
    "emlx-rs",
    "partial-emlx-converter",
    "pywebarchive",
    "webarchive-codable",
    "webarchive-extractor",
    "webarchive-rs",
    "webarchive-swift",
];

/// The key of the listed message read from `file`.
fn key_of(app: &TestApp, file: &Path) -> Option<String> {
    let index = app.archive.index();
    let key = index.entries().find_map(|(_, e)| match &e.location {
        Location::Top { source, .. } if source.path() == file => Some(e.key.clone()),
        _ => None,
    });
    key.map(|k| mailshelf::ids::encode_segment(&k))
}

/// The key of the message `file` holds, also when the same message was listed from another file
/// (an `.emlx` with a wrong byte count holds the message another one holds).
fn message_key_of(app: &TestApp, file: &Path) -> Option<String> {
    key_of(app, file).or_else(|| {
        let msg = parse_file(Arc::from(std::fs::read(file).ok()?), Some(file)).ok()?;
        let index = app.archive.index();
        let id = index.by_hash(&content_hash(&msg.raw))?;
        Some(mailshelf::ids::encode_segment(&index.get(id)?.key))
    })
}

/// The `/part/…` URLs a document references (attribute values and `url()`s).
fn part_urls(html: &str) -> Vec<String> {
    html.match_indices("/part/")
        .filter_map(|(at, _)| {
            let rest = &html[at..];
            let end = rest.find(['"', '\'', ')', ' ', '>'])?;
            Some(rest[..end].replace("&amp;", "&"))
        })
        .collect()
}

/// Every part of a message and of the messages it encloses, by URL.
fn all_part_urls(detail: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
    while let Some(p) = stack.pop() {
        out.push(p["url"].as_str().expect("url").to_string());
        if let Some(children) = p["parts"].as_array() {
            stack.extend(children);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_apple_mail_and_safari_file_in_the_corpus_is_listed_and_answers() {
    if !crate::common::needs::corpus("every_apple_mail_and_safari_file_in_the_corpus_is_listed_and_answers") {
        return;
    }
    let corpus = corpus_dir();
    let roots: Vec<PathBuf> = FOLDERS.iter().map(|f| corpus.join(f)).collect();
    let emlx: Vec<PathBuf> = roots.iter().flat_map(|r| files_with_ext(r, &["emlx"])).collect();
    let archives: Vec<PathBuf> = roots.iter().flat_map(|r| files_with_ext(r, &["webarchive"])).collect();
    assert_eq!(emlx.len(), 18, "Apple Mail files in {}", corpus.display());
    assert_eq!(archives.len(), 8, "Safari web archives in {}", corpus.display());

    let app = TestApp::new(&roots);
    {
        // Apple Mail's Attachments/ trees are read with their messages, never listed themselves.
        let index = app.archive.index();
        let under_attachments = index.entries().filter(|(_, e)| match &e.location {
            Location::Top { source, .. } => source.path().components().any(|c| c.as_os_str() == "Attachments"),
            Location::Nested { .. } => false,
        });
        assert_eq!(under_attachments.count(), 0);
        // A provenance note that opens with "From qqilihq/…" is no mbox (nor a folder of one).
        let notes = index.entries().filter(|(_, e)| match &e.location {
            Location::Top { source, .. } => source.path().extension().is_some_and(|x| x == "txt"),
            Location::Nested { .. } => false,
        });
        assert_eq!(notes.count(), 0);
    }
    let (mut shown, mut with_notices, mut parts, mut same_as_another) = (0, 0, 0, 0);
    for file in emlx.iter().chain(&archives) {
        let own = key_of(&app, file);
        same_as_another += usize::from(own.is_none());
        let key = message_key_of(&app, file).unwrap_or_else(|| panic!("{} is not listed", file.display()));
        let page = app.get(&format!("/message/{key}")).await;
        assert_eq!(page.status, 200, "{}", file.display());
        shown += 1;
        if page.text().contains("class=\"notice\"") {
            with_notices += 1;
        }
        let detail = app.json(&format!("/api/messages/{key}")).await;
        for url in all_part_urls(&detail) {
            let r = app.get(&url).await;
            assert!(!r.status.is_server_error(), "{}: {url}: {}", file.display(), r.status);
            parts += 1;
        }
        let raw = app.get(&format!("/raw/{key}")).await;
        assert_eq!(raw.status, 200, "{}", file.display());
        if own.is_some() {
            assert_eq!(raw.body, std::fs::read(file).expect("read"), "/raw/ gives {} as it is", file.display());
        }
    }
    eprintln!(
        "formats: {shown} of {} files shown, {with_notices} with notices, {same_as_another} the same message as another file, {parts} parts",
        emlx.len() + archives.len()
    );
    // broken3.emlx (a wrong byte count) holds the message of another file of its folder; the same
    // message in files of other folders (1.emlx and 114893.partial.emlx, neither with its
    // attachments beside it) is a copy listed in each.
    assert_eq!(same_as_another, 1);
    assert!(parts > 150, "only {parts} parts");
    assert_eq!(shown, 26);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_emlx_attachments_are_put_back_from_the_folder_beside_them() {
    if !crate::common::needs::corpus("partial_emlx_attachments_are_put_back_from_the_folder_beside_them") {
        return;
    }
    let dir = corpus_dir().join("partial-emlx-converter/test/__testdata/input");
    let app = TestApp::new(std::slice::from_ref(&dir));
    let mut compared = 0;
    for message in ["114892", "114894", "136153", "229417"] {
        let file = dir.join(format!("Messages/{message}.partial.emlx"));
        let key = key_of(&app, &file).expect("listed");
        let page = app.get(&format!("/message/{key}")).await;
        assert!(!page.text().contains("was not downloaded"), "{message}: {}", page.text());
        for section_dir in std::fs::read_dir(dir.join("Attachments").join(message)).expect("attachments").flatten() {
            let section = section_dir.file_name().to_string_lossy().into_owned();
            for stored in std::fs::read_dir(section_dir.path()).expect("section").flatten() {
                let r = app.get(&format!("/part/{key}/~{section}")).await;
                assert_eq!(r.status, 200, "{message} part {section}");
                let want = std::fs::read(stored.path()).expect("read");
                // Text attachments are served as UTF-8 text, so compare what a reader sees.
                assert_eq!(
                    String::from_utf8_lossy(&r.body).replace("\r\n", "\n"),
                    String::from_utf8_lossy(&want).replace("\r\n", "\n"),
                    "{message} part {section}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 10);
    // The same message without its folder (114893 is a copy of 114892) names what is missing.
    let key = key_of(&app, &dir.join("Messages/114893.partial.emlx")).expect("listed");
    let page = app.get(&format!("/message/{key}")).await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("was not downloaded by Apple Mail"), "{}", page.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emlx_flags_show_as_maildir_flags() {
    if !crate::common::needs::corpus("emlx_flags_show_as_maildir_flags") {
        return;
    }
    let file = corpus_dir().join("emlx-rs/tests/emails/1.emlx");
    let app = TestApp::new(std::slice::from_ref(&file));
    let key = key_of(&app, &file).expect("listed");
    let page = app.get(&format!("/message/{key}")).await.text();
    assert!(page.contains("<dt>Flags</dt><dd>S</dd>"), "{page}");
    assert!(page.contains("Fwd: Lorem ipsum"));
    let detail = app.json(&format!("/api/messages/{key}")).await;
    assert_eq!(detail["flags"], "S");
    // It was saved without the Attachments folder its parts were left out to.
    assert_eq!(detail["notices"].as_array().map(Vec::len), Some(4), "{}", detail["notices"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webarchive_subresources_resolve_to_parts_that_answer() {
    if !crate::common::needs::corpus("webarchive_subresources_resolve_to_parts_that_answer") {
        return;
    }
    let corpus = corpus_dir();
    let mut archives: Vec<PathBuf> =
        FOLDERS.iter().flat_map(|f| files_with_ext(&corpus.join(f), &["webarchive"])).collect();
    archives.push(repo_path("tests/fixtures/formats/page.webarchive"));
    let app = TestApp::new(&archives);
    let mut resolved = 0;
    for file in &archives {
        let key = key_of(&app, file).unwrap_or_else(|| panic!("{} is not listed", file.display()));
        let detail = app.json(&format!("/api/messages/{key}")).await;
        assert!(detail["html_url"].is_string(), "{}: no page", file.display());
        // The page and its frames (each frame's page is a part at its URL): every reference the
        // rewrite turned into a part URL answers.
        let mut documents = 0;
        let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
        while let Some(p) = stack.pop() {
            stack.extend(p["parts"].as_array().into_iter().flatten());
            if p["content_type"] != "text/html" {
                continue;
            }
            documents += 1;
            let page = app.get(p["url"].as_str().expect("url")).await;
            assert_eq!(page.status, 200, "{}", file.display());
            assert!(page.header("content-security-policy").contains("sandbox"), "{}", file.display());
            let urls = part_urls(&page.text());
            for url in &urls {
                let r = app.get(url).await;
                assert_eq!(r.status, 200, "{}: {url}", file.display());
            }
            resolved += urls.len();
        }
        eprintln!("{}: {documents} documents", file.display());
    }
    assert!(resolved >= 30, "only {resolved} subresource references resolved");

    // The XML fixture: its stylesheet, image and frame are parts; the tracker stays blocked.
    let key = key_of(&app, &repo_path("tests/fixtures/formats/page.webarchive")).expect("listed");
    let detail = app.json(&format!("/api/messages/{key}")).await;
    assert_eq!(detail["subject"], "Saved page: café");
    let page = app.get(detail["html_url"].as_str().expect("page")).await.text();
    assert_eq!(part_urls(&page).len(), 3, "{page}");
    assert!(!page.contains("https://tracker.example/pixel.gif\""), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn utf16_messages_read_as_the_text_they_hold() {
    let dir = repo_path("tests/fixtures/formats");
    let app = TestApp::new(std::slice::from_ref(&dir));
    for (file, order) in [("utf16le.eml", "LE"), ("utf16be.eml", "BE")] {
        let path = dir.join(file);
        let key = key_of(&app, &path).unwrap_or_else(|| panic!("{file} is not listed"));
        let detail = app.json(&format!("/api/messages/{key}")).await;
        assert_eq!(detail["subject"], format!("Relatório em UTF-16 ({order})"), "{file}");
        assert_eq!(detail["from"], "Ana Souza <ana@example.com>", "{file}");
        let text = app.get(detail["text_url"].as_str().expect("text")).await.text();
        assert!(text.contains("Olá, equipe"), "{file}: {text}");
        let raw = app.get(&format!("/raw/{key}")).await;
        assert_eq!(raw.body, std::fs::read(&path).expect("read"), "{file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_and_damaged_files_show_what_could_be_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A binary property list whose arrays each reference the one before twice (2^40 leaves), one
    // that contains itself, one that claims 2^40 entries, and an XML one nested 100,000 deep.
    let mut objects = vec![b"\x41x".to_vec()];
    for i in 0..40u16 {
        objects.push(bplist_array(&[i, i]));
    }
    let mut huge = vec![0xAF, 0x13];
    huge.extend_from_slice(&(1u64 << 40).to_be_bytes());
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("shared.webarchive", bplist(&objects, 40)),
        ("loop.webarchive", bplist(&[bplist_array(&[0])], 0)),
        ("huge.webarchive", bplist(&[huge], 0)),
        (
            "deep.webarchive",
            format!("<?xml version=\"1.0\"?><plist><dict><key>WebMainResource</key>{}", "<array>".repeat(100_000))
                .into_bytes(),
        ),
        ("cut.emlx", b"4000\nSubject: cut short\r\n\r\nonly this".to_vec()),
    ];
    for (name, bytes) in &files {
        std::fs::write(dir.path().join(name), bytes).expect("write");
    }
    let started = std::time::Instant::now();
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "indexing took {:?}", started.elapsed());
    for (name, _) in &files {
        let key = key_of(&app, &dir.path().join(name)).unwrap_or_else(|| panic!("{name} is not listed"));
        let page = app.get(&format!("/message/{key}")).await;
        assert_eq!(page.status, 200, "{name}");
        assert!(page.text().contains("class=\"notice\""), "{name}: no notice");
    }
}

/// A binary property list of the given objects (2-byte references, 4-byte offsets).
fn bplist(objects: &[Vec<u8>], root: u64) -> Vec<u8> {
    let mut out = b"bplist00".to_vec();
    let mut offsets = Vec::new();
    for o in objects {
        offsets.push(out.len() as u32);
        out.extend_from_slice(o);
    }
    let table = out.len() as u64;
    for o in offsets {
        out.extend_from_slice(&o.to_be_bytes());
    }
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 4, 2]);
    out.extend_from_slice(&(objects.len() as u64).to_be_bytes());
    out.extend_from_slice(&root.to_be_bytes());
    out.extend_from_slice(&table.to_be_bytes());
    out
}

fn bplist_array(refs: &[u16]) -> Vec<u8> {
    let mut o = vec![0xA0 | refs.len() as u8];
    for r in refs {
        o.extend_from_slice(&r.to_be_bytes());
    }
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploaded_files_in_other_formats_are_kept_as_given() {
    if !crate::common::needs::corpus("uploaded_files_in_other_formats_are_kept_as_given") {
        return;
    }
    use axum::body::Body;
    use axum::http::Request;
    let files = [
        corpus_dir().join("webarchive-rs/fixtures/crouton.webarchive"),
        repo_path("tests/fixtures/formats/page.webarchive"),
        repo_path("tests/fixtures/formats/utf16le.eml"),
        corpus_dir().join("emlx-rs/tests/emails/2.emlx"),
    ];
    let app = TestApp::new(&[]);
    let mut keys = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("read");
        let req =
            Request::post("/api/messages").header("content-type", "message/rfc822").body(Body::from(bytes.clone()));
        let r = app.request(req.expect("request")).await;
        assert_eq!(r.status, 201, "{}: {}", file.display(), r.text());
        let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        let key = created[0]["id"].as_str().expect("id").to_string();
        let raw = app.get(&format!("/raw/{}", mailshelf::ids::encode_segment(&key))).await;
        assert_eq!(raw.body, bytes, "{}", file.display());
        keys.push(key);
    }
    // Stored as given, they read back as the same messages after a restart.
    let app = app.restart(&[]);
    assert_eq!(app.json("/api/status").await["messages"], files.len());
    for key in &keys {
        let page = app.get(&format!("/message/{}", mailshelf::ids::encode_segment(key))).await;
        assert_eq!(page.status, 200, "{key}");
    }
}

//! The print view and the PDF made of it: the whole body inlined under the message content policy,
//! and a PDF whose text (poppler's `pdftotext`) has the message and whose attachment (`pdfdetach`)
//! is the raw message byte for byte. Hostile messages printed to PDF reach no remote address.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use axum::http::StatusCode;
use mailshelf::{app, AppState, Archive};

use crate::browser::{hostile_messages, internet, requested};
use crate::common::{config_for, repo_path, TestApp};

mod long;

const NEWSLETTER: &str = "newsletter-2026-10@example.com";

fn poppler(tool: &str) -> Command {
    let found = Command::new(tool).arg("-v").output().is_ok();
    assert!(found, "PDF tests need poppler's {tool} (apt-get install poppler-utils)");
    Command::new(tool)
}

pub fn pdftotext(pdf: &Path) -> String {
    let out = poppler("pdftotext").arg("-enc").arg("UTF-8").arg(pdf).arg("-").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The files embedded in a PDF, by `pdfdetach -saveall`.
fn pdfdetach(pdf: &Path) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let out = poppler("pdfdetach").arg("-saveall").arg("-o").arg(dir.path()).arg(pdf).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn pdfinfo(pdf: &Path) -> String {
    let out = poppler("pdfinfo").arg("-enc").arg("UTF-8").arg(pdf).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

pub async fn pdf_of(app: &TestApp, uri: &str, dir: &Path) -> std::path::PathBuf {
    pdf_reply(app, uri, dir).await.0
}

/// The PDF at `uri`, saved, and how many requests its render refused.
async fn pdf_reply(app: &TestApp, uri: &str, dir: &Path) -> (std::path::PathBuf, usize) {
    let r = app.get(uri).await;
    assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.text());
    assert_eq!(r.header("content-type"), "application/pdf");
    assert!(r.body.starts_with(b"%PDF-"));
    let file = dir.join(format!("{}.pdf", uri.len()));
    std::fs::write(&file, &r.body).unwrap();
    (file, r.header("x-mailshelf-blocked-requests").parse().unwrap())
}

#[tokio::test]
async fn print_view_inlines_the_whole_body_under_the_content_policy() {
    if !crate::common::needs::chromium("print_view_inlines_the_whole_body_under_the_content_policy") {
        return;
    }
    let app = TestApp::new(&[repo_path("samples")]);
    let r = app.get(&format!("/message/{NEWSLETTER}/print")).await;
    assert_eq!(r.status, StatusCode::OK);
    let csp = r.header("content-security-policy");
    assert!(csp.starts_with("sandbox") && csp.contains("default-src 'none'"), "{csp}");
    assert!(!csp.contains("http:"), "nothing remote by default: {csp}");
    let html = r.text();
    assert!(html.contains("Nouveautés d&#x27;automne") || html.contains("Nouveautés d'automne"), "subject");
    assert!(!html.contains("<iframe class=\"body\""), "the body is inlined, not framed");
    assert!(html.contains(&format!("/part/{NEWSLETTER}/logo@example.com")), "inline images in place");
    assert!(html.contains("shadowrootmode"));
    // Remote content only when asked for.
    let remote = app.get(&format!("/message/{NEWSLETTER}/print?remote=1")).await;
    assert!(remote.header("content-security-policy").contains("https:"));
    // Attachments are listed; a text-only message prints its text.
    let invoice = app.get("/message/rechnung-2026-0315@lefevre-it.example/print").await.text();
    assert!(invoice.contains("Rechnung März.pdf"), "{invoice}");
    assert!(app.get("/message/nobody@example.com/print").await.status == StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn message_page_links_print_and_pdf() {
    let app = TestApp::new(&[repo_path("samples")]);
    let page = app.get(&format!("/message/{NEWSLETTER}")).await.text();
    assert!(page.contains(&format!("href=\"/message/{NEWSLETTER}/print\"")), "{page}");
    assert!(page.contains(&format!("href=\"/message/{NEWSLETTER}.pdf\"")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_has_the_message_and_the_original_inside() {
    if !(crate::common::needs::chromium("pdf_has_the_message_and_the_original_inside")
        && crate::common::needs::program(
            "pdf_has_the_message_and_the_original_inside",
            "pdftotext",
            "apt-get install poppler-utils",
        ))
    {
        return;
    }
    let app = TestApp::new(&[repo_path("samples")]);
    let dir = tempfile::tempdir().unwrap();
    let file = pdf_of(&app, &format!("/message/{NEWSLETTER}.pdf"), dir.path()).await;
    let text = pdftotext(&file);
    for words in ["Nouveautés", "automne", "Maison Verte", "AUTOMNE26"] {
        assert!(text.contains(words), "{words:?} not in the PDF's text:\n{text}");
    }
    let attached = pdfdetach(&file);
    assert_eq!(attached.len(), 1, "one embedded file");
    let raw = app.get(&format!("/raw/{NEWSLETTER}")).await.body;
    assert!(attached[0].1 == raw, "the embedded file is the raw message byte for byte");
    assert!(attached[0].0.ends_with(".eml"), "{}", attached[0].0);
    let info = pdfinfo(&file);
    let field =
        |name: &str| info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(|v| v.trim().to_string()));
    assert_eq!(field("Title").as_deref(), Some("Nouveautés d'automne"), "{info}");
    assert_eq!(field("Author").as_deref(), Some("Maison Verte <newsletter@example.com>"), "{info}");
    assert_eq!(field("CreationDate").as_deref(), Some("Thu Oct  1 07:00:00 2026 UTC"), "{info}");
    assert_eq!(field("PDF version").as_deref(), Some("1.7"), "{info}");
    let raw_pdf = std::fs::read(&file).unwrap();
    let has = |needle: &[u8]| raw_pdf.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"/AFRelationship /Source") || has(b"/AFRelationship/Source"));
    assert!(has(b"/Subtype /message#2Frfc822") || has(b"/Subtype/message#2Frfc822"));
    assert!(has(b"<x:xmpmeta"));
    assert!(has(b"/OutputIntents") && has(b"/GTS_PDFA1") && has(b"/ID"));

    // A message with a text body only.
    let file = pdf_of(&app, "/message/welcome@example.com.pdf", dir.path()).await;
    assert!(pdftotext(&file).contains("Welcome to Maison Verte"));
}

/// A message read from a file in another format (an Outlook `.msg`, a Safari `.webarchive`, a
/// message in UTF-16) is embedded as that file, under its own extension, as `/raw/` gives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_of_a_file_in_another_format_embeds_that_file() {
    let test = "pdf_of_a_file_in_another_format_embeds_that_file";
    if !(crate::common::needs::chromium(test)
        && crate::common::needs::corpus(test)
        && crate::common::needs::program(test, "pdfdetach", "apt-get install poppler-utils"))
    {
        return;
    }
    let msg = crate::common::corpus_dir().join("msgreader/MsgReaderTests/SampleFiles/TxtSampleEmail.msg");
    let app = TestApp::new(&[repo_path("tests/fixtures/formats"), msg]);
    let keys: Vec<String> = {
        let index = app.archive.index();
        index.listed().iter().filter_map(|&id| index.get(id).map(|e| e.key.clone())).collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut extensions = std::collections::BTreeSet::new();
    for key in &keys {
        let raw = app.get(&format!("{}?download=1", mailshelf::route::raw_url(key))).await;
        let given = raw.header("content-disposition");
        let ext = given.trim_end_matches('"').rsplit('.').next().unwrap_or("").to_string();
        let file = pdf_of(&app, &format!("{}.pdf", mailshelf::route::message_url(key)), dir.path()).await;
        let attached = pdfdetach(&file);
        assert!(attached[0].1 == raw.body, "{key}: the file as /raw/ gives it");
        assert!(attached[0].0.ends_with(&format!(".{ext}")), "{key}: {} against {given}", attached[0].0);
        let pdf = std::fs::read(&file).unwrap();
        let typed = |t: &[u8]| pdf.windows(t.len()).any(|w| w == t);
        let rfc822 = typed(b"message#2Frfc822");
        assert_eq!(rfc822, ext == "eml" && raw.header("content-type").starts_with("text/"), "{key}: {ext}");
        extensions.insert(ext);
    }
    assert!(extensions.contains("msg") && extensions.contains("webarchive"), "{extensions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_messages_print_without_reaching_anyone() {
    if !(crate::common::needs::chromium("hostile_messages_print_without_reaching_anyone")
        && crate::common::needs::program(
            "hostile_messages_print_without_reaching_anyone",
            "pdftotext",
            "apt-get install poppler-utils",
        ))
    {
        return;
    }
    let (remote, remote_log) = internet().await;
    let dir = tempfile::tempdir().unwrap();
    hostile_messages(dir.path(), &remote);
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let keys: Vec<String> = {
        let index = app.archive.index();
        index.listed().iter().filter_map(|&id| index.get(id).map(|e| e.key.clone())).collect()
    };
    assert!(keys.len() >= 5);
    let out = tempfile::tempdir().unwrap();
    for key in &keys {
        let file = pdf_of(&app, &format!("{}.pdf", mailshelf::route::message_url(key)), out.path()).await;
        let attached = pdfdetach(&file);
        assert!(attached[0].1 == app.get(&mailshelf::route::raw_url(key)).await.body, "{key}");
    }
    assert_eq!(requested(&remote_log), Vec::<String>::new(), "no request reached the stand-in server");

    // Even with remote content allowed, a render on the server never reaches this machine or its
    // network (the stand-in is on loopback), and still nothing runs.
    let mut refused = 0;
    for key in &keys {
        refused += pdf_reply(&app, &format!("{}.pdf?remote=1", mailshelf::route::message_url(key)), out.path()).await.1;
    }
    // The browser did ask (remote references were left in place): the requests were refused on
    // the way out, so the test is not passing merely because nothing was tried.
    assert!(refused > 0, "no request was even attempted; the test would prove nothing");
    assert_eq!(requested(&remote_log), Vec::<String>::new(), "no request reached the stand-in server");
}

/// Without a browser the PDF route says what to install (501); with one that will not start, it
/// says to try again (503, the cause in the log). Either way the rest of the server works.
#[tokio::test]
async fn pdf_without_a_working_browser_says_why_and_the_server_runs_on() {
    let missing = std::path::PathBuf::from("/nonexistent/chromium");
    let cases: &[(Option<&std::path::Path>, StatusCode, &str, &str)] = &[
        (None, StatusCode::NOT_IMPLEMENTED, "/api/problems/no-renderer", "--chromium"),
        (Some(&missing), StatusCode::SERVICE_UNAVAILABLE, "/api/problems/renderer-failed", "try again"),
    ];
    for &(chromium, status, kind, says) in cases {
        let data = tempfile::tempdir().unwrap();
        let paths = [repo_path("samples")];
        let mut config = config_for(&paths, data.path());
        config.chromium = chromium.map(std::path::Path::to_path_buf);
        let archive = Arc::new(Archive::open(data.path()).unwrap());
        archive.ingest_paths(&archive.roots(&paths));
        let state = AppState::new(archive.clone(), Arc::new(config));
        let router = app(state.clone());
        let app = TestApp { router, archive, data_dir: data, database_url: None, state };
        let uri = format!("/message/{NEWSLETTER}.pdf");
        let page = app.get(&uri).await;
        assert_eq!(page.status, status, "{chromium:?}");
        assert!(page.header("content-type").starts_with("text/html"));
        assert!(page.text().contains("Chromium"), "{}", page.text());
        let problem = app.get_with(&uri, &[("accept", "application/problem+json")]).await;
        assert_eq!(problem.status, status);
        assert_eq!(problem.header("content-type"), "application/problem+json");
        let json: serde_json::Value = serde_json::from_slice(&problem.body).unwrap();
        assert_eq!(json["type"], kind);
        assert!(json["detail"].as_str().unwrap().contains(says), "{json}");
        assert!(!json["detail"].as_str().unwrap().contains("nonexistent"), "no internal detail: {json}");
        // Everything else still works, the print view included.
        assert_eq!(app.get(&format!("/message/{NEWSLETTER}/print")).await.status, StatusCode::OK);
        assert_eq!(app.get(&format!("/message/{NEWSLETTER}")).await.status, StatusCode::OK);
    }
}

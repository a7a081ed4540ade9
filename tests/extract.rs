//! The text of attachments in search: documents written by the libraries their users write them
//! with (`tests/extract/make_documents.py`), each holding a word found only in it, are found by
//! plain queries and `attachment:`, named in `matched_in`, shown by `?text=1`; hostile documents
//! stay within their bounds and leave their message listed and shown. The corpus test
//! (`tests/extract/corpus.rs`) compares every document of Apache Tika's test set with an
//! independent reader.

#[path = "extract/corpus.rs"]
mod corpus;

use std::path::Path;

use axum::http::StatusCode;
use base64::Engine;
use serde::Deserialize;

use crate::common::{repo_path, TestApp};

/// Writes a message carrying `bytes` as the attachment `name` (of type `content_type`), with a
/// body of `body`; its Message-ID is `<stem@extract.test>`.
pub fn wrap(dir: &Path, stem: &str, name: &str, content_type: &str, body: &str, bytes: &[u8]) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut m = format!(
        "From: Sender <sender@example.org>\r\nTo: you@example.org\r\nSubject: About {stem}\r\n\
         Date: Mon, 02 Nov 2026 10:00:00 +0000\r\nMessage-ID: <{stem}@extract.test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"B\"\r\n\r\n--B\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         {body}\r\n--B\r\nContent-Type: {content_type}; name=\"{name}\"\r\n\
         Content-Disposition: attachment; filename=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    );
    for line in b64.as_bytes().chunks(76) {
        m.push_str(std::str::from_utf8(line).expect("ascii"));
        m.push_str("\r\n");
    }
    m.push_str("--B--\r\n");
    std::fs::write(dir.join(format!("{stem}.eml")), m).expect("write message");
}

#[derive(Deserialize)]
struct Made {
    file: String,
    words: Vec<String>,
}

/// The documents `make_documents.py` writes into `dir`, with their words.
fn make_documents(dir: &Path) -> Vec<Made> {
    let out = std::process::Command::new("python3")
        .arg(repo_path("tests/extract/make_documents.py"))
        .arg(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "make_documents.py (scripts/test installs python-docx, openpyxl, python-pptx, odfpy, fpdf2): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("json")).collect()
}

fn encode(q: &str) -> String {
    percent_encoding::utf8_percent_encode(q, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The results of a search: (subject, matched_in, snippet).
async fn search(app: &TestApp, q: &str) -> Vec<(String, Vec<String>, String)> {
    let list = app.json(&format!("/api/messages?q={}", encode(q))).await;
    list["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let matched: Vec<String> = m["matched_in"]
                .as_array()
                .expect("matched_in on every search result")
                .iter()
                .map(|n| n.as_str().unwrap_or("").to_string())
                .collect();
            (m["subject"].as_str().unwrap_or("").to_string(), matched, m["snippet"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

/// The URL of the attachment named `name` of message `<stem@extract.test>`.
pub async fn attachment_url(app: &TestApp, stem: &str, name: &str) -> String {
    let detail = app.json(&format!("/api/messages/{}", encode(&format!("{stem}@extract.test")))).await;
    let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
    while let Some(p) = stack.pop() {
        if p["filename"].as_str() == Some(name) {
            return p["url"].as_str().expect("url").to_string();
        }
        stack.extend(p["parts"].as_array().into_iter().flatten());
    }
    panic!("{stem} has no part {name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_in_attachments_are_found_named_and_shown() {
    if !(crate::common::needs::program(
        "words_in_attachments_are_found_named_and_shown",
        "python3",
        "apt-get install python3",
    ) && crate::common::needs::python_module(
        "words_in_attachments_are_found_named_and_shown",
        "docx, openpyxl, pptx, odf, fpdf",
        "pip install python-docx openpyxl python-pptx odfpy fpdf2",
    )) {
        return;
    }
    let docs = tempfile::tempdir().expect("dir");
    let made = make_documents(docs.path());
    assert_eq!(made.len(), 12, "documents made");
    let mail = tempfile::tempdir().expect("dir");
    for (i, m) in made.iter().enumerate() {
        let bytes = std::fs::read(docs.path().join(&m.file)).expect("read document");
        // Every other one sent as plain data: recognised by its bytes, not its type.
        let ct = if i % 2 == 0 {
            "application/octet-stream".to_string()
        } else {
            mime_guess::from_path(&m.file).first_or_octet_stream().essence_str().to_string()
        };
        wrap(mail.path(), &format!("doc{i}"), &m.file, &ct, &format!("see the attachment bodyword{i}"), &bytes);
    }
    let app = TestApp::new(&[mail.path().to_path_buf()]);
    for (i, m) in made.iter().enumerate() {
        let subject = format!("About doc{i}");
        for word in &m.words {
            let hits = search(&app, word).await;
            let hit = hits.iter().find(|h| h.0 == subject);
            let (_, matched_in, snippet) =
                hit.unwrap_or_else(|| panic!("{word} ({}) finds its message: {hits:?}", m.file));
            assert_eq!(matched_in, &vec![m.file.clone()], "{word}: matched_in");
            assert!(snippet.to_lowercase().contains("<mark>"), "{word}: snippet {snippet:?}");
        }
        let word = &m.words[0];
        let only = search(&app, &format!("attachment:{word}")).await;
        assert_eq!(only.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(), vec![subject.as_str()], "attachment:{word}");
        assert!(search(&app, &format!("body:{word}")).await.is_empty(), "body:{word}");
        assert!(search(&app, &format!("attachment:bodyword{i}")).await.is_empty(), "attachment:bodyword{i}");
        // The body's word: found, and in no attachment.
        let body = search(&app, &format!("bodyword{i}")).await;
        assert_eq!(body.len(), 1, "bodyword{i}");
        assert!(body[0].1.is_empty(), "bodyword{i}: matched_in {:?}", body[0].1);
        // `filename:` keeps its meaning.
        let named = search(&app, &format!("filename:\"{}\"", m.file)).await;
        assert!(named.iter().any(|h| h.0 == subject), "filename:{}", m.file);

        let url = attachment_url(&app, &format!("doc{i}"), &m.file).await;
        let text = app.get(&format!("{url}?text=1")).await;
        assert_eq!(text.status, StatusCode::OK, "{url}?text=1: {}", text.text());
        assert_eq!(text.header("content-type"), "text/plain; charset=utf-8", "{url}");
        let shown = text.text().to_lowercase();
        assert!(shown.contains(&word.to_lowercase()), "{url}?text=1 shows {word}: {shown:?}");
    }
    // The pages: a result says which attachment it matched in; a message offers each readable
    // document's text.
    let list = app.get("/?q=wombatpdf").await;
    assert!(list.text().contains("<span class=\"in\">in order.pdf</span>"), "{}", list.text());
    for (i, m) in made.iter().enumerate() {
        let page = app.get(&format!("/message/{}", encode(&format!("doc{i}@extract.test")))).await;
        let url = attachment_url(&app, &format!("doc{i}"), &m.file).await;
        assert!(page.text().contains(&format!("<a href=\"{url}?text=1\"")), "{}: a Text link", m.file);
    }
    // A phrase.
    let phrase = search(&app, "\"tax number DE129273398\"").await;
    assert_eq!(phrase.len(), 1, "{phrase:?}");
    assert_eq!(phrase[0].1, vec!["order.pdf".to_string()]);
    assert!(phrase[0].2.contains("<mark>"), "{:?}", phrase[0].2);
    // A word's start, in attachments only: the document is named and its word marked.
    let start = search(&app, "attachment:de1292*").await;
    assert_eq!(start.len(), 1, "{start:?}");
    assert_eq!(start[0].1, vec!["order.pdf".to_string()]);
    assert!(start[0].2.contains("<mark>DE129273398</mark>"), "{:?}", start[0].2);
    // A text part of the message is no document: asking its text is answered as such.
    let body_url = app.json(&format!("/api/messages/{}", encode("doc0@extract.test"))).await["parts"][0]["url"]
        .as_str()
        .expect("url")
        .to_string();
    let body = app.get(&format!("{body_url}?text=1")).await;
    assert_eq!(body.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", body.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachment_text_can_be_left_out_of_search() {
    let mail = tempfile::tempdir().expect("dir");
    let csv = b"item;note\r\n1;zebrafinch delivered\r\n";
    wrap(mail.path(), "off", "notes.csv", "application/vnd.ms-excel", "see the attachment", csv);
    let on = TestApp::new(&[mail.path().to_path_buf()]);
    assert_eq!(search(&on, "zebrafinch").await.len(), 1, "on by default");
    let off = TestApp::with_config(&[mail.path().to_path_buf()], |c| c.attachment_text = false);
    assert!(search(&off, "zebrafinch").await.is_empty(), "--attachment-text false");
    let named = search(&off, "filename:notes.csv").await;
    assert_eq!(named.len(), 1, "the name is still searched");
    assert!(named[0].1.is_empty(), "matched_in: {:?}", named[0].1);
    // The text is still there to read.
    let url = attachment_url(&off, "off", "notes.csv").await;
    let text = off.get(&format!("{url}?text=1")).await;
    assert_eq!(text.status, StatusCode::OK);
    assert!(text.text().contains("zebrafinch"), "{}", text.text());
}

/// A docx whose document inflates to 80 MiB of markup without text.
fn zip_bomb() -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).large_file(true);
    w.start_file("[Content_Types].xml", options).expect("member");
    w.start_file("word/document.xml", options).expect("member");
    w.write_all(b"<w:document><w:body><w:p><w:r><w:t>bombfirstword</w:t></w:r></w:p>").expect("write");
    let filler = b"<w:bookmarkStart/>".repeat(64 * 1024);
    for _ in 0..(80 << 20) / filler.len() {
        w.write_all(&filler).expect("write");
    }
    w.finish().expect("zip").into_inner()
}

/// A PDF of the given objects (numbered from 1; the first is the catalog), with its
/// cross-reference table.
fn pdf_of(objects: &[String]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

fn stream(content: &str) -> String {
    format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len())
}

/// A PDF of `pages` pages, each with 25 lines of text (about a kilobyte).
fn long_pdf(pages: usize) -> Vec<u8> {
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        String::new(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into(),
    ];
    let mut kids = Vec::new();
    for n in 0..pages {
        let lines: String =
            (0..25).map(|l| format!("0 -14 Td (pageword number {n} line {l} of the manual) Tj ")).collect();
        objects.push(stream(&format!("BT /F1 12 Tf 72 740 Td {lines}ET")));
        let content = objects.len();
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R /Resources << /Font << /F1 3 0 R >> >> >>"
        ));
        kids.push(format!("{} 0 R", objects.len()));
    }
    objects[1] = format!("<< /Type /Pages /Kids [{}] /Count {pages} >>", kids.join(" "));
    pdf_of(&objects)
}

/// A PDF whose one page is a picture.
fn image_pdf() -> Vec<u8> {
    pdf_of(&[
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".into(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /XObject << /Im1 5 0 R >> >> >>".into(),
        stream("q 100 0 0 100 0 0 cm /Im1 Do Q"),
        "<< /Type /XObject /Subtype /Image /Width 2 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 2 >>\nstream\nAB\nendstream".into(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_documents_stay_within_bounds_and_their_messages_are_shown() {
    let legacy_word = {
        use std::io::Write;
        let mut cf = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).expect("create");
        cf.create_stream("/WordDocument").expect("stream").write_all(b"old").expect("write");
        cf.flush().expect("flush");
        cf.into_inner().into_inner()
    };
    let cases: Vec<(&str, &str, Vec<u8>, Option<&str>)> = vec![
        ("bomb", "invoice.docx", zip_bomb(), Some("cut:")),
        ("pages", "manual.pdf", long_pdf(3000), Some("cut:")),
        ("image", "scan.pdf", image_pdf(), None),
        ("corrupt", "broken.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog".to_vec(), None),
        ("legacy", "old.doc", legacy_word, None),
        ("notzip", "fake.xlsx", b"PK\x03\x04 and then nothing".to_vec(), None),
    ];
    let mail = tempfile::tempdir().expect("dir");
    for (stem, name, bytes, _) in &cases {
        wrap(mail.path(), stem, name, "application/octet-stream", &format!("hostile {stem}word"), bytes);
    }
    let app = TestApp::new(&[mail.path().to_path_buf()]);
    let listed = app.json("/api/messages?limit=100").await;
    assert_eq!(listed["total"], cases.len(), "every message is listed");
    for (stem, name, _, cut) in &cases {
        let id = encode(&format!("{stem}@extract.test"));
        let page = app.get(&format!("/message/{id}")).await;
        assert_eq!(page.status, StatusCode::OK, "{stem}: the message is shown");
        let found = search(&app, &format!("{stem}word")).await;
        assert_eq!(found.len(), 1, "{stem}: its body is searched");
        let url = attachment_url(&app, stem, name).await;
        let text = app.get(&format!("{url}?text=1")).await;
        assert!(!text.status.is_server_error(), "{stem}: {}", text.status);
        match cut {
            Some(notice) => {
                assert_eq!(text.status, StatusCode::OK, "{stem}");
                assert!(text.text().starts_with(&format!("[mailshelf: {notice}")), "{stem}: {:?}", &text.text()[..200]);
                assert!(text.body.len() <= mailshelf::limits::MAX_INDEXED_TEXT + 1024, "{stem}: {}", text.body.len());
            }
            None if *stem == "image" => {
                assert_eq!(text.status, StatusCode::OK, "{stem}");
                assert_eq!(text.text().trim(), "", "{stem}");
            }
            None => assert_eq!(text.status, StatusCode::UNPROCESSABLE_ENTITY, "{stem}: {}", text.text()),
        }
    }
    let legacy_url = attachment_url(&app, "legacy", "old.doc").await;
    let legacy = app.get(&format!("{legacy_url}?text=1")).await;
    assert!(legacy.text().contains("Word 97"), "{}", legacy.text());
    let page = app.get(&format!("/message/{}", encode("legacy@extract.test"))).await;
    assert!(
        page.text().contains(&legacy_url) && !page.text().contains(&format!("{legacy_url}?text=1")),
        "no Text link"
    );
    // What was read before a bound is searched.
    assert_eq!(search(&app, "bombfirstword").await.len(), 1);
    assert_eq!(search(&app, "pageword").await.len(), 1);
}

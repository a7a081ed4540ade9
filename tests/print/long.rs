//! Long bodies on paper: a body of many pages, with pictures near its end, printed whole by the
//! PDF and by the reader's browser from the print view, whatever layout the sender gave it (a root
//! as high as the window that hides its overflow, a box that scrolls, a fixed box); and the message
//! page and the conversation, whose framed bodies are one block each on paper, saying where the
//! whole body prints.

use std::path::Path;

use base64::Engine;

use super::{pdf_of, pdfinfo, pdftotext, poppler};
use crate::browser::serve;
use crate::common::cdp::Browser;
use crate::common::{needs, pictures, TestApp};

/// A long HTML body whose layout clips it on paper: `pages` screens of paragraphs, then two
/// pictures by `cid:` and a last paragraph, under the `style` rules, inside `wrap` (left open).
fn long_message(id: &str, pages: usize, style: &str, wrap: &str, img: &str) -> Vec<u8> {
    let mut html = format!("<html><head><style>p {{ font: 12pt/1.5 serif; }} {style}</style></head><body>{wrap}");
    for i in 1..=pages * 12 {
        html.push_str(&format!(
            "<p>Paragraph {i}: the minutes of the meeting go on, item after item, as minutes do when \
             nobody wants to decide anything and everybody wants it written down.</p>\r\n"
        ));
    }
    html.push_str(&format!("<p><img src=\"cid:photo@long\" alt=\"the photo\" width=\"400\" {img}></p>\r\n"));
    html.push_str(&format!("<p><img src=\"cid:diagram@long\" alt=\"the diagram\" width=\"400\" {img}></p>\r\n"));
    html.push_str("<p>Last paragraph: signed, sealed and delivered.</p></body></html>\r\n");
    let mut m = format!(
        "From: Ana <ana@example.com>\r\nTo: you@example.com\r\nSubject: The long minutes\r\n\
         Message-ID: <{id}>\r\nDate: Tue, 03 Nov 2026 09:30:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/related; boundary=\"LONG\"\r\n\r\n--LONG\r\n\
         Content-Type: text/html; charset=utf-8\r\n\r\n{html}"
    );
    for (name, ct, bytes) in pictures().into_iter().filter(|p| p.0 == "photo.jpg" || p.0 == "diagram.png") {
        let cid = if name == "photo.jpg" { "photo@long" } else { "diagram@long" };
        m.push_str(&format!(
            "--LONG\r\nContent-Type: {ct}\r\nContent-ID: <{cid}>\r\nContent-Disposition: inline; filename=\"{name}\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n"
        ));
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        for line in b64.as_bytes().chunks(76) {
            m.push_str(std::str::from_utf8(line).unwrap());
            m.push_str("\r\n");
        }
    }
    m.push_str("--LONG--\r\n");
    m.into_bytes()
}

/// The images a PDF draws (`pdfimages -list`), as `width x height`, soft masks left out.
fn pdfimages(pdf: &Path) -> Vec<String> {
    let out = poppler("pdfimages").arg("-list").arg(pdf).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list = String::from_utf8(out.stdout).unwrap();
    let rows = list.lines().skip(2).map(|l| l.split_whitespace().collect::<Vec<_>>());
    rows.filter(|f| f.get(2) == Some(&"image")).map(|f| format!("{}x{}", f[3], f[4])).collect()
}

/// Whether a printed PDF has the whole long body: its last paragraph, and both pictures near the
/// end (the photo 1600 × 1200, the diagram 900 × 300).
fn whole(pdf: &Path) -> Result<(), String> {
    let text = pdftotext(pdf);
    let images = pdfimages(pdf);
    let pages = pdfinfo(pdf).lines().find(|l| l.starts_with("Pages:")).unwrap_or("").to_string();
    let last = text.contains("Last paragraph: signed, sealed and delivered.");
    let pictures = images.contains(&"1600x1200".to_string()) && images.contains(&"900x300".to_string());
    match (last, pictures) {
        (true, true) => Ok(()),
        _ => Err(format!("last paragraph {last}, pictures {images:?}, {pages}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_bodies_print_whole_with_their_last_pictures() {
    let test = "long_bodies_print_whole_with_their_last_pictures";
    let poppler = "apt-get install poppler-utils";
    if !(needs::chromium(test)
        && needs::program(test, "pdftotext", poppler)
        && needs::program(test, "pdfimages", poppler))
    {
        return;
    }
    // Layouts that scroll in a window and would end at the first page on paper.
    let cases: &[(&str, &str, &str, &str)] = &[
        ("plain", "", "", ""),
        ("a page-high root that hides its overflow", "html, body { height: 100%; overflow: hidden; }", "", ""),
        ("the same, important", "html, body { height: 100% !important; overflow: hidden !important; }", "", ""),
        (
            "a root that scrolls its body",
            "html { overflow: hidden; height: 100% } body { overflow: auto; height: 100% }",
            "",
            "",
        ),
        ("a fixed body", "body { position: fixed; inset: 0 }", "", ""),
        ("a window-high box that scrolls", ".app { height: 100vh; overflow: auto }", "<div class=\"app\">", ""),
        ("a box cut at a height", "", "<div style=\"max-height: 600px; overflow: hidden\">", ""),
        ("a fixed box", "", "<div style=\"position: fixed; top: 0\">", ""),
        (
            "a flex column of the window's height",
            "",
            "<div style=\"display: flex; flex-direction: column; height: 100vh; overflow: hidden\">",
            "",
        ),
        (
            "a window-high box that scrolls, important in its style attribute",
            "",
            "<div style=\"height: 100vh !important; overflow: auto !important\">",
            "",
        ),
        ("a fixed box, important in its style attribute", "", "<div style=\"position: fixed !important; top: 0\">", ""),
        ("pictures loaded lazily", "", "", "loading=\"lazy\""),
        (
            "pictures decoded lazily, in a window-high box",
            ".app { height: 100vh; overflow: auto }",
            "<div class=\"app\">",
            "loading=\"lazy\" decoding=\"async\"",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (_, style, wrap, img)) in cases.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("{i}.eml")),
            long_message(&format!("long-{i}@example.com"), 30, style, wrap, img),
        )
        .unwrap();
    }
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let out = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    // The PDF mailshelf makes.
    for (i, (case, ..)) in cases.iter().enumerate() {
        let file = pdf_of(&app, &format!("/message/long-{i}@example.com.pdf"), out.path()).await;
        if let Err(e) = whole(&file) {
            failures.push(format!("{case}: the PDF: {e}"));
        }
    }
    // The print view, printed by the reader's browser (after the PDFs: a renderer ending while
    // the test's browser waits would interrupt its read).
    let (base, _) = serve(app.router.clone()).await;
    let mut browser = Browser::launch();
    for (i, (case, ..)) in cases.iter().enumerate() {
        browser.goto(&format!("{base}/message/long-{i}@example.com/print"));
        let printed = browser.call("Page.printToPDF", serde_json::json!({ "printBackground": true }));
        let data = printed["data"].as_str().expect("PDF data");
        let file = out.path().join(format!("print-view-{i}.pdf"));
        std::fs::write(&file, base64::engine::general_purpose::STANDARD.decode(data).unwrap()).unwrap();
        if let Err(e) = whole(&file) {
            failures.push(format!("{case}: the print view: {e}"));
        }
    }
    // The message page, printed: its framed body is one block on paper, so the page says where
    // the whole body prints.
    browser.goto(&format!("{base}/message/long-0@example.com"));
    let printed = browser.call("Page.printToPDF", serde_json::json!({}));
    let file = out.path().join("message-page.pdf");
    std::fs::write(&file, base64::engine::general_purpose::STANDARD.decode(printed["data"].as_str().unwrap()).unwrap())
        .unwrap();
    let text = pdftotext(&file).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("The print view prints all of it: /message/long-0@example.com/print"), "{text}");
    // So does a conversation, each of its framed bodies.
    browser.goto(&format!("{base}/thread/long-0@example.com"));
    let printed = browser.call("Page.printToPDF", serde_json::json!({}));
    let file = out.path().join("conversation.pdf");
    std::fs::write(&file, base64::engine::general_purpose::STANDARD.decode(printed["data"].as_str().unwrap()).unwrap())
        .unwrap();
    let text = pdftotext(&file).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("The print view prints all of it: /message/long-0@example.com/print"), "{text}");
    assert!(failures.is_empty(), "cut short:\n{}", failures.join("\n"));
}

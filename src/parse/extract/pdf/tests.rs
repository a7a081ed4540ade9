//! PDF reading on documents made here with lopdf: text in page order, the operators and
//! annotations prepared for pdf-extract, and hostile documents that must stay within bounds.

use std::io::Write;

use lopdf::{dictionary, Document, Object, Stream};

use crate::parse::extract::{read_as, Extracted, Format, Outcome};

fn html(s: &str) -> String {
    s.to_string()
}

/// A document of pages, each given by its content stream; `extra` may add objects and change the
/// pages before it is written.
fn pdf_with(pages: &[Vec<u8>], extra: impl FnOnce(&mut Document, &[lopdf::ObjectId])) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for content in pages {
        let content = doc.add_object(Stream::new(dictionary! {}, content.clone()));
        kids.push(doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }));
    }
    extra(&mut doc, &kids);
    let count = kids.len() as i64;
    let kids: Vec<Object> = kids.into_iter().map(Object::Reference).collect();
    doc.objects
        .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }));
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("save");
    out
}

fn pdf(pages: &[&str]) -> Vec<u8> {
    pdf_with(&pages.iter().map(|p| p.as_bytes().to_vec()).collect::<Vec<_>>(), |_, _| {})
}

fn read(bytes: &[u8]) -> Extracted {
    read_as(Format::Pdf, bytes, html)
}

fn text_line(words: &str, y: u32) -> String {
    format!("BT /F1 12 Tf 72 {y} Td ({words}) Tj ET\n")
}

/// A one-page PDF showing `word`, whose page also draws a compressed stream that inflates to `mib`
/// MiB of spaces, before the text (`spaces_first`) or after it.
fn pdf_with_spaces(word: &str, mib: u64, spaces_first: bool) -> Vec<u8> {
    let mut spaces = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..mib {
        spaces.write_all(&chunk).expect("compress");
    }
    let spaces = spaces.finish().expect("compress");
    pdf_with(&[text_line(word, 700).into_bytes()], |doc, pages| {
        let padding = doc.add_object(Stream::new(dictionary! { "Filter" => "FlateDecode" }, spaces.clone()));
        let text = match doc.get_dictionary(pages[0]).and_then(|p| p.get(b"Contents")) {
            Ok(c) => c.clone(),
            Err(_) => return,
        };
        let contents =
            if spaces_first { vec![Object::Reference(padding), text] } else { vec![text, Object::Reference(padding)] };
        if let Ok(Object::Dictionary(page)) = doc.get_object_mut(pages[0]) {
            page.set("Contents", contents);
        }
    })
}

#[test]
fn pages_are_read_in_order_with_every_text_operator() {
    let bytes = pdf(&[
        &text_line("alpha bravo", 700),
        "BT /F1 12 Tf 14 TL 72 700 Td (charlie) Tj (delta) ' 2 1 (echo) \" T* [(fox) -250 (trot)] TJ ET",
        &text_line("golf", 700),
    ]);
    let got = read(&bytes);
    assert_eq!(got.outcome, Outcome::Whole, "{:?}", got.notices);
    let words = crate::search::words(&got.text);
    assert_eq!(words, ["alpha", "bravo", "charlie", "delta", "echo", "fox", "trot", "golf"], "{:?}", got.text);
}

#[test]
fn actual_text_stands_for_its_glyphs() {
    // As LibreOffice writes characters its fonts lack: one fallback glyph each, and the text in
    // marked content; a ligature's two letters likewise; a span without ActualText is kept.
    let bytes = pdf(&[concat!(
        "BT /F1 12 Tf 72 700 Td (Hello) Tj\n",
        "/Span << /ActualText <FEFF30533093306B3061306F> >> BDC 1 0 0 1 120 700 Tm (xx) Tj EMC\n",
        "1 0 0 1 72 680 Tm (of) Tj /Span << /ActualText (fi) >> BDC [(q)] TJ EMC (ce) Tj\n",
        "/Span << /Lang (en) >> BDC 1 0 0 1 72 660 Tm (kept) Tj EMC ET\n",
    )]);
    let got = read(&bytes);
    assert_eq!(got.outcome, Outcome::Whole, "{:?}", got.notices);
    assert_eq!(
        got.text.split_whitespace().collect::<Vec<_>>(),
        ["Hello", "こんにちは", "office", "kept"],
        "{:?}",
        got.text
    );
}

#[test]
fn annotation_appearances_are_read_with_their_page() {
    let bytes = pdf_with(&[text_line("pageword", 700).into_bytes()], |doc, pages| {
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let appearance = doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 100.into(), 20.into()],
                "Resources" => dictionary! { "Font" => dictionary! { "F2" => font } } },
            b"BT /F2 10 Tf 2 5 Td (fieldvalue) Tj ET".to_vec(),
        ));
        let hidden = doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Form", "Resources" => dictionary! { "Font" => dictionary! { "F2" => font } } },
            b"BT /F2 10 Tf (hiddenvalue) Tj ET".to_vec(),
        ));
        let shown = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Widget",
        "Rect" => vec![72.into(), 500.into(), 172.into(), 520.into()], "AP" => dictionary! { "N" => appearance } });
        let not_shown = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Widget", "F" => 2,
        "Rect" => vec![72.into(), 400.into(), 172.into(), 420.into()], "AP" => dictionary! { "N" => hidden } });
        if let Ok(Object::Dictionary(page)) = doc.get_object_mut(pages[0]) {
            page.set("Annots", vec![Object::Reference(shown), Object::Reference(not_shown)]);
        }
    });
    let got = read(&bytes);
    assert!(got.text.contains("pageword") && got.text.contains("fieldvalue"), "{:?}", got.text);
    assert!(!got.text.contains("hiddenvalue"), "{:?}", got.text);
}

#[test]
fn forms_drawing_forms_stay_bounded() {
    // A form that draws itself, and a chain of forms each drawing the next twice (2^30 drawings
    // if followed).
    let bytes = pdf_with(&[b"/Loop Do /Chain0 Do".to_vec()], |doc, pages| {
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let looping = doc.new_object_id();
        let form = |content: &[u8], xobjects: lopdf::Dictionary| {
            Stream::new(
                dictionary! { "Type" => "XObject", "Subtype" => "Form",
                "Resources" => dictionary! { "Font" => dictionary! { "F1" => font }, "XObject" => xobjects } },
                content.to_vec(),
            )
        };
        doc.objects.insert(
            looping,
            Object::Stream(form(b"BT /F1 12 Tf (loopword) Tj ET /Loop Do", dictionary! { "Loop" => looping })),
        );
        let mut next = doc.add_object(form(b"BT /F1 12 Tf (chainword) Tj ET", dictionary! {}));
        for i in (0..30).rev() {
            let name = format!("Chain{}", i + 1);
            let content = format!("/{name} Do /{name} Do");
            let mut xobjects = lopdf::Dictionary::new();
            xobjects.set(name.as_bytes(), next);
            next = doc.add_object(form(content.as_bytes(), xobjects));
        }
        if let Ok(Object::Dictionary(page)) = doc.get_object_mut(pages[0]) {
            page.set("Resources", dictionary! { "XObject" => dictionary! { "Loop" => looping, "Chain0" => next } });
        }
    });
    let got = read(&bytes);
    assert!(got.text.contains("loopword"), "{:?} {:?}", got.text, got.notices);
    assert!(got.text.matches("loopword").count() < 100, "{}", got.text.len());
    assert!(got.text.len() < 1 << 20);
}

#[test]
fn thousands_of_pages_stop_at_a_bound() {
    let page = text_line("pagetext ", 700).repeat(60);
    let pages: Vec<&str> = std::iter::repeat_n(page.as_str(), 3000).collect();
    let got = read(&pdf(&pages));
    assert_eq!(got.outcome, Outcome::Cut, "{:?}", got.notices);
    assert!(got.text.len() <= crate::limits::MAX_INDEXED_TEXT, "{}", got.text.len());
    assert!(got.text.starts_with("pagetext"), "{:?}", &got.text[..100.min(got.text.len())]);
}

#[test]
fn compressed_bombs_are_not_inflated_past_the_budget() {
    let bytes = pdf_with_spaces("beforebomb", 100, false);
    let got = read(&bytes);
    assert_eq!(got.outcome, Outcome::Cut, "{:?}", got.notices);
    assert!(got.notices.iter().any(|n| n.contains("decompresses to more")), "{:?}", got.notices);
}

#[test]
fn small_files_that_decompress_to_more_are_read_again_with_the_whole_budget() {
    // A file of kilobytes whose first stream inflates past what small files are first read
    // within, but far below a document's own bound: its text after that stream is found.
    let bytes = pdf_with_spaces("afterspaces", (crate::limits::MAX_SMALL_PDF_INFLATED >> 20) + 4, true);
    assert!(bytes.len() <= crate::limits::MAX_SMALL_PDF_BYTES, "{} bytes", bytes.len());
    let got = read(&bytes);
    assert_eq!(got.outcome, Outcome::Whole, "{:?}", got.notices);
    assert!(got.text.contains("afterspaces"), "{:?}", got.text.trim());
}

#[test]
fn pdfs_without_text_or_beyond_repair_say_so() {
    let image_only = pdf_with(&[b"q 100 0 0 100 0 0 cm /Im1 Do Q".to_vec()], |doc, pages| {
        let image = doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 2, "Height" => 2,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8 },
            vec![0, 255, 255, 0],
        ));
        if let Ok(Object::Dictionary(page)) = doc.get_object_mut(pages[0]) {
            page.set("Resources", dictionary! { "XObject" => dictionary! { "Im1" => image } });
        }
    });
    let got = read(&image_only);
    assert_eq!((got.outcome, got.text.trim()), (Outcome::Whole, ""), "{:?}", got.notices);

    for junk in [&b"%PDF-1.4\nnothing else"[..], b"%PDF-", b"%PDF-1.7\n1 0 obj\n<<"] {
        let got = read(junk);
        assert_eq!(got.outcome, Outcome::Unreadable, "{junk:?}");
        assert!(got.notices.iter().any(|n| n.contains("damaged")), "{:?}", got.notices);
    }

    // A cross-reference table pointing nowhere is rebuilt.
    let mut broken = pdf(&[&text_line("stillfound", 700)]);
    let at = memchr::memmem::rfind(&broken, b"startxref").expect("startxref");
    broken.truncate(at);
    broken.extend_from_slice(b"startxref\n999999\n%%EOF\n");
    let got = read(&broken);
    assert!(got.text.contains("stillfound"), "{:?} {:?}", got.text, got.notices);
}

#[test]
fn operators_pdf_extract_cannot_take_lose_only_themselves() {
    // `Tm` with five numbers makes pdf-extract give up on the page; the page is read again
    // without it.
    let bytes = pdf(&[
        &text_line("firstpage", 700),
        "BT /F1 12 Tf 1 0 0 1 72 (oops) Tm 72 650 Td (survivor) Tj ET",
        &text_line("thirdpage", 700),
    ]);
    let got = read(&bytes);
    for word in ["firstpage", "survivor", "thirdpage"] {
        assert!(got.text.contains(word), "{word}: {:?} {:?}", got.text, got.notices);
    }
}

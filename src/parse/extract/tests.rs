//! Recognition, and the readers of zipped, text and message formats, on documents made here.

use std::io::Write;

use super::*;

fn html(s: &str) -> String {
    // Enough of a reader for tests: markup out, text in.
    let mut out = String::new();
    let mut tag = false;
    for c in s.chars() {
        match c {
            '<' => tag = true,
            '>' => {
                tag = false;
                out.push(' ');
            }
            c if !tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// A zip of `(name, bytes)` members, deflated.
pub(super) fn zip_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = ::zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = ::zip::write::SimpleFileOptions::default().compression_method(::zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        w.start_file(*name, options).expect("member");
        w.write_all(bytes).expect("write");
    }
    w.finish().expect("zip").into_inner()
}

fn docx(document: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let body = format!(
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{document}</w:body></w:document>"#
    );
    let mut members: Vec<(&str, &[u8])> =
        vec![("[Content_Types].xml", b"<Types/>"), ("word/document.xml", body.as_bytes())];
    members.extend(extra.iter().map(|(n, c)| (*n, c.as_bytes())));
    zip_of(&members)
}

fn read(bytes: &[u8], name: &str) -> Extracted {
    read_file(bytes, Some(name), "", html).expect("a document")
}

fn ole(streams: &[&str]) -> Vec<u8> {
    let mut cf = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).expect("create");
    for s in streams {
        cf.create_stream(format!("/{s}")).expect("stream").write_all(b"data").expect("write");
    }
    cf.flush().expect("flush");
    cf.into_inner().into_inner()
}

/// A case of recognition: what it shows, the bytes, the file name, the declared type, the answer.
type Case<'a> = (&'a str, Vec<u8>, &'a str, &'a str, Option<Recognised>);

/// A document read: its name, its bytes, words it must give, words it must not.
type Reading<'a> = (&'a str, Vec<u8>, &'a [&'a str], &'a [&'a str]);

#[test]
fn documents_are_recognised_by_their_bytes() {
    use Recognised::{NotRead, Readable};
    let word = docx("<w:p/>", &[]);
    let excel = zip_of(&[("[Content_Types].xml", b"<Types/>"), ("xl/workbook.xml", b"<workbook/>")]);
    let slides = zip_of(&[("[Content_Types].xml", b"<Types/>"), ("ppt/presentation.xml", b"<p/>")]);
    let odt = zip_of(&[("mimetype", b"application/vnd.oasis.opendocument.text"), ("content.xml", b"<x/>")]);
    let ods = zip_of(&[("mimetype", b"application/vnd.oasis.opendocument.spreadsheet")]);
    let archive = zip_of(&[("notes.txt", b"hello")]);
    let cases: Vec<Case> = vec![
        ("PDF under any name", b"%PDF-1.7\n%...".to_vec(), "scan.bin", "", Some(Readable(Format::Pdf))),
        (
            "PDF after junk",
            b"\r\n\r\n%PDF-1.4\n".to_vec(),
            "x",
            "application/octet-stream",
            Some(Readable(Format::Pdf)),
        ),
        ("Word named .zip", word, "archive.zip", "application/zip", Some(Readable(Format::Word))),
        ("Excel", excel, "book.xlsx", "", Some(Readable(Format::Excel))),
        ("PowerPoint", slides, "deck.pptx", "", Some(Readable(Format::PowerPoint))),
        ("OpenDocument text", odt, "doc.odt", "", Some(Readable(Format::OpenText))),
        ("OpenDocument spreadsheet", ods, "sheet.ods", "", Some(Readable(Format::OpenSpreadsheet))),
        ("a plain zip", archive, "files.zip", "", Some(Readable(Format::Zip))),
        ("RTF", b"{\\rtf1\\ansi hello}".to_vec(), "letter.doc", "application/msword", Some(Readable(Format::Rtf))),
        ("HTML by its bytes", b"<!DOCTYPE html><p>x".to_vec(), "page", "", Some(Readable(Format::Html))),
        ("HTML by its type", b"<p>x".to_vec(), "page", "text/html", Some(Readable(Format::Html))),
        ("text by its type", b"plain words".to_vec(), "notes", "text/plain", Some(Readable(Format::Text))),
        (
            "CSV sent as Excel",
            b"a;b\n1;2\n".to_vec(),
            "export.csv",
            "application/vnd.ms-excel",
            Some(Readable(Format::Text)),
        ),
        (
            "text file sent as data",
            b"caf\xe9 au lait".to_vec(),
            "menu.txt",
            "application/octet-stream",
            Some(Readable(Format::Text)),
        ),
        ("binary named .txt", b"\x00\x01\x02\x03".to_vec(), "x.txt", "application/octet-stream", None),
        ("a picture", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec(), "photo.png", "image/png", None),
        (
            "gzip",
            b"\x1f\x8b\x08\0\0\0\0\0".to_vec(),
            "logs.tar.gz",
            "",
            Some(NotRead("a gzip file: only zip archives are opened")),
        ),
        (
            "not a zip",
            b"this is not a zip".to_vec(),
            "report.docx",
            "",
            Some(NotRead("damaged: it is not an Office Open XML file")),
        ),
        (
            "not a PDF",
            b"GIF89a".to_vec(),
            "invoice.pdf",
            "application/pdf",
            Some(NotRead("damaged: it is not a PDF file")),
        ),
        (
            "legacy Word",
            ole(&["WordDocument", "1Table"]),
            "old.doc",
            "",
            Some(NotRead("a Word 97–2003 document (.doc), a format mailshelf does not read")),
        ),
        (
            "legacy Excel",
            ole(&["Workbook"]),
            "old.xls",
            "",
            Some(NotRead("an Excel 97–2003 workbook (.xls), a format mailshelf does not read")),
        ),
        (
            "encrypted Office",
            ole(&["EncryptionInfo", "EncryptedPackage"]),
            "secret.docx",
            "",
            Some(NotRead("encrypted with a password")),
        ),
        (
            "an Outlook message",
            ole(&["__substg1.0_0037001F", "__properties_version1.0"]),
            "fwd.msg",
            "",
            Some(Readable(Format::Message)),
        ),
    ];
    for (what, bytes, name, declared, want) in cases {
        assert_eq!(recognise_bytes_for_test(&bytes, declared, name), want, "{what}");
    }
}

fn recognise_bytes_for_test(bytes: &[u8], declared: &str, name: &str) -> Option<Recognised> {
    recognise::recognise_bytes(bytes, declared, Some(name), false)
}

#[test]
fn office_and_opendocument_text_is_read() {
    let word = docx(
        r#"<w:p><w:r><w:t>bodyword</w:t></w:r><w:r><w:tab/><w:t xml:space="preserve">second &amp; third</w:t></w:r></w:p>
           <w:tbl><w:tr><w:tc><w:p><w:r><w:t>cellone</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>celltwo</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
           <w:p><w:del><w:r><w:delText>deletedword</w:delText></w:r></w:del><w:r><w:instrText>PAGE</w:instrText></w:r></w:p>
           <mc:AlternateContent xmlns:mc="m"><mc:Choice><w:t>boxword</w:t></mc:Choice><mc:Fallback><w:t>boxword</w:t></mc:Fallback></mc:AlternateContent>"#,
        &[
            ("word/header1.xml", "<w:hdr><w:p><w:r><w:t>headerword</w:t></w:r></w:p></w:hdr>"),
            ("word/footer2.xml", "<w:ftr><w:p><w:r><w:t>footerword</w:t></w:r></w:p></w:ftr>"),
            (
                "word/comments.xml",
                "<w:comments><w:comment><w:p><w:r><w:t>commentword</w:t></w:r></w:p></w:comment></w:comments>",
            ),
            (
                "word/footnotes.xml",
                "<w:footnotes><w:footnote><w:p><w:r><w:t>noteword</w:t></w:r></w:p></w:footnote></w:footnotes>",
            ),
            ("word/afchunk.htm", "<html><body><p>pastedword</p></body></html>"),
        ],
    );
    let excel = zip_of(&[
        ("[Content_Types].xml", b"<Types/>"),
        ("xl/workbook.xml", br#"<workbook><sheets><sheet name="Budget 2026" sheetId="1"/></sheets></workbook>"#),
        ("xl/sharedStrings.xml", br#"<sst><si><t>sharedword</t></si><si><r><t>rich</t></r><r><t>word</t></r><rPh><t>phoneticword</t></rPh></si></sst>"#),
        (
            "xl/worksheets/sheet1.xml",
            br#"<worksheet><sheetData><row><c t="s"><v>0</v></c><c t="s"><v>1</v></c><c t="inlineStr"><is><t>inlineword</t></is></c><c><v>2.5000000000000001E-2</v></c><c t="b"><v>1</v></c></row></sheetData><headerFooter><oddHeader>&amp;CQuarterly&amp;RPage &amp;P</oddHeader></headerFooter></worksheet>"#,
        ),
        ("xl/comments1.xml", br#"<comments><commentList><comment><text><t>noteonsheet</t></text></comment></commentList></comments>"#),
    ]);
    let slides = zip_of(&[
        ("[Content_Types].xml", b"<Types/>"),
        ("ppt/presentation.xml", b"<p:presentation/>"),
        ("ppt/slides/slide10.xml", br#"<p:sld><a:p><a:r><a:t>lastslide</a:t></a:r></a:p></p:sld>"#),
        ("ppt/slides/slide2.xml", br#"<p:sld><a:p><a:r><a:t>firstslide</a:t></a:r></a:p></p:sld>"#),
        ("ppt/notesSlides/notesSlide1.xml", br#"<p:notes><a:p><a:r><a:t>speakernote</a:t></a:r></a:p></p:notes>"#),
    ]);
    let odt = zip_of(&[
        ("mimetype", b"application/vnd.oasis.opendocument.text"),
        (
            "content.xml",
            br#"<office:document-content><office:automatic-styles><style:style>stylenoise</style:style></office:automatic-styles><office:body><office:text><text:tracked-changes><text:changed-region><text:deletion><text:p>removedword</text:p></text:deletion></text:changed-region></text:tracked-changes><text:h>headingword</text:h><text:p>odt<text:s/>body<text:tab/>word</text:p></office:text></office:body></office:document-content>"#,
        ),
        (
            "styles.xml",
            br#"<office:document-styles><office:master-styles><style:master-page><style:footer><text:p>odtfooter</text:p></style:footer></style:master-page></office:master-styles></office:document-styles>"#,
        ),
    ]);
    let flat = br#"<?xml version="1.0"?><office:document xmlns:office="o" office:mimetype="application/vnd.oasis.opendocument.text"><office:body><office:text><text:p>flatword</text:p></office:text></office:body></office:document>"#;
    let cases: Vec<Reading> = vec![
        (
            "report.docx",
            word,
            &[
                "bodyword",
                "second & third",
                "cellone",
                "celltwo",
                "headerword",
                "footerword",
                "commentword",
                "noteword",
                "pastedword",
            ],
            &["deletedword", "PAGE", "boxword boxword"],
        ),
        (
            "budget.xlsx",
            excel,
            &["Budget 2026", "sharedword", "richword", "inlineword", "0.025", "Quarterly", "noteonsheet"],
            &["phoneticword", "2.5000000000000001E-2", "&P"],
        ),
        ("deck.pptx", slides, &["firstslide\nlastslide", "speakernote"], &[]),
        ("letter.odt", odt, &["headingword", "odt body\tword", "odtfooter"], &["removedword", "stylenoise"]),
        ("flat.fodt", flat.to_vec(), &["flatword"], &[]),
    ];
    for (name, bytes, has, lacks) in cases {
        let got = read(&bytes, name);
        assert_eq!(got.outcome, Outcome::Whole, "{name}: {:?}", got.notices);
        for word in has {
            assert!(got.text.contains(word), "{name}: {word:?} in {:?}", got.text);
        }
        for word in lacks {
            assert!(!got.text.contains(word), "{name}: no {word:?} in {:?}", got.text);
        }
    }
}

#[test]
fn zip_archives_give_their_documents_one_level_deep() {
    let inner = zip_of(&[("deep.txt", b"deepword")]);
    let word = docx("<w:p><w:r><w:t>wordinzip</w:t></w:r></w:p>", &[]);
    let outer = zip_of(&[
        ("readme.txt", b"readmeword"),
        ("docs/contract.docx", &word),
        ("nested.zip", &inner),
        ("photo.jpg", b"\xff\xd8\xff\xe0 not really"),
        ("tool.exe", b"MZ"),
    ]);
    let got = read(&outer, "bundle.zip");
    assert_eq!(got.format, Some(Format::Zip));
    for word in ["readme.txt", "readmeword", "docs/contract.docx", "wordinzip", "nested.zip", "photo.jpg", "tool.exe"] {
        assert!(got.text.contains(word), "{word} in {:?}", got.text);
    }
    assert!(!got.text.contains("deepword"), "{:?}", got.text);
    assert!(got.notices.iter().any(|n| n.contains("nested.zip") && n.contains("not opened")), "{:?}", got.notices);
}

/// A zip whose member says it holds `declared` bytes.
fn claiming(member: &str, data: &[u8], declared: u32) -> Vec<u8> {
    let mut bytes = zip_of(&[("[Content_Types].xml", b"<Types/>"), (member, data)]);
    for (signature, at) in [(&b"PK\x03\x04"[..], 22), (&b"PK\x01\x02"[..], 24)] {
        for start in memchr::memmem::find_iter(&bytes.clone(), signature) {
            let name_at = if signature == b"PK\x03\x04" { 30 } else { 46 };
            if bytes.get(start + name_at..start + name_at + member.len()) == Some(member.as_bytes()) {
                bytes[start + at..start + at + 4].copy_from_slice(&declared.to_le_bytes());
            }
        }
    }
    bytes
}

#[test]
fn zip_bombs_stay_within_their_budget() {
    // Truly inflating: 80 MiB of markup without text, more than one document may decompress.
    let mut bomb = ::zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = ::zip::write::SimpleFileOptions::default()
        .compression_method(::zip::CompressionMethod::Deflated)
        .large_file(true);
    bomb.start_file("[Content_Types].xml", options).expect("member");
    bomb.start_file("word/document.xml", options).expect("member");
    bomb.write_all(b"<w:document><w:body><w:p><w:r><w:t>before</w:t></w:r></w:p>").expect("write");
    let filler = b"<w:bookmarkStart/>".repeat(64 * 1024);
    for _ in 0..(80 << 20) / filler.len() {
        bomb.write_all(&filler).expect("write");
    }
    let bomb = bomb.finish().expect("zip").into_inner();
    assert!(bomb.len() < 1 << 20, "a bomb: {} bytes", bomb.len());
    let got = read(&bomb, "invoice.docx");
    assert_eq!(got.outcome, Outcome::Cut, "{:?}", got.notices);
    assert!(got.text.contains("before"), "{:?}", got.text);
    // Decompression or time (in a build without optimisation, the markup takes longer to read
    // than it takes to inflate): a bound, said.
    assert!(got.notices.iter().any(|n| n.starts_with("cut:")), "{:?}", got.notices);

    // Declaring more than may be read: a member read whole is refused before anything is
    // inflated; one read as a stream is read as far as it goes, nothing allocated for the claim.
    let claims = claiming("big.txt", b"small", 0x7fff_ffff);
    let got = read(&claims, "claims.zip");
    assert_eq!(got.outcome, Outcome::Cut, "{:?}", got.notices);
    assert!(got.notices.iter().any(|n| n.contains("decompresses to more")), "{:?}", got.notices);
    let claims = claiming("word/document.xml", b"<w:t>x</w:t>", 0x7fff_ffff);
    let got = read(&claims, "claims.docx");
    assert_eq!((got.outcome, got.text.trim()), (Outcome::Whole, "x"), "{:?}", got.notices);
    // Declaring less than it holds: the zip reader stops at the declared size.
    let lies = claiming("word/document.xml", &b"<w:p><w:r><w:t>word</w:t></w:r></w:p>".repeat(1000), 100);
    let got = read(&lies, "lies.docx");
    assert!(got.text.len() < 100, "{:?}", got.text);
}

#[test]
fn text_files_read_in_their_charset() {
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("latin.txt", b"Caf\xe9 cr\xe8me".to_vec(), "application/octet-stream", "Café crème"),
        (
            "utf16.txt",
            [&b"\xff\xfe"[..], &"Grüße".encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>()].concat(),
            "",
            "Grüße",
        ),
        (
            "page.html",
            b"<html><head><meta charset=windows-1251></head><body>\xcf\xf0\xe8\xe2\xe5\xf2</body></html>".to_vec(),
            "text/html",
            "Привет",
        ),
        ("data.csv", "date;amount\n2026-01-02;12,50\n".as_bytes().to_vec(), "text/csv", "12,50"),
    ];
    for (name, bytes, declared, want) in cases {
        let got = read_file(&bytes, Some(name), declared, html).expect(name);
        assert!(got.text.contains(want), "{name}: {want:?} in {:?}", got.text);
    }
}

#[test]
fn attached_messages_give_their_text_and_documents() {
    let inner = zip_of(&[("minutes.txt", b"minutesword")]);
    let mut eml = String::from(
        "From: Ann <ann@example.org>\r\nSubject: Forwarded plan\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbodyofattached\r\n\
         --b\r\nContent-Type: application/zip\r\nContent-Disposition: attachment; filename=m.zip\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n",
    );
    use base64::Engine;
    eml.push_str(&base64::engine::general_purpose::STANDARD.encode(&inner));
    eml.push_str("\r\n--b--\r\n");
    let got = read(eml.as_bytes(), "plan.eml");
    assert_eq!(got.format, Some(Format::Message));
    for word in ["Forwarded plan", "bodyofattached", "minutesword"] {
        assert!(got.text.contains(word), "{word} in {:?}", got.text);
    }
}

#[test]
fn budgets_cut_documents_and_say_why() {
    let text = "word ".repeat(10_000);
    let part = crate::model::Part {
        section: "2".into(),
        parent: None,
        children: Vec::new(),
        content_type: "text/plain".into(),
        declared_type: true,
        charset: None,
        start: None,
        params: Vec::new(),
        content_id: None,
        content_location: None,
        location: None,
        base: String::new(),
        related_scope: None,
        filename: Some("long.txt".into()),
        disposition: Some("attachment".into()),
        body: Body::Text(text),
        raw_range: 0..0,
        damaged: false,
        transfer_encoding: None,
        external: None,
    };
    let mut budget = Budget::new(html, 1000);
    let first = budget.read(&part).expect("a document");
    assert_eq!((first.outcome, first.text.len()), (Outcome::Cut, 1000));
    assert!(first.notices.iter().any(|n| n.contains("fills what the index keeps")), "{:?}", first.notices);
    assert!(budget.spent());
    let second = budget.read(&part).expect("a document");
    assert_eq!((second.outcome, second.text.len()), (Outcome::Cut, 0));
}

#[test]
fn every_reader_answers_whatever_it_is_given() {
    let junk: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"PK\x03\x04".to_vec(),
        b"PK\x05\x06\0\0\0\0\0\0\0\0\xff\xff\xff\xff\0\0\0\0\0\0".to_vec(),
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >>".to_vec(),
        b"{\\rtf1 {{{{".to_vec(),
        b"<?xml version='1.0'?><office:document office:mimetype='application/vnd.oasis.opendocument.text'><".to_vec(),
        vec![0xff; 4096],
    ];
    let formats = [
        Format::Pdf,
        Format::Word,
        Format::Excel,
        Format::PowerPoint,
        Format::OpenText,
        Format::Rtf,
        Format::Html,
        Format::Text,
        Format::Zip,
        Format::Message,
    ];
    for bytes in &junk {
        for format in formats {
            let got = read_as(format, bytes, html);
            assert!(got.outcome != Outcome::Whole || got.text.len() <= bytes.len() * 4, "{format:?}");
        }
    }
}

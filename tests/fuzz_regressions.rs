//! The fuzz targets' code path (`fuzz/src/lib.rs`, compiled in here as it is) over every input the
//! fuzzers found (`tests/fixtures/fuzz/<target>/`) and over hand-made hostile inputs of the kinds
//! fuzzing reaches slowly or, within 64 KB, not at all: deep nesting, huge headers, many parts. Each must
//! simply finish: no panic, no stack overflow, and no run long enough to stall the suite.

use std::fs;
use std::path::PathBuf;

#[path = "../fuzz/src/lib.rs"]
mod drive;

fn fixtures(target: &str) -> Vec<PathBuf> {
    let dir = crate::common::repo_path(&format!("tests/fixtures/fuzz/{target}"));
    let mut files: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Runs `drive` over every input kept for `target`, naming each first (so that a failure says which).
fn replay(target: &str, drive: impl Fn(&[u8])) {
    for f in fixtures(target) {
        println!("{}", f.display());
        drive(&fs::read(&f).expect("read fixture"));
    }
}

#[test]
fn message_findings_complete() {
    replay("message", drive::message);
}

/// Every input the mbox fuzzer found, and made-up mboxes whose separators are judged by what
/// follows them (a header field, a counted body's end), through the mbox target: the messages
/// found must not depend on the reader's buffer and must be the input's bytes.
#[test]
fn mbox_findings_complete() {
    let long_name = format!("X-{}: v", "N".repeat(2000));
    let made_up = [
        "From a\nSubject: 1\n\ntext\nFrom b\nX-Field: 2\n\nafter a line of text\n".to_string(),
        "From a\nContent-Length: 5\n\nhello\n\nFrom b\nSubject: 2\n\nx\n".to_string(),
        "From a\nContent-Length: 4\n\nhello\nFrom b\n".to_string(),
        "From a\nContent-Length: 99999999999\n\nshort\n".to_string(),
        "From a\r\nContent-Length: 2\r\n\r\nok\r\n\r\n\r\n\r\n".to_string(),
        format!("From a\nContent-Length: 1\n\nx{}From b\nS: 1\n\n", "\n".repeat(3000)),
        format!("From a\nS: 1\n\nt\nFrom b\n{long_name}\n\nbody\n"),
        "\u{feff}From a\nS: 1\n\n>From b\n>>From c\nFrom\n".to_string(),
        "From ".to_string(),
    ];
    for input in made_up {
        drive::mbox(input.as_bytes());
    }
    // The files Dovecot (dbox), Python (MMDF, Babyl) and mutt (MMDF) wrote, whole, cut at every few bytes,
    // and with a byte changed.
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (file, cut_every, change_every) in [
        ("dovecot-dbox/mdbox/storage/m.1", 97, 211),
        ("mmdf-babyl/archive.mmdf", 37, 41),
        ("mmdf-babyl/mutt.mmdf", 37, 41),
        ("mmdf-babyl/RMAIL", 37, 41),
    ] {
        let bytes = fs::read(fixtures.join(file)).expect("the fixture");
        for cut in (0..bytes.len()).step_by(cut_every).chain([bytes.len()]) {
            drive::mbox(&bytes[..cut]);
        }
        for at in (0..bytes.len()).step_by(change_every) {
            let mut changed = bytes.clone();
            changed[at] ^= 0x41;
            drive::mbox(&changed);
        }
    }
    replay("mbox", drive::mbox);
}

/// Every input the compressed-files fuzzer found, and made-up ones: an mbox in each format, cut
/// short, damaged in the middle, and a small gzip that inflates to 64 MiB of one line.
#[test]
fn packed_findings_complete() {
    use std::io::Write;
    let mbox = b"From a Mon Nov  2 10:00:00 2026\nSubject: 1\n\none\nFrom b Mon Nov  2 10:00:00 2026\nContent-Length: 400\n\ntwo\n";
    let bzip2 = |bytes: &[u8]| {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        e.write_all(bytes).expect("write");
        e.finish().expect("finish")
    };
    let xz = std::process::Command::new("sh")
        .args(["-c", "printf 'From a Mon Nov  2 10:00:00 2026\\nSubject: 1\\n\\none\\n' | xz -c"])
        .output()
        .expect("the xz tool (scripts/test installs it)")
        .stdout;
    let lz4 = std::process::Command::new("sh")
        .args(["-c", "printf 'From a Mon Nov  2 10:00:00 2026\\nSubject: 1\\n\\none\\n' | lz4 -q -c"])
        .output()
        .expect("the lz4 tool (scripts/test installs it)")
        .stdout;
    // A Maildir file Dovecot wrote in its own LZ4 format.
    let dovecot = std::fs::read(crate::common::repo_path(
        "tests/fixtures/dovecot-zlib/Maildir/new/1796617022.M897180P32414.vm,S=151093,W=153013",
    ))
    .expect("fixture");
    let whole =
        [crate::common::gzip(mbox), zstd::encode_all(&mbox[..], 3).expect("zstd"), bzip2(mbox), xz, lz4, dovecot];
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for packed in whole {
        inputs.push(packed[..packed.len() / 2].to_vec());
        let mut damaged = packed.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x55;
        inputs.extend([packed, damaged]);
    }
    inputs.push(crate::common::gzip(&vec![b'x'; 64 << 20]));
    for input in &inputs {
        drive::packed(input);
    }
    replay("packed", drive::packed);
}

/// Every input the document readers' fuzzers found, through all of them.
#[test]
fn document_findings_complete() {
    use mailshelf::parse::extract::Format;
    let all = [
        Format::Pdf,
        Format::Word,
        Format::Excel,
        Format::PowerPoint,
        Format::OpenText,
        Format::Rtf,
        Format::Text,
        Format::Html,
        Format::Message,
        Format::Zip,
    ];
    for target in ["pdf", "ooxml", "odf", "rtf", "text", "zip"] {
        replay(target, |data| drive::document(&all, data));
    }
}

/// Documents of the shapes that cost most, at sizes a 256 KB fuzz input cannot reach: markup
/// nested 100,000 deep, a PDF of 50,000 nested arrays, a zip listing 100,000 members, RTF of
/// 200,000 groups.
#[test]
fn hostile_documents_complete() {
    use std::io::Write;

    use mailshelf::parse::extract::Format;
    let zip = |members: &[(&str, Vec<u8>)]| {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in members {
            w.start_file(*name, options).expect("member");
            w.write_all(bytes).expect("write");
        }
        w.finish().expect("zip").into_inner()
    };
    let deep = format!(
        "<w:document><w:body>{}<w:t>x</w:t>{}</w:body></w:document>",
        "<w:p>".repeat(100_000),
        "</w:p>".repeat(100_000)
    );
    let word = zip(&[("[Content_Types].xml", b"<Types/>".to_vec()), ("word/document.xml", deep.into_bytes())]);
    drive::document(&[Format::Word], &word);
    let arrays = format!(
        "%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages {} >>\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF\n",
        "[".repeat(50_000)
    );
    drive::document(&[Format::Pdf], arrays.as_bytes());
    let names: Vec<(String, Vec<u8>)> = (0..100_000).map(|i| (format!("f{i}.txt"), Vec::new())).collect();
    let many = zip(&names.iter().map(|(n, b)| (n.as_str(), b.clone())).collect::<Vec<_>>());
    drive::document(&[Format::Zip], &many);
    let groups = format!("{{\\rtf1 {}text{}}}", "{\\b ".repeat(200_000), "}".repeat(200_000));
    drive::document(&[Format::Rtf], groups.as_bytes());
}

#[test]
fn query_findings_complete() {
    replay("query", |bytes| drive::query(&String::from_utf8_lossy(bytes)));
}

fn crlf(s: &str) -> Vec<u8> {
    s.replace("\r\n", "\n").replace('\n', "\r\n").into_bytes()
}

#[test]
fn deeply_nested_multiparts() {
    let depth = 400;
    let mut m = String::from("Message-ID: <deep-multipart@test.invalid>\n");
    for i in 0..depth {
        m.push_str(&format!("Content-Type: multipart/related; boundary=\"b{i}\"\n\n--b{i}\n"));
    }
    m.push_str("Content-Type: text/html\n\n<img src=\"cid:x\"><p>bottom</p>\n");
    for i in (0..depth).rev() {
        m.push_str(&format!("--b{i}--\n"));
    }
    drive::message(&crlf(&m));
    // The same without closing boundaries, as a truncated file would be.
    let open_only = m.split("--b399--").next().expect("prefix").to_string();
    drive::message(&crlf(&open_only));
}

#[test]
fn deeply_nested_messages() {
    let mut m = String::new();
    for i in 0..300 {
        m.push_str(&format!("Message-ID: <level-{i}@test.invalid>\nContent-Type: message/rfc822\n\n"));
    }
    m.push_str("Subject: innermost\nContent-Type: text/html\n\n<a href=\"mid:level-0@test.invalid\">up</a>\n");
    drive::message(&crlf(&m));
}

/// Enclosed messages are views into their parent's bytes, not copies: nesting 48 deep (the cap)
/// around a 1.3 MB body peaks at 12 MB in a release test binary, where copies at every level took
/// 72 MB (fuzz/README.md, Known limits).
#[test]
fn deeply_nested_messages_around_a_large_body() {
    let mut m = String::new();
    for i in 0..60 {
        m.push_str(&format!("Message-ID: <big-{i}@test.invalid>\nContent-Type: message/rfc822\n\n"));
    }
    m.push_str("Content-Type: text/plain\n\n");
    m.push_str(&format!("{}\n", "A".repeat(76)).repeat(1 << 14));
    drive::message(&crlf(&m));
}

#[test]
fn huge_header_lines_and_many_headers() {
    let long = "x".repeat(1 << 20);
    let mut m = format!("Subject: {long}\nFrom: {long}@example.com\nReferences: ");
    for i in 0..20_000 {
        m.push_str(&format!("<r{i}@x> "));
    }
    m.push('\n');
    for i in 0..10_000 {
        m.push_str(&format!("X-H{i}: =?utf-8?b?w6k=?= =?iso-8859-1?q?=E9?=\n"));
    }
    m.push_str(&format!("Content-Type: text/plain; format=flowed; name*0*=utf-8''{long}\n\n> > body\n"));
    drive::message(&crlf(&m));
    // Names whose characters are split between encoded words, by the tens of thousands.
    let names: String = (0..20_000).map(|i| format!("=?UTF-8?Q?J=C3?= =?UTF-8?Q?=BC{i}?= <a{i}@x>, ")).collect();
    drive::message(&crlf(&format!("From: {names}\nTo: {names}\nSubject: names\n\nbody\n")));
    // One header line with no end and no body at all.
    drive::message(format!("Content-Type: multipart/mixed; boundary={long}").as_bytes());
}

/// A multipart/related of `n` resources, each with a Content-ID and a Content-Location, and an HTML
/// root that refers to every one of them by `cid:` and by relative location (in `srcset`); every
/// tenth Content-ID is shared with a stylesheet.
fn many_parts(n: usize) -> Vec<u8> {
    let mut html = String::from("<html><head><base href=\"http://e.example/d/\"></head><body>");
    for i in 0..n {
        html.push_str(&format!("<img src=\"cid:p{i}@x\" srcset=\"r{i}.png 1x, r{i}.png 2x\">"));
    }
    html.push_str("</body></html>");
    let mut m = String::from(
        "Content-Type: multipart/related; boundary=B; type=\"text/html\"\nContent-Location: http://e.example/d/\n\n",
    );
    m.push_str(&format!("--B\nContent-Type: text/html\n\n{html}\n"));
    for i in 0..n {
        m.push_str(&format!("--B\nContent-Type: image/png\nContent-ID: <p{i}@x>\nContent-Location: r{i}.png\n\nx\n"));
        if i % 10 == 0 {
            // A stylesheet sharing the Content-ID: such parts are addressed by section instead.
            m.push_str(&format!(
                "--B\nContent-Type: text/css\nContent-ID: <p{i}@x>\n\np{{background:url(r{i}.png)}}\n"
            ));
        }
    }
    m.push_str("--B--\n");
    crlf(&m)
}

#[test]
fn many_parts_referring_to_each_other() {
    drive::message(&many_parts(1_000));
}

/// 16,000 parts (2.4 MB): each reference and each part URL scans every part (Content-ID and
/// Content-Location lookups in `model`/`route`), so this takes about 12 s in a release build and
/// far longer in a debug one. Runs in no time once those lookups are indexed (fuzz/README.md).
#[test]
fn many_parts_at_scale() {
    drive::message(&many_parts(16_000));
}

#[test]
fn deeply_nested_markup_and_stylesheets() {
    let depth = 50_000;
    let css =
        format!("a{{b:{}url(cid:x){}}}@import '{}", "image-set(".repeat(depth), ")".repeat(depth), "\\".repeat(depth));
    let html = format!(
        "{}<p style=\"background:{}url(cid:y)\">{}</p><style>{css}</style><svg><set attributeName=href>",
        "<div><table><tr><td><b><i>".repeat(depth / 5),
        "(".repeat(depth),
        "&#x".repeat(depth)
    );
    let m = format!(
        "Content-Type: multipart/related; boundary=B\n\n--B\nContent-Type: text/html\n\n{html}\n--B\n\
         Content-Type: text/css\n\n{css}\n--B--\n"
    );
    drive::message(&crlf(&m));
}

#[test]
fn hostile_queries() {
    let queries = [
        "(".repeat(999),
        format!("{}a{}", "(".repeat(400), ")".repeat(400)),
        "-(".repeat(300),
        "OR ".repeat(300),
        "a OR ".repeat(199) + "b",
        "\"".repeat(999),
        format!("{}x", "-".repeat(998)),
        "from:".repeat(199),
        "larger:99999999999999999999G smaller:-1 before:0-0-0 after:9999-12-31".to_string(),
        "é".repeat(500),
        "\u{0}\u{85}\u{2028}(\u{3000})".to_string(),
    ];
    for q in &queries {
        drive::query(q);
    }
}

/// Every input the binary formats' fuzzer found (Outlook `.msg`, TNEF, `.webarchive`), through
/// the message path it fuzzes.
#[test]
fn binary_findings_complete() {
    replay("binary", drive::message);
}

/// Every input the Outlook data file fuzzer found, and the test fixtures' own data files cut
/// short at every tenth of their length and with a byte changed at fifty places along them: each
/// lists and reads what it can, its items parse, and nothing panics or hangs.
#[test]
fn pst_findings_complete() {
    replay("pst", drive::pst);
    for name in ["ansi-cyclic.pst", "unicode-cyclic.pst"] {
        let whole = fs::read(crate::common::repo_path(&format!("tests/fixtures/pst/{name}"))).expect("read fixture");
        drive::pst(&whole);
        for tenth in 1..10 {
            drive::pst(&whole[..whole.len() * tenth / 10]);
        }
        for at in (0..whole.len()).step_by(whole.len().div_ceil(50)) {
            let mut changed = whole.clone();
            changed[at] ^= 0x5a;
            drive::pst(&changed);
        }
    }
}

#[test]
fn cms_findings_complete() {
    replay("cms", drive::cms);
}

#[test]
fn openpgp_findings_complete() {
    replay("openpgp", drive::openpgp);
}

/// The S/MIME objects and OpenPGP blocks of the crypto fixtures, cut short at every tenth of their
/// length and with bytes flipped along them: each must answer (an error), never panic nor hang.
#[test]
fn damaged_signatures_and_encrypted_data_stay_bounded() {
    use base64::Engine as _;
    let dir = crate::common::repo_path("tests/fixtures/crypto/messages");
    let mut blobs = Vec::new();
    for e in fs::read_dir(dir).expect("fixtures") {
        let text = String::from_utf8_lossy(&fs::read(e.expect("entry").path()).expect("read")).into_owned();
        // Every base64 run of 20 lines or more is a CMS object; every armored block OpenPGP.
        let mut run = String::new();
        for line in text.lines().chain(std::iter::once("")) {
            let l = line.trim_end_matches('\r');
            if l.len() >= 60 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)) {
                run.push_str(l);
            } else {
                if run.len() > 1200 {
                    if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(&run) {
                        blobs.push((true, der));
                    }
                }
                run.clear();
            }
        }
        for block in text.split("-----BEGIN PGP ").skip(1) {
            blobs.push((false, format!("-----BEGIN PGP {block}").into_bytes()));
        }
    }
    assert!(blobs.len() >= 25, "found {} blobs", blobs.len());
    for (cms, blob) in &blobs {
        let run = |b: &[u8]| if *cms { drive::cms(b) } else { drive::openpgp(b) };
        for tenth in 1..10 {
            run(&blob[..blob.len() * tenth / 10]);
        }
        let mut flipped = blob.clone();
        for at in (0..flipped.len()).step_by(97) {
            flipped[at] ^= 0x5a;
        }
        run(&flipped);
    }
}

/// BER nested far deeper than any real object, a length claiming gigabytes, and a message whose
/// signed layers wrap each other beyond the limit.
#[test]
fn hostile_cms_structures() {
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        deep.extend_from_slice(&[0x30, 0x80]);
    }
    drive::cms(&deep);
    drive::cms(&[0x30, 0x84, 0x7f, 0xff, 0xff, 0xff, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02]);
    let mut pieces = vec![0x24, 0x80];
    for _ in 0..200_000 {
        pieces.extend_from_slice(&[0x04, 0x00]);
    }
    pieces.extend_from_slice(&[0, 0]);
    drive::cms(&pieces);
}

/// Every fuzz dictionary loads in libFuzzer: each entry a quoted string whose only escapes are
/// `\\`, `\"` and `\xNN` (libFuzzer refuses the whole file, and the target does not run, on a
/// `\n`), optionally named (`name="…"`); comments and blank lines between.
#[test]
fn fuzz_dictionaries_load() {
    let dir = crate::common::repo_path("fuzz/dict");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir).expect("fuzz/dict").map(|e| e.expect("entry").path()).collect();
    files.sort();
    assert!(files.len() >= 13, "a dictionary per target: {files:?}");
    for file in files {
        let text = fs::read(&file).expect("read dictionary");
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.trim_ascii();
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            let at = format!("{}:{}", file.display(), n + 1);
            let quoted = match line.iter().position(|&b| b == b'"') {
                Some(0) => line,
                Some(q)
                    if line[..q].ends_with(b"=")
                        && line[..q - 1].iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') =>
                {
                    &line[q..]
                }
                _ => panic!("{at}: not a quoted entry"),
            };
            assert!(quoted.len() >= 2 && quoted.ends_with(b"\""), "{at}: not closed");
            let mut body = quoted[1..quoted.len() - 1].iter();
            while let Some(&b) = body.next() {
                match b {
                    b'"' => panic!("{at}: a quote inside an entry must be escaped"),
                    b'\\' => match body.next() {
                        Some(b'\\' | b'"') => {}
                        Some(b'x') => {
                            let hex = [body.next(), body.next()];
                            assert!(
                                hex.iter().all(|h| h.is_some_and(u8::is_ascii_hexdigit)),
                                "{at}: \\x takes two hex digits"
                            );
                        }
                        _ => panic!("{at}: libFuzzer knows only \\\\, \\\" and \\xNN"),
                    },
                    _ => {}
                }
            }
        }
    }
}

/// Every input the Dovecot index fuzzer found, with the fixtures' index files as Dovecot wrote them
/// (an index and its log, joined as the target splits them), whole and cut at every few bytes.
#[test]
fn dovecot_index_findings_complete() {
    for f in fixtures("dovecot_index") {
        let bytes = fs::read(&f).expect("read fixture");
        for cut in (0..bytes.len()).step_by(61) {
            drive::dovecot_index(&bytes[..cut]);
        }
    }
    replay("dovecot_index", drive::dovecot_index);
}

//! Outlook `.msg` files from the corpus: every one is listed and answers without a 5xx, what is shown
//! agrees with an independent reader (Python's extract-msg), attached messages have their own pages,
//! and damaged compound files stay bounded in time.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mailshelf::index::content_hash;
use mailshelf::ingest::OLE_MAGIC;
use mailshelf::mapi;
use mailshelf::model::{Body, Message};
use mailshelf::parse::parse_message;

use crate::common::{corpus_dir, files_with_ext, repo_path, TestApp};

/// Every `.msg` in the corpus that is an Outlook message (an OLE compound file), and the rest.
fn outlook_files() -> (Vec<PathBuf>, Vec<PathBuf>) {
    const OUTLOOK_SOURCES: &[&str] =
        &["msgreader", "outlook-message-parser", "msg-parser-rs", "email-outlook-message-perl", "ruby-msg"];
    let corpus = corpus_dir();
    let all = files_with_ext(&corpus, &["msg"]);
    all.into_iter()
        .filter(|p| p.strip_prefix(&corpus).is_ok_and(|r| OUTLOOK_SOURCES.iter().any(|s| r.starts_with(s))))
        .partition(|p| std::fs::read(p).expect("read").starts_with(OLE_MAGIC))
}

fn parse_file(p: &Path) -> Message {
    parse_message(Arc::from(std::fs::read(p).expect("read"))).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outlook_message_is_listed_and_answers() {
    let (ole, other) = outlook_files();
    assert_eq!(ole.len(), 63, "Outlook messages in the corpus");
    assert_eq!(other.len(), 1, "the non-OLE error case");
    let mut distinct = HashSet::new();
    for p in &ole {
        let msg = parse_file(p);
        assert!(msg.origin.original.is_some(), "{}", p.display());
        // Keyed as the index keys messages: by the message read, here the one made of the file.
        distinct.insert(content_hash(&msg.raw));
    }
    let mut paths = ole.clone();
    paths.extend(other.iter().cloned());
    let app = TestApp::new(&paths);
    let (listed, keys, nested) = {
        let index = app.archive.index();
        let listed = index.listed_count();
        let keys: Vec<String> = index.entries().map(|(_, e)| mailshelf::ids::encode_segment(&e.key)).collect();
        let nested = index.entries().count() - listed;
        (listed, keys, nested)
    };
    // The error case is not an Outlook message; it reads as a one-line text message.
    assert!(listed == distinct.len() || listed == distinct.len() + 1, "listed {listed} of {}", distinct.len());
    assert!(nested >= 5, "attached messages have their own entries: {nested}");
    let mut parts = 0;
    for id in &keys {
        let page = app.get(&format!("/message/{id}")).await;
        assert!(page.status.is_success(), "/message/{id}: {}", page.status);
        let raw = app.get(&format!("/raw/{id}")).await;
        assert!(raw.status.is_success(), "/raw/{id}: {}", raw.status);
        let detail = app.json(&format!("/api/messages/{id}")).await;
        let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
        while let Some(p) = stack.pop() {
            let url = p["url"].as_str().expect("url");
            let r = app.get(url).await;
            assert!(!r.status.is_server_error(), "{url}: {}", r.status);
            parts += 1;
            stack.extend(p["parts"].as_array().into_iter().flatten());
        }
    }
    assert!(parts > 200, "{parts} parts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_gives_the_msg_file_and_inline_images_resolve() {
    let dir = corpus_dir().join("outlook-message-parser/src/test/resources/test-messages");
    let file = dir.join("HTML mail with replyto and attachment and embedded image.msg");
    let bytes = std::fs::read(&file).expect("read");
    let app = TestApp::new(std::slice::from_ref(&file));
    let key = app.archive.index().entries().next().map(|(_, e)| e.key.clone()).expect("listed");
    let id = mailshelf::ids::encode_segment(&key);
    let raw = app.get(&format!("/raw/{id}")).await;
    assert_eq!(raw.body, bytes, "/raw/ is the file as given");
    assert_eq!(raw.header("content-type"), "application/vnd.ms-outlook");
    let msg = parse_file(&file);
    let html = msg.html_body.map(|i| &msg.parts[i]).expect("an HTML body");
    let Body::Text(text) = &html.body else { panic!("text") };
    let cids: Vec<&str> = text.match_indices("cid:").map(|(i, _)| &text[i + 4..]).collect();
    assert!(!cids.is_empty(), "the body refers to an inline image");
    for rest in cids {
        let cid: String = rest.chars().take_while(|c| !matches!(c, '"' | '\'' | ')' | ' ' | '>')).collect();
        let part = msg.part_by_content_id(&cid).unwrap_or_else(|| panic!("cid:{cid} resolves"));
        assert!(msg.parts[part].content_type.starts_with("image/"), "{cid}");
    }
    let page = app.get(&format!("/part/{id}/~{}", html.section)).await;
    assert!(page.text().contains("/part/"), "cid: rewritten to a part URL");
}

#[test]
fn attached_messages_and_other_items_show_their_content() {
    let corpus = corpus_dir();
    let nested = parse_file(&corpus.join("msgreader/MsgReaderTests/SampleFiles/EmailWithMsgAttachment.msg"));
    let inner: Vec<&Message> = nested.nested().map(|(_, m)| m).collect();
    assert!(!inner.is_empty(), "an attached message is an enclosed message");
    assert!(inner[0].summary.subject.is_some(), "with its own header");

    let ruby = corpus.join("ruby-msg/test");
    for f in files_with_ext(&ruby, &["msg"]) {
        let msg = parse_file(&f);
        let text: String =
            msg.text_body.map(|i| String::from_utf8_lossy(msg.parts[i].bytes()).into_owned()).unwrap_or_default();
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("").to_lowercase();
        if name.contains("contact") || name.contains("note") || name.contains("novikova") {
            assert!(text.contains("Item: IPM."), "{}: the item's fields are shown: {text:.200}", f.display());
        }
    }
}

#[test]
fn damaged_compound_files_stay_bounded() {
    let (ole, _) = outlook_files();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let started = Instant::now();
    let mut shown = 0;
    for (n, p) in ole.iter().enumerate().take(16) {
        let good = std::fs::read(p).expect("read");
        for k in 0..24 {
            let mut bad = good.clone();
            match k % 3 {
                // Cut anywhere.
                0 => bad.truncate(512 + (rnd() as usize) % good.len().max(1)),
                // Scribble over the header, the FAT or the directory.
                1 => {
                    for _ in 0..8 {
                        let at = (rnd() as usize) % good.len().min(4096);
                        bad[at] = rnd() as u8;
                    }
                }
                // Claim huge sizes and loops: every sector pointer of one sector set to itself.
                _ => {
                    let sector = 512 * (1 + (rnd() as usize) % (good.len() / 512).max(1));
                    for i in (sector..(sector + 512).min(bad.len().saturating_sub(4))).step_by(4) {
                        let own = ((i - 512) / 512) as u32;
                        bad[i..i + 4].copy_from_slice(&if k % 2 == 0 { own } else { u32::MAX - 5 }.to_le_bytes());
                    }
                }
            }
            bad.truncate(bad.len().max(8));
            let t = Instant::now();
            if parse_message(Arc::from(bad)).is_ok() {
                shown += 1;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "file {n} mutation {k} took {:?}", t.elapsed());
        }
    }
    assert!(shown > 0);
    assert!(started.elapsed() < Duration::from_secs(120), "{:?}", started.elapsed());
}

/// One file as extract-msg reads it.
#[derive(serde::Deserialize, Debug)]
struct Reference {
    path: String,
    error: Option<String>,
    #[serde(default)]
    class: String,
    subject: Option<String>,
    sender: Option<String>,
    #[serde(default)]
    body: String,
    #[serde(default)]
    attachments: Vec<RefAttachment>,
}

#[derive(serde::Deserialize, Debug)]
struct RefAttachment {
    name: Option<String>,
    size: Option<usize>,
    crc: Option<u32>,
    #[serde(default)]
    embedded: bool,
}

fn alnum(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text a reader sees: the text body, else the HTML body without its markup.
fn shown_text(msg: &Message) -> String {
    if let Some(t) = msg.text_body {
        return String::from_utf8_lossy(msg.parts[t].bytes()).into_owned();
    }
    let Some(h) = msg.html_body else { return String::new() };
    let html = String::from_utf8_lossy(msg.parts[h].bytes()).into_owned();
    let mut out = String::new();
    let mut in_tag = false;
    let lower = html.to_lowercase();
    let body = lower.find("<body").unwrap_or(0);
    for c in html[body..].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&nbsp;", " ").replace("&amp;", "&")
}

#[test]
fn outlook_messages_match_an_independent_reader() {
    let (ole, _) = outlook_files();
    let out = std::process::Command::new("python3")
        .arg(repo_path("tests/outlook/reference.py"))
        .args(&ole)
        .output()
        .expect("python3 runs (scripts/test installs extract-msg)");
    assert!(out.status.success(), "reference reader: {}", String::from_utf8_lossy(&out.stderr));
    let refs: Vec<Reference> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    assert_eq!(refs.len(), ole.len());
    let mut problems = Vec::new();
    let mut compared = 0;
    for r in &refs {
        if r.error.is_some() {
            continue;
        }
        compared += 1;
        let msg = parse_file(Path::new(&r.path));
        let name = Path::new(&r.path).file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let ours = squash(msg.summary.subject.as_deref().unwrap_or(""));
        // extract-msg keeps a string's terminating NUL.
        let theirs = squash(r.subject.as_deref().unwrap_or("").trim_end_matches('\0'));
        if ours != theirs {
            problems.push(format!("{name}: subject {ours:?} vs {theirs:?}"));
        }
        if let Some(sender) = r.sender.as_deref().map(|s| s.trim_end_matches('\0')).filter(|s| !s.trim().is_empty()) {
            let from = msg.summary.from.as_deref().unwrap_or("").to_lowercase();
            let address =
                sender.rsplit_once('<').map(|(_, a)| a.trim_end_matches('>')).unwrap_or(sender).to_lowercase();
            let same = if address.contains('@') {
                from.contains(&address)
            } else {
                // extract-msg has only a name; the transport headers may give only the address.
                from.contains(&sender.trim().trim_matches('"').to_lowercase()) || from.contains('@')
            };
            if !same {
                problems.push(format!("{name}: sender {from:?} vs {sender:?}"));
            }
        }
        // An encrypted message has no body to show (extract-msg reads the envelope as text).
        let encrypted = r.class.to_ascii_lowercase().starts_with("ipm.note.smime")
            && !r.class.to_ascii_lowercase().contains("signed");
        let body_ref = alnum(&r.body);
        if body_ref.len() >= 8 && !encrypted {
            let start: String = body_ref.chars().take(40).collect();
            let shown = alnum(&shown_text(&msg));
            if !shown.contains(&start) {
                let ours: String = shown.chars().take(60).collect();
                problems.push(format!("{name}: body starts {start:?}; ours {ours:?}"));
            }
        }
        // Attachments of this message (not of the messages it encloses), by name, size and CRC.
        let mut ours: HashMap<(usize, u32), Vec<Option<String>>> = HashMap::new();
        let mut embedded = 0;
        for (i, p) in msg.parts.iter().enumerate() {
            if matches!(p.body, Body::Message(_)) {
                embedded += 1;
            }
            if msg.ancestors(i).any(|a| matches!(msg.parts[a].body, Body::Message(_))) || p.is_multipart() {
                continue;
            }
            let bytes = p.bytes();
            ours.entry((bytes.len(), crc32fast::hash(bytes))).or_default().push(p.filename.clone());
        }
        for a in &r.attachments {
            if a.embedded {
                continue;
            }
            let key = (a.size.unwrap_or(0), a.crc.unwrap_or(0));
            let a_name = a.name.clone().filter(|n| !n.is_empty());
            match ours.get(&key) {
                None => problems.push(format!("{name}: attachment {:?} ({} bytes) missing", a.name, key.0)),
                Some(names) if a_name.is_some() && !names.contains(&a_name) => {
                    problems.push(format!("{name}: attachment named {:?}, ours {names:?}", a.name));
                }
                Some(_) => {}
            }
        }
        let theirs_embedded = r.attachments.iter().filter(|a| a.embedded).count();
        if embedded < theirs_embedded {
            problems.push(format!("{name}: {embedded} attached messages, extract-msg {theirs_embedded}"));
        }
    }
    assert!(compared >= 60, "extract-msg read only {compared} files");
    assert!(problems.is_empty(), "{} differences:\n{}", problems.len(), problems.join("\n"));
}

/// A message carrying `tnef` as a winmail.dat attachment, as Outlook sends it.
fn winmail_message(tnef: &[u8], n: usize) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(tnef);
    let lines: Vec<&str> = encoded.as_bytes().chunks(76).map(|c| std::str::from_utf8(c).expect("ascii")).collect();
    format!(
        "From: a@example.com\r\nTo: b@example.com\r\nSubject: winmail {n}\r\nMessage-ID: <winmail-{n}@example.com>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\r\n--b\r\nContent-Type: application/ms-tnef; name=winmail.dat\r\nContent-Disposition: attachment; filename=winmail.dat\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--b--\r\n",
        lines.join("\r\n")
    )
    .into_bytes()
}

/// What tnefparse (an independent reader) finds in each corpus TNEF file: attachment names, and
/// whether there is a body (HTML, RTF or text).
const TNEF_EXPECTED: &[(&str, &[&str], bool)] = &[
    ("IPM-DistList.tnef", &["Untitled Attachment"], true),
    ("MAPI_ATTACH_DATA_OBJ.tnef", &["VIA_Nytt_1402.doc", "VIA_Nytt_1402.pdf", "VIA_Nytt_14021.htm"], true),
    ("MAPI_OBJECT.tnef", &["Untitled_Attachment"], true),
    ("bad_checksum.tnef", &["image001.png"], true),
    ("body.tnef", &[], true),
    ("data-before-name.tnef", &["AUTOEXEC.BAT", "CONFIG.SYS", "boot.ini"], true),
    ("duplicate_filename.tnef", &["file_abcdefgh.txt", "file_abcdefgh.txt", "VIA_Nytt_14021.htm"], true),
    ("garbage-at-end.tnef", &[], false),
    ("long-filename.tnef", &["allproductsmar2000.dat"], true),
    ("minimal_attachment.tnef", &[""], false),
    (
        "missing-filenames.tnef",
        &["generpts.src", "TechlibDEC99.doc", "TechlibDEC99-JAN00.doc", "TechlibNOV99.doc"],
        true,
    ),
    ("multi-name-property.tnef", &[], false),
    ("multi-value-attribute.tnef", &["208225__5_seconds__Voice_Mail.mp3"], true),
    ("one-file.tnef", &["AUTHORS"], false),
    ("rtf.tnef", &[], true),
    ("triples.tnef", &[], true),
    ("two-files.tnef", &["AUTHORS", "README"], false),
    ("umlaut.tnef", &["TBZ PARIV GmbH.jpg", "image003.jpg", "UmlautAnhang-äüö.txt"], true),
    ("unicode-mapi-attr-name.tnef", &["spaconsole2.cfg", "image001.png", "image002.png", "image003.png"], true),
    ("unicode-mapi-attr.tnef", &["example.dat"], true),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn winmail_attachments_become_parts() {
    let files = files_with_ext(&corpus_dir().join("tnefparse"), &["tnef"]);
    assert_eq!(files.len(), TNEF_EXPECTED.len(), "TNEF files in the corpus");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cids = 0;
    for (n, f) in files.iter().enumerate() {
        let file_name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let (_, want, has_body) = TNEF_EXPECTED.iter().find(|(name, ..)| *name == file_name).expect("listed");
        let eml = winmail_message(&std::fs::read(f).expect("read"), n);
        std::fs::write(dir.path().join(format!("{n}.eml")), &eml).expect("write");
        let msg = parse_message(Arc::from(eml)).expect("parses");
        let tnef = msg.parts.iter().position(|p| p.filename.as_deref() == Some("winmail.dat")).expect("tnef part");
        let kids = &msg.parts[tnef].children;
        let names: Vec<String> = kids
            .iter()
            .filter(|&&k| msg.parts[k].disposition.is_some())
            .map(|&k| msg.parts[k].filename.clone().unwrap_or_default())
            .collect();
        assert_eq!(&names, want, "{file_name}");
        if file_name == "MAPI_OBJECT.tnef" {
            // An embedded OLE object that is no Outlook item (a packaged file) stays a file.
            assert!(kids.iter().all(|&k| matches!(msg.parts[k].body, Body::Binary(_) | Body::Text(_))));
        }
        let body = msg.html_body.or(msg.text_body).expect("a body");
        assert_eq!(kids.contains(&body), *has_body, "{file_name}: the TNEF body is shown when there is one");
        for &k in kids {
            assert!(msg.parts[k].section.starts_with(&format!("{}.", msg.parts[tnef].section)), "{file_name}");
        }
        // Inline images of a TNEF HTML body resolve by cid: to the parts it held.
        if let Some(Body::Text(html)) = msg.html_body.map(|h| &msg.parts[h].body) {
            for (i, _) in html.match_indices("cid:") {
                let cid: String =
                    html[i + 4..].chars().take_while(|c| !matches!(c, '"' | '\'' | ')' | ' ' | '>')).collect();
                let part = msg.part_by_content_id(&cid).unwrap_or_else(|| panic!("{file_name}: cid:{cid}"));
                assert!(kids.contains(&part), "{file_name}: cid:{cid}");
                cids += 1;
            }
        }
    }
    assert!(cids >= 3, "{cids} cid: references");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let keys: Vec<String> =
        app.archive.index().entries().map(|(_, e)| mailshelf::ids::encode_segment(&e.key)).collect();
    assert_eq!(app.archive.index().listed_count(), files.len());
    assert_eq!(keys.len(), files.len());
    for id in &keys {
        let page = app.get(&format!("/message/{id}")).await;
        assert!(page.status.is_success(), "/message/{id}: {}", page.status);
        let detail = app.json(&format!("/api/messages/{id}")).await;
        let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
        while let Some(p) = stack.pop() {
            let url = p["url"].as_str().expect("url");
            let r = app.get(url).await;
            assert!(r.status.is_success(), "{url}: {}", r.status);
            stack.extend(p["parts"].as_array().into_iter().flatten());
        }
    }
}

/// A `.msg` written with cfb: (stream path, bytes), storages made as needed.
fn msg_file(streams: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut cf = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).expect("create");
    for (path, data) in streams {
        if let Some(parent) = Path::new(path).parent() {
            cf.create_storage_all(parent).expect("storage");
        }
        let mut s = cf.create_stream(path).expect("stream");
        std::io::Write::write_all(&mut s, data).expect("write");
    }
    cf.into_inner().into_inner()
}

/// A property stream: a header of `header` bytes, then PT_LONG properties.
fn longs(header: usize, props: &[(u16, u32)]) -> Vec<u8> {
    let mut v = vec![0u8; header];
    for (id, value) in props {
        v.extend_from_slice(&mapi::PT_LONG.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&[6, 0, 0, 0]);
        v.extend_from_slice(&value.to_le_bytes());
        v.extend_from_slice(&[0; 4]);
    }
    v
}

/// One TNEF attribute (MS-OXTNEF §2.1.3.1): level, id, length, value, checksum.
fn tnef_attribute(level: u8, id: u32, value: &[u8]) -> Vec<u8> {
    let mut out = vec![level];
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
    let sum = value.iter().fold(0u16, |s, &b| s.wrapping_add(u16::from(b)));
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A TNEF MAPI property list of PT_LONG and PT_STRING8 values.
fn tnef_props(longs: &[(u16, u32)], strings: &[(u16, &[u8])]) -> Vec<u8> {
    let mut out = ((longs.len() + strings.len()) as u32).to_le_bytes().to_vec();
    for (id, v) in longs {
        out.extend_from_slice(&mapi::PT_LONG.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
    for (id, v) in strings {
        out.extend_from_slice(&mapi::PT_STRING8.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(v.len() as u32 + 1).to_le_bytes());
        out.extend_from_slice(v);
        out.push(0);
        out.resize(out.len().next_multiple_of(4), 0);
    }
    out
}

/// 8-bit strings (PT_STRING8) are read in the code page of the message they belong to: its
/// PidTagMessageCodepage, else its PidTagInternetCodepage, else the one of what holds it (the
/// message a message is attached to, the store of an Outlook data file, the TNEF stream), in a
/// `.msg`, an item of an Outlook data file and a winmail.dat alike. Here Traditional Chinese text in
/// Big5 (code page 950), which Windows-1252 turns into `®æ¦¡´ú¸Õ`.
#[tokio::test]
async fn eight_bit_strings_are_read_in_the_code_page_of_their_message() {
    let big5 = |s: &str| encoding_rs::BIG5.encode(s).0.into_owned();
    let (subject, body, inner, folder, file) = ("MSG 格式測試", "這是內文", "附件郵件", "收件匣", "報告.txt");
    let dir = tempfile::tempdir().expect("temp dir");

    // A `.msg` that names its code page, with an attached message that names none.
    let attached = "/__attach_version1.0_#00000000/__substg1.0_3701000D";
    let msg = msg_file(&[
        ("/__properties_version1.0", longs(32, &[(mapi::MESSAGE_CODEPAGE, 950)])),
        ("/__substg1.0_001A001E", b"IPM.Note".to_vec()),
        ("/__substg1.0_0037001E", big5(subject)),
        ("/__substg1.0_1000001E", big5(body)),
        ("/__attach_version1.0_#00000000/__properties_version1.0", longs(8, &[(mapi::ATTACH_METHOD, 5)])),
        (&format!("{attached}/__properties_version1.0"), vec![0; 24]),
        (&format!("{attached}/__substg1.0_0037001E"), big5(inner)),
        ("/__nameid_version1.0/__substg1.0_00020102", Vec::new()),
        ("/__nameid_version1.0/__substg1.0_00030102", Vec::new()),
        ("/__nameid_version1.0/__substg1.0_00040102", Vec::new()),
    ]);
    let msg_path = dir.path().join("big5.msg");
    std::fs::write(&msg_path, &msg).expect("write");
    let parsed = parse_file(&msg_path);
    assert_eq!(parsed.summary.subject.as_deref(), Some(subject), ".msg subject");
    assert_eq!(shown_text(&parsed).trim(), body, ".msg body");
    let nested: Vec<&Message> = parsed.nested().map(|(_, m)| m).collect();
    assert_eq!(nested.first().and_then(|m| m.summary.subject.as_deref()), Some(inner), "attached message");
    // extract-msg, the independent reader, reads the message alike.
    let out = std::process::Command::new("python3")
        .arg(repo_path("tests/outlook/reference.py"))
        .arg(&msg_path)
        .output()
        .expect("python3 runs (scripts/test installs extract-msg)");
    let reference: Reference = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(reference.subject.as_deref().map(|s| s.trim_end_matches('\0')), Some(subject), "extract-msg");
    assert!(reference.body.contains(body), "extract-msg: {:?}", reference.body);

    // An ANSI data file whose store names the code page; neither the folder nor the item does.
    use crate::pst::writer::{Archive, Layout, V};
    let mut a = Archive::new(Layout::Ansi, crate::pst::writer::CRYPT_PERMUTE);
    a.store_props(vec![(mapi::MESSAGE_CODEPAGE, V::Long(950))]);
    let inbox = a.folder(Archive::TOP, V::Text8(big5(folder)), vec![]);
    a.message(
        inbox,
        vec![
            (mapi::MESSAGE_CLASS, V::Text("IPM.Note".into())),
            (mapi::SUBJECT, V::Text8(big5(subject))),
            (mapi::BODY, V::Text8(big5(body))),
        ],
        Vec::new(),
    );
    let pst_path = dir.path().join("big5.pst");
    std::fs::write(&pst_path, a.finish()).expect("write");
    let app = TestApp::new(std::slice::from_ref(&pst_path));
    let list = app.json(&format!("/api/messages?folder=big5/{folder}")).await;
    assert_eq!(list["messages"][0]["subject"], subject, ".pst: {list}");
    let id = list["messages"][0]["id"].as_str().expect("id");
    let text = app.get(&format!("/message/{}", mailshelf::ids::encode_segment(id))).await.text();
    assert!(text.contains(body), ".pst body");

    // A winmail.dat whose MAPI properties name the code page; its stream's own is Windows-1252.
    let tnef = [
        0x223e_9f78u32.to_le_bytes().to_vec(),
        vec![1, 0],
        tnef_attribute(1, 0x0006_9007, &[0xe4, 0x04, 0, 0, 0, 0, 0, 0]),
        tnef_attribute(1, 0x0006_9003, &tnef_props(&[(mapi::MESSAGE_CODEPAGE, 950)], &[(mapi::BODY, &big5(body))])),
        tnef_attribute(2, 0x0006_9002, &[0; 14]),
        tnef_attribute(2, 0x0006_800f, b"hello"),
        tnef_attribute(2, 0x0006_9005, &tnef_props(&[], &[(mapi::ATTACH_LONG_FILENAME, &big5(file))])),
    ]
    .concat();
    let parsed = parse_message(Arc::from(winmail_message(&tnef, 0))).expect("parses");
    assert_eq!(shown_text(&parsed).trim(), body, "TNEF body");
    assert!(parsed.parts.iter().any(|p| p.filename.as_deref() == Some(file)), "TNEF attachment name");
}

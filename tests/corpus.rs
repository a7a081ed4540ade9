//! The real corpora in `../shared/corpus`: every message and MHTML file is listed and answers without
//! a 5xx; every reference an MHTML file can satisfy is rewritten to a URL that returns that part;
//! decoded bodies match the expected outputs shipped with the mime4j test messages.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use mailshelf::index::{content_hash, ContentHash};
use mailshelf::ingest::{self, Kind};
use mailshelf::model::Body;
use mailshelf::parse::{parse_file, parse_message};
use mailshelf::rewrite::{rewrite_html, Options, Target};
use mailshelf::route::Resolver;

use crate::common::{corpus_dir, files_with_ext, seg_decode, walk, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_message_is_listed_and_answers() {
    if !crate::common::needs::corpus("every_corpus_message_is_listed_and_answers") {
        return;
    }
    let corpus = corpus_dir();
    let files = walk(&corpus);
    assert!(files.len() > 1000, "corpus not found at {}: {} files", corpus.display(), files.len());

    // What should be listed: every distinct message (single files and mbox entries; the same bytes
    // found twice are one message).
    let mut distinct = HashSet::new();
    let (mut message_files, mut mbox_files, mut mbox_messages) = (0, 0, 0);
    for f in &files {
        let found = ingest::Found { root: Arc::from(corpus.as_path()), path: f.clone() };
        match ingest::sniff_found(&found).expect("readable") {
            Kind::Message => {
                message_files += 1;
                let raw = std::fs::read(f).expect("read");
                // Keyed as the index keys them: by the message read (for an .emlx or a
                // .webarchive, the message made of the file).
                if let Ok(msg) = parse_file(Arc::from(raw), Some(f)) {
                    distinct.insert(content_hash(&msg.raw));
                }
            }
            Kind::Mbox => {
                mbox_files += 1;
                let data = std::fs::read(f).expect("read");
                for (o, l) in ingest::split_mbox(&data) {
                    mbox_messages += 1;
                    let src = ingest::Source::Mbox { path: f.clone(), offset: o, len: l };
                    let raw = src.read(usize::MAX, &ingest::Within::new([f.as_path()])).expect("read").bytes;
                    if let Ok(msg) = parse_message(Arc::from(raw)) {
                        distinct.insert(content_hash(&msg.raw));
                    }
                }
            }
            Kind::Pst => {
                let listing = mailshelf::ingest::pst::list(f).expect("listed");
                let notices = (!listing.notices.is_empty()).then_some(mailshelf::ingest::pst::NOTICE_NODE);
                for node in listing.items.iter().map(|i| i.node).chain(notices) {
                    let src = ingest::Source::Pst { path: f.clone(), node, folder: String::new() };
                    if let Ok(msg) = parse_message(Arc::from(
                        src.read(usize::MAX, &ingest::Within::new([f.as_path()])).expect("read").bytes,
                    )) {
                        distinct.insert(content_hash(&msg.raw));
                    }
                }
            }
            Kind::Dbox => {
                let file = std::io::BufReader::new(std::fs::File::open(f).expect("open"));
                for m in ingest::DboxReader::new(file, usize::MAX).map_while(Result::ok) {
                    if let Ok(msg) = parse_message(Arc::from(m.given.bytes)) {
                        distinct.insert(content_hash(&msg.raw));
                    }
                }
            }
            Kind::Framed(framing) => {
                let file = std::io::BufReader::new(std::fs::File::open(f).expect("open"));
                for m in ingest::SpansReader::new(file, framing, usize::MAX).map_while(Result::ok) {
                    if let Ok(msg) = parse_message(Arc::from(m.given.bytes)) {
                        distinct.insert(content_hash(&msg.raw));
                    }
                }
            }
            Kind::Other => {}
        }
    }
    assert!(message_files >= 700, "only {message_files} message files found");
    assert!(mbox_files >= 30, "only {mbox_files} mbox files found");

    let app = TestApp::new(std::slice::from_ref(&corpus));
    let listed = app.archive.index().listed_count();
    // Every distinct message is listed, under the hash of its bytes where it was found first; a
    // copy in another folder is listed there too.
    let listed_hashes: HashSet<ContentHash> = {
        let index = app.archive.index();
        index.listed().iter().filter_map(|&id| index.get(id).map(|e| e.hash)).collect()
    };
    let missing = distinct.iter().filter(|h| !listed_hashes.contains(h)).count();
    assert_eq!(missing, 0, "every distinct message is listed");
    assert!(listed >= distinct.len(), "{listed} listed of {} distinct", distinct.len());
    eprintln!("corpus: {} distinct messages, {} more copies in other folders", distinct.len(), listed - distinct.len());

    let all: Vec<String> = app.archive.index().entries().map(|(_, e)| mailshelf::ids::encode_segment(&e.key)).collect();
    let (mut parts, mut requests, mut externals) = (0usize, 0usize, 0usize);
    for id in &all {
        let page = app.get(&format!("/message/{id}")).await;
        assert!(page.status.is_success(), "/message/{id}: {}", page.status);
        let detail = app.json(&format!("/api/messages/{id}")).await;
        let mut stack: Vec<&serde_json::Value> = detail["parts"].as_array().expect("parts").iter().collect();
        while let Some(p) = stack.pop() {
            parts += 1;
            let url = p["url"].as_str().expect("url");
            let r = app.get(url).await;
            requests += 1;
            assert!(!r.status.is_server_error(), "{url}: {}", r.status);
            if p.get("external").is_some() {
                // An external body has no bytes here: a web URL is a redirect, the rest a 404
                // that says where the data is.
                let redirect = r.status == axum::http::StatusCode::SEE_OTHER && !r.header("location").is_empty();
                let described = r.status == axum::http::StatusCode::NOT_FOUND
                    && r.header("content-type") == "application/problem+json";
                assert!(redirect || described, "{url}: {}", r.status);
                externals += 1;
            } else {
                assert!(r.status.is_success(), "{url}: {}", r.status);
            }
            stack.extend(p["parts"].as_array().expect("children"));
        }
        let raw = app.get(&format!("/raw/{id}")).await;
        assert!(raw.status.is_success(), "/raw/{id}");
    }
    assert!(externals >= 5, "the corpus' external bodies (flanker, stalwart's rfc/001.eml): {externals}");
    println!(
        "corpus: {} files, {message_files} message files, {mbox_files} mbox files ({mbox_messages} messages), \
         {listed} listed, {} messages with nested ones, {parts} parts ({externals} external bodies), \
         {requests} part requests",
        files.len(),
        all.len()
    );
}

fn mhtml_files() -> Vec<PathBuf> {
    let files = files_with_ext(&corpus_dir(), &["mht", "mhtml"]);
    assert!(files.len() >= 44, "MHTML files in the corpus: {}", files.len());
    files
}

/// RFC 2557 resolution, worked out independently of the rewriter: does a part of this message
/// satisfy the reference?
fn satisfying_part(msg: &mailshelf::model::Message, base: &str, reference: &str) -> Option<usize> {
    let r = reference.trim();
    if let Some(c) = r.strip_prefix("cid:").or_else(|| r.strip_prefix("CID:")) {
        let id = seg_decode(c);
        let id = id.trim_start_matches('<').trim_end_matches('>');
        return msg.parts.iter().position(|p| p.content_id.as_deref() == Some(id));
    }
    if r.is_empty() || r.starts_with('#') || r.starts_with("data:") || r.starts_with("javascript:") {
        return None;
    }
    let mut resolved = url::Url::parse(base).ok()?.join(r).ok()?;
    resolved.set_fragment(None);
    let want = resolved.as_str();
    msg.parts.iter().position(|p| !p.is_multipart() && p.location.as_deref() == Some(want))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_satisfiable_mhtml_reference_is_rewritten_to_its_part() {
    if !crate::common::needs::corpus("every_satisfiable_mhtml_reference_is_rewritten_to_its_part") {
        return;
    }
    let files = mhtml_files();
    let app = TestApp::new(&files);
    let (mut resolvable, mut resolved, mut references) = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for f in &files {
        let raw = std::fs::read(f).expect("read");
        let id = app.archive.index().by_hash(&content_hash(&raw)).expect("indexed");
        let loaded = app.archive.load(id).expect("loads");
        let msg = loaded.message();
        let Some(root) = msg.html_body else { continue };
        let Body::Text(html) = &msg.parts[root].body else { continue };
        let resolver = Resolver {
            archive: Some(&app.archive),
            access: &mailshelf::index::Access::EVERYTHING,
            key: &loaded.entry.key,
            msg,
            part: root,
            remote: false,
        };
        let out = rewrite_html(html, &msg.parts[root].base, &resolver, Options { record: true, ..Options::default() });
        for (base, reference, target) in &out.references {
            references += 1;
            let Some(want) = satisfying_part(msg, base, reference) else { continue };
            resolvable += 1;
            let Target::Part(url) = target else {
                failures.push(format!("{}: {reference:?} → {target:?}", f.display()));
                continue;
            };
            assert!(out.output.contains(url.as_str()), "{url} is in the rewritten HTML");
            let fetch = url.split('#').next().unwrap_or(url);
            let r = app.get(fetch).await;
            let part = &msg.parts[want];
            let same = match part.content_type.as_str() {
                // Documents come back rewritten: same type, not the same bytes.
                "text/html" | "text/css" => r.header("content-type").starts_with(&part.content_type),
                _ => r.body == part.bytes(),
            };
            if r.status.is_success() && same {
                resolved += 1;
            } else {
                failures.push(format!(
                    "{}: {reference:?} → {url} gave {} ({} bytes)",
                    f.display(),
                    r.status,
                    r.body.len()
                ));
            }
        }
    }
    println!("MHTML: {} files, {references} references, {resolved} resolved of {resolvable} resolvable", files.len());
    assert!(resolvable > 50, "the corpus has satisfiable references ({resolvable})");
    assert!(failures.is_empty(), "unresolved:\n{}", failures.join("\n"));
    assert_eq!(resolved, resolvable);
}

/// The leaves of a message in document order, descending into enclosed messages, as mime4j lists
/// its decoded bodies.
fn leaves(msg: &mailshelf::model::Message, out: &mut Vec<Vec<u8>>) {
    fn walk(msg: &mailshelf::model::Message, idx: usize, out: &mut Vec<Vec<u8>>) {
        let p = &msg.parts[idx];
        match &p.body {
            Body::Multipart => {
                for &c in &p.children {
                    walk(msg, c, out);
                }
            }
            Body::Message(inner) => leaves(inner, out),
            _ => out.push(p.bytes().to_vec()),
        }
    }
    if !msg.parts.is_empty() {
        walk(msg, 0, out);
    }
}

fn normalise(b: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(b).replace("\r\n", "\n");
    s.trim_end().as_bytes().to_vec()
}

#[test]
fn decoded_bodies_match_mime4j_expected_outputs() {
    if !crate::common::needs::corpus("decoded_bodies_match_mime4j_expected_outputs") {
        return;
    }
    let root = corpus_dir().join("james-mime4j/core/src/test/resources");
    let expected_files = files_with_ext(&root, &["xml"])
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with("_decoded.xml"))
        .collect::<Vec<_>>();
    assert!(expected_files.len() >= 80, "mime4j expected outputs: {}", expected_files.len());
    // What mime4j expects of each message: its bytes, and the files of its decoded bodies.
    let expected: Vec<(String, Vec<u8>, Vec<PathBuf>)> = expected_files
        .iter()
        .filter_map(|xml_path| {
            let name = xml_path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let stem = name.trim_end_matches("_decoded.xml");
            let raw = std::fs::read(xml_path.with_file_name(format!("{stem}.msg"))).ok()?;
            let xml = std::fs::read_to_string(xml_path).expect("read");
            let names = xml.split("-body name=\"").skip(1).filter_map(|s| s.split('"').next());
            Some((stem.to_string(), raw, names.map(|n| xml_path.with_file_name(n)).collect()))
        })
        .collect();
    // mime4j reads some messages twice, with different settings (`malformedHeaderStartsBody-*`
    // takes a malformed header line for the start of the body), and expects different bodies of
    // the same bytes: there, neither is a reference.
    let bodies_of = |files: &[PathBuf]| files.iter().map(|f| std::fs::read(f).ok()).collect::<Vec<_>>();
    let ambiguous: HashSet<&[u8]> = expected
        .iter()
        .filter(|(_, raw, files)| expected.iter().any(|(_, r, f)| r == raw && bodies_of(f) != bodies_of(files)))
        .map(|(_, raw, _)| raw.as_slice())
        .collect();
    let (mut bodies, mut matched, mut messages) = (0, 0, 0);
    let mut mismatches = Vec::new();
    let mut structure_differs = Vec::new();
    for (stem, raw, files) in &expected {
        if ambiguous.contains(raw.as_slice()) {
            continue;
        }
        let Ok(msg) = parse_message(Arc::from(raw.as_slice())) else { continue };
        let mut ours = Vec::new();
        leaves(&msg, &mut ours);
        // Broken boundaries are recovered differently by every parser; where the two do not
        // agree on the structure, there is no body to compare.
        if ours.len() != files.len() {
            structure_differs.push(stem.clone());
            continue;
        }
        messages += 1;
        for (i, file) in files.iter().enumerate() {
            let Ok(want) = std::fs::read(file) else { continue };
            // Text bodies are compared as text; mailshelf serves them as UTF-8, so only bodies
            // that are UTF-8 (or ASCII) in the original can compare byte for byte.
            if std::str::from_utf8(&want).is_err() {
                continue;
            }
            bodies += 1;
            if ours.get(i).is_some_and(|o| normalise(o) == normalise(&want)) {
                matched += 1;
            } else {
                mismatches.push(format!("{stem} body {}", i + 1));
            }
        }
    }
    println!(
        "mime4j: {messages} messages with the same structure, {matched} of {bodies} decoded bodies identical; \
         structure differs (broken boundaries) in {}: {structure_differs:?}",
        structure_differs.len()
    );
    assert!(bodies >= 90, "bodies compared: {bodies}");
    // The few that differ are malformed on purpose (bad multiparts, a header block run into the
    // body), where two correct parsers may recover different bytes.
    println!("  differ: {mismatches:?}");
    assert!(matched * 100 >= bodies * 95, "{matched} of {bodies}; differ: {mismatches:#?}");
}

//! Outlook data files (`.pst`, `.ost`): each opens as a folder tree of its own, its items listed in
//! their folders, found by search and `folder:` queries, and readable as messages; checked against
//! two independent readers (libpst's `readpst` and libpff's `pffexport`) over every `.pst` of the
//! corpus and over archives written here (`writer`); damaged files show what can be read and say
//! what could not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use axum::http::StatusCode;

use crate::common::{corpus_dir, walk, TestApp};

pub mod writer;

fn corpus_psts() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walk(&corpus_dir())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pst") || e.eq_ignore_ascii_case("ost")))
        .collect();
    files.sort();
    files
}

/// Every folder in `/api/folders`, flattened: path → own messages.
fn flatten(v: &serde_json::Value, out: &mut BTreeMap<String, u64>) {
    for f in v.as_array().expect("folders") {
        out.insert(f["path"].as_str().expect("path").to_string(), f["messages"].as_u64().expect("count"));
        flatten(&f["folders"], out);
    }
}

async fn folders(app: &TestApp) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    flatten(&app.json("/api/folders").await["folders"], &mut out);
    out
}

async fn subjects(app: &TestApp, query: &str) -> Vec<String> {
    let list = app.json(&format!("/api/messages?limit=500&{query}")).await;
    list["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["subject"].as_str().unwrap_or("").to_string())
        .collect()
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_./".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn pst_files_open_as_folder_trees_of_their_items() {
    if !crate::common::needs::corpus("pst_files_open_as_folder_trees_of_their_items") {
        return;
    }
    let dist = corpus_dir().join("java-libpst/src/test/resources/dist-list.pst");
    let app = TestApp::new(std::slice::from_ref(&dist));
    let tree = folders(&app).await;
    // "Top of Personal Folders" is the store, shown as the file; its folders are below it.
    assert_eq!(tree.get("dist-list/Contacts"), Some(&2), "{tree:?}");
    assert_eq!(tree.get("dist-list/Calendar"), Some(&1), "{tree:?}");
    assert!(!tree.keys().any(|f| f.contains("Top of Personal Folders") || f.contains("Search Root")), "{tree:?}");
    let mut contacts = subjects(&app, "folder=dist-list/Contacts").await;
    contacts.sort();
    assert_eq!(contacts, ["contact name 1", "test dist list"]);
    // The distribution list lists its members: the file's own contact and two addresses of its own.
    let list = app.json("/api/messages?limit=10&folder=dist-list/Contacts").await;
    let dl = list["messages"].as_array().expect("messages").iter().find(|m| m["subject"] == "test dist list");
    let dl = app.json(&format!("/api/messages/{}", enc(dl.expect("the list")["id"].as_str().expect("id")))).await;
    let text = app.get(dl["text_url"].as_str().expect("text")).await.text();
    assert!(
        text.contains(
            "Members: contact name 1 <contact1@rjohnson.id.au>; dist name 1 <dist1@rjohnson.id.au>; \
             dist name 2 <dist2@rjohnson.id.au>"
        ),
        "{text}"
    );
    // `folder:` queries and full-text search reach the items.
    assert_eq!(subjects(&app, "q=folder:%22dist-list/calendar%22").await, ["Test appointment"]);
    // The contact's address finds the contact and the list it is a member of.
    let mut found = subjects(&app, "q=contact1@rjohnson.id.au").await;
    found.sort();
    assert_eq!(found, ["contact name 1", "test dist list"]);
    let page = app.get("/folder/dist-list/Calendar").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text().contains("Test appointment"), "{}", page.text());

    // Items read back as messages, with their main fields; the same ids after a restart.
    let list = app.json("/api/messages?limit=10&folder=dist-list/Calendar").await;
    let id = list["messages"][0]["id"].as_str().expect("id").to_string();
    let message = app.get(&format!("/message/{}", enc(&id))).await;
    assert_eq!(message.status, StatusCode::OK);
    assert!(message.text().contains("IPM.Appointment") && message.text().contains("This is a complete test"));
    let app = app.restart(std::slice::from_ref(&dist));
    let again = app.json("/api/messages?limit=10&folder=dist-list/Calendar").await;
    assert_eq!(again["messages"][0]["id"].as_str(), Some(id.as_str()));
}

#[tokio::test]
async fn pst_items_keep_bodies_recipients_attachments_and_attached_messages() {
    if !crate::common::needs::corpus("pst_items_keep_bodies_recipients_attachments_and_attached_messages") {
        return;
    }
    let pst = corpus_dir().join("ruby-msg/test/pst");
    let cases: &[(&str, &str, &[&str])] = &[
        ("attachAndInline.pst", "Attach and inline", &["attach.png", "image001.png", "xmailuser@xmailserver.test"]),
        ("msgInMsg.pst", "I have attachments!", &["green.png"]),
        ("200 recipients.pst", "200 recipients", &["xmailuser1@xmailserver.test", "xmailuser200@xmailserver.test"]),
    ];
    for (file, subject, shown) in cases {
        let app = TestApp::new(&[pst.join(file)]);
        let stem = file.trim_end_matches(".pst");
        let tree = folders(&app).await;
        assert_eq!(tree.get(stem), Some(&1), "{file}: {tree:?}");
        let list = app.json("/api/messages?limit=10").await;
        assert_eq!(list["messages"][0]["subject"], *subject, "{file}");
        let id = list["messages"][0]["id"].as_str().expect("id").to_string();
        let json = app.json(&format!("/api/messages/{}", enc(&id))).await.to_string();
        let page = app.get(&format!("/message/{}", enc(&id))).await.text();
        for s in *shown {
            assert!(json.contains(s) || page.contains(s), "{file}: {s} missing");
        }
    }
    // The inline image of attachAndInline is resolved (no `cid:` left on the page).
    let app = TestApp::new(&[pst.join("attachAndInline.pst")]);
    let id = app.json("/api/messages?limit=1").await["messages"][0]["id"].as_str().expect("id").to_string();
    let frame = app.get(&format!("/message/{}/body", enc(&id))).await;
    if frame.status == StatusCode::OK {
        assert!(!frame.text().contains("src=\"cid:"), "{}", frame.text());
    }
}

#[tokio::test]
async fn pst_password_and_damage_are_said_not_fatal() {
    if !crate::common::needs::corpus("pst_password_and_damage_are_said_not_fatal") {
        return;
    }
    let passworded = corpus_dir().join("java-libpst/src/test/resources/passworded.pst");
    let app = TestApp::new(std::slice::from_ref(&passworded));
    let tree = folders(&app).await;
    assert_eq!(tree.get("passworded/Contacts"), Some(&2), "{tree:?}");
    let top = subjects(&app, "folder=passworded").await;
    assert!(top.iter().any(|s| s.starts_with("About this Outlook data file")), "{top:?}");
    assert!(subjects(&app, "q=password").await.iter().any(|s| s.starts_with("About this Outlook data file")));

    // Truncated and scribbled-over copies: whatever can be read is listed, every page answers.
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = std::fs::read(corpus_dir().join("java-libpst/src/test/resources/dist-list.pst")).expect("read");
    std::fs::write(dir.path().join("truncated.pst"), &bytes[..bytes.len() * 3 / 4]).expect("write");
    let mut scribbled = bytes.clone();
    for i in (0x4400..scribbled.len()).step_by(4096) {
        scribbled[i..i + 64].fill(0xA5);
    }
    std::fs::write(dir.path().join("scribbled.pst"), &scribbled).expect("write");
    let app = TestApp::new(&[dir.path().to_path_buf()]);
    let list = app.json("/api/messages?limit=100").await;
    for m in list["messages"].as_array().expect("messages") {
        let id = m["id"].as_str().expect("id");
        let page = app.get(&format!("/message/{}", enc(id))).await;
        assert!(page.status.is_success(), "{id}: {}", page.status);
    }
    assert_eq!(app.get("/api/folders").await.status, StatusCode::OK);
}

/// What readpst (Debian's pst-utils) exports of an archive, one file per item (`-S`, deleted
/// items included with `-D`, in one process with `-j 0`: its forked jobs once left a folder out
/// on a busy machine): folder below the store → (items, the subjects of its e-mails).
fn readpst(path: &Path) -> BTreeMap<String, (usize, Vec<String>)> {
    let out = tempfile::tempdir().expect("temp dir");
    let status = std::process::Command::new("readpst")
        .args(["-q", "-S", "-D", "-j", "0", "-o"])
        .arg(out.path())
        .arg(path)
        .status()
        .expect("readpst (Debian's pst-utils) runs");
    assert!(status.success(), "readpst failed on {}", path.display());
    let mut folders: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for file in walk(out.path()) {
        let Ok(rel) = file.strip_prefix(out.path()) else { continue };
        let name = rel.file_name().expect("name").to_string_lossy();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue; // an attachment or a body readpst saved beside its item
        }
        // The first folder is the store; the rest are Outlook's folders.
        let dirs: Vec<String> =
            rel.parent().expect("folder").iter().skip(1).map(|c| c.to_string_lossy().into_owned()).collect();
        let entry = folders.entry(dirs.join("/")).or_default();
        entry.0 += 1;
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        let subject = text.lines().take_while(|l| !l.is_empty()).find_map(|l| l.strip_prefix("Subject: "));
        if let Some(s) = subject.filter(|s| !s.starts_with("=?")) {
            entry.1.push(s.to_string());
        }
    }
    folders
}

#[tokio::test]
async fn pst_folders_and_items_match_an_independent_reader() {
    if !(crate::common::needs::corpus("pst_folders_and_items_match_an_independent_reader")
        && crate::common::needs::program(
            "pst_folders_and_items_match_an_independent_reader",
            "readpst",
            "apt-get install pst-utils",
        ))
    {
        return;
    }
    let mut files = corpus_psts();
    assert!(files.len() >= 5, "the corpus has five .pst files: {files:?}");
    // The corpus's files are all Unicode and permutation-encoded; these two, written by
    // tests/pst/writer/, are an ANSI and a Unicode file in the cyclic ("high") encoding.
    let fixtures = walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pst"));
    assert_eq!(fixtures.len(), 2, "{fixtures:?}");
    files.extend(fixtures);
    for file in files {
        let reference = readpst(&file);
        let stem = file.file_stem().expect("stem").to_string_lossy().into_owned();
        let app = TestApp::new(std::slice::from_ref(&file));
        let tree = folders(&app).await;
        let mut total = 0;
        for folder in tree.keys() {
            let list = app.json(&format!("/api/messages?limit=500&folder={}", enc(folder))).await;
            let mut subjects = Vec::new();
            for m in list["messages"].as_array().expect("messages") {
                let id = m["id"].as_str().expect("id");
                let text = app.get(&format!("/message/{}", enc(id))).await.text();
                let subject = m["subject"].as_str().unwrap_or("").to_string();
                // readpst exports no distribution lists, and mailshelf adds a notice item when there
                // is something to say about the file.
                if !(text.contains("IPM.DistList") || subject.starts_with("About this Outlook data file")) {
                    subjects.push(subject);
                }
            }
            if subjects.is_empty() {
                continue;
            }
            total += subjects.len();
            let name = folder.strip_prefix(&stem).unwrap_or(folder).trim_start_matches('/');
            let Some((count, emails)) = reference.get(name) else {
                panic!("{}: {folder:?} ({subjects:?}) is not in readpst's {reference:?}", file.display());
            };
            assert_eq!(subjects.len(), *count, "{}: {folder:?}: {subjects:?} vs readpst {reference:?}", file.display());
            for e in emails {
                assert!(subjects.contains(e), "{}: {e:?} not in {folder:?}: {subjects:?}", file.display());
            }
        }
        let expected: usize = reference.values().map(|(c, _)| c).sum();
        assert_eq!(total, expected, "{}: {tree:?} vs readpst {reference:?}", file.display());
    }
}

#[tokio::test]
async fn an_uploaded_pst_keeps_its_folders_under_its_name() {
    if !crate::common::needs::corpus("an_uploaded_pst_keeps_its_folders_under_its_name") {
        return;
    }
    let app = TestApp::new(&[]);
    let bytes = std::fs::read(corpus_dir().join("java-libpst/src/test/resources/dist-list.pst")).expect("read");
    // From the upload form: the file's name names its folder tree.
    let mut form =
        b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"C:\\Mail\\dist-list.pst\"\r\n\r\n".to_vec();
    form.extend_from_slice(&bytes);
    form.extend_from_slice(b"\r\n--B--\r\n");
    let req = axum::http::Request::post("/api/messages")
        .header("content-type", "multipart/form-data; boundary=B")
        .body(axum::body::Body::from(form))
        .expect("request");
    let r = app.request(req).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(created.as_array().map(Vec::len), Some(3), "every item is answered");
    let folders = app.json("/api/folders").await.to_string();
    assert!(folders.contains("Uploads/dist-list/Contacts"), "{folders}");
    let mut contacts = subjects(&app, "folder=Uploads/dist-list/Contacts").await;
    contacts.sort();
    assert_eq!(contacts, ["contact name 1", "test dist list"]);
    assert_eq!(subjects(&app, "folder=Uploads/dist-list/Calendar").await, ["Test appointment"]);
    assert_eq!(app.json("/api/messages?q=folder:uploads/dist-list").await["total"], 3);

    // The same bytes again, without a name: the same upload, nothing added.
    let req = axum::http::Request::post("/api/messages")
        .header("content-type", "message/rfc822")
        .body(axum::body::Body::from(bytes))
        .expect("request");
    assert_eq!(app.request(req).await.status, StatusCode::CREATED);
    assert_eq!(app.json("/api/status").await["messages"], 3);

    // Kept across a restart, read back from the stored file.
    let app = app.restart(&[]);
    assert_eq!(app.archive.progress.parsed.load(std::sync::atomic::Ordering::Relaxed), 0, "nothing read again");
    assert_eq!(subjects(&app, "folder=Uploads/dist-list/Calendar").await, ["Test appointment"]);
    let id = app.json("/api/messages?folder=Uploads/dist-list/Calendar").await["messages"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(app.get(&format!("/message/{id}")).await.status, StatusCode::OK);
}

/// What pffexport (Debian's pff-tools, libpff: an independent reader) exports of an archive: for
/// each folder below the store's top folder, how many items (a folder per item, named by its kind:
/// `Message00001`, `Appointment00002`, `DistributionList00003`, …).
fn pffexport(path: &Path) -> BTreeMap<String, usize> {
    let out = tempfile::tempdir().expect("temp dir");
    let target = out.path().join("export");
    let status = std::process::Command::new("pffexport")
        .args(["-q", "-m", "items", "-t"])
        .arg(&target)
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("pffexport (Debian's pff-tools) runs; scripts/test installs it");
    assert!(status.success(), "pffexport failed on {}", path.display());
    fn items(dir: &Path, prefix: &str, out: &mut BTreeMap<String, usize>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten().filter(|e| e.path().is_dir()) {
            let name = e.file_name().to_string_lossy().into_owned();
            let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
            if digits == 5 && name.len() > 5 && name.bytes().take(name.len() - 5).all(|b| b.is_ascii_alphabetic()) {
                *out.entry(prefix.to_string()).or_default() += 1;
            } else {
                let path = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
                items(&e.path(), &path, out);
            }
        }
    }
    // The store's top folder is named in the language of the Outlook that made the file ("Top of
    // Personal Folders", "Outlook データ ファイルのトップ"): it is the folder beside the search root
    // that holds the items.
    let mut best = BTreeMap::new();
    for top in std::fs::read_dir(out.path().join("export.export")).expect("export").flatten() {
        let mut found = BTreeMap::new();
        items(&top.path(), "", &mut found);
        if found.values().sum::<usize>() > best.values().sum::<usize>() {
            best = found;
        }
    }
    best
}

/// What mailshelf shows of an archive served alone: folder below the file's own folder → items (the
/// notice item about the file left out).
async fn shown(app: &TestApp, stem: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (folder, n) in folders(app).await {
        let inner = folder.strip_prefix(stem).unwrap_or(&folder).trim_start_matches('/').to_string();
        let notices = if inner.is_empty() {
            subjects(app, &format!("folder={}", enc(&folder)))
                .await
                .iter()
                .filter(|s| s.starts_with("About this Outlook data file"))
                .count() as u64
        } else {
            0
        };
        if n > notices {
            out.insert(inner, (n - notices) as usize);
        }
    }
    out
}

#[tokio::test]
async fn pst_folders_match_pffexport_folder_by_folder() {
    if !(crate::common::needs::corpus("pst_folders_match_pffexport_folder_by_folder")
        && crate::common::needs::program(
            "pst_folders_match_pffexport_folder_by_folder",
            "pffexport",
            "apt-get install pff-tools",
        ))
    {
        return;
    }
    let mut files = corpus_psts();
    assert!(files.len() >= 5, "the corpus has five .pst files: {files:?}");
    files.extend(walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pst")));
    for file in files {
        let reference = pffexport(&file);
        assert!(!reference.is_empty(), "{}: pffexport found no items", file.display());
        let stem = file.file_stem().expect("stem").to_string_lossy().into_owned();
        let app = TestApp::new(std::slice::from_ref(&file));
        assert_eq!(shown(&app, &stem).await, reference, "{}: mailshelf vs pffexport", file.display());
    }
}

/// An archive in every layout and encoding, the 4 KiB-page `.ost` of Outlook 2013 and later with its
/// compressed blocks among them: its folders and items as pffexport lists them, its bodies whole
/// across blocks; damaged copies of an `.ost` show what can be read.
#[tokio::test]
async fn archives_of_every_layout_open_as_their_folder_trees() {
    if !crate::common::needs::program(
        "archives_of_every_layout_open_as_their_folder_trees",
        "pffexport",
        "apt-get install pff-tools",
    ) {
        return;
    }
    use writer::{Archive, Layout, V};
    let dir = tempfile::tempdir().expect("temp dir");
    for layout in [Layout::Ansi, Layout::Unicode, Layout::Ost2013] {
        for crypt in [writer::CRYPT_NONE, writer::CRYPT_PERMUTE, writer::CRYPT_CYCLIC] {
            let mut a = Archive::new(layout, crypt);
            let inbox = a.folder(Archive::TOP, V::Text("Inbox".into()), vec![]);
            let projects = a.folder(inbox, V::Text("Projects".into()), vec![]);
            let body: String = (0..1200).map(|i| format!("Line {i} of a long body. ")).collect();
            for (folder, subject) in [(inbox, "first"), (inbox, "second"), (projects, "third")] {
                a.message(
                    folder,
                    vec![
                        (0x001a, V::Text("IPM.Note".into())),
                        (0x0037, V::Text(format!("{subject} message"))),
                        (0x1000, V::Text(format!("{subject}: {body}"))),
                        (0x0e07, V::Long(1)),
                    ],
                    vec![vec![
                        (0x0c15, V::Long(1)),
                        (0x3001, V::Text("Ann".into())),
                        (0x39fe, V::Text("ann@example.com".into())),
                    ]],
                );
            }
            let name = format!("{layout:?}-{crypt}.{}", if layout == Layout::Ost2013 { "ost" } else { "pst" });
            let path = dir.path().join(&name);
            std::fs::write(&path, a.finish()).expect("write");
            let reference = pffexport(&path);
            let want: BTreeMap<String, usize> = [("Inbox".to_string(), 2), ("Inbox/Projects".to_string(), 1)].into();
            assert_eq!(reference, want, "{name}: pffexport");
            let app = TestApp::new(std::slice::from_ref(&path));
            let stem = name.split('.').next().expect("stem");
            assert_eq!(shown(&app, stem).await, want, "{name}: mailshelf");
            let mut got = subjects(&app, "q=ann@example.com").await;
            got.sort();
            assert_eq!(got, ["first message", "second message", "third message"], "{name}");
            let list = app.json("/api/messages?q=third").await;
            let id = list["messages"][0]["id"].as_str().expect("id").to_string();
            let text = app.get(&format!("/message/{}", enc(&id))).await.text();
            assert!(text.contains("Line 1199 of a long body."), "{name}: the body, read across blocks");
            if layout == Layout::Ost2013 {
                let bytes = std::fs::read(&path).expect("read");
                for (i, at) in (0..bytes.len()).step_by(4093).enumerate() {
                    let mut bad = bytes.clone();
                    if i % 2 == 0 {
                        bad.truncate(at.max(600));
                    } else {
                        bad[at..(at + 700).min(bytes.len())].fill(0x5a);
                    }
                    let copy = dir.path().join("damaged.ost");
                    std::fs::write(&copy, &bad).expect("write");
                    if let Ok(listing) = mailshelf::ingest::pst::list(&copy) {
                        for item in &listing.items {
                            let _ = mailshelf::ingest::pst::item_msg(&copy, item.node)
                                .map(|m| mailshelf::parse::parse_message(std::sync::Arc::from(m)));
                        }
                    }
                }
            }
        }
    }
}

/// A folder of thousands of items and a message sent to a thousand people: their tables' heaps
/// span several blocks and the B-trees on them several levels (MS-PST §2.3.1, §2.3.2). Every item
/// is listed as pffexport lists it, and every recipient is read. (The 4 KiB-page `.ost` is left
/// out: pffexport reads no heap of more than one of its 16 KiB blocks that this writer makes, and
/// no document says how Outlook lays those out.)
#[tokio::test]
async fn large_folders_and_long_recipient_lists_read_whole() {
    if !crate::common::needs::program(
        "large_folders_and_long_recipient_lists_read_whole",
        "pffexport",
        "apt-get install pff-tools",
    ) {
        return;
    }
    use writer::{Archive, Layout, V};
    const ITEMS: usize = 2500;
    const RECIPIENTS: usize = 1200;
    let dir = tempfile::tempdir().expect("temp dir");
    for layout in [Layout::Ansi, Layout::Unicode] {
        let mut a = Archive::new(layout, writer::CRYPT_PERMUTE);
        let big = a.folder(Archive::TOP, V::Text("Big".into()), vec![]);
        let inbox = a.folder(Archive::TOP, V::Text("Inbox".into()), vec![]);
        for i in 0..ITEMS {
            a.message(
                big,
                vec![
                    (0x001a, V::Text("IPM.Note".into())),
                    (0x0037, V::Text(format!("Item {i} of the big folder"))),
                    (0x0e07, V::Long(1)),
                ],
                Vec::new(),
            );
        }
        let recipients = (0..RECIPIENTS)
            .map(|r| {
                vec![
                    (0x0c15, V::Long(1)),
                    (0x3001, V::Text(format!("Person {r}"))),
                    (0x39fe, V::Text(format!("person{r}@example.com"))),
                ]
            })
            .collect();
        a.message(
            inbox,
            vec![
                (0x001a, V::Text("IPM.Note".into())),
                (0x0037, V::Text("To everyone".into())),
                (0x1000, V::Text("All hands.".into())),
                (0x0e07, V::Long(1)),
            ],
            recipients,
        );
        let name = format!("{layout:?}.pst");
        let path = dir.path().join(&name);
        std::fs::write(&path, a.finish()).expect("write");
        let want: BTreeMap<String, usize> = [("Big".to_string(), ITEMS), ("Inbox".to_string(), 1)].into();
        assert_eq!(pffexport(&path), want, "{name}: pffexport");
        let app = TestApp::new(std::slice::from_ref(&path));
        let stem = name.split('.').next().expect("stem");
        assert_eq!(shown(&app, stem).await, want, "{name}: mailshelf");
        let list = app.json("/api/messages?q=everyone").await;
        let id = list["messages"][0]["id"].as_str().expect("id").to_string();
        let message = app.json(&format!("/api/messages/{}", enc(&id))).await;
        let to = message["to"].as_str().expect("to");
        for r in [0, RECIPIENTS / 2, RECIPIENTS - 1] {
            assert!(to.contains(&format!("person{r}@example.com")), "{name}: recipient {r}");
        }
    }
}

/// Outlook keeps copies of one item as items of their own: duplicates a sync left in a calendar,
/// copies in Deleted Items of a message still in the Inbox, a calendar copied beside one whose name
/// differs only by accents or language ("Calendar" and "Calendário"). Each is shown, in its folder,
/// as pffexport exports them, though their contents are the same.
#[tokio::test]
async fn copies_of_an_item_are_each_shown_in_their_folders() {
    if !crate::common::needs::program(
        "copies_of_an_item_are_each_shown_in_their_folders",
        "pffexport",
        "apt-get install pff-tools",
    ) {
        return;
    }
    use writer::{Archive, Layout, V};
    let dir = tempfile::tempdir().expect("temp dir");
    let mut a = Archive::new(Layout::Unicode, writer::CRYPT_PERMUTE);
    let inbox = a.folder(Archive::TOP, V::Text("Inbox".into()), vec![]);
    let deleted = a.folder(Archive::TOP, V::Text("Deleted Items".into()), vec![]);
    let calendar = a.folder(Archive::TOP, V::Text("Calendar".into()), vec![]);
    let calendario = a.folder(Archive::TOP, V::Text("Calendário".into()), vec![]);
    let note = vec![
        (0x001a, V::Text("IPM.Note".into())),
        (0x0037, V::Text("Minutes".into())),
        (0x0042, V::Text("Ann Lee".into())),
        (0x1000, V::Text("The minutes of the meeting.".into())),
        (0x0e07, V::Long(1)),
    ];
    let appointment = vec![
        (0x001a, V::Text("IPM.Appointment".into())),
        (0x0037, V::Text("Weekly review".into())),
        (0x1000, V::Text("Every week.".into())),
        (0x0e07, V::Long(1)),
    ];
    for (folder, props, copies) in
        [(inbox, &note, 1), (deleted, &note, 2), (calendar, &appointment, 3), (calendario, &appointment, 1)]
    {
        for _ in 0..copies {
            a.message(folder, props.clone(), Vec::new());
        }
    }
    let path = dir.path().join("copies.pst");
    std::fs::write(&path, a.finish()).expect("write");
    let want: BTreeMap<String, usize> = [("Inbox", 1), ("Deleted Items", 2), ("Calendar", 3), ("Calendário", 1)]
        .into_iter()
        .map(|(f, n)| (f.to_string(), n))
        .collect();
    assert_eq!(pffexport(&path), want, "pffexport");
    let app = TestApp::new(std::slice::from_ref(&path));
    assert_eq!(shown(&app, "copies").await, want, "mailshelf");
    // Each copy is a message of its own, with a page of its own.
    let list = app.json("/api/messages?limit=50&q=folder:copies").await;
    let ids: std::collections::BTreeSet<&str> =
        list["messages"].as_array().expect("messages").iter().map(|m| m["id"].as_str().expect("id")).collect();
    assert_eq!(ids.len(), 7, "{list}");
    for id in ids {
        assert_eq!(app.get(&format!("/message/{}", enc(id))).await.status, StatusCode::OK);
    }
}

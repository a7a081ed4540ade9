//! Signed and encrypted mail through the server, as `.eml` files, an mbox, a Maildir and a saved
//! page: the JSON `security` object of every message, its content where the page, `/part/` and
//! search look for it, and the privacy of decrypted mail (kept out of the index unless
//! `--index-decrypted`). On both backends.

use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use serde_json::Value;

use crate::common::{corpus_dir, TestApp};
use crate::crypto::{fixtures, keyring, trust_only};

/// Which fixtures go where: S/MIME as `.eml` files, PGP/MIME in an mbox, inline PGP in a Maildir,
/// and one signed page saved as `.mht`.
fn archive() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let (eml, maildir) = (dir.path().join("eml"), dir.path().join("Maildir/cur"));
    std::fs::create_dir_all(&eml).expect("mkdir");
    std::fs::create_dir_all(&maildir).expect("mkdir");
    for d in ["new", "tmp"] {
        std::fs::create_dir_all(dir.path().join("Maildir").join(d)).expect("mkdir");
    }
    let mut mbox = Vec::new();
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(fixtures().join("messages")).expect("fixtures").map(|e| e.expect("entry").path()).collect();
    files.sort();
    for (n, f) in files.iter().enumerate() {
        let name = f.file_name().and_then(|n| n.to_str()).expect("name").to_string();
        let raw = std::fs::read(f).expect("read");
        if name == "smime-related-detached.eml" {
            std::fs::write(dir.path().join("saved.mht"), &raw).expect("write");
        } else if name.starts_with("smime-") {
            std::fs::write(eml.join(&name), &raw).expect("write");
        } else if name.starts_with("pgp-mime-") {
            mbox.extend_from_slice(b"From alice@example.org Thu Jan  1 00:00:00 2026\n");
            mbox.extend_from_slice(&String::from_utf8_lossy(&raw).replace("\r\n", "\n").into_bytes());
            mbox.push(b'\n');
        } else {
            std::fs::write(maildir.join(format!("{n}.crypto:2,S")), &raw).expect("write");
        }
    }
    std::fs::write(dir.path().join("pgp.mbox"), mbox).expect("write");
    let root = dir.path().to_path_buf();
    (dir, root)
}

fn api(file: &str) -> String {
    format!("/api/messages/{}@example.org", file.trim_end_matches(".eml"))
}

async fn security(app: &TestApp, file: &str) -> Value {
    app.json(&api(file)).await["security"].clone()
}

/// The text a reader sees of a message, fetched the way the page does.
pub async fn shown(app: &TestApp, detail: &Value) -> String {
    let mut out = String::new();
    for url in [&detail["text_url"], &detail["html_url"]] {
        if let Some(u) = url.as_str() {
            let r = app.get(u).await;
            assert_eq!(r.status, StatusCode::OK, "{u}");
            out.push_str(&r.text());
        }
    }
    out
}

#[tokio::test]
async fn signed_and_encrypted_mail_answers_with_its_security_in_every_container() {
    let (_dir, root) = archive();
    let app = TestApp::with_keys(&[root], keyring(), false);
    let mut failures = Vec::new();
    for (file, sigs, enc, words) in crate::crypto::CASES {
        let detail = app.json(&api(file)).await;
        let s = &detail["security"];
        let got_sigs: Vec<&str> = s["signatures"]
            .as_array()
            .expect("signatures")
            .iter()
            .map(|r| r["status"].as_str().expect("status"))
            .collect();
        let got_enc = s["encryption"]["status"].as_str();
        let text = shown(&app, &detail).await;
        if got_sigs != *sigs || got_enc != *enc || !text.contains(words) {
            failures.push(format!("{file}: {got_sigs:?} {got_enc:?} {s} showing {text:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let s = security(&app, "smime-detached.eml").await;
    let sig = &s["signatures"][0];
    assert_eq!(sig["protocol"], "smime");
    assert_eq!(sig["signer"], "alice@example.org");
    assert_eq!(sig["name"], "Alice Signer");
    assert_eq!(sig["certificate"]["issuer"], "CN=mailshelf Test CA");
    assert!(sig["signed_at"].is_string() && sig.get("key_id").is_none());
    assert!(s["encryption"].is_null());
    let s = security(&app, "pgp-mime-encrypted-signed.eml").await;
    assert_eq!(s["signatures"][0]["protocol"], "openpgp");
    assert_eq!(s["signatures"][0]["key_id"].as_str().map(str::len), Some(40));
    assert_eq!(s["encryption"]["protocol"], "openpgp");
    assert!(s["encryption"]["recipients"][0].as_str().is_some_and(|r| r.starts_with("key ")));
    let plain = app.json("/api/messages?limit=1000").await;
    assert_eq!(plain["total"], crate::crypto::CASES.len(), "every fixture is listed once");
}

#[tokio::test]
async fn without_keys_an_encrypted_message_shows_nothing_but_for_whom() {
    let (_dir, root) = archive();
    let app = TestApp::with_keys(&[root], trust_only(), false);
    for (file, _, enc, words) in crate::crypto::CASES.iter().filter(|c| c.2.is_some()) {
        let detail = app.json(&api(file)).await;
        let e = &detail["security"]["encryption"];
        assert_eq!(e["status"], "no-key", "{file}: {e}");
        assert!(!e["recipients"].as_array().expect("recipients").is_empty(), "{file}");
        assert!(detail["text_url"].is_null() && detail["html_url"].is_null(), "{file}: no body");
        assert!(words.is_empty() || !shown(&app, &detail).await.contains(words), "{file}");
        let _ = enc;
    }
}

#[tokio::test]
async fn signed_content_is_searched_and_decrypted_content_only_when_asked() {
    let (_dir, root) = archive();
    let count = |v: &Value| v["total"].as_u64().expect("total");
    let app = TestApp::with_keys(std::slice::from_ref(&root), keyring(), false);
    // Signed (not encrypted) content is indexed like any other: opaque, detached, clear-signed.
    assert!(count(&app.json("/api/messages?q=quokka").await) >= 10);
    assert!(count(&app.json("/api/messages?q=wombat").await) == 1);
    // Found by its own text, not by a document: the armoured text around it is no attachment.
    let found = app.json("/api/messages?q=wombat").await;
    assert_eq!(found["messages"][0]["matched_in"], serde_json::json!([]), "{found}");
    assert!(count(&app.json("/api/messages?q=pangolin").await) >= 3);
    // Decrypted content is shown…
    let detail = app.json(&api("smime-encrypted-rsa.eml")).await;
    assert!(shown(&app, &detail).await.contains("marmalade"));
    // …but never indexed, nor written anywhere.
    assert_eq!(count(&app.json("/api/messages?q=marmalade").await), 0);
    // (The signed-only inline message says "kumquat" too; the encrypted one is not found.)
    assert_eq!(count(&app.json("/api/messages?q=kumquat").await), 1);
    // Not under the data folder, nor in the database (as written, or as the stem search keeps).
    assert!(!kept(&app, b"marmalad"), "no decrypted text is kept");
    // With --index-decrypted, it is.
    let indexed = TestApp::with_keys(&[root], keyring(), true);
    assert!(count(&indexed.json("/api/messages?q=marmalade").await) >= 8);
    // The check above finds such text where it is plain: in the database's dump (tantivy's term
    // dictionary is compressed, so on the embedded backend the search answering nothing is the proof,
    // and the files are searched for a plain copy).
    if indexed.database_url.is_some() {
        assert!(kept(&indexed, b"marmalad"), "what --index-decrypted keeps is in the database");
    }
    assert_eq!(count(&indexed.json("/api/messages?q=kumquat").await), 2);
    let detail = indexed.json(&api("pgp-mime-encrypted.eml")).await;
    assert!(shown(&indexed, &detail).await.contains("marmalade"));
}

/// Whether what `app` keeps holds `needle`: a file under its data folder, or, on PostgreSQL, its
/// database's data (as `pg_dump` writes it).
fn kept(app: &TestApp, needle: &[u8]) -> bool {
    let Some(url) = &app.database_url else { return tree_contains(app.data_dir.path(), needle) };
    let bin = crate::common::postgres::bin_dir().expect("PostgreSQL's programs");
    let dump = std::process::Command::new(bin.join("pg_dump"))
        .args(["--data-only", "-d", url])
        .output()
        .expect("pg_dump runs");
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    assert!(dump.stdout.len() > 1000, "the dump holds the index");
    dump.stdout.windows(needle.len()).any(|w| w == needle)
}

/// Whether any file under `dir` holds `needle` (a search index keeps terms in its own files).
fn tree_contains(dir: &Path, needle: &[u8]) -> bool {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .any(|e| std::fs::read(e.path()).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle)))
}

#[tokio::test]
async fn a_signed_page_finds_its_pictures_by_content_id() {
    let (_dir, root) = archive();
    let app = TestApp::with_keys(&[root], keyring(), false);
    for file in ["smime-related-opaque.eml", "smime-related-detached.eml", "pgp-mime-related.eml"] {
        let detail = app.json(&api(file)).await;
        let html_url = detail["html_url"].as_str().unwrap_or_else(|| panic!("{file}: an HTML body"));
        let html = app.get(html_url).await.text();
        let picture = html
            .split('"')
            .find(|s| s.starts_with("/part/") && s.contains("dot@example.org"))
            .unwrap_or_else(|| panic!("{file}: the picture's reference is rewritten: {html}"))
            .replace("&amp;", "&");
        let r = app.get(&picture).await;
        assert_eq!((r.status, r.header("content-type")), (StatusCode::OK, "image/png"), "{file}");
        assert!(r.body.starts_with(b"\x89PNG"), "{file}");
        let parts = detail["parts"].to_string();
        assert!(parts.contains("dot.png"), "{file}: the picture is in the part tree");
        // Its thumbnail is made like any picture's.
        let thumb = picture.replacen("/part/", "/thumb/", 1);
        let r = app.get(&thumb).await;
        assert_eq!(r.status, StatusCode::OK, "{file}: {thumb}");
        assert!(r.header("content-type").starts_with("image/"), "{file}");
    }
}

/// The message of an Outlook file with an S/MIME class.
#[tokio::test]
async fn outlook_smime_messages_show_their_content() {
    if !(crate::common::needs::corpus("outlook_smime_messages_show_their_content")
        && crate::common::needs::program(
            "outlook_smime_messages_show_their_content",
            "openssl",
            "apt-get install openssl",
        ))
    {
        return;
    }
    let dir = corpus_dir().join("outlook-message-parser/src/test/resources/test-messages");
    let signed = dir.join("S_MIME test message signed.msg");
    let encrypted = dir.join("S_MIME test message encrypted.msg");
    let tmp = tempfile::tempdir().expect("dir");
    // An opaque-signed Outlook message (IPM.Note.SMIME holding signed-data), made from the
    // encrypted one by putting a fixture's signed-data where its enveloped-data was.
    let opaque = tmp.path().join("opaque-signed.msg");
    std::fs::write(&opaque, replace_attachment(&encrypted, &cms_of("smime-opaque-signed.eml"))).expect("write");
    let app = TestApp::with_keys(&[signed, encrypted, opaque], keyring(), false);
    let list = app.json("/api/messages").await;
    // Counted by kind, not found by subject: the opaque-signed copy keeps the encrypted one's
    // subject, and the two list in either order.
    let (mut signed, mut no_key) = (0, 0);
    for m in list["messages"].as_array().expect("messages") {
        let detail = app.json(&format!("/api/messages/{}", m["id"].as_str().expect("id"))).await;
        let s = &detail["security"];
        let machinery = collect_filenames(&detail["parts"]);
        match (s["signatures"].as_array().map(Vec::len), s["encryption"]["status"].as_str()) {
            (Some(1), None) => {
                // Signed, by a certificate of an authority not given with --trust.
                assert_eq!(s["signatures"][0]["status"], "untrusted", "{s}");
                assert!(!shown(&app, &detail).await.trim().is_empty(), "its text is shown");
                signed += 1;
            }
            (Some(0), Some("no-key")) => {
                assert!(detail["text_url"].is_null() && detail["html_url"].is_null());
                no_key += 1;
            }
            other => panic!("unexpected {other:?}: {s}"),
        }
        assert!(machinery.iter().all(|(n, role)| !n.contains("smime.p7") || role.is_some()), "{machinery:?}");
    }
    // The signed message and the opaque-signed copy; the encrypted one, with no key to open it.
    assert_eq!((signed, no_key), (2, 1));
}

/// Every file name in a part tree, with its node's role.
fn collect_filenames(parts: &Value) -> Vec<(&str, Option<&str>)> {
    let mut out = Vec::new();
    for p in parts.as_array().into_iter().flatten() {
        out.extend(p["filename"].as_str().map(|n| (n, p["role"].as_str())));
        out.extend(collect_filenames(&p["parts"]));
    }
    out
}

/// The DER of the CMS object a fixture carries (signed or enveloped data), as `openssl` writes it out.
pub fn cms_of(file: &str) -> Vec<u8> {
    let out = std::process::Command::new("openssl")
        .args(["cms", "-cmsout", "-outform", "DER", "-in"])
        .arg(fixtures().join("messages").join(file))
        .output()
        .expect("openssl runs");
    assert!(out.status.success());
    out.stdout
}

/// An Outlook message file with its first attachment's data replaced.
fn replace_attachment(msg: &Path, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let bytes = std::fs::read(msg).expect("read");
    let mut file = cfb::CompoundFile::open(std::io::Cursor::new(bytes)).expect("an OLE file");
    let stream = "/__attach_version1.0_#00000000/__substg1.0_37010102";
    let mut s = file.create_stream(stream).expect("the attachment's data stream");
    s.write_all(data).expect("write");
    drop(s);
    file.flush().expect("flush");
    file.into_inner().into_inner()
}

/// The OpenAPI document describes `security`: every field of a signature and of the encryption,
/// every status, and the `role` of a part that is a signature or encrypted data.
#[tokio::test]
async fn openapi_describes_signatures_and_encryption() {
    let app = TestApp::with_keys(&[], trust_only(), false);
    let doc = app.json("/api/openapi.json").await;
    let schemas = &doc["components"]["schemas"];
    let fields = |name: &str| -> Vec<String> {
        schemas[name]["properties"].as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
    };
    let values = |name: &str| -> Vec<&str> {
        schemas[name]["enum"].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
    };
    // MessageDetail is MessageSummary and its own properties (allOf).
    let detail = schemas["MessageDetail"]["allOf"].as_array().into_iter().flatten();
    assert!(detail.into_iter().any(|s| s["properties"]["security"].is_object()), "{}", schemas["MessageDetail"]);
    assert_eq!(fields("SecurityInfo"), ["encryption", "signatures"]);
    let signature = fields("SignatureInfo");
    for f in ["protocol", "status", "signer", "name", "key_id", "certificate", "signed_at", "detail"] {
        assert!(signature.contains(&f.to_string()), "{f} in {signature:?}");
    }
    let certificate = fields("CertificateSummary");
    for f in ["subject", "issuer", "serial", "not_before", "not_after"] {
        assert!(certificate.contains(&f.to_string()), "{f} in {certificate:?}");
    }
    assert_eq!(values("SignatureStatusName"), ["valid", "invalid", "untrusted", "expired", "unknown-key", "error"]);
    assert_eq!(values("EncryptionStatusName"), ["decrypted", "no-key", "failed"]);
    assert_eq!(values("SecurityProtocol"), ["smime", "openpgp"]);
    let encryption = fields("EncryptionInfo");
    for f in ["protocol", "status", "recipients"] {
        assert!(encryption.contains(&f.to_string()), "{f} in {encryption:?}");
    }
    assert!(fields("PartNode").contains(&"role".to_string()));
    assert_eq!(values("PartRole"), ["signature", "signed", "encrypted"]);
}

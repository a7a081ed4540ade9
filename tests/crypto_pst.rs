//! Signed and encrypted mail kept in an Outlook data file, as Outlook keeps it (MS-OXOSMIME): an
//! `IPM.Note.SMIME.MultipartSigned` item whose one attachment is the whole `multipart/signed`
//! entity, and `IPM.Note.SMIME` items whose one attachment is the CMS object (opaque signed-data,
//! enveloped-data). The S/MIME inside is the fixtures' (made by `openssl`); the `.pst` around it is
//! written by the tests' MS-PST writer. Each item shows its content with its status, as the same
//! message in an `.eml` does; signed text is searched, decrypted text is not.

use crate::common::TestApp;
use crate::crypto::{fixtures, keyring, trust_only};
use crate::crypto_web::{cms_of, shown};
use crate::pst::writer::{Archive, Layout, CRYPT_PERMUTE, V};

/// The fixture's `multipart/signed` entity: its Content-Type header (folded lines and all) and
/// its body, without the message's other headers.
fn multipart_signed_of(file: &str) -> Vec<u8> {
    let raw = std::fs::read(fixtures().join("messages").join(file)).expect("read");
    let at = raw.windows(13).position(|w| w.eq_ignore_ascii_case(b"content-type:")).expect("a Content-Type");
    raw[at..].to_vec()
}

/// An item of class `class` from Alice with the given attachment.
fn item(a: &mut Archive, folder: u32, class: &str, subject: &str, attachment: (&str, &str, Vec<u8>)) {
    let headers = format!(
        "From: Alice Signer <alice@example.org>\r\nTo: Bob Recipient <bob@example.org>\r\nSubject: {subject}\r\n\
         Date: Thu, 26 Nov 2026 11:14:06 +0000\r\nMessage-ID: <pst-{}@example.org>\r\n",
        subject.replace(' ', "-")
    );
    let nid = a.message(
        folder,
        vec![
            (0x001a, V::Text(class.into())),
            (0x0037, V::Text(subject.into())),
            (0x007d, V::Text(headers)),
            (0x0042, V::Text("Alice Signer".into())),
            (0x0065, V::Text("alice@example.org".into())),
            (0x0064, V::Text("SMTP".into())),
            (0x0e07, V::Long(1)),
        ],
        vec![vec![
            (0x0c15, V::Long(1)),
            (0x3001, V::Text("Bob Recipient".into())),
            (0x39fe, V::Text("bob@example.org".into())),
        ]],
    );
    let (name, mime, data) = attachment;
    a.attach(
        nid,
        vec![
            (0x3705, V::Long(1)),
            (0x3707, V::Text(name.into())),
            (0x370e, V::Text(mime.into())),
            (0x3701, V::Binary(data)),
        ],
    );
}

/// File (subject), signature statuses, encryption status, words the reader sees with the keys.
const CASES: &[(&str, &[&str], Option<&str>, &str)] = &[
    ("detached signature", &["valid"], None, "quokka sunrise"),
    ("opaque signature", &["valid"], None, "quokka sunrise"),
    ("encrypted", &[], Some("decrypted"), "marmalade"),
];

#[tokio::test]
async fn outlook_data_files_show_signed_and_encrypted_items_with_their_status() {
    let dir = tempfile::tempdir().expect("dir");
    let mut a = Archive::new(Layout::Unicode, CRYPT_PERMUTE);
    let inbox = a.folder(Archive::TOP, V::Text("Inbox".into()), vec![]);
    let detached = ("smime.p7m", "multipart/signed", multipart_signed_of("smime-detached.eml"));
    item(&mut a, inbox, "IPM.Note.SMIME.MultipartSigned", "detached signature", detached);
    let opaque = ("smime.p7m", "application/pkcs7-mime", cms_of("smime-opaque-signed.eml"));
    item(&mut a, inbox, "IPM.Note.SMIME", "opaque signature", opaque);
    let encrypted = ("smime.p7m", "application/pkcs7-mime", cms_of("smime-encrypted-rsa.eml"));
    item(&mut a, inbox, "IPM.Note.SMIME", "encrypted", encrypted);
    let path = dir.path().join("secure.pst");
    std::fs::write(&path, a.finish()).expect("write");

    let app = TestApp::with_keys(std::slice::from_ref(&path), keyring(), false);
    let locked = TestApp::with_keys(std::slice::from_ref(&path), trust_only(), false);
    let list = app.json("/api/messages?limit=100").await;
    let messages = list["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), CASES.len(), "{list}");
    let mut failures = Vec::new();
    for (subject, sigs, enc, words) in CASES {
        let id = messages
            .iter()
            .find(|m| m["subject"] == *subject)
            .and_then(|m| m["id"].as_str())
            .unwrap_or_else(|| panic!("{subject:?} is listed: {list}"));
        let url = format!("/api/messages/{id}");
        let detail = app.json(&url).await;
        let s = &detail["security"];
        let got: Vec<&str> =
            s["signatures"].as_array().expect("signatures").iter().filter_map(|r| r["status"].as_str()).collect();
        let text = shown(&app, &detail).await;
        if got != *sigs || s["encryption"]["status"].as_str() != *enc || !text.contains(words) {
            failures.push(format!("{subject}: {s} showing {text:?}"));
        }
        let names = detail["parts"].to_string();
        assert!(
            !names.contains("\"smime.p7m\"") || names.contains("\"role\""),
            "{subject}: machinery is marked: {names}"
        );
        // Without the key, the encrypted item says for whom and shows nothing of itself.
        let detail = locked.json(&url).await;
        if enc.is_some() {
            assert_eq!(detail["security"]["encryption"]["status"], "no-key", "{subject}");
            assert!(!shown(&locked, &detail).await.contains(words), "{subject}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Signed text is searched like any other; decrypted text is not indexed.
    assert_eq!(app.json("/api/messages?q=quokka").await["total"], 2);
    assert_eq!(app.json("/api/messages?q=marmalade").await["total"], 0);
}

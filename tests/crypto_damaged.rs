//! Damaged signatures and encrypted data among good mail: the fixtures made by `openssl` and
//! `gpg` with their CMS objects cut short and their OpenPGP packets broken. Each damaged message
//! answers with `error` (a signature) or `failed` (encryption) and a reason in the JSON, a notice
//! on its page, and whatever else of it can be read; the good messages beside them are unaffected.

use axum::http::StatusCode;

use crate::common::TestApp;
use crate::crypto::{fixtures, keyring};
use crate::crypto_web::shown;

/// The fixture `file` with its longest base64 run (the CMS object) cut to `keep` lines.
fn cms_cut(file: &str, keep: usize) -> Vec<u8> {
    let text = std::fs::read_to_string(fixtures().join("messages").join(file)).expect("read");
    let is_b64 = |l: &str| {
        let l = l.trim_end_matches(['\r', '\n']);
        l.len() >= 60 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
    };
    let mut out = String::new();
    let mut run = 0;
    for line in text.split_inclusive('\n') {
        run = if is_b64(line) { run + 1 } else { 0 };
        if run == 0 || run <= keep {
            out.push_str(line);
        }
    }
    out.into_bytes()
}

/// The fixture `file` with lines of its OpenPGP armor dropped (packets cut in the middle).
fn armor_broken(file: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(fixtures().join("messages").join(file)).expect("read");
    let start = text.find("-----BEGIN PGP ").expect("armor");
    let mut lines: Vec<&str> = text[start..].split_inclusive('\n').collect();
    // The armor header line, a blank line, then the data: drop the third and fourth lines of it
    // (or its checksum and end line, of a short one).
    lines.drain(4..6);
    format!("{}{}", &text[..start], lines.concat()).into_bytes()
}

/// A damaged message: its name (and Message-ID's local part), its bytes, the signature statuses
/// and the encryption status it answers with, and words still shown.
type Case = (&'static str, Vec<u8>, &'static [&'static str], Option<&'static str>, &'static str);

#[tokio::test]
async fn damaged_signatures_and_encrypted_data_say_why_and_the_rest_is_shown() {
    let dir = tempfile::tempdir().expect("dir");
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).expect("write");
    let cases: Vec<Case> = vec![
        ("smime-detached", cms_cut("smime-detached.eml", 3), &["error"], None, "quokka sunrise"),
        ("smime-opaque-signed", cms_cut("smime-opaque-signed.eml", 5), &["error"], None, ""),
        ("smime-encrypted-rsa", cms_cut("smime-encrypted-rsa.eml", 2), &[], Some("failed"), ""),
        ("pgp-mime-encrypted", armor_broken("pgp-mime-encrypted.eml"), &[], Some("failed"), ""),
        ("pgp-mime-signed", armor_broken("pgp-mime-signed.eml"), &["error"], None, "quokka sunrise"),
    ];
    for (name, bytes, ..) in &cases {
        write(&format!("{name}.eml"), bytes);
    }
    // A good message beside them.
    let good = std::fs::read(fixtures().join("messages/smime-opaque-signed-ber.eml")).expect("read");
    write("good.eml", &good);
    let app = TestApp::with_keys(&[dir.path().to_path_buf()], keyring(), false);
    let mut failures = Vec::new();
    for (name, _, sigs, enc, words) in &cases {
        let detail = app.json(&format!("/api/messages/{name}@example.org")).await;
        let s = &detail["security"];
        let got: Vec<&str> =
            s["signatures"].as_array().expect("signatures").iter().filter_map(|r| r["status"].as_str()).collect();
        let got_enc = s["encryption"]["status"].as_str();
        let text = shown(&app, &detail).await;
        if got != *sigs || got_enc != *enc || !text.contains(words) {
            failures.push(format!("{name}: {s} showing {text:?}"));
            continue;
        }
        // The reason, in the JSON and on the page.
        let reason = match enc {
            Some(_) => s["encryption"]["detail"].as_str(),
            None => s["signatures"][0]["detail"].as_str(),
        };
        if reason.is_none_or(str::is_empty) {
            failures.push(format!("{name}: no reason given: {s}"));
        }
        let page = app.get(&format!("/message/{name}@example.org")).await;
        assert_eq!(page.status, StatusCode::OK, "{name}");
        let html = page.text();
        let class = sigs.first().copied().or(*enc).expect("a status");
        if !html.contains(&format!("<details class=\"security {class}\">")) {
            failures.push(format!("{name}: no {class} line on the page"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let detail = app.json("/api/messages/smime-opaque-signed-ber@example.org").await;
    assert_eq!(detail["security"]["signatures"][0]["status"], "valid", "the good message is unaffected");
    assert!(shown(&app, &detail).await.contains("quokka sunrise"));
    assert_eq!(app.json("/api/messages").await["total"], cases.len() + 1, "every message is listed");
}

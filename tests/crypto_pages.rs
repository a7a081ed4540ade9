//! The line above a signed or encrypted message's body, on its page, in its print view and in
//! its PDF: who signed it and what checking found, the certificate one click away; what an
//! encrypted message is, for whom, when no key opens it. Signatures are never attachments.

use axum::http::StatusCode;

use crate::common::TestApp;
use crate::crypto::{fixtures, keyring, trust_only};

fn one(file: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(fixtures().join("messages").join(file), dir.path().join(file)).expect("copy");
    let root = dir.path().to_path_buf();
    (dir, root)
}

fn page_of(file: &str) -> String {
    format!("/message/{}@example.org", file.trim_end_matches(".eml"))
}

/// A page's text with the character references askama writes for `<` and `>` in their named form.
fn normalized(html: String) -> String {
    html.replace("&#60;", "&lt;").replace("&#62;", "&gt;")
}

/// The page's attachments section, if it has one.
fn attachments_section(html: &str) -> &str {
    html.split("<section class=\"attachments\">").nth(1).and_then(|s| s.split("</section>").next()).unwrap_or("")
}

#[tokio::test]
async fn the_page_says_who_signed_a_message_above_its_body() {
    let cases = [
        ("smime-detached.eml", "valid", "Signed by Alice Signer &lt;alice@example.org&gt; — valid"),
        ("smime-detached-tampered.eml", "invalid", "Signed by Alice Signer &lt;alice@example.org&gt; — invalid"),
        (
            "smime-expired.eml",
            "expired",
            "Signed by Dave Expired &lt;dave@example.org&gt; — certificate not valid when signed",
        ),
        ("smime-foreign.eml", "untrusted", "— not trusted"),
        ("pgp-mime-signed.eml", "valid", "Signed by Alice OpenPGP &lt;alice@example.org&gt; — valid"),
        ("pgp-mime-unknown-key.eml", "unknown-key", "— no public key to check it"),
        ("smime-signed-then-encrypted.eml", "valid", "Encrypted (S/MIME) — decrypted with your key"),
    ];
    for (file, status, line) in cases {
        let (_dir, root) = one(file);
        let app = TestApp::with_keys(&[root], keyring(), false);
        let r = app.get(&page_of(file)).await;
        assert_eq!(r.status, StatusCode::OK, "{file}");
        let html = normalized(r.text());
        assert!(html.contains(&format!("<details class=\"security {status}\">")), "{file}: {html}");
        assert!(html.contains(line), "{file}: {line:?} in {html}");
        let body_at = html.find("class=\"body").or_else(|| html.find("class=\"text\"")).expect("a body");
        assert!(html.find(line).is_some_and(|at| at < body_at), "{file}: the line is above the body");
        if file.starts_with("smime-detached") {
            // The certificate, one click away.
            for fact in [
                "<dt>Subject</dt><dd>CN=Alice Signer</dd>",
                "<dt>Issuer</dt><dd>CN=mailshelf Test CA</dd>",
                "<dt>Valid until</dt>",
            ] {
                assert!(html.contains(fact), "{file}: {fact}");
            }
        }
        let attachments = attachments_section(&html);
        assert!(!attachments.contains("smime.p7") && !attachments.contains("signature.asc"), "{file}: {attachments}");
    }
}

#[tokio::test]
async fn an_encrypted_message_without_its_key_shows_only_for_whom() {
    for file in ["smime-encrypted-rsa.eml", "pgp-mime-encrypted.eml", "pgp-inline-encrypted.eml"] {
        let (_dir, root) = one(file);
        let app = TestApp::with_keys(&[root], trust_only(), false);
        let html = app.get(&page_of(file)).await.text();
        assert!(html.contains("<details class=\"security no-key\">"), "{file}");
        assert!(html.contains("This message is encrypted") && html.contains("It is for: "), "{file}: {html}");
        assert!(html.contains("nothing of its content is shown"), "{file}");
        assert!(!html.contains("marmalade") && !html.contains("kumquat"), "{file}");
        assert!(attachments_section(&html).is_empty(), "{file}: the encrypted data is no attachment");
    }
}

#[tokio::test]
async fn print_and_pdf_carry_the_signature_line() {
    if !crate::common::needs::chromium("print_and_pdf_carry_the_signature_line") {
        return;
    }
    let file = "smime-detached.eml";
    let (_dir, root) = one(file);
    let app = TestApp::with_keys(&[root], keyring(), false);
    let print = normalized(app.get(&format!("{}/print", page_of(file))).await.text());
    assert!(print.contains("Signed by Alice Signer &lt;alice@example.org&gt; — valid"), "{print}");
    assert!(print.contains("Subject: CN=Alice Signer"), "{print}");
    let out = tempfile::tempdir().expect("dir");
    let pdf = crate::print::pdf_of(&app, &format!("{}.pdf", page_of(file)), out.path()).await;
    let text = crate::print::pdftotext(&pdf);
    assert!(text.contains("Signed by Alice Signer <alice@example.org> — valid"), "{text}");
    assert!(text.contains("quokka sunrise"), "{text}");
}

/// An encrypted message uploaded to a server holding its key: the answer to the upload, and the
/// message asked for afterwards, show it decrypted with its signature checked; the upload does not
/// leave a "no key" behind for later.
#[tokio::test]
async fn uploaded_encrypted_mail_is_decrypted_in_the_answer_and_after() {
    let app = TestApp::with_keys(&[], keyring(), false);
    for (file, sigs) in [("smime-signed-then-encrypted.eml", 1), ("pgp-mime-encrypted.eml", 0)] {
        let raw = std::fs::read(fixtures().join("messages").join(file)).expect("read");
        let req = axum::http::Request::post("/api/messages")
            .header("content-type", "message/rfc822")
            .body(axum::body::Body::from(raw))
            .expect("request");
        let r = app.request(req).await;
        assert_eq!(r.status, StatusCode::CREATED, "{file}: {}", r.text());
        let created: serde_json::Value = serde_json::from_slice(&r.body).expect("json");
        let later = app.json(r.header("location")).await;
        for (when, detail) in [("the upload's answer", &created[0]), ("asked later", &later)] {
            let s = &detail["security"];
            assert_eq!(s["encryption"]["status"], "decrypted", "{file}, {when}: {s}");
            assert_eq!(s["signatures"].as_array().map(Vec::len), Some(sigs), "{file}, {when}: {s}");
            assert!(detail["text_url"].is_string(), "{file}, {when}: its body is shown");
        }
    }
}

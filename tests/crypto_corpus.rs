//! Real signed and encrypted mail from other projects (`../shared/corpus`): notmuch's S/MIME and
//! OpenPGP test messages with the keys they were made with (`test/smime/`, its README;
//! `test/openpgp4-secret-key.asc`), mu's, and an OpenPGP-signed Outlook file. What mailshelf
//! concludes of each is asserted, and `openssl cms -verify` must agree with each S/MIME `valid`.

use std::path::{Path, PathBuf};
use std::process::Command;

use mailshelf::crypto::Keyring;

use crate::common::corpus_dir;
use crate::crypto::{open, shown_text};

fn notmuch() -> PathBuf {
    corpus_dir().join("notmuch/test")
}

/// notmuch's keys: its OpenPGP test key, Bob's and the test suite's S/MIME keys (empty
/// passphrases), and the LAMPS sample CA as the S/MIME trust anchor.
fn notmuch_keys() -> Keyring {
    let nm = notmuch();
    Keyring::load(
        &[nm.join("openpgp4-secret-key.asc"), nm.join("smime/bob.p12"), nm.join("smime/key+cert.pem")],
        &[nm.join("smime/ca.crt")],
        Some(""),
        None,
    )
    .expect("notmuch's test keys load")
}

/// File (under the corpus), signature statuses, encryption status, words the reader sees.
const CASES: &[(&str, &[&str], Option<&str>, &str)] = &[
    ("notmuch/test/corpora/pkcs7/smime-onepart-signed.eml", &["valid"], None, "cancel this contract"),
    ("notmuch/test/corpora/protected-headers/smime-onepart-signed.eml", &["valid"], None, "cancel this contract"),
    ("notmuch/test/corpora/protected-headers/smime-multipart-signed.eml", &["valid"], None, "cancel this contract"),
    (
        "notmuch/test/corpora/protected-headers/smime-sign+enc.eml",
        &["valid"],
        Some("decrypted"),
        "correct-horse-battery-staple",
    ),
    ("notmuch/test/corpora/protected-headers/smime-sign+enc+legacy-disp.eml", &["valid"], Some("decrypted"), ""),
    ("notmuch/test/corpora/protected-headers/smime-enc+legacy-disp.eml", &[], Some("decrypted"), ""),
    ("notmuch/test/corpora/crypto/basic-encrypted.eml", &[], Some("decrypted"), "password"),
    ("notmuch/test/corpora/crypto/encrypted-signed.eml", &["valid"], Some("decrypted"), ""),
    ("notmuch/test/corpora/crypto/encrypted-rfc822-attachment", &[], Some("decrypted"), ""),
    ("notmuch/test/corpora/crypto/simple-encrypted", &[], Some("no-key"), ""),
    ("notmuch/test/corpora/protected-headers/encrypted-signed.eml", &["valid"], Some("decrypted"), ""),
    ("notmuch/test/corpora/protected-headers/signed-protected-header.eml", &["valid"], None, ""),
    ("notmuch/test/corpora/protected-headers/simple-signed-mail.eml", &["valid"], None, ""),
    ("notmuch/test/corpora/protected-headers/protected-header.eml", &[], Some("decrypted"), ""),
    ("notmuch/test/corpora/protected-headers/phony-protected-header-bad-encryption.eml", &[], Some("failed"), ""),
    ("mu/testdata/testdir4/signed!2,S", &["unknown-key"], None, ""),
    ("mu/testdata/testdir4/signed-bad!2,S", &["unknown-key"], None, ""),
    ("mu/testdata/testdir4/encrypted!2,S", &[], Some("no-key"), ""),
    ("mu/testdata/testdir4/signed-encrypted!2,S", &[], Some("no-key"), ""),
    ("email-outlook-message-perl/t/files/gpg_signed.msg", &["unknown-key"], None, ""),
];

#[test]
fn corpus_signed_and_encrypted_mail_reads_as_its_makers_meant() {
    if !crate::common::needs::corpus("corpus_signed_and_encrypted_mail_reads_as_its_makers_meant") {
        return;
    }
    let keys = notmuch_keys();
    let mut failures = Vec::new();
    for (file, sigs, enc, words) in CASES {
        let path = corpus_dir().join(file);
        assert!(path.is_file(), "{} is in the corpus", path.display());
        let (msg, s) = open_file(&path, &keys);
        let got: Vec<&str> = s.signatures.iter().map(|r| r.status.name()).collect();
        let got_enc = s.encryption.as_ref().map(|e| e.status.name());
        let text = shown_text(&msg);
        if got != *sigs || got_enc != *enc || !text.contains(words) {
            failures.push(format!("{file}: {got:?} {got_enc:?} {:?} showing {text:?}", s.signatures));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn protected_headers_replace_the_masked_ones() {
    if !crate::common::needs::corpus("protected_headers_replace_the_masked_ones") {
        return;
    }
    let keys = notmuch_keys();
    let dir = corpus_dir().join("notmuch/test/corpora/protected-headers");
    let (msg, _) = open(&dir.join("protected-header.eml"), &keys);
    let subject = msg.summary.subject.as_deref().unwrap_or("");
    assert!(!subject.is_empty() && subject != "Subject Unavailable", "{subject:?}");
    // A protected-headers parameter anywhere but on the protected entity's root counts for nothing.
    let (msg, _) = open(&dir.join("misplaced-protected-header.eml"), &keys);
    assert_eq!(msg.summary.subject.as_deref(), Some("Subject Unavailable"));
}

/// [`open`] for any file the corpus holds (an Outlook file too).
fn open_file(path: &Path, keys: &Keyring) -> (mailshelf::model::Message, mailshelf::view::security::Security) {
    if path.extension().is_some_and(|e| e == "msg") {
        let raw = std::fs::read(path).expect("read");
        let msg = mailshelf::parse::parse_file(std::sync::Arc::from(raw), Some(path)).expect("parses");
        let msg = mailshelf::parse::secure::decrypt(&msg, keys).unwrap_or(msg);
        let s = mailshelf::view::security::check(&msg, keys, mailshelf::view::now());
        return (msg, s);
    }
    open(path, keys)
}

#[test]
fn openssl_agrees_with_every_valid_corpus_signature() {
    if !(crate::common::needs::corpus("openssl_agrees_with_every_valid_corpus_signature")
        && crate::common::needs::program(
            "openssl_agrees_with_every_valid_corpus_signature",
            "openssl",
            "apt-get install openssl",
        ))
    {
        return;
    }
    let keys = notmuch_keys();
    let scratch = tempfile::tempdir().expect("dir");
    let mut checked = 0;
    for (file, sigs, enc, _) in CASES.iter().filter(|c| c.0.contains("/smime-") || c.0.contains("pkcs7")) {
        if !sigs.contains(&"valid") {
            continue;
        }
        let path = corpus_dir().join(file);
        // A signature inside encryption is checked on what openssl decrypts with Bob's key.
        let input = if enc.is_some() {
            let key = scratch.path().join("bob.pem");
            let pem = Command::new("openssl")
                .args(["pkcs12", "-legacy", "-nodes", "-passin", "pass:", "-in"])
                .arg(unarmored_p12(scratch.path()))
                .output()
                .expect("openssl runs");
            std::fs::write(&key, pem.stdout).expect("write");
            let out = Command::new("openssl")
                .args(["cms", "-decrypt", "-inkey"])
                .arg(&key)
                .arg("-in")
                .arg(&path)
                .output()
                .expect("openssl runs");
            assert!(out.status.success(), "{file}: openssl decrypts it: {}", String::from_utf8_lossy(&out.stderr));
            let inner = scratch.path().join("decrypted.eml");
            std::fs::write(&inner, out.stdout).expect("write");
            inner
        } else {
            path.clone()
        };
        let (_, s) = open(&path, &keys);
        assert_eq!(s.signatures[0].status.name(), "valid");
        let ok = Command::new("openssl")
            .args(["cms", "-verify", "-purpose", "smimesign", "-out", "/dev/null", "-CAfile"])
            .arg(notmuch().join("smime/ca.crt"))
            .arg("-in")
            .arg(&input)
            .output()
            .expect("openssl runs")
            .status
            .success();
        assert!(ok, "{file}: openssl verifies what mailshelf calls valid");
        checked += 1;
    }
    assert_eq!(checked, 5);
}

/// Bob's PKCS #12 file without `gpgsm`'s PEM armor, as openssl reads it, written in `dir`.
fn unarmored_p12(dir: &Path) -> PathBuf {
    use base64::Engine as _;
    let text = std::fs::read_to_string(notmuch().join("smime/bob.p12")).expect("read");
    let b64: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64");
    let path = dir.join("bob.p12");
    std::fs::write(&path, der).expect("write");
    path
}

/// RFC 9580's v6 keys and messages (`tests/fixtures/crypto/rfc9580/`, see its README): with the
/// key given, each encrypted message (SEIPD v1 and v2, AEAD) is decrypted and each cleartext
/// signature holds (the keys have no user ID, so no address can match the sender's: `untrusted`,
/// not `valid`); without it, each says for whom.
#[test]
fn rfc9580_v6_keys_and_messages_read() {
    let dir = crate::common::repo_path("tests/fixtures/crypto/rfc9580");
    let mut seen = 0;
    for kind in ["v6-25519-annex-a-4", "v6-nistp", "v6-rsa"] {
        let keys = Keyring::load(&[dir.join(kind).join("tsk.asc")], &[], None, None).expect("the v6 key loads");
        let scratch = tempfile::tempdir().expect("dir");
        for (file, sigs, enc) in [
            ("csf.msg", &["untrusted"][..], None),
            ("enc-seipdv1.msg", &[][..], Some("decrypted")),
            ("enc-seipdv2.msg", &[][..], Some("decrypted")),
        ] {
            let body = std::fs::read_to_string(dir.join(kind).join(file)).expect("read");
            let raw = format!(
                "From: someone@example.org\r\nSubject: {kind} {file}\r\nContent-Type: text/plain\r\n\r\n{}",
                body.replace("\r\n", "\n").replace('\n', "\r\n")
            );
            let path = scratch.path().join(file);
            std::fs::write(&path, raw).expect("write");
            let (msg, s) = open(&path, &keys);
            let got: Vec<&str> = s.signatures.iter().map(|r| r.status.name()).collect();
            let got_enc = s.encryption.as_ref().map(|e| e.status.name());
            assert_eq!((got.as_slice(), got_enc), (sigs, enc), "{kind}/{file}: {:?} {:?}", s.signatures, s.encryption);
            assert!(shown_text(&msg).contains("hello world"), "{kind}/{file}: {:?}", shown_text(&msg));
            if enc.is_some() {
                let (msg, s) = open(&path, &Keyring::default());
                assert_eq!(s.encryption.map(|e| e.status.name()), Some("no-key"), "{kind}/{file}");
                assert!(!shown_text(&msg).contains("hello world"), "{kind}/{file}");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 9);
}

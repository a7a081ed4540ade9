//! Signed and encrypted mail made by Debian's `openssl` and `gpg` (`tests/fixtures/crypto/`,
//! written by its `generate.sh`): each message is parsed, opened with the test keys and checked
//! against the test trust anchors, and what mailshelf concludes is compared with what the message
//! is; then `openssl cms -verify` and `gpg --verify`, the independent verifiers, must agree with
//! every `valid` and every `invalid`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use mailshelf::crypto::{EncryptionStatus, Keyring, Protocol, SignatureReport, SignatureStatus};
use mailshelf::model::{Body, Message};
use mailshelf::view::security::{check, Security};

use crate::common::repo_path;

pub fn fixtures() -> PathBuf {
    repo_path("tests/fixtures/crypto")
}

pub fn key(name: &str) -> PathBuf {
    fixtures().join("keys").join(name)
}

/// The test keys (Alice's S/MIME key as a PKCS #12 file, Bob's as PEM, Carol's as encrypted
/// PKCS #8; Alice's and Bob's OpenPGP keys, and Carol's locked one) and the test trust (the test
/// CA, Alice's and Bob's OpenPGP public keys); every passphrase is "secret".
pub fn keyring() -> Keyring {
    let keys = [
        "alice.p12",
        "bob.key-and-cert.pem",
        "carol-encrypted.pem",
        "alice-openpgp.sec.asc",
        "bob-openpgp.sec.asc",
        "carol-openpgp-locked.sec.asc",
    ]
    .map(key);
    let trust = ["ca.pem", "openpgp-trusted.asc"].map(key);
    Keyring::load(&keys, &trust, Some("secret"), None).expect("the test keys load")
}

/// Only trust, no key: signatures can be checked, nothing can be decrypted.
pub fn trust_only() -> Keyring {
    Keyring::load(&[], &["ca.pem", "openpgp-trusted.asc"].map(key), None, None).expect("the test trust loads")
}

pub fn parse(path: &Path) -> Message {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    mailshelf::parse::parse_message(Arc::from(raw)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The message as a reader with `keys` sees it, and what its layers come to.
pub fn open(path: &Path, keys: &Keyring) -> (Message, Security) {
    let msg = parse(path);
    let msg = mailshelf::parse::secure::decrypt(&msg, keys).unwrap_or(msg);
    let security = check(&msg, keys, mailshelf::view::now());
    (msg, security)
}

/// The text a reader sees: the text body, else the HTML body.
pub fn shown_text(msg: &Message) -> String {
    [msg.text_body, msg.html_body]
        .into_iter()
        .flatten()
        .filter_map(|i| match &msg.parts[i].body {
            Body::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every text of every part (a test for what must not be seen anywhere).
pub fn all_text(msg: &Message) -> String {
    msg.parts
        .iter()
        .map(|p| match &p.body {
            Body::Text(t) => t.clone(),
            Body::Message(m) => all_text(m),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn statuses(s: &Security) -> Vec<&'static str> {
    s.signatures.iter().map(|r| r.status.name()).collect()
}

/// Each fixture: the signature statuses, the encryption status, and words the reader sees.
pub const CASES: &[(&str, &[&str], Option<&str>, &str)] = &[
    ("smime-opaque-signed.eml", &["valid"], None, "quokka sunrise"),
    ("smime-opaque-signed-ber.eml", &["valid"], None, "quokka sunrise"),
    ("smime-detached.eml", &["valid"], None, "quokka sunrise"),
    ("smime-detached-tampered.eml", &["invalid"], None, "quokka sunset"),
    ("smime-wrong-sender.eml", &["untrusted"], None, "quokka sunrise"),
    ("smime-ecdsa-p256.eml", &["valid"], None, "quokka sunrise"),
    ("smime-ecdsa-p384.eml", &["valid"], None, "quokka sunrise"),
    ("smime-ecdsa-p384-sha1.eml", &["valid"], None, "quokka sunrise"),
    ("smime-rsa-pss.eml", &["valid"], None, "quokka sunrise"),
    ("smime-expired.eml", &["expired"], None, "quokka sunrise"),
    ("smime-foreign.eml", &["untrusted"], None, "quokka sunrise"),
    ("smime-related-opaque.eml", &["valid"], None, "pangolin"),
    ("smime-related-detached.eml", &["valid"], None, "pangolin"),
    ("smime-encrypted-rsa.eml", &[], Some("decrypted"), "marmalade"),
    ("smime-encrypted-oaep.eml", &[], Some("decrypted"), "marmalade"),
    ("smime-encrypted-3des.eml", &[], Some("decrypted"), "marmalade"),
    ("smime-encrypted-ecdh-p256.eml", &[], Some("decrypted"), "marmalade"),
    ("smime-encrypted-gcm-p384.eml", &[], Some("decrypted"), "marmalade"),
    ("smime-encrypted-other.eml", &[], Some("no-key"), ""),
    ("smime-signed-then-encrypted.eml", &["valid"], Some("decrypted"), "marmalade"),
    ("smime-encrypted-then-signed.eml", &["valid"], Some("decrypted"), "marmalade"),
    ("pgp-mime-signed.eml", &["valid"], None, "quokka sunrise"),
    ("pgp-mime-signed-rsa.eml", &["valid"], None, "quokka sunrise"),
    ("pgp-mime-tampered.eml", &["invalid"], None, "quokka sunset"),
    ("pgp-mime-unknown-key.eml", &["unknown-key"], None, "quokka sunrise"),
    ("pgp-mime-related.eml", &["valid"], None, "pangolin"),
    ("pgp-mime-encrypted.eml", &[], Some("decrypted"), "marmalade"),
    ("pgp-mime-encrypted-signed.eml", &["valid"], Some("decrypted"), "marmalade"),
    ("pgp-mime-encrypted-rsa.eml", &[], Some("decrypted"), "marmalade"),
    ("pgp-mime-encrypted-locked.eml", &[], Some("decrypted"), "marmalade"),
    ("pgp-mime-encrypted-other.eml", &[], Some("no-key"), ""),
    ("pgp-inline-clearsigned.eml", &["valid"], None, "wombat"),
    ("pgp-inline-encrypted.eml", &[], Some("decrypted"), "kumquat"),
    ("pgp-inline-signed.eml", &["valid"], None, "kumquat"),
];

#[test]
fn signed_and_encrypted_messages_show_their_content_with_their_status() {
    let keys = keyring();
    let dir = fixtures().join("messages");
    let mut failures = Vec::new();
    for (file, sigs, enc, words) in CASES {
        let (msg, security) = open(&dir.join(file), &keys);
        let got = (statuses(&security), security.encryption.as_ref().map(|e| e.status.name()));
        let text = shown_text(&msg);
        if got != (sigs.to_vec(), *enc) || !text.contains(words) {
            failures.push(format!("{file}: got {got:?} showing {text:?}; details {:?}", security.signatures));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(std::fs::read_dir(&dir).expect("messages").count(), CASES.len(), "every fixture is in the table");
}

#[test]
fn without_keys_encrypted_messages_say_for_whom_and_show_nothing() {
    let keys = trust_only();
    let dir = fixtures().join("messages");
    for (file, _, _, words) in CASES.iter().filter(|c| c.2.is_some()) {
        let (msg, security) = open(&dir.join(file), &keys);
        let e = security.encryption.as_ref().unwrap_or_else(|| panic!("{file}: no encryption reported"));
        assert_eq!(e.status, EncryptionStatus::NoKey, "{file}");
        assert!(!e.recipients.is_empty(), "{file}: names its recipients");
        assert!(msg.html_body.is_none() && msg.text_body.is_none(), "{file}: no body is shown");
        assert!(words.is_empty() || !all_text(&msg).contains(words), "{file}: nothing of it is readable");
        assert!(msg.attachments().next().is_none(), "{file}: the encrypted blob is no attachment");
        // A signature inside the encryption cannot be seen; one around it can.
        assert_eq!(security.signatures.is_empty(), !file.contains("then-signed"), "{file}");
    }
    let (_, s) = open(&dir.join("smime-encrypted-rsa.eml"), &keys);
    let recipients = &s.encryption.expect("encrypted").recipients;
    assert!(recipients[0].starts_with("issuer CN=mailshelf Test CA, serial "), "{recipients:?}");
    let (_, s) = open(&dir.join("pgp-mime-encrypted.eml"), &keys);
    assert!(s.encryption.expect("encrypted").recipients[0].starts_with("key "));
}

#[test]
fn signature_reports_name_the_signer_and_the_certificate() {
    let keys = keyring();
    let dir = fixtures().join("messages");
    let (_, s) = open(&dir.join("smime-detached.eml"), &keys);
    let r: &SignatureReport = &s.signatures[0];
    assert_eq!(
        (r.protocol, r.signer.as_deref(), r.name.as_deref()),
        (Protocol::Smime, Some("alice@example.org"), Some("Alice Signer"))
    );
    let cert = r.certificate.as_ref().expect("a certificate");
    assert_eq!((cert.subject.as_str(), cert.issuer.as_str()), ("CN=Alice Signer", "CN=mailshelf Test CA"));
    assert!(r.signed_at.is_some() && cert.not_before < cert.not_after);
    let (_, s) = open(&dir.join("pgp-mime-signed.eml"), &keys);
    let r = &s.signatures[0];
    assert_eq!(
        (r.protocol, r.signer.as_deref(), r.name.as_deref()),
        (Protocol::OpenPgp, Some("alice@example.org"), Some("Alice OpenPGP"))
    );
    assert_eq!(r.key_id.as_deref().map(str::len), Some(40), "a v4 fingerprint");
    let (_, s) = open(&dir.join("pgp-mime-unknown-key.eml"), &keys);
    assert_eq!(s.signatures[0].status, SignatureStatus::UnknownKey);
    assert!(s.signatures[0].key_id.is_some(), "the unknown key is named");
}

#[test]
fn signature_and_encrypted_parts_are_not_attachments() {
    let keys = keyring();
    let dir = fixtures().join("messages");
    for (file, ..) in CASES {
        let (msg, _) = open(&dir.join(file), &keys);
        let names: Vec<_> = msg.attachments().filter_map(|p| p.filename.clone()).collect();
        assert!(names.iter().all(|n| !n.contains("smime.p7") && !n.ends_with(".asc")), "{file}: {names:?}");
    }
    // A signed multipart/related: its picture is the page's, reached by its Content-ID.
    let (msg, _) = open(&dir.join("smime-related-opaque.eml"), &keys);
    let img = msg.part_by_content_id("dot@example.org").expect("the picture is a part");
    assert!(msg.parts[img].related_scope.is_some() && matches!(msg.parts[img].body, Body::Binary(_)));
}

/// Seconds since the epoch of an RFC 3339 time in UTC (as reports give them).
fn epoch(t: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().expect("a number");
    mailshelf::dates::days_from_civil(n(0..4), n(5..7), n(8..10)) * 86_400
        + n(11..13) * 3600
        + n(14..16) * 60
        + n(17..19)
}

/// `openssl cms -verify` over a file (S/MIME as written), with the test CA, at time `at`.
fn openssl_verifies(file: &Path, at: Option<i64>) -> bool {
    let mut cmd = Command::new("openssl");
    cmd.args(["cms", "-verify", "-purpose", "smimesign", "-out", "/dev/null", "-CAfile"])
        .arg(key("ca.pem"))
        .arg("-in")
        .arg(file);
    if let Some(t) = at {
        cmd.args(["-attime", &t.to_string()]);
    }
    cmd.output().expect("openssl runs (apt-get install openssl)").status.success()
}

/// The first body part of a multipart body and its second part's body, cut by the test itself.
fn split_signed(raw: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let text = String::from_utf8_lossy(raw).into_owned();
    let boundary = text.split("boundary=\"").nth(1).and_then(|s| s.split('"').next()).expect("a boundary");
    let delimiter = format!("\r\n--{boundary}");
    let start = text.find(&format!("--{boundary}\r\n")).expect("first delimiter") + boundary.len() + 4;
    let end = start + text[start..].find(&delimiter).expect("second delimiter");
    let sig_start = text[end..].find("-----BEGIN PGP SIGNATURE-----").expect("signature") + end;
    let sig_end = text[sig_start..].find("-----END PGP SIGNATURE-----").expect("signature end") + sig_start + 27;
    (text.as_bytes()[start..end].to_vec(), text.as_bytes()[sig_start..sig_end].to_vec())
}

/// `gpg --verify` of a detached signature over `data`, or of a clear-signed or signed message
/// (`data` empty), with the test's trusted keys imported into a throw-away home.
fn gpg_verifies(home: &Path, signature: &[u8], data: &[u8]) -> bool {
    let dir = tempfile::tempdir().expect("dir");
    let (sig, content) = (dir.path().join("sig.asc"), dir.path().join("data"));
    std::fs::write(&sig, signature).expect("write");
    std::fs::write(&content, data).expect("write");
    let mut cmd = Command::new("gpg");
    cmd.arg("--homedir").arg(home).args(["--batch", "--quiet", "--verify"]).arg(&sig);
    if !data.is_empty() {
        cmd.arg(&content);
    }
    cmd.output().expect("gpg runs (apt-get install gpg)").status.success()
}

#[test]
fn openssl_and_gpg_agree_with_every_valid_and_invalid() {
    if !(crate::common::needs::program(
        "openssl_and_gpg_agree_with_every_valid_and_invalid",
        "openssl",
        "apt-get install openssl",
    ) && crate::common::needs::program(
        "openssl_and_gpg_agree_with_every_valid_and_invalid",
        "gpg",
        "apt-get install gnupg",
    )) {
        return;
    }
    let keys = keyring();
    let dir = fixtures().join("messages");
    let home = tempfile::tempdir().expect("gpg home");
    let import = Command::new("gpg")
        .arg("--homedir")
        .arg(home.path())
        .args(["--batch", "--quiet", "--import"])
        .arg(key("openpgp-trusted.asc"))
        .output()
        .expect("gpg runs (apt-get install gpg)");
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let mut checked = 0;
    for (file, ..) in CASES {
        let path = dir.join(file);
        let (_, security) = open(&path, &keys);
        for r in &security.signatures {
            let verdict = match r.status {
                SignatureStatus::Valid => true,
                SignatureStatus::Invalid => false,
                _ => continue,
            };
            let at = r.signed_at.as_deref().map(epoch);
            let agrees = match (r.protocol, file.split('-').nth(1)) {
                (Protocol::Smime, _) if file.contains("signed-then-encrypted") => {
                    let inner = Command::new("openssl")
                        .args(["cms", "-decrypt", "-recip"])
                        .arg(key("alice.pem"))
                        .arg("-inkey")
                        .arg(key("alice.key"))
                        .arg("-in")
                        .arg(&path)
                        .output()
                        .expect("openssl runs");
                    let tmp = tempfile::NamedTempFile::new().expect("tmp");
                    std::fs::write(tmp.path(), inner.stdout).expect("write");
                    openssl_verifies(tmp.path(), at) == verdict
                }
                (Protocol::Smime, _) => openssl_verifies(&path, at) == verdict,
                (Protocol::OpenPgp, Some("mime")) if file.contains("encrypted") => continue,
                (Protocol::OpenPgp, Some("mime")) => {
                    let (data, sig) = split_signed(&std::fs::read(&path).expect("read"));
                    gpg_verifies(home.path(), &sig, &data) == verdict
                }
                (Protocol::OpenPgp, _) => {
                    let raw = String::from_utf8(std::fs::read(&path).expect("read")).expect("utf-8");
                    let from = raw.find("-----BEGIN PGP").expect("armor");
                    gpg_verifies(home.path(), &raw.as_bytes()[from..], &[]) == verdict
                }
            };
            assert!(agrees, "{file}: mailshelf says {:?}, the independent tool does not agree", r.status);
            checked += 1;
        }
    }
    assert!(checked >= 17, "checked {checked} signatures");
}

#[test]
fn key_files_of_every_kind_load() {
    if !crate::common::needs::corpus("key_files_of_every_kind_load") {
        return;
    }
    let nm = crate::common::corpus_dir().join("notmuch/test");
    let cases: &[(&[PathBuf], Option<&str>, bool)] = &[
        (&[key("alice.p12")], Some("secret"), true),
        (&[key("alice-legacy.p12")], Some("secret"), true),
        (&[key("alice.key-and-cert.pem")], None, true),
        (&[key("carol-encrypted.pem")], Some("secret"), true),
        (&[key("alice-openpgp.sec.asc")], None, true),
        (&[key("carol-openpgp-locked.sec.asc")], Some("secret"), true),
        (&[nm.join("smime/bob.p12")], Some(""), true),
        (&[nm.join("smime/0xE0972A47.p12")], Some(""), true),
        (&[nm.join("smime/key+cert.pem")], None, true),
        (&[nm.join("openpgp4-secret-key.asc")], None, true),
    ];
    for (files, pass, decrypts) in cases {
        let ring = Keyring::load(files, &[], *pass, None).unwrap_or_else(|e| panic!("{files:?}: {e}"));
        assert_eq!(ring.can_decrypt(), *decrypts, "{files:?}");
    }
    // A PKCS #12 file opens Alice's mail as well as her PEM file does.
    let ring = Keyring::load(&[key("alice-legacy.p12")], &[], Some("secret"), None).expect("loads");
    let (msg, s) = open(&fixtures().join("messages/smime-encrypted-rsa.eml"), &ring);
    assert_eq!(s.encryption.map(|e| e.status), Some(EncryptionStatus::Decrypted));
    assert!(shown_text(&msg).contains("marmalade"));
}

#[test]
fn unusable_key_files_stop_start_up_naming_the_file() {
    let junk = tempfile::NamedTempFile::new().expect("tmp");
    std::fs::write(junk.path(), b"not a key at all").expect("write");
    let cases: &[(PathBuf, Option<&str>, &str)] = &[
        (key("alice.p12"), Some("wrong"), "passphrase is wrong"),
        (key("alice-legacy.p12"), None, "passphrase is wrong"),
        (key("carol-encrypted.pem"), None, "give the passphrase"),
        (key("carol-encrypted.pem"), Some("wrong"), "does not open"),
        (key("carol-openpgp-locked.sec.asc"), None, "does not open it"),
        (key("openpgp-trusted.asc"), None, "give it with --trust"),
        (key("alice.key"), None, "no certificate for its private key"),
        (key("alice.pem"), None, "no private key"),
        (junk.path().to_path_buf(), None, "neither a PEM key"),
        (PathBuf::from("/no/such/key.pem"), None, "no such file"),
    ];
    for (file, pass, want) in cases {
        let err = Keyring::load(std::slice::from_ref(file), &[], *pass, None).expect_err("refused");
        assert_eq!(&err.path, file);
        assert!(err.reason.contains(want), "{}: {err}", file.display());
    }
    let err = Keyring::load(&[], &[key("alice-openpgp.sec.asc")], None, None).expect_err("a secret key is no trust");
    assert!(err.reason.contains("--key"), "{err}");
}

#[test]
fn a_keyring_shows_no_key_material() {
    let shown = format!("{:?}", keyring());
    assert!(shown.contains("smime_keys: 3") && shown.contains("openpgp_secret_keys: 3"), "{shown}");
    assert!(!shown.contains("PRIVATE") && !shown.contains("secret\""), "{shown}");
    assert!(shown.len() < 300, "{shown}");
}

/// A signed-data object carrying `content` (no signer: enough to be unwrapped).
fn signed_data(content: &[u8]) -> Vec<u8> {
    fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let n = body.len();
        if n < 0x80 {
            out.push(n as u8);
        } else {
            out.extend_from_slice(&[0x84, (n >> 24) as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8]);
        }
        out.extend_from_slice(body);
        out
    }
    let oid = |s: &[u8]| tlv(0x06, s);
    let id_data = oid(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x01]);
    let id_signed = oid(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02]);
    let encap = tlv(0x30, &[id_data, tlv(0xa0, &tlv(0x04, content))].concat());
    let sd = tlv(0x30, &[tlv(0x02, &[1]), tlv(0x31, &[]), encap, tlv(0x31, &[])].concat());
    tlv(0x30, &[id_signed, tlv(0xa0, &sd)].concat())
}

#[test]
fn signed_layers_beyond_the_limit_are_not_opened() {
    use base64::Engine as _;
    let mut entity = b"Content-Type: text/plain\r\n\r\nThe innermost word is ocelot.\r\n".to_vec();
    for _ in 0..12 {
        let b64 = base64::engine::general_purpose::STANDARD.encode(signed_data(&entity));
        entity = format!(
            "Content-Type: application/pkcs7-mime; smime-type=signed-data\r\nContent-Transfer-Encoding: base64\r\n\r\n{b64}\r\n"
        )
        .into_bytes();
    }
    let mut raw = b"From: a@example.org\r\nSubject: deep\r\n".to_vec();
    raw.extend_from_slice(&entity);
    let msg = mailshelf::parse::parse_message(Arc::from(raw)).expect("parses");
    assert!(!all_text(&msg).contains("ocelot"), "the innermost layer is not opened");
    let s = check(&msg, &trust_only(), 0);
    let deep = s.signatures.iter().find(|r| r.detail.contains("more than 8")).expect("the limit is reported");
    assert_eq!(deep.status, SignatureStatus::Error);
    // Eight layers are opened (each an `error`: none has a signer).
    assert_eq!(s.signatures.iter().filter(|r| r.status == SignatureStatus::Error).count(), 9);
}

/// `raw` with `lines` put into the first part of its `multipart/signed`, right before the
/// delimiter that ends it.
fn inject_before_second_delimiter(raw: &[u8], lines: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw).into_owned();
    let boundary = text.split("boundary=\"").nth(1).and_then(|s| s.split('"').next()).expect("a boundary");
    let delimiter = format!("\n--{boundary}");
    let first = text.find(&delimiter).expect("first delimiter") + 1;
    let second = first + text[first..].find(&delimiter).expect("second delimiter");
    let eol = if text[..second].ends_with('\r') { "\r\n" } else { "\n" };
    let at = second - (eol.len() - 1);
    let injected = lines.replace("{b}", boundary).replace('\n', eol);
    [&text[..at], eol, injected.trim_end_matches(eol), &text[at..]].concat().into_bytes()
}

#[test]
fn a_line_that_only_begins_with_the_boundary_is_signed_content() {
    let keys = keyring();
    let dir = fixtures().join("messages");
    // A line that begins with the delimiter but goes on is no delimiter (RFC 2046 §5.1.1): the
    // reader is shown it as the signed part's text, so the signature must cover it.
    let injected = "--{b}X\nContent-Type: text/plain\n\nPay the new account instead: okapi ledger.\n";
    let cases = [("smime-detached.eml", "quokka sunrise"), ("pgp-mime-signed.eml", "quokka sunrise")];
    for (file, words) in cases {
        let raw = inject_before_second_delimiter(&std::fs::read(dir.join(file)).expect("read"), injected);
        let tmp = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(tmp.path(), &raw).expect("write");
        let (msg, security) = open(tmp.path(), &keys);
        let text = all_text(&msg);
        assert!(text.contains(words) && text.contains("okapi ledger"), "{file}: the reader sees {text:?}");
        assert_eq!(statuses(&security), ["invalid"], "{file}: {:?}", security.signatures);
    }
}

/// The packets of a binary OpenPGP key as `gpg --export` writes them (old-format headers, or
/// new-format ones without partial lengths): each packet's tag and its bytes, header included.
fn packets(mut bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while let [ctb, ..] = *bytes {
        let be = |b: &[u8]| b.iter().fold(0usize, |n, &x| (n << 8) | usize::from(x));
        let (tag, header, len) = if ctb & 0x40 == 0 {
            let size = [1, 2, 4][usize::from(ctb & 3)];
            ((ctb >> 2) & 0xf, 1 + size, be(&bytes[1..1 + size]))
        } else {
            match bytes[1] {
                n @ 0..=191 => (ctb & 0x3f, 2, usize::from(n)),
                n @ 192..=223 => (ctb & 0x3f, 3, ((usize::from(n) - 192) << 8) + usize::from(bytes[2]) + 192),
                _ => (ctb & 0x3f, 6, be(&bytes[2..6])),
            }
        };
        out.push((tag, bytes[..header + len].to_vec()));
        bytes = &bytes[header + len..];
    }
    out
}

#[test]
fn only_what_a_key_signed_itself_speaks_for_it() {
    let name = "only_what_a_key_signed_itself_speaks_for_it";
    if !crate::common::needs::program(name, "gpg", "apt-get install gnupg") {
        return;
    }
    let home = tempfile::tempdir().expect("gpg home");
    let gpg = |args: &[&str]| {
        let out = Command::new("gpg")
            .arg("--homedir")
            .arg(home.path())
            .args(["--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .output()
            .expect("gpg runs (apt-get install gnupg)");
        assert!(out.status.success(), "gpg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let fingerprints = |who: &str| -> Vec<String> {
        String::from_utf8(gpg(&["--with-colons", "--list-keys", who]))
            .expect("utf-8")
            .lines()
            .filter_map(|l| l.strip_prefix("fpr:::::::::"))
            .map(|l| l.trim_end_matches(':').to_string())
            .collect()
    };
    gpg(&["--quick-gen-key", "Alice <alice@example.org>", "ed25519", "sign", "0"]);
    gpg(&["--quick-gen-key", "Zed <zed@example.org>", "ed25519", "cert", "0"]);
    let zed = fingerprints("zed@example.org").remove(0);
    gpg(&["--quick-add-key", &zed, "ed25519", "sign", "0"]);
    let zed_signing = fingerprints("zed@example.org").remove(1);
    // Alice's key as a keyserver may hand it out after others added to it: a user ID carrying a
    // copy of her own user ID's self-signature (which binds that one, not this), and Zed's signing
    // subkey with Zed's binding.
    let alice_packets = packets(&gpg(&["--export", "alice@example.org"]));
    let mut poisoned: Vec<u8> = alice_packets.iter().flat_map(|(_, p)| p.clone()).collect();
    let self_signature = alice_packets.iter().find(|(tag, _)| *tag == 2).expect("her self-signature");
    let uid = b"CEO <ceo@example.org>";
    poisoned.extend_from_slice(&[0xc0 | 13, uid.len() as u8]);
    poisoned.extend_from_slice(uid);
    poisoned.extend_from_slice(&self_signature.1);
    let zed_packets = packets(&gpg(&["--export", &zed]));
    let subkey = zed_packets.iter().position(|(tag, _)| *tag == 14).expect("Zed's subkey");
    for (_, p) in &zed_packets[subkey..] {
        poisoned.extend_from_slice(p);
    }
    let file = home.path().join("poisoned.gpg");
    std::fs::write(&file, &poisoned).expect("write");
    let armored = String::from_utf8(gpg(&["--enarmor", "-o", "-", file.to_str().expect("path")]))
        .expect("armor")
        .replace("ARMORED FILE", "PUBLIC KEY BLOCK");
    let keys = Keyring::from_material(&[], &[armored.as_bytes()], None).expect("the key loads");
    let data = b"Pay invoice 4711.\r\n";
    std::fs::write(home.path().join("data"), data).expect("write");
    let data_path = home.path().join("data");
    let sign = |key: &str| gpg(&["--detach-sign", "-u", key, "-o", "-", data_path.to_str().expect("path")]);
    let alice = fingerprints("alice@example.org").remove(0);
    let cases = [
        ("Alice signs as herself", sign(&alice), "alice@example.org", SignatureStatus::Valid),
        ("Alice's key under a user ID she never bound", sign(&alice), "ceo@example.org", SignatureStatus::Untrusted),
        (
            "Zed's subkey grafted onto Alice's key",
            sign(&format!("{zed_signing}!")),
            "alice@example.org",
            SignatureStatus::UnknownKey,
        ),
    ];
    for (what, signature, sender, want) in cases {
        let ctx =
            mailshelf::crypto::Context { keys: &keys, sender: Some(sender), date: None, now: mailshelf::view::now() };
        let got = mailshelf::crypto::openpgp::verify_detached(&signature, data, &ctx);
        assert_eq!(got.iter().map(|r| r.status).collect::<Vec<_>>(), [want], "{what}: {got:?}");
    }
}

/// An ASN.1 item of `tag` holding `body` (definite length).
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut out = vec![tag];
    match n {
        0..=0x7f => out.push(n as u8),
        0x80..=0xff => out.extend_from_slice(&[0x81, n as u8]),
        0x100..=0xffff => out.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]),
        _ => out.extend_from_slice(&[0x83, (n >> 16) as u8, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(body);
    out
}

#[test]
fn a_message_to_thousands_of_recipients_opens_at_once() {
    use base64::Engine as _;
    use mailshelf::crypto::asn1::Tlv;
    // openssl's envelope for Alice, its one recipient joined by 2,000 others (her issuer, other
    // serial numbers), in the order that costs a sorting reader the most.
    let text = std::fs::read_to_string(fixtures().join("messages/smime-encrypted-rsa.eml")).expect("read");
    let body = text.split("Content-Transfer-Encoding: base64").nth(1).expect("a base64 body");
    let b64: String = body.lines().map(str::trim).skip_while(|l| !l.is_empty()).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64");
    let info = Tlv::single(&der).expect("ContentInfo");
    let [oid, explicit] = info.children().expect("fields")[..] else { panic!("a ContentInfo") };
    let enveloped = Tlv::single(explicit.value).expect("EnvelopedData");
    let fields = enveloped.children().expect("fields");
    let (version, set, content) = (fields[0], fields[1], fields[2]);
    let alice = set.children().expect("recipients")[0];
    let at = |inner: &[u8]| inner.as_ptr() as usize - alice.whole.as_ptr() as usize;
    let ktri = alice.children().expect("ktri");
    let serial_end = {
        let serial = ktri[1].children().expect("issuer and serial")[1];
        at(serial.whole) + serial.whole.len() - 1
    };
    let key_start = at(ktri[3].value);
    let mut recipients = Vec::new();
    let others = 2000;
    for i in 0..others {
        let mut other = alice.whole.to_vec();
        other[serial_end] ^= 0xff;
        other[key_start] = 0xff - (i / 256) as u8;
        other[key_start + 1] = 0xff - (i % 256) as u8;
        recipients.extend(other);
    }
    recipients.extend_from_slice(alice.whole);
    let body = [version.whole, &tlv(0x31, &recipients), content.whole].concat();
    let ber = tlv(0x30, &[oid.whole, &tlv(0xa0, &tlv(0x30, &body))].concat());
    let started = std::time::Instant::now();
    let opened = mailshelf::crypto::smime::decrypt(&ber, &keyring());
    assert_eq!(opened.status, EncryptionStatus::Decrypted, "{:?}", opened.detail);
    assert_eq!(opened.recipients.len(), others + 1);
    assert!(String::from_utf8_lossy(&opened.content.expect("content")).contains("marmalade"));
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "took {:?}", started.elapsed());
}

/// `raw`'s body (with its content headers) as the second part of a `multipart/mixed`, after an
/// unsigned `text` (or before it, `after`), as an attacker who wraps a genuine signed message, or
/// a mailing list adding its footer, makes it.
fn wrapped_beside(raw: &[u8], text: &str, after: bool) -> Vec<u8> {
    let raw = String::from_utf8_lossy(raw).replace("\r\n", "\n");
    let (head, body) = raw.split_once("\n\n").expect("a header");
    let (mut top, mut content) = (Vec::new(), Vec::new());
    let mut into_content = false;
    for line in head.lines() {
        if !line.starts_with([' ', '\t']) {
            into_content = line.to_ascii_lowercase().starts_with("content-");
        }
        if into_content { &mut content } else { &mut top }.push(line);
    }
    let unsigned = format!("Content-Type: text/plain; charset=utf-8\n\n{text}\n");
    let signed = format!("{}\n\n{body}", content.join("\n"));
    let (first, second) = if after { (signed, unsigned) } else { (unsigned, signed) };
    format!(
        "{}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"outer-wrap\"\n\n--outer-wrap\n{first}\n--outer-wrap\n{second}\n--outer-wrap--\n",
        top.join("\n")
    )
    .replace('\n', "\r\n")
    .into_bytes()
}

/// A signature over one part of what a message shows says so: an unsigned text beside a signed
/// part (or around a clear-signed block) must not be shown under "Signed by … — valid".
#[test]
fn a_signature_over_part_of_a_message_says_which_part() {
    let keys = keyring();
    let dir = fixtures().join("messages");
    let clear = std::fs::read_to_string(dir.join("pgp-inline-clearsigned.eml")).expect("read").replace("\r\n", "\n");
    let (head, body) = clear.split_once("\n\n").expect("a header");
    let around = format!("{head}\n\nPay the new account instead.\n\n{body}").into_bytes();
    let cases: [(&str, Vec<u8>, Option<&str>); 6] = [
        ("smime-detached.eml", std::fs::read(dir.join("smime-detached.eml")).expect("read"), None),
        (
            "smime-detached.eml beside",
            wrapped_beside(
                &std::fs::read(dir.join("smime-detached.eml")).expect("read"),
                "Pay the new account instead.",
                false,
            ),
            Some("2"),
        ),
        (
            "pgp-mime-signed.eml footer",
            wrapped_beside(&std::fs::read(dir.join("pgp-mime-signed.eml")).expect("read"), "-- \nlist footer", true),
            Some("1"),
        ),
        (
            "smime-opaque-signed.eml beside",
            wrapped_beside(
                &std::fs::read(dir.join("smime-opaque-signed.eml")).expect("read"),
                "Pay the new account instead.",
                false,
            ),
            Some("2"),
        ),
        (
            "pgp-mime-signed.eml beside an empty text",
            wrapped_beside(&std::fs::read(dir.join("pgp-mime-signed.eml")).expect("read"), " ", false),
            None,
        ),
        ("pgp-inline-clearsigned.eml with text around", around, Some("1")),
    ];
    for (name, raw, only) in cases {
        let tmp = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(tmp.path(), &raw).expect("write");
        let (_, security) = open(tmp.path(), &keys);
        assert_eq!(statuses(&security), ["valid"], "{name}: {:?}", security.signatures);
        let got: Vec<Option<&str>> = security.signatures.iter().map(|r| r.only_part.as_deref()).collect();
        assert_eq!(got, [only], "{name}");
        let line = &security.summary()[0];
        match only {
            None => assert!(line.text.starts_with("Signed by") && line.status == "valid", "{name}: {line:?}"),
            Some(section) => {
                assert_eq!(line.status, "partial", "{name}");
                assert!(line.text.starts_with(&format!("Only part {section} is signed")), "{name}: {}", line.text);
            }
        }
    }
}

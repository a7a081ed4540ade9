//! Signed and encrypted mail made while the test runs, by Debian's `openssl` and `gpg` with the
//! test keys, over content none of the fixtures has (8-bit text in quoted-printable, trailing
//! spaces, a line starting "From ", a signature separator): mailshelf has never seen these bytes.
//! Each must show its content with the status the independent tool gives it: every `valid` is
//! verified by `openssl cms -verify` or `gpg --verify`, and every `invalid` fails there.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::crypto::{key, keyring, open, shown_text};

/// The entity signed or encrypted: 8-bit text as quoted-printable, with what canonical forms
/// trip over.
const ENTITY: &str = "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
Gr=C3=BC=C3=9Fe aus Z=C3=BCrich, trailing spaces  =20\r\nFrom the start of a line\r\n\r\n-- \r\nThe word is capybara.\r\n";

/// Runs `cmd` with `input` on its standard input; its standard output, and whether it succeeded.
fn run(cmd: &mut Command, input: &[u8]) -> (Vec<u8>, bool) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} runs (apt-get install openssl gpg): {e}"));
    child.stdin.take().expect("stdin").write_all(input).expect("write");
    let out = child.wait_with_output().expect("wait");
    (out.stdout, out.status.success())
}

/// `openssl cms` with `args` (key files named by their fixture names), over `input`.
fn cms(args: &[&str], input: &[u8]) -> Vec<u8> {
    openssl("cms", args, input)
}

/// `openssl <command>` (`cms`, or `smime`, the older PKCS #7 one) with `args`, over `input`.
fn openssl(command: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new("openssl");
    cmd.arg(command);
    for a in args {
        cmd.arg(if a.ends_with(".pem") || a.ends_with(".key") { key(a).into_os_string() } else { a.into() });
    }
    let (out, ok) = run(&mut cmd, input);
    assert!(ok, "openssl {command} {args:?}");
    out
}

fn gpg(home: &Path, args: &[&str], input: &[u8]) -> (Vec<u8>, bool) {
    run(
        Command::new("gpg")
            .arg("--homedir")
            .arg(home)
            .args(["--batch", "--quiet", "--yes", "--trust-model", "always"])
            .args(args),
        input,
    )
}

/// A message from `from` around what a tool wrote (its own MIME headers and body).
fn message(from: &str, subject: &str, entity: &[u8]) -> Vec<u8> {
    let mut m = format!(
        "From: {from}\r\nTo: Bob Recipient <bob@example.org>\r\nSubject: {subject}\r\nDate: Thu, 26 Nov 2026 12:00:00 +0000\r\nMessage-ID: <live@example.org>\r\nMIME-Version: 1.0\r\n"
    )
    .into_bytes();
    m.extend_from_slice(entity);
    m
}

/// A PGP/MIME signed message (RFC 3156) of the entity, signed by `signer` with gpg.
fn pgp_mime_signed(home: &Path, signer: &str, from: &str, tamper: bool) -> (Vec<u8>, bool) {
    let signed = ENTITY.trim_end_matches("\r\n");
    let (sig, ok) =
        gpg(home, &["--armor", "--detach-sign", "--digest-algo", "SHA512", "-u", signer], signed.as_bytes());
    assert!(ok, "gpg signs");
    let sig = String::from_utf8(sig).expect("armor").replace('\n', "\r\n");
    let content = if tamper { signed.replace("capybara", "wallaby") } else { signed.to_string() };
    let entity = format!(
        "Content-Type: multipart/signed; micalg=pgp-sha512; protocol=\"application/pgp-signature\"; boundary=\"b\"\r\n\r\n\
         --b\r\n{content}\r\n--b\r\nContent-Type: application/pgp-signature; name=\"signature.asc\"\r\n\r\n{sig}--b--\r\n"
    );
    // The independent verdict, over the bytes the message carries.
    let dir = tempfile::tempdir().expect("dir");
    let (sig_file, data_file) = (dir.path().join("s.asc"), dir.path().join("d"));
    std::fs::write(&sig_file, sig).expect("write");
    std::fs::write(&data_file, content).expect("write");
    let args = ["--verify", sig_file.to_str().expect("path"), data_file.to_str().expect("path")];
    let (_, verified) = gpg(home, &args, b"");
    (message(from, "PGP/MIME made now", entity.as_bytes()), verified)
}

/// A message made now: its name, its bytes, the signature statuses and encryption status it must
/// answer with, and the independent tool's verdict when the tool was asked already (`None`: ask
/// `openssl cms -verify` here).
type Case = (&'static str, Vec<u8>, &'static [&'static str], Option<&'static str>, Option<bool>);

#[test]
fn mail_signed_and_encrypted_now_by_openssl_and_gpg_reads_as_they_verify() {
    if !(crate::common::needs::program(
        "mail_signed_and_encrypted_now_by_openssl_and_gpg_reads_as_they_verify",
        "openssl",
        "apt-get install openssl",
    ) && crate::common::needs::program(
        "mail_signed_and_encrypted_now_by_openssl_and_gpg_reads_as_they_verify",
        "gpg",
        "apt-get install gnupg",
    )) {
        return;
    }
    let home = tempfile::tempdir().expect("gpg home");
    for k in ["alice-openpgp.sec.asc", "bob-openpgp.sec.asc"] {
        let (_, ok) = gpg(home.path(), &["--import", key(k).to_str().expect("path")], b"");
        assert!(ok, "gpg imports {k}");
    }
    let alice = "Alice Signer <alice@example.org>";
    let text = ENTITY.as_bytes();
    let sign = |signer: &str, extra: &[&str], input: &[u8]| {
        let (cert, key) = (format!("{signer}.pem"), format!("{signer}.key"));
        let mut args = vec!["-sign", "-signer", &cert, "-inkey", &key, "-outform", "SMIME"];
        args.extend_from_slice(extra);
        cms(&args, input)
    };
    // `openssl smime`, the PKCS #7 command, writes the older types (application/x-pkcs7-mime,
    // x-pkcs7-signature).
    let pkcs7 = |extra: &[&str]| {
        let mut args = vec!["-sign", "-signer", "alice.pem", "-inkey", "alice.key"];
        args.extend_from_slice(extra);
        message(alice, "made now", &openssl("smime", &args, text))
    };
    let signed_then_encrypted = cms(
        &["-encrypt", "-aes-256-gcm", "-outform", "SMIME", "-recip", "carol.pem"],
        &sign("alice", &["-nodetach"], text),
    );
    let tampered = String::from_utf8(sign("alice", &[], text)).expect("text").replace("capybara", "wallaby");
    let tampered_pgp = pgp_mime_signed(home.path(), "alice@example.org", "Alice OpenPGP <alice@example.org>", true);
    let mut cases: Vec<Case> = vec![
        (
            "smime detached",
            message(alice, "made now", &sign("alice", &["-md", "sha256"], text)),
            &["valid"],
            None,
            None,
        ),
        (
            "smime opaque sha512",
            message(alice, "made now", &sign("alice", &["-nodetach", "-md", "sha512"], text)),
            &["valid"],
            None,
            None,
        ),
        (
            "smime opaque, no attributes",
            message(alice, "made now", &sign("alice", &["-nodetach", "-noattr"], text)),
            &["valid"],
            None,
            None,
        ),
        (
            "smime ECDSA P-256 sha384",
            message("Bob Recipient <bob@example.org>", "made now", &sign("bob", &["-md", "sha384"], text)),
            &["valid"],
            None,
            None,
        ),
        ("smime x-pkcs7-mime opaque", pkcs7(&["-nodetach"]), &["valid"], None, None),
        ("smime x-pkcs7-signature detached", pkcs7(&[]), &["valid"], None, None),
        ("smime tampered", message(alice, "made now", tampered.as_bytes()), &["invalid"], None, Some(false)),
        (
            "smime AES-192-CBC to RSA",
            message(
                alice,
                "made now",
                &cms(&["-encrypt", "-aes-192-cbc", "-outform", "SMIME", "-recip", "alice.pem"], text),
            ),
            &[],
            Some("decrypted"),
            None,
        ),
        (
            "smime AES-128-GCM to P-256",
            message(
                alice,
                "made now",
                &cms(&["-encrypt", "-aes-128-gcm", "-outform", "SMIME", "-recip", "bob.pem"], text),
            ),
            &[],
            Some("decrypted"),
            None,
        ),
        (
            "smime signed, then encrypted to P-384",
            message(alice, "made now", &signed_then_encrypted),
            &["valid"],
            Some("decrypted"),
            None,
        ),
    ];
    let (pgp, verified) = pgp_mime_signed(home.path(), "alice@example.org", "Alice OpenPGP <alice@example.org>", false);
    cases.push(("pgp/mime Ed25519 sha512", pgp, &["valid"], None, Some(verified)));
    let (pgp, verified) = pgp_mime_signed(home.path(), "bob@example.org", "Bob OpenPGP <bob@example.org>", false);
    cases.push(("pgp/mime RSA", pgp, &["valid"], None, Some(verified)));
    cases.push(("pgp/mime tampered", tampered_pgp.0, &["invalid"], None, Some(tampered_pgp.1)));
    let plain = "Plain text, clear-signed.\nFrom the start of a line\n- a dash\nThe word is capybara.\n";
    let (clear, ok) = gpg(home.path(), &["--clearsign", "-u", "bob@example.org"], plain.as_bytes());
    assert!(ok, "gpg clear-signs");
    let inline = |body: &[u8]| {
        let mut e = b"Content-Type: text/plain; charset=utf-8\r\n\r\n".to_vec();
        e.extend_from_slice(&String::from_utf8_lossy(body).replace('\n', "\r\n").into_bytes());
        message("Bob OpenPGP <bob@example.org>", "inline made now", &e)
    };
    cases.push(("inline clear-signed RSA", inline(&clear), &["valid"], None, None));
    let (enc, ok) = gpg(
        home.path(),
        &[
            "--armor",
            "--encrypt",
            "--sign",
            "-u",
            "bob@example.org",
            "-r",
            "alice@example.org",
            "--cipher-algo",
            "AES128",
        ],
        plain.as_bytes(),
    );
    assert!(ok, "gpg encrypts");
    cases.push(("inline encrypted and signed", inline(&enc), &["valid"], Some("decrypted"), None));

    let keys = keyring();
    let dir = tempfile::tempdir().expect("dir");
    let mut failures = Vec::new();
    for (name, raw, sigs, enc, independent) in &cases {
        let path = dir.path().join(format!("{}.eml", name.replace([' ', '/', ','], "-")));
        std::fs::write(&path, raw).expect("write");
        let (msg, s) = open(&path, &keys);
        let got: Vec<&str> = s.signatures.iter().map(|r| r.status.name()).collect();
        let got_enc = s.encryption.as_ref().map(|e| e.status.name());
        let shown = shown_text(&msg);
        let wants = if sigs.contains(&"invalid") { "wallaby" } else { "capybara" };
        if got != *sigs || got_enc != *enc || !shown.contains(wants) {
            failures.push(format!("{name}: {got:?} {got_enc:?} {:?} showing {shown:?}", s.signatures));
        }
        // The independent verdict on every valid and invalid S/MIME signature made by openssl.
        let verdict = sigs.first().map(|s| *s == "valid");
        let agrees = match (independent, verdict) {
            (Some(v), Some(want)) => *v == want,
            (None, Some(want)) if name.starts_with("smime") && enc.is_none() => {
                let mut cmd = Command::new("openssl");
                cmd.args(["cms", "-verify", "-purpose", "smimesign", "-out", "/dev/null", "-CAfile"])
                    .arg(key("ca.pem"))
                    .arg("-in")
                    .arg(&path);
                run(&mut cmd, b"").1 == want
            }
            _ => true,
        };
        if !agrees {
            failures.push(format!("{name}: mailshelf says {got:?}; the independent tool does not agree"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(cases.len(), 15);
}

/// A message with one attachment: `name`, as `application/octet-stream`, holding `data`.
fn with_attachment(name: &str, data: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(data);
    let lines: Vec<&str> = b64.as_bytes().chunks(76).map(|c| std::str::from_utf8(c).unwrap_or("")).collect();
    let entity = format!(
        "Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n--m\r\nContent-Type: text/plain\r\n\r\nSee the file.\r\n\
         --m\r\nContent-Type: application/octet-stream; name=\"{name}\"\r\nContent-Disposition: attachment; filename=\"{name}\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--m--\r\n",
        lines.join("\r\n")
    );
    message("Alice Signer <alice@example.org>", "a signed file", entity.as_bytes())
}

/// A `.p7m` file (opaque signed-data, as an attachment of any type) becomes what it signs: a
/// message's content is shown as the message's, a document is an attachment under the name
/// without `.p7m`; its signature is checked like any other, and openssl verifies it.
#[test]
fn signed_p7m_files_become_what_they_sign() {
    if !crate::common::needs::program("signed_p7m_files_become_what_they_sign", "openssl", "apt-get install openssl") {
        return;
    }
    let sign = |content: &[u8]| {
        cms(
            &["-sign", "-binary", "-nodetach", "-signer", "alice.pem", "-inkey", "alice.key", "-outform", "DER"],
            content,
        )
    };
    let inner = b"From: Alice Signer <alice@example.org>\r\nSubject: Inner\r\nContent-Type: text/plain\r\n\r\nThe inner word is axolotl.\r\n";
    let pdf = b"%PDF-1.4\n% a document, not a message\n%%EOF\n";
    let dir = tempfile::tempdir().expect("dir");
    let keys = keyring();
    for (name, content) in [("forwarded.p7m", &inner[..]), ("report.pdf.p7m", &pdf[..])] {
        let der = sign(content);
        let path = dir.path().join(format!("{name}.eml"));
        std::fs::write(&path, with_attachment(name, &der)).expect("write");
        let (msg, s) = open(&path, &keys);
        let statuses: Vec<&str> = s.signatures.iter().map(|r| r.status.name()).collect();
        assert_eq!(statuses, ["valid"], "{name}: {:?}", s.signatures);
        let verify = ["-verify", "-inform", "DER", "-purpose", "smimesign", "-CAfile", "ca.pem"];
        assert_eq!(cms(&verify, &der), content, "{name}: openssl verifies it");
        let files: Vec<(Option<&str>, &str)> =
            msg.attachments().map(|p| (p.filename.as_deref(), p.content_type.as_str())).collect();
        if name == "forwarded.p7m" {
            assert!(crate::crypto::all_text(&msg).contains("axolotl"), "{name}: the message it signs is read");
            assert!(files.is_empty(), "{name}: {files:?}");
        } else {
            assert_eq!(files, [(Some("report.pdf"), "application/pdf")], "{name}");
            let part = msg.attachments().next().expect("the document");
            assert!(matches!(&part.body, mailshelf::model::Body::Binary(b) if b[..] == pdf[..]), "{name}: its bytes");
        }
    }
}

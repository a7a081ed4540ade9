//! The command line: help that names every environment variable, clear errors for bad input, the
//! URL printed once listening, and a clean stop on SIGTERM.

use std::io::BufRead;
use std::process::{Command, Stdio};

fn mailshelf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mailshelf"))
}

#[test]
fn help_names_every_flag_and_its_environment_variable() {
    let out = mailshelf().args(["serve", "--help"]).output().expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for env in [
        "MAILSHELF_PATH",
        "MAILSHELF_LISTEN",
        "MAILSHELF_DATA_DIR",
        "MAILSHELF_MAX_UPLOAD",
        "MAILSHELF_MAX_MESSAGE",
        "MAILSHELF_SEARCH",
        "MAILSHELF_CORS_ORIGINS",
        "MAILSHELF_MAX_CONNECTIONS",
        "MAILSHELF_HEADER_TIMEOUT",
        "MAILSHELF_KEYS",
        "MAILSHELF_TRUST",
        "MAILSHELF_KEY_PASSPHRASE_FILE",
        "MAILSHELF_INDEX_DECRYPTED",
    ] {
        assert!(help.contains(env), "{env} in --help");
    }
}

#[test]
fn bad_input_is_a_clear_error_and_a_failing_exit() {
    let data = tempfile::tempdir().expect("dir");
    let cases: &[(&[&str], &str)] = &[
        (&["serve", "/no/such/path"], "no such file or folder"),
        (&["serve", "--listen", "localhost-ish"], "is not an address"),
        (&["serve", "--max-upload", "lots"], "cannot read"),
        (&["serve", "--max-message", "0"], "cannot read"),
        (&["serve", "--cors-origin", "https://x.example/path"], "is not an origin"),
        (&["serve", "--max-connections", "0"], "0 is not in 1..="),
        (&["serve", "--header-timeout", "0"], "0 is not in 1..="),
        (&["serve", "--key", "/no/such/key.p12"], "/no/such/key.p12: no such file"),
        (&["serve", "--trust", "/etc/hostname"], "holds neither PEM certificates nor OpenPGP public keys"),
    ];
    for (args, want) in cases {
        let out = mailshelf().args(*args).arg("--data-dir").arg(data.path()).output().expect("runs");
        assert!(!out.status.success(), "{args:?} fails");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn prints_its_url_and_stops_cleanly_on_sigterm() {
    let data = tempfile::tempdir().expect("dir");
    let mut child = mailshelf()
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .arg(crate::common::repo_path("samples"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    assert!(line.starts_with("mailshelf serving on http://127.0.0.1:"), "{line}");
    let addr = line.trim().trim_start_matches("mailshelf serving on http://").trim_end_matches('/');
    assert!(std::net::TcpStream::connect(addr).is_ok(), "listening on {addr}");
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("exits");
    assert!(status.success(), "clean exit on SIGTERM: {status}");
    // The health check agrees it is gone.
    let health = mailshelf().args(["healthcheck", "--listen", addr]).output().expect("runs");
    assert!(!health.status.success());
}

/// `mailshelf open --no-browser FILE…` with its temporary folder under `tmp`; the URL it printed.
fn open(
    tmp: &std::path::Path,
    files: &[std::path::PathBuf],
    browser: Option<&std::path::Path>,
) -> (std::process::Child, String) {
    let mut cmd = mailshelf();
    cmd.arg("open");
    if browser.is_none() {
        cmd.arg("--no-browser");
    }
    cmd.args(files).env("TMPDIR", tmp).env_remove("MAILSHELF_NO_BROWSER").stdout(Stdio::piped()).stderr(Stdio::null());
    match browser {
        Some(b) => cmd.env("BROWSER", b),
        // Should a browser be started after all, none opens a window on the test machine.
        None => cmd.env("BROWSER", "/nonexistent/browser"),
    };
    let mut child = cmd.spawn().expect("starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    (child, line.trim().to_string())
}

fn stop(mut child: std::process::Child) {
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("exits");
    assert!(status.success(), "clean exit: {status}");
}

#[test]
fn open_serves_the_files_on_a_free_port_and_cleans_up() {
    let samples = crate::common::repo_path("samples");
    let cases: &[(&str, Vec<std::path::PathBuf>, &str, &str)] = &[
        (
            "one message: its page",
            vec![samples.join("welcome.eml")],
            "/message/welcome@example.com",
            "Welcome to Maison Verte",
        ),
        ("a saved page", vec![samples.join("saved-page.mhtml")], "/message/", "Field notes"),
        (
            "two files: the list",
            vec![samples.join("welcome.eml"), samples.join("invoice.eml")],
            "/",
            "Rechnung Nr. 2026-0315",
        ),
    ];
    for (name, files, path, shows) in cases {
        let tmp = tempfile::tempdir().expect("dir");
        let (child, url) = open(tmp.path(), files, None);
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("{name}: {url}"));
        let (port, at) = rest.split_at(rest.find('/').expect("path"));
        assert!(port.parse::<u16>().is_ok_and(|p| p != 0 && p != 8025), "{name}: a free port, {url}");
        assert!(at.starts_with(path) && (*path != "/" || at == "/"), "{name}: lands on {at}");
        let addr = format!("127.0.0.1:{port}").parse().expect("addr");
        let page = crate::common::process::get(addr, at).expect("page");
        assert_eq!(page.status, 200, "{name}");
        assert!(String::from_utf8_lossy(&page.body).contains(shows), "{name}");
        let data: Vec<_> = std::fs::read_dir(tmp.path()).expect("tmp").flatten().collect();
        assert_eq!(data.len(), 1, "{name}: one temporary data folder while it runs");
        stop(child);
        assert_eq!(
            std::fs::read_dir(tmp.path()).expect("tmp").count(),
            0,
            "{name}: the data folder is removed at exit"
        );
    }
}

#[test]
fn open_starts_the_browser_at_the_url() {
    // $BROWSER stands in for the system's browser: it writes the URL it was given to a named pipe,
    // so the test waits for exactly that, with no timing guess.
    let tmp = tempfile::tempdir().expect("dir");
    let fifo = tmp.path().join("opened");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let script = tmp.path().join("browser.sh");
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' \"$1\" > '{}'\n", fifo.display())).expect("script");
    assert!(Command::new("chmod").arg("+x").arg(&script).status().expect("chmod").success());
    let work = tempfile::tempdir().expect("dir");
    let (child, url) = open(work.path(), &[crate::common::repo_path("samples/welcome.eml")], Some(&script));
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(reader));
    });
    let opened = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the browser was started").expect("read");
    assert_eq!(opened.trim(), url, "the browser is sent to the printed URL");
    stop(child);
}

#[test]
fn open_needs_files_that_exist_and_documents_its_variable() {
    let tmp = tempfile::tempdir().expect("dir");
    let cases: &[(&[&str], &str)] =
        &[(&["open"], "required"), (&["open", "--no-browser", "/no/such.eml"], "no such file")];
    for (args, want) in cases {
        let out = mailshelf().args(*args).env("TMPDIR", tmp.path()).output().expect("runs");
        let help = args.contains(&"--help");
        assert_eq!(out.status.success(), help, "{args:?}");
        let said = String::from_utf8_lossy(if help { &out.stdout } else { &out.stderr });
        assert!(said.contains(want), "{args:?}: {said}");
    }
    assert_eq!(std::fs::read_dir(tmp.path()).expect("tmp").count(), 0, "nothing left behind");
}

/// The passphrase of a `--key` comes from `MAILSHELF_KEY_PASSPHRASE` or `--key-passphrase-file`;
/// a wrong one, or a key file among `MAILSHELF_KEYS` that is not there, stops start-up naming the
/// file, without a panic; a server started with keys never logs them, nor the passphrase.
#[test]
fn keys_and_their_passphrase_come_from_the_environment_or_a_file_and_are_never_logged() {
    let data = tempfile::tempdir().expect("dir");
    let keys = crate::common::repo_path("tests/fixtures/crypto/keys");
    let (p12, ca) = (keys.join("alice.p12"), keys.join("ca.pem"));
    let pass_file = data.path().join("passphrase");
    let serve = || {
        let mut cmd = mailshelf();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path().join("data"))
            .env_remove("MAILSHELF_KEY_PASSPHRASE")
            .env_remove("MAILSHELF_KEYS")
            .env("RUST_LOG", "info");
        cmd
    };
    let refused = |cmd: &mut Command, want: &str| {
        let out = cmd.output().expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cmd:?} fails");
        assert!(err.contains(want) && !err.contains("panicked"), "{cmd:?}: {err}");
    };
    let p12_text = p12.display().to_string();
    refused(serve().arg("--key").arg(&p12).env("MAILSHELF_KEY_PASSPHRASE", "wrong"), &p12_text);
    refused(serve().arg("--key").arg(&p12).env("MAILSHELF_KEY_PASSPHRASE", "wrong"), "passphrase is wrong");
    std::fs::write(&pass_file, "wrong\n").expect("write");
    refused(serve().arg("--key").arg(&p12).arg("--key-passphrase-file").arg(&pass_file), "passphrase is wrong");
    refused(
        serve()
            .env("MAILSHELF_KEYS", format!("{p12_text},/no/such/other.pem"))
            .env("MAILSHELF_KEY_PASSPHRASE", "secret"),
        "/no/such/other.pem: no such file",
    );
    std::fs::write(&pass_file, "secret\n").expect("write");
    let mut child = serve()
        .arg("--key-passphrase-file")
        .arg(&pass_file)
        .env("MAILSHELF_KEYS", &p12_text)
        .env("MAILSHELF_TRUST", &ca)
        .arg(crate::common::repo_path("samples"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    assert!(line.starts_with("mailshelf serving on http://127.0.0.1:"), "{line}");
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("exits");
    assert!(out.status.success(), "clean exit: {}", out.status);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("keys and trust read"), "{log}");
    assert!(!log.contains("secret") && !log.contains("PRIVATE") && !log.contains("MII"), "{log}");
}

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
        "MAILSHELF_SEARCH",
        "MAILSHELF_CORS_ORIGINS",
        "MAILSHELF_MAX_CONNECTIONS",
        "MAILSHELF_HEADER_TIMEOUT",
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
        (&["serve", "--cors-origin", "https://x.example/path"], "is not an origin"),
        (&["serve", "--max-connections", "0"], "0 is not in 1..="),
        (&["serve", "--header-timeout", "0"], "0 is not in 1..="),
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

//! Signed mail: what unwrapping costs when a message is parsed, and what checking its signatures
//! costs when it is looked at, over two Maildirs of the same messages, one unsigned and one signed
//! (`bench/crypto.sh` makes them with `bench/sign_archive.py`).
//!
//! One thread, every message read into memory first: the time to parse all unsigned messages,
//! the time to parse all signed ones (which unwraps their signed layers), and the time to check
//! every signature of the signed ones (`view::security::check`, as the page and the API do) with
//! the test trust anchors of `tests/fixtures/crypto/keys`. Best of `BENCH_REPEAT` (default 3).
//!
//! Run: `cargo bench --bench crypto -- UNSIGNED_MAILDIR SIGNED_MAILDIR`; prints one JSON line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

fn messages(maildir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = ["cur", "new"]
        .iter()
        .flat_map(|d| std::fs::read_dir(maildir.join(d)).into_iter().flatten())
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).expect("read")).collect()
}

fn best<T>(repeat: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut best = f64::MAX;
    for _ in 0..repeat {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (best, out.expect("ran"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let [unsigned, signed] = [&args[0], &args[1]].map(PathBuf::from);
    let repeat: usize = std::env::var("BENCH_REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    let keys_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crypto/keys");
    let keys = mailshelf::crypto::Keyring::load(
        &[],
        &[keys_dir.join("ca.pem"), keys_dir.join("openpgp-trusted.asc")],
        None,
        None,
    )
    .expect("trust loads");
    let (plain, sealed) = (messages(&unsigned), messages(&signed));
    let parse_all = |set: &[Vec<u8>]| {
        set.iter()
            .map(|m| mailshelf::parse::parse_message(Arc::from(m.as_slice())).expect("parses"))
            .collect::<Vec<_>>()
    };
    let (t_plain, _) = best(repeat, || parse_all(&plain));
    let (t_signed, parsed) = best(repeat, || parse_all(&sealed));
    let now = mailshelf::view::now();
    // The generated senders are not the signer: most statuses are `untrusted` (the content
    // matches, the certificate is for another address), which costs the same checks as `valid`.
    let (t_check, statuses) = best(repeat, || {
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for m in &parsed {
            for s in mailshelf::view::security::check(m, &keys, now).signatures {
                *counts.entry(s.status.name()).or_default() += 1;
            }
        }
        counts
    });
    let statuses: Vec<String> = statuses.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    println!(
        "{{\"messages\": {}, \"parse_unsigned_s\": {:.4}, \"parse_signed_s\": {:.4}, \"check_s\": {:.4}, \"statuses\": {{{}}}, \"unsigned_bytes\": {}, \"signed_bytes\": {}}}",
        sealed.len(),
        t_plain,
        t_signed,
        t_check,
        statuses.join(", "),
        plain.iter().map(Vec::len).sum::<usize>(),
        sealed.iter().map(Vec::len).sum::<usize>(),
    );
}

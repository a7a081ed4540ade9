//! Reading Outlook data files: items per second and peak memory on a generated archive.
//!
//! No tool on this machine writes `.pst` files, so the archive is written here, by the tests' own
//! writer (`tests/pst/writer/`, to the specification; Unicode layout, permutation-encoded as
//! Outlook writes by default): `BENCH_ITEMS` messages (default 50,000) in 20 folders, each with a
//! subject, a sender, a date and a plain-text body of about 1.5 KB, with the folders' contents
//! tables and each message's recipient table, under B-trees of as many levels as they need. It
//! goes to a temporary folder that is removed at the end.
//!
//! Measured, one thread: listing the archive (`mailshelf::ingest::pst::list`: the node index and the folder
//! tree), then reading every item back by its node id and parsing it into the message model
//! (`item_msg` + `parse_message`, what a parse worker does per item). Peak memory is the process's
//! high-water mark (`VmHWM`), read after each phase.
//!
//! Run: `cargo bench --bench pst` (`BENCH_ITEMS=200000 cargo bench --bench pst` for a larger one).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

#[path = "../tests/pst/writer/mod.rs"]
mod writer;

use writer::{Archive, Layout, V};

fn archive(items: usize) -> Vec<u8> {
    let mut a = Archive::new(Layout::Unicode, writer::CRYPT_PERMUTE);
    let folders: Vec<u32> =
        (0..20).map(|f| a.folder(Archive::TOP, V::Text(format!("Folder {f}")), Vec::new())).collect();
    let body: String = (0..30).map(|i| format!("Line {i} of a message body that reads like mail would. ")).collect();
    for i in 0..items {
        let time = 132_000_000_000_000_000u64 + i as u64 * 600_000_000;
        let props = vec![
            (0x0037, V::Text(format!("Message {i} about the quarterly figures"))),
            (0x001a, V::Text("IPM.Note".into())),
            (0x0042, V::Text(format!("Sender {}", i % 97))),
            (0x0039, V::Time(time)),
            (0x0e07, V::Long(1)),
            (0x1000, V::Text(format!("{body}\r\n{i}"))),
        ];
        a.message(folders[i % folders.len()], props, Vec::new());
    }
    a.finish()
}

fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    // The archive is written by this process and measured by a fresh one, so that the memory the
    // writing took is not in the reader's high-water mark.
    if let Some(path) = std::env::var_os("BENCH_PST_FILE") {
        measure(std::path::Path::new(&path));
        return;
    }
    let items: usize = std::env::var("BENCH_ITEMS").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.pst");
    let started = Instant::now();
    let bytes = archive(items);
    std::fs::write(&path, &bytes).unwrap();
    println!(
        "archive: {items} items, {:.1} MB, written in {:.1} s",
        bytes.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    drop(bytes);
    let status =
        std::process::Command::new(std::env::current_exe().unwrap()).env("BENCH_PST_FILE", &path).status().unwrap();
    assert!(status.success());
}

fn measure(path: &std::path::Path) {
    let base = peak_kb();
    let started = Instant::now();
    let listing = mailshelf::ingest::pst::list(path).unwrap();
    let items = listing.items.len();
    let listed = started.elapsed().as_secs_f64();
    println!("list: {listed:.2} s ({:.0} items/s), peak RSS {} MB", items as f64 / listed, peak_kb() / 1024);

    let started = Instant::now();
    let mut bytes_read = 0usize;
    for item in &listing.items {
        let msg = mailshelf::ingest::pst::item_msg(path, item.node).unwrap();
        bytes_read += msg.len();
        let parsed = mailshelf::parse::parse_message(Arc::from(msg)).unwrap();
        std::hint::black_box(parsed);
    }
    let read = started.elapsed().as_secs_f64();
    println!(
        "read + parse every item (one thread): {read:.2} s ({:.0} items/s, {:.1} MB of .msg), peak RSS {} MB (at start: {} MB)",
        items as f64 / read,
        bytes_read as f64 / 1e6,
        peak_kb() / 1024,
        base / 1024
    );
}

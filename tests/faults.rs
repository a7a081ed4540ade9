//! Load with faults: uploaders and readers run against the real binary while it is killed with
//! SIGKILL and restarted, over the same data folder, several times. Afterwards every upload that
//! was answered `201` must be listed and its raw bytes identical to what was sent, and no reader may
//! have seen a 5xx. A refused or reset connection while the server is down is expected, not a
//! failure.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::common::process::{self, Served};
use crate::common::repo_path;

const KILLS: usize = 3;
const UPLOADERS: usize = 3;
const READERS: usize = 3;
/// Uploads acknowledged after each start before the server is killed again.
const ACKS_PER_ROUND: usize = 20;

/// An upload the server answered `201`.
struct Acked {
    id: String,
    page: String,
    raw_url: String,
    sent: Vec<u8>,
}

#[derive(Default)]
struct Tally {
    acked: Mutex<Vec<Acked>>,
    /// Uploads cut off by a kill, without a whole answer (stored or not).
    uploads_cut: AtomicUsize,
    /// Whole answers to readers.
    reads: AtomicUsize,
    /// Reads cut off by a kill.
    reads_cut: AtomicUsize,
    /// Connections refused while the server was down.
    refused: AtomicUsize,
    server_errors: AtomicUsize,
    /// Every 5xx, and any other answer that should not have been given.
    wrong: Mutex<Vec<String>>,
}

struct Shared {
    addr: RwLock<SocketAddr>,
    stop: AtomicBool,
    tally: Tally,
}

impl Shared {
    fn addr(&self) -> SocketAddr {
        *self.addr.read().expect("addr")
    }

    fn acked(&self) -> usize {
        self.tally.acked.lock().expect("acked").len()
    }

    fn wrong(&self, what: String) {
        self.tally.wrong.lock().expect("wrong").push(what);
    }

    /// Counts a request that got no whole answer. When the connection was refused the server is
    /// down: pause a moment rather than spin while it restarts.
    fn failed(&self, e: &std::io::Error, cut: &AtomicUsize) {
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            self.tally.refused.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(5));
        } else {
            cut.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// xorshift64: cheap, reproducible variety.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A unique message of a few hundred bytes to a few KB.
fn message(uploader: usize, n: usize, rng: &mut u64) -> Vec<u8> {
    let mut m = format!(
        "From: Uploader {uploader} <up{uploader}@example.test>\r\nTo: shelf@example.test\r\n\
         Subject: Fault run {uploader}-{n}\r\nDate: Tue, 3 Mar 2026 12:{:02}:{:02} +0000\r\n\
         Message-ID: <fault-{uploader}-{n}@example.test>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n",
        n / 60 % 60,
        n % 60
    );
    for i in 0..(3 + next(rng) % 100) {
        m.push_str(&format!("Line {i} of upload {uploader}-{n}: {:016x}\r\n", next(rng)));
    }
    m.into_bytes()
}

fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
}

fn uploader(shared: &Shared, u: usize) {
    let mut rng = 0x9e37_79b9_7f4a_7c15 ^ (u as u64 + 1);
    let mut n = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        let body = message(u, n, &mut rng);
        n += 1;
        let headers = [("Content-Type", "message/rfc822")];
        match process::request(shared.addr(), "POST", "/api/messages", &headers, &body) {
            Ok(r) if r.status == 201 => {
                let j = r.json();
                let d = &j[0];
                let text = |k: &str| d[k].as_str().unwrap_or_else(|| panic!("{k} in {j}")).to_string();
                let acked = Acked { id: text("id"), page: text("url"), raw_url: text("raw_url"), sent: body };
                shared.tally.acked.lock().expect("acked").push(acked);
            }
            Ok(r) => {
                if r.status >= 500 {
                    shared.tally.server_errors.fetch_add(1, Ordering::Relaxed);
                }
                shared.wrong(format!("upload {u}-{}: {} {}", n - 1, r.status, snippet(&r.body)));
            }
            Err(e) => shared.failed(&e, &shared.tally.uploads_cut),
        }
    }
}

fn reader(shared: &Shared, r: usize) {
    let mut rng = 0x2545_f491_4f6c_dd1d ^ (r as u64 + 1);
    while !shared.stop.load(Ordering::Relaxed) {
        let path = match next(&mut rng) % 4 {
            0 => "/".to_string(),
            1 => "/api/messages".to_string(),
            2 => "/api/status".to_string(),
            _ => {
                // The page of a message already acknowledged: it must be there.
                let acked = shared.tally.acked.lock().expect("acked");
                if acked.is_empty() {
                    continue;
                }
                acked[next(&mut rng) as usize % acked.len()].page.clone()
            }
        };
        match process::get(shared.addr(), &path) {
            Ok(reply) => {
                shared.tally.reads.fetch_add(1, Ordering::Relaxed);
                if reply.status >= 500 {
                    shared.tally.server_errors.fetch_add(1, Ordering::Relaxed);
                }
                if reply.status != 200 {
                    shared.wrong(format!("GET {path}: {} {}", reply.status, snippet(&reply.body)));
                }
            }
            Err(e) => shared.failed(&e, &shared.tally.reads_cut),
        }
    }
}

/// Waits until `more` uploads beyond those acknowledged now have been acknowledged.
fn await_acks(shared: &Shared, more: usize) {
    let want = shared.acked() + more;
    let deadline = Instant::now() + Duration::from_secs(120);
    while shared.acked() < want {
        assert!(Instant::now() < deadline, "uploads stalled at {} of {want}", shared.acked());
        assert!(shared.tally.wrong.lock().expect("wrong").len() < 20, "too many wrong answers; stopping early");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every message id the server lists, page by page.
fn listed(addr: SocketAddr) -> std::collections::HashSet<String> {
    let mut ids = std::collections::HashSet::new();
    loop {
        let page = process::get(addr, &format!("/api/messages?offset={}&limit=1000", ids.len())).expect("list").json();
        let messages = page["messages"].as_array().expect("messages");
        ids.extend(messages.iter().map(|m| m["id"].as_str().expect("id").to_string()));
        if messages.is_empty() || ids.len() as u64 >= page["total"].as_u64().expect("total") {
            return ids;
        }
    }
}

#[test]
fn uploads_acknowledged_before_a_kill_survive_it_and_readers_never_see_a_5xx() {
    let began = Instant::now();
    let data = tempfile::tempdir().expect("dir");
    let samples = repo_path("samples");
    let samples = samples.to_str().expect("UTF-8 path");
    let start = || Served::start(data.path(), &[samples]);
    let mut server = start();
    let shared =
        Arc::new(Shared { addr: RwLock::new(server.addr), stop: AtomicBool::new(false), tally: Tally::default() });
    let workers: Vec<_> = (0..UPLOADERS)
        .map(|u| {
            let s = shared.clone();
            std::thread::spawn(move || uploader(&s, u))
        })
        .chain((0..READERS).map(|r| {
            let s = shared.clone();
            std::thread::spawn(move || reader(&s, r))
        }))
        .collect();

    for _ in 0..KILLS {
        await_acks(&shared, ACKS_PER_ROUND);
        // Uploads and reads are in flight right now.
        server.kill();
        server = start();
        *shared.addr.write().expect("addr") = server.addr;
    }
    await_acks(&shared, ACKS_PER_ROUND);
    shared.stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }

    let ids = listed(server.addr);
    let acked = shared.tally.acked.lock().expect("acked");
    let mut missing = Vec::new();
    let mut differ = Vec::new();
    for a in acked.iter() {
        if !ids.contains(&a.id) {
            missing.push(a.id.clone());
        }
        let raw = process::get(server.addr, &a.raw_url).expect("raw");
        if raw.status != 200 || raw.body != a.sent {
            differ.push(format!("{} ({}, {} bytes)", a.raw_url, raw.status, raw.body.len()));
        }
    }
    let t = &shared.tally;
    println!(
        "faults: {KILLS} SIGKILLs with {UPLOADERS} uploaders and {READERS} readers, {:.1?}: uploads acknowledged \
         {}, found listed {}, byte-identical {}; uploads cut off by a kill {}; reads answered {}, reads cut off by \
         a kill {}, 5xx {}, other wrong answers {}; connections refused while down {}",
        began.elapsed(),
        acked.len(),
        acked.len() - missing.len(),
        acked.len() - differ.len(),
        t.uploads_cut.load(Ordering::Relaxed),
        t.reads.load(Ordering::Relaxed),
        t.reads_cut.load(Ordering::Relaxed),
        t.server_errors.load(Ordering::Relaxed),
        t.wrong.lock().expect("wrong").len() - t.server_errors.load(Ordering::Relaxed),
        t.refused.load(Ordering::Relaxed),
    );
    let status = server.terminate();
    assert!(missing.is_empty(), "acknowledged but not listed: {missing:?}");
    assert!(differ.is_empty(), "acknowledged but not byte-identical: {differ:?}");
    assert_eq!(*t.wrong.lock().expect("wrong"), Vec::<String>::new(), "wrong answers");
    assert!(status.success(), "clean exit at the end: {status}");
}

//! Several real `mailshelf serve` processes on one PostgreSQL database and one read-only mount:
//! they serve the same answers, exactly one indexes, uploads to any of them appear on all, a
//! replica killed with SIGKILL (the indexer too) loses no acknowledged upload and hands indexing
//! over, a database that goes away makes them answer 503 until it is back, and an indexer that
//! loses its lock mid-run stops instead of indexing beside the next holder.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::postgres::{self, Cluster};
use crate::common::process::{request, HttpReply, Served};
use crate::common::repo_path;

/// An acknowledged upload: its id and the bytes sent.
type Acked = (String, Vec<u8>);

/// A replica of the archive in `url` over `mount`.
fn replica(url: &str, mount: &Path) -> (Served, tempfile::TempDir) {
    let data = tempfile::tempdir().expect("data folder");
    let served = Served::start(data.path(), &["--database-url", url, mount.to_str().expect("path")]);
    (served, data)
}

fn get(addr: SocketAddr, path: &str) -> Option<HttpReply> {
    request(addr, "GET", path, &[], b"").ok()
}

fn status(addr: SocketAddr) -> Option<serde_json::Value> {
    get(addr, "/api/status").filter(|r| r.status == 200).map(|r| r.json())
}

/// Waits (up to `secs`) until `test` holds; false if it never did.
fn within(secs: u64, mut test: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if test() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    test()
}

/// A copy of the samples, as the read-only mount, with a fingerprint of every file in it.
fn mount() -> (tempfile::TempDir, BTreeMap<PathBuf, Vec<u8>>) {
    let dir = tempfile::tempdir().expect("mount");
    let from = repo_path("samples");
    for f in crate::common::walk(&from) {
        let rel = f.strip_prefix(&from).expect("under samples");
        let to = dir.path().join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("folders");
        std::fs::copy(&f, &to).expect("copy");
    }
    let before = fingerprint(dir.path());
    (dir, before)
}

fn fingerprint(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    crate::common::walk(dir).into_iter().map(|p| (p.clone(), std::fs::read(&p).expect("read"))).collect()
}

fn listed_ids(addr: SocketAddr) -> Vec<String> {
    let r = get(addr, "/api/messages?limit=1000").expect("list");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_str().expect("id").to_string())
        .collect()
}

fn upload(addr: SocketAddr, n: usize) -> (Vec<u8>, Option<String>) {
    let body = format!(
        "Message-ID: <upload-{n}@replicas.test>\r\nFrom: tester@replicas.test\r\nSubject: upload {n}\r\n\
         Date: Tue, 24 Nov 2026 10:{:02}:{:02} +0000\r\n\r\nbody of upload {n}\r\n",
        n / 60 % 60,
        n % 60
    )
    .into_bytes();
    let acked = request(addr, "POST", "/api/messages", &[("Content-Type", "message/rfc822")], &body)
        .ok()
        .filter(|r| r.status == 201)
        .and_then(|r| r.json()[0]["id"].as_str().map(str::to_string));
    (body, acked)
}

#[test]
fn replicas_serve_the_same_answers_and_one_indexes() {
    if !postgres::available("replicas_serve_the_same_answers_and_one_indexes") {
        return;
    }
    let url = Cluster::shared().database();
    let (mount, before) = mount();
    let (a, _da) = replica(&url, mount.path());
    let (b, _db) = replica(&url, mount.path());
    let expected = crate::api::SAMPLE_MESSAGES;
    assert!(
        within(60, || [a.addr, b.addr].iter().all(|&x| status(x).is_some_and(|s| s["messages"] == expected))),
        "both replicas list the samples"
    );
    let roles: Vec<bool> = [a.addr, b.addr].iter().map(|&x| status(x).expect("status")["indexer"] == true).collect();
    assert_eq!(roles.iter().filter(|&&r| r).count(), 1, "exactly one indexer: {roles:?}");
    let s = status(a.addr).expect("status");
    assert_eq!(s["backend"], "postgresql");
    assert_eq!(s["database_reachable"], true);

    // An upload to one is on the other within a second or so, byte for byte.
    let (bytes, id) = upload(b.addr, 1);
    let id = id.expect("acknowledged");
    assert!(within(10, || listed_ids(a.addr).contains(&id)), "the upload reaches the other replica");
    let raw = get(a.addr, &format!("/raw/{id}")).expect("raw");
    assert_eq!(raw.body, bytes);

    // Same list, same message, same search, same part, same page.
    assert_eq!(listed_ids(a.addr), listed_ids(b.addr));
    for path in [
        "/api/messages?limit=50",
        "/api/messages/welcome@example.com",
        "/api/messages?q=invoice",
        "/api/messages?q=from:tester%40replicas.test",
        "/api/folders",
        "/api/stats",
        "/message/welcome@example.com",
    ] {
        let (x, y) = (get(a.addr, path).expect("a"), get(b.addr, path).expect("b"));
        assert_eq!(
            (x.status, String::from_utf8_lossy(&x.body)),
            (y.status, String::from_utf8_lossy(&y.body)),
            "{path} differs between replicas"
        );
        assert_eq!(x.status, 200, "{path}");
    }
    drop((a, b));
    assert_eq!(fingerprint(mount.path()), before, "nothing is written under the mount");
}

#[test]
fn killed_replicas_lose_no_acknowledged_upload_and_indexing_moves_on() {
    if !postgres::available("killed_replicas_lose_no_acknowledged_upload_and_indexing_moves_on") {
        return;
    }
    let url = Cluster::shared().database();
    let (mount, before) = mount();
    let (first, _d1) = replica(&url, mount.path());
    assert!(within(60, || status(first.addr).is_some_and(|s| s["indexer"] == true)), "the first replica indexes");
    let (second, _d2) = replica(&url, mount.path());
    let (third, _d3) = replica(&url, mount.path());
    let addrs = [first.addr, second.addr, third.addr];
    assert!(within(60, || addrs.iter().all(|&x| status(x).is_some_and(|s| s["ready"] == true))));

    // Uploads to every replica, round and round, while two of them are killed.
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let uploaders: Vec<_> = (0..3)
        .map(|t| {
            let (acked, stop) = (Arc::clone(&acked), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut n = t;
                while !stop.load(Ordering::Relaxed) {
                    let (bytes, id) = upload(addrs[n % 3], n);
                    if let Some(id) = id {
                        acked.lock().expect("acked").push((id, bytes));
                    }
                    n += 3;
                }
            })
        })
        .collect();
    let count = |acked: &Mutex<Vec<Acked>>| acked.lock().expect("acked").len();
    assert!(within(30, || count(&acked) >= 20), "uploads are acknowledged");
    third.kill();
    let at = count(&acked);
    assert!(within(30, || count(&acked) >= at + 20), "uploads go on after a serving replica died");
    first.kill();
    let killed = Instant::now();
    assert!(within(30, || status(second.addr).is_some_and(|s| s["indexer"] == true)), "the survivor indexes");
    let failover = killed.elapsed();
    let at = count(&acked);
    assert!(within(30, || count(&acked) >= at + 20), "uploads go on after the indexer died");
    stop.store(true, Ordering::Relaxed);
    for u in uploaders {
        u.join().expect("uploader");
    }

    // Every acknowledged upload is listed on the survivor and on a fresh replica, byte for byte.
    let (fresh, _d4) = replica(&url, mount.path());
    let acked = acked.lock().expect("acked").clone();
    for addr in [second.addr, fresh.addr] {
        let listed = listed_ids(addr);
        for (id, bytes) in &acked {
            assert!(listed.contains(id), "{id} acknowledged but not listed");
            assert_eq!(&get(addr, &format!("/raw/{id}")).expect("raw").body, bytes, "{id}");
        }
    }
    eprintln!(
        "{} uploads acknowledged, all found; indexing moved on {:.1} s after the kill",
        acked.len(),
        failover.as_secs_f64()
    );
    drop((second, fresh));
    assert_eq!(fingerprint(mount.path()), before, "nothing is written under the mount");
}

#[test]
fn a_database_restart_answers_503_then_recovers_by_itself() {
    if !postgres::available("a_database_restart_answers_503_then_recovers_by_itself") {
        return;
    }
    let cluster = Cluster::start();
    let url = cluster.database();
    let (mount, _) = mount();
    let (r, _d) = replica(&url, mount.path());
    assert!(within(60, || status(r.addr).is_some_and(|s| s["messages"] == crate::api::SAMPLE_MESSAGES)));

    cluster.halt();
    let unavailable = || get(r.addr, "/api/messages").is_some_and(|x| x.status == 503);
    assert!(within(10, unavailable), "503 while the database is away");
    let reply = get(r.addr, "/api/messages").expect("answer");
    assert_eq!(reply.header("retry-after"), Some("2"));
    assert_eq!(reply.header("content-type"), Some("application/problem+json"));
    let page = request(r.addr, "GET", "/", &[("Accept", "text/html")], b"").expect("page");
    assert_eq!(page.status, 503);
    let s = status(r.addr).expect("status still answers");
    assert_eq!(s["database_reachable"], false);
    let (_, acked) = upload(r.addr, 9000);
    assert!(acked.is_none(), "no upload is acknowledged while the database is away");

    cluster.resume();
    assert!(within(30, || get(r.addr, "/api/messages").is_some_and(|x| x.status == 200)), "serves again");
    let (bytes, id) = upload(r.addr, 9001);
    let id = id.expect("uploads work again");
    assert_eq!(get(r.addr, &format!("/raw/{id}")).expect("raw").body, bytes);
    assert!(within(10, || status(r.addr).is_some_and(|s| s["indexer"] == true)), "indexes again");
}

/// A replica whose lock connection alone is cut stops indexing at its next checkpoint instead of
/// reading on beside the replica that takes over (which would list what both read twice); the
/// next holder resumes, and every message is listed once.
#[test]
fn a_replica_that_loses_the_lock_stops_indexing() {
    if !postgres::available("a_replica_that_loses_the_lock_stops_indexing") {
        return;
    }
    // More messages than two checkpoints (a checkpoint every 10,000), in one mbox.
    const MESSAGES: usize = 25_000;
    let dir = tempfile::tempdir().expect("mount");
    let mut mbox = String::with_capacity(MESSAGES * 200);
    for n in 0..MESSAGES {
        mbox.push_str(&format!(
            "From sender@lock.test Tue Nov 24 10:00:00 2026\nMessage-ID: <{n}@lock.test>\n\
             From: sender@lock.test\nSubject: message {n}\nDate: Tue, 24 Nov 2026 10:00:00 +0000\n\n\
             body {n}\n\n"
        ));
    }
    std::fs::write(dir.path().join("big.mbox"), mbox).expect("write");
    let url = Cluster::shared().database();
    let psql = |name: &str, args: &[&str]| {
        let mut cmd = std::process::Command::new(postgres::bin_dir().expect("PostgreSQL's programs").join("psql"));
        cmd.args(["-X", "-q", "-tA", "-d", &url]).args(args).env("PGAPPNAME", name);
        cmd
    };
    let query = |sql: &str| {
        let out = psql("lock-check", &["-c", sql]).output().expect("psql runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // The indexer lock's key, as pg_locks shows a bigint advisory lock.
    let the_lock = "locktype = 'advisory' AND classid = 1835823976 AND objid = 2 AND objsubid = 1 AND granted";

    let (first, _d1) = replica(&url, dir.path());
    assert!(within(60, || status(first.addr).is_some_and(|s| s["indexer"] == true)), "the first replica indexes");
    assert!(
        within(120, || status(first.addr).is_some_and(|s| s["messages"].as_u64() >= Some(12_000))),
        "past the first checkpoint"
    );
    // Cut the lock's connection and hold the lock ourselves, so that no replica may index.
    let mut thief = psql(
        "lock-thief",
        &[
            "-c",
            &format!("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE {the_lock}"),
            "-c",
            "SELECT pg_advisory_lock(x'6d6c736800000002'::bigint)",
            "-c",
            "SELECT pg_sleep(600)",
        ],
    )
    .stdout(std::process::Stdio::null())
    .spawn()
    .expect("psql runs");
    let held_by_thief = || {
        query(&format!(
            "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid) \
             WHERE {the_lock} AND application_name = 'lock-thief'"
        )) == "1"
    };
    assert!(within(30, held_by_thief), "the lock is taken away");
    let stopped = || status(first.addr).is_some_and(|s| s["indexer"] == false && s["indexing"] == false);
    assert!(within(120, stopped), "the replica without the lock stops");
    let short = status(first.addr).expect("status")["messages"].as_u64().expect("messages");
    assert!(short < MESSAGES as u64, "it stopped before the end: {short} of {MESSAGES}");

    // Given back: a replica takes it, resumes from what was committed, and lists each message once.
    // Its session ends (a sleeping backend would not notice its client going away).
    query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'lock-thief'");
    let _ = thief.wait();
    let (second, _d2) = replica(&url, dir.path());
    let all = |addr| status(addr).is_some_and(|s| s["messages"] == MESSAGES && s["indexing"] == false);
    assert!(
        within(180, || all(first.addr) && all(second.addr)),
        "every message listed once on both: {:?} {:?}",
        status(first.addr),
        status(second.addr)
    );
    let (fresh, _d3) = replica(&url, dir.path());
    assert!(within(60, || status(fresh.addr).is_some_and(|s| s["messages"] == MESSAGES)), "and in the database");
    eprintln!("lock lost at {short} of {MESSAGES} messages listed; the run stopped and the next holder finished it");
}

/// What a balancer's health check relies on: `ready` means, on the indexer, that every path is
/// indexed, and on a replica that follows, that it has loaded what the database held when it
/// started (`ready_means` says which). Three sources; one follower started in the middle of the
/// indexer's first run, one right after it; every replica is polled all along, and none is ever
/// seen ready with fewer messages than that.
#[test]
fn replicas_are_ready_only_with_what_they_promise() {
    if !postgres::available("replicas_are_ready_only_with_what_they_promise") {
        return;
    }
    // Past a checkpoint (every 10,000 messages) before the run ends, in three sources.
    const PER_SOURCE: usize = 6_000;
    const TOTAL: u64 = 3 * PER_SOURCE as u64;
    let dir = tempfile::tempdir().expect("mount");
    for source in ["a", "b", "c"] {
        let mut mbox = String::with_capacity(PER_SOURCE * 200);
        for n in 0..PER_SOURCE {
            mbox.push_str(&format!(
                "From sender@ready.test Tue Nov 24 10:00:00 2026\nMessage-ID: <{source}{n}@ready.test>\n\
                 From: sender@ready.test\nSubject: {source} {n}\nDate: Tue, 24 Nov 2026 10:00:00 +0000\n\n\
                 body {n}\n\n"
            ));
        }
        std::fs::write(dir.path().join(format!("{source}.mbox")), mbox).expect("write");
    }
    let url = Cluster::shared().database();
    let committed = || {
        let out = std::process::Command::new(postgres::bin_dir().expect("PostgreSQL's programs").join("psql"))
            .args(["-X", "-q", "-tA", "-d", &url, "-c", "SELECT count(*) FROM listed"])
            .output()
            .expect("psql runs");
        String::from_utf8_lossy(&out.stdout).trim().parse::<u64>().unwrap_or(0)
    };

    /// A replica being polled: where, whether it is the first (the indexer), and what the
    /// database held when it was started.
    type Polled = (SocketAddr, bool, u64);
    let polled: Arc<Mutex<Vec<Polled>>> = Arc::default();
    let seen_ready: Arc<Mutex<BTreeMap<SocketAddr, String>>> = Arc::default();
    let broken: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (polled, seen_ready, broken, stop) =
            (Arc::clone(&polled), Arc::clone(&seen_ready), Arc::clone(&broken), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let replicas = polled.lock().expect("polled").clone();
                for (addr, first, before) in replicas {
                    let Some(s) = status(addr) else { continue };
                    if s["ready"] != true {
                        continue;
                    }
                    let messages = s["messages"].as_u64().unwrap_or(0);
                    let means = s["ready_means"].as_str().unwrap_or("").to_string();
                    let promised = if first { TOTAL } else { before };
                    if messages < promised {
                        broken
                            .lock()
                            .expect("broken")
                            .push(format!("{addr} (first: {first}) ready with {messages} of {promised} messages: {s}"));
                    }
                    seen_ready.lock().expect("seen").insert(addr, means);
                }
            }
        })
    };
    let start = |polled: &Mutex<Vec<Polled>>, first: bool| {
        let before = committed();
        let (served, data) = replica(&url, dir.path());
        polled.lock().expect("polled").push((served.addr, first, before));
        (served, data, before)
    };

    let (indexer, _d1, _) = start(&polled, true);
    assert!(within(120, || committed() >= 10_000), "the indexer commits a checkpoint");
    let mid_run = status(indexer.addr).expect("status");
    let (during, _d2, before_during) = start(&polled, false);
    let finished = || status(indexer.addr).is_some_and(|s| s["indexing"] == false && s["messages"] == TOTAL);
    assert!(within(180, finished), "the indexer finishes: {:?}", status(indexer.addr));
    let (after, _d3, before_after) = start(&polled, false);
    let addrs = [indexer.addr, during.addr, after.addr];
    let all_ready = || addrs.iter().all(|a| seen_ready.lock().expect("seen").contains_key(a));
    assert!(within(60, all_ready), "every replica becomes ready: {:?}", seen_ready.lock().expect("seen"));
    assert!(within(30, || addrs.iter().all(|&a| status(a).is_some_and(|s| s["messages"] == TOTAL))));
    stop.store(true, Ordering::Relaxed);
    poller.join().expect("poller");

    let broken = broken.lock().expect("broken");
    assert!(broken.is_empty(), "{} answers broke the promise, the first: {:?}", broken.len(), broken.first());
    let means = seen_ready.lock().expect("seen").clone();
    assert_eq!(means.get(&indexer.addr).map(String::as_str), Some("indexed"), "{means:?}");
    assert_eq!(means.get(&during.addr).map(String::as_str), Some("loaded"), "{means:?}");
    assert_eq!(means.get(&after.addr).map(String::as_str), Some("loaded"), "{means:?}");
    assert!(before_after == TOTAL && before_during >= 10_000, "{before_during} {before_after}");
    eprintln!(
        "followers started with {before_during} and {before_after} of {TOTAL} messages committed; \
         the indexer was at {} when the first one started",
        mid_run["messages"]
    );
}

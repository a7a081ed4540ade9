//! Slow and idle clients against the real binary on loopback: thousands of connections that
//! trickle header lines are closed once the header timeout has passed while ordinary requests are
//! still answered, the server never holds more connections than `--max-connections`, an idle
//! keep-alive connection is closed too, and a stop lets a request in flight finish.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::process::{self, Served};

/// The header timeout the server gets here.
const HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// How often a trickling client sends another header line.
const TRICKLE_EVERY: Duration = Duration::from_millis(250);

/// Each trickling test opens thousands of sockets; one at a time is enough for a small machine.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Raises this process's soft open-file limit towards `want` (as far as the hard limit allows; a
/// child started afterwards inherits it) and returns the limit in force.
fn raise_fd_limit(want: u64) -> u64 {
    rlimit::increase_nofile_limit(want).unwrap_or(1024)
}

/// `want` connections, or fewer when the open-file limit cannot be raised far enough: this process
/// holds one descriptor per connection, and keeps 512 spare for the rest of the test binary.
fn connections_for(want: usize) -> usize {
    let limit = usize::try_from(raise_fd_limit(want as u64 + 1024)).unwrap_or(usize::MAX);
    let n = want.min(limit.saturating_sub(512));
    assert!(n >= 100, "open-file limit {limit} leaves too few descriptors for this test");
    if n < want {
        println!("open-file limit {limit}: {n} connections instead of {want}");
    }
    n
}

/// Writes all of `buf` (tokio's `io-util` helpers are not among the features the crate uses).
async fn write_all(s: &tokio::net::TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        s.writable().await?;
        match s.try_write(buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One client that sends a request line and then a header line every [`TRICKLE_EVERY`], never
/// finishing its headers. Returns how long the connection lived before the server closed it, or
/// `None` if it was still open at `give_up`.
async fn trickle(addr: SocketAddr, give_up: Instant) -> std::io::Result<Option<Lived>> {
    // Timed from before the connect (the server's clock cannot start earlier) and from the
    // handshake's end (it cannot start much later: a handshake the full listen queue dropped is
    // retried after 1, 3, 7, 15 s, time the server never saw).
    let opened = Instant::now();
    let s = tokio::net::TcpStream::connect(addr).await?;
    let connected = Instant::now();
    let lived = || Lived { from_connect: opened.elapsed(), from_handshake: connected.elapsed() };
    write_all(&s, format!("GET /api/status HTTP/1.1\r\nHost: {addr}\r\n").as_bytes()).await?;
    let mut buf = [0u8; 512];
    let mut line = 0u32;
    let mut next_line = tokio::time::Instant::now() + TRICKLE_EVERY;
    loop {
        tokio::select! {
            ready = s.readable() => {
                let r = ready.and_then(|()| s.try_read(&mut buf));
                match r {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Ok(0) | Err(_) => return Ok(Some(lived())),
                    Ok(n) => return Err(std::io::Error::other(format!(
                        "after {:?}, an answer to a request whose headers never ended: {:?}",
                        opened.elapsed(),
                        String::from_utf8_lossy(&buf[..n])
                    ))),
                }
            }
            () = tokio::time::sleep_until(next_line) => {
                if Instant::now() >= give_up {
                    return Ok(None);
                }
                line += 1;
                next_line += TRICKLE_EVERY;
                if write_all(&s, format!("X-Trickle-{line}: {line}\r\n").as_bytes()).await.is_err() {
                    return Ok(Some(lived()));
                }
            }
        }
    }
}

/// How long a connection lived until the server closed it: from before the client's connect, and
/// from the end of its handshake.
#[derive(Clone, Copy)]
struct Lived {
    from_connect: Duration,
    from_handshake: Duration,
}

/// What happened while `n` clients trickled.
struct Run {
    /// How long each connection the server closed had lived.
    lifetimes: Vec<Lived>,
    /// Still open when the test gave up on them.
    still_open: usize,
    /// Could not connect, or got an answer.
    failed: Vec<String>,
    /// The most accepted connections the server held at once.
    max_open: usize,
    /// Ordinary requests made meanwhile: status (or error) and time taken.
    probes: Vec<(Result<u16, String>, Duration)>,
    took: Duration,
}

impl Run {
    /// The shortest, median and longest lifetimes, timed from before the connect.
    fn lifetime_range(&self) -> (Duration, Duration, Duration) {
        let mut l: Vec<Duration> = self.lifetimes.iter().map(|l| l.from_connect).collect();
        l.sort();
        let pick = |i: usize| l.get(i).copied().unwrap_or_default();
        (pick(0), pick(l.len() / 2), pick(l.len().saturating_sub(1)))
    }

    /// The longest lifetime timed from the end of the handshake: what the server can be held to.
    fn longest_from_handshake(&self) -> Duration {
        self.lifetimes.iter().map(|l| l.from_handshake).max().unwrap_or_default()
    }

    fn slowest_probe(&self) -> Duration {
        self.probes.iter().map(|p| p.1).max().unwrap_or_default()
    }
}

/// Runs `n` trickling clients against `server` while a second thread makes ordinary requests and a
/// third counts the server's open sockets.
async fn run_tricklers(server: &Served, n: usize) -> Run {
    let addr = server.addr;
    let pid = server.pid();
    let ready = process::get(addr, "/api/status").expect("status");
    assert_eq!(ready.status, 200);
    // The listener and the runtime's own sockets.
    let baseline = process::open_sockets(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let counter = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut max = 0;
            while !stop.load(Ordering::Relaxed) {
                max = max.max(process::open_sockets(pid).saturating_sub(baseline));
                std::thread::sleep(Duration::from_millis(20));
            }
            max
        })
    };
    let prober = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut probes = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = process::get(addr, "/api/status").map(|r| r.status).map_err(|e| e.to_string());
                probes.push((r, t.elapsed()));
                std::thread::sleep(Duration::from_millis(50));
            }
            probes
        })
    };

    let started = Instant::now();
    let give_up = started + Duration::from_secs(60);
    let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(trickle(addr, give_up))).collect();
    let mut run = Run {
        lifetimes: Vec::new(),
        still_open: 0,
        failed: Vec::new(),
        max_open: 0,
        probes: Vec::new(),
        took: Duration::ZERO,
    };
    for t in tasks {
        match t.await.expect("task") {
            Ok(Some(lived)) => run.lifetimes.push(lived),
            Ok(None) => run.still_open += 1,
            Err(e) => run.failed.push(e.to_string()),
        }
    }
    run.took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    run.max_open = counter.join().expect("counter");
    run.probes = prober.join().expect("prober");
    run
}

fn header_timeout_arg() -> String {
    HEADER_TIMEOUT.as_secs().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickling_clients_are_closed_after_the_header_timeout_while_others_are_served() {
    let _alone = HEAVY.lock().await;
    let n = connections_for(2500);
    // Room for every client: this test is about the timeout, the next one about the cap.
    let cap = (n + 100).to_string();
    let data = tempfile::tempdir().expect("dir");
    let server = Served::start(data.path(), &["--max-connections", &cap, "--header-timeout", &header_timeout_arg()]);
    let run = run_tricklers(&server, n).await;
    let (first, median, last) = run.lifetime_range();
    println!(
        "header timeout: {n} trickling connections, {} closed by the server after {first:.2?} to {last:.2?} \
         (median {median:.2?}; at most {:.2?} after the handshake), {} still open, at most {} open at once, {:.2?} in all; {} ordinary requests \
         meanwhile, slowest {:.2?}",
        run.lifetimes.len(),
        run.longest_from_handshake(),
        run.still_open,
        run.max_open,
        run.took,
        run.probes.len(),
        run.slowest_probe(),
    );
    assert!(run.failed.is_empty(), "{} failed, first: {:?}", run.failed.len(), run.failed.first());
    assert_eq!(run.lifetimes.len(), n, "every trickling connection was closed");
    // Never before the timeout (the server's clock starts after the client's); and not long after.
    assert!(first >= HEADER_TIMEOUT - Duration::from_millis(20), "closed early: {first:?}");
    let late = run.longest_from_handshake();
    assert!(late <= HEADER_TIMEOUT + Duration::from_secs(10), "closed late: {late:?} after the handshake");
    assert!(run.probes.len() >= 3, "ordinary requests ran meanwhile: {}", run.probes.len());
    for (r, took) in &run.probes {
        assert_eq!(r, &Ok(200), "an ordinary request meanwhile (after {took:?})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_connections_never_exceed_the_cap() {
    let _alone = HEAVY.lock().await;
    // Four times the cap, but no more than the listen queue (1024) holds before the server has
    // accepted any: beyond that the kernel drops handshakes, and clients' retries back off for
    // half a minute.
    let n = connections_for(1000);
    let cap = 250;
    let data = tempfile::tempdir().expect("dir");
    let server =
        Served::start(data.path(), &["--max-connections", &cap.to_string(), "--header-timeout", &header_timeout_arg()]);
    let run = run_tricklers(&server, n).await;
    let (first, median, last) = run.lifetime_range();
    println!(
        "cap {cap}: {n} trickling connections, {} closed after {first:.2?} to {last:.2?} (median {median:.2?}; \
         time queued included), \
         {} still open, at most {} open at once, {:.2?} in all; {} ordinary requests meanwhile, slowest {:.2?}",
        run.lifetimes.len(),
        run.still_open,
        run.max_open,
        run.took,
        run.probes.len(),
        run.slowest_probe(),
    );
    assert!(run.failed.is_empty(), "{} failed, first: {:?}", run.failed.len(), run.failed.first());
    assert!(run.max_open <= cap, "{} connections open at once, over the cap of {cap}", run.max_open);
    // The cap, not the clients, was what held the number down.
    assert!(run.max_open >= cap * 9 / 10, "the cap was never reached: at most {} open", run.max_open);
    assert_eq!(run.lifetimes.len(), n, "every trickling connection was served in turn and closed");
    assert!(first >= HEADER_TIMEOUT - Duration::from_millis(20), "closed early: {first:?}");
    assert!(!run.probes.is_empty());
    for (r, took) in &run.probes {
        // Queued behind the trickling clients, but answered once a slot freed.
        assert_eq!(r, &Ok(200), "an ordinary request meanwhile (after {took:?})");
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let data = tempfile::tempdir().expect("dir");
    let server = Served::start(data.path(), &["--header-timeout", &header_timeout_arg()]);
    let mut s = TcpStream::connect(server.addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(s, "GET /api/status HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).expect("sends");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let reply = loop {
        let got = s.read(&mut buf).expect("reads");
        assert!(got > 0, "closed before answering");
        raw.extend_from_slice(&buf[..got]);
        if let Ok(reply) = process::parse_reply(&raw, false) {
            break reply;
        }
    };
    let answered = Instant::now();
    assert_eq!(reply.status, 200);
    assert_ne!(reply.header("connection"), Some("close"), "kept alive");
    // Now idle: the server closes it once the timeout for the next request's headers has passed.
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let idle = answered.elapsed();
    assert!(rest.is_empty(), "nothing more was sent: {rest:?}");
    assert!(idle >= HEADER_TIMEOUT - Duration::from_millis(100), "closed after {idle:?}");
    assert!(idle < HEADER_TIMEOUT + Duration::from_secs(10), "closed after {idle:?}");
}

#[test]
fn a_stop_lets_the_request_in_flight_finish() {
    let data = tempfile::tempdir().expect("dir");
    let server = Served::start(data.path(), &[]);
    let addr = server.addr;
    let message = b"From: a@example.test\r\nTo: b@example.test\r\nSubject: in flight\r\n\
        Message-ID: <in-flight@example.test>\r\n\r\nSent while the server stops.\r\n";
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(
        s,
        "POST /api/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: message/rfc822\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        message.len()
    )
    .expect("sends");
    // The handler asks for the body: the request is in flight.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut byte).expect("reads"), 1, "closed early");
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 100"), "{}", String::from_utf8_lossy(&head));

    let stopped = std::thread::spawn(move || server.terminate());
    // Stopping starts with the listener closing.
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting connections after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
    s.write_all(message).expect("sends the body");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("reads the answer");
    let reply = process::parse_reply(&raw, false).expect("a whole answer");
    assert_eq!(reply.status, 201, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(reply.header("connection"), Some("close"));
    let status = stopped.join().expect("terminate");
    assert!(status.success(), "clean exit: {status}");

    // And it was stored: the next start lists it.
    let again = Served::start(data.path(), &[]);
    let list = process::get(again.addr, "/api/messages").expect("list").json();
    assert_eq!(list["total"], 1, "{list}");
}

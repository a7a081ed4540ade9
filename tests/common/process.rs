//! A real mailshelf process on a free loopback port, and a plain HTTP/1.1 client over
//! `std::net::TcpStream` to talk to it, for tests about sockets, limits and crashes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// A running `mailshelf serve`; killed when dropped.
pub struct Served {
    child: Child,
    pub addr: SocketAddr,
}

impl Served {
    /// Starts `mailshelf serve --listen 127.0.0.1:0 --data-dir DATA ARGS...` and returns once it has
    /// printed the address it listens on.
    pub fn start(data_dir: &Path, args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mailshelf"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mailshelf starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("first line");
        let addr = line
            .trim()
            .strip_prefix("mailshelf serving on http://")
            .or_else(|| line.trim().strip_prefix("mailshelf serving on https://"))
            .and_then(|s| s.trim_end_matches('/').parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Served { child, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and wait until the process is gone (its data folder is free again).
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// SIGTERM, and the exit status once it has stopped.
    pub fn terminate(mut self) -> ExitStatus {
        // Our own child, not yet reaped, so the pid is still its.
        let sent = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(sent.expect("kill runs").success(), "SIGTERM");
        self.child.wait().expect("exits")
    }
}

/// Sockets process `pid` holds open (listener included), from `/proc/<pid>/fd`.
pub fn open_sockets(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    dir.flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.as_os_str().as_encoded_bytes().starts_with(b"socket:"))
        })
        .count()
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response, whole.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// One request on a fresh connection (`Connection: close`), read to the end. Any I/O failure,
/// including a connection closed before the response was complete, is an `Err`.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpReply> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.set_write_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    s.write_all(&out)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_reply(&raw, method == "HEAD")
}

pub fn get(addr: SocketAddr, path: &str) -> std::io::Result<HttpReply> {
    request(addr, "GET", path, &[], b"")
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what.to_string())
}

/// Reads a complete response; a short one (the server died mid-answer) is an error.
pub fn parse_reply(raw: &[u8], head_only: bool) -> std::io::Result<HttpReply> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| bad("incomplete head"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad("head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status line"))?;
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect();
    let mut reply = HttpReply { status, headers, body: Vec::new() };
    let rest = &raw[end + 4..];
    if head_only {
        return Ok(reply);
    }
    if reply.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        reply.body = dechunk(rest)?;
    } else if let Some(len) = reply.header("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad Content-Length"))?;
        if rest.len() < len {
            return Err(bad("short body"));
        }
        reply.body = rest[..len].to_vec();
    } else {
        reply.body = rest.to_vec();
    }
    Ok(reply)
}

fn dechunk(mut rest: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n").ok_or_else(|| bad("short chunk"))?;
        let size = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok());
        let size = size.ok_or_else(|| bad("bad chunk size"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err(bad("short chunk"));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

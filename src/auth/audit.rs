//! The audit log (`--audit-log FILE`, or `-` for standard output): one JSON object a line for
//! every sign-in (and failed one) and sign-out, every message, conversation or part read, raw
//! download, search, export, print view and PDF, with `time` (RFC 3339, UTC), `user`, `action`,
//! `id` (the message id; the query of a search or an export), `address` (the client's) and
//! `status` (the HTTP status answered).
//!
//! The file is opened for appending only, once, at start: one that cannot be opened stops the
//! server. A line that cannot be written later is an error for the request it records (which is
//! then answered 500 instead of its content): reading is never left unrecorded. Each line is one
//! `write` of a whole line under a lock, so lines from requests at the same time never mix.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

use crate::error::Error;

/// One line of the log.
#[derive(Debug, Serialize)]
pub struct Event<'a> {
    pub time: String,
    /// The reader's name (`-` on a server without accounts).
    pub user: &'a str,
    pub action: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
    pub status: u16,
}

impl<'a> Event<'a> {
    /// An event happening now.
    pub fn now(user: &'a str, action: &'a str, id: Option<&'a str>, address: Option<IpAddr>, status: u16) -> Event<'a> {
        Event { time: crate::dates::rfc3339(super::now(), 0), user, action, id, address, status }
    }
}

/// Where the lines go.
pub struct Audit {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Audit")
    }
}

impl Audit {
    /// Opens `target` for appending (`-`: standard output); a start-up error when it cannot be.
    pub fn open(target: &str) -> Result<Audit, Error> {
        let out: Box<dyn Write + Send> = if target == "-" {
            Box::new(std::io::stdout())
        } else {
            let path = Path::new(target);
            let file = OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .map_err(|e| Error::BadSetting(format!("--audit-log {target}: {e}")))?;
            Box::new(file)
        };
        Ok(Audit { out: Mutex::new(out) })
    }

    /// A log written to `out` (tests read what it got).
    pub fn to_writer(out: Box<dyn Write + Send>) -> Audit {
        Audit { out: Mutex::new(out) }
    }

    /// Writes one line; an error when it could not be written whole.
    pub fn record(&self, event: &Event<'_>) -> Result<(), Error> {
        let mut line = serde_json::to_vec(event).map_err(|e| Error::internal("audit log line", e))?;
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        out.write_all(&line).and_then(|()| out.flush()).map_err(|e| {
            tracing::error!(error = %e, "the audit log cannot be written");
            Error::Io(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_log_that_cannot_be_opened_is_a_start_up_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/folder/audit.jsonl");
        assert!(matches!(Audit::open(&missing.to_string_lossy()), Err(Error::BadSetting(_))));
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"earlier\":1}\n").unwrap();
        let audit = Audit::open(&path.to_string_lossy()).unwrap();
        audit.record(&Event::now("ann", "read", Some("a@x"), Some("192.0.2.1".parse().unwrap()), 200)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "{\"earlier\":1}", "appended, never truncated");
        let line: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(
            (line["user"].as_str(), line["action"].as_str(), line["id"].as_str()),
            (Some("ann"), Some("read"), Some("a@x"))
        );
        assert_eq!(line["address"], "192.0.2.1");
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
    }
}

//! `parse_ceiling <Maildir-or-mbox-path>...`
//!
//! The ceiling for indexing speed: read every message, parse it with mail-parser and touch the
//! decoded contents of every part (nested message/rfc822 parts included). Single-threaded, like
//! mailshelf's indexer. Reading time is counted. Prints one JSON line:
//! {"messages":N,"bytes":B,"seconds":S,"msgs_per_s":..,"mb_per_s":..}
//!
//! A directory is walked recursively (hidden entries and Maildir `tmp/` skipped; every regular file
//! is one message). A file starting with `From ` is an mbox, split at `From ` lines that start the
//! file or follow an empty line, with mboxrd `>From ` un-escaping. Any other file is one message.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mail_parser::{Message, MessageParser, PartType};

#[derive(Default)]
struct Totals {
    messages: u64,
    failed: u64,
    bytes: u64,
    /// Sum of decoded lengths; printed so the work cannot be optimised away.
    touched: u64,
}

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: parse_ceiling <Maildir-or-mbox-path>...");
        std::process::exit(2);
    }
    let parser = MessageParser::default();
    let mut t = Totals::default();
    let started = Instant::now();
    for path in &args {
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files);
            files.sort();
            for f in files {
                match std::fs::read(&f) {
                    Ok(data) => one(&parser, &data, &mut t),
                    Err(e) => {
                        eprintln!("parse_ceiling: {}: {e}", f.display());
                        t.failed += 1;
                    }
                }
            }
        } else {
            let data = match std::fs::read(path) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("parse_ceiling: {}: {e}", path.display());
                    std::process::exit(1);
                }
            };
            if data.starts_with(b"From ") {
                for (start, end) in split_mbox(&data) {
                    let msg = &data[start..end];
                    if needs_unescape(msg) {
                        let owned = unescape(msg);
                        one(&parser, &owned, &mut t);
                    } else {
                        one(&parser, msg, &mut t);
                    }
                }
            } else {
                one(&parser, &data, &mut t);
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{{\"messages\":{},\"bytes\":{},\"seconds\":{:.3},\"msgs_per_s\":{:.1},\"mb_per_s\":{:.2},\"failed\":{},\"decoded_bytes\":{}}}",
        t.messages,
        t.bytes,
        secs,
        t.messages as f64 / secs,
        t.bytes as f64 / 1e6 / secs,
        t.failed,
        t.touched
    );
}

fn one(parser: &MessageParser, raw: &[u8], t: &mut Totals) {
    t.messages += 1;
    t.bytes += raw.len() as u64;
    match parser.parse(raw) {
        Some(m) => t.touched += touch(&m),
        None => t.failed += 1,
    }
}

/// Decoded length of every part, nested messages included, plus the main header values.
fn touch(m: &Message) -> u64 {
    let mut n = 0u64;
    n += m.subject().map_or(0, |s| s.len() as u64);
    n += m.message_id().map_or(0, |s| s.len() as u64);
    n += m.date().map_or(0, |d| d.to_timestamp() as u64 & 1);
    n += m.from().and_then(|a| a.first()).and_then(|a| a.address()).map_or(0, |s| s.len() as u64);
    for part in &m.parts {
        n += match &part.body {
            PartType::Text(s) | PartType::Html(s) => s.len() as u64,
            PartType::Binary(b) | PartType::InlineBinary(b) => b.len() as u64,
            PartType::Message(inner) => touch(inner),
            PartType::Multipart(ids) => ids.len() as u64,
        };
    }
    n
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            if name != "tmp" {
                walk(&e.path(), out);
            }
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

/// Message byte ranges of an mbox: separators are `From ` lines at the start or after an empty
/// line; the separator line and the empty line before the next one are excluded.
fn split_mbox(data: &[u8]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start: Option<usize> = None;
    let mut pos = 0usize;
    let mut prev_blank = true;
    while pos < data.len() {
        let end = memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i + 1);
        let line = &data[pos..end];
        if prev_blank && line.starts_with(b"From ") {
            if let Some(s) = start {
                ranges.push((s, trim_blank(data, s, pos)));
            }
            start = Some(end);
            prev_blank = false;
        } else {
            prev_blank = line == b"\n" || line == b"\r\n";
        }
        pos = end;
    }
    if let Some(s) = start {
        ranges.push((s, trim_blank(data, s, data.len())));
    }
    ranges.retain(|(s, e)| e > s);
    ranges
}

fn trim_blank(data: &[u8], start: usize, mut end: usize) -> usize {
    if end > start && data[end - 1] == b'\n' {
        end -= 1;
        if end > start && data[end - 1] == b'\r' {
            end -= 1;
        }
    }
    end
}

fn memchr(c: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&b| b == c)
}

fn needs_unescape(msg: &[u8]) -> bool {
    msg.starts_with(b">From ") || msg.windows(2).any(|w| w == b"\n>")
}

/// mboxrd: one `>` removed from every line matching `^>+From `.
fn unescape(msg: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len());
    for line in msg.split_inclusive(|&c| c == b'\n') {
        let gts = line.iter().take_while(|&&c| c == b'>').count();
        if gts > 0 && line[gts..].starts_with(b"From ") {
            out.extend_from_slice(&line[1..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

//! mbox files: split into messages a message at a time (mboxrd and the Content-Length variant),
//! and `>From ` lines un-escaped when a message is read back.

use std::io::{BufRead, ErrorKind, Read};

/// One message of an mbox: where it lies in the file (the `From ` line excluded) and its bytes as
/// they are there (still `>From `-escaped).
#[derive(Debug, Clone)]
pub struct MboxMessage {
    pub offset: u64,
    pub len: u64,
    pub raw: Vec<u8>,
}

/// Streams an mbox a message at a time, so an mbox of any size is read with the memory of one
/// message. A separator is a line starting with `From ` at the start, after an empty line, or
/// followed by a header field. When a
/// message declares a Content-Length that lands exactly on the next separator (or the end), it is
/// trusted (the Content-Length variant), so unescaped `From ` lines inside such bodies stay inside.
pub struct MboxReader<R: Read> {
    reader: Ahead<R>,
    /// Offset in the file of the next byte to read.
    pos: u64,
    /// True once the `From ` line of the next message has been consumed.
    at_message: bool,
    done: bool,
}

/// What a message's buffer starts with: most mail is a few kilobytes.
const MESSAGE_ROOM: usize = 16 * 1024;

/// How far ahead a `From ` line is judged: a header field's name, or the blank lines and the
/// `From ` after a Content-Length body, fit well within a line's 998 bytes (RFC 5322).
const LOOKAHEAD: usize = 1024;

/// The reader's buffer when none is chosen.
const BUFFER: usize = 64 * 1024;

impl<R: Read> MboxReader<R> {
    /// `start` is the file offset `reader` begins at (for reading an appended tail).
    pub fn new(reader: R, start: u64) -> Self {
        Self::with_capacity(BUFFER, reader, start)
    }

    /// As [`MboxReader::new`], reading `capacity` bytes at a time.
    pub fn with_capacity(capacity: usize, reader: R, start: u64) -> Self {
        MboxReader { reader: Ahead::new(reader, capacity), pos: start, at_message: false, done: false }
    }

    fn read_line(&mut self, line: &mut Vec<u8>) -> std::io::Result<usize> {
        line.clear();
        let n = self.reader.read_until(b'\n', line)?;
        self.pos += n as u64;
        Ok(n)
    }

    /// Whether the next line reads as a header field: a `From ` line right after a non-blank line is
    /// a separator only when a message's headers follow it (writers that do not leave a blank line).
    fn header_follows(&mut self) -> std::io::Result<bool> {
        let ends_name = |c: &u8| *c == b':' || !(33..=126).contains(c);
        let (ahead, _) = self.reader.peek(|ahead| ahead.iter().any(ends_name))?;
        Ok(matches!(ahead.iter().position(ends_name), Some(at) if at > 0 && ahead[at] == b':'))
    }

    /// After a trusted Content-Length: is the next thing a separator (or the end)?
    fn separator_follows(&mut self) -> std::io::Result<bool> {
        let text_at = |ahead: &[u8]| ahead.iter().position(|&c| !matches!(c, b'\r' | b'\n'));
        let (ahead, at_end) = self.reader.peek(|ahead| text_at(ahead).is_some_and(|at| ahead.len() >= at + 5))?;
        Ok(match text_at(ahead) {
            Some(at) => ahead[at..].starts_with(b"From "),
            None => at_end && ahead.len() < 3,
        })
    }

    fn next_message(&mut self) -> std::io::Result<Option<MboxMessage>> {
        let mut line_buf = Vec::new();
        // Find the first separator.
        while !self.at_message {
            if self.read_line(&mut line_buf)? == 0 {
                self.done = true;
                return Ok(None);
            }
            let line = line_buf.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line_buf);
            self.at_message = line.starts_with(b"From ");
        }
        let offset = self.pos;
        // Room for most of a message at once: grown a line at a time from nothing, it was copied
        // into a buffer twice its size a dozen times over.
        let mut raw = Vec::with_capacity(MESSAGE_ROOM);
        let mut prev_blank = false;
        let mut in_headers = true;
        let mut content_length: Option<u64> = None;
        loop {
            // Each line is read straight onto the message and taken back off if it ends it.
            let start = raw.len();
            let n = self.reader.read_until(b'\n', &mut raw)?;
            self.pos += n as u64;
            if n == 0 {
                self.done = true;
                break;
            }
            if raw[start..].starts_with(b"From ") && (prev_blank || self.header_follows()?) {
                raw.truncate(start);
                // The blank line before a separator belongs to the format, not the message.
                strip_one_newline(&mut raw);
                break;
            }
            let line = &raw[start..];
            let blank = matches!(line, b"\n" | b"\r\n");
            if in_headers {
                if blank {
                    in_headers = false;
                    if let Some(cl) = content_length {
                        let got = (&mut self.reader).take(cl).read_to_end(&mut raw)?;
                        self.pos += got as u64;
                        if got as u64 == cl && self.separator_follows()? {
                            // Exact: skip the blank lines up to the next `From ` line.
                            loop {
                                if self.read_line(&mut line_buf)? == 0 {
                                    self.done = true;
                                    break;
                                }
                                if line_buf.starts_with(b"From ") {
                                    break;
                                }
                            }
                            let len = raw.len() as u64;
                            return Ok(Some(MboxMessage { offset, len, raw }));
                        }
                        prev_blank = raw.ends_with(b"\n\n") || raw.ends_with(b"\r\n\r\n");
                        continue;
                    }
                } else if line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
                    content_length = std::str::from_utf8(&line[15..]).ok().and_then(|v| v.trim().parse().ok());
                }
            }
            prev_blank = blank;
        }
        let len = raw.len() as u64;
        if raw.is_empty() && self.done {
            return Ok(None);
        }
        Ok(Some(MboxMessage { offset, len, raw }))
    }
}

/// A buffered reader that can look further ahead than the rest of its buffer: a `From ` line is
/// judged by what follows it, which `BufReader::fill_buf` may hold only the start of, when its
/// buffer happens to end there.
struct Ahead<R> {
    inner: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
}

impl<R: Read> Ahead<R> {
    fn new(inner: R, capacity: usize) -> Self {
        Ahead { inner, buf: vec![0; capacity.max(1)], pos: 0, end: 0 }
    }

    /// The bytes ahead, read on until `enough` says they are, or [`LOOKAHEAD`] bytes are held, or
    /// the input ends (then the flag is true); never more than [`LOOKAHEAD`] bytes, so that what
    /// is judged from them does not depend on how much the buffer happens to hold. Nothing is
    /// consumed.
    fn peek(&mut self, enough: impl Fn(&[u8]) -> bool) -> std::io::Result<(&[u8], bool)> {
        loop {
            let window = self.pos..self.end.min(self.pos + LOOKAHEAD);
            if window.len() == LOOKAHEAD || enough(&self.buf[window.clone()]) {
                return Ok((&self.buf[window], false));
            }
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            if self.end == self.buf.len() {
                // Only a buffer smaller than the lookahead grows.
                self.buf.resize(LOOKAHEAD, 0);
            }
            let n = read_more(&mut self.inner, &mut self.buf[self.end..])?;
            if n == 0 {
                return Ok((&self.buf[self.pos..self.end], true));
            }
            self.end += n;
        }
    }
}

/// `Read::read`, asked again when a signal interrupted it.
fn read_more(inner: &mut impl Read, into: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match inner.read(into) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // A reader that claims more than it was given room for is not believed.
            read => return read.map(|n| n.min(into.len())),
        }
    }
}

impl<R: Read> Read for Ahead<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let held = self.fill_buf()?;
        let n = held.len().min(out.len());
        out[..n].copy_from_slice(&held[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Ahead<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos == self.end {
            self.pos = 0;
            self.end = read_more(&mut self.inner, &mut self.buf)?;
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }

    /// As the provided method, with the `memchr` crate's search for the line's end (a message is
    /// read a line at a time, and std's own search is a plain one).
    fn read_until(&mut self, byte: u8, out: &mut Vec<u8>) -> std::io::Result<usize> {
        let mut read = 0;
        loop {
            let held = self.fill_buf()?;
            if held.is_empty() {
                return Ok(read);
            }
            let (found, used) = match memchr::memchr(byte, held) {
                Some(at) => (true, at + 1),
                None => (false, held.len()),
            };
            out.extend_from_slice(&held[..used]);
            self.consume(used);
            read += used;
            if found {
                return Ok(read);
            }
        }
    }
}

fn strip_one_newline(raw: &mut Vec<u8>) {
    if raw.ends_with(b"\n") {
        raw.pop();
        if raw.ends_with(b"\r") {
            raw.pop();
        }
    }
}

impl<R: Read> Iterator for MboxReader<R> {
    type Item = std::io::Result<MboxMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.next_message().transpose()
    }
}

/// Message ranges of an mbox held in memory.
pub fn split_mbox(data: &[u8]) -> Vec<(u64, u64)> {
    MboxReader::new(data, 0).filter_map(Result::ok).filter(|m| m.len > 0).map(|m| (m.offset, m.len)).collect()
}

/// mboxrd: one `>` is removed from every line matching `^>+From `.
pub fn unescape_from_lines(buf: Vec<u8>) -> Vec<u8> {
    let needs = buf.starts_with(b">From ")
        || memchr::memmem::find_iter(&buf, b"\n>").any(|at| matches!(buf.get(at + 2), Some(b'F' | b'>')));
    if !needs {
        return buf;
    }
    let mut out = Vec::with_capacity(buf.len());
    for line in buf.split_inclusive(|&c| c == b'\n') {
        let gts = line.iter().take_while(|&&c| c == b'>').count();
        if gts > 0 && line[gts..].starts_with(b"From ") {
            out.extend_from_slice(&line[1..]);
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mbox_split_and_unescape() {
        let mbox = b"From a Mon Jan 1 00:00:00 2024\nSubject: one\n\nhello\n>From the start\n\nFrom b Mon Jan 1 00:00:00 2024\nSubject: two\n\nbye\n";
        let ranges = split_mbox(mbox);
        assert_eq!(ranges.len(), 2);
        let (o, l) = ranges[0];
        let first = unescape_from_lines(mbox[o as usize..(o + l) as usize].to_vec());
        assert_eq!(first, b"Subject: one\n\nhello\nFrom the start\n");
        let (o, l) = ranges[1];
        assert_eq!(&mbox[o as usize..(o + l) as usize], b"Subject: two\n\nbye\n");
    }

    #[test]
    fn mbox_content_length_keeps_unescaped_from_lines() {
        let body = "x\n\nFrom inside\n";
        let mbox = format!(
            "From a Mon Jan 1 00:00:00 2024\nContent-Length: {}\n\n{body}\nFrom b Mon Jan 1 00:00:00 2024\nSubject: 2\n\nb\n",
            body.len()
        );
        assert_eq!(split_mbox(mbox.as_bytes()).len(), 2);
    }

    /// A reader that hands over one byte at a time, however much is asked for.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else { return Ok(0) };
            let Some(slot) = out.first_mut() else { return Ok(0) };
            *slot = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    /// Where a message ends does not depend on where the reader's buffer does, nor on how much
    /// each read returns: the line after a `From ` line is judged whole.
    #[test]
    fn messages_end_at_separators_whatever_the_buffer_size() {
        let long = "y".repeat(300);
        let fenced = "x\n\nFrom inside a counted body\n";
        let mbox = format!(
            "From a Mon\r\nSubject: 1\r\n\r\nbody\r\nFrom here on, a line of text\r\n{long}\r\n\r\n\
From b Mon\nSubject: 2\n\ntext\nFrom c, not after a blank line\n>From escaped\n\nFrom d Mon\nSubject: 3\n\n\
last\nFrom\nFrom e Mon\nX-A-Rather-Long-Header-Field-Name: 4\n\nno blank line before\n\
From f Mon\nContent-Length: {}\n\n{fenced}\nFrom g Mon\nContent-Length: 2\n\nok\n",
            fenced.len()
        );
        let want: &[&str] = &[
            &format!("Subject: 1\r\n\r\nbody\r\nFrom here on, a line of text\r\n{long}\r\n"),
            "Subject: 2\n\ntext\nFrom c, not after a blank line\n>From escaped\n",
            "Subject: 3\n\nlast\nFrom",
            "X-A-Rather-Long-Header-Field-Name: 4\n\nno blank line before",
            &format!("Content-Length: {}\n\n{fenced}", fenced.len()),
            "Content-Length: 2\n\nok",
        ];
        let read = |messages: MboxReader<&mut dyn Read>| -> Vec<String> {
            messages.map(|m| String::from_utf8(m.expect("reads").raw).expect("text")).collect()
        };
        for cap in [1, 2, 5, 16, 64, 8192] {
            let mut whole = mbox.as_bytes();
            assert_eq!(read(MboxReader::with_capacity(cap, &mut whole, 0)), want, "buffer of {cap}");
            let mut trickle = Trickle(mbox.as_bytes());
            assert_eq!(
                read(MboxReader::with_capacity(cap, &mut trickle, 0)),
                want,
                "a byte at a time, buffer of {cap}"
            );
        }
    }
}

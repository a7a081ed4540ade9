//! mbox files: split into messages a message at a time (mboxrd and the Content-Length variant),
//! and `>From ` lines un-escaped when a message is read back.

use std::io::{BufRead, Read};

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
pub struct MboxReader<R: BufRead> {
    reader: R,
    /// Offset in the file of the next byte to read.
    pos: u64,
    /// True once the `From ` line of the next message has been consumed.
    at_message: bool,
    done: bool,
}

/// What a message's buffer starts with: most mail is a few kilobytes.
const MESSAGE_ROOM: usize = 16 * 1024;

impl<R: BufRead> MboxReader<R> {
    /// `start` is the file offset `reader` begins at (for reading an appended tail).
    pub fn new(reader: R, start: u64) -> Self {
        MboxReader { reader, pos: start, at_message: false, done: false }
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
        let buf = self.reader.fill_buf()?;
        let line = buf.split(|&c| c == b'\n').next().unwrap_or(&[]);
        let Some(colon) = line.iter().position(|&c| c == b':') else { return Ok(false) };
        Ok(colon > 0 && line[..colon].iter().all(|&c| (33..=126).contains(&c)))
    }

    /// After a trusted Content-Length: is the next thing a separator (or the end)?
    fn separator_follows(&mut self) -> std::io::Result<bool> {
        let buf = self.reader.fill_buf()?;
        let trimmed = buf.iter().position(|&c| !matches!(c, b'\r' | b'\n')).map_or(&buf[buf.len()..], |p| &buf[p..]);
        Ok(buf.is_empty() || trimmed.starts_with(b"From ") || (trimmed.is_empty() && buf.len() < 3))
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

fn strip_one_newline(raw: &mut Vec<u8>) {
    if raw.ends_with(b"\n") {
        raw.pop();
        if raw.ends_with(b"\r") {
            raw.pop();
        }
    }
}

impl<R: BufRead> Iterator for MboxReader<R> {
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

    /// Where a message ends does not depend on where the reader's buffer does.
    #[test]
    fn messages_end_at_separators_whatever_the_buffer_size() {
        let long = "y".repeat(300);
        let mbox = format!(
            "From a Mon\r\nSubject: 1\r\n\r\nbody\r\nFrom here on, a line of text\r\n{long}\r\n\r\n\
From b Mon\nSubject: 2\n\ntext\nFrom c, not after a blank line\n>From escaped\n\nFrom d Mon\nSubject: 3\n\n\
last\nFrom\n"
        );
        let want: &[&str] = &[
            &format!("Subject: 1\r\n\r\nbody\r\nFrom here on, a line of text\r\n{long}\r\n"),
            "Subject: 2\n\ntext\nFrom c, not after a blank line\n>From escaped\n",
            "Subject: 3\n\nlast\nFrom\n",
        ];
        for cap in [1, 2, 5, 16, 64, 8192] {
            let got: Vec<String> = MboxReader::new(std::io::BufReader::with_capacity(cap, mbox.as_bytes()), 0)
                .map(|m| String::from_utf8(m.expect("reads").raw).expect("text"))
                .collect();
            assert_eq!(got, want, "buffer of {cap}");
        }
    }
}

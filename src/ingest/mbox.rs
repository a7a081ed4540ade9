//! mbox files: split into messages a message at a time (mboxrd and the Content-Length variant),
//! and `>From ` lines un-escaped when a message is read back.

use std::io::{BufRead, ErrorKind, Read, Seek, SeekFrom};

/// One message of an mbox: where it lies in the file (the `From ` line excluded) and its bytes as
/// they are there (still `>From `-escaped): all of them, or the first ones of a message longer
/// than the reader's limit (see [`MboxMessage::is_cut`]).
#[derive(Debug, Clone)]
pub struct MboxMessage {
    pub offset: u64,
    pub len: u64,
    pub raw: Vec<u8>,
}

impl MboxMessage {
    /// Whether the message was longer than the reader keeps: `raw` is then its first bytes.
    pub fn is_cut(&self) -> bool {
        (self.raw.len() as u64) < self.len
    }
}

/// Streams an mbox a message at a time, so an mbox of any size is read with the memory of one
/// message, and a message of any size with at most its first [`MboxReader::limit`] bytes (the
/// rest is read past, and where it ends is still found). A separator is a line starting with
/// `From ` at the start, after an empty line, or followed by a header field. When a message
/// declares a Content-Length that lands exactly on the next separator (or the end), it is trusted
/// (the Content-Length variant), so unescaped `From ` lines inside such bodies stay inside; where it
/// lands is looked at before the body is read, and a body whose length does not land is read by
/// the line rules.
pub struct MboxReader<R: Read + Seek> {
    reader: Ahead<R>,
    /// Offset in the file of the next byte to read.
    pos: u64,
    /// True once the `From ` line of the next message has been consumed.
    at_message: bool,
    done: bool,
    /// Bytes kept of one message.
    limit: usize,
}

/// What a message's buffer starts with: most mail is a few kilobytes.
const MESSAGE_ROOM: usize = 16 * 1024;

/// How far ahead a `From ` line is judged, and how much of a line is looked at when it is not
/// kept: a header field's name, or the blank lines and the `From ` after a Content-Length body,
/// fit well within a line's 998 bytes (RFC 5322).
const LOOKAHEAD: usize = 1024;

/// The reader's buffer when none is chosen.
const BUFFER: usize = 64 * 1024;

impl<R: Read + Seek> MboxReader<R> {
    /// `start` is the file offset `reader` begins at (for reading an appended tail).
    pub fn new(reader: R, start: u64) -> Self {
        Self::with_capacity(BUFFER, reader, start)
    }

    /// As [`MboxReader::new`], reading `capacity` bytes at a time.
    pub fn with_capacity(capacity: usize, reader: R, start: u64) -> Self {
        MboxReader {
            reader: Ahead::new(reader, capacity),
            pos: start,
            at_message: false,
            done: false,
            limit: crate::limits::DEFAULT_MAX_MESSAGE,
        }
    }

    /// The same reader, keeping at most `bytes` of each message
    /// ([`crate::limits::DEFAULT_MAX_MESSAGE`] unless told).
    pub fn limit(self, bytes: usize) -> Self {
        MboxReader { limit: bytes, ..self }
    }

    /// Whether the next line reads as a header field: a `From ` line right after a non-blank line is
    /// a separator only when a message's headers follow it (writers that do not leave a blank line).
    fn header_follows(&mut self) -> std::io::Result<bool> {
        let ends_name = |c: &u8| *c == b':' || !(33..=126).contains(c);
        let (ahead, _) = self.reader.peek(|ahead| ahead.iter().any(ends_name))?;
        Ok(matches!(ahead.iter().position(ends_name), Some(at) if at > 0 && ahead[at] == b':'))
    }

    /// Whether a body of `n` bytes from here ends where a separator (or the end) follows: then
    /// its Content-Length is trusted. Told without reading the body. (Kept out of the line loop,
    /// which it would otherwise weigh on.)
    #[inline(never)]
    fn lands_on_separator(&mut self, n: u64) -> std::io::Result<bool> {
        let text_at = |ahead: &[u8]| ahead.iter().position(|&c| !matches!(c, b'\r' | b'\n'));
        self.reader.judge_at(
            n,
            |ahead| text_at(ahead).is_some_and(|at| ahead.len() >= at + 5),
            |ahead, at_end| match text_at(ahead) {
                Some(at) => ahead[at..].starts_with(b"From "),
                None => at_end && ahead.len() < 3,
            },
        )
    }

    /// The next line's first bytes (at most [`LOOKAHEAD`]) in `head`, nothing consumed.
    #[cold]
    fn line_start(&mut self, head: &mut Vec<u8>) -> std::io::Result<()> {
        head.clear();
        let (ahead, _) = self.reader.peek(|ahead| memchr::memchr(b'\n', ahead).is_some())?;
        head.extend_from_slice(&ahead[..memchr::memchr(b'\n', ahead).map_or(ahead.len(), |at| at + 1)]);
        Ok(())
    }

    /// The next line's first bytes (at most [`LOOKAHEAD`]) in `head`, the line read past.
    fn skip_line(&mut self, head: &mut Vec<u8>) -> std::io::Result<usize> {
        head.clear();
        let (n, _) = self.reader.read_line_into(head, LOOKAHEAD)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn next_message(&mut self) -> std::io::Result<Option<MboxMessage>> {
        let mut head = Vec::new();
        // Find the first separator.
        while !self.at_message {
            if self.skip_line(&mut head)? == 0 {
                self.done = true;
                return Ok(None);
            }
            let line = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
            self.at_message = line.starts_with(b"From ");
        }
        let offset = self.pos;
        // Room for most of a message at once: grown a line at a time from nothing, it was copied
        // into a buffer twice its size a dozen times over.
        let mut raw = Vec::with_capacity(MESSAGE_ROOM.min(self.limit));
        // The message's length in the file; `raw` holds the first `limit` bytes of it.
        let mut len = 0u64;
        let mut prev_blank = false;
        // How many bytes ended the last line (`\n`, `\r\n`): a separator takes them off the message.
        let mut last_newline = 0u64;
        let mut in_headers = true;
        let mut content_length: Option<u64> = None;
        loop {
            // Each line is read straight onto the message (and taken back off if it ends it).
            // Near the limit it may not all fit: its first bytes are then judged from a copy.
            let start = raw.len();
            let room = self.limit.saturating_sub(start);
            let near = room < LOOKAHEAD;
            if near {
                self.line_start(&mut head)?;
            }
            let (n, newline) = self.reader.read_line_into(&mut raw, room)?;
            self.pos += n as u64;
            if n == 0 {
                self.done = true;
                // A blank line at the end of the file is the separator after the last message, as
                // before every `From ` line (mbox writers end each message with one).
                if prev_blank {
                    len -= last_newline.min(len);
                }
                break;
            }
            len += n as u64;
            let line: &[u8] = if near { &head } else { &raw[start..] };
            let blank = matches!(line, b"\n" | b"\r\n");
            let from = line.starts_with(b"From ");
            if in_headers && !from && !blank && line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
                let value = &line[15..line.len().min(LOOKAHEAD)];
                content_length = std::str::from_utf8(value).ok().and_then(|v| v.trim().parse().ok());
            }
            if from && (prev_blank || self.header_follows()?) {
                // The newline before a separator belongs to the format, not the message.
                len -= n as u64;
                len -= last_newline.min(len);
                break;
            }
            if in_headers && blank {
                in_headers = false;
                // A Content-Length that does not land on a separator is not trusted: the body is
                // read by the line rules.
                let trusted = match content_length {
                    Some(cl) => self.lands_on_separator(cl)?.then_some(cl),
                    None => None,
                };
                if let Some(cl) = trusted {
                    let keep = cl.min(self.limit.saturating_sub(raw.len()) as u64);
                    let kept = (&mut self.reader).take(keep).read_to_end(&mut raw)? as u64;
                    let got = if kept == keep { kept + self.reader.skip(cl - kept)? } else { kept };
                    self.pos += got;
                    len += got;
                    // Skip the blank lines up to the next `From ` line.
                    loop {
                        if self.skip_line(&mut head)? == 0 {
                            self.done = true;
                            break;
                        }
                        if head.starts_with(b"From ") {
                            break;
                        }
                    }
                    return Ok(Some(MboxMessage { offset, len, raw }));
                }
            }
            prev_blank = blank;
            last_newline = newline;
        }
        raw.truncate(usize::try_from(len).unwrap_or(usize::MAX));
        if len == 0 && self.done {
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

impl<R: Read + Seek> Ahead<R> {
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

    /// Reads one line (through its `\n`, or to the end of the input) and appends at most `room`
    /// of its bytes to `out`; the line's length, and that of its end (`\n`: 1, `\r\n`: 2, none
    /// at the end of the input: 0). Lines are found with the `memchr` crate's search (std's
    /// `read_until` uses a plain one).
    fn read_line_into(&mut self, out: &mut Vec<u8>, mut room: usize) -> std::io::Result<(usize, u64)> {
        let mut read = 0;
        let mut last = 0u8;
        loop {
            let held = self.fill_buf()?;
            if held.is_empty() {
                return Ok((read, 0));
            }
            let (found, used) = match memchr::memchr(b'\n', held) {
                Some(at) => (true, at + 1),
                None => (false, held.len()),
            };
            let kept = used.min(room);
            out.extend_from_slice(&held[..kept]);
            room -= kept;
            read += used;
            if found {
                let cr = if used >= 2 { held[used - 2] } else { last } == b'\r';
                self.consume(used);
                return Ok((read, if cr { 2 } else { 1 }));
            }
            last = held[used - 1];
            self.consume(used);
        }
    }

    /// `judge` of the bytes `n` bytes ahead, as [`Ahead::peek`] would give them there (`false`
    /// beyond the end of the input). From the buffer when it holds them, else by seeking there
    /// and back, the buffer kept as it is.
    fn judge_at(
        &mut self,
        n: u64,
        enough: impl Fn(&[u8]) -> bool,
        judge: impl Fn(&[u8], bool) -> bool,
    ) -> std::io::Result<bool> {
        let held = self.end - self.pos;
        if let Some(at) = usize::try_from(n).ok().filter(|&n| n.saturating_add(LOOKAHEAD) <= held) {
            let at = self.pos + at;
            return Ok(judge(&self.buf[at..at + LOOKAHEAD], false));
        }
        let back_to = self.inner.stream_position()?;
        let Some(target) = back_to.checked_sub(held as u64).and_then(|here| here.checked_add(n)) else {
            return Ok(false);
        };
        let end = match self.inner.seek(SeekFrom::End(0)) {
            Ok(end) => end,
            // A stream read forward only (an mbox through its decompressor): what lies there
            // cannot be looked at before it is read, so it does not decide.
            Err(e) if e.kind() == ErrorKind::Unsupported => return Ok(false),
            Err(e) => return Err(e),
        };
        let judged = if target > end {
            false
        } else {
            self.inner.seek(SeekFrom::Start(target))?;
            let mut ahead = vec![0; LOOKAHEAD];
            let (mut got, mut at_end) = (0, false);
            while got < LOOKAHEAD && !enough(&ahead[..got]) {
                let n = read_more(&mut self.inner, &mut ahead[got..])?;
                at_end = n == 0;
                if at_end {
                    break;
                }
                got += n;
            }
            judge(&ahead[..got], at_end)
        };
        self.inner.seek(SeekFrom::Start(back_to))?;
        Ok(judged)
    }

    /// Reads past `n` bytes (fewer when the input ends first); how many.
    fn skip(&mut self, n: u64) -> std::io::Result<u64> {
        let mut skipped = 0;
        while skipped < n {
            let held = self.fill_buf()?.len();
            if held == 0 {
                break;
            }
            let used = held.min(usize::try_from(n - skipped).unwrap_or(usize::MAX));
            self.consume(used);
            skipped += used as u64;
        }
        Ok(skipped)
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

impl<R: Read + Seek> Read for Ahead<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let held = self.fill_buf()?;
        let n = held.len().min(out.len());
        out[..n].copy_from_slice(&held[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read + Seek> BufRead for Ahead<R> {
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
}

impl<R: Read + Seek> Iterator for MboxReader<R> {
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
    MboxReader::new(std::io::Cursor::new(data), 0)
        .filter_map(Result::ok)
        .filter(|m| m.len > 0)
        .map(|m| (m.offset, m.len))
        .collect()
}

/// The status fields mbox writers add to a message's header: Thunderbird's `X-Mozilla-Status`,
/// and the `Status` and `X-Status` of mutt, Pine and mail(1). Each the first line of its first
/// field, found in one pass over the header (it runs for every message of an mbox).
#[derive(Default)]
struct StatusFields<'a> {
    mozilla: Option<&'a [u8]>,
    status: Option<&'a [u8]>,
    x_status: Option<&'a [u8]>,
}

impl<'a> StatusFields<'a> {
    fn of(raw: &'a [u8]) -> Self {
        let mut found = StatusFields::default();
        let mut ends = memchr::memchr_iter(b'\n', raw);
        let mut start = 0;
        loop {
            // A blank line (or the end) ends the header.
            let first = match raw.get(start) {
                None | Some(b'\n') => break,
                Some(b'\r') if raw.get(start + 1) == Some(&b'\n') => break,
                Some(&b) => b,
            };
            let end = ends.next().unwrap_or(raw.len());
            // Only names starting with `S` or `X` are looked at further.
            if matches!(first, b'S' | b's' | b'X' | b'x') {
                found.take(&raw[start..end]);
            }
            start = end + 1;
        }
        found
    }

    /// Keeps `line` if it is the first of a status field.
    fn take(&mut self, line: &'a [u8]) {
        let Some(colon) = memchr::memchr(b':', line) else { return };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        let slot = if name.eq_ignore_ascii_case(b"x-mozilla-status") {
            &mut self.mozilla
        } else if name.eq_ignore_ascii_case(b"status") {
            &mut self.status
        } else if name.eq_ignore_ascii_case(b"x-status") {
            &mut self.x_status
        } else {
            return;
        };
        slot.get_or_insert(value);
    }

    /// Thunderbird's status (four hex digits), when it has one.
    fn mozilla_status(&self) -> Option<u16> {
        std::str::from_utf8(self.mozilla?).ok().and_then(|v| u16::from_str_radix(v, 16).ok())
    }
}

/// Thunderbird's flag for a message deleted from its folder (`MSG_FLAG_EXPUNGED`): the message
/// stays in the mbox file until the folder is compacted, and Thunderbird shows it nowhere.
const MOZILLA_EXPUNGED: u16 = 0x0008;

/// What an mbox keeps of a message's state in its header.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MboxStatus {
    /// Deleted in Thunderbird but not yet compacted away (its `X-Mozilla-Status` has the expunged
    /// flag): not a message of the folder any more.
    pub expunged: bool,
    /// Its flags as Maildir letters (as Python's `mailbox` converts them): Thunderbird's
    /// `X-Mozilla-Status` (read `S`, replied `R`, starred `F`, forwarded `P`), and the `Status`
    /// (`R` read) and `X-Status` (`A` answered, `F` flagged, `D` deleted) that mutt, Pine and
    /// mail(1) write. `None` when the message has none of those fields; a `Status` field holding
    /// anything but those letters is some other field of that name and says nothing.
    pub flags: Option<String>,
}

/// The state an mbox keeps for a message, read from its header.
pub fn mbox_status(raw: &[u8]) -> MboxStatus {
    let fields = StatusFields::of(raw);
    let mut flags: Vec<char> = Vec::new();
    let mut any = false;
    let mozilla = fields.mozilla_status();
    if let Some(status) = mozilla {
        any = true;
        for (bit, letter) in [(0x0001, 'S'), (0x0002, 'R'), (0x0004, 'F'), (0x1000, 'P')] {
            if status & bit != 0 {
                flags.push(letter);
            }
        }
    }
    for value in [fields.status, fields.x_status].into_iter().flatten() {
        if !value.iter().all(|c| b"ROADFT ".contains(c)) {
            continue;
        }
        any = true;
        flags.extend(value.iter().filter_map(|c| match c {
            b'R' => Some('S'),
            b'A' => Some('R'),
            b'F' => Some('F'),
            b'D' => Some('T'),
            _ => None,
        }));
    }
    flags.sort_unstable();
    flags.dedup();
    MboxStatus {
        expunged: mozilla.is_some_and(|s| s & MOZILLA_EXPUNGED != 0),
        flags: any.then(|| flags.into_iter().collect()),
    }
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

    /// Flags kept in an mbox message's header, as Maildir letters; none without such a field.
    #[test]
    fn flags_kept_in_mbox_headers() {
        let cases: &[(&[u8], Option<&str>)] = &[
            (b"X-Mozilla-Status: 0001\nSubject: a\n\nb\n", Some("S")),
            (b"X-Mozilla-Status: 0000\n\nb\n", Some("")),
            (b"X-Mozilla-Status: 1007\n\nb\n", Some("FPRS")),
            (b"Status: RO\nX-Status: AF\n\nb\n", Some("FRS")),
            (b"Status: O\n\nb\n", Some("")),
            (b"X-Status: D\r\n\r\nb\r\n", Some("T")),
            (b"X-Mozilla-Status: 0005\nStatus: R\n\nb\n", Some("FS")),
            (b"Status: Delivered\n\nb\n", None),
            (b"Subject: a\n\nStatus: RO\n", None),
            (b"Subject: a\n\nb\n", None),
        ];
        for (raw, want) in cases {
            assert_eq!(mbox_status(raw).flags.as_deref(), *want, "{}", String::from_utf8_lossy(raw));
        }
    }

    /// Thunderbird marks a deleted message in its mbox until the folder is compacted; other
    /// status bits, another field's value or a header field in the body do not count.
    #[test]
    fn thunderbird_deleted_messages() {
        let cases: &[(&[u8], bool)] = &[
            (b"X-Mozilla-Status: 0009\nSubject: a\n\nb\n", true),
            (b"Subject: a\r\nx-mozilla-status: 0008\r\n\r\nb\r\n", true),
            (b"X-Mozilla-Status: 0001\nSubject: a\n\nb\n", false),
            (b"X-Mozilla-Status: 0005\nX-Mozilla-Status2: 00000008\n\nb\n", false),
            (b"Subject: a\n\nX-Mozilla-Status: 0008\n", false),
            (b"X-Mozilla-Status: zz08\n\nb\n", false),
            (b"Subject: no status\n\nb\n", false),
        ];
        for (raw, want) in cases {
            assert_eq!(mbox_status(raw).expunged, *want, "{}", String::from_utf8_lossy(raw));
        }
    }

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
    struct Trickle<'a>(std::io::Cursor<&'a [u8]>);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let end = out.len().min(1);
            self.0.read(&mut out[..end])
        }
    }

    impl Seek for Trickle<'_> {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.0.seek(to)
        }
    }

    /// What a test reads from.
    trait Input: Read + Seek {}
    impl<T: Read + Seek> Input for T {}

    fn cursor(s: &str) -> std::io::Cursor<&[u8]> {
        std::io::Cursor::new(s.as_bytes())
    }

    /// Where a message ends does not depend on where the reader's buffer does, nor on how much
    /// each read returns: the line after a `From ` line is judged whole. A Content-Length that
    /// does not land on a separator (too long, too short) is not trusted. The blank line at the
    /// end of the file is the last message's separator, as before every `From ` line.
    #[test]
    fn messages_end_at_separators_whatever_the_buffer_size() {
        let long = "y".repeat(300);
        let fenced = "x\n\nFrom inside a counted body\n";
        let mbox = format!(
            "From a Mon\r\nSubject: 1\r\n\r\nbody\r\nFrom here on, a line of text\r\n{long}\r\n\r\n\
From b Mon\nSubject: 2\n\ntext\nFrom c, not after a blank line\n>From escaped\n\nFrom d Mon\nSubject: 3\n\n\
last\nFrom\nFrom e Mon\nX-A-Rather-Long-Header-Field-Name: 4\n\nno blank line before\n\
From f Mon\nContent-Length: {}\n\n{fenced}\nFrom h Mon\nContent-Length: 500\n\nshort\n\nFrom i Mon\n\
Content-Length: 1\n\nabc\nFrom inside\n\nFrom g Mon\nContent-Length: 2\n\nok\n\nFrom j Mon\nSubject: 5\n\n\
the last, then the blank line every message ends with\n\n",
            fenced.len()
        );
        let want: &[&str] = &[
            &format!("Subject: 1\r\n\r\nbody\r\nFrom here on, a line of text\r\n{long}\r\n"),
            "Subject: 2\n\ntext\nFrom c, not after a blank line\n>From escaped\n",
            "Subject: 3\n\nlast\nFrom",
            "X-A-Rather-Long-Header-Field-Name: 4\n\nno blank line before",
            &format!("Content-Length: {}\n\n{fenced}", fenced.len()),
            "Content-Length: 500\n\nshort\n",
            "Content-Length: 1\n\nabc\nFrom inside\n",
            "Content-Length: 2\n\nok",
            "Subject: 5\n\nthe last, then the blank line every message ends with\n",
        ];
        let read = |messages: MboxReader<&mut dyn Input>| -> Vec<String> {
            messages.map(|m| String::from_utf8(m.expect("reads").raw).expect("text")).collect()
        };
        for cap in [1, 2, 5, 16, 64, 8192] {
            let mut whole = cursor(&mbox);
            assert_eq!(read(MboxReader::with_capacity(cap, &mut whole, 0)), want, "buffer of {cap}");
            let mut trickle = Trickle(cursor(&mbox));
            assert_eq!(
                read(MboxReader::with_capacity(cap, &mut trickle, 0)),
                want,
                "a byte at a time, buffer of {cap}"
            );
        }
    }

    /// A message longer than the limit keeps its first bytes; where it and the next one lie does
    /// not change, nor what the messages within the limit hold, whatever the limit and the buffer.
    #[test]
    fn messages_longer_than_the_limit_keep_their_first_bytes() {
        let line = "0123456789".repeat(50);
        let big = format!("Subject: big\n\n{}", format!("{line}\n").repeat(40));
        let counted = format!("Subject: counted\nContent-Length: {}\n\n{big}", big.len());
        let mbox = format!(
            "From a\n{big}\nFrom b\nSubject: small\n\nhi\n\nFrom c\n{counted}\nFrom d\n{}no newline at the end",
            "x".repeat(5000)
        );
        let whole: Vec<MboxMessage> = MboxReader::new(cursor(&mbox), 0).map(|m| m.expect("reads")).collect();
        assert_eq!(whole.len(), 4);
        assert!(whole.iter().all(|m| !m.is_cut()));
        for limit in [0, 1, 7, 100, 1023, 1024, 1500, 4096, 30_000] {
            for capacity in [3, 64, 8192] {
                let cut: Vec<MboxMessage> = MboxReader::with_capacity(capacity, cursor(&mbox), 0)
                    .limit(limit)
                    .map(|m| m.expect("reads"))
                    .collect();
                let at = |ms: &[MboxMessage]| ms.iter().map(|m| (m.offset, m.len)).collect::<Vec<_>>();
                assert_eq!(at(&cut), at(&whole), "limit {limit}, buffer {capacity}");
                for (c, w) in cut.iter().zip(&whole) {
                    assert_eq!(c.raw, w.raw[..w.raw.len().min(limit)], "limit {limit}, buffer {capacity}");
                    assert_eq!(c.is_cut(), w.raw.len() > limit);
                }
            }
        }
    }

    /// A file with no line end keeps no more than the limit, before a first separator or after.
    #[test]
    fn a_file_with_no_line_end_is_read_within_the_limit() {
        let endless = "y".repeat(1 << 20);
        assert_eq!(MboxReader::new(cursor(&endless), 0).count(), 0);
        let one = format!("From a\n{endless}");
        let got: Vec<MboxMessage> = MboxReader::new(cursor(&one), 0).limit(4096).map(|m| m.expect("reads")).collect();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].offset, got[0].len, got[0].raw.len()), (7, 1 << 20, 4096));
    }
}

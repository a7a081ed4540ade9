//! MMDF and Babyl files: many messages in one file, each kept between separators as it was
//! given, nothing escaped inside it (where an mbox escapes body lines starting `From `).
//!
//! MMDF (the MMDF and SCO mail systems, mutt's `mbox_type=MMDF`, Python's `mailbox.MMDF`) opens
//! and closes each message with a line of four `\x01` bytes. mutt and Python write an mbox `From `
//! line after the opening one: an envelope line, not part of the message, so left out. A message
//! is every byte up to its closing separator, as mutt reads it.
//!
//! Babyl is Emacs Rmail's format (until Emacs 23 moved to mbox). A `BABYL OPTIONS:` section comes
//! first; each message follows a `\x1f\x0c` line: a line of attributes (`1, unseen, answered,,
//! Work, Travel,`: Rmail's own labels before the double comma, the user's after), the message's
//! original header, a `*** EOOH ***` line, the header as Rmail shows it (pruned, or a copy), a
//! blank line and the body, up to the next `\x1f`. The message is its original header and its
//! body: the header as shown is left out (its place is [`SpanMessage::skip`]). When Rmail had not
//! reformatted a message, nothing stands before `*** EOOH ***` and the header after it is the
//! message's own. A shown header is made of the original's fields (Rmail prunes them, Python
//! copies them): when the line after `*** EOOH ***` is not one of them (Python's writer can leave
//! the shown header out, so the body follows at once), it is kept as the body it is.
//!
//! A message cut short by the file's end is read as far as it goes; an empty one (a stray
//! separator) is none. Lines are read a bounded piece at a time, so a file of one endless line
//! holds no more memory than a message may, and a message read back is read on each side of its
//! skip only as far as the limit needs.

use std::io::{BufRead, Read};

use super::{starts_with_field, Given};

/// The line that opens and closes an MMDF message.
const MMDF_SEPARATOR: &[u8] = b"\x01\x01\x01\x01";

/// How a Babyl file starts.
const BABYL_START: &[u8] = b"BABYL OPTIONS:";

/// What ends a Babyl message's original header.
const END_OF_ORIGINAL_HEADER: &[u8] = b"*** EOOH ***";

/// The longest piece of a line read at once: a longer line is read in pieces.
const MAX_PIECE: u64 = 64 * 1024;

/// Which of the two formats a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Mmdf,
    Babyl,
}

/// The format a file's first bytes say it is in, if either.
pub fn framing(head: &[u8]) -> Option<Framing> {
    if head.strip_prefix(MMDF_SEPARATOR).is_some_and(|rest| rest.starts_with(b"\n") || rest.starts_with(b"\r\n")) {
        Some(Framing::Mmdf)
    } else if head.starts_with(BABYL_START) {
        Some(Framing::Babyl)
    } else {
        None
    }
}

/// One message of an MMDF or Babyl file.
#[derive(Debug)]
pub struct SpanMessage {
    /// Where the message starts in the file, and how many bytes it spans there (`skip` included).
    pub offset: u64,
    pub len: u64,
    /// What lies inside the span and is not the message (Babyl's shown header): where, how long.
    pub skip: Option<(u64, u64)>,
    /// The message's bytes, within the reader's limit.
    pub given: Given,
    /// Babyl: its state as Maildir letters (as Python's `mailbox` converts it: `S` when not
    /// `unseen`, `R` answered, `P` forwarded, `T` deleted). `None` for MMDF, whose header says.
    pub flags: Option<String>,
    /// Babyl: the labels the user gave it.
    pub labels: Vec<String>,
}

impl SpanMessage {
    /// Whether the message has no bytes (a stray separator, a file cut short right after one).
    pub fn is_empty(&self) -> bool {
        self.len <= self.skip.map_or(0, |(_, l)| l)
    }

    /// The flags the message is listed with (Babyl's attributes, else the status fields an MMDF
    /// header keeps, as an mbox's); `None` when it is no message of the file: empty, or deleted
    /// in Thunderbird.
    pub fn listed_flags(&self) -> Option<Option<String>> {
        let status = super::mbox_status(&self.given.bytes);
        (!self.is_empty() && !status.expunged).then(|| self.flags.clone().or(status.flags))
    }
}

/// Where a Babyl message's reading is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The original header, up to `*** EOOH ***` (an MMDF message is all of this part).
    Original,
    /// The first line after `*** EOOH ***`, which tells whether a shown header follows.
    AfterEooh,
    /// The shown header, left out, up to its blank line.
    Shown,
    Body,
}

/// A message being read.
struct Reading {
    offset: u64,
    /// Bytes of the message seen so far (the skip left out), of which `bytes` keeps the first.
    total: u64,
    bytes: Vec<u8>,
    part: Part,
    original_is_empty: bool,
    skip: Option<(u64, u64)>,
    /// Whether the line being read (a piece of a long one) is left out.
    skipping: bool,
    /// Whether the last whole line kept was empty (so an original header ended with its blank line).
    last_blank: bool,
    /// Whether no line of the message has been read yet (MMDF: an envelope line may come first).
    first_line: bool,
    /// Babyl: the names of the original header's fields, in lower case (a shown header is made of
    /// some of them).
    names: Vec<Vec<u8>>,
    flags: Option<String>,
    labels: Vec<String>,
}

/// The most field names kept of an original header, to tell its shown header by.
const MAX_NAMES: usize = 256;

/// The messages of an MMDF or Babyl file, read forward from its start, each kept to `limit` bytes.
pub struct SpansReader<R> {
    input: R,
    framing: Framing,
    limit: usize,
    at: u64,
    line: Vec<u8>,
    /// Whether the next piece read starts a line.
    at_line_start: bool,
    reading: Option<Reading>,
    /// Babyl: a `\x1f\x0c` line was read, so the next line is a message's attributes.
    attributes_next: bool,
    /// Babyl: still in the options, before the first `\x1f`.
    in_options: bool,
    /// The rest of a long line that is no message's (an attribute or envelope line) is dropped,
    /// the message after it starting past it.
    discarding: bool,
    done: bool,
}

impl<R: BufRead> SpansReader<R> {
    pub fn new(input: R, framing: Framing, limit: usize) -> SpansReader<R> {
        SpansReader {
            input,
            framing,
            limit,
            at: 0,
            line: Vec::new(),
            at_line_start: true,
            reading: None,
            attributes_next: false,
            in_options: true,
            discarding: false,
            done: false,
        }
    }

    /// Reads the next piece of a line into `self.line`: whether it starts a line, and where.
    fn piece(&mut self) -> std::io::Result<Option<(u64, bool)>> {
        self.line.clear();
        let n = <&mut R as Read>::take(&mut self.input, MAX_PIECE).read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Ok(None);
        }
        let (start, starts_line) = (self.at, self.at_line_start);
        self.at += n as u64;
        self.at_line_start = self.line.ends_with(b"\n");
        Ok(Some((start, starts_line)))
    }

    fn next_message(&mut self) -> std::io::Result<Option<SpanMessage>> {
        while let Some((start, starts_line)) = self.piece()? {
            if !starts_line {
                if self.discarding {
                    self.discarding = !self.line.ends_with(b"\n");
                    if let Some(r) = &mut self.reading {
                        r.offset = self.at;
                    }
                } else if let Some(r) = &mut self.reading {
                    keep_piece(r, &self.line, self.limit);
                }
                continue;
            }
            let ended = match self.framing {
                Framing::Mmdf => self.mmdf_line(start),
                Framing::Babyl => self.babyl_line(start),
            };
            if ended.is_some() {
                return Ok(ended);
            }
        }
        // The file's end ends a message it cut short.
        Ok(self.reading.take().map(|r| finish(r, self.at)))
    }

    /// Whether the piece read is a whole line: it ends one, or the file (a piece of a long line
    /// fills [`MAX_PIECE`]). Only a whole line is a separator or `*** EOOH ***`.
    fn whole_line(&self) -> bool {
        self.line.ends_with(b"\n") || (self.line.len() as u64) < MAX_PIECE
    }

    /// Takes the first piece of a line of an MMDF file; the message it ends, if it ends one.
    fn mmdf_line(&mut self, start: u64) -> Option<SpanMessage> {
        let is_separator = self.whole_line() && trim_end(&self.line) == MMDF_SEPARATOR;
        let Some(r) = &mut self.reading else {
            // Between messages nothing is a message's, until a separator opens one.
            if is_separator {
                self.reading = Some(Reading::at(self.at));
            }
            return None;
        };
        if is_separator {
            return self.reading.take().map(|r| finish(r, start));
        }
        // mutt's and Python's envelope line, before the header.
        if std::mem::take(&mut r.first_line) && self.line.starts_with(b"From ") {
            r.offset = self.at;
            self.discarding = !self.line.ends_with(b"\n");
            return None;
        }
        keep_line(r, &self.line, self.limit);
        None
    }

    /// Takes the first piece of a line of a Babyl file; the message it ends, if it ends one.
    fn babyl_line(&mut self, start: u64) -> Option<SpanMessage> {
        let whole = self.whole_line();
        if let Some(rest) = self.line.strip_prefix(b"\x1f") {
            // `\x1f` ends a message (or the options); `\x0c` after it starts the next.
            self.attributes_next = whole && trim_end(rest) == b"\x0c";
            self.in_options = false;
            return self.reading.take().map(|r| finish(r, start));
        }
        if self.attributes_next {
            self.attributes_next = false;
            let (flags, labels) = attributes(trim_end(&self.line));
            let mut r = Reading::at(self.at);
            r.flags = Some(flags);
            r.labels = labels;
            self.reading = Some(r);
            self.discarding = !self.line.ends_with(b"\n");
            return None;
        }
        // A `\x0c` line alone after the options starts a message too, as Rmail's older files have it.
        if self.reading.is_none() {
            self.attributes_next = !self.in_options && whole && trim_end(&self.line) == b"\x0c";
            return None;
        }
        let (line, at) = (&self.line, self.at);
        let limit = self.limit;
        let r = self.reading.as_mut()?;
        match r.part {
            Part::Original if r.names.len() < MAX_NAMES && starts_with_field(line) => {
                r.names.push(field_name(line));
                keep_line(r, line, limit);
            }
            Part::Original if whole && trim_end(line) == END_OF_ORIGINAL_HEADER => {
                r.original_is_empty = r.total == 0;
                // An original header must end with its blank line for the body to follow it.
                let ends_blank = std::mem::take(&mut r.last_blank);
                r.skip = Some((start, at - start));
                r.part = if r.original_is_empty || !ends_blank { Part::Body } else { Part::AfterEooh };
            }
            // A shown header is made of the original's fields (Rmail prunes them; Python copies
            // them): anything else is the body, Python having written no shown header.
            Part::AfterEooh if starts_with_field(line) && r.names.contains(&field_name(line)) => {
                extend_skip(r, at);
                r.part = Part::Shown;
            }
            Part::AfterEooh => {
                r.part = Part::Body;
                keep_line(r, line, limit);
            }
            Part::Shown => {
                extend_skip(r, at);
                if is_blank(line) {
                    r.part = Part::Body;
                }
                r.skipping = false;
            }
            Part::Original | Part::Body => keep_line(r, line, limit),
        }
        if r.part == Part::Shown {
            r.skipping = !line.ends_with(b"\n");
        }
        None
    }
}

impl Reading {
    fn at(offset: u64) -> Reading {
        Reading {
            offset,
            total: 0,
            bytes: Vec::new(),
            part: Part::Original,
            original_is_empty: false,
            skip: None,
            skipping: false,
            last_blank: false,
            first_line: true,
            names: Vec::new(),
            flags: None,
            labels: Vec::new(),
        }
    }
}

/// Keeps a whole line of the message.
fn keep_line(r: &mut Reading, line: &[u8], limit: usize) {
    r.last_blank = is_blank(line);
    keep_bytes(r, line, limit);
}

/// Keeps (or, within a skipped line, leaves out) a further piece of a long line.
fn keep_piece(r: &mut Reading, piece: &[u8], limit: usize) {
    if r.skipping {
        if let Some((_, len)) = &mut r.skip {
            *len += piece.len() as u64;
        }
        r.skipping = !piece.ends_with(b"\n");
        return;
    }
    r.last_blank = false;
    keep_bytes(r, piece, limit);
}

fn keep_bytes(r: &mut Reading, bytes: &[u8], limit: usize) {
    r.total += bytes.len() as u64;
    let room = limit.saturating_sub(r.bytes.len());
    r.bytes.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// Widens the skip to end at `end`.
fn extend_skip(r: &mut Reading, end: u64) {
    if let Some((at, len)) = &mut r.skip {
        *len = end - *at;
    }
}

/// The message `r` read, ended at `end`: every byte up to the separator, as mutt reads an MMDF
/// file and Emacs a Babyl one (Python's `mailbox` writes a line break before each separator and
/// takes it away again as it reads; here it stays, a blank line at the end of the body).
fn finish(r: Reading, end: u64) -> SpanMessage {
    let len = end.saturating_sub(r.offset);
    let cut_from = (r.total > r.bytes.len() as u64).then_some(r.total);
    let skip = r.skip.filter(|&(_, skip_len)| skip_len > 0);
    debug_assert!(skip.is_none_or(|(at, skip_len)| at >= r.offset && at + skip_len <= end));
    SpanMessage {
        offset: r.offset,
        len,
        skip,
        given: Given { bytes: r.bytes, cut_from, notices: Vec::new() },
        flags: r.flags,
        labels: r.labels,
    }
}

/// A Babyl attribute line's state as Maildir letters, and the user's labels.
fn attributes(line: &[u8]) -> (String, Vec<String>) {
    let text = String::from_utf8_lossy(line);
    let (own, users) = text.split_once(",,").unwrap_or((&text, ""));
    // The first field is Rmail's reformatted mark (`0` or `1`).
    let own: Vec<&str> = own.split(',').skip(1).map(str::trim).collect();
    let mut flags = String::new();
    for (label, letter) in [("answered", 'R'), ("forwarded", 'P'), ("resent", 'P'), ("deleted", 'T')] {
        if own.contains(&label) {
            flags.push(letter);
        }
    }
    if !own.contains(&"unseen") {
        flags.push('S');
    }
    let mut letters: Vec<char> = flags.chars().collect();
    letters.sort_unstable();
    letters.dedup();
    let labels = users.split(',').map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
    (letters.into_iter().collect(), labels)
}

/// The name of the header field a line starts, in lower case.
fn field_name(line: &[u8]) -> Vec<u8> {
    let colon = memchr::memchr(b':', line).unwrap_or(line.len());
    line[..colon].to_ascii_lowercase()
}

/// A line without its line ending.
fn trim_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn is_blank(line: &[u8]) -> bool {
    trim_end(line).is_empty() && line.ends_with(b"\n")
}

impl<R: BufRead> Iterator for SpansReader<R> {
    type Item = std::io::Result<SpanMessage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_message();
        if !matches!(next, Ok(Some(_))) {
            self.done = true;
        }
        next.transpose()
    }
}

/// The bytes of a message at `offset`, `len` long in the file, of which `skip` is not the
/// message: `read(at, count)` gives `count` bytes of the file from `at`, asked for on each side
/// of the skip only as many as `limit` bytes of the message need.
pub fn splice(
    offset: u64,
    len: u64,
    skip: Option<(u64, u64)>,
    limit: usize,
    mut read: impl FnMut(u64, u64) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<Given> {
    let end = offset.saturating_add(len);
    let parts = match skip {
        Some((at, l)) => [(offset, at.clamp(offset, end)), (at.saturating_add(l).clamp(offset, end), end)],
        None => [(offset, end), (end, end)],
    };
    let total: u64 = parts.iter().map(|(from, to)| to - from).sum();
    let mut bytes = Vec::new();
    for (from, to) in parts {
        let want = (to - from).min(limit.saturating_sub(bytes.len()) as u64);
        if want == 0 {
            continue;
        }
        let got = read(from, want)?;
        if got.len() as u64 != want {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file is shorter than indexed"));
        }
        if bytes.is_empty() {
            bytes = got;
        } else {
            bytes.extend_from_slice(&got);
        }
    }
    let cut_from = (total > limit as u64).then_some(total);
    Ok(Given { bytes, cut_from, notices: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(file: &[u8], limit: usize) -> Vec<SpanMessage> {
        let framing = framing(file).expect("a known format");
        SpansReader::new(file, framing, limit).collect::<std::io::Result<Vec<_>>>().expect("reads")
    }

    /// What each message's span in the file gives back, the skip left out, within `limit`.
    fn spliced(file: &[u8], m: &SpanMessage, limit: usize) -> Given {
        splice(m.offset, m.len, m.skip, limit, |at, want| Ok(file[at as usize..(at + want) as usize].to_vec()))
            .expect("splices")
    }

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        for (head, want) in [
            (&b"\x01\x01\x01\x01\nFrom: a\n"[..], Some(Framing::Mmdf)),
            (b"\x01\x01\x01\x01\r\nFrom: a\n", Some(Framing::Mmdf)),
            (b"\x01\x01\x01\x01From: a\n", None),
            (b"BABYL OPTIONS: -*- rmail -*-\n", Some(Framing::Babyl)),
            (b"From a@x Mon Jan 1 00:00:00 2024\n", None),
            (b"babyl options:\n", None),
        ] {
            assert_eq!(framing(head), want, "{head:?}");
        }
    }

    #[test]
    fn mmdf_messages_lie_between_separators() {
        let file = b"\x01\x01\x01\x01\nFrom MAILER-DAEMON Mon Dec  7 07:32:05 2026\nFrom: a@x\nSubject: One\n\nBody\nFrom here\n>From there\n\n\x01\x01\x01\x01\n\
            \x01\x01\x01\x01\nFrom: b@x\n\nTwo\n\x01\x01\x01\x01\n\
            junk between\n\x01\x01\x01\x01\nFrom: c@x\n\ncut short";
        let got = read(file, usize::MAX);
        let bytes: Vec<&[u8]> = got.iter().map(|m| &m.given.bytes[..]).collect();
        assert_eq!(
            bytes,
            [
                &b"From: a@x\nSubject: One\n\nBody\nFrom here\n>From there\n\n"[..],
                b"From: b@x\n\nTwo\n",
                b"From: c@x\n\ncut short"
            ]
        );
        for m in &got {
            assert_eq!(spliced(file, m, usize::MAX).bytes, m.given.bytes);
            assert_eq!((m.flags.as_deref(), m.labels.len()), (None, 0));
        }
    }

    #[test]
    fn babyl_messages_are_their_original_header_and_body() {
        let file = b"BABYL OPTIONS:\nVersion: 5\nLabels: Work\n\x1f\x0c\n\
            1, unseen, answered,, Work, Travel plans,\nFrom: a@x\nSubject: One\nX-Long: x\n\n*** EOOH ***\nFrom: a@x\nSubject: One\n\nBody one\n\n\x1f\x0c\n\
            0,,\n*** EOOH ***\nFrom: b@x\nSubject: Two\n\nBody two\n\x1f\x0c\n\
            1, deleted,,\nFrom: c@x\n\n*** EOOH ***\nBody three, no shown header\n\n\x1f\x0c\n\
            1,,\nFrom: d@x\n\n*** EOOH ***\n\nBody four\n\x1f";
        let got = read(file, usize::MAX);
        let bytes: Vec<&[u8]> = got.iter().map(|m| &m.given.bytes[..]).collect();
        assert_eq!(
            bytes,
            [
                &b"From: a@x\nSubject: One\nX-Long: x\n\nBody one\n\n"[..],
                b"From: b@x\nSubject: Two\n\nBody two\n",
                b"From: c@x\n\nBody three, no shown header\n\n",
                b"From: d@x\n\n\nBody four\n",
            ]
        );
        let state: Vec<(&str, Vec<&str>)> = got
            .iter()
            .map(|m| (m.flags.as_deref().unwrap_or("-"), m.labels.iter().map(|l| &l[..]).collect()))
            .collect();
        assert_eq!(state, [("R", vec!["Work", "Travel plans"]), ("S", vec![]), ("ST", vec![]), ("S", vec![])]);
        for m in &got {
            assert_eq!(spliced(file, m, usize::MAX).bytes, m.given.bytes, "{m:?}");
        }
    }

    /// A message longer than the limit keeps its first bytes and its whole size; lines longer
    /// than a piece are read in pieces, a long shown header left out whole.
    #[test]
    fn long_messages_and_lines_are_read_within_bounds() {
        let long = "v".repeat(200_000);
        let file =
            format!("BABYL OPTIONS:\n\x1f\x0c\n1,,\nFrom: a@x\nX-Shown: v\n\n*** EOOH ***\nX-Shown: {long}\n\nBody {long}\n\x1f");
        let whole = read(file.as_bytes(), usize::MAX);
        let want = format!("From: a@x\nX-Shown: v\n\nBody {long}\n");
        assert_eq!(whole.len(), 1);
        assert!(whole[0].given.bytes == want.as_bytes(), "the shown header is left out whole");
        let cut = read(file.as_bytes(), 100);
        assert_eq!(cut[0].given.bytes, &want.as_bytes()[..100]);
        assert_eq!(cut[0].given.cut_from, Some(want.len() as u64));
        let again = spliced(file.as_bytes(), &cut[0], 100);
        assert_eq!((again.bytes, again.cut_from), (cut[0].given.bytes.clone(), cut[0].given.cut_from));
    }

    /// What a hostile or odd file holds: a stray separator (no empty message is a message), a
    /// second `From ` line (only the first after a separator is an envelope), a body Python wrote
    /// right after `*** EOOH ***` whose first line looks like a field (not a shown header: no
    /// field of the original has that name) or is blank, a `\x0c` line in Babyl's options, and
    /// attribute and envelope lines longer than a piece (left out whole).
    #[test]
    fn odd_files_keep_every_message_whole() {
        let mmdf = b"\x01\x01\x01\x01\nFrom MAILER-DAEMON x\nFrom someone else\nFrom: a\n\nx\n\x01\x01\x01\x01\n\x01\x01\x01\x01\n";
        let got = read(mmdf, usize::MAX);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].given.bytes, b"From someone else\nFrom: a\n\nx\n");
        assert!(!got[0].is_empty() && got[1].is_empty());

        let babyl = b"BABYL OPTIONS:\nNote: x\n\x0c\nVersion: 5\n\x1f\x0c\n\
            1,,\nFrom: a\nSubject: s\n\n*** EOOH ***\nhttps://example.org/x\nNote: see\n\nrest\n\x1f\x0c\n\
            1,,\nFrom: b\n\n*** EOOH ***\n\nafter a blank line\n\x1f\x0c\n\
            1,,\nFrom: c\nSubject: t\n\n*** EOOH ***\nsubject: t\n\nshown header left out\n\x1f";
        let got = read(babyl, usize::MAX);
        let bytes: Vec<&[u8]> = got.iter().map(|m| &m.given.bytes[..]).collect();
        assert_eq!(
            bytes,
            [
                &b"From: a\nSubject: s\n\nhttps://example.org/x\nNote: see\n\nrest\n"[..],
                b"From: b\n\n\nafter a blank line\n",
                b"From: c\nSubject: t\n\nshown header left out\n",
            ]
        );

        let long = "x".repeat(200_000);
        let file = format!(
            "BABYL OPTIONS:\n\x1f\x0c\n1, resent, answered,, Work, {long},\nFrom: a\n\n*** EOOH ***\nFrom: a\n\nbody\n\x1f"
        );
        let got = read(file.as_bytes(), usize::MAX);
        assert_eq!(got[0].given.bytes, b"From: a\n\nbody\n");
        assert_eq!(got[0].flags.as_deref(), Some("PRS"));
        assert_eq!(got[0].labels[0], "Work");
        let file = format!("\x01\x01\x01\x01\nFrom {long}\nFrom: a\n\nbody\n\x01\x01\x01\x01\n");
        assert_eq!(read(file.as_bytes(), usize::MAX)[0].given.bytes, b"From: a\n\nbody\n");
    }

    /// Read back, a message is asked of the file only for what the limit keeps: a shown header of
    /// any length is read past, not into memory.
    #[test]
    fn reading_back_asks_for_no_more_than_the_limit() {
        let shown = "a".repeat(1_000_000);
        let file = format!("BABYL OPTIONS:\n\x1f\x0c\n1,,\nFrom: a\n\n*** EOOH ***\nFrom: {shown}\n\nbody\n\x1f");
        let m = &read(file.as_bytes(), 100)[0];
        let mut asked = 0;
        let given = splice(m.offset, m.len, m.skip, 100, |at, want| {
            asked += want;
            Ok(file.as_bytes()[at as usize..(at + want) as usize].to_vec())
        })
        .expect("splices");
        assert_eq!(given.bytes, b"From: a\n\nbody\n");
        assert_eq!(asked, given.bytes.len() as u64);
    }

    /// CRLF files, as written on Windows, split the same way.
    #[test]
    fn crlf_files_split_alike() {
        let file = b"\x01\x01\x01\x01\r\nFrom: a@x\r\n\r\nOne\r\n\r\n\x01\x01\x01\x01\r\n";
        let got = read(file, usize::MAX);
        assert_eq!(got[0].given.bytes, b"From: a@x\r\n\r\nOne\r\n\r\n");
    }
}

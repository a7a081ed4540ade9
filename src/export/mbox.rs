//! mboxrd out: each message after a `From ` line, `>From ` escaping that can be undone exactly,
//! and the flags and labels its source keeps beside it written into its header, where mbox readers
//! look for them.

use std::borrow::Cow;
use std::io::Write;

use crate::dates::asctime;

/// mboxrd (the variant that can be undone exactly): each message after a `From ` line, every line
/// of it matching `^>*From ` given one more `>`, and followed by an empty line, as Python's
/// `mailbox` and mail delivery agents write them. A reader that takes the empty line before each
/// `From ` line, and at the end of the file, as the format's (as mailshelf's does) gets every
/// message back byte for byte (but for the state [`with_state`] writes in); one that does not end
/// with a line end gains one, so that its last line and the next `From ` line can never run
/// together.
pub(crate) struct MboxWriter<W: Write> {
    out: W,
}

impl<W: Write> MboxWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        MboxWriter { out }
    }

    /// Adds one message: the Internet message's bytes (for a file in another format, the message
    /// made of it), from `sender` at `timestamp` (seconds since the epoch).
    pub(crate) fn add(&mut self, sender: &str, timestamp: Option<i64>, raw: &[u8]) -> std::io::Result<()> {
        writeln!(self.out, "From {sender} {}", asctime(timestamp.unwrap_or(0)))?;
        for line in raw.split_inclusive(|&b| b == b'\n') {
            let gts = line.iter().take_while(|&&b| b == b'>').count();
            if line[gts..].starts_with(b"From ") {
                self.out.write_all(b">")?;
            }
            self.out.write_all(line)?;
        }
        if !raw.is_empty() && !raw.ends_with(b"\n") {
            self.out.write_all(b"\n")?;
        }
        self.out.write_all(b"\n")
    }

    pub(crate) fn into_inner(self) -> W {
        self.out
    }
}

/// The address for a `From ` line: the sender's address, else `MAILER-DAEMON`; never with white
/// space, which would end the field, and only in ASCII (readers such as Python's `mailbox` take
/// the line for ASCII, and fail on a file holding any other byte there). `from` is an address line as the summary writes it: the
/// first address is the first `<…>` outside a quoted name (`"Doe, John" <jd@example.com>`), or
/// the first item of the list when it has no brackets.
pub(crate) fn mbox_sender(from: Option<&str>) -> String {
    let from = from.unwrap_or("");
    let (mut quoted, mut escaped, mut open) = (false, false, None);
    let mut first = None;
    for (i, c) in from.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '<' if !quoted => open = Some(i + 1),
            '>' if !quoted => {
                if let Some(at) = open {
                    first = Some(&from[at..i]);
                    break;
                }
            }
            ',' if !quoted && open.is_none() => {
                first = Some(&from[..i]);
                break;
            }
            _ => {}
        }
    }
    let addr = first.unwrap_or(from).trim();
    let whole = addr.split_once('@').is_some_and(|(local, domain)| !local.is_empty() && !domain.is_empty());
    if whole && addr.bytes().all(|b| b.is_ascii_graphic() && b != b'"') {
        addr.to_string()
    } else {
        "MAILER-DAEMON".to_string()
    }
}

/// The message with the state its source keeps outside its bytes written into its header, as mbox
/// readers take it (mutt, Pine, Python's `mailbox`, Dovecot, mailshelf): `flags` (Maildir letters,
/// from a Maildir file's name, an MH sequence, Dovecot's index, a Babyl attribute) as `Status: RO`
/// for read and `X-Status:` with `A` answered, `F` flagged, `D` deleted; `labels` that no label
/// field of its header names (a Maildir keyword, a Babyl label, a keyword of Dovecot's index) in
/// one more `X-Keywords:` field, comma-separated as mu and mailshelf read it. A message whose
/// header already says as much (one read from an mbox) is given back as it is; otherwise the
/// status fields that say otherwise (`Status`, `X-Status`, Thunderbird's `X-Mozilla-Status`) give
/// way to the new ones, added at the end of its header. A draft (`D`) and a message passed on
/// (`P`) have no letter in those fields and stay as they are.
pub(crate) fn with_state<'a>(raw: &'a [u8], flags: Option<&str>, labels: &[String]) -> Cow<'a, [u8]> {
    // Most messages keep no state beside them, or the state their header says (one read from an
    // mbox): found without walking the header into fields.
    let status = flags
        .map(status_letters)
        .filter(|wanted| *wanted != status_letters(&crate::ingest::mbox_status(raw).flags.unwrap_or_default()));
    if status.is_none() && labels.is_empty() {
        return Cow::Borrowed(raw);
    }
    let header = HeaderFields::of(raw);
    let fields = header.fields.iter().map(|f| (std::str::from_utf8(f.name(raw)).unwrap_or(""), &raw[f.value.clone()]));
    let known = crate::parse::labels::fields_labels(fields);
    let known: std::collections::HashSet<String> = known.iter().map(|l| crate::parse::labels::key(l)).collect();
    let missing: Vec<&str> =
        labels.iter().filter(|l| !known.contains(&crate::parse::labels::key(l))).map(String::as_str).collect();
    if status.is_none() && missing.is_empty() {
        return Cow::Borrowed(raw);
    }
    let eol = if header.crlf { "\r\n" } else { "\n" };
    let mut fields = Vec::new();
    if let Some((read, x_status)) = &status {
        fields.extend_from_slice(if *read { b"Status: RO" } else { b"Status: O" });
        fields.extend_from_slice(eol.as_bytes());
        if !x_status.is_empty() {
            fields.extend_from_slice(b"X-Status: ");
            fields.extend_from_slice(x_status.as_bytes());
            fields.extend_from_slice(eol.as_bytes());
        }
    }
    if !missing.is_empty() {
        fields.extend_from_slice(b"X-Keywords: ");
        fields.extend_from_slice(crate::parse::label_list(&missing, eol).as_bytes());
        fields.extend_from_slice(eol.as_bytes());
    }
    // The status fields that say otherwise go; a field of that name that says something else (a
    // ticket's `Status: approved`) stays, and the new fields go before it, where readers that take
    // the first such field find them; else at the end of the header.
    let mut out = Vec::with_capacity(raw.len() + fields.len() + 2);
    let mut at = 0;
    let mut placed = false;
    for f in header.fields.iter().filter(|f| status.is_some() && f.is_status(raw)) {
        out.extend_from_slice(&raw[at..f.whole.start]);
        if f.says_state(raw) {
            at = f.whole.end;
        } else {
            at = f.whole.start;
            if !placed {
                out.extend_from_slice(&fields);
                placed = true;
            }
        }
    }
    out.extend_from_slice(&raw[at..header.end]);
    if !placed {
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.extend_from_slice(eol.as_bytes());
        }
        out.extend_from_slice(&fields);
    }
    if header.end == raw.len() {
        // A header with no body: the empty line that ends it.
        out.extend_from_slice(eol.as_bytes());
    }
    out.extend_from_slice(&raw[header.end..]);
    Cow::Owned(out)
}

/// Whether Maildir `flags` say read (`S`), and the `X-Status` letters of the rest (`A` for `R`
/// replied, `F` flagged, `D` for `T` trashed), in that order.
fn status_letters(flags: &str) -> (bool, String) {
    let x_status =
        [('R', 'A'), ('F', 'F'), ('T', 'D')].iter().filter(|(m, _)| flags.contains(*m)).map(|&(_, x)| x).collect();
    (flags.contains('S'), x_status)
}

/// The fields of a message's header, where each lies (folded lines and all) and where the header
/// ends: at the empty line before the body, else at the end of the bytes.
struct HeaderFields {
    fields: Vec<Field>,
    /// Where the empty line that ends the header begins (the body's start when it has none).
    end: usize,
    /// Whether its lines end in CRLF.
    crlf: bool,
}

struct Field {
    /// Its name, without the white space around it.
    name: std::ops::Range<usize>,
    /// The field's lines, from its name to the end of its last line.
    whole: std::ops::Range<usize>,
    /// Its value, after the colon, to the end of its last line.
    value: std::ops::Range<usize>,
}

impl Field {
    fn name<'r>(&self, raw: &'r [u8]) -> &'r [u8] {
        &raw[self.name.clone()]
    }

    /// Whether it is one of the fields mbox writers keep a message's state in.
    fn is_status(&self, raw: &[u8]) -> bool {
        let name = self.name(raw);
        [&b"status"[..], b"x-status", b"x-mozilla-status"].iter().any(|n| name.eq_ignore_ascii_case(n))
    }

    /// Whether, being one, it says a state as [`crate::ingest::mbox_status`] reads one: Thunderbird's
    /// always, `Status` and `X-Status` when their value is nothing but status letters.
    fn says_state(&self, raw: &[u8]) -> bool {
        self.name(raw).eq_ignore_ascii_case(b"x-mozilla-status")
            || raw[self.value.clone()].iter().all(|c| b"ROADFT \t\r\n".contains(c))
    }
}

impl HeaderFields {
    fn of(raw: &[u8]) -> HeaderFields {
        let mut fields: Vec<Field> = Vec::new();
        let mut start = 0;
        let crlf = memchr::memchr(b'\n', raw).is_some_and(|i| i > 0 && raw[i - 1] == b'\r');
        while start < raw.len() {
            let end = memchr::memchr(b'\n', &raw[start..]).map_or(raw.len(), |i| start + i + 1);
            let line = &raw[start..end];
            if line == b"\n" || line == b"\r\n" {
                break;
            }
            match (line[0], fields.last_mut()) {
                (b' ' | b'\t', Some(last)) => {
                    last.whole.end = end;
                    last.value.end = end;
                }
                _ => {
                    let colon = memchr::memchr(b':', line);
                    let name = colon.map_or(start..start, |c| {
                        let lead = line[..c].iter().take_while(|b| b.is_ascii_whitespace()).count();
                        let trail = line[lead..c].iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
                        start + lead..start + c - trail
                    });
                    let value = start + colon.map_or(line.len(), |c| c + 1)..end;
                    fields.push(Field { name, whole: start..end, value });
                }
            }
            start = end;
        }
        HeaderFields { fields, end: start, crlf }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mboxrd_escapes_every_from_line() {
        let mut w = MboxWriter::new(Vec::new());
        w.add("a@b", Some(0), b"Subject: x\n\nFrom here\n>From there\nnot From\n").unwrap();
        w.add("MAILER-DAEMON", None, b"Subject: y\n\nno newline").unwrap();
        w.add("c@d", Some(0), b"   \nSubject: z\n\nz\n\n").unwrap();
        let out = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            out,
            "From a@b Thu Jan  1 00:00:00 1970\nSubject: x\n\n>From here\n>>From there\nnot From\n\n\
             From MAILER-DAEMON Thu Jan  1 00:00:00 1970\nSubject: y\n\nno newline\n\n\
             From c@d Thu Jan  1 00:00:00 1970\n   \nSubject: z\n\nz\n\n\n"
        );
    }

    /// Flags and labels kept beside a message reach its header, and an mbox reader (mailshelf's)
    /// reads back what was kept; a header that already says as much is left as it is.
    #[test]
    fn state_kept_outside_a_message_is_written_into_its_header() {
        let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (name, raw, flags, given, want) in [
            ("read and replied", "Subject: x\n\nbody\n", Some("RS"), labels(&[]), Some("Subject: x\nStatus: RO\nX-Status: A\n\nbody\n")),
            ("unread, nothing to say", "Subject: x\n\nbody\n", Some(""), labels(&[]), None),
            ("no flags kept", "Subject: x\n\nbody\n", None, labels(&[]), None),
            ("already said in mbox fields", "Subject: x\nStatus: RO\nX-Status: AF\n\nb\n", Some("FRS"), labels(&[]), None),
            (
                "stale fields give way",
                "Status: O\nSubject: x\nX-Status: D\n  \n\nb\n",
                Some("FST"),
                labels(&[]),
                Some("Subject: x\nStatus: RO\nX-Status: FD\n\nb\n"),
            ),
            (
                "Thunderbird's state gives way too",
                "X-Mozilla-Status: 0001\nSubject: x\n\nb\n",
                Some("F"),
                labels(&[]),
                Some("Subject: x\nStatus: O\nX-Status: F\n\nb\n"),
            ),
            (
                "a field of that name that says something else stays",
                "Subject: x\nX-Status: A\nStatus: approved\nTo: t\n\nb\n",
                Some("S"),
                labels(&["L"]),
                Some("Subject: x\nStatus: RO\nX-Keywords: L\nStatus: approved\nTo: t\n\nb\n"),
            ),
            (
                "a header alone, its last line a stale status",
                "Subject: x\nStatus: O",
                Some("S"),
                labels(&[]),
                Some("Subject: x\nStatus: RO\n\n"),
            ),
            (
                "keywords as Dovecot keeps them",
                "Subject: x\nX-UID: 1\nStatus: R\nX-Keywords: $Forwarded Project   \nX-Status: F\n\nb\n",
                Some("FS"),
                labels(&["$Forwarded", "Project"]),
                None,
            ),
            ("drafts and passed have no letter", "Subject: x\n\nb\n", Some("DP"), labels(&[]), None),
            (
                "labels not in the header",
                "Subject: x\nX-Keywords: Work\n\nb\n",
                None,
                labels(&["work", "Big deal", "a,b \"c\"", "Café"]),
                Some("Subject: x\nX-Keywords: Work\nX-Keywords: Big deal, \"a,b \\\"c\\\"\", =?utf-8?b?Q2Fmw6k=?=\n\nb\n"),
            ),
            ("lines in CRLF", "Subject: x\r\n\r\nb\r\n", Some("S"), labels(&["L"]), Some("Subject: x\r\nStatus: RO\r\nX-Keywords: L\r\n\r\nb\r\n")),
            ("a header and no body", "Subject: x", Some("F"), labels(&[]), Some("Subject: x\nStatus: O\nX-Status: F\n\n")),
        ] {
            let out = with_state(raw.as_bytes(), flags, &given);
            match want {
                None => assert!(matches!(out, Cow::Borrowed(_)), "{name}: {}", String::from_utf8_lossy(&out)),
                Some(want) => assert_eq!(String::from_utf8_lossy(&out), want, "{name}"),
            }
            let back = crate::ingest::mbox_status(&out).flags.unwrap_or_default();
            if let Some(flags) = flags {
                assert_eq!(status_letters(&back), status_letters(flags), "{name}");
            }
            let parsed = crate::parse::parse_file(std::sync::Arc::from(&out[..]), None).unwrap();
            let keys: Vec<String> = parsed.summary.labels.iter().map(|l| crate::parse::labels::key(l)).collect();
            for l in &given {
                assert!(keys.contains(&crate::parse::labels::key(l)), "{name}: {l} in {keys:?}");
            }
        }
    }

    /// Every set of flags, over every kind of status a header may already hold, reads back as it
    /// was written.
    #[test]
    fn every_flag_set_reads_back() {
        let headers = [
            "",
            "Status: RO\n",
            "X-Status: AFD\n",
            "Status: R\nX-Status: A\nX-Mozilla-Status: 0005\n",
            "X-Mozilla-Status: 1003\nStatus: \n",
            "Status: something else entirely\n",
        ];
        for header in headers {
            for bits in 0..16u8 {
                let flags: String =
                    "FRST".chars().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, c)| c).collect();
                for eol in ["\n", "\r\n"] {
                    let raw = format!("Subject: s\n{header}\nbody\n").replace('\n', eol);
                    let out = with_state(raw.as_bytes(), Some(&flags), &[]);
                    let back = crate::ingest::mbox_status(&out).flags.unwrap_or_default();
                    assert_eq!(status_letters(&back), status_letters(&flags), "{header:?} {flags} {eol:?}");
                    assert!(out.ends_with(format!("{eol}{eol}body{eol}").as_bytes()), "{header:?} {flags}");
                }
            }
        }
    }

    /// Many labels fold over several lines, none longer than 78 characters.
    #[test]
    fn a_long_label_list_is_folded() {
        let many: Vec<String> = (0..40).map(|i| format!("Project number {i}")).collect();
        let out = with_state(b"Subject: x\n\nb\n", None, &many);
        let text = String::from_utf8_lossy(&out);
        assert!(text.lines().all(|l| l.len() <= 78), "{text}");
        let parsed = crate::parse::parse_file(std::sync::Arc::from(&out[..]), None).unwrap();
        assert_eq!(parsed.summary.labels, many);
    }

    /// The sender's address, whatever the names before it hold.
    #[test]
    fn from_lines_name_the_first_address() {
        for (from, want) in [
            (Some("Ann <ann@example.com>, Bob <bob@example.com>"), "ann@example.com"),
            (Some("\"Wang, Zhuo D.\" <zhuo@example.com>"), "zhuo@example.com"),
            (Some("\"a \\\" <b> c\" <real@example.com>"), "real@example.com"),
            (Some("plain@example.com, other@example.com"), "plain@example.com"),
            (Some("\"Real Name <real@corp.com>\""), "MAILER-DAEMON"),
            (Some("Undisclosed recipients:;"), "MAILER-DAEMON"),
            (None, "MAILER-DAEMON"),
            (Some("jörg <jörg@exämple.org>"), "MAILER-DAEMON"),
            (Some("john doe <@example.org>"), "MAILER-DAEMON"),
            (Some("<root@>"), "MAILER-DAEMON"),
        ] {
            assert_eq!(mbox_sender(from), want, "{from:?}");
        }
    }
}

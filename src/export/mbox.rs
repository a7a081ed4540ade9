//! mboxrd out: each message after a `From ` line, `>From ` escaping that can be undone exactly.

use std::io::Write;

use crate::dates::asctime;

/// mboxrd (the variant that can be undone exactly): each message after a `From ` line, every line
/// of it matching `^>*From ` given one more `>`, and followed by an empty line, as Python's
/// `mailbox` and mail delivery agents write them. A reader that takes the empty line before each
/// `From ` line, and at the end of the file, as the format's (as mailshelf's does) gets every
/// message back byte for byte; one that does not end with a line end gains one, so that its last
/// line and the next `From ` line can never run together.
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

//! mboxrd out: each message after a `From ` line, `>From ` escaping that can be undone exactly.

use std::io::Write;

use crate::dates::asctime;

/// mboxrd (the variant that can be undone exactly): each message after a `From ` line, every line
/// of it matching `^>*From ` given one more `>`. One newline goes before each `From ` line but the
/// first (an empty line after a message that ends with one), rather than after each message: the
/// file then ends with the last message's own bytes, and a reader that drops the newline before a
/// separator (as mailshelf's does) gets every message back byte for byte, including one that does
/// not end with a newline (its `From ` line then follows a line of its own text and is told apart
/// by the header field after it).
pub(crate) struct MboxWriter<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> MboxWriter<W> {
    pub(crate) fn new(out: W) -> Self {
        MboxWriter { out, first: true }
    }

    /// Adds one message: the Internet message's bytes (for a file in another format, the message
    /// made of it), from `sender` at `timestamp` (seconds since the epoch).
    pub(crate) fn add(&mut self, sender: &str, timestamp: Option<i64>, raw: &[u8]) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(b"\n")?;
        }
        self.first = false;
        writeln!(self.out, "From {sender} {}", asctime(timestamp.unwrap_or(0)))?;
        for line in raw.split_inclusive(|&b| b == b'\n') {
            let gts = line.iter().take_while(|&&b| b == b'>').count();
            if line[gts..].starts_with(b"From ") {
                self.out.write_all(b">")?;
            }
            self.out.write_all(line)?;
        }
        Ok(())
    }

    pub(crate) fn into_inner(self) -> W {
        self.out
    }
}

/// The address for a `From ` line: the sender's address, else `MAILER-DAEMON`; never with white
/// space, which would end the field.
pub(crate) fn mbox_sender(from: Option<&str>) -> String {
    let from = from.unwrap_or("");
    let first = from.split(", ").next().unwrap_or("");
    let addr = match (first.rfind('<'), first.rfind('>')) {
        (Some(a), Some(b)) if a < b => &first[a + 1..b],
        _ => first,
    };
    let addr = addr.trim();
    if addr.contains('@') && !addr.chars().any(|c| c.is_whitespace() || c.is_control()) {
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
        w.add("c@d", Some(0), b"Subject: z\n\nz\n").unwrap();
        let out = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            out,
            "From a@b Thu Jan  1 00:00:00 1970\nSubject: x\n\n>From here\n>>From there\nnot From\n\n\
             From MAILER-DAEMON Thu Jan  1 00:00:00 1970\nSubject: y\n\nno newline\n\
             From c@d Thu Jan  1 00:00:00 1970\nSubject: z\n\nz\n"
        );
    }
}

//! A multipart body cut into its parts, and a part's header told from its body, as RFC 2046 §5.1.1
//! and RFC 5322 §2.1 say and as Python's `email` package and mail clients read them; for the
//! messages whose structure mail-parser misreads (see `mime::rebuild`). Bytes only: what the
//! parts hold is read elsewhere.
//!
//! A delimiter is a whole line: `--` and the boundary at the start of the line, then `--` for the
//! close delimiter, then white space only (transport padding). A line that merely begins with the
//! boundary, or has it in its middle, is content. The line break before a delimiter belongs to the
//! delimiter. Cutting each multipart at its own delimiters only, inside the range its parent gave
//! it, is how a parent's delimiter ends a child multipart that never closed: the child's range
//! already stops there.

use std::ops::Range;

/// A multipart body cut at its delimiter lines.
#[derive(Debug, PartialEq)]
pub(super) struct Cut {
    /// Each part's bytes (header and body), in order.
    pub parts: Vec<Range<usize>>,
    /// Whether the close delimiter was found: when not, the last part ran to the end of the range
    /// (a message cut short, or a multipart its writer never closed).
    pub closed: bool,
    /// The preamble: with no part at all, it is all the body holds.
    pub preamble: Range<usize>,
}

/// Cuts `raw[body]` at the delimiter lines of `boundary`. Consecutive delimiters make no empty
/// part between them (as Python reads them), unless they are the only ones: a close delimiter
/// right after the first delimiter closes one empty part; a last part that runs to the end without a close
/// delimiter loses its last line break, which a delimiter would have taken, and is there (empty)
/// even when nothing follows its delimiter.
pub(super) fn cut(raw: &[u8], body: Range<usize>, boundary: &[u8]) -> Cut {
    let end = body.end.min(raw.len());
    let mut parts = Vec::new();
    let mut open: Option<usize> = None;
    let mut preamble = body.start..end;
    let mut at = body.start.min(end);
    while at < end {
        let line_end = memchr::memchr(b'\n', &raw[at..end]).map_or(end, |i| at + i + 1);
        if let Some(close) = delimiter(&raw[at..line_end], boundary) {
            let before = at - eol_before(raw, body.start, at);
            match open {
                Some(start) if start < at => parts.push(start..before.max(start)),
                // A close delimiter on the line after the only delimiter: the multipart holds one
                // empty part (RFC 2046 §5.1.1 gives every multipart one at least; MIME4J reads it so).
                Some(start) if close && parts.is_empty() => parts.push(start..start),
                Some(_) => {}
                // A close delimiter with no part before it leaves the preamble whole, line break
                // and all: it is all the multipart holds.
                None if close => preamble = body.start..at,
                None => preamble = body.start..before.max(body.start),
            }
            if close {
                return Cut { parts, closed: true, preamble };
            }
            open = Some(line_end);
        }
        at = line_end;
    }
    // A delimiter with nothing after it still opens a part, an empty one.
    if let Some(start) = open {
        parts.push(start..end - eol_before(raw, start, end));
    }
    Cut { parts, closed: false, preamble }
}

/// `Some(true)` for a close delimiter line, `Some(false)` for a delimiter line, `None` for any
/// other line (`line` includes its line break).
pub(super) fn delimiter(line: &[u8], boundary: &[u8]) -> Option<bool> {
    let rest = line.strip_prefix(b"--")?.strip_prefix(boundary)?;
    let (close, rest) = match rest.strip_prefix(b"--") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    rest.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')).then_some(close)
}

/// The length of the line break that ends just before `at` (0 when there is none, or when it
/// would reach before `floor`).
fn eol_before(raw: &[u8], floor: usize, at: usize) -> usize {
    if at >= floor + 2 && raw[at - 2..at] == *b"\r\n" {
        2
    } else if at > floor && raw[at - 1] == b'\n' {
        1
    } else {
        0
    }
}

/// Where the header of the part in `raw[part]` ends and where its body begins: at the first empty
/// line (the body after it), or at a line that is neither a header field nor the folded
/// continuation of one and after which the header does not go on, which is where a header that
/// runs into its body stops (the body starts with that line; Python's `email` package and MimeKit
/// read it so). A field is a name of printable characters, optional white space and a colon (RFC
/// 5322 §3.6.8, and §4.5's white space before the colon). A line that is not a field belongs to the
/// header all the same when a field follows it before the empty line (a stray line, which RFC 5322
/// leaves in the header section and mail clients skip), unless it or a line before that field
/// begins with `--` (a delimiter); when the line before it ends in `;` (a parameter list its writer wrapped without
/// indenting it). (A first line `From `, the mbox separator some files keep, is such a stray line.)
pub(super) fn header_end(raw: &[u8], part: Range<usize>) -> (usize, usize) {
    let end = part.end.min(raw.len());
    let mut at = part.start.min(end);
    let mut after_semicolon = false;
    // Where the field lies that makes the stray lines before it part of the header (found once
    // for all of them, so a long run of stray lines is looked through once).
    let mut field_ahead = at;
    while at < end {
        let line_end = next_line(raw, at, end);
        let line = &raw[at..line_end];
        if matches!(line, b"\n" | b"\r\n") {
            return (at, line_end);
        }
        let header_line = after_semicolon || is_folded(line) || is_field(line) || at < field_ahead;
        if !header_line {
            match field_after(raw, line_end, end) {
                Some(field) if !line.starts_with(b"--") => field_ahead = field,
                _ => return (at, at),
            }
        }
        after_semicolon = line.trim_ascii_end().ends_with(b";");
        at = line_end;
    }
    (end, end)
}

/// Where the first field from `at` on begins, when one comes before an empty line, a line
/// beginning `--`, or the end.
fn field_after(raw: &[u8], mut at: usize, end: usize) -> Option<usize> {
    while at < end {
        let line_end = next_line(raw, at, end);
        let line = &raw[at..line_end];
        if matches!(line, b"\n" | b"\r\n") || line.starts_with(b"--") {
            return None;
        }
        if is_field(line) {
            return Some(at);
        }
        at = line_end;
    }
    None
}

/// Where the line that starts at `at` ends (after its line break), at most at `end`.
fn next_line(raw: &[u8], at: usize, end: usize) -> usize {
    memchr::memchr(b'\n', &raw[at..end]).map_or(end, |i| at + i + 1)
}

fn is_folded(line: &[u8]) -> bool {
    line.starts_with(b" ") || line.starts_with(b"\t")
}

fn is_field(line: &[u8]) -> bool {
    let name = line.iter().take_while(|&&b| b.is_ascii_graphic() && b != b':').count();
    let space = line[name..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    name > 0 && line.get(name + space) == Some(&b':')
}

/// Whether `raw` begins as a message does: with a header (a field, a folded line, a stray line a
/// field follows, as [`header_end`] reads them) or an empty line (no header at all); not with a
/// line of its body.
pub(super) fn opens_header(raw: &[u8]) -> bool {
    raw.is_empty() || header_end(raw, 0..raw.len()).0 > 0 || matches!(raw, [b'\n', ..] | [b'\r', b'\n', ..])
}

/// A header (as [`header_end`] bounds it) made readable to a parser that knows only the RFC's
/// folding: the lines [`header_end`] took as continuations without their indentation get one, and
/// a parameter whose value begins on a folded line (`boundary=` ending one line, the value on the
/// next) is joined to its `=`. `None` when there is nothing to mend.
pub(super) fn mended_header(header: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    let mut after_semicolon = false;
    while at < header.len() {
        let line_end = memchr::memchr(b'\n', &header[at..]).map_or(header.len(), |i| at + i + 1);
        let line = &header[at..line_end];
        let unindented = after_semicolon && !(is_folded(line) || is_field(line));
        let joined = folded_after_equals(line, &header[line_end..]);
        if unindented || joined.is_some() || out.is_some() {
            let buf = out.get_or_insert_with(|| header[..at].to_vec());
            if unindented {
                buf.push(b' ');
            }
            match joined {
                // The line break after `=` and the next line's indentation go.
                Some(eq) => {
                    buf.extend_from_slice(&line[..=eq]);
                    let indent = header[line_end..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
                    at = line_end + indent;
                    after_semicolon = false;
                    continue;
                }
                None => buf.extend_from_slice(line),
            }
        }
        after_semicolon = line.trim_ascii_end().ends_with(b";");
        at = line_end;
    }
    out
}

/// Where the `=` is when `line` ends with one (and white space), and `next` is a folded line.
fn folded_after_equals(line: &[u8], next: &[u8]) -> Option<usize> {
    let body = line.trim_ascii_end();
    let folded = next.starts_with(b" ") || next.starts_with(b"\t");
    (folded && body.ends_with(b"=") && line.len() > body.len()).then(|| body.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts, whether the close delimiter was found, and the preamble.
    type Cutting<'a> = (&'a [&'a str], bool, &'a str);

    fn parts<'a>(raw: &'a str, boundary: &str) -> (Vec<&'a str>, bool, &'a str) {
        let c = cut(raw.as_bytes(), 0..raw.len(), boundary.as_bytes());
        (c.parts.iter().map(|r| &raw[r.clone()]).collect(), c.closed, &raw[c.preamble])
    }

    #[test]
    fn delimiters_are_whole_lines() {
        let cases: &[(&str, &str, Cutting<'_>)] = &[
            ("pre\r\n--b\r\nA\r\n--b\r\nB\r\n--b--\r\nepilogue\r\n", "b", (&["A", "B"], true, "pre")),
            ("--b\nA\n--b--\n", "b", (&["A"], true, "")),
            // Transport padding after the delimiter; a longer boundary, a boundary mid-line, and a
            // delimiter preceded by anything are content.
            ("--b \t\nA\n--bc\nB\n x--b\n--b--\n", "b", (&["A\n--bc\nB\n x--b"], true, "")),
            ("--b\ninvalid--b--\n", "b", (&["invalid--b--"], false, "")),
            // Consecutive delimiters make no empty part; an empty line between them does.
            ("--b\n--b\nA\n--b--", "b", (&["A"], true, "")),
            ("--b\nA\n--b\n\n--b--", "b", (&["A", ""], true, "")),
            // A close delimiter right after the only delimiter closes one empty part.
            ("pre\r\n--b\r\n--b--\r\n\r\nepilogue\r\n", "b", (&[""], true, "pre")),
            // Cut short: the last part runs to the end, less the line break a delimiter would take.
            ("--b\nA\n--b\nB\n", "b", (&["A", "B"], false, "")),
            ("--b\nA\n--b\nB", "b", (&["A", "B"], false, "")),
            ("--b\nA\n--b\n", "b", (&["A", ""], false, "")),
            // No delimiter at all: everything is preamble.
            ("just text\n--b--\n", "b", (&[], true, "just text\n")),
            ("just text\n", "b", (&[], false, "just text\n")),
        ];
        for (raw, boundary, (want, closed, preamble)) in cases {
            assert_eq!(parts(raw, boundary), (want.to_vec(), *closed, *preamble), "{raw:?}");
        }
    }

    #[test]
    fn a_header_ends_at_its_blank_line_or_where_it_runs_into_the_body() {
        let cases: &[(&str, (&str, &str))] = &[
            ("A: 1\r\nB: 2\r\n\r\nbody", ("A: 1\r\nB: 2\r\n", "body")),
            ("A: 1\n folded\nB : obsolete\n\nbody", ("A: 1\n folded\nB : obsolete\n", "body")),
            ("A: 1\nTWFueSBoYW5kcw==\n\nmore", ("A: 1\n", "TWFueSBoYW5kcw==\n\nmore")),
            ("A: 1\n--outer\n", ("A: 1\n", "--outer\n")),
            ("A: 1\nstray line\nB: 2\n\nbody", ("A: 1\nstray line\nB: 2\n", "body")),
            ("A: 1\npreamble\n--b\nB: 2\n\nbody", ("A: 1\n", "preamble\n--b\nB: 2\n\nbody")),
            ("A: 1\n--b\nB: 2\n\nbody", ("A: 1\n", "--b\nB: 2\n\nbody")),
            ("A: 1\none\ntwo\nB: 2\nthree\n\nbody", ("A: 1\none\ntwo\nB: 2\n", "three\n\nbody")),
            ("\nbody", ("", "body")),
            ("A: 1\n", ("A: 1\n", "")),
        ];
        for (raw, (header, body)) in cases {
            let (h, b) = header_end(raw.as_bytes(), 0..raw.len());
            assert_eq!((&raw[..h], &raw[b..]), (*header, *body), "{raw:?}");
        }
        // A parameter list wrapped without indentation goes on, even with no field after it.
        let wrapped = "Content-Type: application/zip; x-mode=0600;\nname=\"a.zip\"\n\nUEsD";
        let (h, b) = header_end(wrapped.as_bytes(), 0..wrapped.len());
        assert_eq!((&wrapped[..h], &wrapped[b..]), (&wrapped[..wrapped.len() - 5], "UEsD"));
        let from = "From a@b Mon Jan  1 00:00:00 2024\nSubject: x\n\nbody";
        assert_eq!(&from[header_end(from.as_bytes(), 0..from.len()).1..], "body");
    }

    #[test]
    fn headers_are_mended_for_a_parser_that_knows_only_the_rfc() {
        let cases: &[(&[u8], Option<&[u8]>)] = &[
            (
                b"Content-Type: multipart/signed; boundary=\r\n \"b\"; micalg=sha1\r\n",
                Some(b"Content-Type: multipart/signed; boundary=\"b\"; micalg=sha1\r\n"),
            ),
            (
                b"Content-Type: text/plain; charset= \n\tutf-8; name=\n x\n",
                Some(b"Content-Type: text/plain; charset=utf-8; name=x\n"),
            ),
            (
                b"Content-Type: application/zip;\nname=\"a.zip\"\nX: 1\n",
                Some(b"Content-Type: application/zip;\n name=\"a.zip\"\nX: 1\n"),
            ),
            (b"Content-Type: multipart/mixed;\r\n boundary=\"b\"\r\n", None),
            (b"Content-Type: text/plain; name=\"a=\"\r\n", None),
        ];
        for (input, want) in cases {
            assert_eq!(mended_header(input).as_deref(), *want, "{}", String::from_utf8_lossy(input));
        }
        assert!(opens_header(b"Subject: x\n") && opens_header(b"\r\nbody") && opens_header(b"From a b\nSubject: x\n"));
        assert!(!opens_header(b"[original message goes here]\n") && !opens_header(b"this is not a message\n"));
    }
}

//! Whether mail-parser's reading of a message's structure is in doubt, told by the traces its
//! misreadings leave. Each check looks at a few bytes around a part, so well-formed mail costs next
//! to nothing; a message that fails one is read again by [`super::rebuild`].
//!
//! What mail-parser does that Python's `email` package and mail clients do not (mail-parser 0.11):
//! - it looks for one boundary at a time, the innermost: a multipart that never closes (the
//!   enclosing boundary ends it, as old clients wrote) swallows the rest of the message into its
//!   last part, and a last part cut short is left undecoded and marked damaged;
//! - it takes `--boundary` anywhere, in the middle of a line or as the start of a longer boundary,
//!   for a delimiter;
//! - after a message enclosed directly in an enclosed message, it loses the parts that follow;
//! - it skips a line of a part's header that is not a field (a header running into its body
//!   without the blank line), taking the body's first line for a header;
//! - it reads `boundary=` followed by a folded line as no boundary at all.

use mail_parser::{HeaderName, MimeHeaders, PartType};

use crate::parse::boundary::{delimiter, mended_header};
use crate::parse::MAX_DEPTH;

/// Whether `msg`, as mail-parser read it, shows a sign of misreading.
pub(super) fn misread(msg: &mail_parser::Message<'_>) -> bool {
    let mut boundaries = Vec::new();
    in_doubt(msg, 0, &mut boundaries, 0)
}

/// Whether every part mail-parser made of a message hangs in its tree (after a message enclosed
/// directly in an enclosed message, mail-parser files the parts that follow into the wrong
/// message, under no multipart).
fn whole_tree(msg: &mail_parser::Message<'_>) -> bool {
    let mut count = 0;
    let mut stack = vec![0u32];
    while let Some(pid) = stack.pop() {
        count += 1;
        if count > msg.parts.len() {
            return false;
        }
        if let Some(PartType::Multipart(children)) = msg.parts.get(pid as usize).map(|p| &p.body) {
            stack.extend(children.iter().filter(|&&c| c != pid));
        }
    }
    count == msg.parts.len()
}

/// Checks part `pid` of `msg` and what it holds; `boundaries` are those of the multiparts around it.
fn in_doubt<'a>(msg: &'a mail_parser::Message<'_>, pid: usize, boundaries: &mut Vec<&'a [u8]>, depth: usize) -> bool {
    let Some(part) = msg.parts.get(pid) else { return false };
    if depth > MAX_DEPTH * 2 {
        return false;
    }
    if pid == 0 && !whole_tree(msg) {
        return true;
    }
    let raw: &[u8] = &msg.raw_message;
    if part.is_encoding_problem
        || folded_parameter(part, raw)
        || skipped_header_line(part, raw)
        || said_twice(part, raw)
    {
        return true;
    }
    let ct = part.content_type();
    let declared_multipart = ct.is_some_and(|c| c.ctype().eq_ignore_ascii_case("multipart"));
    match &part.body {
        PartType::Multipart(children) => {
            let Some(boundary) = ct.and_then(|c| c.attribute("boundary")).map(str::as_bytes) else { return true };
            // A boundary that begins with an enclosing one: the enclosing multipart's delimiters
            // are among its lines.
            if children.is_empty() || boundaries.iter().any(|b| boundary.starts_with(b)) {
                return true;
            }
            if !delimited(msg, part, children, boundary, raw) {
                return true;
            }
            boundaries.push(boundary);
            let doubt = children.iter().any(|&c| c as usize != pid && in_doubt(msg, c as usize, boundaries, depth + 1));
            boundaries.pop();
            doubt
        }
        _ if declared_multipart => true,
        PartType::Message(inner) => in_doubt(inner, 0, boundaries, depth + 1),
        _ => false,
    }
}

/// Whether each child of a multipart lies between whole delimiter lines of its boundary: a
/// delimiter line before the first, a delimiter after each but the last, the close delimiter after
/// the last.
fn delimited(
    msg: &mail_parser::Message<'_>,
    part: &mail_parser::MessagePart<'_>,
    children: &[u32],
    boundary: &[u8],
    raw: &[u8],
) -> bool {
    let Some(first) = children.first().and_then(|&c| msg.parts.get(c as usize)) else { return false };
    let start = (first.offset_header as usize).min(raw.len());
    let line_start = raw[..start.saturating_sub(1)].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if start <= part.offset_body as usize || delimiter(&raw[line_start..start], boundary) != Some(false) {
        return false;
    }
    children.iter().enumerate().all(|(n, &c)| {
        let Some(child) = msg.parts.get(c as usize) else { return false };
        let end = (child.offset_end as usize).min(raw.len());
        let rest = &raw[end..];
        let Some(next) = rest.strip_prefix(b"\r\n").or_else(|| rest.strip_prefix(b"\n")) else { return false };
        let line = &next[..memchr::memchr(b'\n', next).map_or(next.len(), |i| i + 1)];
        delimiter(line, boundary) == Some(n + 1 == children.len())
    })
}

/// Whether mail-parser skipped a line between the fields of a part's header: anything but white
/// space between one field and the next, or between the last and the body.
fn skipped_header_line(part: &mail_parser::MessagePart<'_>, raw: &[u8]) -> bool {
    let blank = |from: usize, to: usize| raw.get(from..to).is_none_or(|b| b.iter().all(u8::is_ascii_whitespace));
    let mut at = part.offset_header as usize;
    for h in &part.headers {
        if !blank(at, h.offset_field as usize) {
            return true;
        }
        at = h.offset_end as usize;
    }
    !blank(at, part.offset_body as usize)
}

/// Whether a Content-Type or Content-Disposition parameter's value begins on a folded line
/// (`boundary=` at the end of one line, its value on the next).
fn folded_parameter(part: &mail_parser::MessagePart<'_>, raw: &[u8]) -> bool {
    part.headers.iter().any(|h| {
        matches!(h.name, HeaderName::ContentType | HeaderName::ContentDisposition)
            && raw.get(h.offset_start as usize..h.offset_end as usize).is_some_and(|v| mended_header(v).is_some())
    })
}

/// Whether a part says its Content-Type or its Content-Transfer-Encoding twice, differently:
/// mail-parser takes the last, Python's `email` and mail clients the first.
fn said_twice(part: &mail_parser::MessagePart<'_>, raw: &[u8]) -> bool {
    [HeaderName::ContentType, HeaderName::ContentTransferEncoding].iter().any(|name| {
        let mut values = part
            .headers
            .iter()
            .filter(|h| h.name == *name)
            .map(|h| raw.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default().trim_ascii());
        values.next().is_some_and(|first| values.any(|v| v != first))
    })
}

//! text/plain → safe HTML: everything escaped, links made clickable, quoted lines marked by depth,
//! and `format=flowed` (RFC 3676) re-flowed into paragraphs.

use linkify::{LinkFinder, LinkKind};

use crate::model::{Body, Message, PartIdx};

/// One logical line: its quote depth and its text (a whole paragraph when flowed).
struct Line {
    depth: usize,
    text: String,
}

/// Renders plain text. `flowed` and `delsp` come from the Content-Type parameters.
pub fn render(text: &str, flowed: bool, delsp: bool) -> String {
    render_with(text, flowed, delsp, false)
}

/// A text part of a message rendered as its Content-Type says (`format=flowed`, `delsp=yes`), with
/// `fold` as in [`render_with`]; `None` for a part that is not text.
pub(crate) fn render_part(msg: &Message, idx: PartIdx, fold: bool) -> Option<String> {
    let p = msg.parts.get(idx)?;
    let Body::Text(t) = &p.body else { return None };
    let flowed = p.param("format").is_some_and(|f| f.eq_ignore_ascii_case("flowed"));
    let delsp = p.param("delsp").is_some_and(|d| d.eq_ignore_ascii_case("yes"));
    Some(render_with(t, flowed, delsp, fold))
}

/// As [`render`]; with `fold`, each quoted passage is folded away in a `<details>` (no script
/// needed to open it), as a conversation view shows replies.
pub(crate) fn render_with(text: &str, flowed: bool, delsp: bool, fold: bool) -> String {
    let lines = if flowed { unflow(text, delsp) } else { plain_lines(text) };
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut depth = 0;
    for line in lines {
        if fold && depth == 0 && line.depth > 0 {
            out.push_str("<details class=\"quoted\"><summary>Quoted text</summary>");
        }
        while depth < line.depth {
            out.push_str("<blockquote class=\"quote\">");
            depth += 1;
        }
        while depth > line.depth {
            out.push_str("</blockquote>");
            depth -= 1;
        }
        if fold && depth == 0 && out.ends_with("</blockquote>") {
            out.push_str("</details>");
        }
        linkify_into(&line.text, &mut out);
        out.push('\n');
    }
    while depth > 0 {
        out.push_str("</blockquote>");
        depth -= 1;
    }
    if fold && out.ends_with("</blockquote>") {
        out.push_str("</details>");
    }
    out
}

/// Quote depth of a line: `>` markers, which fixed-format mail often separates with spaces.
fn quote_depth(line: &str, allow_spaces: bool) -> (usize, &str) {
    let mut depth = 0;
    let mut rest = line;
    loop {
        let trimmed = if allow_spaces && depth > 0 { rest.trim_start_matches(' ') } else { rest };
        match trimmed.strip_prefix('>') {
            Some(r) => {
                depth += 1;
                rest = r;
            }
            None => break,
        }
    }
    if depth > 0 {
        rest = rest.strip_prefix(' ').unwrap_or(rest);
    }
    (depth, rest)
}

fn plain_lines(text: &str) -> Vec<Line> {
    text.lines()
        .map(|l| {
            let (depth, rest) = quote_depth(l, true);
            Line { depth, text: rest.to_string() }
        })
        .collect()
}

/// RFC 3676 §4: a line ending in a space continues on the next line of the same quote depth; the
/// signature separator `-- ` never flows; a leading space is stuffing and goes.
fn unflow(text: &str, delsp: bool) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut open = false;
    for raw in text.lines() {
        let (depth, rest) = if raw.starts_with('>') { quote_depth(raw, false) } else { (0, raw) };
        let rest = if depth == 0 { rest.strip_prefix(' ').unwrap_or(rest) } else { rest };
        let is_sig = rest == "-- ";
        let soft = rest.ends_with(' ') && !is_sig;
        let piece = if soft && delsp { &rest[..rest.len() - 1] } else { rest };
        match out.last_mut() {
            Some(last) if open && last.depth == depth => last.text.push_str(piece),
            _ => out.push(Line { depth, text: piece.to_string() }),
        }
        open = soft;
    }
    out
}

fn linkify_into(text: &str, out: &mut String) {
    let mut finder = LinkFinder::new();
    finder.kinds(&[LinkKind::Url, LinkKind::Email]);
    for span in finder.spans(text) {
        let s = span.as_str();
        match span.kind() {
            Some(LinkKind::Url) if s.starts_with("http://") || s.starts_with("https://") => {
                push_link(out, s, s);
            }
            Some(LinkKind::Email) => push_link(out, &format!("mailto:{s}"), s),
            _ => out.push_str(&html_escape::encode_text(s)),
        }
    }
}

fn push_link(out: &mut String, href: &str, text: &str) {
    out.push_str("<a href=\"");
    out.push_str(&html_escape::encode_double_quoted_attribute(href));
    out.push_str("\" target=\"_blank\" rel=\"noopener noreferrer\">");
    out.push_str(&html_escape::encode_text(text));
    out.push_str("</a>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_links() {
        let out = render("<b>x</b> see https://example.org/a?b=1&c=2.", false, false);
        assert!(out.starts_with("&lt;b&gt;x&lt;/b&gt; see <a href=\"https://example.org/a?b=1&amp;c=2\""));
        assert!(out.contains("rel=\"noopener noreferrer\""));
        assert!(!render("javascript:alert(1)", false, false).contains("<a"));
    }

    #[test]
    fn quotes_fold_for_conversations() {
        let html = render_with("Sounds good.\n> When shall we meet?\n>> Soon?\nThanks\n> tail", false, false, true);
        assert_eq!(html.matches("<details class=\"quoted\">").count(), 2);
        assert_eq!(html.matches("</details>").count(), 2);
        assert!(html.starts_with("Sounds good.\n<details"));
        assert!(html.ends_with("</blockquote></details>"));
        assert!(!render("> q\n", false, false).contains("details"));
    }

    #[test]
    fn quotes_nest() {
        let out = render("hi\n> one\n> > two\nback", false, false);
        assert_eq!(
            out,
            "hi\n<blockquote class=\"quote\">one\n<blockquote class=\"quote\">two\n</blockquote></blockquote>back\n"
        );
    }

    #[test]
    fn format_flowed_reflows() {
        let out = render("This is a \nflowed para.\n>quoted \n>more\n-- \nsig", true, false);
        assert_eq!(out, "This is a flowed para.\n<blockquote class=\"quote\">quoted more\n</blockquote>-- \nsig\n");
        assert_eq!(render("ab \ncd", true, true), "abcd\n");
    }
}

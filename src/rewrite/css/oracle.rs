//! A second, independent reading of CSS Syntax 3 tokenizing, written by hand: the oracle the
//! differential tests in `tests.rs` hold the cssparser scan to. It grew out of the tokenizer the
//! stylesheet rewrite used before cssparser, with what that one got wrong against the spec (bad
//! urls and bad strings taken for references, `\r` and form feed not read as line breaks, `5url(`
//! and `#url(` taken for functions, `url("…" …)` cut at the first `)`) put right.
//!
//! It works on bytes and decodes only what the scan needs (names, strings, urls); everything else is
//! measured, not built. Section numbers are those of CSS Syntax Module Level 3 (2021 CR).

use super::{css_string, strings_are_urls};

/// The same contract as [`super::scan`], reached by a different road.
pub(super) fn scan(css: &str, out: &mut String, map: &mut dyn FnMut(&str) -> String) {
    let mut i = 0;
    // Where the string that would be an `@import`'s URL may start: just after `@import`, and after
    // each space or comment that follows.
    let mut import_at = usize::MAX;
    // The closing byte each open block waits for, and whether its strings are URLs.
    let mut open: Vec<(u8, bool)> = Vec::new();
    while i < css.len() {
        let (tok, end) = token(css, i);
        let written = match tok {
            Tok::Url { value, bad: false } => Some(format!("url({})", css_string(&map(&value)))),
            Tok::Url { bad: true, .. } => Some(r#"url("about:invalid")"#.to_string()),
            Tok::String { value, bad: false } if import_at == i || open.last() == Some(&(b')', true)) => {
                Some(css_string(&map(&value)))
            }
            Tok::Function(name) if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") => {
                match first_string(css, end) {
                    Some((value, after)) => {
                        out.push_str(&format!("url({})", css_string(&map(&value))));
                        i = past_close(css, after);
                        continue;
                    }
                    None => {
                        open.push((b')', false));
                        None
                    }
                }
            }
            Tok::Function(name) => {
                open.push((b')', strings_are_urls(&name)));
                None
            }
            Tok::AtKeyword(name) if name.eq_ignore_ascii_case("import") => {
                import_at = end;
                None
            }
            Tok::Space | Tok::Comment if import_at == i => {
                import_at = end;
                None
            }
            Tok::Open(close) => {
                open.push((close, false));
                None
            }
            Tok::Close(close) => {
                if open.last().map(|o| o.0) == Some(close) {
                    open.pop();
                }
                None
            }
            _ => None,
        };
        out.push_str(written.as_deref().unwrap_or(&css[i..end]));
        i = end;
    }
}

/// From just inside a `url(` or `src(`: its first argument if that is a string, and the index
/// after it.
fn first_string(css: &str, mut i: usize) -> Option<(String, usize)> {
    while i < css.len() {
        match token(css, i) {
            (Tok::Space | Tok::Comment, end) => i = end,
            (Tok::String { value, bad: false }, end) => return Some((value, end)),
            _ => return None,
        }
    }
    None
}

/// From just inside a function, the index after its matching `)` (§5.4.9), or the end.
fn past_close(css: &str, mut i: usize) -> usize {
    let mut open = vec![b')'];
    while i < css.len() {
        let (tok, end) = token(css, i);
        match tok {
            Tok::Function(_) => open.push(b')'),
            Tok::Open(close) => open.push(close),
            Tok::Close(close) if open.last() == Some(&close) => {
                open.pop();
                if open.is_empty() {
                    return end;
                }
            }
            _ => {}
        }
        i = end;
    }
    css.len()
}

/// A token, as much of it as the scan needs.
enum Tok {
    Comment,
    Space,
    String {
        value: String,
        bad: bool,
    },
    Url {
        value: String,
        bad: bool,
    },
    Function(String),
    AtKeyword(String),
    /// `(`, `[` or `{`, with the byte that closes it.
    Open(u8),
    Close(u8),
    Other,
}

fn is_newline(c: u8) -> bool {
    matches!(c, b'\n' | b'\r' | b'\x0c')
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t') || is_newline(c)
}

/// §4.2: letters, `_`, and every non-ASCII code point (a NUL reads as U+FFFD, §3.3).
fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 || c == 0
}

fn is_name(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit() || c == b'-'
}

fn at(b: &[u8], i: usize) -> Option<u8> {
    b.get(i).copied()
}

/// §4.3.8: a backslash not followed by a line break.
fn valid_escape(b: &[u8], i: usize) -> bool {
    at(b, i) == Some(b'\\') && !at(b, i + 1).is_some_and(is_newline)
}

/// §4.3.9.
fn starts_ident(b: &[u8], i: usize) -> bool {
    match at(b, i) {
        Some(b'-') => at(b, i + 1).is_some_and(|c| is_ident_start(c) || c == b'-') || valid_escape(b, i + 1),
        Some(b'\\') => valid_escape(b, i),
        Some(c) => is_ident_start(c),
        None => false,
    }
}

/// §4.3.10.
fn starts_number(b: &[u8], i: usize) -> bool {
    let digit = |j| at(b, j).is_some_and(|c: u8| c.is_ascii_digit());
    match at(b, i) {
        Some(b'+' | b'-') => digit(i + 1) || (at(b, i + 1) == Some(b'.') && digit(i + 2)),
        Some(b'.') => digit(i + 1),
        Some(c) => c.is_ascii_digit(),
        None => false,
    }
}

/// The index after a line break starting at `i` (CR LF is one, §3.3).
fn past_newline(b: &[u8], i: usize) -> usize {
    if b[i] == b'\r' && at(b, i + 1) == Some(b'\n') {
        i + 2
    } else {
        i + 1
    }
}

/// The index after the whole UTF-8 character starting at `i`.
fn past_char(css: &str, i: usize) -> usize {
    i + css[i..].chars().next().map_or(1, char::len_utf8)
}

/// §4.3.7: the escaped code point whose backslash is just before `i`, and the index after it.
fn escape(css: &str, i: usize) -> (char, usize) {
    let b = css.as_bytes();
    let hex = b[i..].iter().take(6).take_while(|c| c.is_ascii_hexdigit()).count();
    if hex > 0 {
        let code = u32::from_str_radix(&css[i..i + hex], 16).unwrap_or(0);
        let mut end = i + hex;
        if at(b, end).is_some_and(is_space) {
            end = past_newline(b, end);
        }
        (char::from_u32(code).filter(|&c| c != '\0').unwrap_or('\u{fffd}'), end)
    } else if i >= b.len() {
        ('\u{fffd}', i)
    } else if b[i] == 0 {
        ('\u{fffd}', i + 1)
    } else {
        let end = past_char(css, i);
        (css[i..end].chars().next().unwrap_or('\u{fffd}'), end)
    }
}

/// Pushes the character at `i` (a NUL as U+FFFD, §3.3) and returns the index after it.
fn push_char(css: &str, i: usize, to: &mut String) -> usize {
    if css.as_bytes()[i] == 0 {
        to.push('\u{fffd}');
        return i + 1;
    }
    let end = past_char(css, i);
    to.push_str(&css[i..end]);
    end
}

/// §4.3.11: the name starting at `i`, decoded, and the index after it.
fn name(css: &str, mut i: usize) -> (String, usize) {
    let b = css.as_bytes();
    let mut name = String::new();
    while i < b.len() {
        if valid_escape(b, i) {
            let (c, end) = escape(css, i + 1);
            name.push(c);
            i = end;
        } else if is_name(b[i]) {
            i = push_char(css, i, &mut name);
        } else {
            break;
        }
    }
    (name, i)
}

/// §4.3.1: the token starting at `i` and the index after it.
fn token(css: &str, i: usize) -> (Tok, usize) {
    let b = css.as_bytes();
    let c = b[i];
    match c {
        b'/' if at(b, i + 1) == Some(b'*') => {
            let end = css[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            (Tok::Comment, end)
        }
        c if is_space(c) => {
            let end = b[i..].iter().position(|&c| !is_space(c)).map_or(b.len(), |n| i + n);
            (Tok::Space, end)
        }
        b'"' | b'\'' => string(css, i),
        b'(' => (Tok::Open(b')'), i + 1),
        b'[' => (Tok::Open(b']'), i + 1),
        b'{' => (Tok::Open(b'}'), i + 1),
        b')' | b']' | b'}' => (Tok::Close(c), i + 1),
        b'#' if at(b, i + 1).is_some_and(is_name) || valid_escape(b, i + 1) => (Tok::Other, name(css, i + 1).1),
        b'@' if starts_ident(b, i + 1) => {
            let (name, end) = name(css, i + 1);
            (Tok::AtKeyword(name), end)
        }
        b'<' if css[i..].starts_with("<!--") => (Tok::Other, i + 4),
        b'-' if css[i..].starts_with("-->") => (Tok::Other, i + 3),
        _ if starts_number(b, i) => (Tok::Other, numeric(css, i)),
        _ if starts_ident(b, i) => ident_like(css, i),
        _ => (Tok::Other, past_char(css, i)),
    }
}

/// §4.3.3 and §4.3.12: a number, percentage or dimension; only its end matters.
fn numeric(css: &str, mut i: usize) -> usize {
    let b = css.as_bytes();
    let digits = |mut j: usize| {
        while at(b, j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
        j
    };
    if matches!(b[i], b'+' | b'-') {
        i += 1;
    }
    i = digits(i);
    if at(b, i) == Some(b'.') && at(b, i + 1).is_some_and(|c| c.is_ascii_digit()) {
        i = digits(i + 1);
    }
    if matches!(at(b, i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(at(b, i + 1), Some(b'+' | b'-')));
        if at(b, i + 1 + sign).is_some_and(|c| c.is_ascii_digit()) {
            i = digits(i + 1 + sign);
        }
    }
    if starts_ident(b, i) {
        name(css, i).1
    } else if at(b, i) == Some(b'%') {
        i + 1
    } else {
        i
    }
}

/// §4.3.4: an identifier, a function, or (after `url(` with no quote) a url token.
fn ident_like(css: &str, i: usize) -> (Tok, usize) {
    let b = css.as_bytes();
    let (name, end) = name(css, i);
    if at(b, end) != Some(b'(') {
        return (Tok::Other, end);
    }
    if !name.eq_ignore_ascii_case("url") {
        return (Tok::Function(name), end + 1);
    }
    let body = b[end + 1..].iter().position(|&c| !is_space(c)).map_or(b.len(), |n| end + 1 + n);
    if matches!(at(b, body), Some(b'"' | b'\'')) {
        return (Tok::Function(name), end + 1);
    }
    url(css, body)
}

/// §4.3.6: the rest of a url token, from its first non-space character.
fn url(css: &str, mut i: usize) -> (Tok, usize) {
    let b = css.as_bytes();
    let mut value = String::new();
    while i < b.len() {
        match b[i] {
            b')' => return (Tok::Url { value, bad: false }, i + 1),
            c if is_space(c) => {
                let after = b[i..].iter().position(|&c| !is_space(c)).map_or(b.len(), |n| i + n);
                return match at(b, after) {
                    None => (Tok::Url { value, bad: false }, after),
                    Some(b')') => (Tok::Url { value, bad: false }, after + 1),
                    Some(_) => bad_url(css, after, value),
                };
            }
            b'"' | b'\'' | b'(' | 0x01..=0x08 | 0x0b | 0x0e..=0x1f | 0x7f => return bad_url(css, i, value),
            b'\\' if valid_escape(b, i) => {
                let (c, end) = escape(css, i + 1);
                value.push(c);
                i = end;
            }
            b'\\' => return bad_url(css, i, value),
            _ => i = push_char(css, i, &mut value),
        }
    }
    (Tok::Url { value, bad: false }, i)
}

/// §4.3.14: the remnants of a bad url, up to and with the next `)` that no escape hides.
fn bad_url(css: &str, mut i: usize, value: String) -> (Tok, usize) {
    let b = css.as_bytes();
    while i < b.len() {
        if b[i] == b')' {
            return (Tok::Url { value, bad: true }, i + 1);
        }
        i = if valid_escape(b, i) { escape(css, i + 1).1 } else { past_char(css, i) };
    }
    (Tok::Url { value, bad: true }, i)
}

/// §4.3.5: a string from its opening quote; an unescaped line break ends it as a bad string and is
/// left for the next token.
fn string(css: &str, start: usize) -> (Tok, usize) {
    let b = css.as_bytes();
    let quote = b[start];
    let mut i = start + 1;
    let mut value = String::new();
    while i < b.len() {
        match b[i] {
            q if q == quote => return (Tok::String { value, bad: false }, i + 1),
            c if is_newline(c) => return (Tok::String { value, bad: true }, i),
            b'\\' if i + 1 == b.len() => i += 1,
            b'\\' if is_newline(b[i + 1]) => i = past_newline(b, i + 1),
            b'\\' => {
                let (c, end) = escape(css, i + 1);
                value.push(c);
                i = end;
            }
            _ => i = push_char(css, i, &mut value),
        }
    }
    (Tok::String { value, bad: false }, b.len())
}

//! Finds the references in a stylesheet and rewrites them: `url()`, `src()`, the string of
//! `@import "…"` and the strings of `image-set()` and its kin, in `text/css` parts, `<style>` text
//! and `style=` attributes alike.
//!
//! It is a CSS tokenizer reduced to what carries URLs (CSS Syntax Module Level 3, §4): comments,
//! strings, escapes, identifiers and functions, `url()` tokens and at-keywords, with everything else
//! copied through. It lives apart from the HTML rewrite because it knows nothing of HTML: the HTML
//! side hands it the text and the bookkeeping, and gets the rewritten stylesheet back.

use super::{Options, Outcome, Resolve, State, Use};

/// Rewrites a stylesheet (a `text/css` part): `url()`, `src()`, `@import "…"` and the strings of
/// `image-set()`, each resolved against `base` (the stylesheet's own location).
pub fn rewrite_css(input: &str, base: &str, resolver: &dyn Resolve, opts: Options) -> Outcome {
    let mut st = State { base: base.to_string(), resolver, opts, outcome: Outcome::default(), css: String::new() };
    let output = rewrite_css_with(input, base, &mut st);
    Outcome { output, ..st.outcome }
}

/// A blocked or unresolvable CSS reference becomes this: it loads nothing under any policy.
const CSS_NOWHERE: &str = "about:invalid";

/// Rewrites `css` with `base` in force, recording into `st` (the HTML rewrite calls this for
/// `<style>` text and `style=` attributes, with the document's base).
pub(super) fn rewrite_css_with(css: &str, base: &str, st: &mut State<'_>) -> String {
    let saved = std::mem::replace(&mut st.base, base.to_string());
    let mut out = String::with_capacity(css.len() + 64);
    let mut map =
        |url: &str| -> String { st.map(url, Use::Resource).map(|m| m.url).unwrap_or_else(|| CSS_NOWHERE.to_string()) };
    css_scan(css, &mut out, &mut map);
    st.base = saved;
    out
}

/// Writes `s` as a CSS string literal (§4.3.5 read backwards). Line breaks and `<`, `>` are
/// written as escapes, so a decoded URL can neither end the string nor, inside `<style>`, the
/// element.
fn css_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            '\n' | '\r' | '\x0c' | '<' | '>' => o.push_str(&format!("\\{:x} ", c as u32)),
            c if c.is_control() => o.push_str(&format!("\\{:x} ", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A CSS tokenizer reduced to what carries URLs (CSS Syntax 3 §4): comments, strings, escapes,
/// identifiers and functions, `url()` tokens, and at-keywords. Everything else is copied through.
fn css_scan(css: &str, out: &mut String, map: &mut dyn FnMut(&str) -> String) {
    let b = css.as_bytes();
    let mut i = 0;
    // Strings are URLs right after `@import` and inside image-set()-like functions.
    let mut string_is_url = false;
    let mut fn_depth: Vec<bool> = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = css[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            out.push_str(&css[i..end]);
            i = end;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let (value, end) = read_string(css, i);
            if string_is_url || fn_depth.last().copied().unwrap_or(false) {
                out.push_str(&css_string(&map(&value)));
                string_is_url = false;
            } else {
                out.push_str(&css[i..end]);
            }
            i = end;
            continue;
        }
        if c == b'@' {
            let (name, end) = read_ident(css, i + 1);
            out.push_str(&css[i..end]);
            string_is_url = name.eq_ignore_ascii_case("import");
            i = end.max(i + 1);
            continue;
        }
        if starts_ident(b, i) {
            let (name, end) = read_ident(css, i);
            if b.get(end) == Some(&b'(') {
                let lname = name.to_ascii_lowercase();
                if lname == "url" || lname == "src" {
                    let (value, close) = read_url_body(css, end + 1);
                    out.push_str("url(");
                    out.push_str(&css_string(&map(&value)));
                    out.push(')');
                    string_is_url = false;
                    i = close;
                    continue;
                }
                out.push_str(&css[i..=end]);
                fn_depth.push(matches!(
                    lname.as_str(),
                    "image-set" | "-webkit-image-set" | "image" | "cross-fade" | "-webkit-cross-fade"
                ));
                i = end + 1;
                continue;
            }
            out.push_str(&css[i..end]);
            i = end;
            continue;
        }
        match c {
            b'(' => fn_depth.push(false),
            b')' => {
                fn_depth.pop();
            }
            b';' | b'{' | b'}' => string_is_url = false,
            _ => {}
        }
        // Copy one whole UTF-8 character.
        let len = utf8_len(c);
        let end = (i + len).min(b.len());
        out.push_str(css.get(i..end).unwrap_or(""));
        i = end;
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c >= 0x80
}

/// Whether an identifier starts at `i` (§4.3.9).
fn starts_ident(b: &[u8], i: usize) -> bool {
    let c = b[i];
    c.is_ascii_alphabetic()
        || c == b'_'
        || c >= 0x80
        || (c == b'\\' && b.get(i + 1).is_some_and(|&n| n != b'\n'))
        || (c == b'-' && b.get(i + 1).is_some_and(|&n| is_name_byte(n) || n == b'\\'))
}

/// Reads an identifier from `i`, decoding escapes (§4.3.11); returns it and the index after it.
fn read_ident(css: &str, mut i: usize) -> (String, usize) {
    let b = css.as_bytes();
    let mut name = String::new();
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1).is_some_and(|&n| n != b'\n') {
            let (ch, end) = read_escape(css, i + 1);
            name.push(ch);
            i = end;
        } else if is_name_byte(b[i]) {
            let len = utf8_len(b[i]);
            name.push_str(css.get(i..i + len).unwrap_or(""));
            i += len;
        } else {
            break;
        }
    }
    (name, i.min(b.len()))
}

/// Reads a CSS escape whose backslash is just before `i` (§4.3.7).
fn read_escape(css: &str, i: usize) -> (char, usize) {
    let b = css.as_bytes();
    let hex: usize = b[i..].iter().take(6).take_while(|c| c.is_ascii_hexdigit()).count();
    if hex > 0 {
        let code = u32::from_str_radix(&css[i..i + hex], 16).unwrap_or(0xfffd);
        let mut end = i + hex;
        if b.get(end).is_some_and(|c| c.is_ascii_whitespace()) {
            end += 1;
        }
        let ch = char::from_u32(code).filter(|&c| c != '\0').unwrap_or('\u{fffd}');
        (ch, end)
    } else {
        let ch = css[i..].chars().next().unwrap_or('\u{fffd}');
        (ch, i + ch.len_utf8())
    }
}

/// Reads a quoted string starting at its quote (§4.3.5); returns the decoded value and the index
/// after it.
fn read_string(css: &str, start: usize) -> (String, usize) {
    let b = css.as_bytes();
    let quote = b[start];
    let mut i = start + 1;
    let mut value = String::new();
    while i < b.len() {
        match b[i] {
            q if q == quote => return (value, i + 1),
            b'\n' => return (value, i),
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if i + 1 < b.len() => {
                let (ch, end) = read_escape(css, i + 1);
                value.push(ch);
                i = end;
            }
            c => {
                let len = utf8_len(c);
                value.push_str(css.get(i..i + len).unwrap_or(""));
                i += len;
            }
        }
    }
    (value, b.len())
}

/// Reads what follows `url(` up to and including its `)` (§4.3.6); quoted or not, escapes decoded.
/// A broken url token runs to the next `)` or the end, as CSS does (§4.3.14).
fn read_url_body(css: &str, mut i: usize) -> (String, usize) {
    let b = css.as_bytes();
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let mut value = String::new();
    if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
        let (v, end) = read_string(css, i);
        value = v;
        i = end;
    } else {
        while i < b.len() && b[i] != b')' {
            if b[i] == b'\\' && i + 1 < b.len() {
                let (ch, end) = read_escape(css, i + 1);
                value.push(ch);
                i = end;
            } else if b[i].is_ascii_whitespace() {
                i += 1;
            } else {
                let len = utf8_len(b[i]);
                value.push_str(css.get(i..i + len).unwrap_or(""));
                i += len;
            }
        }
    }
    // Skip anything (space, stray tokens) up to the closing parenthesis.
    match css[i.min(b.len())..].find(')') {
        Some(p) => (value, i + p + 1),
        None => (value, b.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Fake;
    use super::*;

    #[test]
    fn css_tokens() {
        let cases = [
            ("a{b:url( \"cid:x\" )}", r#"a{b:url("/p/x")}"#),
            ("a{b:URL(cid:x)}", r#"a{b:url("/p/x")}"#),
            (r"a{b:u\rl(http://evil/1)}", r#"a{b:url("about:invalid")}"#),
            (r"a{b:\75 rl(http://evil/2)}", r#"a{b:url("about:invalid")}"#),
            ("/* url(cid:no) */a{}", "/* url(cid:no) */a{}"),
            ("a{content:'url(cid:no)'}", "a{content:'url(cid:no)'}"),
            ("a{b:image-set('cid:a' 1x, \"http://evil/3\" 2x)}", r#"a{b:image-set("/p/a" 1x, "about:invalid" 2x)}"#),
            ("@import url(http://evil/4);", r#"@import url("about:invalid");"#),
            ("a{b:url(http://evil/5", r#"a{b:url("about:invalid")"#),
            ("a{font-family:\"x\"}", "a{font-family:\"x\"}"),
            ("é{b:url(../i.png)}", r#"é{b:url("/loc/http://local/i.png")}"#),
        ];
        for (input, want) in cases {
            let out = rewrite_css(input, "http://local/css/s.css", &Fake, Options::default());
            assert_eq!(out.output, want, "{input}");
        }
    }
}

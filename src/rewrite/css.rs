//! Finds the references in a stylesheet and rewrites them: `url()`, `src()`, the string of
//! `@import "…"` and the strings of `image-set()` and its kin, in `text/css` parts, `<style>` text
//! and `style=` attributes alike.
//!
//! Tokenizing is left to cssparser, the tokenizer of Firefox's style engine (and already built in
//! through lol_html), so a stylesheet splits here where a browser splits it: what the browser takes
//! for a URL is rewritten, and what it takes for something else (a comment, a string, a bad url,
//! `url (x)` with a space, the dimension `5url(x)`) is not. The hand-written tokenizer this
//! replaces got several of those wrong; it lives on, put right, as the test oracle in
//! `css/oracle.rs`, and `css/tests.rs` holds the two to the same answers. Only the tokens that are
//! replaced are written anew; every byte between them is copied as it stands. Section numbers below
//! are those of CSS Syntax Module Level 3 (W3C Candidate Recommendation, 24 December 2021).

use cssparser::{CowRcStr, Parser, ParserInput, Token};

use super::{Options, Outcome, Resolve, State, Use};

/// Rewrites a stylesheet (a `text/css` part): `url()`, `src()`, `@import "…"` and the strings of
/// `image-set()`, each resolved against `base` (the stylesheet's own location).
pub fn rewrite_css(input: &str, base: &str, resolver: &dyn Resolve, opts: Options) -> Outcome {
    let mut st = State::new(base, resolver, opts);
    let output = rewrite_css_with(input, base, &mut st);
    Outcome { output, ..st.outcome }
}

/// A blocked or unresolvable CSS reference becomes this: it loads nothing under any policy.
const CSS_NOWHERE: &str = "about:invalid";

/// What a bad url is written as (see [`scan`]).
const NOWHERE_URL: &str = r#"url("about:invalid")"#;

/// Rewrites `css` with `base` in force, recording into `st` (the HTML rewrite calls this for
/// `<style>` text and `style=` attributes, with the document's base).
pub(super) fn rewrite_css_with(css: &str, base: &str, st: &mut State<'_>) -> String {
    let saved = std::mem::replace(&mut st.base, base.to_string());
    let mut out = String::with_capacity(css.len() + 64);
    let mut map =
        |url: &str| -> String { st.map(url, Use::Resource).map(|m| m.url).unwrap_or_else(|| CSS_NOWHERE.to_string()) };
    scan(css, &mut out, &mut map);
    st.base = saved;
    out
}

/// Writes `s` as a CSS string literal (§4.3.5 read backwards). Line breaks and `<`, `>` are
/// written as escapes, so a decoded URL can neither end the string nor, inside `<style>`, the
/// element.
pub(super) fn css_string(s: &str) -> String {
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

/// Functions whose string arguments are image URLs (CSS Images 4 §2.2 `image-set()`, §2.3
/// `image()`, §2.6 `cross-fade()`, and the prefixed forms browsers still take).
fn strings_are_urls(function: &str) -> bool {
    ["image-set", "-webkit-image-set", "image", "cross-fade", "-webkit-cross-fade"]
        .iter()
        .any(|f| function.eq_ignore_ascii_case(f))
}

/// A block that is open where the scan stands (§5.4.8 simple blocks, §5.4.9 functions): the
/// closing byte that ends it, and whether its strings are URLs (a function's name decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    close: u8,
    strings_are_urls: bool,
}

impl Block {
    const PAREN: Block = Block { close: b')', strings_are_urls: false };
    const SQUARE: Block = Block { close: b']', strings_are_urls: false };
    const CURLY: Block = Block { close: b'}', strings_are_urls: false };
}

/// What the scan needs of a token, taken out of the parser so that it can go on.
enum Seen<'i> {
    /// A `<url-token>`, decoded.
    Url(CowRcStr<'i>),
    String(CowRcStr<'i>),
    BadUrl,
    /// An at-keyword, and whether it is `@import`.
    AtKeyword(bool),
    /// A `url(` or `src(` function token (CSS Values 4 §4.5).
    UrlFunction,
    /// A token that opens a block.
    Open(Block),
    /// A closing token, by its byte.
    Close(u8),
    Other,
}

fn seen<'i>(token: &Token<'i>) -> Seen<'i> {
    match token {
        Token::UnquotedUrl(url) => Seen::Url(url.clone()),
        Token::QuotedString(string) => Seen::String(string.clone()),
        Token::BadUrl(_) => Seen::BadUrl,
        Token::AtKeyword(name) => Seen::AtKeyword(name.eq_ignore_ascii_case("import")),
        Token::Function(name) if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") => {
            Seen::UrlFunction
        }
        Token::Function(name) => Seen::Open(Block { close: b')', strings_are_urls: strings_are_urls(name) }),
        Token::ParenthesisBlock => Seen::Open(Block::PAREN),
        Token::SquareBracketBlock => Seen::Open(Block::SQUARE),
        Token::CurlyBracketBlock => Seen::Open(Block::CURLY),
        Token::CloseParenthesis => Seen::Close(b')'),
        Token::CloseSquareBracket => Seen::Close(b']'),
        Token::CloseCurlyBracket => Seen::Close(b'}'),
        _ => Seen::Other,
    }
}

/// A `url(` or `src(` function being read: where it starts, how many blocks are open once it is,
/// and its string once that has come first.
struct UrlFunction {
    start: usize,
    depth: usize,
    url: Option<String>,
}

/// Copies `css` to `out`, replacing every reference with `url("<mapped>")` (or, for a bare string,
/// `"<mapped>"`), where `map` answers the URL as decoded.
///
/// Which tokens are references:
/// - a `<url-token>` (§4.3.6: `url(` with an unquoted body), and a `url(` or `src(` function whose
///   first argument is a string: the whole function, up to its matching `)`, is replaced (what
///   follows the string, url modifiers or stray tokens, goes with it). `src(` without a string
///   names no URL and is scanned like any other function.
/// - the string that comes first after `@import` (CSS Cascade 4 §2: `@import [ <url> | <string> ]`;
///   white space and comments may stand between);
/// - a string directly inside one of the functions of [`strings_are_urls`].
///
/// `<bad-string-token>`s (a line break in a string, §4.3.5) are never references, and are copied.
/// Nor is a `<bad-url-token>` (`url(a b)`, `url(a"b)`, §4.3.6): browsers load nothing for it. But
/// they disagree on where one ends: after white space in a url, cssparser (so Firefox) takes a
/// backslash for a plain character, where the spec, Blink and WebKit take it for an escape, so
/// `url(a \);b:url(c)` is one bad url to Blink and a bad url and `url(c)` to Firefox, and
/// `url(a \\);b:url(c)` the other way round. Copied as it stands, such a token would let one
/// browser load what the other reads as inside it, unrewritten. So a bad url is replaced, over the
/// extent the spec gives it, with `url("about:invalid")`, which every browser reads alike, and the
/// scan goes on where the spec says the bad url ends.
///
/// cssparser's `Parser` shows the contents of a block only through a nested parser, by recursion
/// that hostile input nested a million deep would take past the end of the stack. Tokenizing does
/// not depend on nesting (§4), so instead, after each token that opens a block (and after each bad
/// url, to end it where the spec does), the scan starts a fresh parser and keeps the stack of open
/// blocks itself.
pub(super) fn scan(css: &str, out: &mut String, map: &mut dyn FnMut(&str) -> String) {
    let mut blocks: Vec<Block> = Vec::new();
    // Just after `@import`.
    let mut import = false;
    let mut function: Option<UrlFunction> = None;
    // css[..copied] is in `out` already; the current parser reads css[from..].
    let mut copied = 0;
    let mut from = 0;
    let replace = |out: &mut String, copied: &mut usize, start: usize, end: usize, with: &str| {
        out.push_str(&css[*copied..start]);
        out.push_str(with);
        *copied = end;
    };
    'parsers: loop {
        let mut input = ParserInput::new(&css[from..]);
        let mut p = Parser::new(&mut input);
        loop {
            // White space and comments stand between tokens without changing what they are;
            // stepping over them is cheaper than reading them as tokens.
            p.skip_whitespace();
            let start = from + p.position().byte_index();
            let seen = match p.next_including_whitespace_and_comments() {
                Ok(token) => seen(token),
                Err(_) => break 'parsers,
            };
            let end = from + p.position().byte_index();
            let seen = match &mut function {
                None => seen,
                Some(UrlFunction { url: url @ None, .. }) => match seen {
                    Seen::String(string) => {
                        *url = Some(string.to_string());
                        continue;
                    }
                    // Not a string first: an ordinary function, whose block is open already.
                    seen => {
                        function = None;
                        seen
                    }
                },
                // Within `url("…" …)`: all of it goes, up to the `)` that closes it.
                Some(UrlFunction { start: function_start, depth, url: Some(url) }) => {
                    match seen {
                        Seen::BadUrl => {
                            from = bad_url_end(css, start);
                            continue 'parsers;
                        }
                        Seen::UrlFunction => blocks.push(Block::PAREN),
                        Seen::Open(block) => blocks.push(block),
                        Seen::Close(close) if blocks.last().is_some_and(|b| b.close == close) => {
                            blocks.pop();
                            if blocks.len() < *depth {
                                let with = format!("url({})", css_string(&map(url)));
                                replace(out, &mut copied, *function_start, end, &with);
                                function = None;
                            }
                            continue;
                        }
                        _ => continue,
                    }
                    from = end;
                    continue 'parsers;
                }
            };
            let after_import = std::mem::take(&mut import);
            match seen {
                Seen::AtKeyword(is_import) => import = is_import,
                Seen::Url(url) => replace(out, &mut copied, start, end, &format!("url({})", css_string(&map(&url)))),
                Seen::String(url) if after_import || blocks.last().is_some_and(|b| b.strings_are_urls) => {
                    replace(out, &mut copied, start, end, &css_string(&map(&url)));
                }
                Seen::BadUrl => {
                    let spec_end = bad_url_end(css, start);
                    replace(out, &mut copied, start, spec_end, NOWHERE_URL);
                    if spec_end != end {
                        from = spec_end;
                        continue 'parsers;
                    }
                }
                Seen::UrlFunction => {
                    blocks.push(Block::PAREN);
                    function = Some(UrlFunction { start, depth: blocks.len(), url: None });
                    from = end;
                    continue 'parsers;
                }
                Seen::Open(block) => {
                    // Go on inside the block, with a parser of our own (see above).
                    blocks.push(block);
                    from = end;
                    continue 'parsers;
                }
                // A closing token ends the innermost block only if it is of its kind; any other is
                // a stray token inside it (§5.4.8).
                Seen::Close(close) => {
                    if blocks.last().is_some_and(|b| b.close == close) {
                        blocks.pop();
                    }
                }
                Seen::String(_) | Seen::Other => {}
            }
        }
    }
    // A function the stylesheet leaves open ends with it.
    if let Some(UrlFunction { start, url: Some(url), .. }) = function {
        let with = format!("url({})", css_string(&map(&url)));
        replace(out, &mut copied, start, css.len(), &with);
    }
    out.push_str(&css[copied..]);
}

/// Where the bad url starting at `start` (its `url(`) ends by CSS Syntax 3: past the first `)`
/// after `url(` that no backslash escapes (§4.3.6 and §4.3.14 escape alike in both parts of the
/// token; a backslash before a line break escapes nothing). A url token that is not bad ends at the
/// same `)`; it is the escapes after white space that cssparser reads differently.
fn bad_url_end(css: &str, start: usize) -> usize {
    let b = css.as_bytes();
    // The name (`url`, maybe escaped: `u\72l`) holds no `(`: an escaped one would make it no url.
    let Some(open) = css[start..].find('(') else { return b.len() };
    let mut i = start + open + 1;
    while i < b.len() {
        match b[i] {
            b')' => return i + 1,
            // An escape hides the byte after the backslash (of a hex escape, its first digit; of
            // anything else, the first byte of the character, which is `)` or `\\` when it matters).
            b'\\' if b.get(i + 1).is_some_and(|c| !matches!(c, b'\n' | b'\r' | b'\x0c')) => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod oracle;
#[cfg(test)]
mod tests;

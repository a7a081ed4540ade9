//! What the stylesheet rewrite must get right, and a differential run of its cssparser scan
//! against the hand-written tokenizer in `oracle.rs`: over the cases here and over every stylesheet
//! in the corpus, the two must find the same URLs in the same order and write the same output.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::decode_entities;
use super::super::tests::Fake;
use super::{oracle, rewrite_css, scan};
use crate::model::{Body, Message};
use crate::rewrite::Options;

/// Stylesheets and what `rewrite_css` makes of them with [`Fake`], based at the stylesheet's
/// location `http://local/css/s.css`.
const CASES: &[(&str, &str)] = &[
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

#[test]
fn css_tokens() {
    for (input, want) in CASES {
        let out = rewrite_css(input, "http://local/css/s.css", &Fake, Options::default());
        assert_eq!(out.output, *want, "{input}");
    }
}

/// Where tokenizing decides what is a URL (CSS Syntax 3 §4): a stylesheet, the URLs a browser
/// loads from it in order, and the output when each URL `u` maps to `[u]`.
const SPEC: &[(&str, &[&str], &str)] = &[
    // Escapes are decoded in names and URLs (§4.3.7, §4.3.11); `\)` does not end a url token.
    (r"a{b:u\72l(x)}", &["x"], r#"a{b:url("[x]")}"#),
    (r"a{b:url(a\)b\20 c)}", &["a)b c"], r#"a{b:url("[a)b c]")}"#),
    (
        r"a{b:url('a\'b\
c')}",
        &["a'bc"],
        r#"a{b:url("[a'bc]")}"#,
    ),
    // An unquoted url may have white space only before its `)` (§4.3.6); a quote, `(`, a control
    // character or an escaped line break make a bad url, which runs to the next unescaped `)`
    // (§4.3.14) and loads nothing. It is written as `url("about:invalid")` over the extent the spec
    // gives it, which cssparser (so Firefox) reads otherwise for `\)` and `\\)` after white space.
    ("a{b:url(\n x\t)}", &["x"], r#"a{b:url("[x]")}"#),
    ("a{b:url(x y)}c{d:url(z)}", &["z"], r#"a{b:url("about:invalid")}c{d:url("[z]")}"#),
    ("a{b:url(x\"y)}", &[], r#"a{b:url("about:invalid")}"#),
    ("a{b:url(x'y)}", &[], r#"a{b:url("about:invalid")}"#),
    ("a{b:url(x(y)}", &[], r#"a{b:url("about:invalid")}"#),
    ("a{b:url(x\u{1}y)}", &[], r#"a{b:url("about:invalid")}"#),
    ("a{b:url(x\\\ny)}", &[], r#"a{b:url("about:invalid")}"#),
    (r"a{b:url(x y\) url(z))}", &[], r#"a{b:url("about:invalid"))}"#),
    (r"a{b:url(x \);c:url(y)}", &[], r#"a{b:url("about:invalid")}"#),
    (r"a{b:url(x \\);c:url(y)}", &["y"], r#"a{b:url("about:invalid");c:url("[y]")}"#),
    // A url token is no comment, and a comment holds no url.
    ("a{b:url(/*x*/y)}", &["/*x*/y"], r#"a{b:url("[/*x*/y]")}"#),
    ("/*a{b:url(x)}*/c{d:url(y)/*)*/}", &["y"], r#"/*a{b:url(x)}*/c{d:url("[y]")/*)*/}"#),
    ("a{}/* url(x)", &[], "a{}/* url(x)"),
    // A line break (LF, CR or FF, §3.3) ends a string as a bad string, which names nothing (§4.3.5).
    ("@import 'x\ny';", &[], "@import 'x\ny';"),
    ("@import 'x\r\n';", &[], "@import 'x\r\n';"),
    ("a{b:url('x\u{c}y')}", &[], "a{b:url('x\u{c}y')}"),
    // `url (` is an identifier and a parenthesis block, not a function (§4.3.4).
    ("a{b:url (x)}", &[], "a{b:url (x)}"),
    // `5url(` is a dimension and `#url(` a hash (§4.3.3, §4.3.1): no functions either.
    ("a{b:5url(x) #url(y)}", &[], "a{b:5url(x) #url(y)}"),
    // A NUL reads as U+FFFD (§3.3); an empty url is a url all the same.
    ("a{b:url(x\0y)}", &["x\u{fffd}y"], r#"a{b:url("[x�y]")}"#),
    ("a{b:url( )}", &[""], r#"a{b:url("[]")}"#),
    // `url("…")` is a function: its first argument is the URL, and anything after it up to the
    // matching `)` goes with it (CSS Values 4 §4.5 url modifiers).
    ("a{b:url('x' f(')') y)}", &["x"], r#"a{b:url("[x]")}"#),
    ("a{b:url('x'", &["x"], r#"a{b:url("[x]")"#),
    // Where that `)` is depends on where the bad urls inside end.
    (r#"a{b:src("x" url(y \) );c:url(z)}"#, &["x"], r#"a{b:url("[x]")"#),
    (r#"a{b:src("x" url(y \\) ) ;c:url(z)}"#, &["x", "z"], r#"a{b:url("[x]") ;c:url("[z]")}"#),
    // `src()` takes a string only; without one it is just a function, whose contents are scanned.
    ("a{b:src( 'x' )}", &["x"], r#"a{b:url("[x]")}"#),
    ("a{b:src(x url(y))}", &["y"], r#"a{b:src(x url("[y]"))}"#),
    // The strings of image-set() and its kin are URLs; those of type() in them are MIME types.
    (
        "a{b:-webkit-image-set('x' type('image/avif') 1x, url(y) 2x);c:IMAGE('z')}",
        &["x", "y", "z"],
        r#"a{b:-webkit-image-set("[x]" type('image/avif') 1x, url("[y]") 2x);c:IMAGE("[z]")}"#,
    ),
    ("a{b:image-set(] 'x' 1x)}", &["x"], r#"a{b:image-set(] "[x]" 1x)}"#),
    // An `@import`'s URL is what comes first after it; other strings are just strings.
    ("@import/**/'x' screen;a{content:'y'}", &["x"], r#"@import/**/"[x]" screen;a{content:'y'}"#),
    ("@import x 'y';@import ;'z';", &[], "@import x 'y';@import ;'z';"),
    (r"@\69mport url('x') layer(l);@import 'y'", &["x", "y"], r#"@\69mport url("[x]") layer(l);@import "[y]""#),
    (
        "@font-face{src:url(x) format('woff'),local('y')}",
        &["x"],
        r#"@font-face{src:url("[x]") format('woff'),local('y')}"#,
    ),
    // References stand anywhere, however deep.
    (
        "a{b:var(--c,url(x))}[d='url(y)']{--e:{f:url(z)}}",
        &["x", "z"],
        r#"a{b:var(--c,url("[x]"))}[d='url(y)']{--e:{f:url("[z]")}}"#,
    ),
];

type Scan = fn(&str, &mut String, &mut dyn FnMut(&str) -> String);

/// Runs a scan with each URL `u` mapped to `[u]`: the URLs it found, in order, and its output.
fn run(scan: Scan, css: &str) -> (Vec<String>, String) {
    let mut urls = Vec::new();
    let mut out = String::new();
    scan(css, &mut out, &mut |u: &str| {
        urls.push(u.to_string());
        format!("[{u}]")
    });
    (urls, out)
}

#[test]
fn tokenizing_follows_css_syntax() {
    let mut wrong = Vec::new();
    for (name, scan) in [("cssparser", scan as Scan), ("oracle", oracle::scan as Scan)] {
        for (input, urls, output) in SPEC {
            let (got_urls, got_output) = run(scan, input);
            if got_urls != *urls || got_output != *output {
                wrong.push(format!("{name}: {input:?} gives {got_urls:?} {got_output:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn deep_nesting_stays_off_the_stack() {
    let css = format!("a{{b:{}url(x){}}}", "f(".repeat(200_000), ")".repeat(200_000));
    let (urls, out) = run(scan, &css);
    assert_eq!(urls, ["x"]);
    assert_eq!(out.len(), css.len() + r#""[x]""#.len() - 1);
}

/// The two scans on one stylesheet, or what they disagree on.
fn compare(css: &str) -> Result<(), String> {
    let (a, b) = (run(scan, css), run(oracle::scan, css));
    if a == b {
        return Ok(());
    }
    if a.0 != b.0 {
        return Err(format!("URLs: cssparser {:?}, oracle {:?}", a.0, b.0));
    }
    let at = a.1.bytes().zip(b.1.bytes()).take_while(|(x, y)| x == y).count();
    let context = |s: &str| s.get(at.saturating_sub(40)..(at + 40).min(s.len())).unwrap_or("").to_string();
    Err(format!("output from byte {at}: cssparser {:?}, oracle {:?}", context(&a.1), context(&b.1)))
}

#[test]
fn differential_over_the_cases() {
    for css in CASES.iter().map(|c| c.0).chain(SPEC.iter().map(|c| c.0)) {
        if let Err(e) = compare(css) {
            panic!("{css:?}: {e}");
        }
    }
}

/// Pieces that decide where tokens end; random strings of them reach the corners real
/// stylesheets seldom do.
const PIECES: &[&str] = &[
    "url(",
    "URL(",
    "u\\72l(",
    "url(\\",
    "url (",
    "src(",
    "src",
    "image-set(",
    "image",
    "type(",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ",",
    ":",
    "/",
    "*",
    "/*",
    "*/",
    "<!--",
    "-->",
    "@",
    "@import",
    "@\\69mport",
    "@media",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\x0c",
    "\"",
    "'",
    "'x'",
    "\"x\"",
    "\\",
    "\\\\",
    "\\\n",
    "\\\r\n",
    "\\)",
    "\\29 ",
    "\\28 ",
    "\\41 ",
    "\\3a",
    "\\e9",
    "\\0",
    "\0",
    "\x01",
    "\x0b",
    "\x7f",
    "é",
    "x",
    "u",
    "r",
    "l",
    "e",
    "cid:a",
    "http://e/b",
    "5",
    ".5",
    "1e3",
    "+",
    "-",
    "--",
    "#",
    "%",
    "a{b:",
    "!important",
];

#[test]
fn differential_over_generated_stylesheets() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut disagreements = Vec::new();
    for _ in 0..50_000 {
        let len = 1 + next() % 40;
        let css: String = (0..len).map(|_| PIECES[(next() % PIECES.len() as u64) as usize]).collect();
        if let Err(e) = compare(&css) {
            disagreements.push(format!("{css:?}: {e}"));
        }
    }
    let shown: Vec<_> = disagreements.iter().take(20).cloned().collect();
    assert!(disagreements.is_empty(), "{} disagreements, the first:\n{}", disagreements.len(), shown.join("\n"));
}

/// `../shared/corpus` beside the package, or `MAILSHELF_CORPUS`.
fn corpus_dir() -> PathBuf {
    std::env::var_os("MAILSHELF_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

fn message_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for p in entries.flatten().map(|e| e.path()) {
        if p.is_dir() {
            message_files(&p, out);
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["mht", "mhtml", "eml"].iter().any(|x| e.eq_ignore_ascii_case(x)))
        {
            out.push(p);
        }
    }
}

/// Every stylesheet the rewrite would see in a message: `text/css` parts, and the `<style>` text
/// and `style=` attributes of HTML parts, in enclosed messages too.
#[derive(Default)]
struct Sheets {
    parts: Vec<(String, String)>,
    blocks: Vec<(String, String)>,
    attributes: Vec<(String, String)>,
}

impl Sheets {
    fn collect(&mut self, msg: &Message, at: &str) {
        for part in &msg.parts {
            let at = format!("{at} part {}", part.section);
            match &part.body {
                Body::Message(inner) => self.collect(inner, &at),
                Body::Text(text) => match crate::view::served_type(part).as_str() {
                    "text/css" => self.parts.push((at, text.clone())),
                    "text/html" => self.html(text, &at),
                    _ => {}
                },
                _ => {}
            }
        }
    }

    fn html(&mut self, html: &str, at: &str) {
        use lol_html::{element, text, HtmlRewriter, Settings};
        let blocks = RefCell::new(Vec::new());
        let attributes = RefCell::new(Vec::new());
        let pending = RefCell::new(String::new());
        let settings = Settings::new()
            .with_strict(false)
            .append_element_content_handler(text!("style", |chunk| {
                pending.borrow_mut().push_str(chunk.as_str());
                if chunk.last_in_text_node() {
                    blocks.borrow_mut().push(std::mem::take(&mut *pending.borrow_mut()));
                }
                Ok(())
            }))
            .append_element_content_handler(element!("[style]", |el| {
                if let Some(style) = el.get_attribute("style") {
                    attributes.borrow_mut().push(decode_entities(&style));
                }
                Ok(())
            }));
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        let _ = rewriter.write(html.as_bytes()).and_then(|()| rewriter.end());
        self.blocks.extend(blocks.into_inner().into_iter().map(|b| (format!("{at} <style>"), b)));
        self.attributes.extend(attributes.into_inner().into_iter().map(|a| (format!("{at} style="), a)));
    }
}

#[test]
fn differential_over_the_corpus() {
    let corpus = corpus_dir();
    let mut files = Vec::new();
    message_files(&corpus, &mut files);
    files.sort();
    let mut sheets = Sheets::default();
    for file in &files {
        let Ok(bytes) = std::fs::read(file) else { continue };
        if let Ok(msg) = crate::parse::parse_message(Arc::from(bytes)) {
            let name = file.strip_prefix(&corpus).unwrap_or(file).display().to_string();
            sheets.collect(&msg, &name);
        }
    }
    let (mut urls, mut bytes, mut disagreements) = (0, 0, Vec::new());
    let all = sheets.parts.iter().chain(&sheets.blocks).chain(&sheets.attributes);
    for (at, css) in all {
        urls += run(scan, css).0.len();
        bytes += css.len();
        if let Err(e) = compare(css) {
            disagreements.push(format!("{at}: {e}"));
        }
    }
    eprintln!(
        "corpus {}: {} files; {} text/css parts, {} <style> blocks, {} style attributes ({bytes} bytes, {urls} URLs); {} disagreements",
        corpus.display(),
        files.len(),
        sheets.parts.len(),
        sheets.blocks.len(),
        sheets.attributes.len(),
        disagreements.len(),
    );
    // 53 parts, 22 blocks and 628 attributes when this was written.
    assert!(
        sheets.parts.len() >= 40 && sheets.blocks.len() >= 15 && sheets.attributes.len() >= 400,
        "too few stylesheets in the corpus at {}: is it there?",
        corpus.display()
    );
    assert!(disagreements.is_empty(), "the scans disagree:\n{}", disagreements.join("\n"));
}

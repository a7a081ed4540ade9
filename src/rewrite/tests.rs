//! The rewriter's own tests, against a resolver that answers by the shape of what it is asked.

use super::*;

/// Resolves `cid:x` to /p/x, `http(s):` to Remote, and anything else relative to the base to
/// /loc/<resolved>, so tests see which base was in force.
pub(super) struct Fake;
impl Resolve for Fake {
    fn resolve(&self, base: &str, r: &str) -> Target {
        let r = r.trim();
        if let Some(c) = r.strip_prefix("cid:") {
            return Target::Part(format!("/p/{c}"));
        }
        if r.starts_with('#') {
            return Target::Fragment;
        }
        if r.starts_with("javascript:") {
            return Target::Script;
        }
        if r.starts_with("data:") {
            return Target::Data;
        }
        match crate::uri::resolve(base, r) {
            Some(u) if crate::uri::is_network(&u) && !u.starts_with("http://local/") => Target::Remote(u),
            Some(u) => Target::Part(format!("/loc/{u}")),
            None => Target::Unresolved,
        }
    }

    /// `cid:` parts are typed by their id's first word: `cid:png-…` is `image/png`, `cid:svg-…`
    /// `image/svg+xml`, `cid:bin-…` `application/octet-stream`; any other is a Flash movie.
    fn part_type(&self, _base: &str, r: &str) -> Option<String> {
        let id = r.trim().strip_prefix("cid:")?;
        Some(
            match id.split('-').next() {
                Some("png") => "image/png",
                Some("svg") => "image/svg+xml",
                Some("bin") => "application/octet-stream",
                _ => "application/x-shockwave-flash",
            }
            .to_string(),
        )
    }
}

fn html(s: &str) -> Outcome {
    rewrite_html(s, "http://local/", &Fake, Options::default())
}

#[test]
fn attributes_and_styles() {
    let cases = [
        (r#"<img src="cid:a">"#, r#"<img src="/p/a">"#),
        (r#"<img src="cid:a&amp;b">"#, r#"<img src="/p/a&amp;b">"#),
        (r#"<img srcset="cid:a 1x, cid:b 2x">"#, r#"<img srcset="/p/a 1x, /p/b 2x">"#),
        (r#"<img srcset="data:image/png;base64,AA,BB 1x">"#, r#"<img srcset="data:image/png;base64,AA,BB 1x">"#),
        (r#"<img src="http://evil/x.png">"#, r#"<img src="data:,">"#),
        (r#"<img alt="logo" srcset="http://evil/x.png 2x">"#, r#"<img alt="logo" src="data:,">"#),
        (r#"<img alt="no source">"#, r#"<img alt="no source">"#),
        (r#"<div style="background:url('cid:bg')">"#, r#"<div style="background:url(&quot;/p/bg&quot;)">"#),
        ("<style>p{background:url(cid:x)}</style>", r#"<style>p{background:url("/p/x")}</style>"#),
        ("<style>@import 'cid:c';</style>", r#"<style>@import "/p/c";</style>"#),
        ("<script>alert(1)</script><p>ok</p>", "<p>ok</p>"),
        (r#"<a href="javascript:alert(1)" onclick="x()">t</a>"#, "<a>t</a>"),
        (
            r#"<a href="http://x.example/">t</a>"#,
            r#"<a href="http://x.example/" target="_blank" rel="noopener noreferrer">t</a>"#,
        ),
        (r##"<a href="#top">t</a>"##, r##"<a href="#top">t</a>"##),
        (r#"<iframe src="http://evil/"></iframe>"#, "<iframe></iframe>"),
        (r#"<iframe srcdoc="<script>x</script>" src="cid:f"></iframe>"#, r#"<iframe src="/p/f"></iframe>"#),
        (
            r#"<frameset rows="50%,*" onload="x()"><frame src="cid:f"><frame src="http://evil/"></frameset>"#,
            r#"<frameset rows="50%,*"><frame src="/p/f"><frame></frameset>"#,
        ),
        (r#"<meta http-equiv="refresh" content="0;url=http://evil/">x"#, "x"),
        (
            r#"<object data="cid:m" type="application/x-shockwave-flash"><param name=movie value="cid:m"><img src="cid:f"></object><embed src="cid:m">"#,
            r#"<param name=movie value="cid:m"><img src="/p/f">"#,
        ),
        (r#"<applet code="A.class"><p onclick="x()">no Java</p></applet>"#, "<p>no Java</p>"),
        (r#"<base href="http://local/sub/"><img src="a.png">"#, r#"<img src="/loc/http://local/sub/a.png">"#),
        (r#"<svg><image xlink:href="cid:i"/></svg>"#, r#"<svg><image xlink:href="/p/i" /></svg>"#),
        (r#"<form action="http://evil/"><input></form>"#, r#"<form><input disabled=""></form>"#),
        (
            r#"<button formaction="http://evil/">b</button><select disabled><option>o</select><textarea>t</textarea>"#,
            r#"<button disabled="">b</button><select disabled><option>o</select><textarea disabled="">t</textarea>"#,
        ),
        (
            r#"<link crossorigin="anonymous" rel="stylesheet" href="cid:s" integrity="sha384-x">"#,
            r#"<link rel="stylesheet" href="/p/s">"#,
        ),
        (r#"<img crossorigin src="cid:a">"#, r#"<img src="/p/a">"#),
        (
            r#"<template shadowmode="open"><img src="cid:a"></template>"#,
            r#"<template shadowmode="open" shadowrootmode="open"><img src="/p/a"></template>"#,
        ),
    ];
    for (input, want) in cases {
        assert_eq!(html(input).output, want, "{input}");
    }
}

#[test]
fn style_attributes_without_references_stay_as_saved() {
    let cases = [
        r#"<p style="font-family:&#39;A B&#39;, serif; width: calc(1px + 2em)">x</p>"#,
        r#"<p style='content: "&amp;"; margin: var(--m)'>x</p>"#,
        r#"<p style="font-family:&quotA&quot;;b:c(d)">x</p>"#,
        r#"<p style="background: url(&quot;#frag&quot;)">x</p>"#,
    ];
    for input in cases {
        assert_eq!(html(input).output, input);
    }
}

#[test]
fn noscript_content_is_rewritten_as_the_markup_it_becomes() {
    let cases = [
        (r#"<noscript><img src="cid:a"></noscript>"#, r#"<noscript><img src="/p/a"></noscript>"#),
        (
            r#"<noscript><style>p{background:url(cid:b)}</style><link rel=stylesheet href="cid:c"></noscript>"#,
            r#"<noscript><style>p{background:url("/p/b")}</style><link rel=stylesheet href="/p/c"></noscript>"#,
        ),
        (
            r#"<base href="http://local/d/"><noscript><img src="x.png"></noscript>"#,
            r#"<noscript><img src="/loc/http://local/d/x.png"></noscript>"#,
        ),
        (
            r#"<noscript><img src="http://evil/t.gif" onerror="x()"><meta http-equiv="refresh" content="0;url=http://evil/"><script>x()</script></noscript>"#,
            r#"<noscript><img src="data:,"></noscript>"#,
        ),
        // Nested, the inner one is emptied: the outer is read once, whatever the depth.
        (r#"<noscript><p>a<noscript><img src="cid:a"></noscript>b"#, r#"<noscript><p>a<noscript></noscript>b"#),
        ("<noscript>&lt;p&gt; &amp; text</noscript>", "<noscript>&lt;p&gt; &amp; text</noscript>"),
    ];
    for (input, want) in cases {
        assert_eq!(html(input).output, want, "{input}");
    }
    let deep = format!("{}<img src=\"cid:a\">", "<noscript>".repeat(100_000));
    assert!(!html(&deep).output.contains("cid:"));
    assert_eq!(html(r#"<noscript><img src="http://e/1"></noscript>"#).blocked, 1);
}

#[test]
fn style_text_split_across_chunks_is_rewritten_whole() {
    let css = format!("p{{color:red}}{}div{{background:url(cid:late)}}", " ".repeat(40_000));
    let out = html(&format!("<style>{css}</style>")).output;
    assert!(out.contains(r#"url("/p/late")"#));
    assert!(!out.contains("cid:"));
}

#[test]
fn quoted_passages_fold_when_asked() {
    let input = r#"<p>Yes.</p><div class="gmail_quote">On Mon, Ann wrote:<blockquote>old<blockquote>older</blockquote></blockquote></div><p>Bye</p><blockquote type="cite">again</blockquote>"#;
    let folded = rewrite_html(input, "http://local/", &Fake, Options { fold_quotes: true, ..Options::default() });
    let out = folded.output;
    assert_eq!(out.matches("<details").count(), 2, "{out}");
    assert_eq!(out.matches("</details>").count(), 2, "{out}");
    assert!(out.contains(
        r#"<p>Yes.</p><details class="mailshelf-quoted"><summary>Quoted text</summary><div class="gmail_quote">"#
    ));
    assert!(out.contains("</blockquote></div></details><p>Bye</p>"), "{out}");
    assert!(!html(input).output.contains("<details"));
}

#[test]
fn remote_counts_and_allowance() {
    let input = r#"<img src="http://e/1"><link rel=stylesheet href="https://e/2"><div style="background:url(http://e/3)"></div>"#;
    assert_eq!(html(input).blocked, 3);
    let allowed = rewrite_html(input, "http://local/", &Fake, Options { allow_remote: true, ..Options::default() });
    assert_eq!(allowed.blocked, 0);
    assert!(allowed.output.contains(r#"src="http://e/1""#));
}

#[test]
fn pictures_in_object_and_embed_become_images() {
    let cases = [
        (
            r#"<object data="cid:png-a" width="240" height="160" title="A &amp; B" class="c" style="border:1px solid"><p>fallback <img src="http://evil/t.gif"></p></object>"#,
            r#"<img src="/p/png-a" class="c" title="A &amp; B" width="240" height="160" alt="A &amp; B" style="border:1px solid">"#,
        ),
        (
            r#"<embed src="cid:svg-b" width=48 height=48 onload="x()">"#,
            r#"<img src="/p/svg-b" width="48" height="48">"#,
        ),
        (
            r#"<object data="cid:svg-c" style="background:url(cid:png-d)"></object>"#,
            r#"<img src="/p/svg-c" style="background:url(&quot;/p/png-d&quot;)">"#,
        ),
        // A part of unknown type is what the element says it is.
        (r#"<object data="cid:bin-e" type="image/gif"></object>"#, r#"<img src="/p/bin-e">"#),
        (r#"<object data="cid:bin-f" type="application/pdf"><p>f</p></object>"#, "<p>f</p>"),
        // No picture, or none held here: the fallback, as before.
        (r#"<object data="cid:swf-g" type="image/png"><p>no Flash</p></object>"#, "<p>no Flash</p>"),
        (r#"<embed src="cid:swf-h" type="image/png">"#, ""),
        (r#"<object data="http://evil/x.png" type="image/png"><p>remote</p></object>"#, "<p>remote</p>"),
        // A picture in another plugin's fallback shows, as a browser shows the fallback.
        (
            r#"<object data="cid:swf-i"><object data="cid:png-j"><p>inner</p></object></object>"#,
            r#"<img src="/p/png-j">"#,
        ),
    ];
    for (input, want) in cases {
        assert_eq!(html(input).output, want, "{input}");
    }
    // What the picture replaced is neither rewritten nor counted.
    assert_eq!(html(r#"<object data="cid:png-a"><img src="http://evil/t.gif"></object>"#).blocked, 0);
}

#[test]
fn xml_stylesheets_of_xhtml_become_links_before_the_root() {
    let xhtml = |s: &str, allow_remote: bool| {
        let opts = Options { xml_stylesheets: true, allow_remote, ..Options::default() };
        rewrite_html(s, "http://local/", &Fake, opts)
    };
    let page = concat!(
        r#"<?xml version="1.0"?><?xml-stylesheet href="a.css" type="text/css"?>"#,
        r#"<?xml-stylesheet type='text/css' media="print" href='cid:b&amp;c'?>"#,
        r#"<?xml-stylesheet href="alt.css" alternate="yes" title="Alt"?><?xml-stylesheet href="t.xsl" type="text/xsl"?>"#,
        r#"<?xml-stylesheet href="bad.css" type="text/css?><?xml-stylesheet href="http://e/r.css"?>"#,
        r#"<!DOCTYPE html><!-- c --><html><head><link rel="stylesheet" href="cid:own"></head><body><?xml-stylesheet href="late.css"?></body></html>"#,
    );
    let prolog = r#"<?xml version="1.0"?><?xml-stylesheet href="a.css" type="text/css"?><?xml-stylesheet type='text/css' media="print" href='cid:b&amp;c'?><?xml-stylesheet href="alt.css" alternate="yes" title="Alt"?><?xml-stylesheet href="t.xsl" type="text/xsl"?><?xml-stylesheet href="bad.css" type="text/css?><?xml-stylesheet href="http://e/r.css"?><!DOCTYPE html><!-- c -->"#;
    let links = r#"<link rel="stylesheet" href="/loc/http://local/a.css"><link rel="stylesheet" href="/p/b&amp;c" media="print">"#;
    let rest = r#"<html><head><link rel="stylesheet" href="/p/own"></head><body><?xml-stylesheet href="late.css"?></body></html>"#;
    let out = xhtml(page, false);
    assert_eq!(out.output, format!("{prolog}{links}{rest}"));
    assert_eq!(out.blocked, 1);
    let remote = xhtml(page, true).output;
    assert!(remote.contains(r#"<link rel="stylesheet" href="http://e/r.css"><html>"#), "{remote}");
    // HTML knows no processing instructions.
    assert_eq!(html(page).output, format!("{prolog}{rest}"));
    // However many a hostile prolog holds, a bounded number is taken.
    let many = format!("{}<html></html>", r#"<?xml-stylesheet href="a.css"?>"#.repeat(10_000));
    assert_eq!(xhtml(&many, false).output.matches("<link").count(), prolog::MAX_XML_STYLESHEETS);
}

//! A rewritten body readied for paper. The print view's own print rules keep a body from being
//! clipped or fixed (see `templates/print.html`), and they outrank every style sheet; a declaration
//! marked `!important` in an element's `style` attribute outranks them in turn. So, for paper, such
//! declarations of the properties that clip or fix a box lose their `!important`, and the print
//! rules apply to them too; every other byte of the document stays as it was.

use std::ops::Range;

use cssparser::{Parser, ParserInput, Token};
use lol_html::{element, HtmlRewriter, Settings};

/// Whether a property can clip a box's content or fix it to the page.
fn clips(property: &str) -> bool {
    property.starts_with("overflow")
        || matches!(property, "height" | "max-height" | "block-size" | "max-block-size" | "position" | "contain")
}

/// `html`, a rewritten body, with `!important` taken off every clipping declaration of its
/// `style` attributes. A document lol_html cannot finish is returned as it was.
pub fn for_paper(html: &str) -> String {
    let mut output = Vec::with_capacity(html.len());
    let result = {
        let settings = Settings::new().with_strict(false).append_element_content_handler(element!("[style]", |el| {
            if let Some(style) = el.get_attribute("style") {
                if let Some(plain) = unimportant(&style) {
                    el.set_attribute("style", &plain)?;
                }
            }
            Ok(())
        }));
        let mut rewriter = HtmlRewriter::new(settings, |c: &[u8]| output.extend_from_slice(c));
        html.as_bytes().chunks(16 * 1024).try_for_each(|c| rewriter.write(c)).and_then(|()| rewriter.end())
    };
    match result {
        Ok(()) => String::from_utf8(output).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        Err(_) => html.to_string(),
    }
}

/// A declaration list without the `!important` of its clipping declarations; `None` when it has none.
fn unimportant(style: &str) -> Option<String> {
    let mut input = ParserInput::new(style);
    let mut parser = Parser::new(&mut input);
    let mut cut: Vec<Range<usize>> = Vec::new();
    // The property being declared (lowercase), once its colon is read; `name` is a candidate.
    let mut property: Option<String> = None;
    let mut name: Option<String> = None;
    let mut bang: Option<usize> = None;
    loop {
        let start = parser.position().byte_index();
        let Ok(token) = parser.next_including_whitespace_and_comments() else { break };
        match token {
            Token::WhiteSpace(_) | Token::Comment(_) => continue,
            Token::Semicolon => {
                (property, name) = (None, None);
            }
            Token::Ident(id) if property.is_none() && name.is_none() => name = Some(id.to_ascii_lowercase()),
            Token::Colon if property.is_none() => property = name.take(),
            Token::Delim('!') => {
                bang = Some(start);
                continue;
            }
            Token::Ident(id) if id.eq_ignore_ascii_case("important") => {
                if let (Some(from), Some(p)) = (bang, property.as_deref()) {
                    if clips(p) {
                        cut.push(from..parser.position().byte_index());
                    }
                }
            }
            _ => {}
        }
        bang = None;
    }
    if cut.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(style.len());
    let mut at = 0;
    for r in cut {
        out.push_str(style.get(at..r.start)?);
        at = r.end;
    }
    out.push_str(style.get(at..)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_declarations_lose_their_importance_on_paper() {
        let cases = [
            ("height:100vh !important;overflow:auto !important", Some("height:100vh ;overflow:auto ")),
            ("max-height: 600px!IMPORTANT; color: red !important", Some("max-height: 600px; color: red !important")),
            ("POSITION: fixed ! important", Some("POSITION: fixed ")),
            ("overflow-y: scroll /* ! */ !important", Some("overflow-y: scroll /* ! */ ")),
            ("color: red !important; width: 10px !important", None),
            ("background: url(a!important.png); height: 5px", None),
            ("", None),
        ];
        for (style, want) in cases {
            assert_eq!(unimportant(style).as_deref(), want, "{style}");
        }
    }

    #[test]
    fn only_style_attributes_change() {
        let html = "<!doctype html><html><head><style>.a { height: 1px !important }</style></head>\
                    <body><div class=\"a\" style=\"overflow: hidden !important; color: red\">x &amp; y</div></body></html>";
        let out = for_paper(html);
        assert_eq!(out, html.replace("overflow: hidden !important;", "overflow: hidden ;"));
        let untouched = "<p style=\"color: red !important\">plain</p>";
        assert_eq!(for_paper(untouched), untouched);
    }
}

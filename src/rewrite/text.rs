//! The text of HTML as a reader sees it, for the search index and for the page's measure of how
//! much a body says; and text made safe to put into HTML. lol_html reads the markup here as it
//! does for the rewrite, so both see one document.

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::{element, HtmlRewriter, Settings};

/// The text a reader sees in an HTML document (for the search index): no markup, no scripts or
/// styles, character references decoded, elements separated by a space.
pub fn visible_text(html: &str) -> String {
    let text = Rc::new(RefCell::new(String::with_capacity(html.len() / 2)));
    let hidden = Rc::new(RefCell::new(0usize));
    let result = {
        let (t1, t2) = (Rc::clone(&text), Rc::clone(&text));
        let (h1, h2) = (Rc::clone(&hidden), Rc::clone(&hidden));
        let settings = Settings::new()
            .with_strict(false)
            .append_element_content_handler(element!("script, style, template, noscript, head", move |el| {
                *h1.borrow_mut() += 1;
                let h = Rc::clone(&h1);
                if let Some(handlers) = el.end_tag_handlers() {
                    let on_end: lol_html::EndTagHandler<'static> = Box::new(move |_end| {
                        let mut depth = h.borrow_mut();
                        *depth = depth.saturating_sub(1);
                        Ok(())
                    });
                    handlers.push(on_end);
                } else {
                    *h1.borrow_mut() -= 1;
                }
                Ok(())
            }))
            .append_element_content_handler(element!("*", move |_| {
                t1.borrow_mut().push(' ');
                Ok(())
            }))
            .append_document_content_handler(lol_html::doc_text!(move |chunk| {
                if *h2.borrow() == 0 {
                    t2.borrow_mut().push_str(chunk.as_str());
                }
                Ok(())
            }));
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        rewriter.write(html.as_bytes()).and_then(|()| rewriter.end())
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "text extraction stopped early");
    }
    let raw = text.borrow();
    let decoded = html_escape::decode_html_entities(raw.as_str());
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` as HTML text: `&`, `<` and `>` escaped.
pub fn escape_html(s: &str) -> String {
    html_escape::encode_text(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_text_skips_markup_and_scripts() {
        let t = visible_text("<html><head><title>T</title><style>p{}</style></head><body><p>Caf&eacute; <b>bold</b></p><script>x()</script><p>two</p></body></html>");
        assert_eq!(t, "Café bold two");
    }
}

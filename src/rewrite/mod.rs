//! Streams HTML through lol_html, sending every URL-bearing place to a [`Resolve`]r and writing back
//! what it answers. The only module that knows lol_html; pure, no I/O. Stylesheets (`<style>` text,
//! `style=` attributes, `text/css` parts) are rewritten by [`css`], which this module hands the
//! same resolver and bookkeeping so one [`Outcome`] counts both. [`paper`] readies a rewritten
//! body for the print view.
//!
//! Besides rewriting references this is the second line of defence behind the sandbox and CSP the web
//! layer sends: scripts, event handlers, `javascript:` URLs, refreshes, `<base>` and form targets are
//! dropped, and remote resources load nothing unless the caller allows them.
//!
//! What a browser would show of an element the rewrite drops, it shows otherwise: a picture in an
//! `<object>` or `<embed>` (a plugin's element) becomes an `<img>` of it, and an XHTML page's
//! `<?xml-stylesheet?>` (which means nothing to HTML, as which the page is answered) the
//! `<link rel="stylesheet">` it stands for (`pictures` and `prolog`).

use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{ContentType, Element};
use lol_html::{element, text, HtmlRewriter, Settings};

mod css;
pub mod paper;
mod pictures;
mod prolog;

pub use css::rewrite_css;

/// What a reference turned out to name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A body part mailshelf serves, at this URL.
    Part(String),
    /// A whole message's page.
    Page(String),
    /// A network URL (absolute) that no part satisfies.
    Remote(String),
    /// A `data:` URL, kept only where it cannot become a document.
    Data,
    /// `javascript:` and friends.
    Script,
    /// A link that leaves to another program (`mailto:`, `tel:`): harmless to keep on anchors.
    External,
    /// Only a fragment (`#top`): kept as written.
    Fragment,
    /// Nothing satisfies it and it points nowhere on the network.
    Unresolved,
}

/// Maps a reference, with the base URI in force where it stands, to a [`Target`].
pub trait Resolve {
    fn resolve(&self, base: &str, reference: &str) -> Target;

    /// The type the part a reference names is served with (`image/png`), when it names a part the
    /// message holds; `None` for anything else. Asked only where the type decides what an element
    /// becomes: an `<object>` or `<embed>` of a picture.
    fn part_type(&self, _base: &str, _reference: &str) -> Option<String> {
        None
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Let remote images, styles, fonts and media load (the user asked for it).
    pub allow_remote: bool,
    /// Keep every reference and its target in [`Outcome::references`] (tests, diagnostics).
    pub record: bool,
    /// Fold each outermost quoted passage (`blockquote`, Gmail's `.gmail_quote`) away behind a
    /// "Quoted text" `<details>`, as a conversation shows replies; it opens without script.
    pub fold_quotes: bool,
    /// The document is XHTML, which a browser reads as XML: its `<?xml-stylesheet?>` processing
    /// instructions apply, and become `<link rel="stylesheet">`s before its root element.
    pub xml_stylesheets: bool,
}

/// What marks a quoted passage in HTML mail.
const QUOTES: &str = "blockquote, .gmail_quote, .yahoo_quoted";

/// The rewritten document and what happened to its references.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub output: String,
    /// References sent to our own routes.
    pub rewritten: usize,
    /// Remote resources that would have loaded and did not.
    pub blocked: usize,
    /// Every reference seen: the base in force, the reference as written, and what it resolved to
    /// (for tests and diagnostics).
    pub references: Vec<(String, String, Target)>,
}

/// How a URL is used where it stands, which decides what may be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Followed only when the reader clicks (a, area).
    Link,
    /// Loaded with the document: images, styles, fonts, media.
    Resource,
    /// A nested browsing context: iframe, frame.
    Frame,
}

struct State<'r> {
    base: String,
    resolver: &'r dyn Resolve,
    opts: Options,
    outcome: Outcome,
    css: String,
    /// The text of the `<noscript>` being read, gathered until it is whole.
    noscript: String,
    /// An element has started: the prolog, where `<?xml-stylesheet?>` counts, is over.
    in_root: bool,
    /// The `<link>`s the prolog's `<?xml-stylesheet?>`s stand for, written before the root element.
    xml_stylesheets: String,
    /// How many `<?xml-stylesheet?>`s were taken.
    xml_stylesheet_count: usize,
}

impl<'r> State<'r> {
    /// A rewrite's state at its start: references resolve against `base`.
    fn new(base: &str, resolver: &'r dyn Resolve, opts: Options) -> State<'r> {
        State {
            base: base.to_string(),
            resolver,
            opts,
            outcome: Outcome::default(),
            css: String::new(),
            noscript: String::new(),
            in_root: false,
            xml_stylesheets: String::new(),
            xml_stylesheet_count: 0,
        }
    }

    /// Resolves one reference for a use; `None` means the attribute must go.
    fn map(&mut self, reference: &str, use_: Use) -> Option<Mapped> {
        let target = self.resolver.resolve(&self.base, reference);
        if self.opts.record {
            self.outcome.references.push((self.base.clone(), reference.to_string(), target.clone()));
        }
        let mapped = match (&target, use_) {
            (Target::Part(u), _) => Some(Mapped::plain(u)),
            (Target::Page(u), Use::Link) => Some(Mapped::top(u)),
            (Target::Remote(u), Use::Link) => Some(Mapped::new_window(u)),
            (Target::Remote(u), Use::Resource) if self.opts.allow_remote => Some(Mapped::plain(u)),
            (Target::Remote(_), Use::Resource | Use::Frame) => {
                self.outcome.blocked += 1;
                None
            }
            (Target::Data, Use::Resource) => Some(Mapped::plain(reference.trim())),
            (Target::External, Use::Link) => Some(Mapped::new_window(reference.trim())),
            (Target::Fragment, _) => Some(Mapped::plain(reference.trim())),
            _ => None,
        };
        if matches!(target, Target::Part(_) | Target::Page(_)) {
            self.outcome.rewritten += 1;
        }
        mapped
    }
}

struct Mapped {
    url: String,
    target: Option<&'static str>,
}

impl Mapped {
    fn plain(u: &str) -> Self {
        Mapped { url: u.to_string(), target: None }
    }
    fn top(u: &str) -> Self {
        Mapped { url: u.to_string(), target: Some("_top") }
    }
    fn new_window(u: &str) -> Self {
        Mapped { url: u.to_string(), target: Some("_blank") }
    }
}

/// Elements removed with their content: they run code, embed plugins or redirect the document.
/// A `<frameset>` is none of these: it lays out frames, whose sources resolve as an `<iframe>`'s.
const DROPPED_ELEMENTS: &[&str] = &["script", "embed", "base", "portal"];

/// Elements removed while their content stays: a plugin's element, whose content is the fallback
/// a browser shows when the plugin's data does not load (as it never does here).
const FALLBACK_ELEMENTS: &[&str] = &["object", "applet"];

/// Attributes holding one URL; `href` and `src` are decided per element below.
const URL_ATTRIBUTES: &[&str] = &["background", "poster", "lowsrc", "dynsrc", "cite", "longdesc"];

/// Attributes removed wherever they stand. `crossorigin` and `integrity` too: the bytes come from
/// the archive, not the network, so there is nothing for CORS or Subresource Integrity to check —
/// and both would break the page. A CORS-mode fetch from the sandboxed frame (an opaque origin)
/// fails without `Access-Control-Allow-Origin`, which parts do not carry (other sites must not read
/// them), and a stylesheet whose `url()`s were rewritten no longer matches its hash.
const DROPPED_ATTRIBUTES: &[&str] = &[
    "srcdoc",
    "ping",
    "action",
    "formaction",
    "manifest",
    "codebase",
    "classid",
    "archive",
    "data",
    "crossorigin",
    "integrity",
];

/// Form controls, which are shown disabled (see [`rewrite_element`]).
const FORM_CONTROLS: &[&str] = &["input", "button", "select", "textarea"];

/// The source of an image that is not available: loads nothing and fails to decode.
const UNAVAILABLE_IMAGE: &str = "data:,";

/// Rewrites an HTML document. `base` is the part's base URI (RFC 2557 §5); a `<base href>` in the
/// document changes it for what follows and is itself removed.
pub fn rewrite_html(input: &str, base: &str, resolver: &dyn Resolve, opts: Options) -> Outcome {
    rewrite_document(input, base, resolver, opts, false)
}

/// [`rewrite_html`]; `in_noscript` for the content of a `<noscript>`, where a `<noscript>` inside
/// is emptied rather than read again, so that nesting costs no more than one level.
fn rewrite_document(input: &str, base: &str, resolver: &dyn Resolve, opts: Options, in_noscript: bool) -> Outcome {
    let state = Rc::new(RefCell::new(State::new(base, resolver, opts)));
    let mut output = Vec::with_capacity(input.len() + input.len() / 8);
    let result = {
        let on_element = Rc::clone(&state);
        let on_style = Rc::clone(&state);
        let on_noscript = Rc::clone(&state);
        let on_comment = Rc::clone(&state);
        // How deep in quoted passages the rewrite is (`None`: not folding); only the outermost folds.
        let on_quote = Rc::new(std::cell::Cell::new(opts.fold_quotes.then_some(0usize)));
        let mut settings = Settings::new()
            .with_strict(false)
            .append_element_content_handler(element!("*", move |el| {
                rewrite_element(el, &mut on_element.borrow_mut());
                Ok(())
            }))
            .append_element_content_handler(element!(QUOTES, move |el| {
                fold_quote(el, &on_quote);
                Ok(())
            }))
            .append_element_content_handler(text!("style", move |chunk| {
                // <style> text arrives in pieces; rewrite it once it is whole.
                let mut st = on_style.borrow_mut();
                st.css.push_str(chunk.as_str());
                if chunk.last_in_text_node() {
                    let css = std::mem::take(&mut st.css);
                    let base = st.base.clone();
                    let rewritten = css::rewrite_css_with(&css, &base, &mut st);
                    chunk.replace(&rewritten, ContentType::Html);
                } else {
                    chunk.remove();
                }
                Ok(())
            }))
            .append_element_content_handler(text!("noscript", move |chunk| {
                // lol_html reads a <noscript> as a script-running browser does, as text. A message
                // is shown where no script runs, and there the browser reads it as markup — the
                // images and styles a page keeps for readers without script, which Chromium shows
                // in a saved page too. So its text is rewritten as the document it becomes.
                let mut st = on_noscript.borrow_mut();
                st.noscript.push_str(chunk.as_str());
                if chunk.last_in_text_node() && !in_noscript {
                    let inner = std::mem::take(&mut st.noscript);
                    let base = st.base.clone();
                    let opts = Options { xml_stylesheets: false, ..st.opts };
                    let nested = rewrite_document(&inner, &base, st.resolver, opts, true);
                    st.outcome.rewritten += nested.rewritten;
                    st.outcome.blocked += nested.blocked;
                    st.outcome.references.extend(nested.references);
                    chunk.replace(&nested.output, ContentType::Html);
                } else {
                    chunk.remove();
                }
                Ok(())
            }));
        if opts.xml_stylesheets {
            // lol_html reads a processing instruction as HTML does, as a comment: `?target …?`.
            // Only XHTML has its comments looked at, so HTML costs nothing more.
            settings = settings.append_document_content_handler(lol_html::doc_comments!(move |comment| {
                let mut st = on_comment.borrow_mut();
                if !st.in_root {
                    prolog::xml_stylesheet(&comment.text(), &mut st);
                }
                Ok(())
            }));
        }
        let mut rewriter = HtmlRewriter::new(settings, |c: &[u8]| output.extend_from_slice(c));
        // Feed in pieces, as a stream would arrive; lol_html holds only what a token needs.
        input.as_bytes().chunks(16 * 1024).try_for_each(|c| rewriter.write(c)).and_then(|()| rewriter.end())
    };
    let mut outcome = std::mem::take(&mut state.borrow_mut().outcome);
    outcome.output = match result {
        Ok(()) => String::from_utf8(output).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        // A document the rewriter gives up on is shown as text: nothing of it can run or load.
        Err(e) => {
            tracing::warn!(error = %e, "HTML rewrite failed; showing the source as text");
            format!("<pre>{}</pre>", escape_html(input))
        }
    };
    outcome
}

fn rewrite_element(el: &mut Element<'_, '_>, st: &mut State<'_>) {
    // Inside an element replaced or removed with its content: nothing of it is written.
    if el.removed() {
        return;
    }
    if !st.in_root {
        st.in_root = true;
        if !st.xml_stylesheets.is_empty() {
            // After the doctype (a `<link>` before it would put the page in quirks mode), before
            // everything of the document's own: the order a browser applies them in.
            el.before(&std::mem::take(&mut st.xml_stylesheets), ContentType::Html);
        }
    }
    let tag = el.tag_name();
    if tag == "base" {
        if let Some(href) = el.get_attribute("href") {
            let href = decode_entities(&href);
            if let Some(b) = crate::uri::resolve(&st.base, &href) {
                st.base = b;
            }
        }
    }
    if matches!(tag.as_str(), "object" | "embed") && pictures::show_picture(el, &tag, st) {
        return;
    }
    if DROPPED_ELEMENTS.contains(&tag.as_str()) {
        el.remove();
        return;
    }
    if FALLBACK_ELEMENTS.contains(&tag.as_str()) {
        el.remove_and_keep_content();
        return;
    }
    if tag == "meta" && el.has_attribute("http-equiv") {
        el.remove();
        return;
    }
    // Chrome saves a shadow root as `<template shadowmode="open">`, which only its own MHTML loader
    // understands; the standard spelling makes it a declarative shadow root in any browser.
    if tag == "template" && !el.has_attribute("shadowrootmode") {
        if let Some(mode) = el.get_attribute("shadowmode") {
            set_attr(el, "shadowrootmode", &decode_entities(&mode));
        }
    }
    // SVG animation can rewrite an href after load; it has no place in a mail body.
    if matches!(tag.as_str(), "animate" | "set") {
        let target = el.get_attribute("attributename").unwrap_or_default().to_ascii_lowercase();
        if target.ends_with("href") || target.starts_with("on") {
            el.remove();
            return;
        }
    }
    // Nothing in message HTML can submit a form (the frame's sandbox lacks `allow-forms`, its
    // policy says `form-action 'none'`, and `action` is dropped), so its controls are shown as what
    // they are: disabled. Chromium greys form controls in MHTML documents for the same reason, and
    // a reader is not invited to type a password into a form that looks alive.
    if FORM_CONTROLS.contains(&tag.as_str()) && !el.has_attribute("disabled") {
        set_attr(el, "disabled", "");
    }
    let had_image_source = tag == "img" && (el.has_attribute("src") || el.has_attribute("srcset"));
    let names: Vec<String> = el.attributes().iter().map(|a| a.name()).collect();
    let mut link_target: Option<&'static str> = None;
    for name in names {
        let lname = name.to_ascii_lowercase();
        if lname.starts_with("on") || DROPPED_ATTRIBUTES.contains(&lname.as_str()) {
            el.remove_attribute(&name);
            continue;
        }
        let use_ = match lname.as_str() {
            "href" | "xlink:href" if matches!(tag.as_str(), "a" | "area") => Some(Use::Link),
            "href" | "xlink:href" => Some(Use::Resource),
            "src" if matches!(tag.as_str(), "iframe" | "frame") => Some(Use::Frame),
            "src" => Some(Use::Resource),
            n if URL_ATTRIBUTES.contains(&n) => {
                Some(if matches!(n, "cite" | "longdesc") { Use::Link } else { Use::Resource })
            }
            _ => None,
        };
        let is_srcset = lname == "srcset" || lname == "imagesrcset";
        if use_.is_none() && !is_srcset && lname != "style" {
            continue;
        }
        let Some(value) = el.get_attribute(&name) else { continue };
        // Most style attributes name no URL at all: leave them as they are.
        if lname == "style" && !value.contains(['(', '@', '\\', '&']) {
            continue;
        }
        let value = decode_entities(&value);
        if let Some(use_) = use_ {
            match st.map(&value, use_) {
                Some(m) => {
                    if use_ == Use::Link {
                        link_target = m.target.or(link_target);
                    }
                    set_attr(el, &name, &m.url);
                }
                None => el.remove_attribute(&name),
            }
        } else if is_srcset {
            let rewritten = rewrite_srcset(&value, st);
            if rewritten.is_empty() {
                el.remove_attribute(&name);
            } else {
                set_attr(el, &name, &rewritten);
            }
        } else if lname == "style" {
            let base = st.base.clone();
            let css = css::rewrite_css_with(&value, &base, st);
            // Written back only when a reference in it changed: written back, the attribute
            // would come out re-encoded (its character references and quotes as lol_html writes
            // them), and a reference `decode_entities` reads otherwise than HTML does would
            // change what the browser reads.
            if css != value {
                set_attr(el, &name, &css);
            }
        }
    }
    if let Some(t) = link_target {
        set_attr(el, "target", t);
        set_attr(el, "rel", "noopener noreferrer");
    }
    // An image whose every source was dropped (blocked, or found nowhere in the message) is an
    // image that failed to load, and a browser shows it so: the broken-image icon and its `alt`
    // text, as Chromium does for an image missing from a saved page. Without a source it would
    // vanish instead. An empty `data:` URL fails at once and never becomes a request.
    if had_image_source && !el.has_attribute("src") && !el.has_attribute("srcset") {
        set_attr(el, "src", UNAVAILABLE_IMAGE);
    }
}

/// A value written inside double quotes.
pub(super) fn attribute_value(value: &str) -> String {
    html_escape::encode_double_quoted_attribute(value).into_owned()
}

/// lol_html escapes `"` in attribute values but not `&`; escape it so the value reads back as written.
fn set_attr(el: &mut Element<'_, '_>, name: &str, value: &str) {
    let _ = el.set_attribute(name, &value.replace('&', "&amp;"));
}

/// Wraps an outermost quoted passage in a closed `<details>`; nested ones stay as they are.
fn fold_quote(el: &mut lol_html::html_content::Element, depth: &Rc<std::cell::Cell<Option<usize>>>) {
    let Some(d) = depth.get() else { return };
    if !el.can_have_content() || el.removed() {
        return;
    }
    if d == 0 {
        el.before("<details class=\"mailshelf-quoted\"><summary>Quoted text</summary>", ContentType::Html);
    }
    let Some(handlers) = el.end_tag_handlers() else { return };
    depth.set(Some(d + 1));
    let depth = Rc::clone(depth);
    handlers.push(Box::new(move |end| {
        let d = depth.get().unwrap_or(1).saturating_sub(1);
        depth.set(Some(d));
        if d == 0 {
            end.after("</details>", ContentType::Html);
        }
        Ok(())
    }));
}

/// Attribute values come with character references still in them (`cid:a&amp;b`).
pub(super) fn decode_entities(s: &str) -> String {
    if s.contains('&') {
        html_escape::decode_html_entities(s).into_owned()
    } else {
        s.to_string()
    }
}

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

pub fn escape_html(s: &str) -> String {
    html_escape::encode_text(s).into_owned()
}

/// Rewrites each candidate of a `srcset` (HTML's parsing rules: a URL runs to white space, and a
/// trailing comma ends it, so `data:` URLs with commas survive). Dropped candidates vanish.
fn rewrite_srcset(value: &str, st: &mut State<'_>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ',');
        if rest.is_empty() {
            break;
        }
        let url_end = rest.find(|c: char| c.is_ascii_whitespace()).unwrap_or(rest.len());
        let mut url = &rest[..url_end];
        rest = &rest[url_end..];
        let descriptor;
        if url.ends_with(',') {
            url = url.trim_end_matches(',');
            descriptor = "";
        } else {
            // Descriptors run to the next comma outside parentheses.
            let mut depth = 0usize;
            let mut end = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    ',' if depth == 0 => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            descriptor = rest[..end].trim();
            rest = &rest[end..];
        }
        if let Some(m) = st.map(url, Use::Resource) {
            out.push(if descriptor.is_empty() { m.url } else { format!("{} {descriptor}", m.url) });
        }
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
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
    fn visible_text_skips_markup_and_scripts() {
        let t = visible_text("<html><head><title>T</title><style>p{}</style></head><body><p>Caf&eacute; <b>bold</b></p><script>x()</script><p>two</p></body></html>");
        assert_eq!(t, "Café bold two");
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
}

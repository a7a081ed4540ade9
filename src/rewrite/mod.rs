//! Streams HTML through lol_html, sending every URL-bearing place to a [`Resolve`]r and writing back
//! what it answers. The only module that knows lol_html; pure, no I/O. Stylesheets (`<style>` text,
//! `style=` attributes, `text/css` parts) are rewritten by [`css`], which this module hands the
//! same resolver and bookkeeping so one [`Outcome`] counts both. [`paper`] readies a rewritten
//! body for the print view; `text` gives what a reader sees of HTML, for the search index.
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
mod text;

pub use css::rewrite_css;
pub use text::{escape_html, visible_text};

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
mod tests;

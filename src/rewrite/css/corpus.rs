//! The stylesheet rewrite over every stylesheet in the corpus (`../shared/corpus`, or
//! `MAILSHELF_CORPUS`): the `text/css` parts, `<style>` elements and `style=` attributes of its
//! saved pages (MHTML, Safari `.webarchive`) and of its mail (`.eml`, mbox, Maildir, `.msg`,
//! `.emlx`, `.pst`), each as saved and as served. Two differential runs: the cssparser scan
//! against the oracle in `oracle.rs`, and each stylesheet against its own rewrite, which must keep
//! every byte but those of its URLs.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use lol_html::{element, text, HtmlRewriter, Settings};

use super::super::{decode_entities, rewrite_html};
use super::tests::{compare, run};
use super::{oracle, rewrite_css, scan};
use crate::index::Access;
use crate::ingest::{pst, sniff_file, Claim, Kind, MboxReader};
use crate::model::{Body, Message};
use crate::rewrite::Options;
use crate::route::Resolver;

/// Where a stylesheet stands in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Part,
    Block,
    Attribute,
}

/// One stylesheet of the corpus, as saved and as served.
struct Sheet {
    /// The file, the part and the place in it.
    at: String,
    place: Place,
    saved: String,
    served: String,
}

/// Every stylesheet of the corpus.
struct Corpus {
    /// Files that held at least one message.
    files: usize,
    sheets: Vec<Sheet>,
    /// Styles of elements the HTML rewrite drops whole (`<object>`, `<script>`, …): not served.
    dropped: usize,
}

impl Corpus {
    fn count(&self, place: Place) -> usize {
        self.sheets.iter().filter(|s| s.place == place).count()
    }

    /// Asserts that the corpus is there, and says what it holds.
    fn check_found(&self) {
        let (parts, blocks, attributes) =
            (self.count(Place::Part), self.count(Place::Block), self.count(Place::Attribute));
        eprintln!(
            "corpus {}: {} files with messages; {} stylesheets: {parts} text/css parts, {blocks} <style> \
             elements, {attributes} style attributes ({} more on elements the rewrite drops)",
            crate::testing::corpus_dir().display(),
            self.files,
            self.sheets.len(),
            self.dropped,
        );
        // 1,192 files; 64 parts, 120 elements and 28,988 attributes when this was written.
        assert!(
            self.files >= 1000 && parts >= 40 && blocks >= 100 && attributes >= 20_000,
            "too few stylesheets in the corpus at {}: is it there?",
            crate::testing::corpus_dir().display()
        );
    }
}

/// The corpus, read once for every test here.
fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = crate::testing::corpus_dir();
        let mut corpus = Corpus { files: 0, sheets: Vec::new(), dropped: 0 };
        for found in crate::ingest::walk(&root) {
            let path = found.path.as_path();
            let name = path.strip_prefix(&root).unwrap_or(path).display().to_string();
            let messages = match sniff_file(path, Claim::of(&found)) {
                Ok(Kind::Message) => std::fs::read(path).map(|b| vec![(name, b)]).unwrap_or_default(),
                Ok(Kind::Mbox) => mbox_messages(path, &name),
                Ok(Kind::Pst) => pst_messages(path, &name),
                Ok(Kind::Dbox) => dbox_messages(path, &name),
                Ok(Kind::Framed(framing)) => framed_messages(path, framing, &name),
                _ => continue,
            };
            corpus.files += usize::from(!messages.is_empty());
            for (at, bytes) in messages {
                if let Ok(msg) = crate::parse::parse_file(Arc::from(bytes), Some(path)) {
                    collect(&msg, &at, &mut corpus);
                }
            }
        }
        corpus
    })
}

fn mbox_messages(path: &Path, name: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    MboxReader::new(file, 0)
        .filter_map(Result::ok)
        .map(|m| (format!("{name} at {}", m.offset), crate::ingest::unescape_from_lines(m.raw)))
        .collect()
}

fn dbox_messages(path: &Path, name: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    crate::ingest::DboxReader::new(std::io::BufReader::new(file), usize::MAX)
        .map_while(Result::ok)
        .map(|m| (format!("{name} at {}", m.offset), m.given.bytes))
        .collect()
}

fn framed_messages(path: &Path, framing: crate::ingest::Framing, name: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(file) = std::fs::File::open(path) else { return Vec::new() };
    crate::ingest::SpansReader::new(std::io::BufReader::new(file), framing, usize::MAX)
        .map_while(Result::ok)
        .map(|m| (format!("{name} at {}", m.offset), m.given.bytes))
        .collect()
}

fn pst_messages(path: &Path, name: &str) -> Vec<(String, Vec<u8>)> {
    let Ok(listing) = pst::list(path) else { return Vec::new() };
    listing
        .items
        .iter()
        .filter_map(|item| Some((format!("{name} item {}", item.node), pst::item_msg(path, item.node).ok()?)))
        .collect()
}

/// The stylesheets of `msg` and of the messages it encloses: a `text/css` part as it is served,
/// and the `<style>` text and `style=` attributes of an HTML part as they stand in the part's
/// rewritten HTML, each beside its saved self.
fn collect(msg: &Message, at: &str, corpus: &mut Corpus) {
    for (idx, part) in msg.parts.iter().enumerate() {
        let at = format!("{at} part {}", part.section);
        let text = match &part.body {
            Body::Message(inner) => {
                collect(inner, &at, corpus);
                continue;
            }
            Body::Text(text) => text,
            _ => continue,
        };
        let served = crate::view::served_type(part);
        if !crate::view::is_document(part, &served) {
            continue;
        }
        let resolver = Resolver { archive: None, access: &Access::EVERYTHING, key: "k", msg, part: idx, remote: false };
        if served == "text/css" {
            let rewritten = rewrite_css(text, &part.base, &resolver, Options::default()).output;
            corpus.sheets.push(Sheet { at, place: Place::Part, saved: text.clone(), served: rewritten });
            continue;
        }
        // Each style numbered in the saved HTML finds its rewrite by its number.
        let numbered = number_styles(text);
        let saved = styles(&numbered);
        let served = styles(&rewrite_html(&numbered, &part.base, &resolver, Options::default()).output);
        for ((n, place), saved) in saved {
            match served.get(&(n, place)) {
                Some(served) => corpus.sheets.push(Sheet {
                    at: format!("{at} {place:?} {n}"),
                    place,
                    saved,
                    served: served.clone(),
                }),
                None => corpus.dropped += 1,
            }
        }
    }
}

/// The attribute that numbers the styles of a document.
const NUMBER: &str = "data-corpus-style";

/// `html` with every `<style>` element and every element with a `style=` attribute numbered.
fn number_styles(html: &str) -> String {
    let count = RefCell::new(0usize);
    let mut out = Vec::with_capacity(html.len() + html.len() / 8);
    let settings =
        Settings::new().with_strict(false).append_element_content_handler(element!("style, [style]", |el| {
            let mut n = count.borrow_mut();
            *n += 1;
            let _ = el.set_attribute(NUMBER, &n.to_string());
            Ok(())
        }));
    let mut rewriter = HtmlRewriter::new(settings, |c: &[u8]| out.extend_from_slice(c));
    let _ = rewriter.write(html.as_bytes()).and_then(|()| rewriter.end());
    String::from_utf8_lossy(&out).into_owned()
}

/// The `<style>` texts and `style=` attributes (character references decoded) of a numbered
/// document, by number.
fn styles(html: &str) -> BTreeMap<(usize, Place), String> {
    let found = RefCell::new(BTreeMap::new());
    // The number of the `<style>` element whose text is being read, and the text so far.
    let block = RefCell::new((0usize, String::new()));
    let number = |el: &lol_html::html_content::Element<'_, '_>| {
        el.get_attribute(NUMBER).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0)
    };
    let settings = Settings::new()
        .with_strict(false)
        .append_element_content_handler(element!("[style]", |el| {
            if let Some(style) = el.get_attribute("style") {
                found.borrow_mut().insert((number(el), Place::Attribute), decode_entities(&style));
            }
            Ok(())
        }))
        .append_element_content_handler(element!("style", |el| {
            *block.borrow_mut() = (number(el), String::new());
            Ok(())
        }))
        .append_element_content_handler(text!("style", |chunk| {
            let mut block = block.borrow_mut();
            block.1.push_str(chunk.as_str());
            if chunk.last_in_text_node() {
                let (n, text) = std::mem::take(&mut *block);
                found.borrow_mut().insert((n, Place::Block), text);
            }
            Ok(())
        }));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    let _ = rewriter.write(html.as_bytes()).and_then(|()| rewriter.end());
    found.into_inner()
}

#[test]
fn differential_over_the_corpus() {
    if !crate::testing::corpus("differential_over_the_corpus") {
        return;
    }
    let corpus = corpus();
    corpus.check_found();
    let (mut urls, mut bytes, mut disagreements) = (0, 0, Vec::new());
    for sheet in &corpus.sheets {
        urls += run(scan, &sheet.saved).0.len();
        bytes += sheet.saved.len();
        if let Err(e) = compare(&sheet.saved) {
            disagreements.push(format!("{}: {e}", sheet.at));
        }
    }
    eprintln!("{bytes} bytes of CSS, {urls} URLs; {} disagreements", disagreements.len());
    assert!(disagreements.is_empty(), "the scans disagree:\n{}", disagreements.join("\n"));
}

/// A stylesheet with its references blanked: each written as `url("")` (a `url()` or `src()`
/// whole, a bad url too) or `""` (the string of an `@import` or an `image-set()`), as
/// [`oracle::scan`] finds them. What is left of a stylesheet and of its rewrite must be equal.
pub(super) fn blanked(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    oracle::scan(css, &mut out, &mut |_| String::new());
    // The oracle writes a bad url as this, and reads the rewrite's own as an empty URL.
    out.replace(r#"url("about:invalid")"#, r#"url("")"#)
}

/// Where two texts first differ, with some context on either side.
pub(super) fn first_difference(saved: &str, served: &str) -> String {
    let at = saved.bytes().zip(served.bytes()).take_while(|(x, y)| x == y).count();
    let context = |s: &str| {
        let (mut from, mut to) = (at.saturating_sub(40), (at + 40).min(s.len()));
        while !s.is_char_boundary(from) {
            from -= 1;
        }
        while !s.is_char_boundary(to) {
            to += 1;
        }
        s[from..to].to_string()
    };
    format!("from byte {at}: saved {:?}, served {:?}", context(saved), context(served))
}

#[test]
fn every_stylesheet_of_the_corpus_keeps_every_byte_but_its_urls() {
    if !crate::testing::corpus("every_stylesheet_of_the_corpus_keeps_every_byte_but_its_urls") {
        return;
    }
    let corpus = corpus();
    corpus.check_found();
    let mut changed = Vec::new();
    let mut identical = 0;
    for sheet in &corpus.sheets {
        identical += usize::from(sheet.saved == sheet.served);
        let (saved, served) = (blanked(&sheet.saved), blanked(&sheet.served));
        if saved != served {
            changed.push(format!("{}: {}", sheet.at, first_difference(&saved, &served)));
        }
    }
    eprintln!(
        "{} stylesheets compared, {identical} served as saved; {} changed beyond their URLs",
        corpus.sheets.len(),
        changed.len()
    );
    let shown: Vec<_> = changed.iter().take(30).cloned().collect();
    assert!(
        changed.is_empty(),
        "{} stylesheets changed beyond their URLs, the first:\n{}",
        changed.len(),
        shown.join("\n")
    );
}

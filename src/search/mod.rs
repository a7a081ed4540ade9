//! Full-text search behind one interface, [`SearchIndex`]: the embedded engine ([`Embedded`],
//! tantivy in `--data-dir/search`) by default, PostgreSQL's own text search
//! ([`crate::postgres::PgSearch`]) when the server shares a database. Both take the same [`Doc`]s,
//! answer the same query language ([`crate::search::query`]) and split words with the same mail-aware
//! analyzer: letters and digits of any script, each CJK character on its own (so a phrase of them
//! matches inside longer runs), lower-cased and folded to ASCII, so "Café" finds "cafe".

pub mod query;

use std::collections::HashSet;

use snippet::SNIPPET_CHARS;
use tantivy::tokenizer::TokenStream;

use crate::error::Error;

mod directory;
mod embedded;
mod snippet;
mod tokenizer;

pub use embedded::Embedded;

/// What one message gives the search index.
#[derive(Debug, Default, Clone)]
pub struct Doc {
    pub id: u32,
    pub subject: String,
    pub from: String,
    pub to: String,
    pub cc: String,
    pub body: String,
    pub filenames: String,
    /// The text of the documents it carries (PDF, Office, text attachments…), found by plain
    /// words and by `attachment:`.
    pub attachments: String,
    pub timestamp: Option<i64>,
    pub size: u64,
    pub has_attachment: bool,
    /// The folder it is filed in (`/`-separated), found by `folder:` as itself and every folder above.
    pub folder: String,
    /// Its labels, found by `label:` ignoring case.
    pub labels: Vec<String>,
    /// The List-Id it came through, found by `list:`.
    pub list: Option<String>,
}

/// The entries carrying a Message-ID, for `message-id:` terms.
pub type IdsOf<'a> = dyn Fn(&str) -> Vec<u32> + 'a;

/// A page of results: entry ids, best first (newest first among equals), and how many matched.
#[derive(Debug, Default)]
pub struct Hits {
    pub total: usize,
    pub ids: Vec<u32>,
}

/// What the archive asks of a full-text engine. Adds and deletes are visible to searches after the
/// next [`SearchIndex::commit`] at the latest (an engine may show them sooner).
pub trait SearchIndex: Send + Sync {
    /// Adds a message's document (ids are never reused, so nothing is replaced).
    fn add(&self, d: &Doc);
    fn delete(&self, id: u32);
    /// Makes what was added and deleted visible to searches.
    fn commit(&self);
    /// Every id in the index, sorted (to reconcile with the main index after a crash).
    fn ids(&self) -> Vec<u32>;
    /// Runs a query in the mail search language; `Error::BadQuery` explains what is wrong.
    /// `message-id:` terms are answered by `ids_of` (the index has every Message-ID already; the
    /// search index does not keep a second copy).
    fn search(&self, q: &str, offset: usize, limit: usize, ids_of: &IdsOf<'_>) -> Result<Hits, Error> {
        self.search_parsed(&query::parse(q)?, offset, limit, ids_of)
    }
    /// [`SearchIndex::search`] of a query parsed already: what a reader typed, with the folders
    /// they may read added by the archive (see [`crate::index::Access`]).
    fn search_parsed(&self, q: &query::Query, offset: usize, limit: usize, ids_of: &IdsOf<'_>) -> Result<Hits, Error>;
    /// Every id a query matches, unranked: for exports, which want all of them and no order of
    /// relevance.
    fn matching(&self, q: &str, ids_of: &IdsOf<'_>) -> Result<HashSet<u32>, Error> {
        self.matching_parsed(&query::parse(q)?, ids_of)
    }
    /// [`SearchIndex::matching`] of a query parsed already.
    fn matching_parsed(&self, q: &query::Query, ids_of: &IdsOf<'_>) -> Result<HashSet<u32>, Error>;
    /// For each of `texts`: the part that best matches the query, its words in `<mark>`;
    /// HTML-escaped.
    fn snippets(&self, q: &str, texts: &[String]) -> Vec<Option<String>>;
    /// The same for texts of attached documents: the words the query looks for in attachments.
    fn attachment_snippets(&self, q: &str, texts: &[String]) -> Vec<Option<String>>;
    /// Those of `ids` whose attachments' text holds any word or phrase the query looks for there
    /// (outside negations): the messages worth opening to say which attachment matched.
    fn attachment_matches(&self, q: &str, ids: &[u32]) -> HashSet<u32>;
}

/// A text term of a query as the words the analyzer makes of it: one word, or several to be found
/// one after another; with `prefix`, the last one is the start of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    pub words: Vec<String>,
    pub prefix: bool,
}

impl Terms {
    /// The words of a term's text; `None` when it has none.
    pub fn of(text: &str, prefix: bool) -> Option<Terms> {
        let words = words(text);
        (!words.is_empty()).then_some(Terms { words, prefix })
    }

    /// Whether the last words of a text end with these: `seen`, its words oldest first, of which
    /// only the last as many as these are looked at.
    fn end<'a>(&self, seen: impl ExactSizeIterator<Item = &'a str>) -> bool {
        let n = self.words.len();
        let Some(skip) = seen.len().checked_sub(n) else { return false };
        seen.skip(skip).zip(&self.words).enumerate().all(|(i, (got, want))| match self.prefix && i + 1 == n {
            true => got.starts_with(want.as_str()),
            false => got == want,
        })
    }
}

/// The words and phrases a query looks for in the text of attachments (its terms in every field
/// and its `attachment:` terms, outside negations).
pub fn attachment_terms(q: &str) -> Vec<Terms> {
    let Ok(parsed) = crate::search::query::parse(q) else { return Vec::new() };
    let mut terms = Vec::new();
    parsed.each_text_in(query::TextField::Attachment, &mut |text, prefix| terms.extend(Terms::of(text, prefix)));
    terms
}

/// Whether `text` holds any of `terms`.
pub fn holds_any(text: &str, terms: &[Terms]) -> bool {
    if terms.is_empty() {
        return false;
    }
    let longest = terms.iter().map(|t| t.words.len()).max().unwrap_or(1);
    // The last words seen, enough for the longest phrase.
    let mut window: std::collections::VecDeque<String> = std::collections::VecDeque::with_capacity(longest);
    let mut found = false;
    each_word(text, &mut |word, _| {
        if found {
            return;
        }
        if window.len() == longest {
            window.pop_front();
        }
        window.push_back(word.to_string());
        found = terms.iter().any(|t| t.end(window.iter().map(String::as_str)));
    });
    found
}

/// The date every engine keeps for a message that has none: it sorts before every dated one, and
/// no date range (`before:`, `after:`) holds it.
pub const UNDATED: i64 = i64::MIN;

/// The words of a text as every engine indexes them and every query looks them up.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_word(text, &mut |word, _| out.push(word.to_string()));
    out
}

/// Calls `f` with each word of a text and its position, as the embedded engine indexes them:
/// positions count from 0 and skip a number for each word left out as too long, so that an
/// engine storing them matches phrases exactly where the embedded one does.
pub fn each_word(text: &str, f: &mut dyn FnMut(&str, usize)) {
    let mut analyzer = tokenizer::analyzer();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        let token = stream.token();
        f(&token.text, token.position);
    }
}

/// Highlighted excerpts ([`snippet`]) of `texts`, for the query's text terms that look in
/// `field`: bodies ([`query::TextField::Body`]) or attachments ([`query::TextField::Attachment`]).
/// The same for every engine.
pub fn excerpts(q: &str, texts: &[String], field: query::TextField) -> Vec<Option<String>> {
    let Ok(parsed) = crate::search::query::parse(q) else { return vec![None; texts.len()] };
    let mut terms = Vec::new();
    parsed.each_text_in(field, &mut |text, prefix| terms.extend(Terms::of(text, prefix)));
    if terms.is_empty() {
        return vec![None; texts.len()];
    }
    texts.iter().map(|text| snippet::excerpt(text, &terms)).collect()
}

/// The first words of a text as an excerpt (HTML, nothing marked): for a message the query found
/// by its subject or an address, whose body holds none of the words. `None` for a text of no word.
pub fn opening(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut cut = false;
    for word in text.split_whitespace() {
        if out.chars().count() + word.chars().count() > SNIPPET_CHARS {
            cut = true;
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        // One word longer than an excerpt: its first characters.
        out = text.split_whitespace().next()?.chars().take(SNIPPET_CHARS).collect();
        cut = true;
    }
    if cut {
        out.push('…');
    }
    Some(crate::rewrite::escape_html(&out))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_opening_is_the_first_words_escaped() {
        let long = "word ".repeat(100);
        let cases: &[(&str, Option<&str>)] = &[
            ("", None),
            ("  \n ", None),
            ("Hello <b>there</b>\n\n  friend", Some("Hello &lt;b&gt;there&lt;/b&gt; friend")),
        ];
        for (text, want) in cases {
            assert_eq!(super::opening(text).as_deref(), *want, "{text:?}");
        }
        let cut = super::opening(&long).expect("words");
        assert!(cut.ends_with('…') && cut.chars().count() <= super::SNIPPET_CHARS + 1, "{cut}");
    }

    use super::*;

    #[test]
    fn texts_hold_words_and_phrases_as_searched() {
        let text = "Tax number: DE-129 273, paid to Café Müller on 2026-03-01.";
        let terms = |q: &str| attachment_terms(q);
        for (q, want) in [
            ("cafe", true),
            ("\"tax number\"", true),
            ("\"number tax\"", false),
            ("de-129", true),
            ("attachment:muller", true),
            ("body:cafe", false),
            ("-cafe", false),
            ("nothing OR paid", true),
            ("from:cafe", false),
            ("mull*", true),
            ("\"tax num*\"", true),
            ("\"tax numbers*\"", false),
            ("attachment:pai*", true),
            ("ax*", false),
        ] {
            assert_eq!(holds_any(text, &terms(q)), want, "{q}");
        }
    }
}

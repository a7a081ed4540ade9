//! What a search result shows of a message: an excerpt with the query's words in `<mark>`, from
//! its body when they are there, else from the attachment they are in, and which attachments'
//! text matched. The search index says which messages' attachments hold the words; only those
//! messages' documents are read again to say which, and their text is kept a while (by bytes of
//! text) for the next page of results and for `?text=1`.

use std::sync::Arc;

use super::doc::{documents, reader_text, DocumentAt};
use super::{Archive, Loaded};
use crate::index::{ContentHash, EntryId};
use crate::limits::MAX_DOCUMENT_TEXT_CACHE;
use crate::parse::extract::{Extracted, Outcome};

/// A document by the message's bytes (so the key never goes stale) and where it lies.
type Key = (ContentHash, Vec<usize>, usize);

#[derive(Clone)]
pub(super) struct Weight;

impl quick_cache::Weighter<Key, Option<Arc<Extracted>>> for Weight {
    fn weight(&self, key: &Key, val: &Option<Arc<Extracted>>) -> u64 {
        let text = val.as_ref().map_or(0, |e| e.text.len() + e.notices.iter().map(String::len).sum::<usize>());
        (text + key.1.len() * 8 + 64) as u64
    }
}

/// The documents' text read for results and for reading, by bytes of text.
pub(super) type DocumentCache = quick_cache::sync::Cache<Key, Option<Arc<Extracted>>, Weight>;

pub(super) fn document_cache() -> DocumentCache {
    quick_cache::sync::Cache::with_weighter(4096, MAX_DOCUMENT_TEXT_CACHE, Weight)
}

/// What a result shows of one message.
#[derive(Debug, Default, Clone)]
pub struct Excerpt {
    /// The best-matching text, HTML-escaped, matched words in `<mark>`.
    pub snippet: Option<String>,
    /// The documents whose text holds the words the query looks for there, in message order.
    pub matched: Vec<DocumentAt>,
}

impl Archive {
    /// One document's text (`None` when that part is no document), read once and kept a while.
    pub fn document(&self, loaded: &Loaded, at: &DocumentAt) -> Option<Arc<Extracted>> {
        let key = (loaded.entry.hash, at.path.clone(), at.idx);
        if let Some(kept) = self.documents.get(&key) {
            return kept;
        }
        let read = super::doc::document_text(loaded.message(), at).map(Arc::new);
        self.documents.insert(key, read.clone());
        read
    }

    /// For each of `ids`: its excerpt for the query `q`, and the documents whose text matched.
    pub fn excerpts(&self, q: &str, ids: &[EntryId]) -> Vec<Excerpt> {
        let Some(search) = &self.search else { return vec![Excerpt::default(); ids.len()] };
        let loaded: Vec<Option<Loaded>> = ids.iter().map(|&id| self.load(id).ok()).collect();
        let texts: Vec<String> =
            loaded.iter().map(|l| l.as_ref().map(|l| reader_text(l.message())).unwrap_or_default()).collect();
        let snippets = search.snippets(q, &texts);
        let in_attachments = search.attachment_matches(q, ids);
        let terms = crate::search::attachment_terms(q);
        ids.iter()
            .zip(loaded)
            .zip(snippets)
            .zip(&texts)
            .map(|(((id, loaded), snippet), text)| {
                // A message found by its subject or an address alone opens with its first lines.
                let opening = || crate::search::opening(text);
                let Some(loaded) = loaded.filter(|_| in_attachments.contains(id)) else {
                    return Excerpt { snippet: snippet.or_else(opening), matched: Vec::new() };
                };
                let mut matched = Vec::new();
                let mut first_text = None;
                for at in documents(loaded.message()) {
                    let Some(read) = self.document(&loaded, &at) else { continue };
                    if read.outcome != Outcome::Unreadable && crate::search::holds_any(&read.text, &terms) {
                        first_text.get_or_insert_with(|| Arc::clone(&read));
                        matched.push(at);
                    }
                }
                // From the body when the words are there, else from the first attachment they are in.
                let snippet = snippet
                    .or_else(|| {
                        let text = first_text?;
                        search.attachment_snippets(q, std::slice::from_ref(&text.text)).pop().flatten()
                    })
                    .or_else(opening);
                Excerpt { snippet, matched }
            })
            .collect()
    }
}

//! The embedded full-text index, kept in `--data-dir/search` with tantivy (an embedded
//! Lucene-style engine: BM25 ranking, compressed postings, incremental commits, no server to run).
//! The only module that knows tantivy's index; its words come from the mail-aware analyzer in
//! [`super::tokenizer`].

use std::collections::HashSet;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query as TQuery,
    RangeQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STRING};
use tantivy::tokenizer::{TextAnalyzer, TokenStream};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::error::Error;
use crate::limits::MAX_SEARCH_QUEUE;
use crate::par::{Quota, Share};
use crate::search::query::{self, Query, TextField};

use super::directory::ReleasableDirectory;
use super::tokenizer::analyzer;
use super::{Doc, Hits, IdsOf, SearchIndex};

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    subject: Field,
    from: Field,
    to: Field,
    cc: Field,
    body: Field,
    filename: Field,
    attachments: Field,
    date: Field,
    size: Field,
    attachment: Field,
    folder: Field,
    label: Field,
    list: Field,
}

pub struct Embedded {
    reader: IndexReader,
    writer: Mutex<IndexWriter<Queued>>,
    fields: Fields,
    analyzer: TextAnalyzer,
    /// Bytes of the documents waiting for the indexing thread.
    queued: Arc<Quota>,
}

/// A document on its way to the index's indexing thread, holding its bytes' place in
/// [`Embedded::queued`] until that thread has indexed it and drops it.
struct Queued {
    doc: TantivyDocument,
    _place: Option<Share>,
}

impl tantivy::Document for Queued {
    type Value<'a> = <TantivyDocument as tantivy::Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as tantivy::Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

/// Longest wait for room in the queue: the indexing thread indexes megabytes a second, so only
/// a thread that stopped would keep a document waiting this long (and it is then added anyway,
/// to fail as tantivy says).
const QUEUE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The tokenizer's name, in the schema: named anew whenever the words it makes change, so that
/// an index of the old words is rebuilt rather than read (`mail`: before decomposed accents,
/// compatibility forms, Greek and `ё` were folded; `mail2`: before each letter of Thai, Lao,
/// Khmer and Myanmar was a word).
const TOKENIZER: &str = "mail3";

/// The most words a word's start (`invoic*`) stands for in one segment of the index: more than
/// any start of two letters has in a mail archive, and a bound on the postings one such term
/// reads.
const MAX_PREFIX_WORDS: u32 = 10_000;
/// Memory the writer may buffer before it flushes a segment.
const WRITER_BUDGET: usize = 32 * 1024 * 1024;
/// Merges run one at a time (tantivy would run up to four): merging is work for the cores the
/// indexing already keeps busy, and each merge running holds its segments' buffers, so more at
/// once only raise the peak (a million messages: 174–176 MB against 180–184, in the same time).
const MERGE_THREADS: usize = 1;

fn fail(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::internal("search index", e)
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        id: b.add_u64_field("id", INDEXED | FAST),
        subject: b.add_text_field("subject", text.clone()),
        from: b.add_text_field("from", text.clone()),
        to: b.add_text_field("to", text.clone()),
        cc: b.add_text_field("cc", text.clone()),
        body: b.add_text_field("body", text.clone()),
        filename: b.add_text_field("filename", text.clone()),
        // The text of attached documents: searched by plain words and `attachment:`, apart from
        // the body so that a result can say where the words are.
        attachments: b.add_text_field("attachments", text),
        // Dates and sizes are only ever asked for by range (`after:`, `larger:`) and sorted by,
        // which the column answers on its own: a term per distinct value (nearly one per message)
        // would cost space and nothing else.
        date: b.add_i64_field("date", FAST),
        size: b.add_u64_field("size", FAST),
        attachment: b.add_u64_field("attachment", INDEXED),
        folder: b.add_text_field("folder", STRING),
        // Each label's key and those of the labels above it (`label:clients` finds
        // `Clients/Acme`); named anew when that came in, so that an index of label names alone is
        // rebuilt rather than read.
        label: b.add_text_field("label_terms", STRING),
        list: b.add_text_field("list", STRING),
    };
    (b.build(), fields)
}

/// Longest wait for the search index's lock at start.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Embedded {
    /// Opens the search index in `dir`, creating it (or, when it is unreadable or of another
    /// layout, recreating it empty: it is rebuilt from the messages).
    pub fn open(dir: &Path) -> Result<Embedded, Error> {
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = schema();
        let open = || {
            ReleasableDirectory::open(dir)
                .map_err(fail)
                .and_then(|d| Index::open_or_create(d, schema.clone()).map_err(fail))
        };
        let index = match open() {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!(error = %e, "search index unreadable or of an older layout; rebuilding it");
                std::fs::remove_dir_all(dir)?;
                std::fs::create_dir_all(dir)?;
                open()?
            }
        };
        Self::with_index(index, fields)
    }

    fn with_index(index: Index, fields: Fields) -> Result<Embedded, Error> {
        index.tokenizers().register(TOKENIZER, analyzer());
        let options = tantivy::indexer::IndexWriterOptions::builder()
            .num_worker_threads(1)
            .memory_budget_per_thread(WRITER_BUDGET)
            .num_merge_threads(MERGE_THREADS)
            .build();
        // The lock is the writer's open file: a process started a moment ago (this one's child,
        // between its fork and its exec; the server before this one, still closing) may hold it
        // briefly. A lock held for longer is another server on the same folder.
        let waited = std::time::Instant::now();
        let writer = loop {
            match index.writer_with_options(options.clone()) {
                Err(tantivy::TantivyError::LockFailure(tantivy::directory::error::LockError::LockBusy, _))
                    if waited.elapsed() < LOCK_WAIT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other.map_err(fail)?,
            }
        };
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(fail)?;
        let queued = Arc::new(Quota::new(MAX_SEARCH_QUEUE));
        Ok(Embedded { reader, writer: Mutex::new(writer), fields, analyzer: analyzer(), queued })
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter<Queued>> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SearchIndex for Embedded {
    /// Adds a message's document (ids are never reused, so nothing is replaced); visible after the
    /// next [`SearchIndex::commit`].
    fn add(&self, d: &Doc) {
        let f = self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.id, u64::from(d.id));
        doc.add_text(f.subject, &d.subject);
        doc.add_text(f.from, &d.from);
        doc.add_text(f.to, &d.to);
        doc.add_text(f.cc, &d.cc);
        doc.add_text(f.body, &d.body);
        doc.add_text(f.filename, &d.filenames);
        doc.add_text(f.attachments, &d.attachments);
        doc.add_i64(f.date, d.timestamp.unwrap_or(super::UNDATED));
        doc.add_u64(f.size, d.size);
        doc.add_u64(f.attachment, u64::from(d.has_attachment));
        for t in crate::index::folders::folder_terms(&d.folder) {
            doc.add_text(f.folder, &t);
        }
        let mut terms: Vec<String> = d.labels.iter().flat_map(|l| crate::parse::labels::terms(l)).collect();
        terms.sort_unstable();
        terms.dedup();
        for t in terms {
            doc.add_text(f.label, t);
        }
        if let Some(l) = &d.list {
            doc.add_text(f.list, l.to_lowercase());
        }
        // The text's bytes and about what each value costs besides.
        let bytes = [&d.subject, &d.from, &d.to, &d.cc, &d.body, &d.filenames, &d.attachments]
            .iter()
            .map(|t| t.len() as u64)
            .sum::<u64>()
            + 64 * d.labels.len() as u64
            + 1024;
        let place = self.queued.take_by(bytes, Instant::now() + QUEUE_WAIT);
        if place.is_none() {
            tracing::warn!(id = d.id, "the search index's indexing thread has not taken a document for a minute");
        }
        if let Err(e) = self.writer().add_document(Queued { doc, _place: place }) {
            tracing::warn!(error = %e, id = d.id, "not added to the search index");
        }
    }

    fn delete(&self, id: u32) {
        self.writer().delete_term(Term::from_field_u64(self.fields.id, u64::from(id)));
    }

    /// Makes what was added and deleted visible to searches.
    fn commit(&self) {
        let committed = self.writer().commit();
        match committed.map_err(fail).and_then(|_| self.reader.reload().map_err(fail)) {
            Ok(()) => {}
            Err(e) => tracing::error!(error = %e, "search index commit failed"),
        }
    }

    /// Every id in the index, sorted (to reconcile with the main index after a crash).
    fn ids(&self) -> Vec<u32> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for seg in searcher.segment_readers() {
            let Ok(col) = seg.fast_fields().u64("id") else { continue };
            for doc in seg.doc_ids_alive() {
                if let Some(v) = col.first(doc) {
                    out.push(v as u32);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Runs a query in the mail search language; `Error::BadQuery` explains what is wrong.
    /// `message-id:` terms are answered by `ids_of` (the index has every Message-ID already; the
    /// search index does not keep a second copy).
    fn search_parsed(&self, parsed: &Query, offset: usize, limit: usize, ids_of: &IdsOf<'_>) -> Result<Hits, Error> {
        let query = self.build(parsed, ids_of)?;
        let searcher = self.reader.searcher();
        let top =
            TopDocs::with_limit(limit.max(1)).and_offset(offset).tweak_score(move |seg: &tantivy::SegmentReader| {
                let dates = seg.fast_fields().i64("date").ok();
                move |doc: tantivy::DocId, score: tantivy::Score| {
                    (score, dates.as_ref().and_then(|d| d.first(doc)).unwrap_or(super::UNDATED))
                }
            });
        let (docs, total) = searcher.search(&*query, &(top, Count)).map_err(fail)?;
        let ids = docs
            .into_iter()
            .filter_map(|(_, addr): (_, DocAddress)| {
                let seg = searcher.segment_reader(addr.segment_ord);
                seg.fast_fields().u64("id").ok()?.first(addr.doc_id).map(|v| v as u32)
            })
            .collect();
        Ok(Hits { total, ids: if limit == 0 { Vec::new() } else { ids } })
    }

    /// Every id a query matches, unranked: for exports, which want all of them and no order of
    /// relevance (one pass over the matches, where paging ranked results would cost the whole
    /// depth again on every page).
    fn matching_parsed(&self, parsed: &Query, ids_of: &IdsOf<'_>) -> Result<HashSet<u32>, Error> {
        let query = self.build(parsed, ids_of)?;
        let searcher = self.reader.searcher();
        let docs = searcher.search(&*query, &tantivy::collector::DocSetCollector).map_err(fail)?;
        let mut ids = HashSet::with_capacity(docs.len());
        for addr in docs {
            let seg = searcher.segment_reader(addr.segment_ord);
            if let Some(id) = seg.fast_fields().u64("id").ok().and_then(|col| col.first(addr.doc_id)) {
                ids.insert(id as u32);
            }
        }
        Ok(ids)
    }

    fn snippets(&self, q: &str, texts: &[String]) -> Vec<Option<String>> {
        super::excerpts(q, texts, TextField::Body)
    }

    fn attachment_snippets(&self, q: &str, texts: &[String]) -> Vec<Option<String>> {
        super::excerpts(q, texts, TextField::Attachment)
    }

    /// Those of `ids` whose attachments hold a word or phrase the query looks for there.
    fn attachment_matches(&self, q: &str, ids: &[u32]) -> HashSet<u32> {
        let Ok(parsed) = query::parse(q) else { return HashSet::new() };
        let mut any: Vec<(Occur, Box<dyn TQuery>)> = Vec::new();
        parsed.each_text_in(TextField::Attachment, &mut |text, prefix| {
            any.push((Occur::Should, self.text_query(self.fields.attachments, text, prefix)));
        });
        if any.is_empty() || ids.is_empty() {
            return HashSet::new();
        }
        let among: Vec<(Occur, Box<dyn TQuery>)> = ids
            .iter()
            .map(|&id| {
                let term = Term::from_field_u64(self.fields.id, u64::from(id));
                (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn TQuery>)
            })
            .collect();
        let query = BooleanQuery::new(vec![
            (Occur::Must, Box::new(BooleanQuery::new(any)) as Box<dyn TQuery>),
            (Occur::Must, Box::new(BooleanQuery::new(among))),
        ]);
        let searcher = self.reader.searcher();
        let Ok(docs) = searcher.search(&query, &tantivy::collector::DocSetCollector) else { return HashSet::new() };
        docs.into_iter()
            .filter_map(|addr| {
                let seg = searcher.segment_reader(addr.segment_ord);
                seg.fast_fields().u64("id").ok()?.first(addr.doc_id).map(|v| v as u32)
            })
            .collect()
    }
}

impl Embedded {
    fn tokens(&self, text: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    /// The words of `text` in `field`: one word, or several one after another (an address or a
    /// CJK run gives several, as a quoted phrase does); with `prefix`, the last is the start of
    /// a word, standing for at most [`MAX_PREFIX_WORDS`] words in each segment.
    fn text_query(&self, field: Field, text: &str, prefix: bool) -> Box<dyn TQuery> {
        let mut terms: Vec<Term> = self.tokens(text).into_iter().map(|t| Term::from_field_text(field, &t)).collect();
        match terms.len() {
            0 => Box::new(EmptyQuery),
            _ if prefix => {
                let mut query = PhrasePrefixQuery::new(terms);
                query.set_max_expansions(MAX_PREFIX_WORDS);
                Box::new(query)
            }
            1 => Box::new(TermQuery::new(terms.remove(0), IndexRecordOption::WithFreqs)),
            _ => Box::new(PhraseQuery::new(terms)),
        }
    }

    /// The tantivy query for one of ours. Only words weigh in the ranking: every other condition
    /// (dates, sizes, folders, labels, lists, ids, negations) scores nothing, so that a message's
    /// rank does not depend on which segment holds it (tantivy answers a condition that every
    /// document of a segment meets without scoring it, and one that some miss with a score of 1).
    fn build(&self, q: &Query, ids_of: &IdsOf<'_>) -> Result<Box<dyn TQuery>, Error> {
        Ok(match q {
            Query::Text { .. } | Query::And(_) | Query::Or(_) => self.build_scored(q, ids_of)?,
            Query::All
            | Query::MessageId(_)
            | Query::Folder(_)
            | Query::Label(_)
            | Query::List(_)
            | Query::HasAttachment
            | Query::Date { .. }
            | Query::Size { .. }
            | Query::Not(_) => Box::new(ConstScoreQuery::new(self.build_scored(q, ids_of)?, 0.0)),
        })
    }

    fn build_scored(&self, q: &Query, ids_of: &IdsOf<'_>) -> Result<Box<dyn TQuery>, Error> {
        let f = self.fields;
        Ok(match q {
            Query::All => Box::new(AllQuery),
            Query::Text { field: Some(tf), text, prefix, .. } => {
                let field = match tf {
                    TextField::From => f.from,
                    TextField::To => f.to,
                    TextField::Cc => f.cc,
                    TextField::Subject => f.subject,
                    TextField::Body => f.body,
                    TextField::Filename => f.filename,
                    TextField::Attachment => f.attachments,
                };
                self.text_query(field, text, *prefix)
            }
            Query::Text { field: None, text, prefix, .. } => {
                let any = [f.subject, f.from, f.to, f.cc, f.body, f.filename, f.attachments]
                    .into_iter()
                    .map(|field| (Occur::Should, self.text_query(field, text, *prefix)))
                    .collect();
                Box::new(BooleanQuery::new(any))
            }
            Query::MessageId(m) => {
                let any: Vec<(Occur, Box<dyn TQuery>)> = ids_of(m)
                    .into_iter()
                    .map(|id| {
                        let term = Term::from_field_u64(f.id, u64::from(id));
                        (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn TQuery>)
                    })
                    .collect();
                Box::new(BooleanQuery::new(any))
            }
            Query::Folder(path) => Box::new(TermQuery::new(
                Term::from_field_text(f.folder, &crate::index::folders::key(path)),
                IndexRecordOption::Basic,
            )),
            Query::Label(label) => Box::new(TermQuery::new(
                Term::from_field_text(f.label, &crate::parse::labels::key(label)),
                IndexRecordOption::Basic,
            )),
            Query::List(list) => Box::new(TermQuery::new(
                Term::from_field_text(f.list, &list.trim().to_lowercase()),
                IndexRecordOption::Basic,
            )),
            Query::HasAttachment => {
                Box::new(TermQuery::new(Term::from_field_u64(f.attachment, 1), IndexRecordOption::Basic))
            }
            Query::Date { from, to } => Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_i64(f.date, from.unwrap_or(super::UNDATED + 1))),
                to.map_or(Bound::Unbounded, |v| Bound::Excluded(Term::from_field_i64(f.date, v))),
            )),
            Query::Size { min, max } => Box::new(RangeQuery::new(
                min.map_or(Bound::Unbounded, |v| Bound::Included(Term::from_field_u64(f.size, v))),
                max.map_or(Bound::Unbounded, |v| Bound::Excluded(Term::from_field_u64(f.size, v))),
            )),
            Query::Not(inner) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, Box::new(AllQuery) as Box<dyn TQuery>),
                (Occur::MustNot, self.build(inner, ids_of)?),
            ])),
            Query::And(all) => Box::new(BooleanQuery::new(
                all.iter().map(|q| Ok((Occur::Must, self.build(q, ids_of)?))).collect::<Result<_, Error>>()?,
            )),
            Query::Or(any) => Box::new(BooleanQuery::new(
                any.iter().map(|q| Ok((Occur::Should, self.build(q, ids_of)?))).collect::<Result<_, Error>>()?,
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_INDEXED_TEXT;

    fn doc(id: u32, body: &str, timestamp: i64) -> Doc {
        Doc { id, body: body.to_string(), timestamp: Some(timestamp), size: 100, ..Doc::default() }
    }

    /// Messages whose words match alike are listed newest first, whichever segment holds them
    /// and whatever else the query asks of them.
    #[test]
    fn conditions_do_not_weigh_in_the_ranking() {
        let dir = tempfile::tempdir().expect("dir");
        let index = Embedded::open(dir.path()).expect("open");
        // One segment where a date condition holds for some documents, one where it holds for all.
        index.add(&doc(1, "customer escalation", 1_600_000_000));
        index.add(&doc(2, "unrelated", 1_000_000_000));
        index.commit();
        index.add(&doc(3, "customer escalation", 1_700_000_000));
        index.add(&doc(4, "customer escalation", 1_650_000_000));
        index.commit();
        assert_eq!(index.reader.searcher().segment_readers().len(), 2, "two segments");
        for q in [
            "\"customer escalation\"",
            "\"customer escalation\" after:2019",
            "escalation after:2019 before:2030",
            "escalation larger:1",
            "escalation -folder:nowhere",
            "escalation -unrelated",
        ] {
            let hits = index.search(q, 0, 10, &|_| Vec::new()).expect("search");
            assert_eq!(hits.ids, [3, 4, 1], "{q}");
        }
    }

    /// Documents waiting for the indexing thread hold their bytes' place until it has indexed
    /// them: more than the queue holds goes through, a place at a time, and every place is free
    /// again once they are indexed.
    #[test]
    fn the_queue_to_the_indexing_thread_is_bounded_by_bytes() {
        let dir = tempfile::tempdir().expect("dir");
        let index = Embedded::open(dir.path()).expect("open");
        let body = "word ".repeat(MAX_INDEXED_TEXT / 5);
        let count = (4 * MAX_SEARCH_QUEUE as usize) / body.len();
        for id in 0..count as u32 {
            index.add(&Doc { body: format!("{body} marker{id}"), ..doc(id, "", 1_600_000_000) });
        }
        index.commit();
        assert!(index.queued.try_take(MAX_SEARCH_QUEUE).is_some(), "every place given back");
        for id in [0, count as u32 - 1] {
            let hits = index.search(&format!("marker{id}"), 0, 10, &|_| Vec::new()).expect("search");
            assert_eq!(hits.ids, [id]);
        }
    }
}

//! Full-text search in PostgreSQL's own text search, for replicas sharing one database: one row a
//! message in `search_docs` (migrations 0002 and 0004), a `tsvector` a text field with a GIN index on each,
//! and plain columns for dates, sizes, attachments, folders, labels and lists. Queries in the mail
//! search language ([`crate::search::query`]) become one SQL condition with numbered parameters, and
//! answer with the same set of messages as the embedded engine ([`crate::search::Embedded`]).
//!
//! The words are never split by PostgreSQL: its parser, dictionaries and locale would find other
//! words than the embedded engine (stems, stop words, addresses kept whole). Documents and queries
//! go through mailshelf's own analyzer ([`crate::search::each_word`]), and the tsvectors are sent
//! in their text form (`'word':1,5 'other':2`), the tsqueries as `'a' <-> 'b'` for phrases.
//!
//! Where the answers differ from the embedded engine:
//! - Order: a page is ranked newest first (then by id), not by relevance; the total, and the set
//!   a query matches, are the same.
//! - Very long texts. PostgreSQL keeps positions 1 to 16,383, at most 256 positions a word, and
//!   less than 1 MB of words and positions a tsvector. A field whose words do not all fit so (past
//!   the 16,381st word, a word's 257th place, about 900 KB of words and positions) keeps what fits
//!   in its column, and is also cut into passages that each fit, one after another, each sharing
//!   its first [`words::PASSAGE_OVERLAP`] words with the end of the one before (`search_passages`,
//!   migration 0008): a phrase matches the column or any passage of the same field, a word the
//!   column. A phrase longer than the overlap that crosses from one passage into the next, a
//!   phrase past [`words::MAX_PASSAGES`] passages of a field, and a word only found past what the column
//!   holds (about 900 KB of words and positions: a field of some 75,000 different words) are not
//!   found; each can only lose a match, which a negation (`-"a phrase"`) turns into an extra one.
//! - A NUL in a folder, label or list name (PostgreSQL's text cannot hold one) is stored and
//!   looked up as U+FFFD, so a name typed with U+FFFD in its place finds it too.

use std::collections::HashSet;
use std::sync::mpsc::{Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_postgres::types::ToSql;

use super::{failed, int4, our_id, pg_id, Database};
use crate::error::Error;
use crate::search::query::{Query, TextField};
use crate::search::{Doc, Hits, IdsOf, SearchIndex, Terms};

#[cfg(test)]
use words::{fit, lexeme_cost, pg_position, quote, MAX_PASSAGES, MAX_POSITIONS, TSVECTOR_BUDGET};
use words::{passages, tsquery, tsvector};

mod words;

/// Buffered documents written at once (one transaction, one statement a kind of change).
const FLUSH_DOCS: usize = 2_000;

/// Buffered tsvector text written at once, whatever the count: a few huge bodies are a batch.
const FLUSH_BYTES: usize = 64 << 20;

/// The text columns, in the order of [`Row::texts`]; a passage names its field by its place here.
const TEXT_COLUMNS: [&str; 7] = ["subject", "sender", "recipients", "cc", "body", "filename", "attachments"];

pub struct PgSearch {
    db: Arc<Database>,
    pending: Mutex<Pending>,
    /// The writer: one thread that writes full batches in the order they were taken from the
    /// buffer, while indexing goes on (a batch's transaction waits for the disk; the indexer need
    /// not). At most one batch waits for it, so memory stays at two batches.
    writer: Mutex<SyncSender<Job>>,
    /// How many messages each recent search matched, with the `search_version` row it was
    /// counted at: paging through a broad search, or many readers asking the same, count it once
    /// while nothing is written. (Counting is what a broad search costs here: PostgreSQL visits
    /// every matching row to count it, 0.35 s for a common word at a million messages.)
    counts: quick_cache::sync::Cache<String, Kept>,
}

/// A search's count, kept: at which `search_version` row, and how many documents there were.
#[derive(Clone, Copy)]
struct Kept {
    version: i64,
    total: i64,
    docs: i64,
}

/// What one search statement answers: the version it saw, the count (when asked), the page, and
/// the number of documents (PostgreSQL's estimate, when asked).
struct Counted {
    version: i64,
    total: Option<i64>,
    ids: Vec<i32>,
    docs: Option<i64>,
}

/// The most messages a page may be expected to walk through, newest first, for the walk to be
/// taken rather than a fetch of every match: at a million messages a three-character CJK phrase
/// matching 94,000 took 0.5 s the one way and milliseconds the other.
const DATE_ORDER_WALK: f64 = 20_000.0;

/// The fewest and the most messages a walk newest first reads (four times the expected
/// walk, within these): a page the walk leaves short is fetched the other way.
const WALK_LEAST: f64 = 2_000.0;
const WALK_MOST: f64 = 80_000.0;

/// Searches whose counts are kept.
const COUNTS_KEPT: usize = 1024;

/// What the writer thread is asked.
enum Job {
    Write(Vec<Op>),
    /// Answer once everything sent before is written.
    Barrier(Sender<()>),
}

/// Changes not yet written, in the order they were made.
#[derive(Default)]
struct Pending {
    ops: Vec<Op>,
    bytes: usize,
}

enum Op {
    Add(Box<Row>),
    Delete(u32),
}

/// One message's row, ready to send.
struct Row {
    id: i32,
    /// subject, from, to, cc, body, filenames, attachments: tsvectors in text form.
    texts: [String; 7],
    /// The passages of the fields too long for their column (see [`passages`]): the field's place
    /// in [`TEXT_COLUMNS`], the passage's number, its tsvector in text form.
    passages: Vec<(i16, i16, String)>,
    date: i64,
    size: i64,
    attachment: bool,
    /// JSON arrays of strings: a row's arrays travel as one text each, as `unnest` of a
    /// two-dimensional array would flatten them.
    folders: String,
    labels: String,
    list: Option<String>,
}

impl Row {
    fn of(d: &Doc) -> Row {
        let folders: Vec<String> = crate::index::folders::folder_terms(&d.folder).into_iter().map(storable).collect();
        // Each label's key and those of the labels above it (`label:clients` finds `Clients/Acme`).
        let mut labels: Vec<String> =
            d.labels.iter().flat_map(|l| crate::parse::labels::terms(l)).map(storable).collect();
        labels.sort_unstable();
        labels.dedup();
        let fields = [&d.subject, &d.from, &d.to, &d.cc, &d.body, &d.filenames, &d.attachments];
        let mut passages = Vec::new();
        let texts = std::array::from_fn(|i| {
            let (column, whole) = tsvector(fields[i]);
            if !whole {
                let field = i16::try_from(i).unwrap_or(i16::MAX);
                let cut = self::passages(fields[i]).into_iter().enumerate();
                passages.extend(cut.map(|(n, words)| (field, i16::try_from(n).unwrap_or(i16::MAX), words)));
            }
            column
        });
        Row {
            id: pg_id(d.id),
            texts,
            passages,
            date: d.timestamp.unwrap_or(crate::search::UNDATED),
            size: clamp_size(d.size),
            attachment: d.has_attachment,
            folders: json_strings(&folders),
            labels: json_strings(&labels),
            list: d.list.as_ref().map(|l| storable(l.to_lowercase())),
        }
    }

    fn bytes(&self) -> usize {
        let passages: usize = self.passages.iter().map(|(_, _, words)| words.len()).sum();
        self.texts.iter().map(String::len).sum::<usize>() + passages + self.folders.len() + self.labels.len()
    }
}

/// `text` (and `jsonb`) cannot hold NUL: a name with one, stored or looked up, has U+FFFD in its
/// place, rather than failing the whole batch it is written with.
fn storable(s: String) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s
    }
}

fn json_strings(items: &[String]) -> String {
    serde_json::Value::from(items).to_string()
}

/// Sizes are bytes of a file: none reaches 2^63, the bound of PostgreSQL's `bigint`.
fn clamp_size(size: u64) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

type Param = Box<dyn ToSql + Send + Sync>;

/// A query as an SQL condition on `search_docs` and the parameters it numbers.
struct Condition {
    sql: String,
    params: Vec<Param>,
}

impl Condition {
    fn of(q: &Query, ids_of: &IdsOf<'_>) -> Condition {
        let mut c = Condition { sql: String::new(), params: Vec::new() };
        c.sql = c.build(q, ids_of);
        c
    }

    /// Adds a parameter; its placeholder.
    fn param(&mut self, p: Param) -> String {
        self.params.push(p);
        format!("${}", self.params.len())
    }

    /// The condition of `q`. It is never NULL (the one nullable column is tested for NULL where it
    /// is read), so that `NOT` is the complement, as the embedded engine's negation is.
    fn build(&mut self, q: &Query, ids_of: &IdsOf<'_>) -> String {
        match q {
            Query::All => "TRUE".into(),
            Query::Text { field, text, prefix, .. } => {
                // A quoted phrase and a word of several tokens are both the tokens in order. A
                // text of no word matches nothing, as in the embedded engine.
                let Some(terms) = Terms::of(text, *prefix) else { return "FALSE".into() };
                let p = self.param(Box::new(tsquery(&terms)));
                let columns: &[&str] = match field {
                    None => &TEXT_COLUMNS,
                    Some(TextField::Subject) => &["subject"],
                    Some(TextField::From) => &["sender"],
                    Some(TextField::To) => &["recipients"],
                    Some(TextField::Cc) => &["cc"],
                    Some(TextField::Body) => &["body"],
                    Some(TextField::Filename) => &["filename"],
                    Some(TextField::Attachment) => &["attachments"],
                };
                let mut any: Vec<String> = columns.iter().map(|c| format!("{c} @@ {p}::text::tsquery")).collect();
                // A phrase may also be in a passage of one of those fields, of a text too long for
                // its column (which holds every word, but not at every place). The passages are
                // looked up once (an array of ids, an InitPlan), so that the primary key's index
                // joins the columns' in one bitmap, where `id IN (…)` makes PostgreSQL test every
                // row; and through the passages' own index (see migration 0008 for why a function).
                if terms.words.len() > 1 {
                    let fields: Vec<i16> = columns.iter().filter_map(|c| field_number(c)).collect();
                    let fields = self.param(Box::new(fields));
                    any.push(format!(
                        "id = ANY(ARRAY(SELECT search_passages_matching({fields}::smallint[], {p}::text::tsquery)))"
                    ));
                }
                format!("({})", any.join(" OR "))
            }
            Query::MessageId(m) => {
                let ids: Vec<i32> = ids_of(m).into_iter().map(pg_id).collect();
                if ids.is_empty() {
                    return "FALSE".into();
                }
                format!("id = ANY({}::integer[])", self.param(Box::new(ids)))
            }
            Query::Folder(path) => {
                format!("folders @> ARRAY[{}::text]", self.param(Box::new(storable(crate::index::folders::key(path)))))
            }
            Query::Label(label) => {
                format!("labels @> ARRAY[{}::text]", self.param(Box::new(storable(crate::parse::labels::key(label)))))
            }
            Query::List(list) => {
                let p = self.param(Box::new(storable(list.trim().to_lowercase())));
                format!("(list IS NOT NULL AND list = {p}::text)")
            }
            Query::HasAttachment => "attachment".into(),
            Query::Date { from, to } => {
                let mut parts = Vec::new();
                // A message without a date is in no range.
                let from = from.unwrap_or(crate::search::UNDATED + 1);
                parts.push(format!("date >= {}::bigint", self.param(Box::new(from))));
                if let Some(to) = to {
                    parts.push(format!("date < {}::bigint", self.param(Box::new(*to))));
                }
                all_of(parts)
            }
            Query::Size { min, max } => {
                let mut parts = Vec::new();
                if let Some(min) = min {
                    parts.push(format!("size >= {}::bigint", self.param(Box::new(clamp_size(*min)))));
                }
                if let Some(max) = max {
                    parts.push(format!("size < {}::bigint", self.param(Box::new(clamp_size(*max)))));
                }
                all_of(parts)
            }
            Query::Not(inner) => format!("NOT ({})", self.build(inner, ids_of)),
            Query::And(all) => {
                let parts = all.iter().map(|q| self.build(q, ids_of)).collect();
                all_of(parts)
            }
            Query::Or(any) => {
                if any.is_empty() {
                    return "FALSE".into();
                }
                let parts: Vec<String> = any.iter().map(|q| self.build(q, ids_of)).collect();
                format!("({})", parts.join(" OR "))
            }
        }
    }

    fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
        params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect()
    }
}

/// A text column's place in [`TEXT_COLUMNS`], which is how a passage names its field.
fn field_number(column: &str) -> Option<i16> {
    TEXT_COLUMNS.iter().position(|&c| c == column).and_then(|i| i16::try_from(i).ok())
}

fn all_of(parts: Vec<String>) -> String {
    if parts.is_empty() {
        "TRUE".into()
    } else {
        format!("({})", parts.join(" AND "))
    }
}

/// The dates every match lies within when the query says so at its top (`after:` and `before:`
/// joined to the rest by AND), in seconds: a walk newest first starts and ends there.
fn date_bounds(q: &Query) -> (Option<i64>, Option<i64>) {
    match q {
        Query::Date { from, to } => (*from, *to),
        Query::And(all) => all
            .iter()
            .map(date_bounds)
            .fold((None, None), |(f, t), (f2, t2)| (f.into_iter().chain(f2).max(), t.into_iter().chain(t2).min())),
        _ => (None, None),
    }
}

impl PgSearch {
    /// Keeps the count of a search run with its count, and gives its total and page.
    fn counted(&self, key: &str, c: Counted) -> (i64, Vec<i32>) {
        let total = c.total.unwrap_or(0);
        self.counts.insert(key.to_string(), Kept { version: c.version, total, docs: c.docs.unwrap_or(0) });
        (total, c.ids)
    }

    /// The search index in `db`, whose schema [`Database::connect`] brought up to date.
    pub fn new(db: Arc<Database>) -> PgSearch {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(1);
        let writer_db = Arc::clone(&db);
        let spawned = std::thread::Builder::new().name("search-writer".into()).spawn(move || {
            for job in rx {
                match job {
                    Job::Write(ops) => write(&writer_db, ops),
                    Job::Barrier(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        if let Err(e) = spawned {
            // Without its thread every batch fails to send, is logged, and is caught up at the
            // next start (see `flush`).
            tracing::error!(error = %e, "search writer not started");
        }
        PgSearch {
            db,
            pending: Mutex::new(Pending::default()),
            writer: Mutex::new(tx),
            counts: quick_cache::sync::Cache::new(COUNTS_KEPT),
        }
    }

    fn send(&self, job: Job) -> bool {
        self.writer.lock().unwrap_or_else(|e| e.into_inner()).send(job).is_ok()
    }

    /// Waits until every batch handed to the writer is written.
    fn settle(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        if self.send(Job::Barrier(tx)) {
            let _ = rx.recv();
        }
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a change; writes the buffer when it is full.
    fn push(&self, op: Op, bytes: usize) {
        let full = {
            let mut pending = self.pending();
            pending.ops.push(op);
            pending.bytes += bytes;
            pending.ops.len() >= FLUSH_DOCS || pending.bytes >= FLUSH_BYTES
        };
        if full {
            self.flush();
        }
    }

    /// Hands what is buffered to the writer, to be written in one transaction. On failure it is
    /// dropped, not retried: the archive compares [`SearchIndex::ids`] with its index at the next
    /// start and adds what is missing.
    fn flush(&self) {
        // Taken and sent under one lock, so batches reach the writer in the order they were made.
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let ops = {
            let mut pending = self.pending();
            pending.bytes = 0;
            std::mem::take(&mut pending.ops)
        };
        if !ops.is_empty() && writer.send(Job::Write(ops)).is_err() {
            tracing::error!("search index changes not written: the writer has stopped");
        }
    }
}

/// Writes one batch of changes in one transaction (on the writer thread).
fn write(db: &Database, ops: Vec<Op>) {
    {
        let (adds, deletes) = last_of_each(ops);
        let count = adds.len();
        let written = db.run(move |mut c| async move {
            let fail = failed("search index: write");
            let tx = c.transaction().await.map_err(&fail)?;
            if !deletes.is_empty() {
                tx.execute("DELETE FROM search_docs WHERE id = ANY($1)", &[&deletes]).await.map_err(&fail)?;
            }
            if !adds.is_empty() {
                let ids: Vec<i32> = adds.iter().map(|r| r.id).collect();
                let texts: Vec<Vec<&str>> =
                    (0..TEXT_COLUMNS.len()).map(|i| adds.iter().map(|r| r.texts[i].as_str()).collect()).collect();
                let dates: Vec<i64> = adds.iter().map(|r| r.date).collect();
                let sizes: Vec<i64> = adds.iter().map(|r| r.size).collect();
                let attachments: Vec<bool> = adds.iter().map(|r| r.attachment).collect();
                let folders: Vec<&str> = adds.iter().map(|r| r.folders.as_str()).collect();
                let labels: Vec<&str> = adds.iter().map(|r| r.labels.as_str()).collect();
                let lists: Vec<Option<&str>> = adds.iter().map(|r| r.list.as_deref()).collect();
                tx.execute(
                    "INSERT INTO search_docs (id, subject, sender, recipients, cc, body, filename, date, size, \
                     attachment, folders, labels, list, attachments) \
                     SELECT t.id, t.subject::tsvector, t.sender::tsvector, t.recipients::tsvector, t.cc::tsvector, \
                     t.body::tsvector, t.filename::tsvector, t.date, t.size, t.attachment, \
                     ARRAY(SELECT jsonb_array_elements_text(t.folders::jsonb)), \
                     ARRAY(SELECT jsonb_array_elements_text(t.labels::jsonb)), t.list, t.attachments::tsvector \
                     FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
                     $7::text[], $8::bigint[], $9::bigint[], $10::boolean[], $11::text[], $12::text[], $13::text[], \
                     $14::text[]) \
                     AS t(id, subject, sender, recipients, cc, body, filename, date, size, attachment, folders, \
                     labels, list, attachments) \
                     ON CONFLICT (id) DO UPDATE SET subject = EXCLUDED.subject, sender = EXCLUDED.sender, \
                     recipients = EXCLUDED.recipients, cc = EXCLUDED.cc, body = EXCLUDED.body, \
                     filename = EXCLUDED.filename, date = EXCLUDED.date, size = EXCLUDED.size, \
                     attachment = EXCLUDED.attachment, folders = EXCLUDED.folders, labels = EXCLUDED.labels, \
                     list = EXCLUDED.list, attachments = EXCLUDED.attachments",
                    &[
                        &ids,
                        &texts[0],
                        &texts[1],
                        &texts[2],
                        &texts[3],
                        &texts[4],
                        &texts[5],
                        &dates,
                        &sizes,
                        &attachments,
                        &folders,
                        &labels,
                        &lists,
                        &texts[6],
                    ],
                )
                .await
                .map_err(&fail)?;
                // A message added again has the passages of its new text only.
                tx.execute("DELETE FROM search_passages WHERE id = ANY($1)", &[&ids]).await.map_err(&fail)?;
                let cut: Vec<(i32, &(i16, i16, String))> =
                    adds.iter().flat_map(|r| r.passages.iter().map(move |p| (r.id, p))).collect();
                if !cut.is_empty() {
                    let ids: Vec<i32> = cut.iter().map(|(id, _)| *id).collect();
                    let fields: Vec<i16> = cut.iter().map(|(_, p)| p.0).collect();
                    let numbers: Vec<i16> = cut.iter().map(|(_, p)| p.1).collect();
                    let words: Vec<&str> = cut.iter().map(|(_, p)| p.2.as_str()).collect();
                    tx.execute(
                        "INSERT INTO search_passages (id, field, n, words) \
                         SELECT t.id, t.field, t.n, t.words::tsvector \
                         FROM unnest($1::integer[], $2::smallint[], $3::smallint[], $4::text[]) AS t(id, field, n, words)",
                        &[&ids, &fields, &numbers, &words],
                    )
                    .await
                    .map_err(&fail)?;
                }
            }
            // Counts made before this write no longer hold, on any replica.
            tx.execute("UPDATE search_version SET n = n + 1", &[]).await.map_err(&fail)?;
            tx.commit().await.map_err(&fail)?;
            Ok(())
        });
        if let Err(e) = written {
            tracing::error!(error = %e, documents = count, "search index changes not written");
        }
    }
}

/// The changes a batch makes: each id's last one (an add then a delete of the same id is a
/// delete, a delete then an add an add), so that the two kinds can be written as two statements.
fn last_of_each(ops: Vec<Op>) -> (Vec<Row>, Vec<i32>) {
    let mut seen = HashSet::new();
    let mut adds = Vec::new();
    let mut deletes = Vec::new();
    for op in ops.into_iter().rev() {
        match op {
            Op::Add(row) => {
                if seen.insert(row.id) {
                    adds.push(*row);
                }
            }
            Op::Delete(id) => {
                if seen.insert(pg_id(id)) {
                    deletes.push(pg_id(id));
                }
            }
        }
    }
    (adds, deletes)
}

impl SearchIndex for PgSearch {
    fn add(&self, d: &Doc) {
        let row = Row::of(d);
        let bytes = row.bytes();
        self.push(Op::Add(Box::new(row)), bytes);
    }

    fn delete(&self, id: u32) {
        self.push(Op::Delete(id), 0);
    }

    fn commit(&self) {
        self.flush();
        self.settle();
    }

    fn ids(&self) -> Vec<u32> {
        self.settle();
        let mut ids = Vec::new();
        let read = self.db.copy_rows("SELECT id FROM search_docs", &mut |row| {
            if let Some(id) = row.first().and_then(|f| int4(*f)) {
                ids.push(our_id(id));
            }
        });
        if let Err(e) = read {
            // The archive then adds every message again, which replaces rows and loses nothing.
            tracing::warn!(error = %e, "search index ids unreadable");
            return Vec::new();
        }
        ids.sort_unstable();
        ids
    }

    /// The total, and a page newest first (then by id): PostgreSQL keeps no word statistics to
    /// rank by relevance with, so the order differs from the embedded engine, not the set.
    fn search_parsed(&self, parsed: &Query, offset: usize, limit: usize, ids_of: &IdsOf<'_>) -> Result<Hits, Error> {
        let Condition { sql: cond, mut params } = Condition::of(parsed, ids_of);
        // The condition and its values name the search exactly (a `message-id:` term's ids too).
        let key = format!("{cond}{params:?}");
        let known = self.counts.get(&key);
        let (from, to) = date_bounds(parsed);
        // The page, as an array of ids, from the messages `source` names (a table or a subquery).
        let page = |source: &str, n: usize| {
            format!(
                "ARRAY(SELECT id FROM {source} WHERE {cond} ORDER BY date DESC, id DESC \
                 LIMIT ${}::bigint OFFSET ${n}::bigint)",
                n - 1
            )
        };
        let (fetched, walk) = if limit == 0 {
            ("ARRAY[]::integer[]".to_string(), None)
        } else {
            params.push(Box::new(i64::try_from(limit).unwrap_or(i64::MAX)));
            params.push(Box::new(i64::try_from(offset).unwrap_or(i64::MAX)));
            let n = params.len();
            // Walking the messages newest first and stopping at the page's last match beats
            // fetching every match (from a bitmap of them) to sort them, when matches are common
            // enough: they are about evenly spread over time, so the walk reaches the page's end
            // after about `expected` messages. It is bounded by a number of messages, not by a
            // time, so that a busy machine makes it slower rather than wasted; matches bunched in
            // the past leave the page short, and it is then fetched the other way.
            let walk = known.filter(|kept| kept.total > 0).and_then(|kept| {
                let expected = offset.saturating_add(limit) as f64 * kept.docs.max(1) as f64 / kept.total as f64;
                (expected <= DATE_ORDER_WALK).then(|| {
                    let most = (expected * 4.0).clamp(WALK_LEAST, WALK_MOST) as i64;
                    let within = all_of(
                        [from.map(|f| format!("date >= {f}")), to.map(|t| format!("date < {t}"))]
                            .into_iter()
                            .flatten()
                            .collect(),
                    );
                    let newest = format!(
                        "(SELECT * FROM search_docs WHERE {within} ORDER BY date DESC, id DESC LIMIT {most}) newest"
                    );
                    page(&newest, n)
                })
            });
            (page("search_docs", n), walk)
        };
        // One statement each, so that the version, the count and the page come from one snapshot.
        let with_count = format!(
            "SELECT (SELECT n FROM search_version), (SELECT count(*) FROM search_docs WHERE {cond}), {fetched}, \
             (SELECT reltuples::bigint FROM pg_class WHERE oid = 'search_docs'::regclass)"
        );
        let version_and =
            |page: &str| format!("SELECT (SELECT n FROM search_version), NULL::bigint, {page}, NULL::bigint");
        let params = Arc::new(params);
        // Without a page, the statement that only asks for the version has no values to bind.
        let run = |sql: String, bind: bool| -> Result<Counted, Error> {
            let params = Arc::clone(&params);
            self.db.run(move |c| async move {
                let values = if bind { Condition::refs(&params) } else { Vec::new() };
                let row = c.query_one(sql.as_str(), &values).await.map_err(failed("search"))?;
                Ok(Counted { version: row.get(0), total: row.get(1), ids: row.get(2), docs: row.get(3) })
            })
        };
        // A walked page is whole when it is full, or ends where the matches do.
        let whole = |ids: &[i32], total: i64| {
            ids.len() == limit || i64::try_from(offset.saturating_add(ids.len())).unwrap_or(i64::MAX) >= total
        };
        let (total, ids) = match (known, walk) {
            (Some(kept), Some(walking)) => match run(version_and(&walking), true)? {
                now if now.version == kept.version && whole(&now.ids, kept.total) => (kept.total, now.ids),
                now if now.version == kept.version => (kept.total, run(version_and(&fetched), true)?.ids),
                _ => self.counted(&key, run(with_count, true)?),
            },
            (Some(kept), None) => match run(version_and(&fetched), limit > 0)? {
                now if now.version == kept.version => (kept.total, now.ids),
                _ => self.counted(&key, run(with_count, true)?),
            },
            (None, _) => self.counted(&key, run(with_count, true)?),
        };
        Ok(Hits { total: usize::try_from(total).unwrap_or(0), ids: ids.into_iter().map(our_id).collect() })
    }

    fn matching_parsed(&self, parsed: &Query, ids_of: &IdsOf<'_>) -> Result<HashSet<u32>, Error> {
        let Condition { sql: cond, params } = Condition::of(parsed, ids_of);
        let sql = format!("SELECT id FROM search_docs WHERE {cond}");
        self.db.run(move |c| async move {
            let rows = c.query(sql.as_str(), &Condition::refs(&params)).await.map_err(failed("search"))?;
            Ok(rows.iter().map(|r| our_id(r.get(0))).collect())
        })
    }

    fn snippets(&self, q: &str, texts: &[String]) -> Vec<Option<String>> {
        crate::search::excerpts(q, texts, TextField::Body)
    }

    fn attachment_snippets(&self, q: &str, texts: &[String]) -> Vec<Option<String>> {
        crate::search::excerpts(q, texts, TextField::Attachment)
    }

    fn attachment_matches(&self, q: &str, ids: &[u32]) -> HashSet<u32> {
        let terms: Vec<String> = crate::search::attachment_terms(q).iter().map(tsquery).collect();
        if terms.is_empty() || ids.is_empty() {
            return HashSet::new();
        }
        let ids: Vec<i32> = ids.iter().map(|&id| pg_id(id)).collect();
        let found = self.db.run(move |c| async move {
            let rows = c
                .query(
                    "SELECT d.id FROM search_docs d WHERE d.id = ANY($1) \
                     AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS q(t) WHERE d.attachments @@ q.t::tsquery) \
                     UNION SELECT p.id FROM search_passages p WHERE p.id = ANY($1) AND p.field = $3 \
                     AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS q(t) WHERE p.words @@ q.t::tsquery)",
                    &[&ids, &terms, &field_number("attachments")],
                )
                .await
                .map_err(failed("search"))?;
            Ok(rows.iter().map(|r| our_id(r.get(0))).collect())
        });
        found.unwrap_or_else(|e: Error| {
            tracing::warn!(error = %e, "which attachments matched is unknown");
            HashSet::new()
        })
    }
}

#[cfg(test)]
mod tests;

//! A message as a reader sees it, free of HTTP: loading by URL id, the rewritten documents (and
//! their cache), the type and file name each part is served under, search results with their
//! snippets and the attachments they matched in, the text of documents, threads, a message's neighbours in the list and the messages sharing its Message-ID;
//! [`browse`] the folders, labels and conversations, [`stats`] the numbers of an overview;
//! [`security`] what a message's signed and encrypted layers come to (decrypted on demand with the
//! user's keys, signatures checked). The pages and the API both call this, so they cannot drift
//! apart.
//!
//! What each page shows is built here too, one module a page, each free of templates and HTTP:
//! [`list`], [`message`], [`conversation`] and [`overview`]; [`format`](mod@format) writes the
//! sizes and subjects they share (dates are [`crate::dates`]'), [`text`] renders text bodies,
//! [`frame`] guesses a body frame's height, `served.rs` the type and file name each part is served under, [`charts`] draws the overview's pictures and [`thumb`]
//! makes thumbnails.
//!
//! A `View` belongs to one reader: it reads within their [`Access`] (see [`View::scoped`] and
//! `access.rs`), so that every page and API call built on it shows a reader limited to some
//! folders nothing of the others, and nothing above this layer has to remember to.

pub(crate) mod charts;
pub(crate) mod format;
pub(crate) mod frame;
pub mod text;
pub(crate) mod thumb;

pub(crate) mod browse;
pub mod security;
pub(crate) mod stats;

mod access;
mod served;

pub(crate) mod conversation;
pub(crate) mod list;
pub(crate) mod message;
pub(crate) mod overview;

#[cfg(test)]
mod fixtures;

use std::sync::Arc;

use bytes::Bytes;
use quick_cache::sync::Cache;

use crate::archive::{Archive, Loaded};
use crate::error::Error;
use crate::index::{content_hash, Access, ContentHash, Entry, EntryId};
use crate::limits::{MAX_RENDERED_CACHE, MAX_SEARCH_WINDOW};
use crate::model::{Body, External, Message, PartIdx};
use crate::parse::extract::{Extracted, Outcome};
use crate::rewrite::{self, Options};
use crate::route::Resolver;
pub(crate) use served::is_restricted_name;
pub use served::{answered_type, hidden_in_file_name, is_document, part_filename, renders_as_page, served_type};

/// Rewritten documents expected in [`MAX_RENDERED_CACHE`] (sizes the cache's table only).
const RENDERED: usize = 256;

/// Runs blocking work (reading and parsing a message, rewriting a body) off the async threads.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::internal("worker", e))?
}

/// The archive as one reader views it, with the documents it recently rewrote (shared by every
/// reader's view).
pub struct View {
    archive: Arc<Archive>,
    /// What this reader may read.
    access: Access,
    caches: Arc<Caches>,
}

/// What views keep for later requests, shared by every reader's view; keyed by the readers'
/// access wherever what is kept depends on it.
struct Caches {
    /// Rewritten HTML and CSS parts, so a body viewed again (or by many clients) is not rewritten
    /// per request. Keyed by the index generation too: a change anywhere may change where a
    /// reference in it leads.
    rendered: Cache<RenderKey, Rendered, RenderedWeight>,
    /// Lists grouped into conversations and overviews, until the index changes: paging through
    /// them, or coming back, costs only the page.
    threads: Cache<(u64, Access, browse::Scope), Arc<browse::Threads>>,
    overviews: Cache<(u64, Access, browse::Scope, String), Arc<stats::Stats>>,
    /// The messages of a label, in list order, until the index changes.
    labelled: Cache<(u64, browse::Scope), Arc<Vec<EntryId>>>,
    /// The user's keys, and what they opened and checked (in memory only).
    secrets: Arc<security::Secrets>,
    /// Where each listed message is in the list, by entry id, for the index generation it was
    /// made at (see [`View::neighbours`]).
    positions: Cache<u64, Arc<Vec<u32>>>,
    /// The labels and their counts within one reader's folders, until the index changes (a reader
    /// who may read everything is answered from the index's own counts).
    labels: Cache<(u64, Access), Arc<LabelCounts>>,
    /// The hash of the bytes each message was read from, by its entry (see [`View::bytes_hash`]).
    bytes_hashes: Cache<(EntryId, ContentHash), ContentHash>,
}

/// The labels on one reader's messages: each label as spelled with the messages carrying it, and
/// by key the messages carrying it or a label below it.
#[derive(Default)]
struct LabelCounts {
    own: Vec<(String, usize)>,
    totals: std::collections::HashMap<String, usize>,
}

/// Groupings and overviews kept (a few scopes being browsed at once).
const BROWSED: usize = 16;

/// Hashes of messages' bytes kept (32 bytes each, with their keys).
const BYTES_HASHES: usize = 4096;

/// Entry, part, remote content allowed, quotes folded, index generation, and what the reader may
/// read (a `cid:` or `mid:` link into a message they may not read resolves to nothing).
type RenderKey = (EntryId, PartIdx, bool, bool, u64, Access);

/// What a rewritten document weighs in the cache: its bytes.
#[derive(Clone)]
struct RenderedWeight;

impl quick_cache::Weighter<RenderKey, Rendered> for RenderedWeight {
    fn weight(&self, _: &RenderKey, val: &Rendered) -> u64 {
        val.bytes.len() as u64 + 128
    }
}

/// A rewritten HTML or CSS part.
#[derive(Clone)]
pub struct Rendered {
    pub bytes: Bytes,
    /// A strong validator: a hash of the bytes.
    pub etag: String,
    /// Remote resources it would have loaded and does not.
    pub blocked: usize,
}

/// One result of a search, with its highlighted excerpt.
pub struct Hit {
    pub entry: Arc<Entry>,
    pub snippet: Option<String>,
    /// The names of the attachments whose text matched (empty when only the message did).
    pub matched_in: Vec<String>,
}

/// A page of search results and how many there are in all.
pub struct Found {
    pub total: usize,
    pub hits: Vec<Hit>,
}

/// A message of a thread, in reading order, with its reply depth.
pub struct ThreadMessage {
    pub depth: usize,
    pub id: EntryId,
    pub entry: Arc<Entry>,
}

impl View {
    /// A view of everything (one reader, or none: the single-person default); see
    /// [`View::scoped`] for others.
    pub fn new(archive: Arc<Archive>) -> View {
        Self::with_keys(archive, Arc::default())
    }

    /// A view of everything that decrypts with, and checks signatures against, the keys and trust
    /// given.
    pub fn with_keys(archive: Arc<Archive>, keys: Arc<crate::crypto::Keyring>) -> View {
        let caches = Caches {
            rendered: Cache::with_weighter(RENDERED, MAX_RENDERED_CACHE, RenderedWeight),
            threads: Cache::new(BROWSED),
            overviews: Cache::new(BROWSED),
            labelled: Cache::new(BROWSED),
            secrets: Arc::new(security::Secrets::new(keys)),
            positions: Cache::new(2),
            labels: Cache::new(BROWSED),
            bytes_hashes: Cache::new(BYTES_HASHES),
        };
        View { archive, access: Access::everything(), caches: Arc::new(caches) }
    }

    pub fn archive(&self) -> &Arc<Archive> {
        &self.archive
    }

    /// Looks up and loads a message by the id in its URL: from the cache when it is there, else
    /// read and parsed off the async threads; its encrypted layers opened with the user's keys.
    pub async fn load(&self, key: &str) -> Result<Loaded, Error> {
        let loaded = if self.archive.backend().shared {
            // Finding the id asks the database: not on an async worker.
            let (archive, key) = (self.archive.clone(), key.to_string());
            let access = self.access.clone();
            blocking(move || {
                let id = archive.find_within(&key, &access).ok_or(Error::MessageNotFound)?;
                archive.load_cached_within(id, &access).map_or_else(|| archive.load_within(id, &access), Ok)
            })
            .await?
        } else {
            let id = self.archive.find_within(key, &self.access).ok_or(Error::MessageNotFound)?;
            self.read(id).await?
        };
        self.open_layers(loaded).await
    }

    /// The entry a URL id names, when this reader may read it: the check of [`View::load`]
    /// without the loading (a message out of reach is [`Error::MessageNotFound`], as a missing
    /// one); [`View::find`] off the async threads on a shared backend.
    pub async fn find_entry(&self, key: &str) -> Result<EntryId, Error> {
        if self.archive.backend().shared {
            let (archive, key, access) = (self.archive.clone(), key.to_string(), self.access.clone());
            return blocking(move || archive.find_within(&key, &access).ok_or(Error::MessageNotFound)).await;
        }
        self.archive.find_within(key, &self.access).ok_or(Error::MessageNotFound)
    }

    /// Whether this reader may read the message with entry `id` (see [`Access::permits`]): what
    /// [`View::find_entry`] asks of the entries an id names.
    pub async fn may_read(&self, id: EntryId) -> Result<bool, Error> {
        if self.archive.backend().shared {
            let (archive, access) = (self.archive.clone(), self.access.clone());
            return blocking(move || Ok(access.permits(&archive.index(), id))).await;
        }
        Ok(self.access.permits(&self.archive.index(), id))
    }

    /// [`View::load`] of an entry [`View::find_entry`] gave.
    pub async fn load_found(&self, id: EntryId) -> Result<Loaded, Error> {
        let loaded = self.read(id).await?;
        self.open_layers(loaded).await
    }

    /// A message from the cache when it is there, else read and parsed off the async threads; as
    /// this reader reaches it ([`Archive::load_within`]).
    async fn read(&self, id: EntryId) -> Result<Loaded, Error> {
        if self.archive.backend().shared {
            // Even the cache's lookup may ask the database: not on an async worker.
            let (archive, access) = (self.archive.clone(), self.access.clone());
            return blocking(move || {
                archive.load_cached_within(id, &access).map_or_else(|| archive.load_within(id, &access), Ok)
            })
            .await;
        }
        match self.archive.load_cached_within(id, &self.access) {
            Some(hit) => Ok(hit),
            None => {
                let (archive, access) = (self.archive.clone(), self.access.clone());
                blocking(move || archive.load_within(id, &access)).await
            }
        }
    }

    /// The message with entry `id` as this reader reads it (its encrypted layers as they are: see
    /// [`View::opened`]); `None` when they may not read it or it cannot be read. Blocking.
    pub fn read_now(&self, id: EntryId) -> Option<Loaded> {
        self.archive.load_within(id, &self.access).ok()
    }

    /// A loaded message with its encrypted layers opened with the user's keys.
    async fn open_layers(&self, loaded: Loaded) -> Result<Loaded, Error> {
        if !self.caches.secrets.keys().can_decrypt() || !crate::parse::secure::has_closed_layers(loaded.top().0) {
            return Ok(loaded);
        }
        let secrets = Arc::clone(&self.caches.secrets);
        blocking(move || Ok(secrets_open(&secrets, loaded))).await
    }

    /// [`View::load`] for a message already read (blocking): its encrypted layers opened.
    pub fn opened(&self, loaded: Loaded) -> Loaded {
        secrets_open(&self.caches.secrets, loaded)
    }

    /// The hash of the bytes a loaded message was read from, which the validators (ETags) of its
    /// source, its parts and its thumbnails are made of; worked out once, then kept. It is the
    /// same for every copy of the same bytes, where the entry's own hash is not: a copy found in a
    /// second folder is kept under a hash of its own, and a validator made from that would tell a
    /// reader of the one folder that the same bytes are held in another, one they may not read.
    /// For a message that is no such copy it is the entry's hash.
    pub fn bytes_hash(&self, loaded: &Loaded) -> ContentHash {
        let key = (loaded.id, loaded.entry.hash);
        if let Some(hit) = self.caches.bytes_hashes.get(&key) {
            return hit;
        }
        let hash = content_hash(&loaded.message().raw);
        // Bytes that are no longer the message's (another message now lies in its place) name
        // nothing for good: once its folder is read again, the entry is the message's again.
        if !loaded.changed {
            self.caches.bytes_hashes.insert(key, hash);
        }
        hash
    }

    /// What the signed and encrypted layers of a loaded message come to. Blocking the first time
    /// (signatures are checked), then from the cache.
    pub fn security(&self, loaded: &Loaded) -> Arc<security::Security> {
        self.caches.secrets.security(loaded.id, loaded.entry.hash, loaded.message())
    }

    /// [`View::security`] from an async handler.
    pub async fn security_of(self: &Arc<Self>, loaded: &Loaded) -> Result<Arc<security::Security>, Error> {
        if loaded.message().seals.is_empty() {
            return Ok(Arc::default());
        }
        let (view, loaded) = (Arc::clone(self), loaded.clone());
        blocking(move || Ok(view.security(&loaded))).await
    }

    fn render_key(&self, loaded: &Loaded, idx: PartIdx, remote: bool, fold: bool) -> RenderKey {
        (loaded.id, idx, remote, fold, self.archive.index().generation(), self.access.clone())
    }

    /// A text part rewritten (as CSS for `text/css`, else as HTML), taken from the cache when there:
    /// the message page counts what its body blocks, and the frame then loads the same rewrite.
    /// Blocking work: call it from the blocking pool, or use [`View::rendered`].
    pub fn render(&self, loaded: &Loaded, idx: PartIdx, remote: bool) -> Rendered {
        self.render_as(loaded, idx, remote, false)
    }

    /// As [`View::render`]; with `fold`, quoted passages of an HTML part are folded away (as a
    /// conversation shows each reply).
    pub fn render_as(&self, loaded: &Loaded, idx: PartIdx, remote: bool, fold: bool) -> Rendered {
        let key = self.render_key(loaded, idx, remote, fold);
        if let Some(hit) = self.caches.rendered.get(&key) {
            return hit;
        }
        let msg = loaded.message();
        let part = &msg.parts[idx];
        let resolver = Resolver {
            archive: Some(&self.archive),
            access: &self.access,
            key: &loaded.entry.key,
            msg,
            part: idx,
            remote,
        };
        let served = served_type(part);
        // XHTML is read by a browser as XML, where its `<?xml-stylesheet?>`s apply.
        let xml_stylesheets = served == "application/xhtml+xml";
        let opts = Options { allow_remote: remote, fold_quotes: fold, xml_stylesheets, ..Options::default() };
        let text = match &part.body {
            Body::Text(t) => t.as_str(),
            _ => "",
        };
        let out = if served == "text/css" {
            rewrite::rewrite_css(text, &part.base, &resolver, opts)
        } else {
            rewrite::rewrite_html(text, &part.base, &resolver, opts)
        };
        let bytes = Bytes::from(out.output);
        let rendered = Rendered { etag: etag_of(&bytes), bytes, blocked: out.blocked };
        self.caches.rendered.insert(key, rendered.clone());
        rendered
    }

    /// [`View::render`] from an async handler: a cache hit at once, a rewrite on the blocking pool.
    pub async fn rendered(self: &Arc<Self>, loaded: &Loaded, idx: PartIdx, remote: bool) -> Result<Rendered, Error> {
        self.rendered_as(loaded, idx, remote, false).await
    }

    /// [`View::render_as`] from an async handler.
    pub async fn rendered_as(
        self: &Arc<Self>,
        loaded: &Loaded,
        idx: PartIdx,
        remote: bool,
        fold: bool,
    ) -> Result<Rendered, Error> {
        if let Some(hit) = self.caches.rendered.get(&self.render_key(loaded, idx, remote, fold)) {
            return Ok(hit);
        }
        let (view, loaded) = (Arc::clone(self), loaded.clone());
        blocking(move || Ok(view.render_as(&loaded, idx, remote, fold))).await
    }

    /// One page of the messages matching `query`, best first, each with its snippet. Blocking.
    pub fn search(&self, query: &str, offset: usize, limit: usize) -> Result<Found, Error> {
        if offset.saturating_add(limit) > MAX_SEARCH_WINDOW {
            return Err(Error::BadRequest(format!(
                "search results can be paged {MAX_SEARCH_WINDOW} deep; narrow the search to see further"
            )));
        }
        let mut found = self.archive.search_within(&self.access, query, offset, limit)?;
        if !self.access.is_everything() {
            // The engine was given the reader's folders; whatever it answers is checked again.
            // A hit is a message filed in a folder: one the reader reads only enclosed in another
            // is found as that other one, and never as filed out of their reach.
            let index = self.archive.index();
            let table = self.access.table(&index);
            found.ids.retain(|&id| self.access.files_with(&index, &table, id));
        }
        let excerpts = self.archive.excerpts(query, &found.ids);
        let entries: std::collections::HashMap<EntryId, Arc<Entry>> =
            self.archive.index().get_many(&found.ids).into_iter().collect();
        let hits = found
            .ids
            .iter()
            .zip(excerpts)
            .filter_map(|(&id, excerpt)| {
                let matched_in = self.attachment_names(id, &excerpt.matched);
                Some(Hit { entry: entries.get(&id)?.clone(), snippet: excerpt.snippet, matched_in })
            })
            .collect();
        Ok(Found { total: found.total, hits })
    }

    /// The text of part `idx` of a loaded message when it is a document (read once, then kept a
    /// while): what `?text=1` answers. Blocking.
    pub fn document_text(&self, loaded: &Loaded, idx: PartIdx) -> Result<Arc<Extracted>, Error> {
        let at = crate::archive::DocumentAt { path: Vec::new(), idx };
        let read = self
            .archive
            .document(loaded, &at)
            .ok_or_else(|| Error::NoDocumentText("it is not a document whose text mailshelf reads".into()))?;
        match (read.outcome, read.notices.first()) {
            (Outcome::Unreadable, Some(why)) => Err(Error::NoDocumentText(why.clone())),
            (Outcome::Unreadable, None) => Err(Error::NoDocumentText("it could not be read".into())),
            _ => Ok(read),
        }
    }

    /// The names attachments are shown by, for documents of a message.
    fn attachment_names(&self, id: EntryId, documents: &[crate::archive::DocumentAt]) -> Vec<String> {
        if documents.is_empty() {
            return Vec::new();
        }
        let Some(loaded) = self.archive.load_cached(id).or_else(|| self.archive.load(id).ok()) else {
            return Vec::new();
        };
        documents
            .iter()
            .filter_map(|at| {
                let part = crate::archive::message_at(loaded.message(), &at.path)?.parts.get(at.idx)?;
                Some(part_filename(part))
            })
            .collect()
    }

    /// The overview of the messages in `scope`, or of those in it matching `query`. Blocking.
    pub fn stats(&self, scope: &browse::Scope, query: &str) -> Result<Arc<stats::Stats>, Error> {
        let key = (self.archive.index().generation(), self.access.clone(), scope.clone(), query.trim().to_string());
        if let Some(hit) = self.caches.overviews.get(&key) {
            return Ok(hit);
        }
        let matched =
            if query.trim().is_empty() { None } else { Some(self.archive.search_ids_within(&self.access, query)?) };
        // One pass over the store (at a million messages, reading each by id would take far longer),
        // with the index let go meanwhile.
        let mut tally = stats::Tally::default();
        let (pass, keep, table) = {
            let index = self.archive.index();
            (index.pass(), scope.filter(&index), self.access.table(&index))
        };
        pass.each_listed_entry(|id, e| {
            if matched.as_ref().is_none_or(|m| m.contains(&id)) && keep(e) && table.allows(e.folder) {
                tally.add(e);
            }
        });
        let counted = Arc::new(tally.finish());
        self.caches.overviews.insert(key, counted.clone());
        Ok(counted)
    }

    /// A page of the messages in `scope`, newest first, and how many there are. Blocking: a
    /// label's messages are found the first time by the search index (`label:`), or without one by
    /// a pass over the store, and kept until the index changes; the list and folders are paged in
    /// memory.
    pub fn page(&self, scope: &browse::Scope, offset: usize, limit: usize) -> (Vec<(EntryId, Arc<Entry>)>, usize) {
        if !self.access.is_everything() {
            return self.page_within(scope, offset, limit);
        }
        let browse::Scope::Label(_) = scope else {
            return browse::page(&self.archive.index(), scope, offset, limit);
        };
        let ids = self.labelled(scope);
        let index = self.archive.index();
        let wanted: Vec<EntryId> = ids.iter().skip(offset).take(limit).copied().collect();
        let page = index.get_many(&wanted);
        (page, ids.len())
    }

    /// The messages of a label scope, in list order, whoever may read them: found the first time
    /// by the search index (`label:`), or without one by a pass over the store, and kept until
    /// the index changes.
    fn labelled(&self, scope: &browse::Scope) -> Arc<Vec<EntryId>> {
        let browse::Scope::Label(label) = scope else { return Arc::new(scope.ids(&self.archive.index())) };
        let key = (self.archive.index().generation(), scope.clone());
        match self.caches.labelled.get(&key) {
            Some(hit) => hit,
            None => {
                let term = format!("label:\"{}\"", label.trim().trim_matches('/').replace('"', ""));
                let ids = match self.archive.search_ids(&term) {
                    Ok(found) => self.archive.index().listed_in(&found),
                    Err(_) => scope.ids(&self.archive.index()),
                };
                let ids = Arc::new(ids);
                self.caches.labelled.insert(key, Arc::clone(&ids));
                ids
            }
        }
    }

    /// A page of the messages in `scope` grouped into conversations, newest first, and how many
    /// conversations there are. Blocking (the first time for a scope).
    pub fn conversations(
        &self,
        scope: &browse::Scope,
        offset: usize,
        limit: usize,
    ) -> (Vec<browse::Conversation>, usize) {
        let key = (self.archive.index().generation(), self.access.clone(), scope.clone());
        let threads = match self.caches.threads.get(&key) {
            Some(hit) => hit,
            None => {
                let (pass, listed, keep, bound, table) = {
                    let index = self.archive.index();
                    (
                        index.pass(),
                        index.listed().to_vec(),
                        scope.filter(&index),
                        index.id_bound(),
                        self.access.table(&index),
                    )
                };
                let readable = move |e: &Entry| table.allows(e.folder);
                let keep = |e: &Entry| keep(e) && readable(e);
                let grouped = Arc::new(browse::group(&pass, &listed, bound, keep, &readable));
                self.caches.threads.insert(key, grouped.clone());
                grouped
            }
        };
        let mut page = browse::conversations(&self.archive.index(), &threads, offset, limit);
        for c in &mut page {
            c.key = self.key_of(&c.first).into_owned();
        }
        (page, threads.len())
    }

    /// The key an enclosed message is addressed by: its own entry's (found by its bytes, since its
    /// key may differ from its Message-ID), else its id.
    pub fn enclosed_key(&self, m: &Message) -> String {
        let index = self.archive.index();
        index
            .by_hash(&content_hash(&m.raw))
            .and_then(|id| index.get(id))
            .map_or_else(|| m.id.clone(), |e| self.key_of(&e).into_owned())
    }

    /// The thread a message belongs to, in reading order (the message itself included): the
    /// messages of it this reader may read, each at its depth among them.
    pub fn thread(&self, id: EntryId) -> Vec<ThreadMessage> {
        let index = self.archive.index();
        let walked = if self.access.is_everything() {
            index.thread(id)
        } else {
            let table = self.access.table(&index);
            let walked = index.thread_by(id, &|mid| self.access.parent_among(&index, &table, mid));
            self.readable_thread(&index, walked)
        };
        walked.into_iter().filter_map(|(depth, id)| Some(ThreadMessage { depth, id, entry: index.get(id)? })).collect()
    }

    /// The messages listed just before and after `id` (newest first): the newer one and the older
    /// one. An enclosed message is not listed, and has neither.
    ///
    /// Found in a table of every listed message's position, made once per index generation (a
    /// message page must not scan the whole list). The list's sort reorders it without a new
    /// generation, so a position is checked against the list, and the table made again when it
    /// no longer matches.
    pub fn neighbours(&self, id: EntryId) -> (Option<Arc<Entry>>, Option<Arc<Entry>>) {
        let index = self.archive.index();
        let listed = index.listed();
        let at = |table: &[u32]| table.get(id as usize).copied().filter(|&p| p != UNLISTED).map(|p| p as usize);
        let generation = index.generation();
        let mut table = self.caches.positions.get(&generation);
        let stale = table.as_deref().is_some_and(|t| at(t).is_some_and(|p| listed.get(p) != Some(&id)));
        if table.is_none() || stale {
            let made = Arc::new(positions(listed));
            self.caches.positions.insert(generation, Arc::clone(&made));
            table = Some(made);
        }
        let Some(pos) = table.as_deref().and_then(|t| at(t)) else { return (None, None) };
        if !self.access.is_everything() {
            return self.readable_neighbours(&index, pos);
        }
        let entry_at = |i: usize| listed.get(i).and_then(|&n| index.get(n));
        (pos.checked_sub(1).and_then(entry_at), entry_at(pos + 1))
    }

    /// The other messages with the Message-ID of entry `id` (none when it has no Message-ID).
    pub fn duplicates(&self, id: EntryId, entry: &Entry) -> Vec<Arc<Entry>> {
        let Some(mid) = entry.message_id() else { return Vec::new() };
        let index = self.archive.index();
        let table = self.access.table(&index);
        index
            .by_message_id(mid)
            .into_iter()
            .filter(|&other| other != id && self.access.permits_with(&index, &table, other))
            .filter_map(|other| index.get(other))
            .collect()
    }
}

/// A position table's entry for a message that is not listed.
const UNLISTED: u32 = u32::MAX;

/// Each listed message's position in `listed`, by entry id ([`UNLISTED`] for the others); a message
/// listed twice has its first position, as a search from the top would find.
fn positions(listed: &[EntryId]) -> Vec<u32> {
    let bound = listed.iter().map(|&id| id as usize + 1).max().unwrap_or(0);
    let mut table = vec![UNLISTED; bound];
    for (pos, &id) in listed.iter().enumerate() {
        if let Some(slot) = table.get_mut(id as usize) {
            if *slot == UNLISTED {
                *slot = u32::try_from(pos).unwrap_or(UNLISTED);
            }
        }
    }
    table
}

fn secrets_open(secrets: &security::Secrets, loaded: Loaded) -> Loaded {
    let (top, hash) = loaded.top();
    match secrets.opened(hash, top) {
        Some(opened) => loaded.with_top(opened),
        None => loaded,
    }
}

/// A strong validator for bytes: a hash of them.
pub fn etag_of(bytes: &[u8]) -> String {
    format!("\"{}\"", &blake3::hash(bytes).to_hex()[..32])
}

/// Where an external body's data is, in words (for pages and for the answer to its part's URL).
pub fn external_place(e: &External) -> String {
    let on_site = |what: String| match &e.site {
        Some(site) => format!("{what} on {site}"),
        None => what,
    };
    match (e.access_type.as_deref(), &e.url) {
        (Some("url"), Some(url)) => format!("it is at {url}"),
        (Some("url"), None) => "it names no URL".into(),
        (Some("anon-ftp"), Some(url)) => format!("it is at {url} (anonymous FTP)"),
        (Some("ftp"), Some(url)) => format!("it is at {url} (FTP, with a login)"),
        (Some("tftp"), Some(url)) => format!("it is at {url} (TFTP)"),
        (Some("anon-ftp" | "ftp" | "tftp"), None) => "it names no usable FTP site and file".into(),
        (Some("local-file"), _) => match &e.name {
            Some(name) => on_site(format!("it is the file {name}")),
            None => on_site("it is a local file".into()),
        },
        (Some("mail-server"), _) => match (&e.server, &e.subject) {
            (Some(server), Some(subject)) => format!("it is sent on request by {server} (subject: {subject})"),
            (Some(server), None) => format!("it is sent on request by {server}"),
            (None, _) => "it is sent on request by a mail server it does not name".into(),
        },
        (Some(other), _) => format!("its access type {other:?} is not one mailshelf knows"),
        (None, _) => "it names no access type".into(),
    }
}

/// Seconds since the epoch, now; what an external body's expiration is compared with.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

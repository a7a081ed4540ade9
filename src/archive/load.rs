//! Reading a message back for viewing: from the cache of recently parsed messages, else from its
//! source, and down through enclosing messages to the one asked for.

use std::sync::Arc;

use super::Archive;
use crate::error::Error;
use crate::index::{content_hash, reads_as, ContentHash, Entry, EntryId, Location, Way, NO_FOLDER};
use crate::ingest::{Given, Source};
use crate::model::{Body, Message, PartIdx};
use crate::parse::parse_given;

/// Said on a message whose place in its file now holds another message.
pub(crate) const CHANGED_NOTICE: &str =
    "Its file has changed since it was indexed: this is what the file now holds at its \
     place, and the list follows once the folder is read again.";

/// A message ready to show: the parsed top-level message it lives in, and the way down to it.
#[derive(Clone)]
pub struct Loaded {
    pub id: EntryId,
    pub entry: Arc<Entry>,
    top: Arc<Message>,
    /// The hash of the bytes the top-level message was read from.
    top_hash: ContentHash,
    path: Vec<PartIdx>,
    /// Where the index says, its file now holds another message (an mbox compacted since): what
    /// is shown is what is there now, until the folder is read again, and nothing made of it may
    /// be kept as the message's for good.
    pub changed: bool,
}

impl Loaded {
    /// A top-level message, parsed already.
    pub(super) fn whole(id: EntryId, entry: Arc<Entry>, top: Arc<Message>) -> Loaded {
        let top_hash = entry.hash;
        Loaded { id, entry, top, top_hash, path: Vec::new(), changed: false }
    }

    pub fn message(&self) -> &Message {
        let mut m: &Message = &self.top;
        for &p in &self.path {
            match m.parts.get(p).map(|p| &p.body) {
                Some(Body::Message(inner)) => m = inner,
                _ => break,
            }
        }
        m
    }

    /// The top-level message it lives in, and the hash of the bytes that was read from.
    pub fn top(&self) -> (&Arc<Message>, ContentHash) {
        (&self.top, self.top_hash)
    }

    /// The same message in another reading of its top-level message (a decrypted copy, whose
    /// parts extend the original's, so the way down stays the same).
    pub fn with_top(&self, top: Arc<Message>) -> Loaded {
        Loaded { top, ..self.clone() }
    }
}

/// A message read along a borrowed way (see [`Way::borrowed`]) as the message above it on that
/// way shows it: enclosed there, in no folder, without flags, and with the labels its own bytes
/// carry, as the entry of a message found only there would be. Where the index files it (a folder
/// the reader may not read, and the flags and labels given to it there) is not shown.
fn enclosed_there(mut loaded: Loaded, way: &Way) -> Loaded {
    let (Some(parent), Some(&part), true) = (way.above, way.path.last(), way.borrowed) else { return loaded };
    let mut entry = (*loaded.entry).clone();
    entry.location = Location::Nested { parent, part };
    entry.folder = NO_FOLDER;
    entry.labels = loaded.message().summary.labels.clone();
    entry.enclosed_in = Vec::new();
    loaded.entry = Arc::new(entry);
    loaded
}

impl Archive {
    /// A message from the cache only: no I/O, `None` when it would have to be read.
    pub fn load_cached(&self, id: EntryId) -> Option<Loaded> {
        let (top_id, path) = self.way_down(id).ok()?;
        let top = self.cache_get(top_id)?;
        let (entry, top_hash) = {
            let index = self.index();
            (index.get(id)?, index.get(top_id)?.hash)
        };
        Some(Loaded { id, entry, top, top_hash, path, changed: false })
    }

    /// Reads a message back from its source and parses it (or takes it from the cache).
    pub fn load(&self, id: EntryId) -> Result<Loaded, Error> {
        let entry = self.index().get(id).ok_or(Error::MessageNotFound)?;
        let (top_id, path) = self.way_down(id)?;
        let top_entry = self.index().get(top_id).ok_or(Error::MessageNotFound)?;
        let top_hash = top_entry.hash;
        let (top, changed) = self.load_top(top_id, &top_entry)?;
        Ok(Loaded { id, entry, top, top_hash, path, changed })
    }

    /// [`Archive::load`] along a way a reader reaches the message by ([`crate::index::Access::way`]).
    /// Along a way the index keeps, as `load`; along one borrowed, read inside the message above
    /// it on that way and shown as enclosed there ([`enclosed_there`]).
    pub fn load_along(&self, id: EntryId, way: &Way) -> Result<Loaded, Error> {
        let entry = self.index().get(id).ok_or(Error::MessageNotFound)?;
        let top_entry = self.index().get(way.top).ok_or(Error::MessageNotFound)?;
        let (top, changed) = self.load_top(way.top, &top_entry)?;
        let loaded = Loaded { id, entry, top, top_hash: top_entry.hash, path: way.path.clone(), changed };
        Ok(enclosed_there(loaded, way))
    }

    /// [`Archive::load_along`] from the cache only.
    pub fn load_cached_along(&self, id: EntryId, way: &Way) -> Option<Loaded> {
        let top = self.cache_get(way.top)?;
        let (entry, top_hash) = {
            let index = self.index();
            (index.get(id)?, index.get(way.top)?.hash)
        };
        let loaded = Loaded { id, entry, top, top_hash, path: way.path.clone(), changed: false };
        Some(enclosed_there(loaded, way))
    }

    /// The top-level message an entry lives in, and the parts that lead down to it.
    fn way_down(&self, id: EntryId) -> Result<(EntryId, Vec<PartIdx>), Error> {
        let mut path = Vec::new();
        let mut top_id = id;
        let index = self.index();
        // Walk up to the top-level message, remembering the way back down.
        loop {
            match index.get(top_id).map(|e| e.location.clone()) {
                Some(Location::Nested { parent, part }) => {
                    path.push(part);
                    top_id = parent;
                }
                Some(Location::Top { .. }) => break,
                None => return Err(Error::MessageNotFound),
            }
            if path.len() > crate::limits::MAX_NESTED_WALK {
                return Err(Error::MessageNotFound);
            }
        }
        path.reverse();
        Ok((top_id, path))
    }

    /// The top-level message `id` (`entry`), and whether another message now lies in its place.
    /// A message read again is checked against what was indexed ([`reads_as`]): an mbox compacted
    /// since puts the next message where the index points, and until the folder is read again it is
    /// shown for what it is, with a notice, and never cached.
    fn load_top(&self, id: EntryId, entry: &Entry) -> Result<(Arc<Message>, bool), Error> {
        if let Some(hit) = self.cache_get(id) {
            return Ok((hit, false));
        }
        let Location::Top { source, .. } = &entry.location else { return Err(Error::MessageNotFound) };
        let mut msg = parse_given(self.read_source(source)?, source.own_file())?;
        let changed = !reads_as(entry, &content_hash(&msg.raw), msg.message_id.as_deref());
        if changed {
            tracing::info!(path = %source.path().display(), "message file changed since it was indexed");
            msg.origin.notices.insert(0, CHANGED_NOTICE.to_string());
        }
        let msg = Arc::new(Archive::as_indexed(self.index_keys.get().map(Arc::as_ref), msg));
        if !changed {
            self.cache.insert(id, Arc::clone(&msg));
        }
        Ok((msg, changed))
    }

    /// A message's bytes as given (up to `--max-message` of them), from its file or, for an upload
    /// kept in the store, from there. A file that now lies outside the paths served (it, or a
    /// folder above it, has become a link leading out) is gone ([`Archive::within`]).
    pub fn read_source(&self, source: &Source) -> Result<Given, Error> {
        match source {
            Source::Stored { name, .. } => self.store.upload(name)?.map(Given::whole).ok_or(Error::SourceGone),
            _ => source.read(self.max_message, &self.within()).map_err(|e| {
                tracing::warn!(path = %source.path().display(), error = %e, "source unreadable");
                Error::SourceGone
            }),
        }
    }

    fn cache_get(&self, id: EntryId) -> Option<Arc<Message>> {
        self.cache.get(&id)
    }
}

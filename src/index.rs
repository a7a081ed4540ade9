//! The index: every loaded message by key, Message-ID, Content-ID and content hash, and the order of
//! the list. Pure data, no I/O and no HTTP: the archive fills it, routes and pages read it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::ingest::Source;
use crate::model::{Message, PartIdx, Summary};

/// Position of an entry in the index; stable for the life of the index.
pub type EntryId = u32;

/// One indexed message: what the list and the API need, and where to find its bytes again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The id in URLs (decoded): the Message-ID, or a derived id when it has none or shares it.
    pub key: String,
    pub message_id: Option<String>,
    pub summary: Summary,
    pub location: Location,
    /// Size of the message in bytes.
    pub size: u64,
    /// Hash of the message's bytes: the same bytes found twice are one message.
    pub hash: String,
    /// Content-IDs of its parts, for `cid:` references from other messages.
    pub content_ids: Vec<String>,
    pub has_attachments: bool,
    /// The Message-ID this one replies to: the last References entry, else In-Reply-To.
    pub parent: Option<String>,
}

/// Where an entry's message is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Location {
    /// A message given to mailshelf: it is listed.
    Top {
        source: Source,
        /// The source path relative to the PATH it was found under.
        display: String,
        /// Maildir flags, when the file name carries them.
        flags: Option<String>,
        /// True for uploads (the only messages that can be deleted).
        uploaded: bool,
    },
    /// A message enclosed in another (message/rfc822): reached through its parent, not listed.
    Nested { parent: EntryId, part: PartIdx },
}

/// What [`Index::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    New(EntryId),
    /// The same bytes were already indexed under this entry.
    Duplicate(EntryId),
}

impl Added {
    pub fn id(self) -> EntryId {
        match self {
            Added::New(id) | Added::Duplicate(id) => id,
        }
    }
}

#[derive(Debug, Default)]
pub struct Index {
    entries: Vec<Option<Entry>>,
    by_key: HashMap<String, EntryId>,
    by_message_id: HashMap<String, Vec<EntryId>>,
    by_content_id: HashMap<String, Vec<EntryId>>,
    by_hash: HashMap<String, EntryId>,
    /// Listed (top-level) entries, newest first once [`Index::sort`] has run.
    listed: Vec<EntryId>,
    sorted: bool,
    /// Entries replying to each Message-ID.
    replies: HashMap<String, Vec<EntryId>>,
    /// Messages enclosed in each entry.
    children: HashMap<EntryId, Vec<EntryId>>,
    /// Ids added or changed, and removed, not yet written to the store.
    changed: Vec<EntryId>,
    removed: Vec<EntryId>,
}

impl Index {
    pub fn get(&self, id: EntryId) -> Option<&Entry> {
        self.entries.get(id as usize).and_then(Option::as_ref)
    }

    pub fn by_key(&self, key: &str) -> Option<EntryId> {
        self.by_key.get(key).copied()
    }

    /// Every entry carrying this Message-ID (several when real archives reuse one).
    pub fn by_message_id(&self, message_id: &str) -> &[EntryId] {
        self.by_message_id.get(message_id).map_or(&[], Vec::as_slice)
    }

    pub fn by_hash(&self, hash: &str) -> Option<EntryId> {
        self.by_hash.get(hash).copied()
    }

    pub fn by_content_id(&self, content_id: &str) -> &[EntryId] {
        self.by_content_id.get(content_id).map_or(&[], Vec::as_slice)
    }

    /// Every entry, listed or nested, in the order it was added.
    pub fn entries(&self) -> impl Iterator<Item = (EntryId, &Entry)> {
        self.entries.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (i as EntryId, e)))
    }

    /// The listed messages, newest first.
    pub fn listed(&self) -> &[EntryId] {
        &self.listed
    }

    pub fn listed_count(&self) -> usize {
        self.listed.len()
    }

    /// Adds a parsed message and every message nested in it.
    pub fn add(&mut self, msg: &Message, location: Location) -> Added {
        let hash = content_hash(&msg.raw);
        let listed = matches!(location, Location::Top { .. });
        if let Some(&existing) = self.by_hash.get(&hash) {
            // Found before only inside another message, now given on its own: list it, read from
            // its own source from now on.
            if let Some(e) = self.entries.get_mut(existing as usize).and_then(Option::as_mut) {
                if listed && matches!(e.location, Location::Nested { .. }) {
                    e.location = location;
                    self.listed.push(existing);
                    self.sorted = false;
                    self.changed.push(existing);
                }
            }
            return Added::Duplicate(existing);
        }
        let key = match &msg.message_id {
            Some(mid) if !self.by_key.contains_key(mid) => mid.clone(),
            _ => crate::ids::derived_message_id(&msg.raw),
        };
        let id = self.entries.len() as EntryId;
        let mut content_ids: Vec<String> = msg.parts.iter().filter_map(|p| p.content_id.clone()).collect();
        content_ids.dedup();
        let has_attachments = msg.has_attachments();
        let parent = msg
            .summary
            .references
            .last()
            .or_else(|| msg.summary.in_reply_to.first())
            .filter(|p| Some(*p) != msg.message_id.as_ref())
            .cloned();
        // The index keeps what the list shows; the rest is read from the message when asked for.
        let summary = Summary {
            subject: msg.summary.subject.clone(),
            from: msg.summary.from.clone(),
            date: msg.summary.date.clone(),
            timestamp: msg.summary.timestamp,
            ..Summary::default()
        };
        let entry = Entry {
            key,
            message_id: msg.message_id.clone(),
            summary,
            parent,
            location,
            size: msg.raw.len() as u64,
            hash,
            content_ids,
            has_attachments,
        };
        self.insert(id, entry);
        self.changed.push(id);
        for (part, nested) in msg.nested() {
            self.add(nested, Location::Nested { parent: id, part });
        }
        Added::New(id)
    }

    /// Puts a stored entry back under its id (loading a persisted index).
    pub fn restore(&mut self, id: EntryId, entry: Entry) {
        if self.get(id).is_none() {
            self.insert(id, entry);
        }
    }

    fn insert(&mut self, id: EntryId, entry: Entry) {
        for cid in &entry.content_ids {
            let list = self.by_content_id.entry(cid.clone()).or_default();
            if !list.contains(&id) {
                list.push(id);
            }
        }
        if let Some(mid) = &entry.message_id {
            self.by_message_id.entry(mid.clone()).or_default().push(id);
        }
        self.by_key.insert(entry.key.clone(), id);
        self.by_hash.insert(entry.hash.clone(), id);
        if let Some(p) = &entry.parent {
            self.replies.entry(p.clone()).or_default().push(id);
        }
        match entry.location {
            Location::Top { .. } => {
                self.listed.push(id);
                self.sorted = false;
            }
            Location::Nested { parent, .. } => self.children.entry(parent).or_default().push(id),
        }
        let slot = id as usize;
        if self.entries.len() <= slot {
            self.entries.resize_with(slot + 1, || None);
        }
        self.entries[slot] = Some(entry);
    }

    /// Entries added, changed or removed since the last call, for the persistent store.
    pub fn take_changes(&mut self) -> (Vec<(EntryId, Entry)>, Vec<EntryId>) {
        let mut changed = std::mem::take(&mut self.changed);
        changed.sort_unstable();
        changed.dedup();
        let entries = changed.into_iter().filter_map(|id| self.get(id).map(|e| (id, e.clone()))).collect();
        (entries, std::mem::take(&mut self.removed))
    }

    /// Removes an entry and the messages nested in it.
    pub fn remove(&mut self, id: EntryId) {
        let Some(entry) = self.entries.get_mut(id as usize).and_then(Option::take) else { return };
        self.removed.push(id);
        self.by_key.remove(&entry.key);
        self.by_hash.remove(&entry.hash);
        if let Some(p) = &entry.parent {
            if let Some(list) = self.replies.get_mut(p) {
                list.retain(|&i| i != id);
                if list.is_empty() {
                    self.replies.remove(p);
                }
            }
        }
        if let Some(mid) = &entry.message_id {
            if let Some(list) = self.by_message_id.get_mut(mid) {
                list.retain(|&i| i != id);
                if list.is_empty() {
                    self.by_message_id.remove(mid);
                }
            }
        }
        for cid in &entry.content_ids {
            if let Some(list) = self.by_content_id.get_mut(cid) {
                list.retain(|&i| i != id);
                if list.is_empty() {
                    self.by_content_id.remove(cid);
                }
            }
        }
        self.listed.retain(|&i| i != id);
        for c in self.children.remove(&id).unwrap_or_default() {
            // A child since given on its own stays.
            if matches!(self.get(c).map(|e| &e.location), Some(Location::Nested { .. })) {
                self.remove(c);
            }
        }
    }

    /// The thread `id` belongs to, in reading order, each with its depth: up through In-Reply-To /
    /// References to the root, then every reply below it, oldest first. Loops and missing parents
    /// (common in real archives) end the walk rather than the thread.
    pub fn thread(&self, id: EntryId) -> Vec<(usize, EntryId)> {
        const MAX: usize = 500;
        let mut root = id;
        let mut seen = std::collections::HashSet::new();
        seen.insert(id);
        while let Some(parent) = self.get(root).and_then(|e| e.parent.as_deref()) {
            match self.by_message_id(parent).first() {
                Some(&p) if seen.insert(p) => root = p,
                _ => break,
            }
        }
        let mut out = Vec::new();
        let mut visited = std::collections::HashSet::new();
        let mut stack = vec![(0usize, root)];
        while let Some((depth, e)) = stack.pop() {
            if !visited.insert(e) || out.len() >= MAX {
                continue;
            }
            out.push((depth, e));
            let Some(mid) = self.get(e).and_then(|x| x.message_id.as_deref()) else { continue };
            let mut kids: Vec<EntryId> = self.replies.get(mid).cloned().unwrap_or_default();
            kids.sort_by_key(|k| std::cmp::Reverse(self.get(*k).and_then(|x| x.summary.timestamp).unwrap_or(i64::MIN)));
            stack.extend(kids.into_iter().map(|k| (depth + 1, k)));
        }
        out
    }

    /// Orders the list newest first (undated last), then by key for a stable order.
    pub fn sort(&mut self) {
        if self.sorted {
            return;
        }
        let entries = &self.entries;
        let sort_key = |id: &EntryId| {
            let e = entries[*id as usize].as_ref();
            (
                std::cmp::Reverse(e.and_then(|e| e.summary.timestamp).unwrap_or(i64::MIN)),
                e.map(|e| e.key.clone()).unwrap_or_default(),
            )
        };
        self.listed.sort_by_cached_key(sort_key);
        self.sorted = true;
    }

    /// Entries that are messages given to mailshelf (not nested), in list order.
    pub fn page(&self, offset: usize, limit: usize) -> impl Iterator<Item = (EntryId, &Entry)> {
        self.listed.iter().skip(offset).take(limit).filter_map(|&id| self.get(id).map(|e| (id, e)))
    }
}

/// A short, stable hash of a message's bytes.
pub fn content_hash(raw: &[u8]) -> String {
    blake3::hash(raw).to_hex()[..32].to_string()
}

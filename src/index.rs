//! The index: every loaded message by key, Message-ID, Content-ID and content hash, and the order of
//! the list. Pure data, no I/O and no HTTP: the archive fills it, routes and pages read it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::ingest::Source;
use crate::model::{Message, PartIdx};

/// Position of an entry in the index; stable for the life of the index.
pub type EntryId = u32;

/// One indexed message: what the list and the API need, and where to find its bytes again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The id in URLs (decoded): the Message-ID, or a derived id when it has none or shares it.
    pub key: String,
    /// The Message-ID when it is not the key (a message without one, or one sharing it); see
    /// [`Entry::message_id`]. Most messages are keyed by their Message-ID, which then lives once.
    other_message_id: Option<String>,
    mid_is_key: bool,
    pub summary: Listing,
    pub location: Location,
    /// Size of the message in bytes.
    pub size: u64,
    /// Hash of the message's bytes: the same bytes found twice are one message.
    pub hash: ContentHash,
    /// Content-IDs of its parts, for `cid:` references from other messages.
    pub content_ids: Vec<String>,
    pub has_attachments: bool,
    /// The Message-ID this one replies to: the last References entry, else In-Reply-To.
    pub parent: Option<String>,
    /// Labels and keywords (see [`crate::folders`]).
    pub labels: Vec<String>,
    /// The mailing list it came through (its List-Id).
    pub list: Option<String>,
    /// The type and decoded size of each of its attachments (the first few), for the overview.
    pub attachments: Vec<AttachmentInfo>,
    /// The folder it is filed in (see [`Index::folder_path`]); derived from its location when it
    /// is indexed, so never stored.
    #[serde(skip, default = "no_folder")]
    pub folder: FolderId,
}

/// An attachment's type and size, as the overview counts them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AttachmentInfo {
    pub content_type: String,
    pub size: u64,
}

/// No entry: an empty slot in a table indexed by entry id.
pub const NO_ENTRY: EntryId = EntryId::MAX;

/// A folder's number in the index: its path lives once, in [`Index::folder_path`].
pub type FolderId = u32;

/// The folder of a message that is not listed (one enclosed in another).
pub const NO_FOLDER: FolderId = FolderId::MAX;

fn no_folder() -> FolderId {
    NO_FOLDER
}

/// What the list shows of a message; the rest is read from the message when it is opened.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Listing {
    pub subject: Option<String>,
    pub from: Option<String>,
    /// Seconds since the epoch, for ordering.
    pub timestamp: Option<i64>,
    /// The zone the Date header was written in, in minutes east of UTC.
    pub zone: Option<i16>,
}

impl Listing {
    /// The Date header as RFC 3339, in the zone it was written in.
    pub fn date(&self) -> Option<String> {
        Some(crate::dates::rfc3339(self.timestamp?, self.zone.unwrap_or(0)))
    }
}

/// Where an entry's message is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Location {
    /// A message given to mailshelf: it is listed.
    Top {
        source: Source,
        /// Where, in the source path, the part relative to the PATH it was found under begins.
        rel: u16,
        /// Maildir flags, when the file name carries them.
        flags: Option<String>,
        /// True for uploads (the only messages that can be deleted).
        uploaded: bool,
    },
    /// A message enclosed in another (message/rfc822): reached through its parent, not listed.
    Nested { parent: EntryId, part: PartIdx },
}

impl Entry {
    /// The message's Message-ID, if it has one.
    pub fn message_id(&self) -> Option<&str> {
        if self.mid_is_key {
            Some(&self.key)
        } else {
            self.other_message_id.as_deref()
        }
    }
}

impl Location {
    /// The source as a user knows it: relative to the PATH given, `file@offset` inside an mbox;
    /// `None` for an enclosed message.
    pub fn display(&self) -> Option<String> {
        let Location::Top { source, rel, .. } = self else { return None };
        let path = source.path().to_string_lossy();
        let shown = path.get(usize::from(*rel)..).unwrap_or(&path).to_string();
        Some(match source {
            Source::Mbox { offset, .. } => format!("{shown}@{offset}"),
            Source::Pst { node, .. } => format!("{shown}#{node}"),
            Source::File { .. } => shown,
        })
    }
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

/// Entry ids filed under a 64-bit hash of a string (a key, a Message-ID, a Content-ID). The strings
/// themselves live once, in the entries; a lookup checks them, so a hash collision costs a
/// comparison, never a wrong answer. Most strings name one entry, which needs no allocation.
#[derive(Debug, Default)]
struct Lookup(HashMap<u64, Ids, std::hash::BuildHasherDefault<Prehashed>>);

/// The keys of a [`Lookup`] are SipHash outputs already; hashing them again buys nothing.
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; fold anything else in rather than lose it.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[derive(Debug)]
enum Ids {
    One(EntryId),
    Many(Vec<EntryId>),
}

/// The key of [`string_hash`], drawn at random once per process.
static STRING_HASH_KEY: std::sync::LazyLock<std::collections::hash_map::RandomState> =
    std::sync::LazyLock::new(std::collections::hash_map::RandomState::new);

/// SipHash of a string under a key drawn at start-up: a message cannot be made to aim collisions
/// at it (many ids under one hash would turn every lookup into a scan). The hashes are never stored,
/// so they need not be stable across runs.
pub fn string_hash(s: &str) -> u64 {
    use std::hash::BuildHasher;
    STRING_HASH_KEY.hash_one(s)
}

impl Lookup {
    fn insert(&mut self, key: &str, id: EntryId) {
        match self.0.entry(string_hash(key)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Ids::One(id));
            }
            std::collections::hash_map::Entry::Occupied(mut o) => match o.get_mut() {
                Ids::One(first) if *first != id => {
                    let first = *first;
                    *o.get_mut() = Ids::Many(vec![first, id]);
                }
                Ids::One(_) => {}
                Ids::Many(list) if !list.contains(&id) => list.push(id),
                Ids::Many(_) => {}
            },
        }
    }

    fn remove(&mut self, key: &str, id: EntryId) {
        let h = string_hash(key);
        let empty = match self.0.get_mut(&h) {
            Some(Ids::One(x)) => *x == id,
            Some(Ids::Many(list)) => {
                list.retain(|&x| x != id);
                list.is_empty()
            }
            None => false,
        };
        if empty {
            self.0.remove(&h);
        }
    }

    /// Candidates for `key`, to be checked against the entries.
    fn candidates(&self, key: &str) -> &[EntryId] {
        match self.0.get(&string_hash(key)) {
            Some(Ids::One(id)) => std::slice::from_ref(id),
            Some(Ids::Many(list)) => list,
            None => &[],
        }
    }
}

#[derive(Debug, Default)]
pub struct Index {
    entries: Vec<Option<Entry>>,
    by_key: Lookup,
    by_message_id: Lookup,
    by_content_id: Lookup,
    by_hash: HashMap<ContentHash, EntryId>,
    /// Listed (top-level) entries, newest first once [`Index::sort`] has run.
    listed: Vec<EntryId>,
    sorted: bool,
    /// Entries replying to each Message-ID.
    replies: Lookup,
    /// Messages enclosed in each entry.
    children: HashMap<EntryId, Vec<EntryId>>,
    /// Folder paths by id, how many listed messages each holds, and ids by path.
    folders: Vec<String>,
    folder_counts: Vec<usize>,
    folder_ids: HashMap<String, FolderId>,
    /// How many listed messages carry each label.
    label_counts: HashMap<String, usize>,
    /// Bumped by every change, so what was derived from the index (rewritten documents, whose
    /// `cid:`/`mid:` links may reach other messages) knows when it may be stale.
    generation: u64,
    /// Ids added or changed, and removed, not yet written to the store.
    changed: Vec<EntryId>,
    removed: Vec<EntryId>,
}

impl Index {
    pub fn get(&self, id: EntryId) -> Option<&Entry> {
        self.entries.get(id as usize).and_then(Option::as_ref)
    }

    pub fn by_key(&self, key: &str) -> Option<EntryId> {
        self.by_key.candidates(key).iter().copied().find(|&id| self.get(id).is_some_and(|e| e.key == key))
    }

    /// Every entry carrying this Message-ID (several when real archives reuse one).
    pub fn by_message_id(&self, message_id: &str) -> Vec<EntryId> {
        self.matching(&self.by_message_id, message_id, |e| e.message_id() == Some(message_id))
    }

    fn matching(&self, lookup: &Lookup, key: &str, test: impl Fn(&Entry) -> bool) -> Vec<EntryId> {
        lookup.candidates(key).iter().copied().filter(|&id| self.get(id).is_some_and(&test)).collect()
    }

    pub fn by_hash(&self, hash: &ContentHash) -> Option<EntryId> {
        self.by_hash.get(hash).copied()
    }

    pub fn by_content_id(&self, content_id: &str) -> Vec<EntryId> {
        self.matching(&self.by_content_id, content_id, |e| e.content_ids.iter().any(|c| c == content_id))
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
        // Keyed by the message that was read, not the file: a `.partial.emlx` is completed from the
        // files beside it, so two identical files may hold two different messages.
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
                    self.file(existing);
                }
            }
            return Added::Duplicate(existing);
        }
        let key = match &msg.message_id {
            Some(mid) if self.by_key(mid).is_none() => mid.clone(),
            _ => crate::ids::derived_message_id(&msg.raw),
        };
        let id = self.entries.len() as EntryId;
        let mut content_ids: Vec<String> =
            msg.parts.iter().filter_map(|p| p.reference_id().map(str::to_string)).collect();
        content_ids.dedup();
        let has_attachments = msg.has_attachments();
        let parent = msg
            .summary
            .references
            .last()
            .or_else(|| msg.summary.in_reply_to.first())
            .filter(|p| Some(*p) != msg.message_id.as_ref())
            .cloned();
        let summary = Listing {
            subject: msg.summary.subject.clone(),
            from: msg.summary.from.clone(),
            timestamp: msg.summary.timestamp,
            zone: msg.summary.date.as_deref().and_then(crate::dates::offset_minutes),
        };
        let attachments = msg
            .attachments()
            .take(crate::limits::MAX_LISTED_ATTACHMENTS)
            .map(|p| AttachmentInfo { content_type: p.content_type.clone(), size: p.size() as u64 })
            .collect();
        let entry = Entry {
            labels: msg.summary.labels.clone(),
            list: msg.summary.list.clone(),
            attachments,
            folder: NO_FOLDER,
            mid_is_key: msg.message_id.as_ref() == Some(&key),
            other_message_id: msg.message_id.clone().filter(|m| *m != key),
            key,
            summary,
            parent,
            location,
            size: msg.given().len() as u64,
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

    /// Room for `n` entries, before loading a persisted index.
    pub fn reserve(&mut self, n: usize) {
        self.entries.reserve(n);
        self.listed.reserve(n);
        self.by_key.0.reserve(n);
        self.by_message_id.0.reserve(n);
        self.by_hash.reserve(n);
    }

    /// Puts a stored entry back under its id (loading a persisted index).
    pub fn restore(&mut self, id: EntryId, entry: Entry) {
        if self.get(id).is_none() {
            self.insert(id, entry);
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn insert(&mut self, id: EntryId, entry: Entry) {
        self.generation += 1;
        for cid in &entry.content_ids {
            self.by_content_id.insert(cid, id);
        }
        if let Some(mid) = entry.message_id() {
            self.by_message_id.insert(mid, id);
        }
        self.by_key.insert(&entry.key, id);
        self.by_hash.insert(entry.hash, id);
        if let Some(p) = &entry.parent {
            self.replies.insert(p, id);
        }
        let listed = match entry.location {
            Location::Top { .. } => {
                self.listed.push(id);
                self.sorted = false;
                true
            }
            Location::Nested { parent, .. } => {
                self.children.entry(parent).or_default().push(id);
                false
            }
        };
        let slot = id as usize;
        if self.entries.len() <= slot {
            self.entries.resize_with(slot + 1, || None);
        }
        self.entries[slot] = Some(entry);
        if listed {
            self.file(id);
        }
    }

    /// Files a listed entry in the folder its location says, and counts its labels.
    fn file(&mut self, id: EntryId) {
        let Some(Entry { location: Location::Top { source, rel, uploaded, .. }, labels, .. }) = self.get(id) else {
            return;
        };
        let path = if *uploaded {
            crate::folders::UPLOADS.to_string()
        } else {
            let full = source.path().to_string_lossy();
            let rel_path = full.get(usize::from(*rel)..).unwrap_or(&full);
            match source {
                Source::Pst { folder, .. } => crate::folders::pst_folder(std::path::Path::new(rel_path), folder),
                _ => crate::folders::folder_of(std::path::Path::new(rel_path), matches!(source, Source::Mbox { .. })),
            }
        };
        for l in labels.clone() {
            *self.label_counts.entry(l).or_default() += 1;
        }
        let folder = match self.folder_ids.get(&path) {
            Some(&f) => f,
            None => {
                let f = self.folders.len() as FolderId;
                self.folders.push(path.clone());
                self.folder_counts.push(0);
                self.folder_ids.insert(path, f);
                f
            }
        };
        self.folder_counts[folder as usize] += 1;
        if let Some(e) = self.entries.get_mut(id as usize).and_then(Option::as_mut) {
            e.folder = folder;
        }
    }

    /// The path of a folder (`""` for messages at the top of a PATH and for enclosed ones).
    pub fn folder_path(&self, folder: FolderId) -> &str {
        self.folders.get(folder as usize).map_or("", String::as_str)
    }

    /// The id of the folder at `path`, if any message was ever filed there.
    pub fn folder_id(&self, path: &str) -> Option<FolderId> {
        self.folder_ids.get(path).copied()
    }

    /// Every folder that holds listed messages, with how many.
    pub fn folder_counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.folders.iter().zip(&self.folder_counts).filter(|(_, &n)| n > 0).map(|(p, &n)| (p.as_str(), n))
    }

    /// Every label on a listed message, with how many carry it.
    pub fn label_counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.label_counts.iter().filter(|(_, &n)| n > 0).map(|(l, &n)| (l.as_str(), n))
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
        self.generation += 1;
        self.removed.push(id);
        self.by_key.remove(&entry.key, id);
        self.by_hash.remove(&entry.hash);
        if let Some(p) = &entry.parent {
            self.replies.remove(p, id);
        }
        if let Some(mid) = entry.message_id() {
            self.by_message_id.remove(mid, id);
        }
        for cid in &entry.content_ids {
            self.by_content_id.remove(cid, id);
        }
        if matches!(entry.location, Location::Top { .. }) {
            if let Some(n) = self.folder_counts.get_mut(entry.folder as usize) {
                *n = n.saturating_sub(1);
            }
            for l in &entry.labels {
                if let Some(n) = self.label_counts.get_mut(l) {
                    *n = n.saturating_sub(1);
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
            let Some(mid) = self.get(e).and_then(|x| x.message_id()) else { continue };
            let mut kids = self.matching(&self.replies, mid, |x| x.parent.as_deref() == Some(mid));
            kids.sort_by_key(|k| std::cmp::Reverse(self.get(*k).and_then(|x| x.summary.timestamp).unwrap_or(i64::MIN)));
            stack.extend(kids.into_iter().map(|k| (depth + 1, k)));
        }
        out
    }

    /// Orders the list newest first (undated last), then in the order found.
    pub fn sort(&mut self) {
        if self.sorted {
            return;
        }
        let entries = &self.entries;
        let newest_first = |id: &EntryId| {
            let ts = entries.get(*id as usize).and_then(Option::as_ref).and_then(|e| e.summary.timestamp);
            (std::cmp::Reverse(ts.unwrap_or(i64::MIN)), *id)
        };
        self.listed.sort_unstable_by_key(newest_first);
        self.sorted = true;
    }

    /// Listed entries that `keep` accepts, in list order: the `limit` from `offset`, and how many
    /// it accepts in all.
    pub fn page_where(
        &self,
        offset: usize,
        limit: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> (Vec<(EntryId, &Entry)>, usize) {
        let mut total = 0;
        let mut page = Vec::new();
        for (id, e) in self.listed.iter().filter_map(|&id| self.get(id).map(|e| (id, e))) {
            if keep(e) {
                if total >= offset && page.len() < limit {
                    page.push((id, e));
                }
                total += 1;
            }
        }
        (page, total)
    }

    /// One more than the largest entry id: the length of a table indexed by entry id.
    pub fn id_bound(&self) -> usize {
        self.entries.len()
    }

    /// The first message of the conversation `id` is in: up through In-Reply-To / References as
    /// far as the messages are here (a loop or a missing parent ends the walk). `memo`, indexed by
    /// entry id and [`id_bound`](Index::id_bound) long, keeps what earlier walks found
    /// ([`NO_ENTRY`] where nothing yet), so grouping a whole list walks each chain once.
    pub fn thread_root(&self, id: EntryId, memo: &mut [EntryId]) -> EntryId {
        const MAX: usize = 500;
        let known = |memo: &[EntryId], at: EntryId| memo.get(at as usize).copied().filter(|&r| r != NO_ENTRY);
        let mut path = vec![id];
        let mut at = id;
        let root = loop {
            if let Some(r) = known(memo, at) {
                break r;
            }
            let parent = self.get(at).and_then(|e| e.parent.as_deref()).and_then(|p| self.first_by_message_id(p));
            match parent {
                Some(p) if path.len() < MAX && !path.contains(&p) => {
                    path.push(p);
                    at = p;
                }
                _ => break at,
            }
        };
        for p in path {
            if let Some(slot) = memo.get_mut(p as usize) {
                *slot = root;
            }
        }
        root
    }

    /// The first entry carrying this Message-ID, without collecting them all.
    pub fn first_by_message_id(&self, message_id: &str) -> Option<EntryId> {
        self.by_message_id
            .candidates(message_id)
            .iter()
            .copied()
            .find(|&id| self.get(id).is_some_and(|e| e.message_id() == Some(message_id)))
    }

    /// Entries that are messages given to mailshelf (not nested), in list order.
    pub fn page(&self, offset: usize, limit: usize) -> impl Iterator<Item = (EntryId, &Entry)> {
        self.listed.iter().skip(offset).take(limit).filter_map(|&id| self.get(id).map(|e| (id, e)))
    }
}

/// 128 bits of BLAKE3 over a message's bytes: stable, and short enough to keep for every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContentHash(pub [u8; 16]);

impl std::fmt::Display for ContentHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The hash of a message's bytes.
pub fn content_hash(raw: &[u8]) -> ContentHash {
    let mut out = [0u8; 16];
    out.copy_from_slice(&blake3::hash(raw).as_bytes()[..16]);
    ContentHash(out)
}

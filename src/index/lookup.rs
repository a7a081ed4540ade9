//! Reading the index: an entry by id (pending changes first, then the cache, then the store),
//! several at once, and the lookups by key, Message-ID, Content-ID and content hash, which ask the
//! store's link tables and the changes not yet committed. While the first run into an empty store
//! lasts, a Bloom filter of every key put ([`Seen`]) answers most lookups without the store. Also
//! [`EntryPass`], one pass over every entry that runs without the index held.

use std::collections::HashMap;
use std::sync::Arc;

use super::{ContentHash, Entry, EntryId, FolderId, Index, Location, NO_FOLDER};
use crate::store::{Link, Store};

impl Index {
    pub fn get(&self, id: EntryId) -> Option<Arc<Entry>> {
        if let Some(change) = self.pending.get(&id) {
            return change.clone();
        }
        if let Some(hit) = self.cache.get(&id) {
            return Some(hit);
        }
        match self.store.entry(id) {
            Ok(Some(e)) => {
                let e = Arc::new(self.filed_as_counted(e));
                self.cache.insert(id, Arc::clone(&e));
                Some(e)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(id, error = %e, "index entry unreadable");
                None
            }
        }
    }

    /// The entries of `ids` that exist, in the order given: what is not pending or cached is read
    /// from the store in one call.
    pub fn get_many(&self, ids: &[EntryId]) -> Vec<(EntryId, Arc<Entry>)> {
        let mut found: HashMap<EntryId, Arc<Entry>> = HashMap::with_capacity(ids.len());
        let mut missing = Vec::new();
        for &id in ids {
            match self.pending.get(&id) {
                Some(Some(e)) => {
                    found.insert(id, Arc::clone(e));
                }
                Some(None) => {}
                None => match self.cache.get(&id) {
                    Some(e) => {
                        found.insert(id, e);
                    }
                    None => missing.push(id),
                },
            }
        }
        if !missing.is_empty() {
            match self.store.entries(&missing) {
                Ok(read) => {
                    for (id, e) in read {
                        let e = Arc::new(self.filed_as_counted(e));
                        self.cache.insert(id, Arc::clone(&e));
                        found.insert(id, e);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "index entries unreadable"),
            }
        }
        ids.iter().filter_map(|id| Some((*id, found.get(id)?.clone()))).collect()
    }

    /// Entries a name is linked to by `link`, to be checked against the entries.
    pub(super) fn candidates(&self, link: Link, hash: u64) -> Vec<EntryId> {
        let never_put = self.seen.as_ref().is_some_and(|s| !s.may_hold(link_key(link, hash)));
        let stored = if never_put { Ok(Vec::new()) } else { self.store.linked(link, hash) };
        let mut ids = stored.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "index lookup failed");
            Vec::new()
        });
        if let Some(more) = self.overlay.get(&(link, hash)) {
            for &id in more {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// The entries linked to `name` by `link` that pass `test`, in id order.
    pub(super) fn named(&self, link: Link, name: &str, test: impl Fn(&Entry) -> bool) -> Vec<EntryId> {
        let mut ids: Vec<EntryId> = self
            .candidates(link, self.names.of(name))
            .into_iter()
            .filter(|&id| self.get(id).is_some_and(|e| test(&e)))
            .collect();
        ids.sort_unstable();
        ids
    }

    pub fn by_key(&self, key: &str) -> Option<EntryId> {
        self.named(Link::Name, key, |e| e.key == key).first().copied()
    }

    /// Every entry carrying this Message-ID (several when real archives reuse one).
    pub fn by_message_id(&self, message_id: &str) -> Vec<EntryId> {
        self.named(Link::Name, message_id, |e| e.message_id() == Some(message_id))
    }

    /// Every entry answering to `name` besides its key ([`Entry::answers_to`]): those carrying
    /// it as their Message-ID, or copies without one whose bytes it is derived from.
    pub fn answering_to(&self, name: &str) -> Vec<EntryId> {
        self.named(Link::Name, name, |e| e.answers_to().is_some_and(|n| n == name))
    }

    /// The first entry carrying this Message-ID.
    pub fn first_by_message_id(&self, message_id: &str) -> Option<EntryId> {
        self.by_message_id(message_id).first().copied()
    }

    pub fn by_content_id(&self, content_id: &str) -> Vec<EntryId> {
        self.named(Link::ContentId, content_id, |e| e.content_ids.iter().any(|c| c == content_id))
    }

    pub fn by_hash(&self, hash: &ContentHash) -> Option<EntryId> {
        if let Some(&id) = self.overlay_hashes.get(hash) {
            return Some(id);
        }
        if self.seen.as_ref().is_some_and(|s| !s.may_hold(hash_key(hash))) {
            return None;
        }
        let id = self.store.by_hash(hash).ok()??;
        // Removed and not yet committed: gone.
        self.get(id).filter(|e| e.hash == *hash).map(|_| id)
    }

    /// Starts what only the first run into an empty store needs (a Bloom filter of the keys put),
    /// when the store is empty: nearly every lookup of such a run is of a key never put.
    pub fn begin_first_run(&mut self) {
        if self.next_id == 0 && self.listed.is_empty() && self.store.next_id().is_ok_and(|n| n == 0) {
            self.seen = Some(Seen::new());
        }
    }

    /// Ends what only the first run into an empty store needs (its Bloom filter): later runs and
    /// uploads add a few messages each, and look them up in the store.
    pub fn end_first_run(&mut self) {
        self.seen = None;
    }

    /// A pass over every entry that can run without the index held (see [`EntryPass`]).
    pub fn pass(&self) -> EntryPass {
        let canon = self.folders_merged.then(|| self.folder_canon.clone());
        EntryPass { store: Arc::clone(&self.store), pending: self.pending.clone(), canon }
    }

    /// Calls `f` with every listed entry, in no particular order: one sequential pass over the
    /// store (plus what is not committed yet), without filling the cache.
    pub fn each_listed_entry(&self, f: impl FnMut(EntryId, &Entry)) {
        self.pass().each_listed_entry(f);
    }

    /// Calls `f` with every entry, listed or enclosed, as [`Index::each_listed_entry`] does.
    pub fn each_entry(&self, f: impl FnMut(EntryId, &Entry)) {
        self.pass().each_entry(f);
    }

    /// Every entry, listed or enclosed, in id order, read into memory at once: for tools and tests
    /// on small archives (the server itself never holds them all).
    pub fn entries(&self) -> impl Iterator<Item = (EntryId, Arc<Entry>)> {
        let mut all = Vec::new();
        self.each_entry(|id, e| all.push((id, Arc::new(e.clone()))));
        all.sort_unstable_by_key(|(id, _)| *id);
        all.into_iter()
    }

    /// One more than the largest entry id: the length of a table indexed by entry id.
    pub fn id_bound(&self) -> usize {
        self.next_id as usize
    }
}

/// One sequential pass over every stored entry, with the changes not yet committed in their place:
/// taken while the index is held (the store and a copy of what is pending, at most a commit's
/// worth), run after it is let go, so that counting a million entries keeps neither indexing nor
/// any page waiting. A commit in between is seen or not, entry by entry; each entry is whole.
pub struct EntryPass {
    store: Arc<dyn Store>,
    pending: HashMap<EntryId, Option<Arc<Entry>>>,
    /// The number each folder is counted under, when some folder has several (see
    /// [`Index::canonical`]).
    canon: Option<Vec<FolderId>>,
}

impl EntryPass {
    /// Calls `f` with every entry, listed or enclosed, in no particular order.
    pub fn each_entry(&self, mut f: impl FnMut(EntryId, &Entry)) {
        let result = self.store.each_entry(&mut |id, mut e| {
            if !self.pending.contains_key(&id) {
                if let Some(&c) = self.canon.as_ref().and_then(|canon| canon.get(e.folder as usize)) {
                    if c != NO_FOLDER {
                        e.folder = c;
                    }
                }
                f(id, &e);
            }
        });
        if let Err(e) = result {
            tracing::warn!(error = %e, "index entries unreadable");
        }
        for (&id, change) in &self.pending {
            if let Some(e) = change {
                f(id, e);
            }
        }
    }

    /// Calls `f` with every listed entry, in no particular order.
    pub fn each_listed_entry(&self, mut f: impl FnMut(EntryId, &Entry)) {
        self.each_entry(|id, e| {
            if matches!(e.location, Location::Top { .. }) {
                f(id, e);
            }
        });
    }
}

/// The keys of a first run, as a Bloom filter: a key it says was never put is in neither the
/// overlay nor the store (which was empty when the run began, and has had only what was put
/// since); a key it says may have been put is looked up as usual. 4 MiB, three probes: about 1%
/// of lookups still reach the store after three million keys (a million messages), and the
/// memory is handed back when the run ends.
pub(super) struct Seen {
    bits: Vec<u64>,
}

impl Seen {
    const BITS: u64 = 1 << 25;
    const PROBES: u64 = 3;

    pub(super) fn new() -> Seen {
        Seen { bits: vec![0; (Self::BITS / 64) as usize] }
    }

    /// Where `key` is marked: the keys are hashes already, mixed once more and split in two
    /// for double hashing.
    fn probes(key: u64) -> impl Iterator<Item = usize> {
        let mixed = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let (a, b) = (mixed >> 32, (mixed & 0xFFFF_FFFF) | 1);
        (0..Self::PROBES).map(move |i| (a.wrapping_add(i.wrapping_mul(b)) % Self::BITS) as usize)
    }

    pub(super) fn insert(&mut self, key: u64) {
        for bit in Self::probes(key) {
            if let Some(word) = self.bits.get_mut(bit / 64) {
                *word |= 1 << (bit % 64);
            }
        }
    }

    pub(super) fn may_hold(&self, key: u64) -> bool {
        Self::probes(key).all(|bit| self.bits.get(bit / 64).is_some_and(|w| w & (1 << (bit % 64)) != 0))
    }
}

pub(super) fn hash_key(hash: &ContentHash) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.0[..8]);
    u64::from_le_bytes(first)
}

pub(super) fn link_key(link: Link, hash: u64) -> u64 {
    hash ^ (link as u64 + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_run_filter_never_forgets_a_key() {
        let mut seen = Seen::new();
        let key = |n: u64| crate::index::string_hash(&n.to_string());
        for n in 0..300_000 {
            seen.insert(key(n));
        }
        assert!((0..300_000).all(|n| seen.may_hold(key(n))));
        let strangers = (300_000..400_000).filter(|&n| seen.may_hold(key(n))).count();
        assert!(strangers < 100, "{strangers} of 100,000 keys never put pass");
    }
}

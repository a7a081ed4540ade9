//! Following a shared store's feed of changes: what other replicas committed since this index last
//! looked (new messages join the list, removed ones leave it, moved ones change folder), or, when
//! the feed no longer reaches back that far, everything read again.

use super::lookup::{hash_key, link_key};
use super::{Index, Location, NO_FOLDER};
use crate::error::Error;
use crate::store::Changes;

impl Index {
    /// How far this index has followed the store's feed of changes.
    pub fn feed_position(&self) -> u64 {
        self.seq
    }

    /// Applies what other replicas committed to a shared store since feed position `from` (read
    /// with [`crate::store::Store::changes_since`] without holding the index): new messages join the list,
    /// removed ones leave it, changed entries are read afresh. Returns whether anything changed.
    pub fn apply_changes(&mut self, from: u64, changes: Changes) -> Result<bool, Error> {
        let Changes { upto, gap, entries } = changes;
        if from != self.seq {
            // Read again meanwhile: these changes are in it, or come at the next call.
            return Ok(false);
        }
        if gap {
            tracing::info!("the change feed no longer reaches back here; reading the list again");
            self.cache.clear();
            self.reload()?;
            self.generation += 1;
            return Ok(true);
        }
        self.seq = upto;
        if entries.is_empty() {
            return Ok(false);
        }
        if self.reload_folders()? {
            // A folder counted under one number is counted under another now: count again.
            self.cache.clear();
            self.reload()?;
            self.generation += 1;
            return Ok(true);
        }
        for (id, now) in entries {
            // Changed here since: ours is newer until it is committed.
            if self.pending.contains_key(&id) {
                continue;
            }
            self.cache.remove(&id);
            self.next_id = self.next_id.max(id.saturating_add(1));
            if let (Some(seen), Some(e)) = (&mut self.seen, &now) {
                // Put by another replica during our first run: no longer a key never put.
                for (link, h) in crate::store::links_of(e, &self.names) {
                    seen.insert(link_key(link, h));
                }
                seen.insert(hash_key(&e.hash));
            }
            let listed_now =
                now.filter(|e| matches!(e.location, Location::Top { .. })).map(|e| self.canonical(e.folder));
            let here = self.folder_of(id);
            match listed_now {
                Some(folder) if here == NO_FOLDER => self.place(id, folder),
                Some(folder) if here != folder => {
                    if let Some(n) = self.folder_counts.get_mut(here as usize) {
                        *n = n.saturating_sub(1);
                    }
                    self.file_in(id, folder);
                }
                Some(_) => {}
                None if here != NO_FOLDER => self.unlist(id, here),
                None => {}
            }
        }
        self.reload_labels()?;
        self.generation += 1;
        self.sort();
        Ok(true)
    }
}

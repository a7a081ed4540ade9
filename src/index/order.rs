//! The list and its counts: the listed messages newest first (new ones placed by a merge, or the
//! whole order read back from the store after a large run), pages of it, of one folder, or of what
//! a test accepts; each listed message's folder; how many messages each folder and label holds.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{Entry, EntryId, FolderId, Index, NO_FOLDER};
use crate::error::Error;
use crate::store::rank;

/// New messages at the end of the list above which sorting reads the whole order back from the
/// store (one sequential pass: 0.15 s at a million) instead of placing each by a binary search
/// (some twenty entry reads each).
const RELOAD_ORDER_AFTER: usize = 256;

impl Index {
    /// The listed messages, newest first (those added since the last [`Index::sort`] at the end).
    pub fn listed(&self) -> &[EntryId] {
        &self.listed
    }

    pub fn listed_count(&self) -> usize {
        self.listed.len().saturating_sub(self.unlisted.len())
    }

    /// Puts a listed entry at the end of the list, in its folder.
    pub(super) fn place(&mut self, id: EntryId, folder: FolderId) {
        self.listed.push(id);
        self.file_in(id, folder);
    }

    /// Records a listed entry's folder (the first number of it: see [`Index::canonical`]), and
    /// counts it there.
    pub(super) fn file_in(&mut self, id: EntryId, folder: FolderId) {
        let folder = self.canonical(folder);
        let slot = id as usize;
        if self.folder_of.len() <= slot {
            self.folder_of.resize(slot + 1, NO_FOLDER);
        }
        self.folder_of[slot] = folder;
        let f = folder as usize;
        if self.folder_counts.len() <= f && folder != NO_FOLDER {
            self.grow_folders(f + 1);
        }
        if let Some(n) = self.folder_counts.get_mut(f) {
            *n += 1;
        }
    }

    /// Takes a listed entry out of the list (at the next sort) and out of its folder's count.
    pub(super) fn unlist(&mut self, id: EntryId, folder: FolderId) {
        self.unlisted.insert(id);
        if let Some(n) = self.folder_counts.get_mut(folder as usize) {
            *n = n.saturating_sub(1);
        }
        if let Some(slot) = self.folder_of.get_mut(id as usize) {
            *slot = NO_FOLDER;
        }
    }

    /// Reads the list and each listed message's folder back from the store.
    pub(super) fn reload_order(&mut self) -> Result<(), Error> {
        let mut listed = Vec::with_capacity(self.listed.len());
        let mut folder_of = vec![NO_FOLDER; self.next_id as usize];
        let mut counts = vec![0usize; self.folders.len()];
        let canon = &self.folder_canon;
        self.store.each_listed(&mut |id, folder| {
            let folder = match canon.get(folder as usize) {
                Some(&c) if c != NO_FOLDER => c,
                _ => folder,
            };
            listed.push(id);
            let slot = id as usize;
            if folder_of.len() <= slot {
                // Another replica's message, newer than this index.
                folder_of.resize(slot + 1, NO_FOLDER);
            }
            folder_of[slot] = folder;
            if let Some(n) = counts.get_mut(folder as usize) {
                *n += 1;
            }
        })?;
        self.sorted = listed.len();
        self.listed = listed;
        self.next_id = self.next_id.max(folder_of.len() as EntryId);
        self.folder_of = folder_of;
        self.folder_counts = counts;
        self.unlisted.clear();
        Ok(())
    }

    /// The store's label counts, with our changes not yet committed added.
    pub(super) fn reload_labels(&mut self) -> Result<(), Error> {
        let mut counts: HashMap<String, i64> =
            self.store.labels()?.into_iter().map(|(l, n)| (l, i64::try_from(n).unwrap_or(i64::MAX))).collect();
        for (l, d) in &self.label_changes {
            *counts.entry(l.clone()).or_default() += d;
        }
        self.label_counts = counts.into_iter().map(|(l, n)| (l, usize::try_from(n).unwrap_or(0))).collect();
        Ok(())
    }

    /// The folder of a listed entry, without reading it.
    pub fn folder_of(&self, id: EntryId) -> FolderId {
        self.folder_of.get(id as usize).copied().unwrap_or(NO_FOLDER)
    }

    /// Every label on a listed message, with how many carry it.
    pub fn label_counts(&self) -> impl Iterator<Item = (&str, usize)> {
        self.label_counts
            .iter()
            .filter(|(l, &n)| n > 0 && !l.starts_with(super::labels::BELOW))
            .map(|(l, &n)| (l.as_str(), n))
    }

    /// Every label on a listed message and every label above one, by key, with how many listed
    /// messages carry it or a label below it (see [`super::labels`]).
    pub fn label_totals(&self) -> impl Iterator<Item = (&str, usize)> {
        self.label_counts
            .iter()
            .filter(|(_, &n)| n > 0)
            .filter_map(|(l, &n)| Some((l.strip_prefix(super::labels::BELOW)?, n)))
    }

    /// Orders the list newest first (undated last), then in the order found: the messages added
    /// since the last sort are placed into it, and removed ones dropped.
    pub fn sort(&mut self) {
        if !self.unlisted.is_empty() {
            let unlisted = std::mem::take(&mut self.unlisted);
            let mut head = 0;
            let mut i = 0;
            let sorted = self.sorted;
            self.listed.retain(|id| {
                let keep = !unlisted.contains(id);
                if i < sorted {
                    head += usize::from(keep);
                }
                i += 1;
                keep
            });
            self.sorted = head;
        }
        if self.sorted == self.listed.len() {
            return;
        }
        // Once everything is committed, the order table has the whole list in order.
        let tail_len = self.listed.len() - self.sorted;
        if tail_len > RELOAD_ORDER_AFTER && self.pending.is_empty() {
            match self.reload_order() {
                Ok(()) => return,
                Err(e) => tracing::warn!(error = %e, "list order not read back; sorting in memory"),
            }
        }
        let rank_of = |id: EntryId| (self.get(id).map_or(u64::MAX, |e| rank(e.summary.timestamp)), id);
        let mut tail: Vec<(u64, EntryId)> = self.listed[self.sorted..].iter().map(|&id| rank_of(id)).collect();
        tail.sort_unstable();
        let head = &self.listed[..self.sorted];
        // Where each new message goes among the sorted ones: a binary search reading the entries
        // it passes (the first levels are the same for every search, so they come from the cache).
        let mut merged = Vec::with_capacity(self.listed.len());
        let mut from = 0;
        for &(r, id) in &tail {
            let at = from + head[from..].partition_point(|&h| rank_of(h) < (r, id));
            merged.extend_from_slice(&head[from..at]);
            merged.push(id);
            from = at;
        }
        merged.extend_from_slice(&head[from..]);
        self.listed = merged;
        self.sorted = self.listed.len();
    }

    /// The listed messages of one folder, in list order: the `limit` from `offset`, and how many.
    pub fn folder_page(&self, folder: FolderId, offset: usize, limit: usize) -> (Vec<EntryId>, usize) {
        let mut total = 0;
        let mut page = Vec::new();
        for &id in &self.listed {
            if self.folder_of.get(id as usize) == Some(&folder)
                && (self.unlisted.is_empty() || !self.unlisted.contains(&id))
            {
                if total >= offset && page.len() < limit {
                    page.push(id);
                }
                total += 1;
            }
        }
        (page, total)
    }

    /// The listed messages among `ids`, in list order.
    pub fn listed_in(&self, ids: &HashSet<EntryId>) -> Vec<EntryId> {
        self.listed.iter().copied().filter(|id| ids.contains(id)).collect()
    }

    /// The listed messages `keep` accepts, in list order. Reads every listed entry (one pass over
    /// the store): for what no table answers (a label).
    pub fn listed_where(&self, keep: impl Fn(&Entry) -> bool) -> Vec<EntryId> {
        let mut accepted = HashSet::new();
        self.each_listed_entry(|id, e| {
            if keep(e) {
                accepted.insert(id);
            }
        });
        self.listed_in(&accepted)
    }

    /// Listed entries that `keep` accepts, in list order: the `limit` from `offset`, and how many
    /// it accepts in all (see [`Index::listed_where`]).
    pub fn page_where(
        &self,
        offset: usize,
        limit: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> (Vec<(EntryId, Arc<Entry>)>, usize) {
        let accepted = self.listed_where(keep);
        let ids: Vec<EntryId> = accepted.iter().skip(offset).take(limit).copied().collect();
        let page = self.get_many(&ids);
        (page, accepted.len())
    }

    /// Entries that are messages given to mailshelf (not nested), in list order.
    pub fn page(&self, offset: usize, limit: usize) -> Vec<(EntryId, Arc<Entry>)> {
        let ids: Vec<EntryId> = if self.unlisted.is_empty() {
            self.listed.iter().skip(offset).take(limit).copied().collect()
        } else {
            self.listed.iter().filter(|id| !self.unlisted.contains(id)).skip(offset).take(limit).copied().collect()
        };
        self.get_many(&ids)
    }

    /// Puts a listed entry at the end of the list, counted in its folder and labels.
    pub(super) fn list(&mut self, id: EntryId, e: &Entry) {
        self.place(id, e.folder);
        self.count_labels(&e.labels, true);
    }

    /// Counts a listed entry's `labels` in their lists (`more`), or no longer (`!more`).
    pub(super) fn count_labels(&mut self, labels: &[String], more: bool) {
        for l in super::labels::counted(labels) {
            let n = self.label_counts.entry(l.clone()).or_default();
            *n = if more { *n + 1 } else { n.saturating_sub(1) };
            *self.label_changes.entry(l).or_default() += if more { 1 } else { -1 };
        }
    }
}

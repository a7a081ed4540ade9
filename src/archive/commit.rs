//! Commits: what indexing adds reaches the store in batches. A checkpoint in the middle of a run
//! is written on a thread of its own while the collector goes on adding (one at a time, each
//! after the one before it); the commit that ends a run or an upload waits for it, then writes the
//! last batch while the search index commits beside it. The store is the reference: a search
//! index that is behind or ahead of it after a crash is brought in line at the next start
//! ([`Archive::reconcile_search`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::Archive;
use crate::error::Error;
use crate::index::EntryId;
use crate::search::SearchIndex;
use crate::store::{Batch, Store};

/// A checkpoint being written to the store.
pub(super) struct Writing {
    thread: JoinHandle<(Batch, Result<(), Error>)>,
    /// Entries first added in it: taken back out if the run is given up and it was not written.
    added: Vec<EntryId>,
}

impl Archive {
    /// Writes `batch`, with every change the index holds, as a checkpoint on a thread of its own,
    /// once the checkpoint before it is written. `uncommitted` (the entries added since the last
    /// checkpoint) goes with it, and comes back if it cannot be written.
    pub(super) fn checkpoint(&self, mut batch: Batch, uncommitted: &mut Vec<EntryId>) {
        self.checkpoint_written(uncommitted);
        self.index().take_changes(&mut batch);
        self.delete_from_search(&batch.removed);
        let store = Arc::clone(&self.store);
        let added = std::mem::take(uncommitted);
        let write = move || {
            let result = write(store.as_ref(), &batch);
            (batch, result)
        };
        match std::thread::Builder::new().name("index-commit".into()).spawn(write) {
            Ok(thread) => *self.writing() = Some(Writing { thread, added }),
            Err(e) => {
                tracing::warn!(error = %e, "no thread to write a checkpoint on; indexing goes on, it is written at the end");
                uncommitted.extend(added);
            }
        }
    }

    /// Waits for the checkpoint being written, if there is one, and takes note of what it wrote;
    /// the entries it added go back to `uncommitted` if it could not write them.
    pub(super) fn checkpoint_written(&self, uncommitted: &mut Vec<EntryId>) {
        let Some(Writing { thread, added }) = self.writing().take() else { return };
        let result = match thread.join() {
            Ok((batch, result)) => {
                self.written(&batch, &result);
                result
            }
            Err(_) => Err(Error::internal("index", std::io::Error::other("the checkpoint's thread ended early"))),
        };
        if result.is_err() {
            uncommitted.splice(0..0, added);
        }
    }

    /// Writes a batch, with every change the index holds, to the store, and makes what was added
    /// to the search index visible: the end of an indexing run, an upload, a deletion. A
    /// checkpoint still being written is waited for, and the search index commits meanwhile.
    pub(super) fn commit(&self, mut batch: Batch) -> Result<(), Error> {
        let store_then = |batch: &mut Batch| {
            self.checkpoint_written(&mut Vec::new());
            self.index().take_changes(batch);
            let result = write(self.store.as_ref(), batch);
            self.written(batch, &result);
            result
        };
        let Some(search) = self.search.as_deref() else { return store_then(&mut batch) };
        let result = std::thread::scope(|scope| {
            let searching = scope.spawn(|| commit_search(search));
            let result = store_then(&mut batch);
            if searching.join().is_err() {
                tracing::error!("search index commit failed");
            }
            result
        });
        // What the last batch takes out is taken out of searches too (rare: a source gone or
        // read again, an upload deleted).
        if !batch.removed.is_empty() {
            self.delete_from_search(&batch.removed);
            commit_search(search);
        }
        result
    }

    /// Takes note of a batch the store was given: its changes are no longer pending if it holds
    /// them now.
    fn written(&self, batch: &Batch, result: &Result<(), Error>) {
        match result {
            Ok(()) => self.index_mut().committed(batch),
            Err(_) if self.closing.load(Ordering::Acquire) => {}
            Err(e) => tracing::error!(error = %e, "could not save the index; it will be rebuilt from sources"),
        }
        // A batch's parsed messages and rows are free now: hand them back between batches, so the
        // peak is one batch's worth, not the sum of what the arenas kept.
        crate::memory::release();
    }

    fn delete_from_search(&self, removed: &[EntryId]) {
        if let Some(search) = &self.search {
            for &id in removed {
                search.delete(id);
            }
        }
    }

    fn writing(&self) -> std::sync::MutexGuard<'_, Option<Writing>> {
        self.writing.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Writes `batch` to `store`, timed.
fn write(store: &dyn Store, batch: &Batch) -> Result<(), Error> {
    let started = Instant::now();
    let result = store.commit(batch);
    tracing::debug!(
        entries = batch.entries.len(),
        removed = batch.removed.len(),
        seconds = started.elapsed().as_secs_f64(),
        "index committed"
    );
    result
}

/// Makes what was added to and deleted from the search index visible to searches, timed.
fn commit_search(search: &dyn SearchIndex) {
    let started = Instant::now();
    search.commit();
    tracing::debug!(seconds = started.elapsed().as_secs_f64(), "search index committed");
}

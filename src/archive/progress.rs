//! Progress of indexing, readable while it runs, and what `ready` promises. A load balancer sends
//! users to a server that says it is ready, so `ready` is only said when it holds: on the server
//! that indexes the given paths (a data folder's, or the replica that held the indexer lock from
//! its start), once every path is indexed; on a replica that follows another's indexing, once it
//! has loaded what the shared database held when it started. [`Readiness`] says which.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// What `ready` promises on this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Every given path is indexed.
    Indexed,
    /// What the shared database held when this replica started is loaded (another replica
    /// indexes; what it commits arrives within a second).
    Loaded,
}

impl Readiness {
    /// As `/api/status` says it (`ready_means`).
    pub fn name(self) -> &'static str {
        match self {
            Readiness::Indexed => "indexed",
            Readiness::Loaded => "loaded",
        }
    }
}

/// Progress of indexing, readable while it runs.
#[derive(Debug, Default)]
pub struct Progress {
    /// True once what [`Progress::readiness`] names holds.
    pub ready: AtomicBool,
    /// True while this server reads the given paths (a start-up run or a re-scan).
    pub running: AtomicBool,
    /// Source files finished in the current run.
    pub indexed: AtomicUsize,
    /// Source files found in the current run.
    pub total: AtomicUsize,
    /// Messages parsed for the index since start (unchanged sources are not parsed again).
    pub parsed: AtomicUsize,
    /// Messages that could not be read or parsed.
    pub failed: AtomicUsize,
    /// 1 while `ready` means [`Readiness::Loaded`].
    follows: AtomicU8,
}

impl Progress {
    /// What `ready` promises now.
    pub fn readiness(&self) -> Readiness {
        if self.follows.load(Ordering::Acquire) == 1 {
            Readiness::Loaded
        } else {
            Readiness::Indexed
        }
    }

    /// Ready, with `what` holding. A replica that follows stays ready when it takes over
    /// indexing: it serves what the database holds meanwhile.
    pub(super) fn set_ready(&self, what: Readiness) {
        self.follows.store(u8::from(what == Readiness::Loaded), Ordering::Release);
        self.ready.store(true, Ordering::Release);
    }
}

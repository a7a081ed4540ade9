//! Which backend keeps the archive, asked in one place: [`Archive::backend`] answers its name,
//! whether other replicas share it, and whether it is within reach, for `/api/status`, the guard
//! that answers 503 while a shared database is away, the replicas' loop and the view. The indexer
//! lock and the change feed, which only a shared database has, are here too.

use super::Archive;
use crate::error::Error;

/// What keeps an archive, as those who serve it need to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    /// `embedded` (redb and tantivy in the data folder) or `postgresql` (a shared database).
    pub name: &'static str,
    /// Whether other replicas share it: they write to it too, and reading it is a round trip.
    pub shared: bool,
    /// Whether it answered lately (always, for the data folder).
    pub reachable: bool,
    /// How many queries failed for want of it since start: a request during which this grew met
    /// a database that went away, whatever it made of its failed reads.
    pub failures: u64,
}

impl Archive {
    /// Which backend keeps this archive, and how it is now.
    pub fn backend(&self) -> Backend {
        match &self.database {
            Some(db) => {
                Backend { name: "postgresql", shared: true, reachable: db.is_reachable(), failures: db.failures() }
            }
            None => Backend { name: "embedded", shared: false, reachable: true, failures: 0 },
        }
    }

    /// The shared database, when there is one (sign-ins are kept there too, so that every
    /// replica knows them).
    pub fn database(&self) -> Option<&std::sync::Arc<crate::postgres::Database>> {
        self.database.as_ref()
    }

    /// Whether this server indexes the given paths: always with a data folder; with a shared
    /// database, while it holds the indexer lock (asking takes the lock when it is free).
    pub fn hold_indexer_lock(&self) -> bool {
        self.indexer_lock.as_ref().is_none_or(|l| l.hold())
    }

    /// Whether this server indexed the paths when last asked ([`Archive::hold_indexer_lock`]),
    /// without asking the database.
    pub fn is_indexer(&self) -> bool {
        self.indexer_lock.as_ref().is_none_or(|l| l.is_held())
    }

    /// Takes in what other replicas committed since the last call (a shared database; nothing to
    /// do otherwise). Parsed messages stay cached: an id's bytes never change.
    pub fn catch_up(&self) -> Result<bool, Error> {
        if self.database.is_none() {
            return Ok(false);
        }
        // Read without holding the index, which pages need meanwhile.
        let from = self.index().feed_position();
        let Some(changes) = self.store.changes_since(from)? else { return Ok(false) };
        self.index_mut().apply_changes(from, changes)
    }
}

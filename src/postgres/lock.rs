//! Which replica indexes: the one holding a session-level advisory lock on a connection of its
//! own. PostgreSQL lets go of the lock the moment that connection ends, so a replica that dies
//! (or is cut off) hands the role over without anyone waiting for a timeout; the next replica to
//! ask gets it.

use std::sync::{Arc, Mutex};

use tokio_postgres::Client;

use super::{Database, INDEXER_LOCK};

pub struct IndexerLock {
    db: Arc<Database>,
    /// The lock's own connection, and whether the lock is held on it.
    conn: Mutex<Option<(Arc<Client>, bool)>>,
}

impl IndexerLock {
    pub fn new(db: Arc<Database>) -> IndexerLock {
        IndexerLock { db, conn: Mutex::new(None) }
    }

    /// Whether this replica indexes: true while the lock is held on a live connection; otherwise
    /// tries to take it (connecting first if need be). Cheap enough to ask every second.
    pub fn hold(&self) -> bool {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let current = guard.as_ref().map(|(c, held)| (Arc::clone(c), *held));
        let config = self.db.config().clone();
        let outcome = self.db.block_on(async move {
            let client = match current {
                Some((c, held)) if !c.is_closed() => {
                    // Still there? A dead peer is found by asking, not by waiting.
                    if c.simple_query("SELECT 1").await.is_ok() {
                        if held {
                            return Some((c, true));
                        }
                        c
                    } else {
                        return None;
                    }
                }
                _ => Arc::new(super::connect_own(&config).await?),
            };
            let got = client.query_one("SELECT pg_try_advisory_lock($1)", &[&INDEXER_LOCK]).await.ok()?;
            let held: bool = got.get(0);
            Some((client, held))
        });
        *guard = outcome.flatten();
        guard.as_ref().is_some_and(|(_, held)| *held)
    }

    /// Whether the lock was held at the last [`IndexerLock::hold`] and its connection is still open.
    pub fn is_held(&self) -> bool {
        let guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().is_some_and(|(c, held)| *held && !c.is_closed())
    }

    /// Lets go of the lock (when the server stops, so another replica takes over at once).
    pub fn release(&self) {
        let taken = self.conn.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((client, true)) = taken {
            self.db.block_on(async move {
                let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&INDEXER_LOCK]).await;
            });
        }
    }
}

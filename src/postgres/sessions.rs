//! The `sessions` table: sign-ins every replica knows (see [`crate::auth::session`], which decides
//! what a session is; this file only keeps the rows). Rows are found by the SHA-256 of a session
//! id, so the table opens no session by itself.

use std::sync::Arc;

use super::{failed, Database};
use crate::error::Error;

/// A session's row: user name, credential tag, expiry, and more data.
pub(super) type SessionRow = (String, String, i64, Option<String>);

pub struct PgSessions {
    db: Arc<Database>,
}

impl PgSessions {
    pub fn new(db: Arc<Database>) -> PgSessions {
        PgSessions { db }
    }

    pub fn put(&self, digest: &[u8; 32], name: &str, tag: &str, expires: i64, data: Option<&str>) -> Result<(), Error> {
        let (digest, name, tag, data) = (digest.to_vec(), name.to_string(), tag.to_string(), data.map(str::to_string));
        self.db.run(move |c| async move {
            c.execute(
                "INSERT INTO sessions (id, name, tag, expires, data) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (id) DO UPDATE SET name = $2, tag = $3, expires = $4, data = $5",
                &[&digest, &name, &tag, &expires, &data],
            )
            .await
            .map_err(failed("sessions: put"))?;
            Ok(())
        })
    }

    pub fn get(&self, digest: &[u8; 32]) -> Result<Option<SessionRow>, Error> {
        let digest = digest.to_vec();
        self.db.run(move |c| async move {
            let row = c
                .query_opt("SELECT name, tag, expires, data FROM sessions WHERE id = $1", &[&digest])
                .await
                .map_err(failed("sessions: get"))?;
            Ok(row.map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))))
        })
    }

    pub fn delete(&self, digest: &[u8; 32]) -> Result<(), Error> {
        let digest = digest.to_vec();
        self.db.run(move |c| async move {
            c.execute("DELETE FROM sessions WHERE id = $1", &[&digest]).await.map_err(failed("sessions: delete"))?;
            Ok(())
        })
    }

    /// Removes the sessions over before `now`.
    pub fn purge(&self, now: i64) -> Result<(), Error> {
        self.db.run(move |c| async move {
            c.execute("DELETE FROM sessions WHERE expires <= $1", &[&now]).await.map_err(failed("sessions: purge"))?;
            Ok(())
        })
    }
}

//! Sign-ins that last: a session is a random 256-bit id (from the operating system, 43 characters
//! of base64url in the cookie) standing for a user until it expires or is ended. Only a SHA-256 of
//! the id is kept, so what the server holds (or a dump of the database) opens no session, and a
//! lookup compares digests, not the secret itself.
//!
//! On the embedded backend sessions live in memory (a restart signs everyone out). On PostgreSQL
//! they are a table ([`crate::postgres::PgSessions`]), so every replica knows every session; each
//! replica keeps what it looked up for a few seconds ([`SHARED_CACHE`]), so a page costs no round
//! trip to the database, and a session ended on another replica ends here within that time (at
//! once on the replica that ended it).
//!
//! The same store keeps an OpenID Connect sign-in under way (its PKCE verifier and nonce, under
//! the `state` the provider sends back), for ten minutes, so that the provider may send the
//! browser back to any replica.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::limits::MAX_SESSIONS;
use crate::postgres::{Database, PgSessions};

/// How long a replica keeps a session it looked up in the shared database.
pub const SHARED_CACHE: Duration = Duration::from_secs(5);

/// What a session stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The user's name as signed in (a users file name, or the name a provider gave).
    pub user: String,
    /// The user's credential when they signed in (see [`super::users::User::credential_tag`]);
    /// empty for a sign-in that used no password of the users file.
    pub tag: String,
    /// Seconds since the epoch after which it is over.
    pub expires: i64,
    /// What else it keeps (an OpenID Connect sign-in under way: its verifier and nonce).
    pub data: Option<String>,
}

/// A session's id as kept: the SHA-256 of the id given out.
type Digest32 = [u8; 32];

enum Backend {
    Memory(Mutex<HashMap<Digest32, Session>>),
    Shared { table: PgSessions, cache: quick_cache::sync::Cache<Digest32, (Instant, Option<Session>)> },
}

/// Every session, kept in memory or in the shared database.
pub struct Sessions {
    backend: Backend,
}

impl Sessions {
    /// Sessions in memory, or with `database` in its `sessions` table.
    pub fn new(database: Option<Arc<Database>>) -> Sessions {
        let backend = match database {
            None => Backend::Memory(Mutex::new(HashMap::new())),
            Some(db) => Backend::Shared { table: PgSessions::new(db), cache: quick_cache::sync::Cache::new(4096) },
        };
        Sessions { backend }
    }

    /// Starts a session and gives its id (the cookie's value).
    pub fn create(&self, session: Session) -> Result<String, Error> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| Error::internal("random session id", std::io::Error::other(e.to_string())))?;
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
        let digest = digest_of(&secret);
        match &self.backend {
            Backend::Memory(map) => {
                let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
                if map.len() >= MAX_SESSIONS {
                    let now = super::now();
                    map.retain(|_, s| s.expires > now);
                    if map.len() >= MAX_SESSIONS {
                        // Still full of live sessions: the one that ends soonest goes.
                        if let Some(first) = map.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| *k) {
                            map.remove(&first);
                        }
                    }
                }
                map.insert(digest, session);
            }
            Backend::Shared { table, cache } => {
                table.put(&digest, &session.user, &session.tag, session.expires, session.data.as_deref())?;
                cache.insert(digest, (Instant::now(), Some(session)));
            }
        }
        Ok(id)
    }

    /// The live session with this id; `None` for an unknown, ended or expired one, or a value that
    /// is no id at all.
    pub fn get(&self, id: &str) -> Result<Option<Session>, Error> {
        let Some(digest) = parse_id(id) else { return Ok(None) };
        let now = super::now();
        let found = match &self.backend {
            Backend::Memory(map) => map.lock().unwrap_or_else(|e| e.into_inner()).get(&digest).cloned(),
            Backend::Shared { table, cache } => match cache.get(&digest) {
                Some((at, s)) if at.elapsed() < SHARED_CACHE => s,
                _ => {
                    let s = table.get(&digest)?.map(|(user, tag, expires, data)| Session { user, tag, expires, data });
                    cache.insert(digest, (Instant::now(), s.clone()));
                    s
                }
            },
        };
        Ok(found.filter(|s| s.expires > now))
    }

    /// Ends a session (signing out, or a one-time OpenID Connect state used); an unknown id is
    /// no error.
    pub fn end(&self, id: &str) -> Result<(), Error> {
        let Some(digest) = parse_id(id) else { return Ok(()) };
        match &self.backend {
            Backend::Memory(map) => {
                map.lock().unwrap_or_else(|e| e.into_inner()).remove(&digest);
            }
            Backend::Shared { table, cache } => {
                cache.insert(digest, (Instant::now(), None));
                table.delete(&digest)?;
            }
        }
        Ok(())
    }

    /// Forgets expired sessions (in the database too).
    pub fn purge(&self) {
        let now = super::now();
        match &self.backend {
            Backend::Memory(map) => map.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, s| s.expires > now),
            Backend::Shared { table, .. } => {
                if let Err(e) = table.purge(now) {
                    tracing::debug!(error = %e, "expired sessions not purged");
                }
            }
        }
    }
}

/// The digest of a well-formed id (43 characters of base64url, 32 bytes), else `None`.
fn parse_id(id: &str) -> Option<Digest32> {
    if id.len() != 43 {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(id).ok()?;
    let secret: [u8; 32] = bytes.try_into().ok()?;
    Some(digest_of(&secret))
}

fn digest_of(secret: &[u8; 32]) -> Digest32 {
    Sha256::digest(secret).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(user: &str, expires: i64) -> Session {
        Session { user: user.into(), tag: "t".into(), expires, data: None }
    }

    #[test]
    fn sessions_are_random_live_until_ended_or_expired() {
        let sessions = Sessions::new(None);
        let later = super::super::now() + 3600;
        let a = sessions.create(session("ann", later)).unwrap();
        let b = sessions.create(session("ann", later)).unwrap();
        assert_ne!(a, b, "a new id every time");
        assert_eq!(a.len(), 43);
        assert_eq!(sessions.get(&a).unwrap().map(|s| s.user), Some("ann".into()));
        sessions.end(&a).unwrap();
        assert!(sessions.get(&a).unwrap().is_none() && sessions.get(&b).unwrap().is_some());
        let old = sessions.create(session("bob", super::super::now() - 1)).unwrap();
        assert!(sessions.get(&old).unwrap().is_none(), "expired");
        for junk in ["", "x", &"A".repeat(43), &"!".repeat(43), &b[..42]] {
            assert!(sessions.get(junk).unwrap().is_none(), "{junk}");
        }
    }
}

//! Accounts, free of HTTP: who may sign in and what each may read. [`users`] reads the users file
//! (and reads it again when it changes), [`password`] checks argon2id and bcrypt hashes,
//! [`session`] keeps sign-ins (in memory, or in PostgreSQL for replicas), [`limit`] counts failed
//! sign-ins per address and per name, [`oidc`] signs people in with an OpenID Connect provider,
//! and [`audit`] writes the audit log; [`add`] is `mailshelf user add`. [`Accounts`] puts them together for the web layer, which
//! reads credentials from requests (`web::gate`) and shows the sign-in page (`web::signin`).
//!
//! What a reader may read is an [`Access`]; the view takes it with every call that reads (see
//! [`crate::view::View::scoped`]), so no handler decides it. Without `--users` and without single
//! sign-on there are no accounts at all: the server is the single-person one it always was.

pub mod add;
pub mod audit;
pub mod limit;
pub mod oidc;
pub mod password;
pub mod session;
pub mod users;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::config::AccountsConfig;
use crate::error::Error;
use crate::index::Access;
use crate::postgres::Database;
use session::{Session, Sessions};
use users::{User, UsersFile};

/// Someone reading: their name, what they may read, and whether they may upload and delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reader {
    /// `-` on a server without accounts.
    pub name: String,
    pub access: Access,
    pub admin: bool,
}

impl Reader {
    /// The one reader of a server without accounts: everything, uploads and deletes included.
    pub fn owner() -> Reader {
        Reader { name: "-".into(), access: Access::everything(), admin: true }
    }

    /// Whether this reader may upload: an admin who may read what they upload, which is filed
    /// under [`crate::index::folders::UPLOADS`] (an admin limited to folders without it would
    /// get an upload they could not open).
    pub fn may_upload(&self) -> bool {
        self.admin && self.access.covers(crate::index::folders::UPLOADS)
    }
}

/// What a session's tag says when the sign-in used no password of the users file (a provider
/// vouched for the name): such a session lasts while the name is known (or default folders are
/// given), whatever the users file says of passwords.
const VOUCHED: &str = "vouched";

/// Users, sessions and what the command line says of signing in.
pub struct Accounts {
    pub users: Arc<UsersFile>,
    pub sessions: Sessions,
    limiter: limit::Limiter,
    pub oidc: Option<oidc::Oidc>,
    pub settings: AccountsConfig,
    /// What a name a proxy or a provider vouches for, but the users file does not know, may read.
    default_access: Option<Access>,
    /// Password checks running at once are bounded (each takes memory and a core).
    checks: tokio::sync::Semaphore,
    /// Password hashes checked since start: the sign-in tests count them.
    checked: AtomicU64,
    /// HTTP Basic credentials that signed in lately, by a digest of name and password: the user's
    /// name, their credential tag then, and when.
    basic: quick_cache::sync::Cache<[u8; 32], (String, String, Instant)>,
}

/// How long HTTP Basic credentials that signed in are taken without a hash check.
const BASIC_REMEMBERED: std::time::Duration = std::time::Duration::from_secs(60);

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts").field("users", &self.users.users().len()).finish()
    }
}

impl Accounts {
    /// The accounts the configuration asks for; `None` when it asks for none (no `--users`, no
    /// single sign-on). An unusable users file is an error.
    pub fn open(settings: &AccountsConfig, database: Option<Arc<Database>>) -> Result<Option<Accounts>, Error> {
        if !settings.enabled() {
            return Ok(None);
        }
        let users = match &settings.users {
            Some(path) => UsersFile::open(path)?,
            None => UsersFile::none(),
        };
        let oidc = settings.oidc.clone().map(oidc::Oidc::new).transpose()?;
        let default_access = settings.default_folders.as_ref().map(|folders| {
            if folders.iter().any(|f| f.trim() == "*") {
                Access::everything()
            } else {
                Access::folders(folders)
            }
        });
        Ok(Some(Accounts {
            users: Arc::new(users),
            sessions: Sessions::new(database),
            limiter: limit::Limiter::default(),
            oidc,
            settings: settings.clone(),
            default_access,
            checks: tokio::sync::Semaphore::new(crate::limits::MAX_PASSWORD_CHECKS),
            checked: AtomicU64::new(0),
            basic: quick_cache::sync::Cache::new(1024),
        }))
    }

    /// Starts what keeps the accounts current: the users file read again when it changes, and
    /// expired sessions forgotten.
    pub fn watch(self: &Arc<Self>) {
        self.users.watch();
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(600));
            loop {
                tick.tick().await;
                let Some(accounts) = weak.upgrade() else { break };
                let _ = tokio::task::spawn_blocking(move || accounts.sessions.purge()).await;
            }
        });
    }

    /// How many password hashes were checked since start.
    pub fn hashes_checked(&self) -> u64 {
        self.checked.load(Ordering::Acquire)
    }

    /// The user a name and password sign in, checked off the async threads. A name that is not
    /// in the users file costs one hash check as a real one does (against a dummy hash); a
    /// password over the length limit costs none, whatever the name.
    pub async fn check_password(&self, name: &str, password: &str) -> Option<Arc<User>> {
        if password.len() > password::MAX_PASSWORD || name.len() > crate::limits::MAX_USER_NAME {
            return None;
        }
        let _turn = self.checks.acquire().await.ok()?;
        let users = self.users.users();
        let (name, password) = (name.to_string(), password.to_string());
        self.checked.fetch_add(1, Ordering::AcqRel);
        tokio::task::spawn_blocking(move || {
            let (user, hash) = users.hash_for(&name);
            let right = hash.verify(password.as_bytes());
            user.filter(|_| right)
        })
        .await
        .ok()
        .flatten()
    }

    /// The reader of HTTP Basic credentials that signed in within the last minute, while the user
    /// is in the users file with the same password.
    pub fn remembered_basic(&self, name: &str, password: &str) -> Option<Reader> {
        let (user_name, tag, at) = self.basic.get(&basic_digest(name, password))?;
        if at.elapsed() >= BASIC_REMEMBERED {
            return None;
        }
        let user = self.users.users().get(&user_name).filter(|u| u.credential_tag() == tag)?;
        Some(Self::reader_of(&user))
    }

    /// Remembers HTTP Basic credentials that signed in `user`.
    pub fn remember_basic(&self, name: &str, password: &str, user: &User) {
        self.basic.insert(basic_digest(name, password), (user.name.clone(), user.credential_tag(), Instant::now()));
    }

    /// Whether a failed sign-in from `address` or for `name` may be tried now; else how long to
    /// wait.
    pub fn may_try(&self, address: Option<IpAddr>, name: &str) -> Result<(), std::time::Duration> {
        self.limiter.check(address, name, Instant::now())
    }

    pub fn failed(&self, address: Option<IpAddr>, name: &str) {
        self.limiter.failed(address, name, Instant::now());
    }

    /// A sign-in from `address` as `name` succeeded.
    pub fn signed_in(&self, address: Option<IpAddr>, name: &str) {
        self.limiter.succeeded(address, name, Instant::now());
    }

    /// The reader a name of the users file is.
    pub fn reader_of(user: &User) -> Reader {
        Reader { name: user.name.clone(), access: user.access.clone(), admin: user.admin }
    }

    /// The reader a name vouched for by a proxy or a provider is: the users file's, else one with
    /// the default folders (`--default-folders`), else nobody.
    pub fn vouched(&self, name: &str) -> Option<Reader> {
        let name = name.trim();
        if name.is_empty() || name.len() > crate::limits::MAX_USER_NAME || name.chars().any(char::is_control) {
            return None;
        }
        match self.users.users().get(name) {
            Some(user) => Some(Self::reader_of(&user)),
            None => self.default_access.clone().map(|access| Reader { name: name.to_string(), access, admin: false }),
        }
    }

    /// Starts a session for a user who signed in with their password, or for a name a provider
    /// vouched for (`user: None`); the id is the cookie's value.
    pub fn start_session(&self, name: &str, user: Option<&User>) -> Result<String, Error> {
        let tag = user.map_or_else(|| VOUCHED.to_string(), User::credential_tag);
        let expires = now() + i64::try_from(self.settings.session_hours.saturating_mul(3600)).unwrap_or(i64::MAX / 2);
        self.sessions.create(Session { user: name.to_string(), tag, expires, data: None })
    }

    /// The reader of a session, if it is still good: a password sign-in while the user is in the
    /// users file with the same password, a vouched one while the name is still known.
    pub fn reader_of_session(&self, id: &str) -> Result<Option<Reader>, Error> {
        let Some(session) = self.sessions.get(id)? else { return Ok(None) };
        if session.data.is_some() {
            // A sign-in still at the provider is no session.
            return Ok(None);
        }
        if session.tag == VOUCHED {
            return Ok(self.vouched(&session.user));
        }
        Ok(self
            .users
            .users()
            .get(&session.user)
            .filter(|u| u.credential_tag() == session.tag)
            .map(|u| Self::reader_of(&u)))
    }

    /// Whether requests from `peer` may name their user in the trusted header.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        self.settings.trusted_proxies.iter().any(|net| net.contains(&peer))
    }
}

/// A keyed digest of HTTP Basic credentials, under a key drawn at start: what is remembered of
/// them opens nothing after a restart, and cannot be matched against guesses offline.
fn basic_digest(name: &str, password: &str) -> [u8; 32] {
    static KEY: std::sync::LazyLock<[u8; 32]> = std::sync::LazyLock::new(|| {
        let mut key = [0u8; 32];
        let _ = getrandom::fill(&mut key);
        key
    });
    let mut h = blake3::Hasher::new_keyed(&KEY);
    h.update(name.trim().to_lowercase().as_bytes());
    h.update(&[0]);
    h.update(password.as_bytes());
    *h.finalize().as_bytes()
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    crate::view::now()
}

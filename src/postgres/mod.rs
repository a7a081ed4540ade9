//! PostgreSQL, for several replicas sharing one archive: the only module that knows
//! tokio-postgres. [`Database`] is the connection pool and the schema (the migrations in
//! `src/postgres/migrations/`, applied in order at start); [`PgStore`] backs the index's
//! [`crate::store::Store`], [`PgSearch`] the full-text [`crate::search::SearchIndex`] with
//! PostgreSQL's own text search, [`IndexerLock`] elects the one replica that indexes, and
//! [`PgSessions`] keeps sign-ins every replica knows.
//!
//! The rest of mailshelf calls its store from plain threads and expects answers, as it does of the
//! embedded one; the driver is asynchronous. So the pool lives on a small runtime of its own, and
//! [`Database::run`] hands it a query and waits for the answer. The caller may be anywhere (an
//! indexing thread, the blocking pool, a request's task) without nesting runtimes.

mod lock;
mod search;
mod sessions;
mod store;
#[cfg(test)]
pub(crate) mod testing;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use crate::error::Error;

pub use lock::IndexerLock;
pub use search::PgSearch;
pub use sessions::PgSessions;
pub use store::PgStore;

/// The schema, one step a file, applied in order once each (see `mailshelf_migrations`).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_index.sql")),
    (2, include_str!("migrations/0002_search.sql")),
    (3, include_str!("migrations/0003_search_version.sql")),
    (4, include_str!("migrations/0004_search_attachments.sql")),
    (5, include_str!("migrations/0005_sessions.sql")),
    (6, include_str!("migrations/0006_search_words.sql")),
    (7, include_str!("migrations/0007_search_unspaced_scripts.sql")),
    (8, include_str!("migrations/0008_search_passages.sql")),
];

/// Advisory lock keys (one namespace: the first 32 bits spell "mlsh").
const MIGRATION_LOCK: i64 = 0x6d6c_7368_0000_0001;
/// Held by the replica that indexes the mounted paths, for as long as it does.
pub(crate) const INDEXER_LOCK: i64 = 0x6d6c_7368_0000_0002;
/// Held by every writing transaction until it commits, so that the change feed's numbers follow
/// commit order (a reader that has seen number n has seen every change before it).
pub(crate) const WRITE_LOCK: i64 = 0x6d6c_7368_0000_0003;

/// How long a query may wait for a connection, or a connection to be made, before the database
/// counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest any one statement may run: a search of every message or the list of a million
/// entries take seconds (the vacuum after a large run lifts it for itself).
const STATEMENT_TIMEOUT_MS: u32 = 120_000;

/// The size of the pieces a copy's rows are handed to the reading thread in.
const COPY_PIECE: usize = 256 * 1024;

/// How long the health check waits for an answer before it counts the database as away: long
/// enough for a loaded machine, short enough that replicas answer 503 soon after it went.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the health check asks the database whether it is there.
const HEALTH_EVERY: Duration = Duration::from_secs(1);

/// The pool, on its own runtime, and what is known of the database's health.
pub struct Database {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    pool: Pool,
    config: tokio_postgres::Config,
    /// Whether the health check reached the database last time it asked (it alone decides: a
    /// query that failed for want of a connection on a loaded machine says nothing about the
    /// database).
    reachable: Arc<AtomicBool>,
    /// How many queries failed for want of the database: a request during which this moved is
    /// answered 503, whatever its handler made of the failure.
    failures: AtomicU64,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("reachable", &self.is_reachable()).finish()
    }
}

impl Database {
    /// Connects to the database at `url` (a `postgres://` URL or a `key=value` string) and brings
    /// its schema up to date. A database that cannot be reached at start is an error: the server
    /// would have nothing to serve.
    pub fn connect(url: &str) -> Result<Arc<Database>, Error> {
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| Error::BadSetting(format!("--database-url: {e}")))?;
        if config.get_application_name().is_none() {
            config.application_name("mailshelf");
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        // A database that went silent (a cut network) is noticed in seconds, not hours; a query
        // that runs away ends instead of holding a connection and the thread waiting on it.
        config.keepalives_idle(Duration::from_secs(10));
        // And the planner told what mailshelf's queries are: short ones on a warm cache, where JIT
        // compilation costs more than it saves and a bitmap of a broad search's matches (which
        // needs the memory to stay exact) beats reading the whole table (at a million messages,
        // a common word was counted in 0.35 s instead of 0.95 s). Nor does a query start
        // parallel workers: many small queries at once are the load, and the two workers started
        // for a page of a search cost 30 ms of a 3 ms walk. Settings in the URL's `options` come
        // after these, and win.
        let options = format!(
            "-c statement_timeout={STATEMENT_TIMEOUT_MS} -c jit=off -c work_mem=32MB -c random_page_cost=1.1 \
             -c max_parallel_workers_per_gather=0 {}",
            config.get_options().unwrap_or("")
        );
        config.options(options.trim());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("postgres")
            .enable_all()
            .build()?;
        let manager =
            Manager::from_config(config.clone(), NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = {
            // The pool's timers need the runtime it lives on.
            let _inside = runtime.enter();
            Pool::builder(manager)
                .max_size(16)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(CONNECT_TIMEOUT))
                .create_timeout(Some(CONNECT_TIMEOUT))
                .recycle_timeout(Some(CONNECT_TIMEOUT))
                .build()
                .map_err(|e| Error::BadSetting(format!("--database-url: {e}")))?
        };
        let db = Database {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            pool,
            config,
            reachable: Arc::new(AtomicBool::new(true)),
            failures: AtomicU64::new(0),
        };
        db.run(|mut c| async move { migrate(&mut c).await }).map_err(|e| match e {
            Error::StoreUnavailable => Error::BadSetting("--database-url: the database cannot be reached".into()),
            e => e,
        })?;
        let db = Arc::new(db);
        db.watch_health();
        Ok(db)
    }

    /// Runs `f` with a pooled connection on the database's runtime and waits for its answer. A
    /// lost connection or an unreachable database answers [`Error::StoreUnavailable`], and is
    /// counted in [`Database::failures`].
    pub fn run<T, F, Fut>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let pool = self.pool.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let result = match pool.get().await {
                Ok(client) => f(client).await,
                Err(e) => {
                    tracing::debug!(error = %e, "no database connection");
                    Err(Error::StoreUnavailable)
                }
            };
            let _ = tx.send(result);
        });
        let result = rx.recv().unwrap_or(Err(Error::StoreUnavailable));
        if matches!(result, Err(Error::StoreUnavailable)) {
            self.failures.fetch_add(1, Ordering::AcqRel);
        }
        result
    }

    /// Runs a future on the database's runtime and waits for it (for what holds its own
    /// connection, like [`IndexerLock`]).
    fn block_on<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().ok()
    }

    /// Streams the rows of `COPY (query) TO STDOUT (FORMAT binary)` to `f` on the calling thread,
    /// a chunk at a time: a million rows never sit in memory at once.
    pub(crate) fn copy_rows(&self, query: &str, f: &mut RowFn<'_>) -> Result<(), Error> {
        use futures_util::StreamExt;
        let pool = self.pool.clone();
        let sql = format!("COPY ({query}) TO STDOUT (FORMAT binary)");
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<bytes::Bytes, Error>>(16);
        self.handle.spawn(async move {
            let client = match pool.get().await {
                Ok(c) => c,
                Err(_) => {
                    let _ = tx.send(Err(Error::StoreUnavailable));
                    return;
                }
            };
            let stream = match client.copy_out(sql.as_str()).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(failed("database: copy")(e)));
                    return;
                }
            };
            futures_util::pin_mut!(stream);
            // The server sends a message a row: gathered into larger pieces, so that a million
            // rows are not a million hand-overs between threads (3 s of a replica's start).
            let mut gathered = bytes::BytesMut::with_capacity(COPY_PIECE);
            let send = |piece: Result<bytes::Bytes, Error>| {
                // The reader is a plain thread: wait for it without holding up the runtime.
                tokio::task::block_in_place(|| tx.send(piece)).is_ok()
            };
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(bytes) => {
                        gathered.extend_from_slice(&bytes);
                        if gathered.len() >= COPY_PIECE && !send(Ok(gathered.split().freeze())) {
                            return;
                        }
                    }
                    Err(e) => {
                        send(Err(failed("database: copy")(e)));
                        return;
                    }
                }
            }
            if !gathered.is_empty() {
                send(Ok(gathered.freeze()));
            }
        });
        let mut rows = BinaryRows::new();
        for chunk in rx {
            match chunk {
                Ok(bytes) => rows.feed(&bytes, f)?,
                Err(e) => {
                    if matches!(e, Error::StoreUnavailable) {
                        self.failures.fetch_add(1, Ordering::AcqRel);
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Whether the last health check reached the database.
    pub fn is_reachable(&self) -> bool {
        self.reachable.load(Ordering::Acquire)
    }

    /// How many queries have failed for want of the database since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// Asks the database every second whether it is there, on a connection of its own (a pool
    /// whose connections are all busy is not a database that is away), so that replicas answer
    /// 503 while it is down and serve again as soon as it is back.
    fn watch_health(self: &Arc<Self>) {
        let config = self.config.clone();
        let reachable = Arc::clone(&self.reachable);
        let weak = Arc::downgrade(self);
        self.handle.spawn(async move {
            let mut conn: Option<tokio_postgres::Client> = None;
            let mut slow = 0;
            loop {
                tokio::time::sleep(HEALTH_EVERY).await;
                if weak.strong_count() == 0 {
                    break;
                }
                // A refusal or a lost connection says the database is away at once; an answer that
                // is late may be a machine too busy to answer in time, and counts only the second
                // time in a row (a replica answering 503 for a busy moment would be worse).
                let mut timed_out = false;
                if conn.as_ref().is_none_or(|c| c.is_closed()) {
                    conn = match tokio::time::timeout(HEALTH_TIMEOUT, connect_own(&config)).await {
                        Ok(client) => client,
                        Err(_) => {
                            timed_out = true;
                            None
                        }
                    };
                }
                let answered = match &conn {
                    Some(c) => match tokio::time::timeout(HEALTH_TIMEOUT, c.simple_query("SELECT 1")).await {
                        Ok(Ok(_)) => true,
                        Ok(Err(_)) => {
                            conn = None;
                            false
                        }
                        Err(_) => {
                            // Not asked again on this connection: one whose packets are lost (a
                            // cut network path) never answers, and a new one tells.
                            conn = None;
                            timed_out = true;
                            false
                        }
                    },
                    None => false,
                };
                slow = if timed_out { slow + 1 } else { 0 };
                if timed_out && slow < 2 {
                    // Nothing learnt yet: the state stays as it was.
                    continue;
                }
                let ok = answered;
                if reachable.swap(ok, Ordering::AcqRel) != ok {
                    if ok {
                        tracing::info!("the database is reachable again");
                    } else {
                        tracing::warn!("the database cannot be reached; answering 503 until it is back");
                    }
                }
            }
        });
    }

    /// The connection settings, for what needs a connection of its own.
    fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which an async caller may not do.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A connection of its own, outside the pool (the lock's, the health check's), driven on the
/// current runtime; `None` when the database refuses or cannot be reached.
async fn connect_own(config: &tokio_postgres::Config) -> Option<tokio_postgres::Client> {
    let (client, connection) = config.connect(NoTls).await.ok()?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Some(client)
}

/// What a driver error means here: the database gone (a replica waits for it) or a fault of ours.
pub(crate) fn failed(context: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |e| {
        let unavailable = match e.as_db_error() {
            // Connection exceptions, and a server shutting down or starting up.
            Some(db) => {
                let code = db.code().code();
                code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
            }
            None => e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()),
        };
        if unavailable {
            tracing::debug!(error = %e, context, "database unreachable");
            Error::StoreUnavailable
        } else {
            Error::internal(context, e)
        }
    }
}

/// Applies the migrations this database lacks, one transaction each, under a lock so that
/// replicas starting together apply each once.
async fn migrate(c: &mut Object) -> Result<(), Error> {
    let fail = failed("database: migrate");
    c.batch_execute(
        "CREATE TABLE IF NOT EXISTS mailshelf_migrations \
         (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await
    .map_err(&fail)?;
    c.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await.map_err(&fail)?;
    let result = async {
        let done: Vec<i32> = c
            .query("SELECT version FROM mailshelf_migrations", &[])
            .await
            .map_err(&fail)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for (version, sql) in MIGRATIONS {
            if done.contains(version) {
                continue;
            }
            tracing::info!(version, "applying a database migration");
            let tx = c.transaction().await.map_err(&fail)?;
            tx.batch_execute(sql).await.map_err(&fail)?;
            tx.execute("INSERT INTO mailshelf_migrations (version) VALUES ($1)", &[version]).await.map_err(&fail)?;
            tx.commit().await.map_err(&fail)?;
        }
        Ok(())
    }
    .await;
    let _ = c.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await;
    result
}

/// What is called with each row of a binary copy: its fields, `None` for NULL.
pub(crate) type RowFn<'a> = dyn FnMut(&[Option<&[u8]>]) + 'a;

/// Reads the rows of a `COPY ... TO STDOUT (FORMAT binary)`: calls `f` with each row's fields
/// (`None` for NULL). Returns false on a malformed stream.
pub(crate) struct BinaryRows {
    buf: Vec<u8>,
    started: bool,
}

impl BinaryRows {
    const SIGNATURE: &'static [u8] = b"PGCOPY\n\xff\r\n\0";

    pub(crate) fn new() -> BinaryRows {
        BinaryRows { buf: Vec::new(), started: false }
    }

    /// Takes the next chunk of the stream and calls `f` with every row it completes.
    pub(crate) fn feed(&mut self, chunk: &[u8], f: &mut RowFn<'_>) -> Result<(), Error> {
        let bad = || Error::internal("database: copy", std::io::Error::other("malformed binary copy"));
        self.buf.extend_from_slice(chunk);
        let mut at = 0;
        if !self.started {
            // Signature, flags, then an extension area of the length given.
            if self.buf.len() < 19 {
                return Ok(());
            }
            if !self.buf.starts_with(Self::SIGNATURE) {
                return Err(bad());
            }
            let ext = u32::from_be_bytes([self.buf[15], self.buf[16], self.buf[17], self.buf[18]]) as usize;
            if self.buf.len() < 19 + ext {
                return Ok(());
            }
            at = 19 + ext;
            self.started = true;
        }
        let mut fields: Vec<Option<&[u8]>> = Vec::new();
        while let Some(count) = self.buf.get(at..at + 2) {
            let count = i16::from_be_bytes([count[0], count[1]]);
            if count < 0 {
                // The trailer.
                at = self.buf.len();
                break;
            }
            let mut p = at + 2;
            let mut whole = true;
            let mut lengths = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let Some(len) = self.buf.get(p..p + 4) else {
                    whole = false;
                    break;
                };
                let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
                p += 4;
                if len < 0 {
                    lengths.push(None);
                } else {
                    let len = len as usize;
                    if self.buf.len() < p + len {
                        whole = false;
                        break;
                    }
                    lengths.push(Some((p, len)));
                    p += len;
                }
            }
            if !whole {
                break;
            }
            fields.clear();
            fields.extend(lengths.into_iter().map(|l| l.map(|(s, n)| &self.buf[s..s + n])));
            f(&fields);
            at = p;
        }
        self.buf.drain(..at);
        if self.buf.len() > 1 << 30 {
            return Err(bad());
        }
        Ok(())
    }
}

/// A big-endian i32 field.
pub(crate) fn int4(field: Option<&[u8]>) -> Option<i32> {
    let b: [u8; 4] = field?.try_into().ok()?;
    Some(i32::from_be_bytes(b))
}

/// An entry id as PostgreSQL stores it (`integer`): the same 32 bits.
pub(crate) fn pg_id(id: u32) -> i32 {
    id as i32
}

pub(crate) fn our_id(id: i32) -> u32 {
    id as u32
}

#[cfg(test)]
mod tests {
    use super::BinaryRows;

    #[test]
    fn binary_copy_rows_are_read_across_any_chunking() {
        let mut stream = BinaryRows::SIGNATURE.to_vec();
        stream.extend_from_slice(&0u32.to_be_bytes());
        stream.extend_from_slice(&0u32.to_be_bytes());
        for (id, data) in [(1i32, Some(&b"abc"[..])), (2, None), (3, Some(&b""[..]))] {
            stream.extend_from_slice(&2i16.to_be_bytes());
            stream.extend_from_slice(&4i32.to_be_bytes());
            stream.extend_from_slice(&id.to_be_bytes());
            match data {
                Some(d) => {
                    stream.extend_from_slice(&(d.len() as i32).to_be_bytes());
                    stream.extend_from_slice(d);
                }
                None => stream.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        stream.extend_from_slice(&(-1i16).to_be_bytes());
        for chunk in [1, 3, 7, stream.len()] {
            let mut rows = BinaryRows::new();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                rows.feed(piece, &mut |f| got.push((super::int4(f[0]), f[1].map(<[u8]>::to_vec)))).expect("reads");
            }
            assert_eq!(
                got,
                vec![(Some(1), Some(b"abc".to_vec())), (Some(2), None), (Some(3), Some(Vec::new()))],
                "chunks of {chunk}"
            );
        }
    }
}

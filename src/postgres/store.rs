//! The index in PostgreSQL: the same rows as the embedded store (see [`crate::store`]), one table
//! each, written by one transaction a batch. What several writers need besides is here too: entry
//! ids drawn from a sequence in blocks, folder ids from a serial column, label counts changed by
//! sums, and the change feed, in which every commit numbers the entries it touched.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{failed, int4, our_id, pg_id, Database, WRITE_LOCK};
use crate::error::Error;
use crate::store::entry::{ContentHash, Entry, EntryId, FolderId, Location};
use crate::store::{links_of, rank, Batch, Changes, Link, NameHasher, SourceState, Store};

/// Changes read from the feed at most at once (the rest come at the next call).
const FEED_PAGE: i64 = 20_000;

/// Feed rows kept behind the newest; a replica further behind than this reads the list again.
const FEED_KEPT: i64 = 2_000_000;

pub struct PgStore {
    db: Arc<Database>,
    names: NameHasher,
    /// The rest of the block of entry ids drawn last.
    ids: Mutex<Range<u32>>,
    /// The feed numbers of this store's own commits (first, last), which its index has already.
    own: Mutex<Vec<(i64, i64)>>,
    closed: AtomicBool,
}

fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, Error> {
    postcard::to_stdvec(v).map_err(|e| Error::internal("database: encode", e))
}

fn decode_entry(id: EntryId, bytes: &[u8]) -> Option<Entry> {
    match postcard::from_bytes::<Entry>(bytes) {
        Ok(e) => Some(e),
        Err(e) => {
            tracing::warn!(id, error = %e, "unreadable index entry skipped");
            None
        }
    }
}

/// A rank as PostgreSQL's signed `bigint`, in the same order.
fn pg_rank(r: u64) -> i64 {
    (r ^ (1 << 63)) as i64
}

impl PgStore {
    /// The store in `db`, whose schema [`Database::connect`] brought up to date.
    pub fn open(db: Arc<Database>) -> Result<PgStore, Error> {
        let drawn = {
            use std::hash::BuildHasher;
            let random = std::collections::hash_map::RandomState::new();
            (0..4u64).flat_map(|i| random.hash_one(i).to_le_bytes()).collect::<Vec<u8>>()
        };
        let key: Vec<u8> = db.run(move |c| async move {
            let fail = failed("database: open");
            c.execute("INSERT INTO meta (key, value) VALUES ('name_key', $1) ON CONFLICT DO NOTHING", &[&drawn])
                .await
                .map_err(&fail)?;
            let row = c.query_one("SELECT value FROM meta WHERE key = 'name_key'", &[]).await.map_err(&fail)?;
            Ok(row.get(0))
        })?;
        let key: [u8; 32] = key
            .try_into()
            .map_err(|_| Error::internal("database: open", std::io::Error::other("malformed name key")))?;
        Ok(PgStore {
            db,
            names: NameHasher::from_key(key),
            ids: Mutex::new(0..0),
            own: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        })
    }

    fn check_open(&self) -> Result<(), Error> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::internal("database", std::io::Error::other("closed: the server is stopping")));
        }
        Ok(())
    }

    /// One query's rows, mapped on the database's runtime.
    fn rows<T: Send + 'static>(
        &self,
        sql: &'static str,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
        map: impl Fn(&tokio_postgres::Row) -> T + Send + 'static,
    ) -> Result<Vec<T>, Error> {
        self.check_open()?;
        self.db.run(move |c| async move {
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|p| &**p as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
            let rows = c.query(sql, &refs).await.map_err(failed("database: read"))?;
            Ok(rows.iter().map(map).collect())
        })
    }
}

impl Store for PgStore {
    fn names(&self) -> &NameHasher {
        &self.names
    }

    fn entry(&self, id: EntryId) -> Result<Option<Entry>, Error> {
        let rows =
            self.rows("SELECT data FROM entries WHERE id = $1", vec![Box::new(pg_id(id))], |r| r.get::<_, Vec<u8>>(0))?;
        Ok(rows.first().and_then(|b| decode_entry(id, b)))
    }

    fn entries(&self, ids: &[EntryId]) -> Result<Vec<(EntryId, Entry)>, Error> {
        let wanted: Vec<i32> = ids.iter().map(|&id| pg_id(id)).collect();
        let rows = self.rows("SELECT id, data FROM entries WHERE id = ANY($1)", vec![Box::new(wanted)], |r| {
            (our_id(r.get(0)), r.get::<_, Vec<u8>>(1))
        })?;
        Ok(rows.into_iter().filter_map(|(id, b)| Some((id, decode_entry(id, &b)?))).collect())
    }

    fn linked(&self, link: Link, hash: u64) -> Result<Vec<EntryId>, Error> {
        let limit = crate::limits::MAX_SHARED_NAME as i64;
        self.rows(
            "SELECT id FROM links WHERE kind = $1 AND hash = $2 ORDER BY id LIMIT $3",
            vec![Box::new(link as u8 as i16), Box::new(hash as i64), Box::new(limit)],
            |r| our_id(r.get(0)),
        )
    }

    fn by_hash(&self, hash: &ContentHash) -> Result<Option<EntryId>, Error> {
        let rows =
            self.rows("SELECT id FROM hashes WHERE hash = $1", vec![Box::new(hash.0.to_vec())], |r| our_id(r.get(0)))?;
        Ok(rows.first().copied())
    }

    fn each_listed(&self, f: &mut dyn FnMut(EntryId, FolderId)) -> Result<(), Error> {
        self.check_open()?;
        self.db.copy_rows("SELECT id, folder FROM listed ORDER BY rank, id", &mut |row| {
            if let (Some(id), Some(folder)) = (int4(row[0]), int4(row[1])) {
                f(our_id(id), folder as FolderId);
            }
        })
    }

    fn each_entry(&self, f: &mut dyn FnMut(EntryId, Entry)) -> Result<(), Error> {
        self.check_open()?;
        self.db.copy_rows("SELECT id, data FROM entries ORDER BY id", &mut |row| {
            if let (Some(id), Some(data)) = (int4(row[0]), row[1]) {
                let id = our_id(id);
                if let Some(e) = decode_entry(id, data) {
                    f(id, e);
                }
            }
        })
    }

    fn next_id(&self) -> Result<EntryId, Error> {
        let rows = self.rows("SELECT coalesce(max(id) + 1, 0) FROM entries", Vec::new(), |r| our_id(r.get(0)))?;
        Ok(rows.first().copied().unwrap_or(0))
    }

    fn new_id(&self) -> Result<EntryId, Error> {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = ids.next() {
            return Ok(id);
        }
        let start: i64 = self
            .rows("SELECT nextval('entry_ids')", Vec::new(), |r| r.get(0))?
            .first()
            .copied()
            .ok_or_else(|| Error::internal("database: ids", std::io::Error::other("no id drawn")))?;
        let start = u32::try_from(start)
            .map_err(|_| Error::internal("database: ids", std::io::Error::other("no entry ids left")))?;
        *ids = start..start.saturating_add(256);
        ids.next().ok_or_else(|| Error::internal("database: ids", std::io::Error::other("no entry ids left")))
    }

    fn folder_id(&self, path: &str) -> Result<Option<FolderId>, Error> {
        // Inserted at once, outside any batch: a folder row without messages is harmless, and
        // every replica must get the same id for the same path.
        let rows = self.rows(
            "INSERT INTO folders (path) VALUES ($1) ON CONFLICT (path) DO UPDATE SET path = EXCLUDED.path RETURNING id",
            vec![Box::new(path.to_string())],
            |r| r.get::<_, i32>(0) as FolderId,
        )?;
        Ok(rows.first().copied())
    }

    fn change_seq(&self) -> Result<u64, Error> {
        // The newest committed change (a sequence's own value may belong to a commit under way).
        let rows = self.rows("SELECT coalesce(max(seq), 0) FROM changes", Vec::new(), |r| r.get::<_, i64>(0))?;
        Ok(rows.first().copied().unwrap_or(0) as u64)
    }

    fn changes_since(&self, after: u64) -> Result<Option<Changes>, Error> {
        self.check_open()?;
        let mut after = after as i64;
        {
            // Our own commits right after `after` need not be read back: the usual case of the
            // one replica that writes.
            let own = self.own.lock().unwrap_or_else(|e| e.into_inner());
            while let Some(&(_, last)) = own.iter().find(|&&(first, _)| first == after + 1) {
                after = last;
            }
        }
        type FeedRow = (i64, i32, Option<Vec<u8>>);
        let (first, rows): (Option<i64>, Vec<FeedRow>) = self.db.run(move |c| async move {
            let fail = failed("database: changes");
            let first: Option<i64> = c.query_one("SELECT min(seq) FROM changes", &[]).await.map_err(&fail)?.get(0);
            let rows = c
                .query(
                    "SELECT c.seq, c.id, e.data FROM changes c LEFT JOIN entries e ON e.id = c.id \
                     WHERE c.seq > $1 ORDER BY c.seq LIMIT $2",
                    &[&after, &FEED_PAGE],
                )
                .await
                .map_err(&fail)?;
            Ok((first, rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()))
        })?;
        if first.is_some_and(|f| f > after + 1) && after > 0 {
            return Ok(Some(Changes { upto: after as u64, gap: true, entries: Vec::new() }));
        }
        let upto = rows.last().map_or(after, |r| r.0);
        if rows.is_empty() {
            return Ok(Some(Changes { upto: upto as u64, gap: false, entries: Vec::new() }));
        }
        let own = {
            let mut own = self.own.lock().unwrap_or_else(|e| e.into_inner());
            own.retain(|&(_, last)| last > after);
            own.clone()
        };
        let mut entries = Vec::new();
        for (seq, id, data) in rows {
            if own.iter().any(|&(a, b)| (a..=b).contains(&seq)) {
                continue;
            }
            let id = our_id(id);
            entries.push((id, data.and_then(|d| decode_entry(id, &d))));
        }
        Ok(Some(Changes { upto: upto as u64, gap: false, entries }))
    }

    fn upload(&self, name: &str) -> Result<Option<Vec<u8>>, Error> {
        let rows =
            self.rows("SELECT bytes FROM uploads WHERE name = $1", vec![Box::new(name.to_string())], |r| r.get(0))?;
        Ok(rows.into_iter().next())
    }

    fn folders(&self) -> Result<Vec<(FolderId, String)>, Error> {
        self.rows("SELECT id, path FROM folders", Vec::new(), |r| (r.get::<_, i32>(0) as FolderId, r.get(1)))
    }

    fn labels(&self) -> Result<Vec<(String, u64)>, Error> {
        self.rows("SELECT label, count FROM labels WHERE count > 0", Vec::new(), |r| {
            (r.get(0), r.get::<_, i64>(1) as u64)
        })
    }

    fn sources_of(&self, keys: &[String]) -> Result<Vec<Option<SourceState>>, Error> {
        let found: HashMap<String, Vec<u8>> = self
            .rows("SELECT key, state FROM sources WHERE key = ANY($1)", vec![Box::new(keys.to_vec())], |r| {
                (r.get::<_, String>(0), r.get::<_, Vec<u8>>(1))
            })?
            .into_iter()
            .collect();
        Ok(keys.iter().map(|k| found.get(k).and_then(|b| postcard::from_bytes(b).ok())).collect())
    }

    fn source_keys_where(&self, keep: &dyn Fn(&str) -> bool) -> Result<Vec<String>, Error> {
        self.check_open()?;
        let mut keys = Vec::new();
        self.db.copy_rows("SELECT key FROM sources", &mut |row| {
            if let Some(k) = row[0].and_then(|b| std::str::from_utf8(b).ok()) {
                if keep(k) {
                    keys.push(k.to_string());
                }
            }
        })?;
        Ok(keys)
    }

    fn commit(&self, batch: &Batch) -> Result<(), Error> {
        self.check_open()?;
        let rows = Rows::of(batch, &self.names)?;
        let range: Option<(i64, i64)> = self.db.run(move |mut c| async move {
            let fail = failed("database: commit");
            let tx = c.transaction().await.map_err(&fail)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]).await.map_err(&fail)?;
            type Values<'a> = Vec<&'a (dyn tokio_postgres::types::ToSql + Sync)>;
            // In this order (what was stored under the ids written or removed goes first), each
            // statement only when it has rows.
            let writes: [(bool, &str, Values<'_>); 14] = [
                (rows.touched.is_empty(), "DELETE FROM links WHERE id = ANY($1)", vec![&rows.touched]),
                (rows.touched.is_empty(), "DELETE FROM hashes WHERE id = ANY($1)", vec![&rows.touched]),
                (rows.touched.is_empty(), "DELETE FROM listed WHERE id = ANY($1)", vec![&rows.touched]),
                (rows.removed.is_empty(), "DELETE FROM entries WHERE id = ANY($1)", vec![&rows.removed]),
                (
                    rows.entry_ids.is_empty(),
                    "INSERT INTO entries (id, data) SELECT * FROM unnest($1::integer[], $2::bytea[]) \
                     ON CONFLICT (id) DO UPDATE SET data = EXCLUDED.data",
                    vec![&rows.entry_ids, &rows.entry_data],
                ),
                (
                    rows.link_ids.is_empty(),
                    "INSERT INTO links (kind, hash, id) SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::integer[]) \
                     ON CONFLICT DO NOTHING",
                    vec![&rows.link_kinds, &rows.link_hashes, &rows.link_ids],
                ),
                (
                    rows.hash_ids.is_empty(),
                    "INSERT INTO hashes (hash, id) SELECT * FROM unnest($1::bytea[], $2::integer[]) \
                     ON CONFLICT (hash) DO UPDATE SET id = EXCLUDED.id",
                    vec![&rows.hashes, &rows.hash_ids],
                ),
                (
                    rows.listed_ids.is_empty(),
                    "INSERT INTO listed (id, rank, folder) SELECT * FROM unnest($1::integer[], $2::bigint[], $3::integer[])",
                    vec![&rows.listed_ids, &rows.listed_ranks, &rows.listed_folders],
                ),
                (
                    rows.folder_ids.is_empty(),
                    "INSERT INTO folders (id, path) SELECT * FROM unnest($1::integer[], $2::text[]) ON CONFLICT DO NOTHING",
                    vec![&rows.folder_ids, &rows.folder_paths],
                ),
                (
                    rows.labels.is_empty(),
                    "INSERT INTO labels (label, count) SELECT * FROM unnest($1::text[], $2::bigint[]) \
                     ON CONFLICT (label) DO UPDATE SET count = labels.count + EXCLUDED.count",
                    vec![&rows.labels, &rows.label_changes],
                ),
                (rows.labels.is_empty(), "DELETE FROM labels WHERE count <= 0", vec![]),
                (rows.removed_sources.is_empty(), "DELETE FROM sources WHERE key = ANY($1)", vec![&rows.removed_sources]),
                (
                    rows.source_keys.is_empty(),
                    "INSERT INTO sources (key, state) SELECT * FROM unnest($1::text[], $2::bytea[]) \
                     ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state",
                    vec![&rows.source_keys, &rows.source_states],
                ),
                (rows.removed_uploads.is_empty(), "DELETE FROM uploads WHERE name = ANY($1)", vec![&rows.removed_uploads]),
            ];
            for (nothing, sql, values) in &writes {
                if !nothing {
                    tx.execute(*sql, values).await.map_err(&fail)?;
                }
            }
            for (name, bytes) in &rows.uploads {
                tx.execute(
                    "INSERT INTO uploads (name, bytes) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[name, &&**bytes],
                )
                .await
                .map_err(&fail)?;
            }
            let mut range = None;
            if !rows.touched.is_empty() {
                let row = tx
                    .query_one(
                        "WITH numbered AS (INSERT INTO changes (seq, id) \
                         SELECT nextval('change_seq'), id FROM unnest($1::integer[]) AS t(id) RETURNING seq) \
                         SELECT min(seq), max(seq) FROM numbered",
                        &[&rows.touched],
                    )
                    .await
                    .map_err(&fail)?;
                range = Some((row.get(0), row.get(1)));
            }
            tx.commit().await.map_err(&fail)?;
            Ok(range)
        })?;
        if let Some(r) = range {
            self.own.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        }
        Ok(())
    }

    /// After a large indexing run: the feed trimmed, the tables vacuumed and analysed.
    fn compact(&self) {
        let done = self.db.run(|c| async move {
            let fail = failed("database: compact");
            c.execute(
                "DELETE FROM changes WHERE seq < (SELECT coalesce(max(seq), 0) FROM changes) - $1",
                &[&FEED_KEPT],
            )
            .await
            .map_err(&fail)?;
            // Vacuumed, not only analysed: until the visibility map is set, every search that
            // counts its matches visits (and dirties) each matching row; at 100,000 messages a
            // common word took 110 ms before and 13 ms after.
            c.batch_execute("SET statement_timeout = 0").await.map_err(&fail)?;
            let vacuumed = c.batch_execute("VACUUM (ANALYZE)").await.map_err(&fail);
            c.batch_execute("RESET statement_timeout").await.map_err(&fail)?;
            vacuumed?;
            Ok(())
        });
        if let Err(e) = done {
            tracing::debug!(error = %e, "database not analysed");
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    fn table_sizes(&self) -> Result<Vec<(&'static str, u64, u64, u64)>, Error> {
        const TABLES: [&str; 6] = ["entries", "links", "hashes", "listed", "sources", "changes"];
        let rows = self.rows(
            "SELECT c.relname::text, greatest(c.reltuples, 0)::bigint, pg_relation_size(c.oid), pg_total_relation_size(c.oid) \
             FROM pg_class c WHERE c.relkind = 'r' AND c.relname = ANY($1) AND c.relnamespace = current_schema()::regnamespace",
            vec![Box::new(TABLES.iter().map(|t| t.to_string()).collect::<Vec<_>>())],
            |r| (r.get::<_, String>(0), r.get::<_, i64>(1), r.get::<_, i64>(2), r.get::<_, i64>(3)),
        )?;
        Ok(TABLES
            .iter()
            .filter_map(|&t| {
                let (_, n, data, total) = rows.iter().find(|r| r.0 == t)?;
                Some((t, *n as u64, *data as u64, *total as u64))
            })
            .collect())
    }
}

/// A batch as the column arrays its statements take.
#[derive(Default)]
struct Rows {
    /// Every id written or removed: its old rows go, and the feed numbers it.
    touched: Vec<i32>,
    removed: Vec<i32>,
    entry_ids: Vec<i32>,
    entry_data: Vec<Vec<u8>>,
    link_kinds: Vec<i16>,
    link_hashes: Vec<i64>,
    link_ids: Vec<i32>,
    hashes: Vec<Vec<u8>>,
    hash_ids: Vec<i32>,
    listed_ids: Vec<i32>,
    listed_ranks: Vec<i64>,
    listed_folders: Vec<i32>,
    folder_ids: Vec<i32>,
    folder_paths: Vec<String>,
    labels: Vec<String>,
    label_changes: Vec<i64>,
    source_keys: Vec<String>,
    source_states: Vec<Vec<u8>>,
    removed_sources: Vec<String>,
    uploads: Vec<(String, Arc<[u8]>)>,
    removed_uploads: Vec<String>,
}

impl Rows {
    fn of(batch: &Batch, names: &NameHasher) -> Result<Rows, Error> {
        let mut r = Rows { removed: batch.removed.iter().map(|&id| pg_id(id)).collect(), ..Rows::default() };
        // The last of two entries with the same bytes in one batch is the one a lookup finds, as
        // when they are written one after the other.
        let mut by_hash: HashMap<[u8; 16], i32> = HashMap::new();
        for (id, e) in &batch.entries {
            let id = pg_id(*id);
            r.entry_ids.push(id);
            r.entry_data.push(encode(&**e)?);
            for (link, h) in links_of(e, names) {
                r.link_kinds.push(link as u8 as i16);
                r.link_hashes.push(h as i64);
                r.link_ids.push(id);
            }
            by_hash.insert(e.hash.0, id);
            if matches!(e.location, Location::Top { .. }) {
                r.listed_ids.push(id);
                r.listed_ranks.push(pg_rank(rank(e.summary.timestamp)));
                r.listed_folders.push(e.folder as i32);
            }
        }
        for (hash, id) in by_hash {
            r.hashes.push(hash.to_vec());
            r.hash_ids.push(id);
        }
        r.touched = r.entry_ids.iter().chain(&r.removed).copied().collect();
        r.touched.sort_unstable();
        r.touched.dedup();
        for (id, path) in &batch.folders {
            r.folder_ids.push(*id as i32);
            r.folder_paths.push(path.clone());
        }
        for (label, change) in &batch.labels {
            r.labels.push(label.clone());
            r.label_changes.push(*change);
        }
        let mut sources: HashMap<&str, &SourceState> = HashMap::new();
        for (k, st) in &batch.sources {
            sources.insert(k, st);
        }
        for (k, st) in sources {
            r.source_keys.push(k.to_string());
            r.source_states.push(encode(st)?);
        }
        r.removed_sources = batch.removed_sources.clone();
        r.uploads = batch.uploads.clone();
        r.removed_uploads = batch.removed_uploads.clone();
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::PgStore;
    use crate::index::{EntryId, Index, Location};
    use crate::ingest::Source;
    use crate::store::{Batch, Store};

    fn message(n: u64, parent: Option<u64>) -> crate::model::Message {
        let reply = parent.map(|p| format!("In-Reply-To: <m{p}@x>\r\n")).unwrap_or_default();
        let labels = ["", "Keywords: red\r\n", "Keywords: red, blue\r\n"][(n % 3) as usize];
        let raw = format!(
            "Message-ID: <m{n}@x>\r\nFrom: a{n}@x\r\nSubject: s{n}\r\n{reply}{labels}\
             Date: Mon, 2 Nov 2026 {:02}:{:02}:00 +0000\r\n\r\nbody {n}\r\n",
            n / 60 % 24,
            n % 60
        );
        crate::parse::parse_message(Arc::from(raw.into_bytes())).expect("parses")
    }

    fn at(n: u64, uploaded: bool) -> Location {
        let source = if uploaded {
            Source::Stored { name: format!("{n}.eml"), folder: String::new() }
        } else {
            Source::File { path: format!("/mail/f{}/cur/{n}", n % 2).into() }
        };
        Location::Top { source, rel: 5, flags: None, uploaded }
    }

    fn commit(store: &Arc<dyn Store>, index: &mut Index) {
        let mut batch = Batch::default();
        index.take_changes(&mut batch);
        store.commit(&batch).expect("commit");
        index.committed(&batch);
        index.sort();
    }

    fn follow(store: &Arc<dyn Store>, index: &mut Index) {
        loop {
            let from = index.feed_position();
            let changes = store.changes_since(from).expect("feed").expect("a shared store has a feed");
            let more = !changes.entries.is_empty() || changes.upto != from;
            index.apply_changes(from, changes).expect("applied");
            if !more {
                break;
            }
        }
    }

    /// What a replica shows: the list, the folders with their counts, the labels with theirs.
    type Shown = (Vec<EntryId>, Vec<(String, usize)>, Vec<(String, usize)>);

    fn shown(index: &Index) -> Shown {
        let mut folders: Vec<(String, usize)> = index.folder_counts().map(|(p, n)| (p.to_string(), n)).collect();
        folders.sort();
        let mut labels: Vec<(String, usize)> = index.label_counts().map(|(l, n)| (l.to_string(), n)).collect();
        labels.sort();
        (index.listed().to_vec(), folders, labels)
    }

    /// Two replicas write to one database (one indexing, one taking uploads); each follows the
    /// other's commits through the feed and ends up showing what a replica started afterwards
    /// shows: the same list, folders, labels, lookups and threads.
    #[test]
    fn replicas_agree_by_following_the_feed() {
        let Some(cluster) = crate::postgres::testing::Cluster::start() else { return };
        let open = || -> (Arc<dyn Store>, Index) {
            let store: Arc<dyn Store> = Arc::new(PgStore::open(cluster.database()).expect("store"));
            let index = Index::open(Arc::clone(&store)).expect("index");
            (store, index)
        };
        let (store_a, mut a) = open();
        let (store_b, mut b) = open();
        let mut ids = std::collections::HashMap::new();
        for round in 0..3u64 {
            for n in round * 40..round * 40 + 30 {
                ids.insert(n, a.add(&message(n, n.checked_sub(7)), at(n, false)).expect("added").id());
            }
            commit(&store_a, &mut a);
            for n in round * 40 + 30..round * 40 + 40 {
                ids.insert(n, b.add(&message(n, Some(n - 30)), at(n, true)).expect("added").id());
            }
            commit(&store_b, &mut b);
            // One each removes a message the other added.
            a.remove(ids[&(round * 40 + 31)]);
            commit(&store_a, &mut a);
            follow(&store_b, &mut b);
            b.remove(ids[&(round * 40 + 2)]);
            commit(&store_b, &mut b);
            follow(&store_a, &mut a);
            follow(&store_b, &mut b);
            assert_eq!(shown(&a), shown(&b), "round {round}");
        }
        let (_, c) = open();
        assert_eq!(shown(&a), shown(&c), "a replica started now shows the same");
        assert_eq!(a.listed_count(), 120 - 6);
        for index in [&a, &b, &c] {
            assert_eq!(index.by_key("m33@x"), Some(ids[&33]), "an upload is found by every replica");
            assert!(index.by_key("m31@x").is_none(), "removed by the other replica");
            let thread: Vec<EntryId> = index.thread(ids[&35]).into_iter().map(|(_, id)| id).collect();
            assert!(thread.contains(&ids[&5]), "a reply links to its parent across replicas");
        }
        let all: std::collections::HashSet<EntryId> = ids.values().copied().collect();
        assert_eq!(all.len(), ids.len(), "no id was handed out twice");
    }
}

//! The state store: one SQLite file (WAL) for plugin state, config values and the audit log.
//!
//! The API is synchronous and short: each method takes the connection lock, runs one
//! statement or transaction and returns. Async callers run it on the blocking pool. The
//! exception is the audit log, written by the pipeline on every call: each call's row is
//! appended to a journal before the reply leaves and committed in batches by a thread of
//! the store's own (see `audit_writer`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::secrets::{self, SecretBox};
use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Map, Value};

use audit_writer::AuditQueue;

mod audit_writer;
#[cfg(all(test, feature = "postgres"))]
mod contract;
pub(crate) mod db;
mod migrate;
mod plugins;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod read_log;
mod schema;
mod seen;
mod settings;
pub(crate) mod token_cache;

pub(crate) use schema::MIGRATIONS;

pub use migrate::MigrateError;
pub use settings::StoreConfig;

use db::{Db, Dialect, SqlValue, SqliteDb, args};

/// The most read-log rows kept; the oldest are removed first.
pub(crate) const MAX_READ_LOG_ROWS: i64 = 100_000;

/// A state store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or created.
    #[error("cannot open the state database {path}: {message}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A statement failed.
    #[error("state database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The work did not run: the runtime is shutting down.
    #[error("the state database was not reached: toolshed is shutting down")]
    Interrupted,
    /// A table is at its limit.
    #[error("{0}")]
    Full(String),
    /// The engine failed, or a row was not what the store expected.
    #[error("state database error: {0}")]
    Db(String),
    /// The database is newer than this build.
    #[error(
        "the state database {path} has schema version {found}, newer than this build knows ({known}); upgrade toolshed or use another --data-dir"
    )]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: usize,
        /// The newest this build knows.
        known: usize,
    },
}

/// One audit row: a call and how it ended. Arguments are kept only as a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct AuditRecord {
    /// Milliseconds since the Unix epoch when the call started.
    pub ts_ms: i64,
    /// The call id.
    pub call_id: String,
    /// The owner.
    pub owner: String,
    /// The door it came through: `cli`, `mcp`, `rest`.
    pub door: String,
    /// The tool name as asked.
    pub tool: String,
    /// The plugin that served it, if it was resolved.
    pub plugin: Option<String>,
    /// SHA-256 of the arguments' JSON.
    pub args_sha256: String,
    /// `ok`, `tool_error` (ran, reported failure) or `error`.
    pub outcome: String,
    /// The error kind, for `error` outcomes.
    pub error_kind: Option<String>,
    /// Wall time in milliseconds.
    pub duration_ms: i64,
    /// How the approval the call needed ended, and who answered (`ap-… approved by …`).
    pub approval: Option<String>,
    /// For a call a tool made on behalf of another (a `run_code` snippet's, a plugin's
    /// `tools.call`): the call id of the call that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// What the tool noted about the call (a process stop: how it ended, who asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The SQLite-backed state store.
pub struct StateStore {
    engine: Engine,
    path: PathBuf,
    audit: AuditQueue,
    /// Stored config values by plugin, as last read or written by this process: the
    /// pipeline hands a plugin's config to every call, and reading it from SQLite each time
    /// cost as much as the call. A value another process stores is seen once the registry
    /// next syncs from the store ([`StateStore::forget_config_values`]), as a plugin's
    /// enabled state is.
    config_cache: Mutex<HashMap<String, Map<String, Value>>>,
    /// Seals secret config values at rest.
    secrets: SecretBox,
    /// Read-log records written by this store: every 512th prunes the log.
    read_log_puts: std::sync::atomic::AtomicU64,
    /// What other toolsheds sharing the Postgres database said changed.
    changes: Arc<Changes>,
    /// This store's id in what it tells them.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    me: String,
    /// The shared installs this toolshed has put in place or seen.
    seen_installs: seen::Seen,
}

/// What a store on Postgres heard from the other toolsheds sharing the database: how many
/// times they said plugin choices changed. Each word also rewrites the changes file, so
/// that this process's watching registry looks ([`StateStore::data_version`]).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct Changes {
    count: std::sync::atomic::AtomicI64,
    file: Option<PathBuf>,
    /// Ids of events other toolsheds stored (the REST event log follows them); the
    /// channel is made when the first follower subscribes.
    events: std::sync::OnceLock<tokio::sync::broadcast::Sender<u64>>,
    /// Agent tokens read lately (on a shared database only), forgotten when revoked.
    pub(crate) tokens: token_cache::TokenCache,
}

#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
impl Changes {
    /// Another toolshed stored event `id`.
    pub(crate) fn heard_event(&self, id: u64) {
        if let Some(events) = self.events.get() {
            let _ = events.send(id);
        }
    }

    /// Another toolshed said plugin choices changed.
    pub(crate) fn heard(&self) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if let Some(file) = &self.file
            && let Err(e) = std::fs::write(file, format!("{}\n", now_ms()))
        {
            tracing::warn!(file = %file.display(), error = %e, "cannot pass on another toolshed's plugin change to this server's watcher");
        }
    }
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStore")
            .field("path", &self.path)
            .finish()
    }
}

/// The Postgres pool of a store whose shared tables are there.
#[cfg(feature = "postgres")]
type Shared = Option<Arc<postgres::Pool>>;
#[cfg(not(feature = "postgres"))]
type Shared = Option<std::convert::Infallible>;

/// Where the store's tables are: the SQLite file, or a Postgres database (with the SQLite
/// file keeping what is not shared yet: the memory tables). Cheap to clone.
#[derive(Clone)]
pub(crate) struct Engine {
    sqlite: Arc<Mutex<Connection>>,
    #[cfg(feature = "postgres")]
    postgres: Option<Arc<postgres::Pool>>,
}

impl Engine {
    /// An engine on one SQLite connection.
    #[cfg(test)]
    pub(crate) fn sqlite_only(sqlite: Arc<Mutex<Connection>>) -> Self {
        Self {
            sqlite,
            #[cfg(feature = "postgres")]
            postgres: None,
        }
    }

    fn sqlite(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent (transactions roll
        // back), so a poisoned lock is safe to keep using.
        self.sqlite.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Which engine holds the shared tables.
    pub(crate) fn dialect(&self) -> Dialect {
        #[cfg(feature = "postgres")]
        if self.postgres.is_some() {
            return Dialect::Postgres;
        }
        Dialect::Sqlite
    }

    /// Runs `f` on a connection (each statement on its own).
    pub(crate) fn db<T>(
        &self,
        f: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        #[cfg(feature = "postgres")]
        if let Some(pool) = &self.postgres {
            let mut lease = pool.lease()?;
            return f(&mut lease);
        }
        let conn = self.sqlite();
        f(&mut SqliteDb(&conn))
    }

    /// Runs `f` in one transaction (SQLite: taking the write lock at once), committed when
    /// it returns `Ok`.
    pub(crate) fn tx<T>(
        &self,
        f: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        #[cfg(feature = "postgres")]
        if let Some(pool) = &self.postgres {
            let mut lease = pool.lease()?;
            lease.begin()?;
            let out = f(&mut lease)?;
            lease.commit()?;
            return Ok(out);
        }
        let mut conn = self.sqlite();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let out = f(&mut SqliteDb(&tx))?;
        tx.commit()?;
        Ok(out)
    }
}

/// The time now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Seals secret values stored in clear text (by a toolshed from before secrets were
/// sealed), in one transaction.
fn seal_clear_secrets(db: &mut dyn Db, secrets: &SecretBox, path: &Path) -> Result<(), StoreError> {
    let clear = db
        .query(
            "SELECT plugin_id, key, value FROM config_values
             WHERE secret = 1 AND value NOT LIKE 'sealed:%'",
            args![],
        )?
        .iter()
        .map(|r| Ok((r.text(0)?, r.text(1)?, r.text(2)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    for (plugin_id, key, value) in clear {
        let sealed = secrets
            .seal(&secrets::slot(&plugin_id, &key), &value)
            .map_err(|message| StoreError::Open {
                path: path.to_path_buf(),
                message,
            })?;
        db.execute(
            "UPDATE config_values SET value = ?3 WHERE plugin_id = ?1 AND key = ?2",
            args![plugin_id, key, sealed],
        )?;
    }
    Ok(())
}

/// The file beside the database written after every change to the choices a running
/// registry follows (plugins enabled or disabled, config values, grants): what a server's
/// watcher watches instead of the database, whose write-ahead log every audit row and
/// memory rewrites (a file-system event each).
pub(crate) const CHANGES_FILE: &str = "state.changed";

impl StateStore {
    /// The agent tokens read lately (kept on a shared database only).
    pub(crate) fn token_cache(&self) -> &token_cache::TokenCache {
        &self.changes.tokens
    }

    /// Tells watching servers that plugin choices changed: rewrites [`CHANGES_FILE`].
    pub(crate) fn mark_changed(&self) {
        #[cfg(feature = "postgres")]
        if self.engine.postgres.is_some()
            && let Err(e) = self.db(|db| postgres::notify_changed(db, &self.me))
        {
            tracing::warn!(error = %e, "cannot tell the other toolsheds sharing the database that plugin choices changed");
        }
        if self.path == Path::new(":memory:") {
            return;
        }
        let changes = self.path.with_file_name(CHANGES_FILE);
        if let Err(e) = std::fs::write(&changes, format!("{}\n", now_ms())) {
            tracing::warn!(file = %changes.display(), error = %e, "cannot tell running servers that plugin choices changed; they see it when they next look");
        }
    }

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_on(path, None)
    }

    /// Opens the store as `[store]` says: the SQLite file at `path`, or with a
    /// `postgres://` URL the shared tables in that database (migrated to this build's
    /// schema) and the rest in the file (docs/deploy.md).
    pub fn open_with(path: &Path, store: &StoreConfig) -> Result<Self, StoreError> {
        match store.url.as_deref() {
            None => Self::open(path),
            Some(url) => Self::open_postgres(path, url, store),
        }
    }

    #[cfg(feature = "postgres")]
    fn open_postgres(path: &Path, url: &str, config: &StoreConfig) -> Result<Self, StoreError> {
        let pool = postgres::Pool::connect(url, config.max_connections)?;
        postgres::migrate(&pool)?;
        let store = Self::open_on(path, Some(Arc::new(pool)))?;
        postgres::listen(url, store.me.clone(), Arc::downgrade(&store.changes))?;
        // Revocations reach it through the listener just started.
        store
            .changes
            .tokens
            .enable(std::time::Duration::from_secs(config.token_cache_secs));
        Ok(store)
    }

    #[cfg(not(feature = "postgres"))]
    fn open_postgres(path: &Path, url: &str, _: &StoreConfig) -> Result<Self, StoreError> {
        Err(StoreError::Open {
            path: path.to_path_buf(),
            message: format!(
                "[store] url names a Postgres database ({}), but this toolshed was built without \
                 the Postgres engine (the `postgres` cargo feature)",
                url.split('@').next_back().unwrap_or_default()
            ),
        })
    }

    fn open_on(path: &Path, shared: Shared) -> Result<Self, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| open_err(format!("cannot create {}: {e}", parent.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // Switching a new file to WAL takes an exclusive lock, and SQLite answers "busy" at
        // once (without the busy timeout) when another process opening it holds a lock.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => break other?,
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // SQLite's default page cache is 2 MB per connection, and the audit log's appends
        // fill it with pages that are never read again; 256 KiB holds what is re-read.
        conn.pragma_update(None, "cache_size", -256)?;
        let key = path.with_file_name("secret.key");
        let secrets = SecretBox::open_or_create(&key).map_err(open_err)?;
        // There from the start, so that a running server can watch it.
        let changes = path.with_file_name(CHANGES_FILE);
        if !changes.exists() {
            std::fs::write(&changes, b"0\n")
                .map_err(|e| open_err(format!("cannot create {}: {e}", changes.display())))?;
        }
        Self::from_connection(conn, path.to_path_buf(), secrets, shared)
    }

    /// An in-memory store, for tests.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::from_connection(
            Connection::open_in_memory()?,
            PathBuf::from(":memory:"),
            SecretBox::ephemeral(),
            None,
        )
    }

    fn from_connection(
        mut conn: Connection,
        path: PathBuf,
        secrets: SecretBox,
        shared: Shared,
    ) -> Result<Self, StoreError> {
        let version_of = |c: &Connection| -> Result<usize, StoreError> {
            let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0))?;
            Ok(usize::try_from(v).unwrap_or(usize::MAX))
        };
        if version_of(&conn)? < MIGRATIONS.len() {
            // Under the write lock, and reading the version again inside it: another process
            // opening the same new file at this moment migrates first, or waits for us.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for (i, migration) in MIGRATIONS.iter().enumerate().skip(version_of(&tx)?) {
                tx.execute_batch(&schema::sqlite::render(migration))?;
                tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            }
            tx.commit()?;
        }
        let version = version_of(&conn)?;
        if version > MIGRATIONS.len() {
            return Err(StoreError::TooNew {
                path,
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        #[cfg(not(feature = "postgres"))]
        let _ = shared;
        let engine = Engine {
            sqlite: Arc::new(Mutex::new(conn)),
            #[cfg(feature = "postgres")]
            postgres: shared,
        };
        engine.tx(|db| seal_clear_secrets(db, &secrets, &path))?;
        // Rows that processes killed before committing left in their journals go in first.
        let journal = match path.parent().filter(|_| path != Path::new(":memory:")) {
            Some(dir) => {
                let dir = dir.join(audit_writer::JOURNAL_DIR);
                let replayed = audit_writer::replay_journals(&engine, &dir);
                if replayed > 0 {
                    tracing::info!(
                        rows = replayed,
                        "recovered audit rows of a process that was killed"
                    );
                }
                match audit_writer::Journal::create(&dir) {
                    Ok(journal) => Some(journal),
                    Err(e) => {
                        tracing::warn!(dir = %dir.display(), error = %e,
                            "cannot create the audit journal: rows are committed in batches, and a kill may lose the last ones");
                        None
                    }
                }
            }
            None => None,
        };
        let audit = AuditQueue::start(engine.clone(), journal).map_err(|e| StoreError::Open {
            path: path.clone(),
            message: format!("cannot start the audit writer thread: {e}"),
        })?;
        let changes_file =
            (path != Path::new(":memory:")).then(|| path.with_file_name(CHANGES_FILE));
        Ok(Self {
            engine,
            path,
            audit,
            config_cache: Mutex::new(HashMap::new()),
            secrets,
            read_log_puts: std::sync::atomic::AtomicU64::new(0),
            changes: Arc::new(Changes {
                count: std::sync::atomic::AtomicI64::new(0),
                file: changes_file,
                events: std::sync::OnceLock::new(),
                tokens: token_cache::TokenCache::default(),
            }),
            seen_installs: seen::Seen::default(),
            me: format!(
                "{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            ),
        })
    }

    /// The key that signs state toolshed hands a client and checks when it comes back
    /// (MCP's `requestState`): derived from `secret.key`, so every replica sharing that
    /// file checks what another signed.
    pub fn signing_key(&self) -> &[u8] {
        self.secrets.signing_key()
    }

    /// What this process has dealt with of the shared installs' rows.
    pub(crate) fn seen_installs(&self) -> &seen::Seen {
        &self.seen_installs
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version.
    pub fn schema_version(&self) -> Result<usize, StoreError> {
        self.with(|c| {
            let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0))?;
            Ok(usize::try_from(v).unwrap_or(usize::MAX))
        })
    }

    /// SQLite's `PRAGMA data_version` of this store's connection: it changes only when
    /// another connection (another process, or another `StateStore` on the same file)
    /// committed since the last look, never for this store's own writes (audit rows
    /// included). A watcher compares two values to learn, with one cheap read, whether
    /// anything it did not write itself changed.
    ///
    /// On Postgres, the number of times other toolsheds sharing the database said plugin
    /// choices changed (`LISTEN`/`NOTIFY`).
    pub fn data_version(&self) -> Result<i64, StoreError> {
        if self.dialect() == Dialect::Postgres {
            return Ok(self
                .changes
                .count
                .load(std::sync::atomic::Ordering::Acquire));
        }
        self.with(|c| Ok(c.pragma_query_value(None, "data_version", |r| r.get(0))?))
    }

    /// Runs `f` on the SQLite connection: the whole store, or with Postgres the tables
    /// kept locally (memory).
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        f(&mut self.engine.sqlite())
    }

    /// Runs `f` on a connection of the engine holding the shared tables.
    pub(crate) fn db<T>(
        &self,
        f: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.engine.db(f)
    }

    /// Runs `f` in one transaction of the engine holding the shared tables.
    pub(crate) fn tx<T>(
        &self,
        f: impl FnOnce(&mut dyn Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.engine.tx(f)
    }

    /// Which engine holds the shared tables.
    pub(crate) fn dialect(&self) -> Dialect {
        self.engine.dialect()
    }

    /// The ids of events other toolsheds sharing the database store from now on (nothing
    /// on the embedded engine); a receiver that falls behind is told how many it missed.
    pub fn other_events(&self) -> tokio::sync::broadcast::Receiver<u64> {
        self.changes
            .events
            .get_or_init(|| tokio::sync::broadcast::channel(1024).0)
            .subscribe()
    }

    /// This store's id in what it tells the others.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn me(&self) -> &str {
        &self.me
    }

    /// The engine holding the shared tables: `sqlite` or `postgres`.
    pub fn engine_name(&self) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    /// Appends an audit row now, and keeps at most `max_rows` rows (oldest removed first).
    pub fn append_audit(&self, record: &AuditRecord, max_rows: u64) -> Result<(), StoreError> {
        self.tx(|db| insert_audit_rows(db, std::slice::from_ref(record), max_rows))
    }

    /// Queues an audit row for the writer thread, which keeps at most `max_rows` rows.
    /// Returns at once unless 8,192 rows (the queue's capacity) are already waiting; then it
    /// waits for room. Rows are never dropped.
    pub async fn queue_audit(&self, record: AuditRecord, max_rows: u64) {
        self.audit.push(record, max_rows).await;
    }

    /// Waits until every audit row queued so far is in the database. Blocking: async
    /// callers run it on the blocking pool.
    pub fn flush_audit(&self) {
        self.audit.flush();
    }
}

/// Inserts `rows` in one transaction and keeps at most `max_rows` rows, oldest removed
/// first.
/// Call it inside a transaction ([`Engine::tx`]).
pub(crate) fn insert_audit_rows(
    db: &mut dyn Db,
    rows: &[AuditRecord],
    max_rows: u64,
) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    match db.dialect() {
        Dialect::Sqlite => {
            let one_row = audit_insert(1);
            for record in rows {
                // Not `RETURNING id`: SQLite buffers a RETURNING statement's rows in a table
                // of its own, opened and dropped for each row, which cost the audit writer a
                // quarter more time per row. The last id is asked for once, below.
                db.execute(&one_row, &audit_values(record))?;
            }
        }
        Dialect::Postgres => {
            // Each statement is a round trip to the server: rows go in chunks of a power of
            // two (at most 256), so a batch of 512 is two statements, not 512, and a
            // connection keeps at most nine such statements prepared.
            let mut rest = rows;
            while !rest.is_empty() {
                let n = 1usize << rest.len().min(256).ilog2();
                let (chunk, tail) = rest.split_at(n);
                let values: Vec<SqlValue> = chunk.iter().flat_map(audit_values).collect();
                db.execute(&audit_insert(n), &values)?;
                rest = tail;
            }
        }
    }
    // The id of this connection's last insert: this transaction's last row.
    let last_id = match db.dialect() {
        Dialect::Sqlite => "SELECT last_insert_rowid()",
        Dialect::Postgres => "SELECT lastval()",
    };
    let last = db.query_one(last_id, &[])?.int(0)?;
    // Pruning every 256 rows keeps the log bounded without a DELETE per call: when this
    // batch's ids (consecutive in SQLite's one writer) passed a multiple of 256.
    let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    let prune = last.div_euclid(256) != last.saturating_sub(count).div_euclid(256);
    if prune {
        let keep = i64::try_from(max_rows).unwrap_or(i64::MAX);
        // One typed bound: Postgres cannot type `?1 - ?2` of two bare parameters.
        db.execute(
            "DELETE FROM audit WHERE id <= ?1",
            args![last.saturating_sub(keep)],
        )?;
    }
    Ok(())
}

/// The columns of an audit row, in [`audit_values`]' order.
const AUDIT_COLUMNS: usize = 13;

/// `INSERT INTO audit` of `rows` rows.
fn audit_insert(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO audit (ts_ms, call_id, owner, door, tool, plugin, args_sha256, outcome, \
         error_kind, duration_ms, approval, parent, note) VALUES ",
    );
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 1..=AUDIT_COLUMNS {
            if column > 1 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("?{}", row * AUDIT_COLUMNS + column));
        }
        sql.push(')');
    }
    sql
}

/// One audit row's values, in the order [`audit_insert`] names the columns.
fn audit_values(record: &AuditRecord) -> [SqlValue; AUDIT_COLUMNS] {
    [
        record.ts_ms.into(),
        (&record.call_id).into(),
        (&record.owner).into(),
        (&record.door).into(),
        (&record.tool).into(),
        (&record.plugin).into(),
        (&record.args_sha256).into(),
        (&record.outcome).into(),
        (&record.error_kind).into(),
        record.duration_ms.into(),
        (&record.approval).into(),
        (&record.parent).into(),
        (&record.note).into(),
    ]
}

#[cfg(test)]
mod tests;

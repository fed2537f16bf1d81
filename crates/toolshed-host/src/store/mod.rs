//! The state store: one SQLite file (WAL) for plugin state, config values and the audit log.
//!
//! The API is synchronous and short: each method takes the connection lock, runs one
//! statement or transaction and returns. Async callers run it on the blocking pool. The
//! exception is the audit log, written by the pipeline on every call: each call's row is
//! appended to a journal before the reply leaves and committed in batches by a thread of
//! the store's own (see `audit_writer`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::secrets::{self, SecretBox};
use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Map, Value};
use toolshed_core::ToolSpec;

use audit_writer::AuditQueue;

mod audit_writer;
#[cfg(all(test, feature = "postgres"))]
mod contract;
pub(crate) mod db;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod schema;
mod seen;
mod settings;

pub(crate) use schema::MIGRATIONS;

pub use settings::StoreConfig;

use db::{Db, Dialect, SqliteDb, args};

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
            Some(url) => Self::open_postgres(path, url, store.max_connections),
        }
    }

    #[cfg(feature = "postgres")]
    fn open_postgres(path: &Path, url: &str, max_connections: usize) -> Result<Self, StoreError> {
        let pool = postgres::Pool::connect(url, max_connections)?;
        postgres::migrate(&pool)?;
        let store = Self::open_on(path, Some(Arc::new(pool)))?;
        postgres::listen(url, store.me.clone(), Arc::downgrade(&store.changes))?;
        Ok(store)
    }

    #[cfg(not(feature = "postgres"))]
    fn open_postgres(path: &Path, url: &str, _: usize) -> Result<Self, StoreError> {
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
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version_of(&tx)?) {
                tx.execute_batch(sql)?;
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

    /// Whether the plugin was enabled or disabled by a person; `None` if never set.
    pub fn plugin_enabled(&self, plugin_id: &str) -> Result<Option<bool>, StoreError> {
        self.db(|db| {
            db.query_opt(
                "SELECT enabled FROM plugin_state WHERE plugin_id = ?1",
                args![plugin_id],
            )?
            .map(|r| r.bool(0))
            .transpose()
        })
    }

    /// Every plugin's recorded enabled state, by plugin id (plugins never set are absent).
    pub fn plugin_states(&self) -> Result<BTreeMap<String, bool>, StoreError> {
        self.db(|db| {
            db.query("SELECT plugin_id, enabled FROM plugin_state", args![])?
                .iter()
                .map(|r| Ok((r.text(0)?, r.bool(1)?)))
                .collect()
        })
    }

    /// Forgets everything stored about a plugin: its enabled state, config values and grants.
    pub fn forget_plugin(&self, plugin_id: &str) -> Result<(), StoreError> {
        self.tx(|db| {
            for table in [
                "plugin_state",
                "config_values",
                "plugin_grants",
                "plugin_tools",
                "plugin_installs",
            ] {
                db.execute(
                    &format!("DELETE FROM {table} WHERE plugin_id = ?1"),
                    args![plugin_id],
                )?;
            }
            Ok(())
        })?;
        self.cached_config(|cache| cache.remove(plugin_id));
        self.mark_changed();
        Ok(())
    }

    /// Records that the plugin is enabled or disabled.
    pub fn set_plugin_enabled(&self, plugin_id: &str, enabled: bool) -> Result<(), StoreError> {
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_state (plugin_id, enabled, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (plugin_id) DO UPDATE SET enabled = excluded.enabled,
                 updated_at = excluded.updated_at",
                args![plugin_id, enabled, now_ms()],
            )?;
            Ok(())
        })?;
        self.mark_changed();
        Ok(())
    }

    /// The stored config values of a plugin (secrets included: callers must not list them).
    pub fn config_values(&self, plugin_id: &str) -> Result<Map<String, Value>, StoreError> {
        if let Some(values) = self.cached_config(|cache| cache.get(plugin_id).cloned()) {
            return Ok(values);
        }
        let values = self.db(|db| {
            let rows = db.query(
                "SELECT key, value FROM config_values WHERE plugin_id = ?1 ORDER BY key",
                args![plugin_id],
            )?;
            let mut map = Map::new();
            for row in rows {
                let (key, raw) = (row.text(0)?, row.text(1)?);
                let raw = if raw.starts_with(secrets::PREFIX) {
                    match self.secrets.open(&secrets::slot(plugin_id, &key), &raw) {
                        Some(plain) => plain,
                        None => {
                            tracing::warn!(
                                plugin = plugin_id,
                                key = key.as_str(),
                                "a stored secret does not open with this data dir's \
                                 secret.key; set it again"
                            );
                            continue;
                        }
                    }
                } else {
                    raw
                };
                map.insert(
                    key,
                    serde_json::from_str(&raw).unwrap_or(Value::String(raw)),
                );
            }
            Ok(map)
        })?;
        self.cached_config(|cache| cache.insert(plugin_id.to_string(), values.clone()));
        Ok(values)
    }

    fn cached_config<T>(&self, f: impl FnOnce(&mut HashMap<String, Map<String, Value>>) -> T) -> T {
        f(&mut self.config_cache.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Forgets the config values kept in memory, so that the next read sees what other
    /// processes stored since.
    pub fn forget_config_values(&self) {
        self.cached_config(HashMap::clear);
    }

    /// Stores one config value.
    pub fn set_config_value(
        &self,
        plugin_id: &str,
        key: &str,
        value: &Value,
        secret: bool,
    ) -> Result<(), StoreError> {
        let stored = if secret {
            self.secrets
                .seal(&secrets::slot(plugin_id, key), &value.to_string())
                .map_err(|message| StoreError::Open {
                    path: self.path.clone(),
                    message,
                })?
        } else {
            value.to_string()
        };
        self.db(|db| {
            db.execute(
                "INSERT INTO config_values (plugin_id, key, value, secret, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (plugin_id, key) DO UPDATE SET value = excluded.value,
                 secret = excluded.secret, updated_at = excluded.updated_at",
                args![plugin_id, key, stored, secret, now_ms()],
            )?;
            Ok(())
        })?;
        self.cached_config(|cache| cache.remove(plugin_id));
        self.mark_changed();
        Ok(())
    }

    /// The tool specs each sandboxed plugin registered when its code last ran, with the
    /// key of what it was loaded from (files, version, config), by plugin id. A later
    /// process lists those tools without running the code until a call needs it, and a
    /// disabled or failed plugin's tools are still known.
    pub fn plugin_tools(&self) -> Result<BTreeMap<String, (String, Vec<ToolSpec>)>, StoreError> {
        self.db(|db| {
            let rows = db.query(
                "SELECT plugin_id, load_key, specs FROM plugin_tools",
                args![],
            )?;
            let mut map = BTreeMap::new();
            for row in rows {
                let (id, key, specs) = (row.text(0)?, row.text(1)?, row.text(2)?);
                // A row an older toolshed wrote in another shape is simply not used.
                if let Ok(specs) = serde_json::from_str(&specs) {
                    map.insert(id, (key, specs));
                }
            }
            Ok(map)
        })
    }

    /// Records the tool specs a sandboxed plugin registered, and the key it was loaded from.
    pub fn set_plugin_tools(
        &self,
        plugin_id: &str,
        load_key: &str,
        specs: &[ToolSpec],
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(specs).unwrap_or_else(|_| "[]".into());
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_tools (plugin_id, load_key, specs, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (plugin_id) DO UPDATE SET load_key = excluded.load_key,
                 specs = excluded.specs, updated_at = excluded.updated_at",
                args![plugin_id, load_key, text, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The capabilities granted to a plugin, as stored (`http:HOST`, `fs-read:PATH`, ...),
    /// sorted.
    pub fn grants(&self, plugin_id: &str) -> Result<Vec<String>, StoreError> {
        self.db(|db| {
            db.query(
                "SELECT \"grant\" FROM plugin_grants WHERE plugin_id = ?1 ORDER BY \"grant\"",
                args![plugin_id],
            )?
            .iter()
            .map(|r| r.text(0))
            .collect()
        })
    }

    /// Every plugin's grants, by plugin id (plugins without grants are absent).
    pub fn all_grants(&self) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        self.db(|db| {
            let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for row in db.query(
                "SELECT plugin_id, \"grant\" FROM plugin_grants ORDER BY plugin_id, \"grant\"",
                args![],
            )? {
                map.entry(row.text(0)?).or_default().push(row.text(1)?);
            }
            Ok(map)
        })
    }

    /// Adds and removes grants of a plugin in one transaction.
    pub fn change_grants(
        &self,
        plugin_id: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<(), StoreError> {
        self.tx(|db| {
            for grant in remove {
                db.execute(
                    "DELETE FROM plugin_grants WHERE plugin_id = ?1 AND \"grant\" = ?2",
                    args![plugin_id, grant],
                )?;
            }
            for grant in add {
                db.execute(
                    "INSERT INTO plugin_grants (plugin_id, \"grant\", updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (plugin_id, \"grant\") DO UPDATE SET updated_at = excluded.updated_at",
                    args![plugin_id, grant, now_ms()],
                )?;
            }
            Ok(())
        })?;
        self.mark_changed();
        Ok(())
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

    /// The digest `owner` last saw of `path` (see `toolshed_ops::ReadLog`).
    pub fn read_log_get(&self, owner: &str, path: &str) -> Result<Option<[u8; 32]>, StoreError> {
        self.db(|db| {
            let blob = match db.query_opt(
                "SELECT sha256 FROM read_log WHERE owner = ?1 AND path = ?2",
                args![owner, path],
            )? {
                Some(row) => row.opt_blob(0)?,
                None => None,
            };
            Ok(blob.and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok()))
        })
    }

    /// Records the digest `owner` has seen of `path`, keeping the log bounded.
    pub fn read_log_put(
        &self,
        owner: &str,
        path: &str,
        digest: &[u8; 32],
    ) -> Result<(), StoreError> {
        let prune = self
            .read_log_puts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % 512
            == 511;
        self.db(|db| {
            db.execute(
                "INSERT INTO read_log (owner, path, sha256, ts_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (owner, path) DO UPDATE SET sha256 = excluded.sha256, ts_ms = excluded.ts_ms",
                args![owner, path, digest.as_slice(), now_ms()],
            )?;
            if prune {
                // Every 512 records, the oldest past the limit go.
                db.execute(
                    "DELETE FROM read_log WHERE ts_ms < (SELECT ts_ms FROM read_log
                       ORDER BY ts_ms DESC LIMIT 1 OFFSET ?1)",
                    args![MAX_READ_LOG_ROWS],
                )?;
            }
            Ok(())
        })
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
    for record in rows {
        // Not `RETURNING id`: SQLite buffers a RETURNING statement's rows in a table of
        // its own, opened and dropped for each row, which cost the audit writer a quarter
        // more time per row. The last id is asked for once, below.
        db.execute(
            "INSERT INTO audit (ts_ms, call_id, owner, door, tool, plugin, args_sha256,
             outcome, error_kind, duration_ms, approval, parent)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            args![
                record.ts_ms,
                &record.call_id,
                &record.owner,
                &record.door,
                &record.tool,
                &record.plugin,
                &record.args_sha256,
                &record.outcome,
                &record.error_kind,
                record.duration_ms,
                &record.approval,
                &record.parent
            ],
        )?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(i: i64) -> AuditRecord {
        AuditRecord {
            ts_ms: i,
            call_id: format!("c{i}"),
            owner: "o".into(),
            door: "test".into(),
            tool: "calculator".into(),
            plugin: Some("system.calculator".into()),
            args_sha256: "00".into(),
            outcome: "ok".into(),
            error_kind: None,
            duration_ms: 1,
            approval: None,
            parent: None,
        }
    }

    #[test]
    fn processes_opening_a_new_database_at_once_all_succeed() {
        // Two `toolshed` commands started together on a fresh data dir (a waiting call and
        // `toolshed approvals list`) both find schema version 0; only one may migrate.
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("toolshed.db");
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
            let opened: Vec<_> = (0..4)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        StateStore::open(&path).map(|_| ())
                    })
                })
                .collect();
            for handle in opened {
                handle.join().unwrap().unwrap();
            }
        }
    }

    /// The log keeps its newest rows and stays bounded, whatever the batches' sizes: it
    /// is pruned each time the ids pass a multiple of 256.
    #[test]
    fn the_audit_log_keeps_the_newest_rows_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(&dir.path().join("toolshed.db")).unwrap();
        let count = |store: &StateStore| {
            store
                .tx(|db| db.query_one("SELECT count(*), min(id), max(id) FROM audit", &[]))
                .map(|row| {
                    (
                        row.int(0).unwrap(),
                        row.int(1).unwrap(),
                        row.int(2).unwrap(),
                    )
                })
                .unwrap()
        };
        let mut next = 1;
        for size in [1, 7, 250, 3, 300, 1, 1, 64, 200] {
            let batch: Vec<_> = (next..next + size).map(record).collect();
            store.tx(|db| insert_audit_rows(db, &batch, 100)).unwrap();
            next += size;
            let (rows, first, last) = count(&store);
            assert_eq!(last, next - 1);
            assert!(
                rows <= 100 + 256 + size,
                "{rows} rows after a batch of {size}"
            );
            assert_eq!(first, last - rows + 1, "the newest rows are kept");
        }
        // 827 rows written; the last batch (628-827) passed 768: the newest 100 kept.
        assert_eq!(count(&store), (100, 728, 827));
        // An empty batch writes nothing.
        store.tx(|db| insert_audit_rows(db, &[], 100)).unwrap();
        assert_eq!(count(&store).0, 100);
    }

    #[test]
    fn migrates_a_file_once_and_keeps_state_across_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/toolshed.db");
        {
            let store = StateStore::open(&path).unwrap();
            assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
            store.set_plugin_enabled("a", false).unwrap();
            store
                .set_config_value("a", "k", &serde_json::json!({"x": 1}), false)
                .unwrap();
            store.append_audit(&record(1), 10).unwrap();
        }
        let store = StateStore::open(&path).unwrap();
        assert_eq!(store.plugin_enabled("a").unwrap(), Some(false));
        assert_eq!(store.plugin_enabled("b").unwrap(), None);
        assert_eq!(
            store.config_values("a").unwrap()["k"],
            serde_json::json!({"x": 1})
        );
        assert_eq!(store.recent_audit(5).unwrap(), vec![record(1)]);
        let mode: String = store
            .with(|c| Ok(c.pragma_query_value(None, "journal_mode", |r| r.get(0))?))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[tokio::test]
    async fn data_version_moves_for_other_connections_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolshed.db");
        let store = StateStore::open(&path).unwrap();
        let start = store.data_version().unwrap();
        store.set_plugin_enabled("a", false).unwrap();
        store.append_audit(&record(1), 10).unwrap();
        // Rows the audit writer thread commits go through the same connection.
        store.queue_audit(record(2), 10).await;
        store.flush_audit();
        assert_eq!(store.recent_audit(5).unwrap().len(), 2);
        assert_eq!(store.data_version().unwrap(), start, "own writes");
        let other = StateStore::open(&path).unwrap();
        other.set_plugin_enabled("a", true).unwrap();
        let moved = store.data_version().unwrap();
        assert_ne!(moved, start, "another connection committed");
        assert_eq!(store.data_version().unwrap(), moved, "nothing since");
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolshed.db");
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = StateStore::open(&path).unwrap_err().to_string();
        assert!(err.contains("schema version 99"), "{err}");
    }

    #[test]
    fn audit_log_is_bounded() {
        let store = StateStore::open_in_memory().unwrap();
        for i in 1..=1024 {
            store.append_audit(&record(i), 100).unwrap();
        }
        let rows = store.recent_audit(10_000).unwrap();
        assert!(rows.len() <= 100 + 256, "{}", rows.len());
        assert_eq!(rows[0].ts_ms, 1024);
    }
}

//! Memory: persistent, searchable notes for agents, kept in the state store (SQLite, with an
//! FTS5 index ranked by BM25). The tools of `system.memory` ([`plugin`]) serve them; see
//! docs/memory.md.
//!
//! **Scope.** A memory belongs to the memory owner of the call that stored it
//! ([`scope_of`]): an agent token's owner (its first path segment: `alice/task-1` keeps
//! `alice`'s memories), or `local` for the person at this machine (the CLI, the admin token,
//! an MCP connection without a token — whose per-connection owner ids would otherwise
//! forget everything when the connection closes). One owner never sees another's memories,
//! but those of a namespace listed in `[memory] shared_namespaces`, which every owner reads
//! and writes.
//!
//! **Lifecycle.** A delete is soft: the memory can be restored for `[memory] deleted_days`,
//! then it is purged. Compaction replaces old entries with a summary written by the model
//! and keeps each replaced entry as an archived row, restorable like a deleted one; it
//! happens in one transaction, so it is all-or-nothing.

mod checks;
mod days;
mod markdown;
mod query;
mod settings;
mod tools;

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::store::db::{Db, Dialect, Row, SqlValue, args, locks, serialize};
use crate::store::{StateStore, StoreError};

pub use markdown::{Exported, Imported, MAX_IMPORT_FILES};
pub use query::{MAX_QUERY_LEN, QueryError, fts_query};
pub use settings::MemoryConfig;
pub use tools::plugin;

use checks::{checked_namespace, checked_tags, stored_tags, tag_list};

/// The owner value of memories in a shared namespace.
const SHARED: &str = "*";
/// The most tags on one memory.
pub const MAX_TAGS: usize = 20;
/// The longest tag, namespace or title.
const MAX_TAG_LEN: usize = 40;
const MAX_NAMESPACE_LEN: usize = 80;
const MAX_TITLE_LEN: usize = 200;
/// The most results of one search or page of a list.
pub const MAX_PAGE: usize = 100;

/// A search ranks at most this many of the caller's matches, the newest; a page is at most
/// [`MAX_PAGE`].
pub const RANKED: usize = 256;

/// The memory owner a call's owner stands for (see the module docs).
pub fn scope_of(owner: &str) -> String {
    let top = owner.split('/').next().unwrap_or(owner);
    if top.is_empty() || top == "cli" || top == "rest" || top.starts_with("mcp-") {
        "local".into()
    } else {
        top.to_string()
    }
}

/// Why a memory operation failed: the caller's mistake (named, with what to do) or the
/// store's.
#[derive(Debug)]
pub enum MemoryError {
    /// Bad input: the message says which value and what to give instead.
    Invalid(String),
    /// No such memory for this owner.
    NotFound(String),
    /// The owner's memories are full, or something changed under a two-step operation.
    Conflict(String),
    /// The database failed.
    Store(StoreError),
    /// A batch of writes could not be committed (the database's message).
    Unwritten(String),
}

impl std::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(m) | Self::NotFound(m) | Self::Conflict(m) | Self::Unwritten(m) => {
                f.write_str(m)
            }
            Self::Store(e) => e.fmt(f),
        }
    }
}

impl From<StoreError> for MemoryError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Store(StoreError::from(e))
    }
}

type Result<T> = std::result::Result<T, MemoryError>;

/// A memory as the tools show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Memory {
    /// Its id (`m-…`).
    pub id: String,
    /// Its namespace; empty for the owner's own.
    pub namespace: String,
    /// `note`, `daily` (a journal day) or `summary` (of compacted memories).
    pub kind: String,
    /// Its title; may be empty.
    pub title: String,
    /// Its text.
    pub text: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// When it was stored and last changed (milliseconds since 1970).
    pub created_ms: i64,
    /// When it was last changed.
    pub updated_ms: i64,
    /// When it expires, if it does.
    pub expires_ms: Option<i64>,
    /// When it was deleted, if it was (restorable).
    pub deleted_ms: Option<i64>,
    /// The summary that replaced it, if it was compacted (restorable).
    pub archived_in: Option<String>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// The memory's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its namespace.
    pub namespace: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The text around the matches, matched terms in `**bold**`.
    pub snippet: String,
    /// BM25 relevance: higher is better.
    pub score: f64,
    /// When it was last changed.
    pub updated_ms: i64,
}

/// What to store.
#[derive(Debug, Clone, Default)]
pub struct NewMemory {
    /// The text.
    pub text: String,
    /// A title.
    pub title: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The namespace; the owner's own when `None`.
    pub namespace: Option<String>,
    /// Update this memory instead of creating one.
    pub id: Option<String>,
    /// Expire after this many milliseconds.
    pub ttl_ms: Option<i64>,
}

/// What to search for.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// The query (words, `"phrases"`, `prefix*`, `OR`).
    pub query: String,
    /// Only memories with all these tags.
    pub tags: Vec<String>,
    /// Only this namespace.
    pub namespace: Option<String>,
    /// The most results.
    pub limit: usize,
    /// Only memories changed at or after this time.
    pub since_ms: Option<i64>,
}

/// The memories of one state store, with the clock and limits they are kept by.
#[derive(Clone)]
pub struct Memories {
    store: Arc<StateStore>,
    config: MemoryConfig,
    clock: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// When expired and long-deleted memories were last purged (at most once a minute).
    purged_ms: Arc<std::sync::atomic::AtomicI64>,
    /// Writes waiting to be committed together (see [`Memories::write`]).
    pending: Arc<std::sync::Mutex<Vec<Pending>>>,
    /// Held by whoever commits a batch: one batch at a time.
    committing: Arc<std::sync::Mutex<()>>,
}

/// One write of a memory, run inside the shared transaction of a batch: the memory as
/// written, or why not. A job checks everything that can refuse it before it writes
/// (housekeeping such as a purge aside), so a refused job leaves nothing of its own
/// behind; a job the database fails may have, and is run again alone (so it is `Fn`).
type WriteJob = Box<dyn Fn(&mut dyn Db) -> std::result::Result<Result<Memory>, StoreError> + Send>;

/// A write waiting for its batch, and where its outcome goes.
struct Pending {
    job: WriteJob,
    done: std::sync::mpsc::SyncSender<Result<Memory>>,
}

/// How often a store purges expired and long-deleted memories.
const PURGE_EVERY_MS: i64 = 60_000;

impl std::fmt::Debug for Memories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memories").finish_non_exhaustive()
    }
}

fn new_id(prefix: &str) -> String {
    // The id only needs to be unique; the system generator failing is not worth failing
    // a store for (the time part still differs).
    let hex = toolshed_core::secret::random_hex(8).unwrap_or_default();
    format!("{prefix}-{hex}")
}

const COLUMNS: &str = "id, namespace, kind, title, text, tags, created_ms, updated_ms, \
                       expires_ms, deleted_ms, archived_in";

fn row_memory(r: &Row) -> std::result::Result<Memory, StoreError> {
    Ok(Memory {
        id: r.text(0)?,
        namespace: r.text(1)?,
        kind: r.text(2)?,
        title: r.text(3)?,
        text: r.text(4)?,
        tags: tag_list(&r.text(5)?),
        created_ms: r.int(6)?,
        updated_ms: r.int(7)?,
        expires_ms: r.opt_int(8)?,
        deleted_ms: r.opt_int(9)?,
        archived_in: r.opt_text(10)?,
    })
}

/// The condition of a memory a caller sees as present (not deleted, archived or expired),
/// with the time now as parameter `now`.
fn live(now: usize) -> String {
    format!(
        "m.deleted_ms IS NULL AND m.archived_in IS NULL \
         AND (m.expires_ms IS NULL OR m.expires_ms > ?{now})"
    )
}

/// The size of a text column in bytes, in the dialect.
fn bytes_of(dialect: Dialect, column: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("length(CAST({column} AS BLOB))"),
        Dialect::Postgres => format!("octet_length({column})"),
    }
}

impl Memories {
    /// The memories of `store`, kept by `config`, on the system clock.
    pub fn new(store: Arc<StateStore>, config: MemoryConfig) -> Self {
        Self::with_clock(store, config, Arc::new(crate::store::now_ms))
    }

    /// The same on `clock` (milliseconds since 1970): tests move time with it.
    pub fn with_clock(
        store: Arc<StateStore>,
        config: MemoryConfig,
        clock: Arc<dyn Fn() -> i64 + Send + Sync>,
    ) -> Self {
        Self {
            store,
            config,
            clock,
            purged_ms: Arc::new(std::sync::atomic::AtomicI64::new(i64::MIN)),
            pending: Arc::default(),
            committing: Arc::default(),
        }
    }

    /// Runs `job` in a write transaction, shared with the writes that arrive meanwhile.
    ///
    /// A commit costs more than the statements of one memory (the WAL frames of every page
    /// touched, the FTS segment it flushes), so writes that wait for the connection at the
    /// same time are committed together: each queues its job, then takes the connection,
    /// and whoever holds it runs every job queued by then, commits once and hands each job
    /// its outcome. A job queued after that batch began is in the next one. (Not one
    /// savepoint per job: FTS5 flushes its pending index at every savepoint, which is the
    /// cost a batch saves.)
    fn write(&self, job: WriteJob) -> Result<Memory> {
        let (done, outcome) = std::sync::mpsc::sync_channel(1);
        lock(&self.pending).push(Pending { job, done });
        {
            let _turn = lock(&self.committing);
            let batch = std::mem::take(&mut *lock(&self.pending));
            if !batch.is_empty() {
                commit_batch(&self.store, batch);
            }
        }
        outcome.recv().map_err(|_| {
            MemoryError::Unwritten("the memory was not written: its batch stopped".into())
        })?
    }

    /// Whether this store should purge now (and, if so, notes that it did).
    fn purge_due(&self, now: i64) -> bool {
        use std::sync::atomic::Ordering;
        let last = self.purged_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= PURGE_EVERY_MS
            && self
                .purged_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    /// The owner value stored for `owner` writing to `namespace`.
    fn owner_in(&self, owner: &str, namespace: &str) -> String {
        if !namespace.is_empty() && self.config.shared_namespaces.iter().any(|s| s == namespace) {
            SHARED.into()
        } else {
            scope_of(owner)
        }
    }

    /// Creates a memory, or updates the caller's memory `new.id`; returns it.
    pub fn store(&self, owner: &str, new: NewMemory) -> Result<Memory> {
        let text = new.text.trim_end().to_string();
        if text.trim().is_empty() {
            return Err(MemoryError::Invalid(
                "`text` is empty: give what to remember".into(),
            ));
        }
        self.check_size(&text)?;
        let title = new.title.unwrap_or_default().trim().to_string();
        if title.len() > MAX_TITLE_LEN {
            return Err(MemoryError::Invalid(format!(
                "the title is {} bytes; a title has at most {MAX_TITLE_LEN}",
                title.len()
            )));
        }
        let tags = stored_tags(&checked_tags(&new.tags)?);
        let namespace = checked_namespace(new.namespace.as_deref())?;
        let stored_owner = self.owner_in(owner, &namespace);
        let now = self.now();
        let expires = match new.ttl_ms {
            Some(ttl) if ttl <= 0 => {
                return Err(MemoryError::Invalid(
                    "`ttl` must be a positive duration such as `7d` or `12h`".into(),
                ));
            }
            Some(ttl) => Some(now.saturating_add(ttl)),
            None => None,
        };
        let max_owner = self.config.max_owner_bytes;
        let deleted_days = self.config.deleted_days;
        let purge_now = self.purge_due(now);
        let scope = scope_of(owner);
        let update = new.id;
        self.write(Box::new(move |db| {
            if purge_now {
                purge(db, now, deleted_days)?;
            }
            let Some(id) = &update else {
                if let Err(e) = check_room(db, &stored_owner, text.len() as i64, max_owner)? {
                    return Ok(Err(e));
                }
                let memory = row_memory(&db.query_one(
                    &format!(
                        "INSERT INTO memories (id, owner, namespace, kind, title, text, tags,
                         created_ms, updated_ms, expires_ms)
                         VALUES (?1, ?2, ?3, 'note', ?4, ?5, ?6, ?7, ?7, ?8) RETURNING {COLUMNS}"
                    ),
                    args![
                        new_id("m"),
                        &stored_owner,
                        &namespace,
                        &title,
                        &text,
                        &tags,
                        now,
                        expires
                    ],
                )?)?;
                return Ok(Ok(memory));
            };
            // The caller's own or a shared one, whatever `namespace` says.
            let found = db.query_opt(
                &format!(
                    "SELECT n, {} FROM memories WHERE id = ?1 AND owner IN (?2, '{SHARED}')",
                    bytes_of(db.dialect(), "text")
                ),
                args![id, &scope],
            )?;
            let Some(found) = found else {
                return Ok(Err(not_found(id)));
            };
            let (n, old_len) = (found.int(0)?, found.int(1)?);
            if let Err(e) = check_room(db, &stored_owner, text.len() as i64 - old_len, max_owner)? {
                return Ok(Err(e));
            }
            let memory = row_memory(&db.query_one(
                &format!(
                    "UPDATE memories SET title = ?2, text = ?3, tags = ?4, updated_ms = ?5,
                     expires_ms = ?6, deleted_ms = NULL WHERE n = ?1 RETURNING {COLUMNS}"
                ),
                args![n, &title, &text, &tags, now, expires],
            )?)?;
            Ok(Ok(memory))
        }))
    }

    fn check_size(&self, text: &str) -> Result<()> {
        if text.len() as u64 > self.config.max_bytes {
            return Err(MemoryError::Invalid(format!(
                "the text is {} bytes; one memory holds at most {} ([memory] max_bytes): store the \
                 gist, or split it into several memories",
                text.len(),
                self.config.max_bytes
            )));
        }
        Ok(())
    }

    /// The caller's memory `id`, deleted or archived ones included (they say so).
    pub fn get(&self, owner: &str, id: &str) -> Result<Memory> {
        let scope = scope_of(owner);
        self.store
            .db(|db| {
                db.query_opt(
                    &format!(
                        "SELECT {COLUMNS} FROM memories WHERE id = ?1 AND owner IN (?2, '{SHARED}')"
                    ),
                    args![id, &scope],
                )?
                .as_ref()
                .map(row_memory)
                .transpose()
            })?
            .ok_or_else(|| not_found(id))
    }

    /// Full-text search among the caller's present memories, best first.
    pub fn search(&self, owner: &str, search: &Search) -> Result<Vec<Found>> {
        let expr = fts_query(&search.query).map_err(|e| MemoryError::Invalid(e.to_string()))?;
        let tags = checked_tags(&search.tags)?;
        let namespace = match search.namespace.as_deref() {
            Some(ns) => Some(checked_namespace(Some(ns))?),
            None => None,
        };
        let limit = search.limit.clamp(1, MAX_PAGE);
        let scope = scope_of(owner);
        let now = self.now();
        let dialect = self.store.dialect();
        // ?1 scope, ?2 now, ?3 namespace, ?4 since, ?5 limit; the query's own from ?6.
        let mut params: Vec<SqlValue> = vec![
            scope.into(),
            now.into(),
            namespace.into(),
            search.since_ms.into(),
            limit.into(),
        ];
        let conditions = format!(
            "m.owner IN (?1, '{SHARED}') AND {}
               AND (CAST(?3 AS TEXT) IS NULL OR m.namespace = ?3)
               AND (CAST(?4 AS BIGINT) IS NULL OR m.updated_ms >= ?4)",
            live(2)
        );
        let sql = match dialect {
            Dialect::Sqlite => {
                params.push(expr.into());
                // The newest RANKED of the caller's matches: where more match, only those
                // are ranked (BM25 costs about a microsecond a match, and a word in nearly
                // every memory matches them all). Walking the index newest first to find
                // them costs little; fewer matches, and every one is ranked.
                let mut newest = format!(
                    "SELECT f.rowid FROM memories_fts f CROSS JOIN memories m ON m.n = f.rowid
                     WHERE f.memories_fts MATCH ?6 AND {conditions}"
                );
                tag_filter(dialect, &tags, &mut newest, &mut params);
                // CROSS JOIN: the index leads, so that the rowid bound narrows its walk
                // (led by `memories`, each row would be a MATCH of its own).
                let mut sql = format!(
                    "SELECT m.id, m.title, m.namespace, m.tags, m.updated_ms,
                            bm25(memories_fts, 4.0, 1.0, 2.0) AS rank,
                            snippet(memories_fts, 1, '**', '**', '…', 24)
                     FROM memories_fts CROSS JOIN memories m ON m.n = memories_fts.rowid
                     WHERE memories_fts MATCH ?6 AND {conditions}
                       AND memories_fts.rowid >= coalesce(({newest} ORDER BY f.rowid DESC
                                                           LIMIT 1 OFFSET {}), 0)",
                    RANKED - 1
                );
                tag_filter(dialect, &tags, &mut sql, &mut params);
                sql.push_str(" ORDER BY rank LIMIT ?5");
                sql
            }
            Dialect::Postgres => {
                let (query, values) = query::ts_query(&search.query, params.len() + 1)
                    .map_err(|e| MemoryError::Invalid(e.to_string()))?;
                params.extend(values.into_iter().map(SqlValue::from));
                // As on SQLite: the newest RANKED of the caller's matches are ranked.
                let mut newest =
                    format!("SELECT m.n FROM memories m WHERE m.tsv @@ {query} AND {conditions}");
                tag_filter(dialect, &tags, &mut newest, &mut params);
                let mut ranked = format!(
                    "SELECT m.n, ts_rank_cd(m.tsv, {query}, 1) AS rank FROM memories m
                     WHERE m.tsv @@ {query} AND {conditions}
                       AND m.n >= coalesce(({newest} ORDER BY m.n DESC LIMIT 1 OFFSET {}), 0)",
                    RANKED - 1
                );
                tag_filter(dialect, &tags, &mut ranked, &mut params);
                ranked.push_str(" ORDER BY rank DESC, m.n DESC LIMIT ?5");
                // The snippets of the page only, after the ranking.
                format!(
                    "SELECT m.id, m.title, m.namespace, m.tags, m.updated_ms,
                            CAST(-r.rank AS DOUBLE PRECISION),
                            ts_headline('english', m.text, {query},
                                        'StartSel=**, StopSel=**, MaxWords=24, MinWords=8, MaxFragments=1, FragmentDelimiter=…')
                     FROM ({ranked}) r JOIN memories m ON m.n = r.n ORDER BY r.rank DESC, m.n DESC"
                )
            }
        };
        self.store
            .db(|db| {
                db.query(&sql, &params)?
                    .iter()
                    .map(|r| {
                        Ok(Found {
                            id: r.text(0)?,
                            title: r.text(1)?,
                            namespace: r.text(2)?,
                            tags: tag_list(&r.text(3)?),
                            updated_ms: r.int(4)?,
                            score: (-r.real(5)? * 1000.0).round() / 1000.0,
                            snippet: r.text(6)?,
                        })
                    })
                    .collect::<std::result::Result<Vec<_>, StoreError>>()
            })
            .map_err(|e| match e {
                // The query is built from quoted terms, so the engine cannot refuse its
                // syntax; anything it still says is about the query, not the database.
                StoreError::Sql(e) if e.to_string().contains("fts5") => MemoryError::Invalid(
                    format!("the search could not run ({e}); search for plain words instead"),
                ),
                StoreError::Db(e) if e.contains("tsquery") => MemoryError::Invalid(format!(
                    "the search could not run ({e}); search for plain words instead"
                )),
                e => MemoryError::Store(e),
            })
    }

    /// The caller's present memories, newest first, a page at a time; the cursor of the
    /// next page when there is one.
    pub fn list(
        &self,
        owner: &str,
        namespace: Option<&str>,
        tags: &[String],
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Memory>, Option<String>)> {
        let tags = checked_tags(tags)?;
        let namespace = match namespace {
            Some(ns) => Some(checked_namespace(Some(ns))?),
            None => None,
        };
        let (before_ms, before_n) = match cursor {
            None => (i64::MAX, i64::MAX),
            Some(cursor) => parse_cursor(cursor)?,
        };
        let limit = limit.clamp(1, MAX_PAGE);
        let scope = scope_of(owner);
        let now = self.now();
        let mut params: Vec<SqlValue> = vec![
            scope.into(),
            now.into(),
            namespace.into(),
            before_ms.into(),
            before_n.into(),
            (limit + 1).into(),
        ];
        let mut sql = format!(
            "SELECT {COLUMNS}, n FROM memories m
             WHERE m.owner IN (?1, '{SHARED}') AND {}
               AND (CAST(?3 AS TEXT) IS NULL OR m.namespace = ?3)
               AND (m.updated_ms < ?4 OR (m.updated_ms = ?4 AND m.n < ?5))",
            live(2)
        );
        tag_filter(self.store.dialect(), &tags, &mut sql, &mut params);
        sql.push_str(" ORDER BY m.updated_ms DESC, m.n DESC LIMIT ?6");
        let rows = self.store.db(|db| {
            db.query(&sql, &params)?
                .iter()
                .map(|r| Ok((row_memory(r)?, r.int(11)?)))
                .collect::<std::result::Result<Vec<_>, StoreError>>()
        })?;
        let more = rows.len() > limit;
        let mut page: Vec<(Memory, i64)> = rows;
        page.truncate(limit);
        let next = more
            .then(|| page.last().map(|(m, n)| format!("{}:{n}", m.updated_ms)))
            .flatten();
        Ok((page.into_iter().map(|(m, _)| m).collect(), next))
    }

    /// Deletes the caller's memory `id` (restorable for `[memory] deleted_days`).
    pub fn delete(&self, owner: &str, id: &str) -> Result<Memory> {
        let scope = scope_of(owner);
        let now = self.now();
        let changed = self.store.db(|db| {
            db.execute(
                &format!(
                    "UPDATE memories SET deleted_ms = ?3 WHERE id = ?1 AND owner IN (?2, '{SHARED}')
                     AND deleted_ms IS NULL"
                ),
                args![id, &scope, now],
            )
        })?;
        let memory = self.get(owner, id)?;
        if changed == 0 && memory.deleted_ms.is_none() {
            return Err(not_found(id));
        }
        Ok(memory)
    }

    /// Brings back the caller's deleted or compacted memory `id`.
    pub fn restore(&self, owner: &str, id: &str) -> Result<Memory> {
        let memory = self.get(owner, id)?;
        if memory.deleted_ms.is_none() && memory.archived_in.is_none() {
            return Err(MemoryError::Conflict(format!(
                "memory `{id}` is not deleted or compacted: there is nothing to restore"
            )));
        }
        let scope = scope_of(owner);
        self.store.db(|db| {
            db.execute(
                &format!(
                    "UPDATE memories SET deleted_ms = NULL, archived_in = NULL
                     WHERE id = ?1 AND owner IN (?2, '{SHARED}')"
                ),
                args![id, &scope],
            )?;
            Ok(())
        })?;
        self.get(owner, id)
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `batch` in one transaction and hands out the outcomes. When the database fails a
/// job, the batch is rolled back and each job run again in a transaction of its own, so
/// that only the failing one fails.
fn commit_batch(store: &StateStore, batch: Vec<Pending>) {
    let (jobs, dones): (Vec<WriteJob>, Vec<_>) = batch.into_iter().map(|p| (p.job, p.done)).unzip();
    let together = store.tx(|db| {
        serialize(db, locks::MEMORY)?;
        jobs.iter()
            .map(|job| job(db))
            .collect::<std::result::Result<Vec<_>, StoreError>>()
    });
    let outcomes = match together {
        Ok(outcomes) => outcomes,
        Err(e) if jobs.len() == 1 => vec![Err(MemoryError::from(e))],
        Err(_) => jobs
            .iter()
            .map(|job| {
                store
                    .tx(|db| {
                        serialize(db, locks::MEMORY)?;
                        job(db)
                    })
                    .unwrap_or_else(|e| Err(e.into()))
            })
            .collect(),
    };
    for (done, outcome) in dones.into_iter().zip(outcomes) {
        let _ = done.send(outcome);
    }
}

/// Adds the tag conditions of a search or list to `sql`: the stored tag list (` a b `) holds
/// ` tag ` for each tag, whose value is pushed to `params`.
fn tag_filter(dialect: Dialect, tags: &[String], sql: &mut String, params: &mut Vec<SqlValue>) {
    let position = match dialect {
        Dialect::Sqlite => "instr",
        Dialect::Postgres => "strpos",
    };
    for tag in tags {
        params.push(SqlValue::from(format!(" {tag} ")));
        sql.push_str(&format!(" AND {position}(m.tags, ?{}) > 0", params.len()));
    }
}

fn parse_cursor(cursor: &str) -> Result<(i64, i64)> {
    cursor
        .split_once(':')
        .and_then(|(ms, n)| Some((ms.parse().ok()?, n.parse().ok()?)))
        .ok_or_else(|| {
            MemoryError::Invalid(format!(
                "cursor `{}` is not one this list gave: pass the `next_cursor` of the previous page",
                cursor.chars().take(40).collect::<String>()
            ))
        })
}

fn not_found(id: &str) -> MemoryError {
    MemoryError::NotFound(format!(
        "no memory `{}` of yours; memory_search or memory_list shows their ids",
        id.chars().take(80).collect::<String>()
    ))
}

/// Refuses `more` bytes for `owner` past `max`.
fn check_room(
    db: &mut dyn Db,
    owner: &str,
    more: i64,
    max: u64,
) -> std::result::Result<Result<()>, StoreError> {
    if more <= 0 {
        return Ok(Ok(()));
    }
    let used = db
        .query_opt(
            "SELECT bytes FROM memory_usage WHERE owner = ?1",
            args![owner],
        )?
        .map(|r| r.int(0))
        .transpose()?
        .unwrap_or(0);
    if (used + more) as u64 > max {
        return Ok(Err(MemoryError::Conflict(format!(
            "your memories hold {used} bytes, and {more} more would pass the {max} allowed \
             ([memory] max_owner_bytes): delete or compact some (memory_delete, \
             memory_compact_summary)"
        ))));
    }
    Ok(Ok(()))
}

/// Removes memories deleted more than `days` ago and those expired as long ago.
fn purge(db: &mut dyn Db, now: i64, days: u64) -> std::result::Result<(), StoreError> {
    let cutoff = now.saturating_sub((days as i64).saturating_mul(86_400_000));
    // Two statements, each on its partial index: an OR of the two would scan the table.
    db.execute(
        "DELETE FROM memories WHERE deleted_ms IS NOT NULL AND deleted_ms < ?1",
        args![cutoff],
    )?;
    db.execute(
        "DELETE FROM memories WHERE expires_ms IS NOT NULL AND expires_ms < ?1",
        args![cutoff],
    )?;
    Ok(())
}

impl Memory {
    /// The memory as JSON for a structured result.
    pub fn to_json(&self) -> Value {
        json!(self)
    }
}

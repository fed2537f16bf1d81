//! What outlives a restart of the server: REST jobs, and the sequence their events are
//! numbered from.
//!
//! Job ids come from SQLite (`AUTOINCREMENT` never reuses one), so a client polling its job
//! after a restart never reads another caller's. Each server that runs jobs registers an
//! [`Instance`], holding a lock file for as long as it lives; a job left `running` by an
//! instance whose lock nobody holds any more was cut off by a crash or a kill, and the
//! next server marks it failed. The lock is the kernel's, so this holds across processes
//! and PID namespaces. Event ids are handed out in blocks reserved in the database, so
//! they only ever increase, across restarts and across servers sharing one data dir.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::store::db::{Dialect, Row, args};
use crate::store::{StateStore, StoreError};

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    /// Its number (the id is `job-N`).
    pub n: u64,
    /// The tool.
    pub tool: String,
    /// The owner it runs as.
    pub owner: String,
    /// `running`, `succeeded`, `failed` or `cancelled`.
    pub state: String,
    /// When it was created (ms since the epoch).
    pub created_ms: u64,
    /// When it ended.
    pub finished_ms: Option<u64>,
    /// Progress reports received.
    pub progress_count: u64,
    /// The last progress reports kept (a JSON array).
    pub progress: Value,
    /// The result, once it succeeded.
    pub result: Option<Value>,
    /// The error, once it failed or was cancelled.
    pub error: Option<Value>,
}

/// How a job ended, for [`StateStore::job_finish`].
#[derive(Debug, Clone, Copy)]
pub struct JobEnd<'a> {
    /// `succeeded`, `failed` or `cancelled`.
    pub state: &'a str,
    /// When.
    pub finished_ms: u64,
    /// Progress reports received.
    pub progress_count: u64,
    /// The last progress reports kept.
    pub progress: &'a Value,
    /// The result.
    pub result: Option<&'a Value>,
    /// The error.
    pub error: Option<&'a Value>,
}

fn json_column(text: Option<String>) -> Option<Value> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

const COLUMNS: &str =
    "n, tool, owner, state, created_ms, finished_ms, progress_count, progress, result, error";

fn row(r: &Row) -> Result<JobRow, StoreError> {
    let n = r.int(0)?;
    let created = r.int(4)?;
    let finished = r.opt_int(5)?;
    let count = r.int(6)?;
    Ok(JobRow {
        n: u64::try_from(n).unwrap_or(0),
        tool: r.text(1)?,
        owner: r.text(2)?,
        state: r.text(3)?,
        created_ms: u64::try_from(created).unwrap_or(0),
        finished_ms: finished.map(|f| u64::try_from(f).unwrap_or(0)),
        progress_count: u64::try_from(count).unwrap_or(0),
        progress: json_column(r.opt_text(7)?).unwrap_or(Value::Array(Vec::new())),
        result: json_column(r.opt_text(8)?),
        error: json_column(r.opt_text(9)?),
    })
}

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl StateStore {
    /// Records a new running job of `instance`; returns its number.
    pub fn job_create(
        &self,
        tool: &str,
        owner: &str,
        created_ms: u64,
        instance: &str,
    ) -> Result<u64, StoreError> {
        self.db(|db| {
            let n = db
                .query_one(
                    "INSERT INTO jobs (tool, owner, state, created_ms, instance)
                     VALUES (?1, ?2, 'running', ?3, ?4) RETURNING n",
                    args![tool, owner, ms(created_ms), instance],
                )?
                .int(0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    /// Records how job `n` ended.
    pub fn job_finish(&self, n: u64, end: JobEnd<'_>) -> Result<(), StoreError> {
        let text = |v: Option<&Value>| v.map(Value::to_string);
        self.db(|db| {
            db.execute(
                "UPDATE jobs SET state = ?2, finished_ms = ?3, progress_count = ?4, progress = ?5,
                 result = ?6, error = ?7 WHERE n = ?1",
                args![
                    ms(n),
                    end.state,
                    ms(end.finished_ms),
                    ms(end.progress_count),
                    end.progress.to_string(),
                    text(end.result),
                    text(end.error)
                ],
            )?;
            Ok(())
        })
    }

    /// Job `n`, if it is kept.
    pub fn job_get(&self, n: u64) -> Result<Option<JobRow>, StoreError> {
        self.db(|db| {
            db.query_opt(
                &format!("SELECT {COLUMNS} FROM jobs WHERE n = ?1"),
                args![ms(n)],
            )?
            .as_ref()
            .map(row)
            .transpose()
        })
    }

    /// The kept jobs, oldest first, optionally of one owner and in one state, at most
    /// `limit`.
    pub fn job_list(
        &self,
        owner: Option<&str>,
        state: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JobRow>, StoreError> {
        self.db(|db| {
            db.query(
                &format!(
                    "SELECT {COLUMNS} FROM jobs WHERE (CAST(?1 AS TEXT) IS NULL OR owner = ?1)
                     AND (CAST(?2 AS TEXT) IS NULL OR state = ?2) ORDER BY n LIMIT ?3"
                ),
                args![owner, state, limit],
            )?
            .iter()
            .map(row)
            .collect()
        })
    }

    /// Removes ended jobs that ended before `ended_before_ms`, then the oldest ended jobs
    /// past `max_rows` kept in all.
    pub fn job_sweep(&self, ended_before_ms: u64, max_rows: usize) -> Result<(), StoreError> {
        self.db(|db| {
            db.execute(
                "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND finished_ms < ?1",
                args![ms(ended_before_ms)],
            )?;
            let greatest = match db.dialect() {
                Dialect::Sqlite => "max",
                Dialect::Postgres => "greatest",
            };
            db.execute(
                &format!(
                    "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND n IN (
                       SELECT n FROM jobs WHERE finished_ms IS NOT NULL ORDER BY n
                       LIMIT {greatest}(0, (SELECT count(*) FROM jobs) - ?1))"
                ),
                args![max_rows],
            )?;
            Ok(())
        })
    }

    /// How many jobs are kept in each state.
    pub fn job_counts(&self) -> Result<Vec<(String, usize)>, StoreError> {
        self.db(|db| {
            db.query("SELECT state, count(*) FROM jobs GROUP BY state", args![])?
                .iter()
                .map(|r| Ok((r.text(0)?, usize::try_from(r.int(1)?).unwrap_or(0))))
                .collect()
        })
    }

    /// Marks failed every job left running by an instance that is gone (its lock file in
    /// `instances` is held by no one), other than `me`; returns those jobs as they are now.
    pub fn jobs_interrupt(
        &self,
        instances: &Path,
        me: &str,
        error: &Value,
        now_ms: u64,
    ) -> Result<Vec<JobRow>, StoreError> {
        let owners: Vec<String> = self.db(|db| {
            db.query(
                "SELECT DISTINCT instance FROM jobs WHERE state = 'running'",
                args![],
            )?
            .iter()
            .map(|r| r.text(0))
            .collect()
        })?;
        // With a shared database, other machines' instances are in the table too: only
        // this machine's (whose lock files are here) can be judged gone.
        let shared = self.dialect() == Dialect::Postgres;
        let mut interrupted = Vec::new();
        for instance in owners.iter().filter(|i| i.as_str() != me) {
            if Instance::alive(instances, instance)
                || (shared && !Instance::lock_path(instances, instance).exists())
            {
                continue;
            }
            let rows = self.db(|db| {
                db.query(
                    &format!(
                        "UPDATE jobs SET state = 'failed', finished_ms = ?2, error = ?3
                         WHERE instance = ?1 AND state = 'running' RETURNING {COLUMNS}"
                    ),
                    args![instance, ms(now_ms), error.to_string()],
                )?
                .iter()
                .map(row)
                .collect::<Result<Vec<_>, _>>()
            })?;
            let _ = std::fs::remove_file(Instance::lock_path(instances, instance));
            interrupted.extend(rows);
        }
        Ok(interrupted)
    }

    /// Reserves the next `block` numbers of the sequence `name`: returns the first. The
    /// numbers start at 1 and only ever increase, whoever reserves them.
    pub fn reserve_sequence(&self, name: &str, block: u64) -> Result<u64, StoreError> {
        // One statement, atomic in both engines: the row holds the next free number.
        self.db(|db| {
            let first = db
                .query_one(
                    "INSERT INTO sequences (name, value) VALUES (?1, 1 + ?2)
                     ON CONFLICT (name) DO UPDATE SET value = sequences.value + ?2
                     RETURNING value - ?2",
                    args![name, ms(block)],
                )?
                .int(0)?;
            Ok(u64::try_from(first).unwrap_or(1))
        })
    }
}

fn stored_event(r: &Row) -> Result<StoredEvent, StoreError> {
    Ok(StoredEvent {
        id: u64::try_from(r.int(0)?).unwrap_or(0),
        kind: r.text(1)?,
        time_ms: u64::try_from(r.int(2)?).unwrap_or(0),
        job_id: r.opt_text(3)?,
        owner: r.opt_text(4)?,
        data: serde_json::from_str(&r.text(5)?).unwrap_or(Value::Null),
    })
}

/// The most events kept in the store for resuming streams; older ones are removed.
pub const MAX_STORED_EVENTS: u64 = 10_000;

/// An event of the live log as stored, so a stream resumes across a restart.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its id (from the `events` sequence).
    pub id: u64,
    /// `job.finished`, `process.exited`…
    pub kind: String,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The job, for job events.
    pub job_id: Option<String>,
    /// Whose it is; `None`: everyone's.
    pub owner: Option<String>,
    /// Its fields.
    pub data: Value,
}

impl StateStore {
    /// Keeps an event for streams that resume after a restart; the oldest beyond
    /// [`MAX_STORED_EVENTS`] are removed (every hundredth id looks).
    pub fn append_event(&self, event: &StoredEvent) -> Result<(), StoreError> {
        self.append_events(std::slice::from_ref(event))
    }

    /// Keeps `events` in one transaction; the oldest beyond [`MAX_STORED_EVENTS`] are
    /// removed when the batch holds an id that is a multiple of 100.
    pub fn append_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        self.tx(|db| {
            for event in events {
                let data = serde_json::to_string(&event.data).unwrap_or_else(|_| "null".into());
                db.execute(
                    "INSERT INTO events (id, kind, time_ms, job_id, owner, data)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (id) DO UPDATE SET kind = excluded.kind,
                       time_ms = excluded.time_ms, job_id = excluded.job_id,
                       owner = excluded.owner, data = excluded.data",
                    args![
                        ms(event.id),
                        &event.kind,
                        ms(event.time_ms),
                        &event.job_id,
                        &event.owner,
                        data
                    ],
                )?;
            }
            if events.iter().any(|e| e.id.is_multiple_of(100)) {
                db.execute(
                    "DELETE FROM events WHERE id <= (SELECT MAX(id) FROM events) - ?1",
                    args![ms(MAX_STORED_EVENTS)],
                )?;
            }
            Ok(())
        })?;
        // The other toolsheds on a shared database put them in their streams.
        #[cfg(feature = "postgres")]
        if self.dialect() == Dialect::Postgres {
            self.db(|db| {
                for event in events {
                    crate::store::postgres::notify_event(db, event.id, self.me())?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Stored event `id`, if it is kept.
    pub fn stored_event(&self, id: u64) -> Result<Option<StoredEvent>, StoreError> {
        self.db(|db| {
            db.query_opt(
                "SELECT id, kind, time_ms, job_id, owner, data FROM events WHERE id = ?1",
                args![ms(id)],
            )?
            .as_ref()
            .map(stored_event)
            .transpose()
        })
    }

    /// The latest `limit` stored events, oldest first.
    pub fn recent_events(&self, limit: usize) -> Result<Vec<StoredEvent>, StoreError> {
        self.db(|db| {
            db.query(
                "SELECT id, kind, time_ms, job_id, owner, data FROM
                   (SELECT * FROM events ORDER BY id DESC LIMIT ?1) AS latest ORDER BY id",
                args![limit],
            )?
            .iter()
            .map(stored_event)
            .collect()
        })
    }
}

/// One running server's claim on its jobs: a lock file held for as long as it lives.
#[derive(Debug)]
pub struct Instance {
    id: String,
    /// The lock file and where it is.
    lock: Option<(PathBuf, File)>,
}

impl Instance {
    /// A new instance with its lock in `dir` (created if missing). Without a usable `dir`
    /// (an in-memory store) the instance still has an id, and its jobs are simply never
    /// judged by another process.
    pub fn register(dir: Option<&Path>) -> Self {
        let id = crate::kit::process_tag();
        let lock = dir.and_then(|dir| {
            std::fs::create_dir_all(dir).ok()?;
            let path = Self::lock_path(dir, &id);
            let file = File::create(&path).ok()?;
            try_lock(&file).then_some((path, file))
        });
        Self { id, lock }
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn lock_path(dir: &Path, id: &str) -> PathBuf {
        // Ids are ours (pid and hex); anything else in the column cannot name a path.
        let safe: String = id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        dir.join(format!("{safe}.lock"))
    }

    /// Whether the instance `id` still holds its lock.
    fn alive(dir: &Path, id: &str) -> bool {
        let Ok(file) = File::open(Self::lock_path(dir, id)) else {
            return false;
        };
        !try_lock(&file)
    }
}

/// Takes an exclusive `flock` on `file` if no one holds one.
fn try_lock(file: &File) -> bool {
    rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some((path, _)) = &self.lock {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_only_increase_whoever_reserves() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let a = StateStore::open(&path).unwrap();
        let b = StateStore::open(&path).unwrap();
        assert_eq!(a.reserve_sequence("events", 100).unwrap(), 1);
        assert_eq!(b.reserve_sequence("events", 100).unwrap(), 101);
        drop((a, b));
        let c = StateStore::open(&path).unwrap();
        assert_eq!(c.reserve_sequence("events", 10).unwrap(), 201);
        assert_eq!(c.reserve_sequence("other", 10).unwrap(), 1);
    }

    #[test]
    fn only_jobs_of_instances_that_are_gone_are_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::open(&dir.path().join("state.db")).unwrap();
        let instances = dir.path().join("instances");
        let live = Instance::register(Some(&instances));
        let dead = Instance::register(Some(&instances));
        let me = Instance::register(Some(&instances));
        let a = store.job_create("t", "o", 1, live.id()).unwrap();
        let b = store.job_create("t", "o", 1, dead.id()).unwrap();
        let c = store.job_create("t", "o", 1, me.id()).unwrap();
        assert!(a < b && b < c);
        let dead_id = dead.id().to_string();
        drop(dead);
        // A job left by an instance whose lock file is gone entirely counts as dead too.
        let gone = store.job_create("t", "o", 1, "12345-abc").unwrap();
        let error = serde_json::json!({"message": "interrupted"});
        let rows = store
            .jobs_interrupt(&instances, me.id(), &error, 9)
            .unwrap();
        let mut numbers: Vec<u64> = rows.iter().map(|r| r.n).collect();
        numbers.sort();
        assert_eq!(numbers, vec![b, gone], "{dead_id}");
        assert_eq!(store.job_get(b).unwrap().unwrap().state, "failed");
        assert_eq!(store.job_get(b).unwrap().unwrap().error, Some(error));
        assert_eq!(store.job_get(a).unwrap().unwrap().state, "running");
        assert_eq!(store.job_get(c).unwrap().unwrap().state, "running");
        // Deleted rows never give their number back.
        store.job_sweep(u64::MAX, 0).unwrap();
        assert!(store.job_create("t", "o", 1, me.id()).unwrap() > gone);
    }
}

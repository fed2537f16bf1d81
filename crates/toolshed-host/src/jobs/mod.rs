//! Calls that outlive their request: a REST `execute` with `async: true`, and an MCP
//! `tools/call` that became a task (the Tasks extension). Both are jobs, the same objects:
//! a task started over MCP is listed by `GET /jobs`, a REST job read by `tasks/get` for its
//! owner. The job's state, progress and result are kept until `retention` after it ends.
//!
//! Jobs live in the state store (see `toolshed_host::job_store`), so their ids never
//! repeat and a finished job can still be read after the server restarts. A job that was
//! running when its server died is marked failed ("interrupted by a restart") by the next
//! server to start on the same data dir, with a `job.failed` event. This server's running
//! jobs are also held in memory, for their progress and cancellation.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument as _;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolshed_core::{OwnerId, Progress, ProgressSink, ToolOutput};

use crate::job_store::{Instance, JobEnd};

mod input;
mod schedules;
mod view;

use crate::{CallRequest, CallResult, Host, StateStore};
pub use view::{JobState, JobView};

/// Where a job's events go (`job.started`, `job.progress`, `job.finished`, `job.failed`,
/// `job.cancelled`): the REST API's event log when a server runs, nowhere otherwise.
pub trait JobEvents: Send + Sync {
    /// Publishes one event of job `id` (or of none) and `owner`.
    fn publish(&self, kind: &str, id: Option<&str>, owner: Option<&str>, data: Value);
}

/// Events nobody hears: a toolshed with no event log (`toolshed mcp` over stdio).
struct Unheard;

impl JobEvents for Unheard {
    fn publish(&self, _: &str, _: Option<&str>, _: Option<&str>, _: Value) {}
}

/// Why a job could not be started, read or cancelled; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Too many jobs run (the owner's, or the server's): wait for one or cancel one.
    TooMany(String),
    /// No such job (or one the caller may not see).
    NotFound(String),
    /// The job runs in another toolshed, which alone can stop it.
    Conflict(String),
    /// The job has already ended: nothing to stop.
    Ended(String),
    /// The toolshed is shutting down: no job starts.
    Closing(String),
    /// The state store failed.
    Internal(String),
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooMany(m)
            | Self::NotFound(m)
            | Self::Conflict(m)
            | Self::Ended(m)
            | Self::Closing(m)
            | Self::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for JobError {}

/// The error a job that a stopped server left running ends with.
pub const INTERRUPTED: &str = "interrupted: the toolshed running this job stopped before it ended; start it again if it is still needed";

/// The error of a job whose toolshed stopped before it ended (`details.interrupted`).
fn interrupted_error() -> Value {
    json!({"kind": "failed", "message": INTERRUPTED, "details": {"interrupted": true}})
}

/// Whether a job's error says its toolshed stopped under it.
pub fn was_interrupted(error: &Value) -> bool {
    error["details"]["interrupted"] == Value::Bool(true)
        || error["message"].as_str() == Some(INTERRUPTED)
}

/// How often a running job's progress is announced at most (all of it is kept).
const PROGRESS_EVENT_EVERY_MS: u64 = 250;

/// How often, at most, the jobs of stopped toolsheds are looked for after the start.
const ORPHAN_CHECK_EVERY: Duration = Duration::from_secs(2);

/// A call's output as a job keeps it (and `execute` answers it).
pub fn output_json(result: &CallResult, output: &ToolOutput) -> Value {
    json!({
        "call_id": result.call_id.0,
        "plugin_id": result.plugin_id,
        "is_error": output.is_error,
        "content": output.content,
        "structured": output.structured,
        "duration_ms": u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
    })
}

/// Progress reports kept per running job (the most recent).
pub const KEPT_PROGRESS: usize = 100;

/// Progress reports kept once a job has ended (its result holds the output).
pub const KEPT_PROGRESS_FINISHED: usize = 5;

/// The longest progress message kept or sent; longer ones are cut.
pub const MAX_PROGRESS_MESSAGE: usize = 4096;

/// How long a cancel waits for the job to end, so that its reply says how it ended.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// A job this server runs now.
struct Job {
    view: JobView,
    progress: VecDeque<Progress>,
    cancel: CancellationToken,
    /// Cancelled by the server stopping, not by a caller.
    by_shutdown: bool,
    /// When its progress was last announced.
    announced_ms: u64,
    /// Its questions waiting for `tasks/update` (key → where the answer goes).
    waiting: BTreeMap<String, tokio::sync::oneshot::Sender<Value>>,
    /// The next question's key.
    asked: u64,
}

/// Every job of the server.
pub struct Jobs {
    /// This server's running jobs.
    running: Mutex<BTreeMap<u64, Job>>,
    /// Wakes [`Jobs::drain`] when a job ends.
    ended: tokio::sync::Notify,
    store: Arc<StateStore>,
    instance: Instance,
    retention: Duration,
    max_jobs: usize,
    /// The most running jobs of one owner (sub-owners counted as it).
    max_per_owner: usize,
    /// Held while a job is admitted: counted and recorded as one step.
    admission: Mutex<()>,
    events: std::sync::RwLock<Arc<dyn JobEvents>>,
    /// Jobs of stopped servers failed at start (id, owner), announced once events are heard.
    orphans: Mutex<Vec<(String, String)>>,
    /// Whether events are heard ([`Jobs::set_events`]).
    heard: std::sync::atomic::AtomicBool,
    /// Where other toolsheds' instance locks are (none for an in-memory store).
    instances: Option<std::path::PathBuf>,
    /// When the jobs of stopped toolsheds were last looked for.
    orphans_checked: Mutex<Option<std::time::Instant>>,
    /// Set once the toolshed stops: no job is admitted any more.
    closing: std::sync::atomic::AtomicBool,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn number(id: &str) -> Option<u64> {
    id.strip_prefix("job-")?.parse().ok()
}

impl Jobs {
    /// A job table in `host`'s state store, keeping finished jobs for `retention` and at
    /// most `max_jobs` in all. Jobs that a server which is gone left running are marked
    /// failed now.
    pub fn new(host: &Host, retention: Duration, max_jobs: usize) -> Self {
        let store = host.store().clone();
        let instances = (store.path() != std::path::Path::new(":memory:"))
            .then(|| host.data_dir().join("instances"));
        let jobs = Self {
            running: Mutex::new(BTreeMap::new()),
            ended: tokio::sync::Notify::new(),
            instance: Instance::register(instances.as_deref()),
            store,
            retention,
            max_jobs: max_jobs.max(1),
            max_per_owner: usize::MAX,
            admission: Mutex::new(()),
            events: std::sync::RwLock::new(Arc::new(Unheard)),
            orphans: Mutex::new(Vec::new()),
            heard: std::sync::atomic::AtomicBool::new(false),
            instances: instances.clone(),
            orphans_checked: Mutex::new(None),
            closing: std::sync::atomic::AtomicBool::new(false),
        };
        if let Some(dir) = &instances {
            jobs.interrupt_orphans(dir);
        }
        jobs
    }

    /// Where job events go from now on; the jobs failed at start as their server had
    /// stopped are announced there first.
    pub fn set_events(&self, events: Arc<dyn JobEvents>) {
        *self.events.write().unwrap_or_else(|p| p.into_inner()) = events;
        let orphans = {
            let mut orphans = self.orphans.lock().unwrap_or_else(|p| p.into_inner());
            self.heard.store(true, std::sync::atomic::Ordering::SeqCst);
            std::mem::take(&mut *orphans)
        };
        let error = interrupted_error();
        for (id, owner) in orphans {
            self.publish(
                "job.failed",
                Some(&id),
                Some(&owner),
                json!({"error": error, "duration_ms": null, "interrupted": true}),
            );
        }
    }

    fn publish(&self, kind: &str, id: Option<&str>, owner: Option<&str>, data: Value) {
        let events = self
            .events
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        events.publish(kind, id, owner, data);
    }

    /// How long a finished job is kept.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// Fails the jobs of servers that are gone (an event each once events are heard:
    /// [`Jobs::set_events`]).
    fn interrupt_orphans(&self, dir: &std::path::Path) {
        let error = interrupted_error();
        *self
            .orphans_checked
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now());
        match self
            .store
            .jobs_interrupt(dir, self.instance.id(), &error, now_ms())
        {
            Ok(rows) => {
                let rows: Vec<(String, String)> = rows
                    .into_iter()
                    .map(|row| (format!("job-{}", row.n), row.owner))
                    .collect();
                let mut orphans = self.orphans.lock().unwrap_or_else(|p| p.into_inner());
                if !self.heard.load(std::sync::atomic::Ordering::SeqCst) {
                    // Kept for events that may never be heard (`toolshed mcp`): a few.
                    let room = 1000usize.saturating_sub(orphans.len());
                    orphans.extend(rows.into_iter().take(room));
                    return;
                }
                drop(orphans);
                for (id, owner) in rows {
                    self.publish(
                        "job.failed",
                        Some(&id),
                        Some(&owner),
                        json!({"error": error, "duration_ms": null, "interrupted": true}),
                    );
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot mark the jobs of stopped servers failed"),
        }
    }

    /// Fails the jobs of toolsheds that stopped since this one started (a `toolshed mcp`
    /// whose client left, a killed server), at most every [`ORPHAN_CHECK_EVERY`]: called
    /// when a job read is running elsewhere.
    fn recheck_orphans(&self) {
        let Some(dir) = &self.instances else { return };
        // Due, and claimed as one step: readers arriving together look once.
        let due = {
            let mut checked = self
                .orphans_checked
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let due = checked.is_none_or(|at| at.elapsed() >= ORPHAN_CHECK_EVERY);
            if due {
                *checked = Some(std::time::Instant::now());
            }
            due
        };
        if due {
            self.interrupt_orphans(dir);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Job>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Removes finished jobs past their retention, and the oldest past `max_jobs`.
    pub fn sweep(&self) {
        let before =
            now_ms().saturating_sub(u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX));
        if let Err(e) = self.store.job_sweep(before, self.max_jobs) {
            tracing::warn!(error = %e, "cannot remove expired jobs");
        }
    }

    /// At most `limit` running jobs per owner (its sub-owners counted as it).
    pub fn with_max_per_owner(mut self, limit: usize) -> Self {
        self.max_per_owner = limit.max(1);
        self
    }

    /// Admits and records a job of `tool` for `owner` whose call the caller runs (with
    /// `cancel` as its cancellation, and [`Jobs::progress_sink`] as its progress), and
    /// must end with [`Jobs::finish`]. Counting the owner's jobs and recording the new one
    /// are one step, so that requests arriving together cannot all pass the per-owner
    /// limit.
    pub fn admit(
        &self,
        tool: &str,
        owner: &str,
        cancel: CancellationToken,
    ) -> Result<JobView, JobError> {
        self.admit_with(tool, owner, cancel, None)
    }

    /// [`admit`](Self::admit), with what the caller wants echoed in the job's events.
    pub fn admit_with(
        &self,
        tool: &str,
        owner: &str,
        cancel: CancellationToken,
        context: Option<Value>,
    ) -> Result<JobView, JobError> {
        let _admission = self.admission.lock().unwrap_or_else(|e| e.into_inner());
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(JobError::Closing(
                "toolshed is shutting down: no job starts any more; start it again on a running toolshed".into(),
            ));
        }
        self.sweep();
        let base = |owner: &str| owner.split('/').next().unwrap_or_default().to_string();
        let mine = base(owner);
        let (running, owned) = {
            let jobs = self.lock();
            let owned = jobs
                .values()
                .filter(|j| base(&j.view.owner) == mine)
                .count();
            (jobs.len(), owned)
        };
        if owned >= self.max_per_owner {
            return Err(JobError::TooMany(format!(
                "`{mine}` has {owned} jobs running, the most one owner may have ([jobs] max_running_per_owner); wait for one, or cancel one (GET /api/v1/jobs?state=running lists yours; POST /api/v1/jobs/ID/cancel or MCP tasks/cancel ends one)"
            )));
        }
        if running >= self.max_jobs {
            return Err(JobError::TooMany(format!(
                "{running} jobs are running, the most this server keeps ([jobs] max_jobs), {owned} of them yours (`{mine}`); wait for one or cancel one"
            )));
        }
        let created_ms = now_ms();
        let n = self
            .store
            .job_create(tool, owner, created_ms, self.instance.id())
            .map_err(|e| JobError::Internal(format!("cannot record the job: {e}")))?;
        let id = format!("job-{n}");
        let view = JobView {
            id: id.clone(),
            tool: tool.to_string(),
            owner: owner.to_string(),
            state: JobState::Running,
            created_ms,
            finished_ms: None,
            progress_count: 0,
            progress: Vec::new(),
            result: None,
            error: None,
            updated_ms: None,
            input_requests: None,
            context,
        };
        self.lock().insert(
            n,
            Job {
                view: view.clone(),
                progress: VecDeque::new(),
                cancel,
                by_shutdown: false,
                announced_ms: 0,
                waiting: BTreeMap::new(),
                asked: 0,
            },
        );
        let mut started = json!({"tool": tool});
        if let Some(context) = &view.context {
            started["context"] = context.clone();
        }
        self.publish("job.started", Some(&id), Some(owner), started);
        Ok(view)
    }

    /// Where the progress of the job `view` goes: kept with it, and announced.
    pub fn progress_sink(self: &Arc<Self>, view: &JobView) -> ProgressSink {
        let jobs = Arc::downgrade(self);
        let id = view.id.clone();
        let owner = view.owner.clone();
        let n = number(&id).unwrap_or_default();
        ProgressSink::new(move |progress: Progress| {
            if let Some(jobs) = jobs.upgrade() {
                jobs.progress(n, &id, &owner, progress);
            }
        })
    }

    /// Starts `request` as a job within `span` and returns its view.
    /// `keep` is held until the job ends (the room its arguments take).
    pub fn start(
        self: &Arc<Self>,
        host: Arc<Host>,
        mut request: CallRequest,
        keep: Box<dyn std::any::Any + Send>,
        span: tracing::Span,
    ) -> Result<JobView, JobError> {
        let cancel = CancellationToken::new();
        let view = self.admit_with(
            &request.tool,
            &request.owner.0,
            cancel.clone(),
            request.context.clone(),
        )?;
        request.cancel = cancel;
        request.progress = Some(self.progress_sink(&view));
        let jobs = self.clone();
        let id = view.id.clone();
        tokio::spawn(async move {
            let result = host.call(request).instrument(span.clone()).await;
            record_outcome(&span, &result);
            jobs.finish(&id, &result);
            drop(keep);
        });
        Ok(view)
    }

    fn progress(&self, n: u64, id: &str, owner: &str, mut progress: Progress) {
        if let Some(message) = &mut progress.message
            && message.len() > MAX_PROGRESS_MESSAGE
        {
            let mut cut = MAX_PROGRESS_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push_str("[…]");
        }
        {
            let mut jobs = self.lock();
            let Some(job) = jobs.get_mut(&n) else { return };
            job.view.progress_count += 1;
            if job.progress.len() >= KEPT_PROGRESS {
                job.progress.pop_front();
            }
            job.progress.push_back(progress.clone());
            let now = now_ms();
            job.view.updated_ms = Some(now);
            // Every report is kept; announcing each one (a command's every line) would
            // cost a stored event apiece.
            if now.saturating_sub(job.announced_ms) < PROGRESS_EVENT_EVERY_MS {
                return;
            }
            job.announced_ms = now;
        }
        self.publish(
            "job.progress",
            Some(id),
            Some(owner),
            serde_json::to_value(&progress).unwrap_or(Value::Null),
        );
    }

    /// Records how job `n` ended — in the store first, so that a client told by the event
    /// reads the final state — then announces it.
    pub fn finish(&self, id: &str, result: &CallResult) {
        let Some(n) = number(id) else { return };
        // A copy to record from: the job stays listed as running in memory until the store
        // holds how it ended, so that nobody reads it as running nowhere in between.
        let Some(mut job) = self.lock().get(&n).map(|job| Job {
            view: job.view.clone(),
            progress: job.progress.clone(),
            cancel: job.cancel.clone(),
            by_shutdown: job.by_shutdown,
            announced_ms: job.announced_ms,
            waiting: BTreeMap::new(),
            asked: job.asked,
        }) else {
            return;
        };
        let duration_ms = u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX);
        let (kind, data) = match &result.result {
            Ok(output) => {
                job.view.state = JobState::Succeeded;
                let value = output_json(result, output);
                job.view.result = Some(value.clone());
                (
                    "job.finished",
                    json!({"is_error": output.is_error, "duration_ms": duration_ms, "result": value}),
                )
            }
            Err(error) => {
                let cancelled = matches!(error, toolshed_core::ToolError::Cancelled);
                job.view.state = if cancelled {
                    JobState::Cancelled
                } else {
                    JobState::Failed
                };
                let body = if cancelled && job.by_shutdown {
                    json!({
                        "kind": "cancelled",
                        "message": "stopped by the toolshed running it shutting down (SIGTERM or Ctrl-C after the grace period for running calls, [server] shutdown_grace_secs; or, for `toolshed mcp`, its client leaving); no caller cancelled it. Start it again if it is still needed",
                        "details": {"by": "shutdown"},
                    })
                } else {
                    error.to_json()
                };
                job.view.error = Some(body.clone());
                (
                    if cancelled {
                        "job.cancelled"
                    } else {
                        "job.failed"
                    },
                    json!({"error": body, "duration_ms": duration_ms}),
                )
            }
        };
        job.view.finished_ms = Some(now_ms());
        while job.progress.len() > KEPT_PROGRESS_FINISHED {
            job.progress.pop_front();
        }
        let progress: Vec<&Progress> = job.progress.iter().collect();
        let progress = serde_json::to_value(progress).unwrap_or(Value::Array(Vec::new()));
        let end = JobEnd {
            state: job.view.state.as_str(),
            finished_ms: job.view.finished_ms.unwrap_or_default(),
            progress_count: job.view.progress_count,
            progress: &progress,
            result: job.view.result.as_ref(),
            error: job.view.error.as_ref(),
        };
        if let Err(e) = self.store.job_finish(n, end) {
            tracing::warn!(job = %job.view.id, error = %e, "cannot record how the job ended");
        }
        self.lock().remove(&n);
        let mut data = data;
        if let Some(context) = &job.view.context {
            data["context"] = context.clone();
        }
        self.publish(kind, Some(&job.view.id), Some(&job.view.owner), data);
        self.ended.notify_waiters();
    }

    /// One job.
    pub fn get(&self, id: &str) -> Option<JobView> {
        let n = number(id)?;
        if let Some(job) = self.lock().get(&n) {
            let mut view = job.view.clone();
            view.progress = job.progress.iter().cloned().collect();
            return Some(view);
        }
        // A finished job past its retention is gone now, not when a list next sweeps.
        self.sweep();
        let read = || match self.store.job_get(n) {
            Ok(row) => row.map(JobView::from),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a job");
                None
            }
        };
        let view = read()?;
        if view.state != JobState::Running {
            return Some(view);
        }
        // Running elsewhere: unless that toolshed stopped, which is then said.
        self.recheck_orphans();
        read()
    }

    /// The jobs, oldest first, optionally of one owner and in one state.
    pub fn list(&self, owner: Option<&str>, state: Option<JobState>) -> Vec<JobView> {
        self.sweep();
        let read = || {
            self.store
                .job_list(owner, state.map(JobState::as_str), self.max_jobs)
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot list jobs");
                    Vec::new()
                })
        };
        let mut rows = read();
        let elsewhere = {
            let running = self.lock();
            rows.iter()
                .any(|row| row.state == "running" && !running.contains_key(&row.n))
        };
        // Running elsewhere: unless that toolshed stopped, which is then said.
        if elsewhere {
            self.recheck_orphans();
            rows = read();
        }
        let running = self.lock();
        rows.into_iter()
            .map(|row| match running.get(&row.n) {
                Some(job) => {
                    let mut view = job.view.clone();
                    view.progress = job.progress.back().cloned().into_iter().collect();
                    view
                }
                None => {
                    let mut view = JobView::from(row);
                    view.progress.drain(..view.progress.len().saturating_sub(1));
                    view
                }
            })
            .collect()
    }

    /// Asks a running job to stop; its tool's cancellation token fires (a command's
    /// process tree is killed). Answers the job as it is once it has ended — waiting at
    /// most [`CANCEL_WAIT`] for that, then as it is then.
    pub async fn cancel(&self, id: &str) -> Result<JobView, JobError> {
        let n = number(id).ok_or_else(|| missing(id))?;
        let found = self.lock().get(&n).map(|job| job.cancel.clone());
        if let Some(cancel) = found {
            cancel.cancel();
            let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
            loop {
                let ended = self.ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if !self.lock().contains_key(&n) {
                    break;
                }
                if tokio::time::timeout_at(deadline, ended).await.is_err() {
                    break;
                }
            }
        } else {
            let view = self.get(id).ok_or_else(|| missing(id))?;
            return Err(if view.state == JobState::Running {
                JobError::Conflict(format!(
                    "job {id} runs in another toolshed on this data dir or database; cancel it there"
                ))
            } else {
                JobError::Ended(format!(
                    "job {id} has already ended ({}); nothing to cancel",
                    view.state.as_str()
                ))
            });
        }
        self.get(id).ok_or_else(|| missing(id))
    }

    /// Whether a job of `owner` (or of one of its sub-owners) runs in this toolshed.
    pub fn runs_for(&self, owner: &str) -> bool {
        let owner = toolshed_core::OwnerId::new(owner);
        self.lock()
            .values()
            .any(|job| owner.covers(&job.view.owner))
    }

    /// Waits until no job of `owner` (or of its sub-owners) runs in this toolshed.
    pub async fn until_idle(&self, owner: &str) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.runs_for(owner) {
                return;
            }
            ended.await;
        }
    }

    /// How many jobs are in each state.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::from([
            ("running", 0),
            ("succeeded", 0),
            ("failed", 0),
            ("cancelled", 0),
        ]);
        for (state, n) in self.store.job_counts().unwrap_or_default() {
            *counts.entry(JobState::parse(&state).as_str()).or_default() += n;
        }
        counts
    }

    /// Cancels every running job (server shutdown).
    pub fn cancel_all(&self) {
        self.closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for job in self.lock().values_mut() {
            job.by_shutdown = true;
            job.cancel.cancel();
        }
    }

    /// Cancels every running job and waits (at most `limit`) until each has ended and
    /// announced it, so that event streams carry the news before they close.
    pub async fn drain(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            self.cancel_all();
            if self.lock().is_empty() {
                return;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return;
            }
        }
    }
}

/// The owner of a job started without a name.
pub fn default_owner() -> OwnerId {
    OwnerId::new("rest")
}

/// `ms` since the epoch as an ISO 8601 UTC time (`2026-12-06T18:00:00.123Z`).
pub fn iso8601(ms: u64) -> String {
    jiff::Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// Marks a door span as failed when the call failed.
pub fn record_outcome(span: &tracing::Span, result: &CallResult) {
    match &result.result {
        Ok(output) if output.is_error => {
            span.record("error.type", "tool_error");
        }
        Ok(_) => {}
        Err(error) => {
            span.record("error.type", error.kind().as_str());
        }
    }
}

fn missing(id: &str) -> JobError {
    JobError::NotFound(format!(
        "no job `{id}`; GET /api/v1/jobs lists them (finished jobs are removed after the retention time)"
    ))
}

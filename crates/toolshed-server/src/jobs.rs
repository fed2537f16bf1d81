//! Asynchronous calls: `execute` with `async: true` starts a job and answers `202` at once;
//! the job's state, progress and result are kept until `retention` after it ends.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolshed_core::{OwnerId, Progress, ProgressSink};
use toolshed_host::{CallRequest, Host};

use crate::error::ApiError;
use crate::events::EventLog;

/// Progress reports kept per running job (the most recent).
pub const KEPT_PROGRESS: usize = 100;

/// Progress reports kept once a job has ended (its result holds the output).
pub const KEPT_PROGRESS_FINISHED: usize = 5;

/// The longest progress message kept or sent; longer ones are cut.
pub const MAX_PROGRESS_MESSAGE: usize = 4096;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// The call runs.
    Running,
    /// The call produced a result (which may report a failure with `is_error`).
    Succeeded,
    /// The call ended without a result.
    Failed,
    /// The call was cancelled.
    Cancelled,
}

/// A job as listed.
#[derive(Debug, Clone, Serialize)]
pub struct JobView {
    /// Its id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The owner it runs as.
    pub owner: String,
    /// Where it is.
    pub state: JobState,
    /// When it was created (ms since the epoch).
    pub created_ms: u64,
    /// When it ended.
    pub finished_ms: Option<u64>,
    /// Progress reports so far (all of them, of which `progress` holds the latest).
    pub progress_count: u64,
    /// The latest progress reports.
    pub progress: Vec<Progress>,
    /// The result, once it succeeded.
    pub result: Option<Value>,
    /// The error, once it failed or was cancelled.
    pub error: Option<Value>,
}

struct Job {
    view: JobView,
    progress: VecDeque<Progress>,
    cancel: CancellationToken,
    ended: Option<Instant>,
}

/// Every job of the server.
pub struct Jobs {
    jobs: Mutex<BTreeMap<u64, Job>>,
    next: std::sync::atomic::AtomicU64,
    retention: Duration,
    max_jobs: usize,
    events: Arc<EventLog>,
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
    /// A job table keeping finished jobs for `retention`, at most `max_jobs` in all.
    pub fn new(retention: Duration, max_jobs: usize, events: Arc<EventLog>) -> Self {
        Self {
            jobs: Mutex::new(BTreeMap::new()),
            next: Default::default(),
            retention,
            max_jobs: max_jobs.max(1),
            events,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Job>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Removes finished jobs past their retention.
    pub fn sweep(&self) {
        let retention = self.retention;
        self.lock()
            .retain(|_, job| job.ended.is_none_or(|t| t.elapsed() < retention));
    }

    /// Starts `request` as a job and returns its view.
    pub fn start(
        self: &Arc<Self>,
        host: Arc<Host>,
        mut request: CallRequest,
    ) -> Result<JobView, ApiError> {
        self.sweep();
        let cancel = CancellationToken::new();
        let n = {
            let mut jobs = self.lock();
            while jobs.len() >= self.max_jobs {
                let oldest_done = jobs
                    .iter()
                    .find(|(_, j)| j.ended.is_some())
                    .map(|(n, _)| *n);
                match oldest_done {
                    Some(n) => {
                        jobs.remove(&n);
                    }
                    None => {
                        return Err(ApiError::new(
                            axum::http::StatusCode::TOO_MANY_REQUESTS,
                            "too_many_jobs",
                            format!(
                                "{} jobs are running, the most this server keeps ([jobs] max_jobs); wait for one or cancel one",
                                jobs.len()
                            ),
                        ));
                    }
                }
            }
            let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let view = JobView {
                id: format!("job-{n}"),
                tool: request.tool.clone(),
                owner: request.owner.0.clone(),
                state: JobState::Running,
                created_ms: now_ms(),
                finished_ms: None,
                progress_count: 0,
                progress: Vec::new(),
                result: None,
                error: None,
            };
            jobs.insert(
                n,
                Job {
                    view,
                    progress: VecDeque::new(),
                    cancel: cancel.clone(),
                    ended: None,
                },
            );
            n
        };
        let id = format!("job-{n}");
        let owner = request.owner.0.clone();
        self.events.publish(
            "job.started",
            Some(&id),
            Some(&owner),
            json!({"tool": request.tool}),
        );
        request.cancel = cancel;
        let sink = {
            let jobs = Arc::downgrade(self);
            let id = id.clone();
            let owner = owner.clone();
            ProgressSink::new(move |progress: Progress| {
                if let Some(jobs) = jobs.upgrade() {
                    jobs.progress(n, &id, &owner, progress);
                }
            })
        };
        request.progress = Some(sink);
        let jobs = self.clone();
        tokio::spawn(async move {
            let result = host.call(request).await;
            jobs.finish(n, result);
        });
        self.get(&id)
            .ok_or_else(|| ApiError::internal("the job vanished as it started"))
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
        }
        self.events.publish(
            "job.progress",
            Some(id),
            Some(owner),
            serde_json::to_value(&progress).unwrap_or(Value::Null),
        );
    }

    fn finish(&self, n: u64, result: toolshed_host::CallResult) {
        let (kind, data, id, owner) = {
            let mut jobs = self.lock();
            let Some(job) = jobs.get_mut(&n) else { return };
            job.ended = Some(Instant::now());
            while job.progress.len() > KEPT_PROGRESS_FINISHED {
                job.progress.pop_front();
            }
            job.view.finished_ms = Some(now_ms());
            let duration_ms = u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX);
            let (kind, data) = match &result.result {
                Ok(output) => {
                    job.view.state = JobState::Succeeded;
                    let value = crate::api::output_json(&result, output);
                    job.view.result = Some(value.clone());
                    (
                        "job.finished",
                        json!({"is_error": output.is_error, "duration_ms": duration_ms, "result": value}),
                    )
                }
                Err(error) => {
                    job.view.state = if matches!(error, toolshed_core::ToolError::Cancelled) {
                        JobState::Cancelled
                    } else {
                        JobState::Failed
                    };
                    let body = ApiError::from(error).body()["error"].clone();
                    job.view.error = Some(body.clone());
                    (
                        "job.failed",
                        json!({"error": body, "duration_ms": duration_ms}),
                    )
                }
            };
            (kind, data, job.view.id.clone(), job.view.owner.clone())
        };
        self.events.publish(kind, Some(&id), Some(&owner), data);
    }

    /// One job.
    pub fn get(&self, id: &str) -> Option<JobView> {
        let n = number(id)?;
        self.lock().get(&n).map(|job| {
            let mut view = job.view.clone();
            view.progress = job.progress.iter().cloned().collect();
            view
        })
    }

    /// The jobs, oldest first, optionally of one owner and in one state.
    pub fn list(&self, owner: Option<&str>, state: Option<JobState>) -> Vec<JobView> {
        self.sweep();
        self.lock()
            .values()
            .filter(|j| owner.is_none_or(|o| j.view.owner == o))
            .filter(|j| state.is_none_or(|s| j.view.state == s))
            .map(|j| {
                let mut view = j.view.clone();
                view.progress = j.progress.back().cloned().into_iter().collect();
                view
            })
            .collect()
    }

    /// Asks a running job to stop; its tool's cancellation token fires (a command's
    /// process tree is killed). Answers the job as it is now.
    pub fn cancel(&self, id: &str) -> Result<JobView, ApiError> {
        let n = number(id).ok_or_else(|| missing(id))?;
        {
            let jobs = self.lock();
            let job = jobs.get(&n).ok_or_else(|| missing(id))?;
            if job.ended.is_some() {
                return Err(ApiError::conflict(format!(
                    "job {id} has already ended ({}); nothing to cancel",
                    serde_json::to_value(job.view.state)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                )));
            }
            job.cancel.cancel();
        }
        self.get(id).ok_or_else(|| missing(id))
    }

    /// How many jobs are in each state.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::from([
            ("running", 0),
            ("succeeded", 0),
            ("failed", 0),
            ("cancelled", 0),
        ]);
        for job in self.lock().values() {
            let key = match job.view.state {
                JobState::Running => "running",
                JobState::Succeeded => "succeeded",
                JobState::Failed => "failed",
                JobState::Cancelled => "cancelled",
            };
            *counts.entry(key).or_default() += 1;
        }
        counts
    }

    /// Cancels every running job (server shutdown).
    pub fn cancel_all(&self) {
        for job in self.lock().values() {
            job.cancel.cancel();
        }
    }
}

/// The owner of a job started without a name.
pub fn default_owner() -> OwnerId {
    OwnerId::new("rest")
}

fn missing(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no job `{id}`; GET /api/v1/jobs lists them (finished jobs are removed after the retention time)"
    ))
}

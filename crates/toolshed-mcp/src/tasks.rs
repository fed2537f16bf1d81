//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) over toolshed's jobs.
//!
//! Tasks are server-directed: a `tools/call` of a client that declared the extension runs as
//! any call, and only when it is still running after `[mcp] task_after_ms` does it become a
//! job — recorded in the state store — whose id the client gets at once (`resultType:
//! "task"`). The call goes on without the request: its progress is kept with the job, a
//! question it asks waits for an answer over REST (`GET /api/v1/questions`), and the client,
//! connected or not, reads how it ended with `tasks/get` — on any toolshed sharing the data
//! dir — or stops it with `tasks/cancel`. A task is a job: `GET /api/v1/jobs` lists it, and a
//! REST job is read by `tasks/get` for its owner.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ErrorData as McpError;
use rmcp::model::{CreateTaskResult, DetailedTask, JsonObject, Task, TaskPayload};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolshed_core::{Answer, Asker, Progress, ProgressSink, Question, ToolError, ToolOutput};
use toolshed_host::jobs::{JobState, JobView, Jobs};
use toolshed_host::{CallRequest, CallResult, Host};
use tracing::Instrument as _;

/// How often a client is asked to poll a task (`pollIntervalMs`).
pub(crate) const POLL_INTERVAL_MS: u64 = 500;

/// How a call that could become a task ended up.
pub(crate) enum Outcome {
    /// It ended within the wait: answered as any call.
    Done(CallResult),
    /// It outlived the wait and goes on as this job.
    Task(JobView),
}

/// Where a call's progress goes: the request's progress notifications until it becomes a
/// task, the job from then on.
#[derive(Clone, Default)]
struct Switch(Arc<Mutex<Option<ProgressSink>>>);

impl Switch {
    fn set(&self, sink: Option<ProgressSink>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = sink;
    }

    fn sink(&self) -> ProgressSink {
        let target = self.0.clone();
        ProgressSink::new(move |progress: Progress| {
            let sink = target.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Some(sink) = sink {
                sink.send(progress);
            }
        })
    }
}

/// The call's asker until it becomes a task; from then on its questions wait for REST, as
/// the request that could have carried them has been answered.
struct Handover {
    before: Option<Arc<dyn Asker>>,
    host: Arc<Host>,
    owner: String,
    promoted: AtomicBool,
}

#[async_trait]
impl Asker for Handover {
    async fn ask(
        &self,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        match &self.before {
            Some(asker) if !self.promoted.load(Ordering::Acquire) => {
                asker.ask(question, cancel).await
            }
            _ => {
                let questions = self.host.dispatcher().questions().clone();
                questions.ask(&self.owner, question, cancel).await
            }
        }
    }
}

/// Runs `call`, which becomes a task if it still runs after `after`. `request` is the
/// request's cancellation: it stops the call until the call is a task, and no longer then.
pub(crate) async fn run(
    host: Arc<Host>,
    mut call: CallRequest,
    request: CancellationToken,
    after: Duration,
) -> Outcome {
    let cancel = CancellationToken::new();
    call.cancel = cancel.clone();
    let switch = Switch::default();
    switch.set(call.progress.take());
    call.progress = Some(switch.sink());
    let handover = Arc::new(Handover {
        before: call.asker.take(),
        host: host.clone(),
        owner: call.owner.0.clone(),
        promoted: AtomicBool::new(false),
    });
    call.asker = Some(handover.clone());
    let tool = call.tool.clone();
    let owner = call.owner.0.clone();
    let mut running = tokio::spawn({
        let host = host.clone();
        async move { host.call(call).await }.in_current_span()
    });
    let joined = |joined: Result<CallResult, tokio::task::JoinError>| {
        joined.unwrap_or_else(|e| CallResult {
            call_id: toolshed_core::CallId(String::new()),
            plugin_id: None,
            result: Err(ToolError::Internal(format!("the call stopped: {e}"))),
            duration: Duration::ZERO,
        })
    };
    tokio::select! {
        ended = &mut running => return Outcome::Done(joined(ended)),
        () = request.cancelled() => {
            cancel.cancel();
            return Outcome::Done(joined(running.await));
        }
        () = tokio::time::sleep(after) => {}
    }
    let jobs: Arc<Jobs> = host.jobs().clone();
    let view = match jobs.admit(&tool, &owner, cancel.clone()) {
        Ok(view) => view,
        Err(e) => {
            // No room for another job: the call is answered when it ends, as without tasks.
            tracing::warn!(tool = %tool, error = %e, "a call that outlived the task wait goes on as an ordinary call");
            tokio::select! {
                ended = &mut running => return Outcome::Done(joined(ended)),
                () = request.cancelled() => {
                    cancel.cancel();
                    return Outcome::Done(joined(running.await));
                }
            }
        }
    };
    switch.set(Some(jobs.progress_sink(&view)));
    handover.promoted.store(true, Ordering::Release);
    let id = view.id.clone();
    tokio::spawn(async move {
        let result = joined(running.await);
        jobs.finish(&id, &result);
    });
    Outcome::Task(view)
}

/// The seed state of a task just made (`tools/call`'s answer).
pub(crate) fn created(view: &JobView, retention: Duration) -> CreateTaskResult {
    CreateTaskResult::new(base(view, retention))
}

fn base(view: &JobView, retention: Duration) -> Task {
    // A running job's last change is not kept (its progress carries no time): created.
    let updated = view.finished_ms.unwrap_or(view.created_ms);
    let mut task = Task::new(
        view.id.clone(),
        Default::default(),
        toolshed_host::jobs::iso8601(view.created_ms),
        toolshed_host::jobs::iso8601(updated),
    )
    .with_ttl_ms(u64::try_from(retention.as_millis()).unwrap_or(u64::MAX))
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if view.state == JobState::Running
        && let Some(message) = view.progress.last().and_then(|p| p.message.clone())
    {
        task = task.with_status_message(message);
    }
    task
}

/// A job as `tasks/get` answers it: running is `working`; a result, a tool's failure
/// included, is `completed` with the `CallToolResult`; a call refused or failed by the
/// pipeline is `completed` with `isError` as `tools/call` would have answered it; one that
/// a stopped server left is `failed`; cancelled is `cancelled`.
pub(crate) fn detailed(view: &JobView, retention: Duration) -> DetailedTask {
    let payload = match view.state {
        JobState::Running => TaskPayload::Working,
        JobState::Cancelled => TaskPayload::Cancelled,
        JobState::Succeeded => {
            let output: ToolOutput = view
                .result
                .clone()
                .and_then(|value| serde_json::from_value(value).ok())
                .unwrap_or_default();
            TaskPayload::Completed {
                result: object(crate::convert::result_from_output(output)),
            }
        }
        JobState::Failed => {
            let error = view.error.clone().unwrap_or(Value::Null);
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the call failed")
                .to_string();
            if message == toolshed_host::jobs::INTERRUPTED {
                TaskPayload::Failed {
                    error: object(json!({"code": -32603, "message": message})),
                }
            } else {
                TaskPayload::Completed {
                    result: object(rmcp::model::CallToolResult::error(vec![
                        rmcp::model::ContentBlock::text(message),
                    ])),
                }
            }
        }
    };
    DetailedTask::new(base(view, retention), payload)
}

fn object(value: impl serde::Serialize) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

/// The answer to a task id the caller may not read: the same as for one that never was.
pub(crate) fn unknown(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "no task `{id}`: it never was, belongs to another owner, or ended more than [jobs] retention_secs ago"
        ),
        Some(json!({"taskId": id})),
    )
}

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
    Task(Box<JobView>),
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

/// Where the call stands, for its asker: before it is a task — with the questions being
/// asked through the request, and whether one went unanswered (the call then ends to ask it
/// in a later request) — or the job it became.
enum Stage {
    Before { asking: usize, unanswered: bool },
    Task(String),
}

/// The call's asker until it becomes a task; from then on its questions are the task's
/// (`input_required` in `tasks/get`, answered with `tasks/update`) and wait over REST as
/// well, whichever answers first — the request that could have carried them has been
/// answered. A session-era client's own elicitation is asked too while it can be.
struct Handover {
    before: Option<Arc<dyn Asker>>,
    /// The client's own asker works during a task too (session-era elicitation).
    keeps_asking: bool,
    host: Arc<Host>,
    owner: String,
    stage: Mutex<Stage>,
}

impl Handover {
    fn stage(&self) -> std::sync::MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl Asker for Handover {
    async fn ask(
        &self,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        let job = match &mut *self.stage() {
            Stage::Before { asking, .. } => {
                *asking += 1;
                None
            }
            Stage::Task(id) => Some(id.clone()),
        };
        match (job, &self.before) {
            (None, Some(asker)) => {
                let answer = asker.ask(question, cancel).await;
                if let Stage::Before { asking, unanswered } = &mut *self.stage() {
                    *asking -= 1;
                    *unanswered |= answer.is_err();
                }
                answer
            }
            (None, None) => {
                let answer = self.ask_in_task(None, question, cancel).await;
                if let Stage::Before { asking, .. } = &mut *self.stage() {
                    *asking -= 1;
                }
                answer
            }
            (Some(id), Some(asker)) if self.keeps_asking => {
                // The client (if still there) and the task's follower: the first answer.
                let from_client = asker.ask(question, cancel);
                let in_task = self.ask_in_task(Some(&id), question, cancel);
                tokio::pin!(from_client, in_task);
                tokio::select! {
                    answer = &mut from_client => match answer {
                        Ok(answer) => Ok(answer),
                        Err(_) => in_task.await,
                    },
                    answer = &mut in_task => answer,
                }
            }
            (Some(id), _) => self.ask_in_task(Some(&id), question, cancel).await,
        }
    }
}

/// Takes a task's question off its list when dropped: answered, or no longer asked.
struct Asked<'a> {
    jobs: &'a Jobs,
    id: &'a str,
    key: String,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.jobs.input_done(self.id, &self.key);
    }
}

impl Handover {
    /// A question of a task: put to its MCP client through `tasks/get`, and over REST.
    async fn ask_in_task(
        &self,
        job: Option<&str>,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError> {
        let questions = self.host.dispatcher().questions().clone();
        let rest = questions.ask(&self.owner, question, cancel);
        let (Some(id), Some(request)) = (job, elicitation(question)) else {
            return rest.await;
        };
        let jobs = self.host.jobs();
        let Some((key, from_task)) = jobs.wait_for_input(id, request) else {
            return rest.await;
        };
        let _asked = Asked { jobs, id, key };
        tokio::select! {
            answered = from_task => answered
                .ok()
                .as_ref()
                .and_then(Answer::from_elicitation)
                .ok_or(ToolError::Cancelled),
            answered = rest => answered,
        }
    }
}

/// `question` as an MCP input request (`elicitation/create`), as the Tasks extension's
/// `inputRequests` carry it; `None` when its schema is not one an MCP client can ask with
/// (it is then asked over REST only).
fn elicitation(question: &Question) -> Option<Value> {
    let schema = match crate::input::elicitation_schema(question) {
        Ok(schema) => schema,
        Err(e) => {
            tracing::warn!(error = %e, "a task's question is asked over REST only");
            return None;
        }
    };
    let request = rmcp::model::InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
        rmcp::model::ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question.message.clone(),
            requested_schema: schema,
        },
    ));
    serde_json::to_value(request).ok()
}

/// Runs `call`, which becomes a task if its tool still runs `after` it started (its
/// approval, if it needs one, is asked before). `request` is the request's cancellation:
/// it stops the call until the call is a task, and no longer then. `keeps_asking`: the
/// client's asker can reach the person after the request is answered (session-era
/// elicitation).
pub(crate) async fn run(
    host: Arc<Host>,
    mut call: CallRequest,
    request: CancellationToken,
    after: Duration,
    keeps_asking: bool,
) -> Outcome {
    let cancel = CancellationToken::new();
    call.cancel = cancel.clone();
    // This future dropped before the call is a task (its request gone): the call stops.
    let unwatched = cancel.clone().drop_guard();
    let started = Arc::new(tokio::sync::Notify::new());
    call.started = Some(started.clone());
    let switch = Switch::default();
    switch.set(call.progress.take());
    call.progress = Some(switch.sink());
    let handover = Arc::new(Handover {
        before: call.asker.take(),
        keeps_asking,
        host: host.clone(),
        owner: call.owner.0.clone(),
        stage: Mutex::new(Stage::Before {
            asking: 0,
            unanswered: false,
        }),
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
    // The call answered as any call: it ended, or the request went away (which stops it).
    macro_rules! answer_as_a_call {
        () => {{
            tokio::select! {
                ended = &mut running => return Outcome::Done(joined(ended)),
                () = request.cancelled() => {
                    cancel.cancel();
                    return Outcome::Done(joined(running.await));
                }
            }
        }};
    }
    // Until the tool runs (its approval asked and answered), then `after` more.
    tokio::select! {
        ended = &mut running => return Outcome::Done(joined(ended)),
        () = request.cancelled() => {
            cancel.cancel();
            return Outcome::Done(joined(running.await));
        }
        () = started.notified() => {}
    }
    tokio::select! {
        ended = &mut running => return Outcome::Done(joined(ended)),
        () = request.cancelled() => {
            cancel.cancel();
            return Outcome::Done(joined(running.await));
        }
        () = tokio::time::sleep(after) => {}
    }
    let jobs: Arc<Jobs> = host.jobs().clone();
    // A call that asked through its request (an input round trip) is answered in it; one
    // that ended meanwhile is answered as it ended.
    let promoted = {
        // Decided and recorded as one step with the asker's own bookkeeping.
        let mut stage = handover.stage();
        let asking_in_request = !matches!(
            *stage,
            Stage::Before {
                asking: 0,
                unanswered: false
            }
        );
        if asking_in_request || running.is_finished() {
            None
        } else {
            match jobs.admit(&tool, &owner, cancel.clone()) {
                Ok(view) => {
                    *stage = Stage::Task(view.id.clone());
                    Some(view)
                }
                Err(e) => {
                    tracing::warn!(tool = %tool, error = %e, "a call that outlived the task wait goes on as an ordinary call");
                    None
                }
            }
        }
    };
    let Some(view) = promoted else {
        answer_as_a_call!()
    };
    switch.set(Some(jobs.progress_sink(&view)));
    unwatched.disarm();
    // Cancelled while it was being recorded: the client never learns the task's id.
    if request.is_cancelled() {
        cancel.cancel();
    }
    let id = view.id.clone();
    tokio::spawn(async move {
        let result = joined(running.await);
        jobs.finish(&id, &result);
    });
    Outcome::Task(Box::new(view))
}

/// The seed state of a task just made (`tools/call`'s answer).
pub(crate) fn created(view: &JobView, retention: Duration) -> CreateTaskResult {
    CreateTaskResult::new(base(view, retention))
}

fn base(view: &JobView, retention: Duration) -> Task {
    let updated = view
        .finished_ms
        .or(view.updated_ms)
        .unwrap_or(view.created_ms);
    let mut task = Task::new(
        view.id.clone(),
        Default::default(),
        toolshed_host::jobs::iso8601(view.created_ms),
        toolshed_host::jobs::iso8601(updated),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    // Kept for `retention` once it ends (and never dropped while it runs): from creation,
    // as `ttlMs` counts, that is its run time and the retention.
    if let Some(finished) = view.finished_ms {
        let retention = u64::try_from(retention.as_millis()).unwrap_or(u64::MAX);
        task = task.with_ttl_ms(
            finished
                .saturating_sub(view.created_ms)
                .saturating_add(retention),
        );
    }
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
        JobState::Running => match view
            .input_requests
            .clone()
            .and_then(|requests| serde_json::from_value(requests).ok())
        {
            Some(input_requests) => TaskPayload::InputRequired { input_requests },
            None => TaskPayload::Working,
        },
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
            if toolshed_host::jobs::was_interrupted(&error) {
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

//! A job: a call run in the background (`async: true`), its progress and how it ended.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{CallResult, ErrorDetail};

/// Where a job is.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JobState {
    /// The call runs.
    Running,
    /// The call produced a result (which may report a failure with `is_error`).
    Succeeded,
    /// The call ended without a result.
    Failed,
    /// The call was cancelled.
    Cancelled,
}

impl From<toolshed_host::jobs::JobState> for JobState {
    fn from(state: toolshed_host::jobs::JobState) -> Self {
        use toolshed_host::jobs::JobState as S;
        match state {
            S::Running => Self::Running,
            S::Succeeded => Self::Succeeded,
            S::Failed => Self::Failed,
            S::Cancelled => Self::Cancelled,
        }
    }
}

/// A progress report of a running tool.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Progress {
    /// Work done so far, in the tool's own units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    /// Total work, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A message, or a chunk of streamed output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<toolshed_core::Progress> for Progress {
    fn from(report: toolshed_core::Progress) -> Self {
        let toolshed_core::Progress {
            progress,
            total,
            message,
        } = report;
        Self {
            progress,
            total,
            message,
        }
    }
}

/// A job: a call run in the background.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Job {
    /// Its id, e.g. `job-1`.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The owner it runs as.
    pub owner: String,
    /// Where it is.
    pub state: JobState,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it ended.
    pub finished_ms: Option<u64>,
    /// Progress reports so far (all of them, of which `progress` holds the latest).
    pub progress_count: u64,
    /// The latest progress reports.
    pub progress: Vec<Progress>,
    /// The call's result, once it succeeded (as the job recorded it).
    #[schemars(with = "Option<CallResult<'static>>")]
    pub result: Option<Value>,
    /// The error, once it failed or was cancelled (as the job recorded it).
    #[schemars(with = "Option<ErrorDetail>")]
    pub error: Option<Value>,
    /// When it last changed (its latest progress), while this server runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_ms: Option<u64>,
    /// What the call waits for a person to answer, as MCP input requests (key → request).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub input_requests: Option<Value>,
    /// What the caller asked to have echoed in the job's events (Agent Spaces'
    /// `workspaceId`, `executorId`, `taskId`, `meta`), while this server runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub context: Option<Value>,
}

impl From<toolshed_host::jobs::JobView> for Job {
    fn from(view: toolshed_host::jobs::JobView) -> Self {
        let toolshed_host::jobs::JobView {
            id,
            tool,
            owner,
            state,
            created_ms,
            finished_ms,
            progress_count,
            progress,
            result,
            error,
            updated_ms,
            input_requests,
            context,
        } = view;
        Self {
            id,
            tool,
            owner,
            state: state.into(),
            created_ms,
            finished_ms,
            progress_count,
            progress: progress.into_iter().map(Progress::from).collect(),
            result,
            error,
            updated_ms,
            input_requests,
            context,
        }
    }
}

/// The jobs a caller may see.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct JobList {
    /// The jobs.
    pub jobs: Vec<Job>,
}

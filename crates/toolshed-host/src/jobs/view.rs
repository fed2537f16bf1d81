//! A job as it is listed and read: its state, progress and outcome.

use serde::Serialize;
use serde_json::Value;
use toolshed_core::Progress;

use crate::job_store::JobRow;

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
    /// When it last changed (its latest progress), while this toolshed runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_ms: Option<u64>,
    /// What the call waits for a person to answer, as MCP input requests (key → request):
    /// an MCP task's question, answered with `tasks/update` (or `POST /questions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Value>,
    /// What the caller asked to have echoed in the job's events (Agent Spaces'
    /// `workspaceId`, `executorId`, `taskId`, `meta`), while this toolshed runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

impl JobState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub(super) fn parse(text: &str) -> JobState {
        match text {
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "cancelled" => JobState::Cancelled,
            _ => JobState::Failed,
        }
    }
}

impl From<JobRow> for JobView {
    fn from(row: JobRow) -> Self {
        JobView {
            id: format!("job-{}", row.n),
            tool: row.tool,
            owner: row.owner,
            state: JobState::parse(&row.state),
            created_ms: row.created_ms,
            finished_ms: row.finished_ms,
            progress_count: row.progress_count,
            progress: serde_json::from_value(row.progress).unwrap_or_default(),
            result: row.result,
            error: row.error,
            updated_ms: None,
            input_requests: None,
            context: None,
        }
    }
}

//! What the REST API answers, as types: every JSON reply of `/api/v1` is one of these,
//! written by serde and described by schemars, so the schemas of the answers in the OpenAPI
//! document ([`crate::openapi`]) are generated from the very types the handlers return.
//! Their doc comments are the document's descriptions.
//!
//! Host types are not sent as they are. Each reply type here maps from its host type
//! field by field, in a destructuring that names every field: a field added to a host type
//! does not compile here until its reply says whether clients see it. Where a host helper
//! writes JSON itself (a plugin's listing fields, a call's output, a tool search hit, a
//! memory tool's result), the reply type reads that JSON and refuses a field it does not
//! know ([`read`]), so the document cannot silently miss one.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

mod agents;
mod approvals;
mod config;
mod gateway;
mod jobs;
mod memories;
mod plugins;
mod tools;

pub(crate) use agents::{
    Running, RunningList, RunningOutput, Schedule, ScheduleList, TodoList, TodoLists,
};
pub(crate) use approvals::{Answered, Approval, ApprovalList, AuditPage, Question, QuestionList};
pub(crate) use config::{ConfigField, PluginConfig};
pub(crate) use gateway::{
    ImportOutcome, Imported, McpServer, McpServerDetail, McpServerList, Removed,
};
pub(crate) use jobs::{Job, JobList};
pub(crate) use memories::{Deleted, Memory, MemoryMatches, MemoryPage, Stored};
pub(crate) use plugins::{
    Installed, Listing, ManifestFields, Plugin, PluginDetail, PluginGrants, PluginHealth,
    PluginInfo, PluginList, Uninstalled, Verified,
};
pub(crate) use tools::{
    CallResult, JobStarted, PluginTools, SearchHit, SearchResults, Tool, ToolGroup, ToolGroups,
    ToolList,
};

/// Reads JSON a host helper wrote into the reply type `T`; a field `T` does not know, or a
/// value of another type, is a bug here (`500`), not something to pass on undocumented.
pub(crate) fn read<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, ApiError> {
    serde_json::from_value(value)
        .map_err(|e| ApiError::internal(format!("{what} is not what the REST API answers: {e}")))
}

/// `GET /health` at the root: only that the server answers.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Liveness {
    /// Always `ok`.
    #[schemars(extend("enum" = ["ok"]))]
    pub status: &'static str,
}

/// Whether the server takes requests.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ServerStatus {
    /// It does.
    Ok,
    /// It is shutting down (`503`): send no more requests here.
    Draining,
}

/// How the server is (`GET /api/v1/health`).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Health {
    /// `ok`, or `draining` (with `503`) once the server is shutting down.
    pub status: ServerStatus,
    /// The toolshed version.
    pub version: &'static str,
    /// Milliseconds since the server started.
    pub uptime_ms: u64,
    /// Tool calls running now, on every door.
    pub calls_in_flight: u64,
}

/// Every failure of the REST API, whatever its status.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub(crate) struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// One error: its kind, what happened, and more where there is more.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ErrorDetail {
    /// A stable, machine-readable kind: `invalid_request`, `invalid_arguments`,
    /// `unauthorized`, `forbidden`, `not_found`, `method_not_allowed`, `conflict`, `denied`,
    /// `needs_approval`, `timeout`, `cancelled`, `unconfigured`, `payload_too_large`,
    /// `headers_too_large`, `unsupported_media_type`, `request_timeout`, `rate_limited`,
    /// `too_many_jobs`, `busy`, `unavailable`, `failed`, `internal`.
    pub kind: &'static str,
    /// What went wrong and what to do, for people and models.
    pub message: String,
    /// More, when there is more (schema violations, missing variables, `retry_after`).
    #[schemars(with = "Option<Value>")]
    pub details: Value,
}

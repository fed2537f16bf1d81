//! What the agent tools keep, as the REST API shows it: todo lists (`todo_write`) and
//! schedules (`schedule_create`). The items of a list and the spec of a schedule are JSON
//! the tools stored; they are read into the types here, and refused if they hold a field
//! these types do not know ([`read`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::read;
use crate::error::ApiError;

/// Where an item of a todo list is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
}

/// One item of a todo list.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodoItem {
    /// Its id within the list.
    pub id: String,
    /// What is to be done.
    pub text: String,
    /// Where it is.
    pub status: TodoStatus,
    /// Notes on it, when the model kept any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// A todo list an owner keeps with `todo_write`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TodoList {
    /// Whose it is.
    pub owner: String,
    /// Its name (`default` unless the model named one; a goal's list has the goal's name).
    pub list: String,
    /// Its items, in order.
    pub items: Vec<TodoItem>,
    /// When it was last written, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
}

impl TryFrom<toolshed_host::TodoList> for TodoList {
    type Error = ApiError;

    fn try_from(list: toolshed_host::TodoList) -> Result<Self, ApiError> {
        let toolshed_host::TodoList {
            owner,
            list,
            items,
            updated_ms,
        } = list;
        Ok(Self {
            owner,
            list,
            items: read(Value::Array(items), "a todo list's items")?,
            updated_ms,
        })
    }
}

/// The todo lists a caller may see, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct TodoLists {
    /// The lists.
    pub todos: Vec<TodoList>,
}

/// What a schedule does with a due time that passed while no toolshed ran.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ScheduleMissed {
    /// Leave it out.
    Skip,
    /// Run once, however many were missed.
    RunOnce,
}

/// What a schedule runs and when.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScheduleSpec {
    /// Once, at this time (RFC 3339, or a civil time in `tz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Again and again, on this five-field cron expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// The IANA time zone of `at` or `cron` (UTC when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// The tool it calls (`workflow_run` for a workflow).
    pub tool: String,
    /// The tool's arguments.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub arguments: Value,
    /// The workflow it runs, if it runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// What a due time missed while no toolshed ran becomes.
    pub missed: ScheduleMissed,
    /// The profile its owner called with, which its runs call with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The narrowing of the call that made it (its door's tool selection, its token's
    /// `tool:` scopes, the subagents it ran in), each `{source, rules: {allow, deny}}`:
    /// its runs are held to the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub narrowing: Vec<Value>,
    /// The sandbox mode that call was narrowed to, which its runs are held to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The id of the agent token that made it: its runs stop once the token is revoked
    /// or expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// A tool call or workflow an owner scheduled with `schedule_create`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Schedule {
    /// Its id, e.g. `sch-0123456789ab`.
    pub id: String,
    /// Whose it is: its runs are this owner's jobs.
    pub owner: String,
    /// Its name.
    pub name: String,
    /// What it runs and when.
    pub spec: ScheduleSpec,
    /// When it runs next, in milliseconds since the Unix epoch; `null`: never again.
    pub next_ms: Option<i64>,
    /// How many times it ran.
    pub runs: i64,
    /// The job of its last run (`GET /api/v1/jobs/{id}` while the job is kept).
    pub last_job: Option<String>,
    /// How its last due time went: `started`, or why it did not run.
    pub last_outcome: Option<String>,
}

impl TryFrom<toolshed_host::Schedule> for Schedule {
    type Error = ApiError;

    fn try_from(schedule: toolshed_host::Schedule) -> Result<Self, ApiError> {
        let toolshed_host::Schedule {
            id,
            owner,
            name,
            spec,
            next_ms,
            runs,
            last_job,
            last_outcome,
        } = schedule;
        Ok(Self {
            id,
            owner,
            name,
            spec: read(spec, "a schedule's spec")?,
            next_ms,
            runs,
            last_job,
            last_outcome,
        })
    }
}

/// The schedules a caller may see, soonest first.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct ScheduleList {
    /// The schedules.
    pub schedules: Vec<Schedule>,
}

/// One thing a plugin keeps running for an owner: a background process, a command
/// session, a browser session.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Running {
    /// The plugin keeping it, e.g. `system.process`.
    pub plugin: String,
    /// What it is.
    #[schemars(extend("enum" = ["process", "command_session", "browser_session"]))]
    pub kind: String,
    /// Its id, as its plugin's tools take it.
    pub id: String,
    /// The owner it belongs to.
    pub owner: String,
    /// One line saying what it is: a command line, a page.
    pub summary: String,
    /// Whether it is still running.
    pub running: bool,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: Option<i64>,
    /// The rest, as its list tool describes it (exit code, port, terminal).
    pub fields: Value,
    /// The tool `POST /running/{plugin}/{id}/stop` calls to stop it, if it can be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_tool: Option<String>,
}

impl Running {
    pub(crate) fn new(plugin: String, running: toolshed_core::Running) -> Self {
        Self {
            plugin,
            kind: running.kind,
            id: running.id,
            owner: running.owner,
            summary: running.summary,
            running: running.running,
            started_ms: running.started_ms,
            fields: running.fields,
            stop_tool: running.stop.map(|s| s.tool),
        }
    }
}

/// What the plugins keep running, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct RunningList {
    /// The items the caller may see.
    pub running: Vec<Running>,
}

/// One running item and the tail of its output.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct RunningOutput {
    /// The item.
    pub running: Running,
    /// Its last 64 KiB of output (stdout and stderr as they came).
    pub output: String,
}

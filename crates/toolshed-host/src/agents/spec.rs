//! The agent tools as data: their arguments (whose doc comments and bounds are the input
//! schemas, `toolshed_kit::args`) and their specs.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};
use toolshed_kit::args::schema;

/// The tools' group.
pub(crate) const GROUP: &str = "agents";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Run,
    Presets,
    TodoWrite,
    TodoRead,
    GoalSet,
    GoalStatus,
    PlanEnter,
    PlanSubmit,
    ScheduleCreate,
    ScheduleList,
    ScheduleDelete,
    WorkflowRun,
    WorkflowList,
}

impl Op {
    pub(crate) const ALL: [Op; 13] = [
        Op::Run,
        Op::Presets,
        Op::TodoWrite,
        Op::TodoRead,
        Op::GoalSet,
        Op::GoalStatus,
        Op::PlanEnter,
        Op::PlanSubmit,
        Op::ScheduleCreate,
        Op::ScheduleList,
        Op::ScheduleDelete,
        Op::WorkflowRun,
        Op::WorkflowList,
    ];
}

/// `agent_run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunArgs {
    /// What the subagent is to do
    #[schemars(length(min = 1, max = 32768))]
    pub(crate) task: String,
    /// A preset from agent_presets_list
    #[schemars(length(max = 64))]
    pub(crate) preset: Option<String>,
    /// Tools it may use (globs), within yours
    #[schemars(length(max = 64))]
    pub(crate) tools: Option<Vec<String>>,
    /// Model turns at most
    #[schemars(range(min = 1))]
    pub(crate) max_steps: Option<u32>,
    /// Tokens at most, all turns
    #[schemars(range(min = 1))]
    pub(crate) max_tokens: Option<u64>,
    #[schemars(range(min = 1))]
    pub(crate) timeout_ms: Option<u64>,
    /// A goal (goal_set) it works towards
    #[schemars(length(max = 64))]
    pub(crate) goal: Option<String>,
}

/// `agent_presets_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

/// One item of a todo list.
#[derive(Debug, Clone, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodoItem {
    #[schemars(length(min = 1, max = 64))]
    pub(crate) id: String,
    #[schemars(length(min = 1, max = 2000))]
    pub(crate) text: String,
    pub(crate) status: TodoStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2000))]
    pub(crate) notes: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TodoStatus {
    Pending,
    InProgress,
    Done,
}

/// `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodoWriteArgs {
    /// The whole list; replaces the one kept
    pub(crate) todos: Vec<TodoItem>,
    /// Which list (default `default`); a goal's name keeps its list
    #[schemars(length(min = 1, max = 64))]
    pub(crate) list: Option<String>,
}

/// `todo_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TodoReadArgs {
    #[schemars(length(min = 1, max = 64))]
    pub(crate) list: Option<String>,
}

/// `goal_set`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GoalSetArgs {
    #[schemars(length(min = 1, max = 64))]
    pub(crate) name: String,
    #[schemars(length(max = 4000))]
    pub(crate) objective: Option<String>,
    /// How to tell it is reached
    #[schemars(length(max = 32))]
    pub(crate) criteria: Option<Vec<String>>,
    /// active, achieved or abandoned
    pub(crate) status: Option<GoalStatus>,
    #[schemars(length(max = 4000))]
    pub(crate) note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GoalStatus {
    Active,
    Achieved,
    Abandoned,
}

impl GoalStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Achieved => "achieved",
            GoalStatus::Abandoned => "abandoned",
        }
    }
}

/// `goal_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GoalStatusArgs {
    /// One goal; all when left out
    #[schemars(length(min = 1, max = 64))]
    pub(crate) name: Option<String>,
}

/// `plan_submit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanSubmitArgs {
    /// What you will do, step by step
    #[schemars(length(min = 1, max = 32768))]
    pub(crate) plan: String,
    /// Sandbox mode to run in once approved: read-only, workspace-write, full-access
    pub(crate) mode: Option<String>,
}

/// `schedule_create`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScheduleCreateArgs {
    #[schemars(length(min = 1, max = 64))]
    pub(crate) name: String,
    /// Once, e.g. 2026-12-24T09:00:00+01:00
    pub(crate) at: Option<String>,
    /// 5-field cron, e.g. `0 9 * * 1-5`
    pub(crate) cron: Option<String>,
    /// IANA zone for cron/at (default UTC)
    pub(crate) tz: Option<String>,
    /// A tool to call
    pub(crate) tool: Option<String>,
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub(crate) arguments: Option<Value>,
    /// Or a workflow to run, with `arguments` as its inputs
    pub(crate) workflow: Option<String>,
    /// After downtime: skip (default) or run_once
    pub(crate) missed: Option<Missed>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Missed {
    #[default]
    Skip,
    RunOnce,
}

/// `schedule_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScheduleListArgs {}

/// `schedule_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScheduleDeleteArgs {
    /// Its id or name
    #[schemars(length(min = 1, max = 64))]
    pub(crate) id: String,
}

/// `workflow_run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkflowRunArgs {
    #[schemars(length(min = 1, max = 64))]
    pub(crate) name: String,
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub(crate) inputs: Option<Value>,
}

const WRITES: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

const READS: ToolAnnotations = ToolAnnotations::PURE;

/// A tool whose effects are the calls it makes, each checked on its own: as `run_code`.
const CALLS_TOOLS: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

pub(crate) fn spec(op: Op) -> ToolSpec {
    let (name, title, description, input, annotations) = match op {
        Op::Run => (
            "agent_run",
            "Run a subagent",
            "Delegate a task to a subagent: a model loop that calls tools (no wider than yours) \
             and returns its answer with a summary of what it did.",
            schema::<RunArgs>(),
            CALLS_TOOLS,
        ),
        Op::Presets => (
            "agent_presets_list",
            "List agent presets",
            "List the subagent presets agent_run can start, with what each is for.",
            schema::<NoArgs>(),
            READS,
        ),
        Op::TodoWrite => (
            "todo_write",
            "Write the todo list",
            "Replace your todo list: items {id, text, status: pending|in_progress|done, notes?}.",
            schema::<TodoWriteArgs>(),
            WRITES,
        ),
        Op::TodoRead => (
            "todo_read",
            "Read the todo list",
            "Read your todo list.",
            schema::<TodoReadArgs>(),
            READS,
        ),
        Op::GoalSet => (
            "goal_set",
            "Set a goal",
            "Set or update a named goal: objective, success criteria, status. Its todo list is \
             the list of the same name.",
            schema::<GoalSetArgs>(),
            WRITES,
        ),
        Op::GoalStatus => (
            "goal_status",
            "Goal status",
            "Show a goal (or all) with its criteria and todo progress.",
            schema::<GoalStatusArgs>(),
            READS,
        ),
        Op::PlanEnter => (
            "plan_enter",
            "Enter plan mode",
            "Switch to plan mode: only read-only tools run until a person approves your plan.",
            schema::<NoArgs>(),
            WRITES,
        ),
        Op::PlanSubmit => (
            "plan_submit",
            "Submit a plan",
            "Submit your plan to the person; once approved, calls that change things run.",
            schema::<PlanSubmitArgs>(),
            WRITES,
        ),
        Op::ScheduleCreate => (
            "schedule_create",
            "Schedule a call",
            "Run a tool call or a workflow at a time (`at`) or on a cron expression, as you.",
            schema::<ScheduleCreateArgs>(),
            WRITES,
        ),
        Op::ScheduleList => (
            "schedule_list",
            "List schedules",
            "List your schedules with their next and last runs.",
            schema::<ScheduleListArgs>(),
            READS,
        ),
        Op::ScheduleDelete => (
            "schedule_delete",
            "Delete a schedule",
            "Delete one of your schedules.",
            schema::<ScheduleDeleteArgs>(),
            ToolAnnotations {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: false,
            },
        ),
        Op::WorkflowRun => (
            "workflow_run",
            "Run a workflow",
            "Run a workflow (workflow_list) with its inputs; each step goes through the usual \
             checks.",
            schema::<WorkflowRunArgs>(),
            CALLS_TOOLS,
        ),
        Op::WorkflowList => (
            "workflow_list",
            "List workflows",
            "List the workflows of this workspace with their inputs.",
            schema::<NoArgs>(),
            READS,
        ),
    };
    let mut spec = ToolSpec::new(name, description)
        .title(title)
        .group(GROUP)
        .input_schema(input)
        .annotations(annotations);
    spec.danger = match op {
        Op::Run | Op::WorkflowRun | Op::ScheduleCreate | Op::ScheduleDelete => Danger::Medium,
        _ => Danger::Low,
    };
    spec.mutates_state = !annotations.read_only;
    if matches!(op, Op::Run | Op::WorkflowRun) {
        spec.streaming = true;
        // A subagent or a workflow takes many calls: ten minutes unless the caller says.
        spec.default_timeout_ms = Some(600_000);
    }
    spec
}

//! The replies of the people-facing endpoints: approval requests, questions tools asked,
//! and the audit log.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// Where an approval request stands.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ApprovalState {
    /// Waiting for an answer.
    Pending,
    /// Approved.
    Approved,
    /// Denied.
    Denied,
    /// Nobody answered in time (or toolshed restarted).
    Expired,
}

impl From<toolshed_host::approvals::ApprovalState> for ApprovalState {
    fn from(state: toolshed_host::approvals::ApprovalState) -> Self {
        use toolshed_host::approvals::ApprovalState as S;
        match state {
            S::Pending => Self::Pending,
            S::Approved => Self::Approved,
            S::Denied => Self::Denied,
            S::Expired => Self::Expired,
        }
    }
}

/// A call waiting for a person's approval, or how its request ended.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Approval {
    /// Its id, e.g. `ap-0123456789abcdef`.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The owner the call runs as.
    pub owner: String,
    /// SHA-256 of the tool and its exact arguments.
    pub digest: String,
    /// The call, readable: the tool and its arguments, shortened.
    pub summary: String,
    /// The rule that asked.
    pub rule: String,
    /// Why it asked.
    pub reason: String,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When it expires.
    pub expires_ms: i64,
    /// Where it stands.
    pub state: ApprovalState,
    /// Who answered.
    pub answered_by: Option<String>,
    /// When.
    pub answered_ms: Option<i64>,
    /// Whether a yes was remembered for the owner.
    pub remembered: bool,
}

impl From<toolshed_host::approvals::ApprovalRequest> for Approval {
    fn from(request: toolshed_host::approvals::ApprovalRequest) -> Self {
        let toolshed_host::approvals::ApprovalRequest {
            id,
            tool,
            owner,
            digest,
            summary,
            rule,
            reason,
            created_ms,
            expires_ms,
            state,
            answered_by,
            answered_ms,
            remembered,
        } = request;
        Self {
            id,
            tool,
            owner,
            digest,
            summary,
            rule,
            reason,
            created_ms,
            expires_ms,
            state: state.into(),
            answered_by,
            answered_ms,
            remembered,
        }
    }
}

/// Approval requests, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct ApprovalList {
    /// The requests.
    pub approvals: Vec<Approval>,
}

/// A question a tool asked a person, waiting for its answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Question {
    /// Its id, e.g. `q-0123456789abcdef`.
    pub id: String,
    /// The owner whose call asks.
    pub owner: String,
    /// What the person reads.
    pub message: String,
    /// The answer's shape: an object schema.
    #[schemars(with = "Map<String, Value>")]
    pub schema: Value,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub created_ms: i64,
}

impl From<toolshed_host::questions::PendingQuestion> for Question {
    fn from(question: toolshed_host::questions::PendingQuestion) -> Self {
        let toolshed_host::questions::PendingQuestion {
            id,
            owner,
            message,
            schema,
            created_ms,
        } = question;
        Self {
            id,
            owner,
            message,
            schema,
            created_ms,
        }
    }
}

/// The questions waiting, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct QuestionList {
    /// The questions.
    pub questions: Vec<Question>,
}

/// A question answered.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Answered {
    /// The question.
    pub answered: Question,
}

/// One audit row: a call and how it ended (its arguments kept only as a digest).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AuditRow {
    /// The row id: rows are numbered in the order they were written.
    pub id: i64,
    /// When the call started, in milliseconds since the Unix epoch.
    pub ts_ms: i64,
    /// The call id.
    pub call_id: String,
    /// The owner.
    pub owner: String,
    /// The door it came through: `cli`, `mcp`, `rest`.
    pub door: String,
    /// The tool name as asked.
    pub tool: String,
    /// The plugin that served it, if it was resolved.
    pub plugin: Option<String>,
    /// SHA-256 of the arguments' JSON.
    pub args_sha256: String,
    /// How it ended: it ran (`ok`), it ran and reported a failure (`tool_error`), or it
    /// did not run to a result (`error`).
    #[schemars(extend("enum" = ["ok", "tool_error", "error"]))]
    pub outcome: String,
    /// The error kind, for `error` outcomes.
    pub error_kind: Option<String>,
    /// Wall time in milliseconds.
    pub duration_ms: i64,
    /// How the approval the call needed ended, and who answered (`ap-… approved by …`).
    pub approval: Option<String>,
    /// For a call a tool made on behalf of another (a `run_code` snippet's, a plugin's
    /// `tools.call`): the call id of the call that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// What the tool noted about the call (a background process stop: the close request,
    /// who asked and how it ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl From<toolshed_host::AuditRow> for AuditRow {
    fn from(row: toolshed_host::AuditRow) -> Self {
        let toolshed_host::AuditRow { id, record } = row;
        let toolshed_host::AuditRecord {
            ts_ms,
            call_id,
            owner,
            door,
            tool,
            plugin,
            args_sha256,
            outcome,
            error_kind,
            duration_ms,
            approval,
            parent,
            note,
        } = record;
        Self {
            id,
            ts_ms,
            call_id,
            owner,
            door,
            tool,
            plugin,
            args_sha256,
            outcome,
            error_kind,
            duration_ms,
            approval,
            parent,
            note,
        }
    }
}

/// A page of audit rows, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct AuditPage {
    /// The rows.
    pub audit: Vec<AuditRow>,
    /// Pass as `cursor` for the next (older) page; `null` on the last page.
    pub next_cursor: Option<String>,
}

impl From<toolshed_host::AuditPage> for AuditPage {
    fn from(page: toolshed_host::AuditPage) -> Self {
        let toolshed_host::AuditPage { rows, next_cursor } = page;
        Self {
            audit: rows.into_iter().map(AuditRow::from).collect(),
            next_cursor,
        }
    }
}

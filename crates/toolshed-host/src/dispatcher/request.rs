//! What a door hands the pipeline: one call, with who asks, how it may be narrowed and the
//! door's ways to reach the person behind it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolshed_core::{OwnerId, ProgressSink};

use crate::approvals::Approver;
use crate::review::CompiledRules;

/// One call, as a door hands it to the pipeline.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The tool name.
    pub tool: String,
    /// The arguments object.
    pub arguments: Value,
    /// Who is calling.
    pub owner: OwnerId,
    /// The door: `cli`, `mcp`, `rest`.
    pub door: &'static str,
    /// A deadline the caller asks for; capped by `limits.max_timeout_ms`.
    pub timeout: Option<Duration>,
    /// Fired by the caller to cancel.
    pub cancel: CancellationToken,
    /// Where the caller wants progress.
    pub progress: Option<ProgressSink>,
    /// A profile narrowing which tools the caller sees.
    pub profile: Option<String>,
    /// Tool-name globs the door narrowed this caller to (`toolshed mcp --tools`), applied
    /// on top of the host rules and the profile.
    pub selection: Option<Arc<CompiledRules>>,
    /// The tools the caller's token is limited to (its `tool:` scopes), on top of the rest.
    pub caller_tools: Option<Arc<CompiledRules>>,
    /// The agent token the caller presented (its id); `None`: the admin credential or a
    /// local door. What a call leaves to run later (a schedule) runs only while it is live.
    pub credential: Option<String>,
    /// Further narrowings, each of which must allow the tool: those of the subagents
    /// (`agent_run`) whose calls led here, outermost first.
    pub narrowing: Vec<Arc<CompiledRules>>,
    /// For a call a plugin made through `tools.call`: the plugins whose calls led to it,
    /// outermost first. A plugin already on it cannot be called again (it is busy serving
    /// the call that waits for this one).
    pub via_plugins: Vec<String>,
    /// The door's way to ask the calling client's user for an approval (MCP elicitation);
    /// approvals can always be answered through the CLI and REST as well.
    pub approver: Option<Arc<dyn Approver>>,
    /// For a call a tool made on behalf of another: the call id of the call that made it,
    /// kept in the audit row so a `run_code` run's inner calls can be found from it.
    pub parent: Option<String>,
    /// The calling client's model (MCP sampling), for plugins' `ctx.llm.complete`; the
    /// host's `[llm]` endpoint answers when it is `None`.
    pub sampler: Option<Arc<dyn toolshed_core::Sampler>>,
    /// For a call a tool made on behalf of another: the sandbox mode the call that made it
    /// was narrowed to (by a policy rule, too), which its nested calls cannot widen.
    pub sandbox_ceiling: Option<toolshed_ops::sandbox::SandboxMode>,
    /// Arguments the door left out of `arguments` because they are over the tool's limit.
    pub oversized: Vec<toolshed_core::OversizedArgument>,
    /// For a door that asks a person in a later request rather than during this one (the
    /// 2026-07-28 era's input-required results): an approval the call needs is created
    /// and left pending, put here, and the call refused with `needs_approval`.
    pub defer_approval: Option<Arc<DeferredApproval>>,
    /// An approval request the door saw a person answer for this call (in an input
    /// round trip); the call runs if it approved this very call (owner, tool, arguments).
    pub answered_approval: Option<String>,
    /// The door's way to put a tool's question to the calling client's user (`ask_user`);
    /// `None`: the question waits for an answer over REST.
    pub asker: Option<Arc<dyn toolshed_core::Asker>>,
    /// Told when the tool starts to run — its approval and hooks passed — or when its
    /// approval waits for an answer over REST alone (a door that may turn a long call into
    /// a task counts from then).
    pub started: Option<Arc<tokio::sync::Notify>>,
    /// Where log messages of the call go to its caller (MCP `notifications/message`).
    pub log: Option<toolshed_core::LogSink>,
    /// What the caller wants echoed in the events of the call's job (Agent Spaces'
    /// `workspaceId`, `executorId`, `taskId`, `meta`).
    pub context: Option<Value>,
    /// The note the tool leaves on the call's audit row.
    pub audit_note: toolshed_core::AuditNote,
    /// The idempotency key the door was given (REST's `Idempotency-Key` header): for a tool
    /// idempotent by key, a call repeated with it gets the first call's result.
    pub idempotency_key: Option<String>,
}

/// Where a call that deferred its approval leaves the request it made.
#[derive(Debug, Default)]
pub struct DeferredApproval {
    asked: std::sync::Mutex<Option<crate::approvals::ApprovalRequest>>,
}

impl DeferredApproval {
    /// The request the call left pending, if it needed one.
    pub fn asked(&self) -> Option<crate::approvals::ApprovalRequest> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set(&self, request: crate::approvals::ApprovalRequest) {
        *self
            .asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(request);
    }
}

impl std::fmt::Debug for dyn Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Approver({})", self.who())
    }
}

impl CallRequest {
    /// A request with defaults: no timeout override, a fresh token, no progress, no profile.
    pub fn new(
        tool: impl Into<String>,
        arguments: Value,
        owner: OwnerId,
        door: &'static str,
    ) -> Self {
        Self {
            tool: tool.into(),
            arguments,
            owner,
            door,
            timeout: None,
            cancel: CancellationToken::new(),
            progress: None,
            profile: None,
            selection: None,
            caller_tools: None,
            narrowing: Vec::new(),
            credential: None,
            via_plugins: Vec::new(),
            approver: None,
            parent: None,
            sampler: None,
            sandbox_ceiling: None,
            oversized: Vec::new(),
            defer_approval: None,
            answered_approval: None,
            asker: None,
            started: None,
            log: None,
            context: None,
            audit_note: toolshed_core::AuditNote::default(),
            idempotency_key: None,
        }
    }
}

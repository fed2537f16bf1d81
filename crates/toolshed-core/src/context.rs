//! The context a tool runs in.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::ToolCaller;
pub use crate::note::AuditNote;

/// Who is calling: one per MCP session, per REST token and owner header, or per CLI run.
/// Ownership checks (sessions, processes, read-before-edit) key on it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OwnerId(pub String);

impl OwnerId {
    /// An owner from any string.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// Whether `other` is this owner or one of its sub-owners (`this/…`).
    pub fn covers(&self, other: &str) -> bool {
        other
            .strip_prefix(self.0.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Identifies one call across events and audit rows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallId(pub String);

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A progress report from a running tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Work done so far, in the tool's own units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    /// Total work, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A message or a chunk of streamed output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Where a tool sends progress. Cheap to clone; sending never blocks and never fails: a door
/// that cannot keep up drops or coalesces reports itself.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    /// A sink that calls `f` for every report.
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// A sink that drops everything.
    pub fn discard() -> Self {
        Self::new(|_| {})
    }

    /// Reports progress.
    pub fn send(&self, progress: Progress) {
        (self.0)(progress)
    }

    /// Reports a message.
    pub fn message(&self, message: impl Into<String>) {
        self.send(Progress {
            progress: None,
            total: None,
            message: Some(message.into()),
        })
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Everything a tool knows about the call it is serving.
#[derive(Clone)]
pub struct CallContext {
    /// Who is calling.
    pub owner: OwnerId,
    /// This call's id.
    pub call_id: CallId,
    /// Fired when the caller cancels or the deadline passes. Tools that wait or spawn must
    /// watch it and stop promptly, killing what they started.
    pub cancel: CancellationToken,
    /// When the call must be finished.
    pub deadline: Instant,
    /// Where progress and streamed output go.
    pub progress: ProgressSink,
    /// The plugin's resolved configuration (defaults merged with user values).
    pub config: Map<String, Value>,
    /// Calls other tools through the whole pipeline on behalf of this call (same owner,
    /// cancellation, deadline and narrowing), for plugins granted `tools`; `None` outside
    /// a host. Shared services (files, HTTP, ...) are not here: tools are built with them
    /// (see `toolshed_ops::Services`).
    pub caller: Option<Arc<dyn ToolCaller>>,
    /// Whether a person approved this exact call (policy asked, and was answered yes): a
    /// tool may then do what the call asked beyond its defaults (a wider sandbox).
    pub approved: bool,
    /// The policy rules whose question a person answered yes for this call (their names,
    /// `policy.default.<level>` for a danger default): what the call finds to touch while
    /// it runs passes a rule that asks only when that same rule was approved.
    pub approved_rules: Vec<String>,
    /// Who answers a model completion asked for during this call (`ctx.llm.complete`):
    /// the calling client through MCP sampling, else the host's configured endpoint;
    /// `None` when neither can.
    pub sampler: Option<Arc<dyn crate::Sampler>>,
    /// Who puts a question to the person behind the call (`ask_user`, `ctx.ask`): the
    /// calling client, else the host's REST API; `None` outside a host.
    pub asker: Option<Arc<dyn crate::Asker>>,
    /// What commands run for this call may write, from the policy rules on `writes` (see
    /// [`crate::WriteScope`]); tools that start commands give it to their sandbox.
    pub write_scope: crate::WriteScope,
    /// A narrower sandbox mode this call runs in than the host's (`read-only`,
    /// `workspace-write`): from the caller's profile, its token or a policy rule. Tools
    /// that start commands run them in it; in `read-only` the pipeline refuses the call
    /// before it runs if it writes files. `None`: the host's mode.
    pub sandbox: Option<String>,
    /// Where log messages of this call go to its caller (an MCP client's
    /// `notifications/message`: `{level, logger, data}`); `None`: nowhere.
    pub log: Option<LogSink>,
    /// A short note the tool leaves on the call's audit row (how a stop ended, what a
    /// close request was): one per call, the first one kept.
    pub audit_note: AuditNote,
    /// Variables the host adds to the commands this call starts, under the call's own
    /// `env`: what granted plugins contribute and the caller's session layer.
    pub command_env: CommandEnv,
}

/// Where the variables a host adds to commands come from ([`CallContext::command_env`]).
pub trait CommandEnvSource: Send + Sync {
    /// The variables for a command `owner` starts, later ones winning.
    fn vars(&self, owner: &OwnerId) -> Vec<(String, String)>;
}

/// The variables a host adds to the commands of a call: asked for only when a command is
/// started, so a call that starts none pays nothing.
#[derive(Clone, Default)]
pub struct CommandEnv(Option<Arc<dyn CommandEnvSource>>);

impl CommandEnv {
    /// Variables from `source`.
    pub fn new(source: Arc<dyn CommandEnvSource>) -> Self {
        Self(Some(source))
    }

    /// The variables for a command `owner` starts (none outside a host).
    pub fn vars(&self, owner: &OwnerId) -> Vec<(String, String)> {
        self.0.as_ref().map(|s| s.vars(owner)).unwrap_or_default()
    }
}

impl fmt::Debug for CommandEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CommandEnv")
    }
}

/// Takes the params of a log message for the caller (`{level, logger, data}`).
#[derive(Clone)]
pub struct LogSink(Arc<dyn Fn(serde_json::Value) + Send + Sync>);

impl LogSink {
    /// A sink calling `f` with each message.
    pub fn new(f: impl Fn(serde_json::Value) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Sends one message.
    pub fn send(&self, params: serde_json::Value) {
        (self.0)(params);
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LogSink")
    }
}

impl CallContext {
    /// A context for tests and embedders: owner `test`, a fresh token, a deadline `timeout`
    /// from now, progress discarded, empty config.
    pub fn for_test(timeout: std::time::Duration) -> Self {
        Self {
            owner: OwnerId::new("test"),
            call_id: CallId("test-call".into()),
            cancel: CancellationToken::new(),
            deadline: Instant::now() + timeout,
            progress: ProgressSink::discard(),
            config: Map::new(),
            caller: None,
            approved: false,
            approved_rules: Vec::new(),
            sampler: None,
            asker: None,
            write_scope: crate::WriteScope::default(),
            sandbox: None,
            log: None,
            audit_note: AuditNote::default(),
            command_env: CommandEnv::default(),
        }
    }

    /// Whether this call may also touch what it found while running (see
    /// [`ToolCaller::may_touch`]); outside a host, yes.
    pub fn may_touch(&self, touches: &crate::Touches) -> Result<(), crate::ToolError> {
        match &self.caller {
            Some(caller) => caller.may_touch(self, touches),
            None => Ok(()),
        }
    }

    /// [`may_touch`](Self::may_touch) for paths it would read.
    pub fn may_read(&self, paths: &[String]) -> Result<(), crate::ToolError> {
        self.may_touch(&crate::Touches {
            reads: paths.to_vec(),
            ..crate::Touches::default()
        })
    }

    /// [`may_touch`](Self::may_touch) for paths it would write.
    pub fn may_write(&self, paths: &[String]) -> Result<(), crate::ToolError> {
        self.may_touch(&crate::Touches {
            writes: paths.to_vec(),
            ..crate::Touches::default()
        })
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("owner", &self.owner)
            .field("call_id", &self.call_id)
            .field("deadline", &self.deadline)
            .field("caller", &self.caller.is_some())
            .finish_non_exhaustive()
    }
}

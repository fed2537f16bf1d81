//! The one pipeline every call goes through, whatever door it came in by:
//! resolve → review → validate → policy → pre hooks → run → post hooks → record.
//!
//! Doors translate their protocol into a [`CallRequest`] and the [`CallResult`] back. They
//! check nothing themselves, and tools re-implement none of this.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};
use toolshed_core::{
    CallContext, CallId, CancellationToken, OwnerId, ProgressSink, ToolCaller, ToolError,
    ToolOutput, Violation,
};

use crate::approvals::{self, ApprovalState, ApprovalsConfig, Approver, NewApproval};
use crate::config::Limits;
use crate::events::{Event, EventBus};
use crate::hooks::Hooks;
use crate::policy::{Policy, PolicyDecision};
use crate::quotas::Quotas;
use crate::registry::{Registry, ToolEntry};
use crate::review::{CompiledRules, Review, Subject};
use crate::store::{AuditRecord, StateStore};
use crate::suggest::closest;
use toolshed_core::TRACE;
use tracing::Instrument as _;

/// How long a cancelled or timed-out tool gets to stop by itself before it is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The most schema violations listed for one call.
pub const MAX_VIOLATIONS: usize = 50;

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
}

impl std::fmt::Debug for dyn Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Approver({})", self.who())
    }
}

/// What policy said about a call that may run.
enum Gate {
    /// Run it.
    Allow,
    /// Run it once a person approves.
    Ask { rule: String, reason: String },
}

/// What a nested call inherits from the call that made it.
struct Lineage {
    profile: Option<String>,
    selection: Option<Arc<CompiledRules>>,
    caller_tools: Option<Arc<CompiledRules>>,
    plugins: Vec<String>,
    /// The narrowed sandbox mode of the call that made it.
    sandbox: Option<toolshed_ops::sandbox::SandboxMode>,
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
            via_plugins: Vec::new(),
            approver: None,
            parent: None,
            sampler: None,
            sandbox_ceiling: None,
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone)]
pub struct CallResult {
    /// The call's id.
    pub call_id: CallId,
    /// The plugin that served it, when resolved.
    pub plugin_id: Option<String>,
    /// The tool's output, or why there is none.
    pub result: Result<ToolOutput, ToolError>,
    /// Wall time.
    pub duration: Duration,
}

/// Calls made by plugins (granted `tools`) on behalf of the call they are serving: same
/// owner, cancellation and deadline, door `plugin`, and the narrowing of the call that led
/// to them. One per call, in its context's `caller`.
struct NestedCaller {
    dispatcher: Weak<Dispatcher>,
    lineage: Lineage,
    /// The tool whose call this is (its rules judge what the call finds to touch).
    tool: String,
}

#[async_trait::async_trait]
impl ToolCaller for NestedCaller {
    async fn call_tool(
        &self,
        ctx: &CallContext,
        caller: &str,
        name: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        let Some(dispatcher) = self.dispatcher.upgrade() else {
            return Err(ToolError::Internal("the host is shutting down".into()));
        };
        let lineage = &self.lineage;
        let mut via: Vec<String> = lineage.plugins.clone();
        if via.last().map(String::as_str) != Some(caller) {
            via.push(caller.to_string());
        }
        if let Some(entry) = dispatcher.registry.lookup(name)
            && via.contains(&entry.plugin_id)
        {
            let message = if entry.plugin_id == caller {
                format!(
                    "plugin `{caller}` cannot call its own tool `{name}` through the host; call the function directly"
                )
            } else {
                format!(
                    "plugin `{caller}` cannot call `{name}`: its plugin `{}` is already serving the call that led here (calls went {}), and would wait for itself",
                    entry.plugin_id,
                    via.join(" -> ")
                )
            };
            return Err(ToolError::Denied {
                rule: "plugin capabilities".into(),
                message,
            });
        }
        let remaining = ctx.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(ToolError::Timeout(Duration::ZERO));
        }
        let mut request = CallRequest::new(name, args, ctx.owner.clone(), "plugin");
        request.timeout = Some(remaining);
        request.cancel = ctx.cancel.child_token();
        // The outer caller's narrowing holds for what its plugins call on its behalf.
        request.profile = lineage.profile.clone();
        request.selection = lineage.selection.clone();
        request.caller_tools = lineage.caller_tools.clone();
        request.via_plugins = via;
        request.parent = Some(ctx.call_id.0.clone());
        request.sampler = ctx.sampler.clone();
        request.sandbox_ceiling = lineage.sandbox;
        // On a task of its own, so that the call is recorded even when the plugin stops
        // waiting for it (its own call ended or was cancelled; the child token stops it).
        match tokio::spawn(async move { dispatcher.call(request).await.result }).await {
            Ok(result) => result,
            Err(e) => Err(ToolError::Internal(format!("a nested call failed: {e}"))),
        }
    }

    fn may_touch(
        &self,
        ctx: &CallContext,
        touches: &toolshed_core::Touches,
    ) -> Result<(), ToolError> {
        match self.dispatcher.upgrade() {
            Some(dispatcher) => dispatcher.may_touch(&self.tool, ctx, touches),
            None => Err(ToolError::Internal("the host is shutting down".into())),
        }
    }

    async fn set_own_config(&self, plugin: &str, key: &str, value: Value) -> Result<(), ToolError> {
        let Some(dispatcher) = self.dispatcher.upgrade() else {
            return Err(ToolError::Internal("the host is shutting down".into()));
        };
        let Some(manifest) = dispatcher.registry.manifest(plugin) else {
            return Err(ToolError::NotFound(format!("no plugin `{plugin}`")));
        };
        let writable: Vec<&str> = manifest
            .config
            .iter()
            .filter(|f| f.writable && !f.secret)
            .map(|f| f.key.as_str())
            .collect();
        let Some(field) = manifest
            .config
            .iter()
            .find(|f| f.key == key && f.writable && !f.secret)
        else {
            return Err(ToolError::Denied {
                rule: "plugin config".into(),
                message: format!(
                    "plugin `{plugin}` may not change config field `{key}`: only fields its manifest marks `writable = true` (and never secrets) can be set by the plugin; it may set {}",
                    if writable.is_empty() {
                        "none".to_string()
                    } else {
                        writable.join(", ")
                    }
                ),
            });
        };
        crate::config_fields::check(field, &value)
            .map_err(|problem| ToolError::invalid(format!("config.set(`{key}`): {problem}")))?;
        let store = dispatcher.store.clone();
        let (plugin, key) = (plugin.to_string(), key.to_string());
        tokio::task::spawn_blocking(move || store.set_config_value(&plugin, &key, &value, false))
            .await
            .map_err(|e| ToolError::Internal(e.to_string()))?
            .map_err(|e| ToolError::Internal(e.to_string()))
    }
}

/// The pipeline.
pub struct Dispatcher {
    registry: Arc<Registry>,
    store: Arc<StateStore>,
    events: EventBus,
    review: Review,
    limits: Limits,
    audit_max_rows: u64,
    policy: Arc<dyn Policy>,
    hooks: Hooks,
    approvals: ApprovalsConfig,
    quotas: Quotas,
    llm: Option<Arc<dyn toolshed_core::Sampler>>,
    trace_arguments: bool,
    files: Option<Arc<dyn toolshed_ops::FileOps>>,
    sandbox_mode: Option<toolshed_ops::sandbox::SandboxMode>,
    /// This dispatcher, for the nested calls of plugins.
    me: Weak<Dispatcher>,
    next_call: AtomicU64,
    epoch: u64,
    /// Calls running now, and a wake-up for whoever waits for none (a draining server).
    in_flight: Arc<InFlight>,
}

/// Counts calls between their start and their record.
#[derive(Default)]
struct InFlight {
    count: AtomicU64,
    idle: tokio::sync::Notify,
}

/// Holds one call's place in [`InFlight`] until dropped (also when the call's future is).
struct InFlightGuard(Arc<InFlight>);

impl InFlightGuard {
    fn new(in_flight: &Arc<InFlight>) -> Self {
        in_flight.count.fetch_add(1, Ordering::SeqCst);
        Self(in_flight.clone())
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// What the dispatcher is built from.
pub struct DispatcherParts {
    /// The tool index.
    pub registry: Arc<Registry>,
    /// Where audit rows go.
    pub store: Arc<StateStore>,
    /// Where events go.
    pub events: EventBus,
    /// Compiled review rules.
    pub review: Review,
    /// Deadlines.
    pub limits: Limits,
    /// Audit retention.
    pub audit_max_rows: u64,
    /// The policy.
    pub policy: Arc<dyn Policy>,
    /// Hooks.
    pub hooks: Hooks,
    /// How long a call waits for an approval.
    pub approvals: ApprovalsConfig,
    /// Calls per minute and at once, per owner.
    pub quotas: Quotas,
    /// The `[llm]` endpoint, answering model requests when the caller's client cannot.
    pub llm: Option<Arc<dyn toolshed_core::Sampler>>,
    /// Put each call's arguments on its trace span (`[telemetry] record_arguments`).
    pub trace_arguments: bool,
    /// The workspace's files, to resolve the paths a call touches (see `touches`).
    pub files: Option<Arc<dyn toolshed_ops::FileOps>>,
    /// The host's `[sandbox] mode`: a caller's mode narrows it, never widens it.
    pub sandbox_mode: Option<toolshed_ops::sandbox::SandboxMode>,
}

impl Dispatcher {
    /// A shared dispatcher over the given parts. Every call's context carries a
    /// [`ToolCaller`]: sandboxed plugins granted `tools` call other tools through it, and so
    /// through this same pipeline.
    pub fn new_shared(parts: DispatcherParts) -> Arc<Self> {
        Arc::new_cyclic(|me: &Weak<Self>| Self::new(parts, me.clone()))
    }

    fn new(parts: DispatcherParts, me: Weak<Self>) -> Self {
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        Self {
            registry: parts.registry,
            store: parts.store,
            events: parts.events,
            review: parts.review,
            limits: parts.limits,
            audit_max_rows: parts.audit_max_rows,
            policy: parts.policy,
            hooks: parts.hooks,
            approvals: parts.approvals,
            quotas: parts.quotas,
            llm: parts.llm,
            trace_arguments: parts.trace_arguments,
            files: parts.files,
            sandbox_mode: parts.sandbox_mode,
            me,
            next_call: AtomicU64::new(1),
            epoch,
            in_flight: Arc::default(),
        }
    }

    /// How many calls are running now (from their start until they are recorded).
    pub fn calls_in_flight(&self) -> u64 {
        self.in_flight.count.load(Ordering::SeqCst)
    }

    /// Waits until no call is running, or `grace` has passed; whether none is.
    pub async fn until_idle(&self, grace: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let idle = self.in_flight.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.calls_in_flight() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.calls_in_flight() == 0;
            }
        }
    }

    /// The compiled review rules.
    pub fn review(&self) -> &Review {
        &self.review
    }

    /// Whether `tool` is visible to a caller using `profile`.
    pub fn visible(&self, tool: &ToolEntry, profile: Option<&str>) -> bool {
        self.visible_to(tool, profile, None)
    }

    /// Whether `tool` is visible to a caller using `profile` and narrowed to `selection`:
    /// the same answer the review step gives when that caller calls it.
    pub fn visible_to(
        &self,
        tool: &ToolEntry,
        profile: Option<&str>,
        selection: Option<&CompiledRules>,
    ) -> bool {
        let rules = profile.and_then(|p| self.review.profile(p));
        let subject = Subject::new(tool.spec(), &tool.plugin_id);
        self.review.refuse(&subject, rules).is_none()
            && selection.is_none_or(|s| s.refuse(&subject).is_none())
    }

    /// The named tool, if it exists and is visible to a caller using `profile` and narrowed
    /// to `selection`.
    pub fn visible_tool(
        &self,
        name: &str,
        profile: Option<&str>,
        selection: Option<&CompiledRules>,
    ) -> Option<ToolEntry> {
        self.registry
            .lookup(name)
            .filter(|entry| self.visible_to(entry, profile, selection))
    }

    /// Runs one call through the whole pipeline and records it.
    pub async fn call(&self, mut req: CallRequest) -> CallResult {
        let _in_flight = InFlightGuard::new(&self.in_flight);
        let started = Instant::now();
        let ts_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let n = self.next_call.fetch_add(1, Ordering::Relaxed);
        let call_id = CallId(format!("{:x}-{n}", self.epoch));
        // The call's span, inside the door's (docs/telemetry.md); the field values are only
        // computed when something listens.
        let span = tracing::info_span!(
            target: TRACE,
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", req.tool),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %req.tool,
            gen_ai.tool.call.id = %call_id.0,
            toolshed.owner = %req.owner.0,
            toolshed.door = req.door,
            toolshed.parent_call = req.parent.as_deref(),
            toolshed.plugin = tracing::field::Empty,
            toolshed.outcome = tracing::field::Empty,
            toolshed.arguments = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        );
        if self.trace_arguments && !span.is_disabled() {
            span.record("toolshed.arguments", arguments_for_trace(&req.arguments));
        }
        let args_sha256 = hex(&Sha256::digest(req.arguments.to_string().as_bytes()));
        let mut approval = None;
        let (plugin_id, result) = self
            .run_pipeline(&mut req, &call_id, &mut approval)
            .instrument(span.clone())
            .await;
        let duration = started.elapsed();
        if !span.is_disabled() {
            trace_outcome(&span, plugin_id.as_deref(), &result);
        }
        self.record(
            &req,
            &call_id,
            plugin_id.clone(),
            &result,
            ts_ms,
            args_sha256,
            duration,
            approval,
        )
        .instrument(span.in_scope(|| tracing::info_span!(target: TRACE, "record")))
        .await;
        CallResult {
            call_id,
            plugin_id,
            result,
            duration,
        }
    }

    /// Steps 1 to 7; `approval` is set to how an approval the call needed ended, for the
    /// audit row.
    async fn run_pipeline(
        &self,
        req: &mut CallRequest,
        call_id: &CallId,
        approval: &mut Option<String>,
    ) -> (Option<String>, Result<ToolOutput, ToolError>) {
        // 1. resolve
        let resolved = tracing::info_span!(target: TRACE, "resolve")
            .in_scope(|| self.resolve(&req.tool, req.door));
        let entry = match resolved {
            Ok(entry) => entry,
            Err(e) => return (None, Err(e)),
        };
        // Arguments as meant: `null` for "not given", common aliases (see `arguments`).
        crate::arguments::normalize(&entry.spec().input_schema, &mut req.arguments);
        let req = &*req;
        let plugin_id = Some(entry.plugin_id.clone());
        let result = self.run_resolved(req, call_id, entry, approval).await;
        (plugin_id, result)
    }

    /// The checks a call would meet before it runs — resolve, review, validate, policy —
    /// without running it or recording anything: for a door that must answer at once
    /// while the call runs later (a REST job). `Ok` is no promise: hooks, and a state that
    /// changes meanwhile, still decide when the call is made through [`Dispatcher::call`].
    pub fn preflight(&self, req: &CallRequest) -> Result<(), ToolError> {
        let entry = self.resolve(&req.tool, req.door)?;
        let mut arguments = req.arguments.clone();
        crate::arguments::normalize(&entry.spec().input_schema, &mut arguments);
        match self.check_before_hooks(req, &entry, &arguments)? {
            Gate::Ask { rule, reason } if self.approvals.timeout_secs == 0 => {
                Err(self.approvals_off(&rule, &reason))
            }
            _ => Ok(()),
        }
    }

    /// Steps 2 to 4: review, validate, policy.
    fn check_before_hooks(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
    ) -> Result<Gate, ToolError> {
        // 2. review
        let review = tracing::info_span!(target: TRACE, "review").entered();
        let profile = match &req.profile {
            None => None,
            Some(name) => Some(self.review.profile(name).ok_or_else(|| {
                let names = self.review.profile_names();
                ToolError::NotFound(format!(
                    "no profile `{name}` in the configuration; defined profiles: {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ))
            })?),
        };
        let subject = Subject::new(entry.spec(), &entry.plugin_id);
        let refused = self.review.refuse(&subject, profile).or_else(|| {
            req.selection
                .as_deref()
                .and_then(|selection| selection.refuse(&subject))
                .or_else(|| {
                    req.caller_tools
                        .as_deref()
                        .and_then(|tools| tools.refuse(&subject))
                })
        });
        if let Some(rule) = refused {
            return Err(ToolError::Denied {
                rule,
                message: format!("tool `{}` is not available to this caller", req.tool),
            });
        }
        if let Some((mut message, variables)) = self.registry.unavailable(entry) {
            if req.door == "mcp" {
                // A model cannot configure toolshed: say who can.
                message = format!(
                    "`{}` cannot be used yet: {message}. Only the person running toolshed \
                     can change that; tell them if the task needs this tool",
                    req.tool
                );
            }
            return Err(ToolError::Unconfigured { message, variables });
        }
        drop(review);
        // 3. validate
        tracing::info_span!(target: TRACE, "validate")
            .in_scope(|| validate(entry, arguments, req.door))?;
        // 4. policy
        tracing::info_span!(target: TRACE, "policy")
            .in_scope(|| self.check_policy(req, entry, arguments))
    }

    async fn run_resolved(
        &self,
        req: &CallRequest,
        call_id: &CallId,
        entry: ToolEntry,
        note: &mut Option<String>,
    ) -> Result<ToolOutput, ToolError> {
        let mut approved = match self.check_before_hooks(req, &entry, &req.arguments)? {
            Gate::Allow => false,
            Gate::Ask { rule, reason } => {
                self.approve(req, &req.arguments, &rule, &reason, note)
                    .instrument(tracing::info_span!(target: TRACE, "approval"))
                    .await?;
                true
            }
        };
        // 5. pre hooks
        let mut arguments = req.arguments.clone();
        let (rewrite, hook_ask) = self
            .hooks
            .before(
                &Subject::new(entry.spec(), &entry.plugin_id),
                &req.owner,
                &arguments,
            )
            .instrument(tracing::info_span!(target: TRACE, "hooks.before"))
            .await
            .map_err(|reason| ToolError::Denied {
                rule: "hook".into(),
                message: reason,
            })?;
        if let Some(new_args) = rewrite {
            validate(&entry, &new_args, req.door)?;
            // The policy judges what will run, not what was asked; an approval was for the
            // arguments asked about.
            match self.check_policy(req, &entry, &new_args)? {
                Gate::Allow => {}
                Gate::Ask { .. } if approved && new_args == req.arguments => {}
                Gate::Ask { rule, reason } => {
                    self.approve(req, &new_args, &rule, &reason, note)
                        .instrument(tracing::info_span!(target: TRACE, "approval"))
                        .await?;
                    approved = true;
                }
            }
            arguments = new_args;
        }
        if let Some(reason) = hook_ask {
            self.approve(req, &arguments, "hook", &reason, note)
                .instrument(tracing::info_span!(target: TRACE, "approval"))
                .await?;
            approved = true;
        }
        // The caller's narrower sandbox: its profile's, its token's, a policy rule's. In
        // read-only nothing writes files: the call is refused before it runs.
        let narrowed = self.narrowed_sandbox(req, &entry, &arguments);
        if narrowed == Some(toolshed_ops::sandbox::SandboxMode::ReadOnly) {
            if entry.tool.writes_past_the_boundary() {
                return Err(ToolError::Denied {
                    rule: "sandbox".into(),
                    message: format!(
                        "`{}` is served by `{}`, whose own process may change files, and this \
                         caller's sandbox mode is read-only (its profile, token or a policy \
                         rule); use a tool of the server that it marks read-only \
                         (readOnlyHint), or ask the person running toolshed to mount the \
                         server with --sandbox read-only",
                        req.tool, entry.plugin_id
                    ),
                });
            }
            let writes = self.touches(&entry, &arguments).writes;
            if let Some(path) = writes.first() {
                return Err(ToolError::Denied {
                    rule: "sandbox".into(),
                    message: format!(
                        "`{path}` would be written, and this caller's sandbox mode is read-only \
                         (its profile, token or a policy rule), so no tool changes files; \
                         commands still run, read-only"
                    ),
                });
            }
        }
        // 6. run, within the owner's quotas; the deadline starts now (waiting for an
        // approval does not use it up)
        let _quota = self
            .quotas
            .acquire(&Subject::new(entry.spec(), &entry.plugin_id), &req.owner)?;
        let started = Instant::now();
        let timeout = self.timeout_for(req, &entry)?;
        self.events.publish_with(|| Event::CallStarted {
            call_id: call_id.0.clone(),
            tool: req.tool.clone(),
            owner: req.owner.0.clone(),
        });
        let progress = self.progress_sink(call_id, req.progress.clone());
        let cancel = req.cancel.child_token();
        let mut plugins = req.via_plugins.clone();
        plugins.push(entry.plugin_id.clone());
        let caller: Arc<dyn ToolCaller> = Arc::new(NestedCaller {
            dispatcher: self.me.clone(),
            tool: req.tool.clone(),
            lineage: Lineage {
                profile: req.profile.clone(),
                selection: req.selection.clone(),
                caller_tools: req.caller_tools.clone(),
                plugins,
                sandbox: narrowed,
            },
        });
        let ctx = CallContext {
            owner: req.owner.clone(),
            call_id: call_id.clone(),
            cancel: cancel.clone(),
            deadline: started + timeout,
            progress,
            config: self.registry.resolved_config(&entry.plugin_id),
            caller: Some(caller),
            approved,
            sampler: req.sampler.clone().or_else(|| self.llm.clone()),
            sandbox: narrowed.map(|m| m.as_str().to_string()),
            write_scope: if self.policy.wants_touches() {
                self.policy
                    .write_scope(&Subject::new(entry.spec(), &entry.plugin_id), &req.owner)
            } else {
                toolshed_core::WriteScope::default()
            },
        };
        let post = (!self.hooks.is_empty()).then(|| (entry.clone(), arguments.clone()));
        let run = tracing::info_span!(
            target: TRACE,
            "run",
            otel.name = %format_args!("run {}", req.tool),
            toolshed.plugin = %entry.plugin_id,
        );
        let result = run_with_deadline(entry, ctx, arguments, timeout, &req.cancel, cancel)
            .instrument(run)
            .await;
        // 7. post hooks
        let result = match post {
            None => result,
            Some((entry, arguments)) => {
                let subject = Subject::new(entry.spec(), &entry.plugin_id);
                self.hooks
                    .after(&subject, &req.owner, &arguments, result)
                    .instrument(tracing::info_span!(target: TRACE, "hooks.after"))
                    .await
            }
        };
        // Whatever the tool and its arguments asked for, no reply passes the ceiling.
        let ceiling = usize::try_from(self.limits.max_output_bytes).unwrap_or(usize::MAX);
        result.map(|output| crate::ceiling::enforce(output, ceiling))
    }

    fn check_policy(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
    ) -> Result<Gate, ToolError> {
        let touches;
        let mut subject = Subject::new(entry.spec(), &entry.plugin_id);
        if self.policy.wants_touches() {
            touches = self.touches(entry, arguments);
            subject = subject.with_touches(&touches);
        }
        match self.policy.check(&subject, &req.owner, arguments) {
            PolicyDecision::Allow => Ok(Gate::Allow),
            PolicyDecision::Deny { rule, message } => Err(ToolError::Denied { rule, message }),
            PolicyDecision::NeedsApproval { rule, reason } => Ok(Gate::Ask { rule, reason }),
        }
    }

    /// The narrowest sandbox mode the caller's profile, its token, the policy rules and the
    /// call that made this one give this call; `None` when none is narrower than the host's.
    pub fn narrowed_sandbox(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
    ) -> Option<toolshed_ops::sandbox::SandboxMode> {
        let subject = Subject::new(entry.spec(), &entry.plugin_id);
        [
            req.profile
                .as_deref()
                .and_then(|p| self.review.profile(p))
                .and_then(|p| p.sandbox),
            req.caller_tools.as_ref().and_then(|c| c.sandbox),
            self.policy.sandbox_for(&subject, &req.owner, arguments),
            req.sandbox_ceiling,
        ]
        .into_iter()
        .flatten()
        .min()
        .filter(|mode| self.sandbox_mode.is_none_or(|host| *mode < host))
    }

    /// What the call will touch, as its tool says; each path read or written also as the
    /// workspace's links resolve it (relative to the root), so that neither an absolute
    /// spelling nor a link dodges a rule on `writes` or `reads`.
    pub fn touches(&self, entry: &ToolEntry, arguments: &Value) -> toolshed_core::Touches {
        let mut touches = entry.tool.touches(arguments);
        self.resolve_touches(&mut touches);
        touches
    }

    /// Adds to the paths of `touches` each one as the workspace's links resolve it.
    fn resolve_touches(&self, touches: &mut toolshed_core::Touches) {
        if let Some(files) = &self.files {
            for list in [&mut touches.reads, &mut touches.writes] {
                let resolved: Vec<String> = list
                    .iter()
                    .filter_map(|p| toolshed_ops::resolve_in_workspace(files.as_ref(), p))
                    .filter(|r| !list.contains(r))
                    .collect();
                list.extend(resolved);
            }
        }
    }

    /// Whether the running call `ctx` of `tool` may touch what it found only while running
    /// (see [`ToolCaller::may_touch`]): refused in a read-only caller's call when it writes,
    /// and judged by the policy as if declared — the call's arguments are not looked at
    /// again, so a rule that needs them does not match, and a rule that asks passes only
    /// when this call was approved (a person cannot be asked midway).
    fn may_touch(
        &self,
        tool: &str,
        ctx: &CallContext,
        found: &toolshed_core::Touches,
    ) -> Result<(), ToolError> {
        if found.is_empty() {
            return Ok(());
        }
        if let Some(path) = found.writes.first()
            && ctx.sandbox.as_deref() == Some(toolshed_ops::sandbox::SandboxMode::ReadOnly.as_str())
        {
            return Err(ToolError::Denied {
                rule: "sandbox".into(),
                message: format!(
                    "`{path}` would be written, and this caller's sandbox mode is read-only \
                     (its profile, token or a policy rule); nothing was changed"
                ),
            });
        }
        if !self.policy.wants_touches() {
            return Ok(());
        }
        let Some(entry) = self.registry.lookup(tool) else {
            return Ok(());
        };
        let mut touches = found.clone();
        self.resolve_touches(&mut touches);
        let subject = Subject::new(entry.spec(), &entry.plugin_id).with_touches(&touches);
        let named = |list: &[String]| list.join("`, `");
        match self.policy.check(&subject, &ctx.owner, &Value::Null) {
            PolicyDecision::Allow => Ok(()),
            PolicyDecision::NeedsApproval { .. } if ctx.approved => Ok(()),
            PolicyDecision::Deny { rule, message } => Err(ToolError::Denied {
                rule,
                message: format!(
                    "{message} (`{}` found while `{tool}` ran); nothing was changed",
                    named(&[&found.writes[..], &found.reads[..]].concat())
                ),
            }),
            PolicyDecision::NeedsApproval { rule, reason } => Err(ToolError::Denied {
                rule,
                message: format!(
                    "{reason}: `{}` found while `{tool}` ran would need a person's approval, \
                     which cannot be asked midway; nothing was changed. Ask for this call's \
                     approval by naming the file in its arguments, or change the rule",
                    named(&[&found.writes[..], &found.reads[..]].concat())
                ),
            }),
        }
    }

    fn approvals_off(&self, rule: &str, reason: &str) -> ToolError {
        ToolError::NeedsApproval(format!(
            "{reason} (rule `{rule}`); approvals are off here ([approvals] timeout_secs = 0), so \
             the call is refused"
        ))
    }

    /// Waits for a person to approve `arguments` of `req`'s tool: the door's approver, the
    /// CLI or REST, whichever answers first; no answer before the expiry is a no.
    async fn approve(
        &self,
        req: &CallRequest,
        arguments: &Value,
        rule: &str,
        reason: &str,
        note: &mut Option<String>,
    ) -> Result<(), ToolError> {
        if self.approvals.timeout_secs == 0 {
            return Err(self.approvals_off(rule, reason));
        }
        let failed = |e: crate::store::StoreError| ToolError::Failed(format!("approval: {e}"));
        let digest = approvals::call_digest(&req.tool, arguments);
        if self
            .store
            .approval_remembered(&req.owner.0, &req.tool, &digest)
            .map_err(failed)?
        {
            *note = Some(format!(
                "approved earlier for `{}` (remembered; rule `{rule}`)",
                req.owner.0
            ));
            return Ok(());
        }
        let timeout = Duration::from_secs(self.approvals.timeout_secs);
        let request = self
            .store
            .create_approval(
                &NewApproval {
                    tool: &req.tool,
                    owner: &req.owner.0,
                    arguments,
                    rule,
                    reason,
                    timeout,
                },
                self.approvals.max_pending,
                self.approvals.max_pending_per_owner,
            )
            .map_err(|e| ToolError::NeedsApproval(format!("{reason} (rule `{rule}`): {e}")))?;
        self.events.publish(Event::ApprovalRequested {
            request: request.clone(),
        });
        let id = request.id.clone();
        let ask = {
            let approver = req.approver.clone();
            let request = request.clone();
            async move {
                match approver {
                    Some(approver) => match approver.ask(&request).await {
                        Some(answer) => Some((answer, approver.who())),
                        None => std::future::pending().await,
                    },
                    None => std::future::pending().await,
                }
            }
        };
        tokio::pin!(ask);
        let expiry = tokio::time::sleep(timeout);
        tokio::pin!(expiry);
        let mut poll = tokio::time::interval(approvals::POLL);
        let ended = loop {
            tokio::select! {
                () = req.cancel.cancelled() => {
                    let _ = self.store.expire_approval(&id);
                    self.resolved(&id);
                    return Err(ToolError::Cancelled);
                }
                () = &mut expiry => {
                    let _ = self.store.expire_approval(&id);
                    break self.store.approval(&id).map_err(failed)?;
                }
                Some((answer, who)) = &mut ask => {
                    break self.store.answer_approval(&id, answer, &who, false).map_err(failed)?;
                }
                _ = poll.tick() => {
                    let now = self.store.approval(&id).map_err(failed)?;
                    if now.as_ref().is_none_or(|r| r.state != ApprovalState::Pending) {
                        break now;
                    }
                }
            }
        };
        self.resolved(&id);
        let Some(ended) = ended else {
            return Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!("the approval request {id} is gone, so the call is refused"),
            });
        };
        let by = ended.answered_by.clone().unwrap_or_default();
        *note = Some(match ended.state {
            ApprovalState::Approved | ApprovalState::Denied => {
                format!(
                    "{} {} by {by} (rule `{rule}`)",
                    ended.id,
                    ended.state.as_str()
                )
            }
            _ => format!("{} expired unanswered (rule `{rule}`)", ended.id),
        });
        match ended.state {
            ApprovalState::Approved => Ok(()),
            ApprovalState::Denied => Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!(
                    "{by} declined the approval {id} that rule `{rule}` asked for: {reason}"
                ),
            }),
            ApprovalState::Expired | ApprovalState::Pending => Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!(
                    "nobody approved {id} within {} s ([approvals] timeout_secs), so the call \
                     is refused: {reason}",
                    timeout.as_secs()
                ),
            }),
        }
    }

    /// Publishes how request `id` ended.
    fn resolved(&self, id: &str) {
        if let Ok(Some(request)) = self.store.approval(id) {
            self.events.publish(Event::ApprovalResolved { request });
        }
    }

    /// The tool named `name`, or an error a caller can act on: the plugin that has it and
    /// why it does not run, or the tools it probably meant — including toolshed's names
    /// for the tools of other tool sets (`read_file`, `Bash`). Only the CLI is pointed at
    /// CLI commands.
    fn resolve(&self, name: &str, door: &str) -> Result<ToolEntry, ToolError> {
        if let Some(entry) = self.registry.lookup(name) {
            return Ok(entry);
        }
        // Only a model on MCP is spared the CLI commands a person would run.
        let cli = door != "mcp";
        if let Some((plugin, state, reason)) = self.registry.unavailable_tool(name) {
            let why = match reason {
                Some(reason) if cli => reason,
                // The reason names the CLI command that fixes it: a person's job.
                Some(reason) => reason
                    .split_once("; enable it with")
                    .map_or(reason.clone(), |(head, _)| head.to_string()),
                None => format!("it is {}", state.as_str()),
            };
            let why = why
                .strip_prefix(state.as_str())
                .map_or(format!(": {why}"), str::to_string);
            let fix = if cli || state != crate::registry::PluginState::Disabled {
                String::new()
            } else {
                "; the user can enable it".into()
            };
            return Err(ToolError::NotFound(format!(
                "tool `{name}` belongs to plugin `{plugin}`, which is {}{why}{fix}",
                state.as_str()
            )));
        }
        let names = self.registry.tool_names();
        let mut close: Vec<String> = crate::suggest::known_equivalents(name)
            .iter()
            .filter(|n| names.iter().any(|have| have == *n))
            .map(|n| (*n).to_string())
            .collect();
        for near in closest(name, names.iter().map(String::as_str), 3) {
            if close.len() < 3 && !close.contains(&near) {
                close.push(near);
            }
        }
        let hint = match (close.is_empty(), cli) {
            (true, true) => "; `toolshed tools list` shows every tool".to_string(),
            (true, false) => "; tools/list names the tools you can call".to_string(),
            (false, _) => format!(
                "; did you mean {}?",
                close
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(ToolError::NotFound(format!("no tool named `{name}`{hint}")))
    }

    fn timeout_for(&self, req: &CallRequest, entry: &ToolEntry) -> Result<Duration, ToolError> {
        let max = Duration::from_millis(self.limits.max_timeout_ms);
        let requested = match req.timeout {
            Some(t) if t.is_zero() => {
                return Err(ToolError::invalid(
                    "a timeout of 0 ms cannot be met; ask for at least 1 ms or leave it out",
                ));
            }
            Some(t) => t,
            None => Duration::from_millis(
                entry
                    .spec()
                    .default_timeout_ms
                    .unwrap_or(self.limits.default_timeout_ms),
            ),
        };
        Ok(requested.min(max))
    }

    fn progress_sink(&self, call_id: &CallId, caller: Option<ProgressSink>) -> ProgressSink {
        let events = self.events.clone();
        let call_id = call_id.0.clone();
        ProgressSink::new(move |progress| {
            if let Some(caller) = &caller {
                caller.send(progress.clone());
            }
            events.publish_with(|| Event::CallProgress {
                call_id: call_id.clone(),
                progress,
            });
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn record(
        &self,
        req: &CallRequest,
        call_id: &CallId,
        plugin: Option<String>,
        result: &Result<ToolOutput, ToolError>,
        ts_ms: i64,
        args_sha256: String,
        duration: Duration,
        approval: Option<String>,
    ) {
        let duration_ms = duration.as_millis() as u64;
        let (outcome, error_kind) = match result {
            Ok(out) if out.is_error => ("tool_error", None),
            Ok(_) => ("ok", None),
            Err(e) => ("error", Some(e.kind().as_str().to_string())),
        };
        let record = AuditRecord {
            ts_ms,
            call_id: call_id.0.clone(),
            owner: req.owner.0.clone(),
            door: req.door.to_string(),
            tool: req.tool.clone(),
            plugin: plugin.clone(),
            args_sha256,
            outcome: outcome.to_string(),
            error_kind,
            duration_ms: duration_ms as i64,
            approval,
            parent: req.parent.clone(),
        };
        // On disk (the store's audit journal) before the reply leaves, so an acknowledged
        // call always has its row; committed to the log in batches.
        self.store.queue_audit(record, self.audit_max_rows).await;
        self.events.publish_with(|| match result {
            Ok(out) => Event::CallFinished {
                call_id: call_id.0.clone(),
                tool: req.tool.clone(),
                plugin: plugin.clone(),
                door: req.door.to_string(),
                duration_ms,
                is_error: out.is_error,
            },
            Err(e) => Event::CallFailed {
                call_id: call_id.0.clone(),
                tool: req.tool.clone(),
                plugin: plugin.clone(),
                door: req.door.to_string(),
                duration_ms,
                kind: e.kind().as_str().to_string(),
                message: e.to_string(),
            },
        });
    }
}

/// The most bytes of a value quoted in a message.
const MAX_QUOTED: usize = 120;

/// `value` as a message quotes it: its JSON when short, else the start of it and its size,
/// so that an oversized argument is never echoed whole (nor rendered whole in memory).
fn preview(value: &Value) -> String {
    struct Capped(Vec<u8>);
    impl std::io::Write for Capped {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let room = MAX_QUOTED - self.0.len();
            if bytes.len() > room {
                self.0.extend_from_slice(&bytes[..room]);
                return Err(std::io::Error::other("the preview is full"));
            }
            self.0.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut capped = Capped(Vec::with_capacity(MAX_QUOTED));
    let whole = serde_json::to_writer(&mut capped, value).is_ok();
    let text = String::from_utf8_lossy(&capped.0).into_owned();
    if whole {
        return text;
    }
    let size = match value {
        Value::String(s) => format!("a string of {} bytes", s.len()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object of {} members", o.len()),
        _ => "a long value".into(),
    };
    format!("{text}… ({size})")
}

/// Checks `args` against the tool's schema, listing every violation. The message says what
/// the tool takes: the CLI points at `toolshed tools show`; other doors (a model on MCP)
/// get the arguments themselves, and a "did you mean" for each unknown name.
fn validate(entry: &ToolEntry, args: &Value, door: &str) -> Result<(), ToolError> {
    let validator = entry.validator.get().map_err(|e| {
        ToolError::Internal(format!(
            "the input schema of `{}` does not compile: {e}",
            entry.spec().name
        ))
    })?;
    let mut violations: Vec<Violation> = validator
        .iter_errors(args)
        .map(|e| Violation {
            pointer: e.instance_path().to_string(),
            message: e.masked_with(preview(e.instance())).to_string(),
        })
        .take(MAX_VIOLATIONS + 1)
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    let more = violations.len() > MAX_VIOLATIONS;
    violations.truncate(MAX_VIOLATIONS);
    let count = if more {
        format!("more than {MAX_VIOLATIONS} problems")
    } else {
        toolshed_core::counted(violations.len(), "problem", "problems")
    };
    let spec = entry.spec();
    let mut message = format!(
        "the arguments for `{}` do not match its input schema ({count})",
        spec.name
    );
    for hint in crate::arguments::unknown_names(&spec.input_schema, args) {
        message.push_str("; ");
        message.push_str(&hint);
    }
    if door != "mcp" {
        message.push_str(&format!(
            "; `toolshed tools show {}` prints the schema",
            spec.name
        ));
    } else {
        message.push_str(&format!(
            ". `{}` takes: {}",
            spec.name,
            crate::arguments::outline(&spec.input_schema)
        ));
    }
    Err(ToolError::InvalidArguments {
        message,
        violations,
    })
}

/// Runs the tool on its own task, so a panic is contained, and stops it at the deadline or
/// on cancellation: the call's token is cancelled first (tools stop their children), then
/// the task is aborted.
///
/// A tool that changes things and finishes its work although the deadline passed (or the
/// caller cancelled) — a file write whose rename happened — is not reported as timed out:
/// what it did stands, so its result is returned with a note saying it completed late, and
/// the audit row records it as done. Tools that stop on their token answer `Cancelled` or
/// an error, and a read-only tool's late answer may be partial (a search cut short): the
/// call is then the timeout (or cancellation) it was.
async fn run_with_deadline(
    entry: ToolEntry,
    ctx: CallContext,
    args: Value,
    timeout: Duration,
    caller_cancel: &CancellationToken,
    call_cancel: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let name = entry.spec().name.clone();
    let changes_things = !entry.spec().annotations.read_only;
    let tool = entry.tool.clone();
    let started = Instant::now();
    // The tool's own spans (its operations) belong to the call's trace.
    let mut task = tokio::spawn(
        async move { tool.call(ctx, args).await }.instrument(tracing::Span::current()),
    );
    let joined =
        |joined: Result<Result<ToolOutput, ToolError>, tokio::task::JoinError>| match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => {
                tracing::error!(tool = %name, "tool panicked");
                Err(ToolError::Internal(format!(
                    "tool `{name}` crashed; this is a bug in the tool, please report it"
                )))
            }
            Err(_) => Err(ToolError::Cancelled),
        };
    let stopped = tokio::select! {
        result = &mut task => return joined(result),
        _ = tokio::time::sleep(timeout) => ToolError::Timeout(timeout),
        _ = caller_cancel.cancelled() => ToolError::Cancelled,
    };
    // Let the tool see its token and clean up (kill its children, remove temp files) before
    // the task is dropped; a tool that had already finished answers at once.
    call_cancel.cancel();
    let finished = match tokio::time::timeout(CANCEL_GRACE, &mut task).await {
        Ok(result) => joined(result),
        Err(_) => {
            tracing::warn!(tool = %entry.spec().name, "tool ignored cancellation; aborting it");
            task.abort();
            return Err(stopped);
        }
    };
    match finished {
        Ok(mut output) if changes_things && !output.is_error => {
            let took = started.elapsed().as_millis();
            let note = match stopped {
                ToolError::Timeout(limit) => format!(
                    "[completed after its deadline: it took {took} ms of the {} ms allowed; \
                     what it did stands]",
                    limit.as_millis()
                ),
                _ => format!(
                    "[completed although the call was cancelled ({took} ms); what it did stands]"
                ),
            };
            output
                .content
                .push(toolshed_core::Content::Text { text: note });
            Ok(output)
        }
        _ => Err(stopped),
    }
}

/// The most bytes of a call's arguments put on its span (`[telemetry] record_arguments`).
const MAX_TRACED_ARGUMENTS: usize = 4096;

/// A call's arguments as its span carries them: JSON, cut at [`MAX_TRACED_ARGUMENTS`].
fn arguments_for_trace(arguments: &Value) -> String {
    let mut json = arguments.to_string();
    if json.len() > MAX_TRACED_ARGUMENTS {
        let mut end = MAX_TRACED_ARGUMENTS;
        while !json.is_char_boundary(end) {
            end -= 1;
        }
        json.truncate(end);
        json.push('…');
    }
    json
}

/// Records how a call ended on its span: the plugin, the outcome, and for a failure the
/// error's kind as `error.type` with an error status (a tool's own error result included).
fn trace_outcome(
    span: &tracing::Span,
    plugin: Option<&str>,
    result: &Result<ToolOutput, ToolError>,
) {
    if let Some(plugin) = plugin {
        span.record("toolshed.plugin", plugin);
    }
    let (outcome, error) = match result {
        Ok(output) if output.is_error => ("tool_error", Some("tool_error".to_string())),
        Ok(_) => ("ok", None),
        Err(e) => ("error", Some(e.kind().as_str().to_string())),
    };
    span.record("toolshed.outcome", outcome);
    if let Some(kind) = error {
        span.record("error.type", kind.as_str());
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_description", kind.as_str());
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

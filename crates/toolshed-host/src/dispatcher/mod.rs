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
use toolshed_core::{CallContext, CallId, ProgressSink, ToolCaller, ToolError, ToolOutput};

use crate::approvals::ApprovalsConfig;
use crate::events::{Event, EventBus};
use crate::hooks::Hooks;
use crate::policy::{Policy, PolicyDecision};
use crate::quotas::Quotas;
use crate::registry::{Registry, ToolEntry};
use crate::review::{CompiledRules, Review, Subject};
use crate::store::StateStore;
use crate::suggest::closest;
use toolshed_core::TRACE;
use tracing::Instrument as _;

mod after;
mod approval;
mod boundary;
mod idempotency;
mod limits;
pub(crate) mod nested;
pub(crate) mod plan;
mod request;
mod run;

pub use request::{CallRequest, DeferredApproval};

pub(crate) use crate::kit::{hash_json, hex};
pub use limits::{Limits, MIN_OUTPUT_CEILING};
use run::{arguments_for_trace, run_with_deadline, trace_outcome, validate};

use nested::NestedCaller;

/// How long a cancelled or timed-out tool gets to stop by itself before it is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The door of the dashboard's own reads made as the admin (its memory listing): not
/// written to the audit log, so that looking at the dashboard does not fill it. Only
/// read-only tools are called through it.
pub const DASHBOARD_DOOR: &str = "dashboard";

/// The most schema violations listed for one call.
pub const MAX_VIOLATIONS: usize = 50;

/// What policy said about a call that may run.
enum Gate {
    /// Run it.
    Allow,
    /// Run it once a person approves.
    Ask { rule: String, reason: String },
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
    /// Questions no client could put to the person, waiting for REST.
    questions: Arc<crate::questions::Questions>,
    trace_arguments: bool,
    files: Option<Arc<dyn toolshed_ops::FileOps>>,
    sandbox_mode: Option<toolshed_ops::sandbox::SandboxMode>,
    /// The workspace as pinned tokens name it ([`crate::Host::workspace_name`]).
    workspace_name: String,
    /// This dispatcher, for the nested calls of plugins.
    me: Weak<Dispatcher>,
    next_call: AtomicU64,
    epoch: u64,
    /// Calls running now, and a wake-up for whoever waits for none (a draining server).
    in_flight: Arc<InFlight>,
    /// The owners in plan mode.
    plans: Arc<plan::Plans>,
    /// Where file-policy events go (`fs.read.denied`), when the host has an event stream.
    notices: Option<Arc<toolshed_ops::Notices>>,
    /// Identical calls seen lately, for the repeat reminder.
    repeats: after::Repeats,
    /// The results of calls made with an idempotency key.
    remembered: idempotency::Remembered,
    /// What plugins and session layers add to the commands calls start.
    command_env: Arc<crate::command_env::CommandEnvLayers>,
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
    /// The workspace as pinned tokens name it: calls narrowed to another are refused.
    pub workspace_name: String,
    /// Where file-policy events (`fs.read.denied`, `fs.write.denied`) are announced.
    pub notices: Option<Arc<toolshed_ops::Notices>>,
    /// What plugins and session layers add to the commands calls start.
    pub command_env: Arc<crate::command_env::CommandEnvLayers>,
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
            plans: Arc::new(plan::Plans::load(parts.store.clone())),
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
            questions: Arc::default(),
            trace_arguments: parts.trace_arguments,
            files: parts.files,
            sandbox_mode: parts.sandbox_mode,
            workspace_name: parts.workspace_name,
            notices: parts.notices,
            command_env: parts.command_env,
            repeats: Default::default(),
            remembered: Default::default(),
            me,
            next_call: AtomicU64::new(1),
            epoch,
            in_flight: Arc::default(),
        }
    }

    /// The owners in plan mode.
    pub(crate) fn plans(&self) -> &Arc<plan::Plans> {
        &self.plans
    }

    /// The registry the calls are resolved in.
    pub(crate) fn command_env(&self) -> &crate::command_env::CommandEnvLayers {
        &self.command_env
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The host's `[llm]` endpoint, when one is configured.
    pub(crate) fn llm(&self) -> Option<&Arc<dyn toolshed_core::Sampler>> {
        self.llm.as_ref()
    }

    /// The questions waiting for a person's answer over REST.
    pub fn questions(&self) -> &Arc<crate::questions::Questions> {
        &self.questions
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
        let args_sha256 = {
            let mut hasher = Sha256::new();
            hash_json(&mut hasher, &req.arguments);
            hex(&hasher.finalize())
        };
        let mut approval = None;
        let (plugin_id, mut result) = self
            .run_pipeline(&mut req, &call_id, &mut approval)
            .instrument(span.clone())
            .await;
        self.remind_of_repeats(&req, &args_sha256, &mut result);
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
        // The arguments go to the tool as they are: taken, not copied (a large request
        // would otherwise be held twice). Nothing after this reads `req.arguments`.
        let arguments = std::mem::take(&mut req.arguments);
        let req = &*req;
        let plugin_id = Some(entry.plugin_id.clone());
        // The files it names, for the event a refusal is announced with.
        let files = after::FileTouches::of(&entry, &arguments);
        let key = entry.spec().idempotent_by_key().and_then(|field| {
            idempotency::key_of(req.idempotency_key.as_deref(), field, &arguments)
        });
        let result = match key {
            None => {
                self.run_resolved(req, arguments, call_id, entry, approval)
                    .await
            }
            Some(key) => {
                self.run_once(req, key, arguments, call_id, entry, approval)
                    .await
            }
        };
        self.announce_file_denials(req, call_id, &result, files);
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
        match self.check_before_hooks(req, &entry, &arguments, &mut None)? {
            Gate::Ask { rule, reason } if self.approvals.timeout_secs == 0 => {
                Err(self.approvals_off(&rule, &reason))
            }
            _ => Ok(()),
        }
    }

    /// Steps 2 to 4: review, validate, policy; what the call touches is kept in `touches`
    /// when the policy looked at it.
    fn check_before_hooks(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
        touches: &mut Option<toolshed_core::Touches>,
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
                .or_else(|| req.narrowing.iter().find_map(|n| n.refuse(&subject)))
        });
        if let Some(rule) = refused {
            return Err(ToolError::Denied {
                rule,
                message: format!("tool `{}` is not available to this caller", req.tool),
            });
        }
        self.refuse_other_workspace(req)?;
        self.plans.gate(
            &req.owner.0,
            req.profile.as_deref(),
            entry.spec(),
            &entry.plugin_id,
        )?;
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
            .in_scope(|| validate(entry, arguments, &req.oversized, req.door))?;
        // 4. policy
        tracing::info_span!(target: TRACE, "policy")
            .in_scope(|| self.check_policy(req, entry, arguments, touches))
    }

    async fn run_resolved(
        &self,
        req: &CallRequest,
        asked: Value,
        call_id: &CallId,
        entry: ToolEntry,
        note: &mut Option<String>,
    ) -> Result<ToolOutput, ToolError> {
        let mut approved_rules = Vec::new();
        // What the call touches, worked out once for the policy and the narrowing (again
        // only when a hook rewrites the arguments).
        let mut touches = None;
        if self.policy.wants_touches() && self.files.as_ref().is_some_and(|f| !f.quick()) {
            // A slow workspace (another machine) is asked within the call's deadline.
            let limit = self.timeout_for(req, &entry)?;
            touches = Some(self.touches_within(&entry, &asked, limit).await?);
        }
        let mut approved = match self.check_before_hooks(req, &entry, &asked, &mut touches)? {
            Gate::Allow => false,
            Gate::Ask { rule, reason } => {
                self.approve(req, &asked, &rule, &reason, note)
                    .instrument(tracing::info_span!(target: TRACE, "approval"))
                    .await?;
                approved_rules.push(rule);
                true
            }
        };
        // 5. pre hooks
        let mut arguments = asked;
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
            validate(&entry, &new_args, &[], req.door)?;
            // The policy judges what will run, not what was asked; an approval was for the
            // arguments asked about.
            touches = None;
            match self.check_policy(req, &entry, &new_args, &mut touches)? {
                Gate::Allow => {}
                Gate::Ask { .. } if approved && new_args == arguments => {}
                Gate::Ask { rule, reason } => {
                    self.approve(req, &new_args, &rule, &reason, note)
                        .instrument(tracing::info_span!(target: TRACE, "approval"))
                        .await?;
                    approved_rules.push(rule);
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
        // The caller's narrower sandbox: its profile's, its token's, a policy rule's.
        if touches.is_none() && self.policy.wants_touches() {
            touches = Some(self.touches(&entry, &arguments));
        }
        let narrowed = self.narrowed_sandbox(req, &entry, &arguments, touches.as_ref());
        let write_scope = if self.policy.wants_touches() {
            self.policy
                .write_scope(&Subject::new(entry.spec(), &entry.plugin_id), &req.owner)
        } else {
            toolshed_core::WriteScope::default()
        };
        self.refuse_past_the_boundary(
            req,
            &entry,
            &arguments,
            (narrowed, &write_scope),
            touches.as_ref(),
        )?;
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
        let caller: Arc<dyn ToolCaller> = Arc::new(NestedCaller::for_call(
            self.me.clone(),
            req,
            &entry.plugin_id,
            narrowed,
        ));
        let ctx = CallContext {
            owner: req.owner.clone(),
            call_id: call_id.clone(),
            cancel: cancel.clone(),
            deadline: started + timeout,
            progress,
            config: self.registry.resolved_config(&entry.plugin_id),
            caller: Some(caller),
            approved,
            approved_rules,
            sampler: req.sampler.clone().or_else(|| self.llm.clone()),
            asker: Some(req.asker.clone().unwrap_or_else(|| {
                Arc::new(crate::questions::HostAsker {
                    questions: self.questions.clone(),
                    owner: req.owner.0.clone(),
                })
            })),
            sandbox: narrowed.map(|m| m.as_str().to_string()),
            write_scope,
            log: req.log.clone(),
            audit_note: req.audit_note.clone(),
            command_env: toolshed_core::CommandEnv::new(self.command_env.clone()),
        };
        let post = (!self.hooks.is_empty()).then(|| (entry.clone(), arguments.clone()));
        if let Some(started) = &req.started {
            started.notify_one();
        }
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
        touches: &mut Option<toolshed_core::Touches>,
    ) -> Result<Gate, ToolError> {
        if touches.is_none() && self.policy.wants_touches() {
            *touches = Some(self.touches(entry, arguments));
        }
        let mut subject = Subject::new(entry.spec(), &entry.plugin_id);
        if let Some(touches) = touches.as_ref() {
            subject = subject.with_touches(touches);
        }
        match self.policy.check(&subject, &req.owner, arguments) {
            // A plan is submitted to the person: it is the approval request.
            PolicyDecision::Allow if plan::asks_the_person(entry) => Ok(Gate::Ask {
                rule: "plan mode".into(),
                reason: plan::plan_question(arguments),
            }),
            PolicyDecision::Allow => Ok(Gate::Allow),
            PolicyDecision::Deny { rule, message } => Err(ToolError::Denied { rule, message }),
            PolicyDecision::NeedsApproval { rule, reason } => Ok(Gate::Ask { rule, reason }),
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
}

//! Calls a tool makes on behalf of the call it serves (a plugin's `tools.call`, a
//! `run_code` snippet's): through the same pipeline, with the narrowing of the call that
//! made them.

use std::sync::Weak;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolshed_core::{CallContext, ToolCaller, ToolError, ToolOutput};

use super::{CallRequest, Dispatcher};
use crate::review::CompiledRules;
use std::sync::Arc;

/// What a nested call inherits from the call that made it.
struct Lineage {
    profile: Option<String>,
    selection: Option<Arc<CompiledRules>>,
    caller_tools: Option<Arc<CompiledRules>>,
    narrowing: Vec<Arc<CompiledRules>>,
    credential: Option<String>,
    plugins: Vec<String>,
    /// The door's way to ask the person behind the call for an approval.
    approver: Option<Arc<dyn crate::approvals::Approver>>,
    /// The narrowed sandbox mode of the call that made it.
    sandbox: Option<toolshed_ops::sandbox::SandboxMode>,
}

/// Calls made by plugins (granted `tools`) on behalf of the call they are serving: same
/// owner, cancellation and deadline, door `plugin`, and the narrowing of the call that led
/// to them. One per call, in its context's `caller`.
pub(crate) struct NestedCaller {
    dispatcher: Weak<Dispatcher>,
    lineage: Lineage,
    /// The tool whose call this is (its rules judge what the call finds to touch).
    tool: String,
    /// The span of the call this serves: nested calls join its trace, whatever thread or
    /// runtime (a plugin's, `run_code`'s) asks for them.
    span: tracing::Span,
}

impl NestedCaller {
    /// The caller for the call `req`, served by plugin `plugin_id`, narrowed to `sandbox`.
    pub(super) fn for_call(
        dispatcher: Weak<Dispatcher>,
        req: &CallRequest,
        plugin_id: &str,
        sandbox: Option<toolshed_ops::sandbox::SandboxMode>,
    ) -> Self {
        let mut plugins = req.via_plugins.clone();
        plugins.push(plugin_id.to_string());
        Self {
            dispatcher,
            tool: req.tool.clone(),
            span: tracing::Span::current(),
            lineage: Lineage {
                profile: req.profile.clone(),
                selection: req.selection.clone(),
                caller_tools: req.caller_tools.clone(),
                narrowing: req.narrowing.clone(),
                credential: req.credential.clone(),
                plugins,
                approver: req.approver.clone(),
                sandbox,
            },
        }
    }
}

impl NestedCaller {
    /// The pipeline, while the host runs.
    pub(crate) fn dispatcher(&self) -> Option<Arc<Dispatcher>> {
        self.dispatcher.upgrade()
    }

    /// The profile of the call this serves.
    pub(crate) fn profile(&self) -> Option<&str> {
        self.lineage.profile.as_deref()
    }

    /// Every narrowing of the call this serves besides its profile: its door's selection,
    /// its token's tools, its subagents'.
    pub(crate) fn narrowings(&self) -> Vec<Arc<CompiledRules>> {
        let lineage = &self.lineage;
        [&lineage.selection, &lineage.caller_tools]
            .into_iter()
            .flatten()
            .cloned()
            .chain(lineage.narrowing.iter().cloned())
            .collect()
    }

    /// The agent token the caller of the call this serves presented (its id).
    pub(crate) fn credential(&self) -> Option<&str> {
        self.lineage.credential.as_deref()
    }

    /// The sandbox mode the call this serves was narrowed to, if narrower than the host's.
    pub(crate) fn sandbox(&self) -> Option<toolshed_ops::sandbox::SandboxMode> {
        self.lineage.sandbox
    }

    /// A call made by a subagent of the call `ctx` (`agent_run`): as owner `owner` (a
    /// sub-owner of the caller), with the caller's narrowing and `narrowing` on top, the
    /// caller's way to ask for approvals, and `ctx`'s call as its parent.
    pub(crate) fn agent_request(
        &self,
        ctx: &CallContext,
        owner: toolshed_core::OwnerId,
        name: &str,
        args: Value,
        narrowing: &[Arc<CompiledRules>],
    ) -> CallRequest {
        let lineage = &self.lineage;
        let mut request = CallRequest::new(name, args, owner, "agent");
        request.timeout = Some(ctx.deadline.saturating_duration_since(Instant::now()));
        request.cancel = ctx.cancel.child_token();
        request.profile = lineage.profile.clone();
        request.selection = lineage.selection.clone();
        request.caller_tools = lineage.caller_tools.clone();
        request.narrowing = lineage.narrowing.clone();
        request.narrowing.extend(narrowing.iter().cloned());
        request.via_plugins = lineage.plugins.clone();
        request.credential = lineage.credential.clone();
        request.parent = Some(ctx.call_id.0.clone());
        request.sampler = ctx.sampler.clone();
        request.asker = ctx.asker.clone();
        request.approver = lineage.approver.clone();
        request.sandbox_ceiling = lineage.sandbox;
        request.log = ctx.log.clone();
        request
    }

    /// The plugins (and workflows, as `workflow:NAME`) whose calls led to the call this
    /// serves, outermost first, ending with the plugin serving it.
    pub(crate) fn via(&self) -> &[String] {
        &self.lineage.plugins
    }

    /// Why a call of `name` made for the call this serves would wait for itself: its
    /// plugin is serving a call that led here (a plugin's single runtime, busy). The agent
    /// tools are not such a plugin: a subagent may keep a todo list.
    pub(crate) fn reentry(&self, name: &str) -> Option<String> {
        let dispatcher = self.dispatcher.upgrade()?;
        let entry = dispatcher.registry.lookup(name)?;
        (entry.plugin_id != super::plan::AGENTS_PLUGIN
            && self.lineage.plugins.contains(&entry.plugin_id))
        .then(|| {
            format!(
                "`{name}` cannot be called here: its plugin `{}` is serving the call that led \
                 here (calls went {}), and would wait for itself",
                entry.plugin_id,
                self.lineage.plugins.join(" -> ")
            )
        })
    }

    /// Whether `subject` passes the narrowing of the call this serves and `extra`, the
    /// review rules and its profile: what a subagent of it may be offered.
    pub(crate) fn allows(
        &self,
        dispatcher: &Dispatcher,
        subject: &crate::review::Subject<'_>,
        extra: &[Arc<CompiledRules>],
    ) -> bool {
        let lineage = &self.lineage;
        let profile = lineage
            .profile
            .as_deref()
            .and_then(|p| dispatcher.review.profile(p));
        dispatcher.review.refuse(subject, profile).is_none()
            && [&lineage.selection, &lineage.caller_tools]
                .into_iter()
                .flatten()
                .chain(lineage.narrowing.iter())
                .chain(extra.iter())
                .all(|rules| rules.refuse(subject).is_none())
    }
}

#[async_trait::async_trait]
impl ToolCaller for NestedCaller {
    fn as_any(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        Some(self)
    }

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
            && entry.plugin_id != super::plan::AGENTS_PLUGIN
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
        request.narrowing = lineage.narrowing.clone();
        request.credential = lineage.credential.clone();
        request.via_plugins = via;
        request.parent = Some(ctx.call_id.0.clone());
        request.sampler = ctx.sampler.clone();
        // A nested call's question goes where its caller's would.
        request.asker = ctx.asker.clone();
        request.sandbox_ceiling = lineage.sandbox;
        // On a task of its own, so that the call is recorded even when the plugin stops
        // waiting for it (its own call ended or was cancelled; the child token stops it).
        // In the calling call's span: the nested call's spans join its trace.
        let call = async move { dispatcher.call(request).await.result };
        match tokio::spawn(tracing::Instrument::instrument(call, self.span.clone())).await {
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

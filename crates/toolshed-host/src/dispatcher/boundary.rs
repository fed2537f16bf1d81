//! The one boundary as the pipeline applies it: the sandbox mode a caller is narrowed to,
//! what a call will touch (declared, and as the workspace's links resolve it), and what a
//! running call finds to touch, judged by the same rules.

use serde_json::Value;
use toolshed_core::{CallContext, ToolError};
use toolshed_ops::sandbox::SandboxMode;

use super::{CallRequest, Dispatcher};
use crate::policy::PolicyDecision;
use crate::registry::ToolEntry;
use crate::review::Subject;

impl Dispatcher {
    /// The narrowest sandbox mode the caller's profile, its token, the policy rules and the
    /// call that made this one give this call; `None` when none is narrower than the host's.
    pub fn narrowed_sandbox(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
    ) -> Option<SandboxMode> {
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
    pub(super) fn may_touch(
        &self,
        tool: &str,
        ctx: &CallContext,
        found: &toolshed_core::Touches,
    ) -> Result<(), ToolError> {
        if found.is_empty() {
            return Ok(());
        }
        if let Some(path) = found.writes.first()
            && ctx.sandbox.as_deref() == Some(SandboxMode::ReadOnly.as_str())
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

    /// In read-only (the caller's profile, token or a policy rule) nothing writes files:
    /// a call that declares a write, or a tool whose own process may write past the file
    /// boundary (a mounted server's), is refused before it runs.
    pub(super) fn refuse_writes_in_read_only(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
        narrowed: Option<SandboxMode>,
    ) -> Result<(), ToolError> {
        if narrowed != Some(SandboxMode::ReadOnly) {
            return Ok(());
        }
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
        let writes = self.touches(entry, arguments).writes;
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
        Ok(())
    }
}

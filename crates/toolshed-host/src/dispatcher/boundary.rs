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
    /// Refuses a call narrowed to another workspace: a token pinned to one works there
    /// only, whatever door or schedule carries its call.
    pub(super) fn refuse_other_workspace(&self, req: &CallRequest) -> Result<(), ToolError> {
        let Some(pinned) = req
            .caller_tools
            .iter()
            .chain(&req.narrowing)
            .find_map(|rules| rules.workspace.as_deref())
            .filter(|pinned| *pinned != self.workspace_name)
        else {
            return Ok(());
        };
        Err(ToolError::Denied {
            rule: format!("token scope workspace:{pinned}"),
            message: format!(
                "this token works only in workspace {pinned}, and this toolshed serves {}; \
                 use a token for this workspace, or open {pinned} with --workspace",
                self.workspace_name
            ),
        })
    }

    /// The narrowest sandbox mode the caller's profile, its token, the policy rules and the
    /// call that made this one give this call; `None` when none is narrower than the host's.
    pub(super) fn narrowed_sandbox(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
        touches: Option<&toolshed_core::Touches>,
    ) -> Option<SandboxMode> {
        // A narrowing rule on what the call touches sees it as the policy does: a patch's
        // files, paths as the workspace's links resolve them.
        let mut subject = Subject::new(entry.spec(), &entry.plugin_id);
        if let Some(touches) = touches {
            subject = subject.with_touches(touches);
        }
        [
            req.profile
                .as_deref()
                .and_then(|p| self.review.profile(p))
                .and_then(|p| p.sandbox),
            req.caller_tools.as_ref().and_then(|c| c.sandbox),
            self.policy.sandbox_for(&subject, &req.owner, arguments),
            req.sandbox_ceiling,
            self.plans.sandbox_for(&req.owner.0, req.profile.as_deref()),
        ]
        .into_iter()
        .flatten()
        // The modes of a subagent's preset profiles, too.
        .chain(req.narrowing.iter().filter_map(|n| n.sandbox))
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

    /// [`touches`](Self::touches) within `limit`: where file operations may be slow (a
    /// workspace on another machine), the links are resolved on a blocking thread, and a
    /// remote that does not answer in time ends the call with a timeout rather than
    /// holding it (and an async thread) past its deadline.
    pub(super) async fn touches_within(
        &self,
        entry: &ToolEntry,
        arguments: &Value,
        limit: std::time::Duration,
    ) -> Result<toolshed_core::Touches, ToolError> {
        let mut touches = entry.tool.touches(arguments);
        let Some(files) = self.files.clone().filter(|f| !f.quick()) else {
            self.resolve_touches(&mut touches);
            return Ok(touches);
        };
        if touches.is_empty() {
            return Ok(touches);
        }
        let job = tokio::task::spawn_blocking(move || {
            resolve_with(files.as_ref(), &mut touches);
            touches
        });
        match tokio::time::timeout(limit, job).await {
            Ok(Ok(touches)) => Ok(touches),
            Ok(Err(e)) => Err(ToolError::Failed(format!(
                "resolving the paths the call touches failed: {e}"
            ))),
            Err(_) => Err(ToolError::Timeout(limit)),
        }
    }

    /// Adds to the paths of `touches` each one as the workspace's links resolve it.
    fn resolve_touches(&self, touches: &mut toolshed_core::Touches) {
        if let Some(files) = &self.files {
            resolve_with(files.as_ref(), touches);
        }
    }

    /// Whether the running call `ctx` of `tool` may touch what it found only while running
    /// (see [`toolshed_core::ToolCaller::may_touch`]). Each path is judged on its own, as
    /// if the call had declared it alone: a write is refused for a read-only caller or
    /// where a narrowing rule makes it read-only; the policy decides with the rules on
    /// touches (those on argument values judged the call before it ran); a rule that asks
    /// passes only when a person approved that same rule for this call.
    pub(super) fn may_touch(
        &self,
        tool: &str,
        ctx: &CallContext,
        found: &toolshed_core::Touches,
    ) -> Result<(), ToolError> {
        if found.is_empty() {
            return Ok(());
        }
        let read_only = ctx.sandbox.as_deref() == Some(SandboxMode::ReadOnly.as_str());
        if let Some(path) = found.writes.first()
            && read_only
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
            return Err(ToolError::Conflict(format!(
                "`{tool}` is no longer in the catalog (its plugin was reloaded or removed) \
                 while it ran; nothing was changed"
            )));
        };
        let single = |kind: toolshed_core::TouchKind, path: &String| {
            let mut one = toolshed_core::Touches::default();
            match kind {
                toolshed_core::TouchKind::Writes => one.writes.push(path.clone()),
                _ => one.reads.push(path.clone()),
            }
            self.resolve_touches(&mut one);
            one
        };
        let items = found
            .writes
            .iter()
            .map(|p| (toolshed_core::TouchKind::Writes, p))
            .chain(
                found
                    .reads
                    .iter()
                    .map(|p| (toolshed_core::TouchKind::Reads, p)),
            );
        for (kind, path) in items {
            let touches = single(kind, path);
            let subject = Subject::new(entry.spec(), &entry.plugin_id).with_touches(&touches);
            if kind == toolshed_core::TouchKind::Writes
                && self.policy.sandbox_for_found(&subject, &ctx.owner)
                    == Some(SandboxMode::ReadOnly)
            {
                return Err(ToolError::Denied {
                    rule: "sandbox".into(),
                    message: format!(
                        "`{path}` (found while `{tool}` ran) would be written, and a policy \
                         rule makes calls that write it read-only; nothing was changed"
                    ),
                });
            }
            match self.policy.check_found(&subject, &ctx.owner) {
                PolicyDecision::Allow => {}
                PolicyDecision::NeedsApproval { rule, .. }
                    if ctx.approved_rules.contains(&rule) => {}
                PolicyDecision::Deny { rule, message } => {
                    return Err(ToolError::Denied {
                        rule,
                        message: format!(
                            "{message} (`{path}` found while `{tool}` ran); nothing was changed"
                        ),
                    });
                }
                PolicyDecision::NeedsApproval { rule, reason } => {
                    return Err(ToolError::Denied {
                        rule,
                        message: format!(
                            "{reason}: `{path}` found while `{tool}` ran would need a person's \
                             approval of that rule, which cannot be asked midway; nothing was \
                             changed. Name the file in the call's arguments so that the \
                             question covers it, or change the rule"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// What the caller's narrowing refuses before the call runs. In read-only (the
    /// caller's profile, token or a policy rule) nothing writes files: a call that declares
    /// a write is refused. A tool whose own process may write past the file boundary (a
    /// mounted server's) cannot be held to a narrower mode or to rules on what commands
    /// write or read, so it is refused to a caller under either.
    pub(super) fn refuse_past_the_boundary(
        &self,
        req: &CallRequest,
        entry: &ToolEntry,
        arguments: &Value,
        (narrowed, scope): (Option<SandboxMode>, &toolshed_core::WriteScope),
        touches: Option<&toolshed_core::Touches>,
    ) -> Result<(), ToolError> {
        if entry.tool.writes_past_the_boundary() && (narrowed.is_some() || !scope.is_empty()) {
            let why = match narrowed {
                Some(mode) => format!(
                    "this caller's sandbox mode is {} (its profile, token or a policy rule)",
                    mode.as_str()
                ),
                None => "policy rules limit what this caller's calls write or read".to_string(),
            };
            return Err(ToolError::Denied {
                rule: "sandbox".into(),
                message: format!(
                    "`{}` is served by `{}`, whose own process may change files where toolshed \
                     cannot hold it, and {why}; use a tool the server marks read-only \
                     (readOnlyHint), or ask the person running toolshed to mount the server \
                     with --sandbox read-only",
                    req.tool, entry.plugin_id
                ),
            });
        }
        if narrowed != Some(SandboxMode::ReadOnly) {
            return Ok(());
        }
        let writes = match touches {
            Some(t) => t.writes.clone(),
            None => self.touches(entry, arguments).writes,
        };
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

/// Adds to the paths of `touches` each one as `files` resolves it through the workspace's
/// links.
fn resolve_with(files: &dyn toolshed_ops::FileOps, touches: &mut toolshed_core::Touches) {
    for list in [&mut touches.reads, &mut touches.writes] {
        let resolved: Vec<String> = list
            .iter()
            .filter_map(|p| files.resolve(p))
            .filter(|r| !list.contains(r))
            .collect();
        list.extend(resolved);
    }
}

//! Policy: may this call run as asked, or must a person approve it first?
//!
//! The seam is here so every door gets the same answer. The default policy
//! ([`SandboxEscalation`]) turns a call asking for a wider sandbox than the host's into
//! `needs_approval`; rules by tool and argument and approvals arrive with identity.

use serde_json::Value;
use toolshed_core::{OwnerId, ToolSpec};
use toolshed_ops::sandbox::SandboxMode;

/// A policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    /// Run it.
    Allow,
    /// Refuse it, naming the rule.
    Deny {
        /// The rule.
        rule: String,
        /// Why, and what to do.
        message: String,
    },
    /// Ask a person first.
    NeedsApproval(String),
}

/// Decides whether a reviewed, validated call may run.
pub trait Policy: Send + Sync {
    /// The decision for `tool` called by `owner` with `arguments` (already valid against
    /// the tool's schema). The pipeline asks again when a hook rewrites the arguments, so a
    /// rule on argument values cannot be dodged by a rewrite.
    fn check(
        &self,
        tool: &str,
        owner: &OwnerId,
        spec: &ToolSpec,
        arguments: &Value,
    ) -> PolicyDecision;
}

/// Allows everything that passed review.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl Policy for AllowAll {
    fn check(
        &self,
        _tool: &str,
        _owner: &OwnerId,
        _spec: &ToolSpec,
        _arguments: &Value,
    ) -> PolicyDecision {
        PolicyDecision::Allow
    }
}

/// The host's policy until rules arrive: a call may narrow the sandbox its commands run in
/// (a tool with [`ToolSpec::sandbox_argument`] given `sandbox = "read-only"`), but asking
/// for a wider mode than the host's `[sandbox] mode` is an escalation a person must
/// approve. Everything else is allowed.
#[derive(Debug, Clone, Copy)]
pub struct SandboxEscalation {
    mode: SandboxMode,
}

impl SandboxEscalation {
    /// The policy of a host whose commands run in `mode`.
    pub fn new(mode: SandboxMode) -> Self {
        Self { mode }
    }
}

impl Policy for SandboxEscalation {
    fn check(
        &self,
        tool: &str,
        _owner: &OwnerId,
        spec: &ToolSpec,
        arguments: &Value,
    ) -> PolicyDecision {
        if !spec.sandbox_argument {
            return PolicyDecision::Allow;
        }
        let Some(asked) = arguments.get("sandbox").and_then(Value::as_str) else {
            return PolicyDecision::Allow;
        };
        match SandboxMode::parse(asked) {
            Ok(asked) if asked > self.mode => PolicyDecision::NeedsApproval(format!(
                "`{tool}` asks to run its command in sandbox mode {}, wider than this host's {}; \
                 escalation needs a person's approval, and no approver is configured. Run it \
                 in {} (leave `sandbox` out), or start toolshed with [sandbox] mode = \"{}\"",
                asked.as_str(),
                self.mode.as_str(),
                self.mode.as_str(),
                asked.as_str(),
            )),
            Ok(_) => PolicyDecision::Allow,
            // The schema names the modes; a tool of another shape is the tool's to refuse.
            Err(_) => PolicyDecision::Allow,
        }
    }
}

//! Policy: may this call run as asked, or must a person approve it first?
//!
//! Every door gets the same answer from the one policy the pipeline holds. The host's
//! ([`RulePolicy`]) applies the configured rules ([`rules`], `[[policy.rule]]`), then
//! refuses a call asking for a wider sandbox than the host's ([`SandboxEscalation`]).
//! `ask` is `needs_approval`: the pipeline then waits for a person's answer
//! ([`crate::approvals`]).

mod rules;

use serde_json::Value;
use toolshed_core::{OwnerId, ToolSpec};
use toolshed_ops::sandbox::SandboxMode;

pub use rules::{
    Condition, ConditionTests, DangerDefaults, Decision, PolicyConfig, PolicyRule, PolicyRules,
    Verdict,
};

use crate::review::Subject;

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
    NeedsApproval {
        /// The rule that asks.
        rule: String,
        /// What to ask, and why.
        reason: String,
    },
}

/// Decides whether a reviewed, validated call may run.
pub trait Policy: Send + Sync {
    /// The decision for the tool `subject` called by `owner` with `arguments` (already
    /// valid against the tool's schema). The pipeline asks again when a hook rewrites the
    /// arguments, so a rule on argument values cannot be dodged by a rewrite.
    fn check(&self, subject: &Subject<'_>, owner: &OwnerId, arguments: &Value) -> PolicyDecision;

    /// Whether [`check`](Self::check) looks at what a call touches
    /// ([`Subject::touches`]): the pipeline works it out (resolving the paths through the
    /// workspace's links) only then.
    fn wants_touches(&self) -> bool {
        true
    }

    /// What commands that `subject` runs for `owner` may write: the rules on `writes` that
    /// would refuse such a write, as paths their sandbox keeps read-only (or the only ones
    /// it leaves writable). Empty by default.
    fn write_scope(&self, _subject: &Subject<'_>, _owner: &OwnerId) -> toolshed_core::WriteScope {
        toolshed_core::WriteScope::default()
    }

    /// The decision for what a running call found to touch (`subject` carries it, see
    /// [`toolshed_core::ToolCaller::may_touch`]): as [`check`](Self::check), without the
    /// rules on argument values (the arguments were judged before the call ran).
    fn check_found(&self, subject: &Subject<'_>, owner: &OwnerId) -> PolicyDecision {
        self.check(subject, owner, &Value::Null)
    }

    /// A narrower sandbox mode for what a running call found to touch (rules with
    /// `sandbox = …` on touches alone); `None` by default.
    fn sandbox_for_found(&self, _subject: &Subject<'_>, _owner: &OwnerId) -> Option<SandboxMode> {
        None
    }

    /// A narrower sandbox mode this call runs in (rules with `sandbox = …`); `None`:
    /// the caller's and the host's.
    fn sandbox_for(
        &self,
        _subject: &Subject<'_>,
        _owner: &OwnerId,
        _arguments: &Value,
    ) -> Option<SandboxMode> {
        None
    }
}

/// Allows everything that passed review.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl Policy for AllowAll {
    fn check(&self, _: &Subject<'_>, _: &OwnerId, _: &Value) -> PolicyDecision {
        PolicyDecision::Allow
    }

    fn wants_touches(&self) -> bool {
        false
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
    fn wants_touches(&self) -> bool {
        false
    }

    fn check(&self, subject: &Subject<'_>, _: &OwnerId, arguments: &Value) -> PolicyDecision {
        let (tool, spec): (&str, &ToolSpec) = (&subject.spec.name, subject.spec);
        if !spec.sandbox_argument {
            return PolicyDecision::Allow;
        }
        let Some(asked) = arguments.get("sandbox").and_then(Value::as_str) else {
            return PolicyDecision::Allow;
        };
        match SandboxMode::parse(asked) {
            Ok(asked) if asked > self.mode => PolicyDecision::NeedsApproval {
                rule: "sandbox escalation".into(),
                reason: format!(
                    "`{tool}` asks to run its command in sandbox mode {}, wider than this host's \
                     {}: a person must approve it (or run it in {} by leaving `sandbox` out, or \
                     start toolshed with [sandbox] mode = \"{}\")",
                    asked.as_str(),
                    self.mode.as_str(),
                    self.mode.as_str(),
                    asked.as_str(),
                ),
            },
            Ok(_) => PolicyDecision::Allow,
            // The schema names the modes; a tool of another shape is the tool's to refuse.
            Err(_) => PolicyDecision::Allow,
        }
    }
}

/// The host's policy: the configured rules, then the sandbox escalation check.
#[derive(Debug, Clone)]
pub struct RulePolicy {
    rules: PolicyRules,
    escalation: SandboxEscalation,
}

impl RulePolicy {
    /// `rules`, on a host whose commands run in sandbox `mode`.
    pub fn new(rules: PolicyRules, mode: SandboxMode) -> Self {
        Self {
            rules,
            escalation: SandboxEscalation::new(mode),
        }
    }
}

impl Policy for RulePolicy {
    fn write_scope(&self, subject: &Subject<'_>, owner: &OwnerId) -> toolshed_core::WriteScope {
        self.rules.write_scope(subject, owner)
    }

    fn sandbox_for(
        &self,
        subject: &Subject<'_>,
        owner: &OwnerId,
        arguments: &Value,
    ) -> Option<SandboxMode> {
        self.rules.sandbox_for(subject, owner, arguments)
    }

    fn wants_touches(&self) -> bool {
        self.rules.tests_touches()
    }

    fn check_found(&self, subject: &Subject<'_>, owner: &OwnerId) -> PolicyDecision {
        self.decide(subject, self.rules.evaluate_found(subject, owner), || {
            PolicyDecision::Allow
        })
    }

    fn sandbox_for_found(&self, subject: &Subject<'_>, owner: &OwnerId) -> Option<SandboxMode> {
        self.rules.sandbox_for_found(subject, owner)
    }

    fn check(&self, subject: &Subject<'_>, owner: &OwnerId, arguments: &Value) -> PolicyDecision {
        let verdict = self.rules.evaluate(subject, owner, arguments);
        self.decide(subject, verdict, || {
            self.escalation.check(subject, owner, arguments)
        })
    }
}

impl RulePolicy {
    /// What `verdict` means for `subject`; `allowed` decides what an allow becomes.
    fn decide(
        &self,
        subject: &Subject<'_>,
        verdict: crate::policy::Verdict,
        allowed: impl FnOnce() -> PolicyDecision,
    ) -> PolicyDecision {
        let said = |default: String| verdict.message.clone().unwrap_or(default);
        let tool = &subject.spec.name;
        match verdict.decision {
            Decision::Allow => allowed(),
            Decision::Deny => PolicyDecision::Deny {
                rule: verdict.rule.clone(),
                message: said(format!("policy rule `{}` refuses `{tool}`", verdict.rule)),
            },
            Decision::Ask => PolicyDecision::NeedsApproval {
                rule: verdict.rule.clone(),
                reason: said(format!(
                    "policy rule `{}` asks a person to approve this `{tool}` call",
                    verdict.rule
                )),
            },
        }
    }
}

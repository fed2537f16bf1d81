//! Policy: may this call run as asked, or must a person approve it first?
//!
//! The seam is here so every door gets the same answer; the rules (sandbox modes, approval
//! for dangerous tools) arrive with the features that need them.

use serde_json::Value;
use toolshed_core::{OwnerId, ToolSpec};

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

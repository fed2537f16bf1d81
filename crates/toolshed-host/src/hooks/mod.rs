//! Hooks: code that runs before and after a tool, able to block, rewrite or annotate.
//!
//! Hooks run in registration order: the ones given to the builder, then the configured
//! command hooks ([`command`], `[[hooks.pre_tool_use]]`). Before the tool, the first hook
//! that blocks wins; a rewrite is validated and judged by the policy again; a hook may ask
//! for a person's approval. After the tool, each hook may replace the result.

mod command;
mod session;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolshed_core::{OwnerId, ToolError, ToolOutput};

pub(crate) use command::CommandHook;
pub use command::{HookEntry, HookEvent, HooksConfig, MAX_HOOK_TIMEOUT_MS};
pub use session::SessionLife;

use crate::review::Subject;

/// What a pre hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// Go on with the arguments as they are.
    Continue,
    /// Refuse the call with a reason.
    Block(String),
    /// Go on with these arguments instead.
    Rewrite(Value),
    /// Go on only once a person approves (the reason says why).
    Ask(String),
}

/// A hook around tool calls.
#[async_trait]
pub trait CallHook: Send + Sync {
    /// Whether the hook applies to this tool (all, unless it says otherwise).
    fn matches(&self, _subject: &Subject<'_>) -> bool {
        true
    }

    /// Runs before the tool.
    async fn before(&self, _tool: &str, _owner: &OwnerId, _args: &Value) -> HookDecision {
        HookDecision::Continue
    }

    /// Runs after the tool (given the arguments it ran with); returns the result to pass
    /// on.
    async fn after(
        &self,
        _tool: &str,
        _owner: &OwnerId,
        _args: &Value,
        result: Result<ToolOutput, ToolError>,
    ) -> Result<ToolOutput, ToolError> {
        result
    }
}

/// The hooks in force, in order.
#[derive(Clone, Default)]
pub struct Hooks(Vec<Arc<dyn CallHook>>);

impl Hooks {
    /// Adds a hook at the end.
    pub fn push(&mut self, hook: Arc<dyn CallHook>) {
        self.0.push(hook);
    }

    /// Whether there are no hooks.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pre hooks' verdict: `Err(reason)` when one blocks (the first block wins);
    /// otherwise the rewritten arguments, if any hook rewrote them (rewrites chain), and
    /// the first reason a hook gave for asking a person.
    pub(crate) async fn before(
        &self,
        subject: &Subject<'_>,
        owner: &OwnerId,
        args: &Value,
    ) -> Result<(Option<Value>, Option<String>), String> {
        let tool = subject.spec.name.as_str();
        // The arguments are copied only when a hook rewrites them.
        let mut current: Option<Value> = None;
        let mut ask = None;
        for hook in self.0.iter().filter(|h| h.matches(subject)) {
            match hook
                .before(tool, owner, current.as_ref().unwrap_or(args))
                .await
            {
                HookDecision::Continue => {}
                HookDecision::Block(reason) => return Err(reason),
                HookDecision::Rewrite(new_args) => current = Some(new_args),
                HookDecision::Ask(reason) => {
                    ask.get_or_insert(reason);
                }
            }
        }
        Ok((current, ask))
    }

    pub(crate) async fn after(
        &self,
        subject: &Subject<'_>,
        owner: &OwnerId,
        args: &Value,
        mut result: Result<ToolOutput, ToolError>,
    ) -> Result<ToolOutput, ToolError> {
        let tool = subject.spec.name.as_str();
        for hook in self.0.iter().filter(|h| h.matches(subject)) {
            result = hook.after(tool, owner, args, result).await;
        }
        result
    }
}

//! Hooks: code that runs before and after a tool, able to block, rewrite or annotate.
//!
//! Hooks run in registration order. Before the tool, the first hook that blocks wins; a
//! rewrite is validated again against the schema. After the tool, each hook may replace the
//! result. Command hooks speaking the Claude Code hook protocol plug in here later.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolshed_core::{OwnerId, ToolError, ToolOutput};

/// What a pre hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// Go on with the arguments as they are.
    Continue,
    /// Refuse the call with a reason.
    Block(String),
    /// Go on with these arguments instead.
    Rewrite(Value),
}

/// A hook around tool calls.
#[async_trait]
pub trait CallHook: Send + Sync {
    /// Runs before the tool.
    async fn before(&self, _tool: &str, _owner: &OwnerId, _args: &Value) -> HookDecision {
        HookDecision::Continue
    }

    /// Runs after the tool; returns the result to pass on.
    async fn after(
        &self,
        _tool: &str,
        _owner: &OwnerId,
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

    pub(crate) async fn before(&self, tool: &str, owner: &OwnerId, args: &Value) -> HookDecision {
        let mut args = args.clone();
        let mut rewritten = false;
        for hook in &self.0 {
            match hook.before(tool, owner, &args).await {
                HookDecision::Continue => {}
                HookDecision::Block(reason) => return HookDecision::Block(reason),
                HookDecision::Rewrite(new_args) => {
                    args = new_args;
                    rewritten = true;
                }
            }
        }
        if rewritten {
            HookDecision::Rewrite(args)
        } else {
            HookDecision::Continue
        }
    }

    pub(crate) async fn after(
        &self,
        tool: &str,
        owner: &OwnerId,
        mut result: Result<ToolOutput, ToolError>,
    ) -> Result<ToolOutput, ToolError> {
        for hook in &self.0 {
            result = hook.after(tool, owner, result).await;
        }
        result
    }
}

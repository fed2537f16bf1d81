//! The hooks of sessions and prompts (`[[hooks.session_start]]`, `session_end`,
//! `user_prompt_submit`): fired and forgotten where toolshed sees those moments — an MCP
//! client's session starting and ending, a person getting an MCP prompt — as Agent Spaces
//! and Claude Code fire them. Their answers change nothing; a failure is logged.

use std::sync::Arc;

use serde_json::json;

use super::command::CommandHook;

/// A session that has started: dropped, it fires the session end hooks.
pub struct SessionLife {
    hooks: Vec<Arc<CommandHook>>,
    session_id: String,
    owner: String,
}

impl SessionLife {
    /// A session whose end fires `hooks`.
    pub(crate) fn new(hooks: Vec<Arc<CommandHook>>, session_id: &str, owner: &str) -> Self {
        Self {
            hooks,
            session_id: session_id.to_string(),
            owner: owner.to_string(),
        }
    }
}

impl Drop for SessionLife {
    fn drop(&mut self) {
        if self.hooks.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let hooks = std::mem::take(&mut self.hooks);
        let (session_id, owner) = (self.session_id.clone(), self.owner.clone());
        runtime.spawn(async move {
            for hook in hooks {
                hook.fire(&session_id, json!({"owner": owner, "reason": "closed"}))
                    .await;
            }
        });
    }
}

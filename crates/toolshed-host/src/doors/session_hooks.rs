//! The session and prompt hooks as a door fires them ([`crate::hooks`]'s
//! `[[hooks.session_start]]`, `session_end`, `user_prompt_submit`): built from the
//! configuration when an event comes, since sessions start rarely.

use std::sync::Arc;

use serde_json::{Value, json};
use toolshed_core::OwnerId;

use crate::Host;
use crate::hooks::{CommandHook, HookEvent, SessionLife};

impl Host {
    /// The configured hooks of `event`; none when the configuration has none (or is wrong,
    /// which opening the host already refused).
    fn hooks_of(&self, event: HookEvent) -> Vec<Arc<CommandHook>> {
        let config = &self.config().config.hooks;
        let any = match event {
            HookEvent::SessionStart => !config.session_start.is_empty(),
            HookEvent::SessionEnd => !config.session_end.is_empty(),
            HookEvent::UserPromptSubmit => !config.user_prompt_submit.is_empty(),
            HookEvent::PreToolUse | HookEvent::PostToolUse => false,
        };
        if !any {
            return Vec::new();
        }
        let services = self.services();
        CommandHook::from_config(
            config,
            &services.ops.process,
            &(services.net.clone() as Arc<dyn toolshed_core::HttpClient>),
            self.workspace(),
        )
        .map(|hooks| {
            hooks
                .into_iter()
                .filter(|h| h.event() == event)
                .map(Arc::new)
                .collect()
        })
        .unwrap_or_default()
    }

    /// A session `session_id` of `owner` started (`info`: the client, the transport): the
    /// session start hooks fire now, and the session end hooks when what this returns is
    /// dropped.
    pub fn session_started(&self, session_id: &str, owner: &OwnerId, info: Value) -> SessionLife {
        let start = self.hooks_of(HookEvent::SessionStart);
        if !start.is_empty() {
            let (session_id, mut fields) = (session_id.to_string(), info);
            fields["owner"] = json!(owner.0);
            fields["source"] = json!("startup");
            tokio::spawn(async move {
                for hook in start {
                    hook.fire(&session_id, fields.clone()).await;
                }
            });
        }
        SessionLife::new(self.hooks_of(HookEvent::SessionEnd), session_id, &owner.0)
    }

    /// A person submitted prompt `name` with `arguments` (an MCP prompt got): the prompt
    /// hooks fire.
    pub fn prompt_submitted(
        &self,
        session_id: &str,
        owner: &OwnerId,
        name: &str,
        arguments: Value,
    ) {
        let hooks = self.hooks_of(HookEvent::UserPromptSubmit);
        if hooks.is_empty() {
            return;
        }
        let session_id = session_id.to_string();
        let fields = json!({"owner": owner.0, "prompt": name, "arguments": arguments});
        tokio::spawn(async move {
            for hook in hooks {
                hook.fire(&session_id, fields.clone()).await;
            }
        });
    }
}

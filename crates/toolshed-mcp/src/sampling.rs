//! Plugins' model requests (`ctx.llm.complete`) answered by the calling client through MCP
//! sampling (`sampling/createMessage`), when it declared the capability. Sampling is
//! deprecated by the newest protocol revision (SEP-2577) but offered by clients of the
//! revisions that have it.
#![allow(deprecated)]

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{CreateMessageRequestParams, Role, SamplingMessage};
use rmcp::service::Peer;
use toolshed_core::{CancellationToken, Completion, CompletionRequest, Sampler, ToolError};

/// The calling client's model.
pub(crate) struct ClientSampler {
    pub(crate) peer: Peer<RoleServer>,
}

impl ClientSampler {
    /// Whether the client declared sampling.
    pub(crate) fn supported(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some())
    }
}

#[async_trait]
impl Sampler for ClientSampler {
    async fn complete(
        &self,
        request: CompletionRequest,
        cancel: &CancellationToken,
    ) -> Result<Completion, ToolError> {
        let messages = request
            .messages
            .into_iter()
            .map(|m| {
                let role = if m.role == "assistant" {
                    Role::Assistant
                } else {
                    Role::User
                };
                SamplingMessage::new(role, m.content)
            })
            .collect();
        let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
        params.system_prompt = request.system;
        #[allow(clippy::cast_possible_truncation)]
        {
            params.temperature = request.temperature.map(|t| t as f32);
        }
        let answer = tokio::select! {
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
            answer = self.peer.create_message(params) => answer,
        }
        .map_err(|e| ToolError::Failed(format!("the client's model did not answer: {e}")))?;
        let text = answer
            .message
            .content
            .into_vec()
            .into_iter()
            .filter_map(|block| block.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("");
        Ok(Completion {
            text,
            model: Some(answer.model),
            stop_reason: answer.stop_reason,
            via: "sampling".into(),
        })
    }
}

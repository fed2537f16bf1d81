//! Plugins' model requests (`ctx.llm.complete`) and subagents' turns (`agent_run`)
//! answered by the calling client through MCP sampling (`sampling/createMessage`), when it
//! declared the capability — with tools (SEP-1577) when it declared `sampling.tools`.
//! Sampling is deprecated by the newest protocol revision (SEP-2577) but offered by
//! clients of the revisions that have it.
#![allow(deprecated)]

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{
    ContentBlock, CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock,
    ToolResultContent, ToolUseContent,
};
use rmcp::service::Peer;
use toolshed_core::{
    CancellationToken, ChatMessage, Completion, CompletionRequest, ModelToolCall, Sampler,
    ToolError,
};

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

/// One message of the conversation as sampling carries it: a tool's result is a `user`
/// message holding a `tool_result` block, the calls an `assistant` message's `tool_use`
/// blocks.
fn sampling_message(m: ChatMessage) -> SamplingMessage {
    let role = if m.role == "assistant" {
        Role::Assistant
    } else {
        Role::User
    };
    if let Some(id) = m.tool_call_id {
        let content = vec![ContentBlock::text(m.content)];
        let block = if m.is_error {
            ToolResultContent::error(id, content)
        } else {
            ToolResultContent::new(id, content)
        };
        return SamplingMessage::new(Role::User, SamplingMessageContentBlock::ToolResult(block));
    }
    if m.tool_calls.is_empty() {
        return SamplingMessage::new(role, m.content);
    }
    let mut blocks = Vec::new();
    if !m.content.is_empty() {
        blocks.push(SamplingMessageContentBlock::text(m.content));
    }
    for call in m.tool_calls {
        let input = match call.arguments {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        blocks.push(SamplingMessageContentBlock::ToolUse(ToolUseContent::new(
            call.id, call.name, input,
        )));
    }
    SamplingMessage::new_multiple(role, blocks)
}

/// The conversation with the results of one turn's tool calls in one `user` message:
/// every `tool_use` block is answered by the message right after it (models that check
/// refuse a result left for a later message).
fn merge_results(messages: Vec<SamplingMessage>) -> Vec<SamplingMessage> {
    let is_result = |m: &SamplingMessage| {
        m.role == Role::User
            && m.content
                .clone()
                .into_vec()
                .iter()
                .all(|b| matches!(b, SamplingMessageContentBlock::ToolResult(_)))
    };
    let mut out: Vec<SamplingMessage> = Vec::with_capacity(messages.len());
    for message in messages {
        match out.last_mut() {
            Some(last) if is_result(last) && is_result(&message) => {
                let mut blocks = last.content.clone().into_vec();
                blocks.extend(message.content.into_vec());
                *last = SamplingMessage::new_multiple(Role::User, blocks);
            }
            _ => out.push(message),
        }
    }
    out
}

#[async_trait]
impl Sampler for ClientSampler {
    async fn complete(
        &self,
        request: CompletionRequest,
        cancel: &CancellationToken,
    ) -> Result<Completion, ToolError> {
        let messages = merge_results(request.messages.into_iter().map(sampling_message).collect());
        let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
        params.system_prompt = request.system;
        #[allow(clippy::cast_possible_truncation)]
        {
            params.temperature = request.temperature.map(|t| t as f32);
        }
        if let Some(model) = request.model {
            params.model_preferences = Some(
                rmcp::model::ModelPreferences::new()
                    .with_hints(vec![rmcp::model::ModelHint::new(model)]),
            );
        }
        if !request.tools.is_empty() {
            params.tools = Some(
                request
                    .tools
                    .into_iter()
                    .map(|t| {
                        let schema = match t.input_schema {
                            serde_json::Value::Object(map) => map,
                            _ => serde_json::Map::new(),
                        };
                        rmcp::model::Tool::new(t.name, t.description, std::sync::Arc::new(schema))
                    })
                    .collect(),
            );
        }
        let answer = tokio::select! {
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
            answer = self.peer.create_message(params) => answer,
        }
        .map_err(|e| ToolError::Failed(format!("the client's model did not answer: {e}")))?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in answer.message.content.into_vec() {
            match block {
                SamplingMessageContentBlock::Text(t) => text.push_str(&t.text),
                SamplingMessageContentBlock::ToolUse(call) => tool_calls.push(ModelToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: serde_json::Value::Object(call.input),
                }),
                _ => {}
            }
        }
        Ok(Completion {
            text,
            model: Some(answer.model),
            stop_reason: answer.stop_reason,
            via: "sampling".into(),
            tool_calls,
            usage: None,
        })
    }

    fn calls_tools(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .sampling
                .as_ref()
                .is_some_and(|s| s.tools.is_some())
        })
    }
}

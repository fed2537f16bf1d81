//! Asking a model: what a plugin's `ctx.llm.complete` sends, and who answers it — the
//! calling MCP client through sampling (`sampling/createMessage`), or an OpenAI-compatible
//! endpoint configured in the host.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{CancellationToken, ToolError};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `user`, `assistant`, or `tool` (the result of a tool the model called).
    pub role: String,
    /// The text.
    pub content: String,
    /// For an `assistant` message: the tools the model called in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ModelToolCall>,
    /// For a `tool` message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a `tool` message: whether the call failed (its text says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ChatMessage {
    /// A message of text alone.
    pub fn text(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
        }
    }

    /// The result of the tool call `id`, for the model to read.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Self {
            tool_call_id: Some(id.into()),
            is_error,
            ..Self::text("tool", content)
        }
    }
}

/// A tool offered to the model in a completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelTool {
    /// Its name, as the model calls it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The id the model gave it (the result names it).
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments object.
    pub arguments: serde_json::Value,
}

/// Tokens a completion used, when the model's side says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read (the prompt).
    pub input_tokens: u64,
    /// Tokens written (the answer).
    pub output_tokens: u64,
}

/// A completion asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompletionRequest {
    /// The conversation so far, oldest first; the last is the user's.
    pub messages: Vec<ChatMessage>,
    /// Instructions for the model, if any.
    pub system: Option<String>,
    /// The most tokens the answer may have.
    pub max_tokens: u32,
    /// Sampling temperature, when the caller cares.
    pub temperature: Option<f64>,
    /// Tools the model may call instead of answering (only for a [`Sampler`] whose
    /// [`Sampler::calls_tools`] is true).
    pub tools: Vec<ModelTool>,
    /// The model asked for, where the model's side lets one choose (an endpoint's
    /// `model`; a hint to a client's sampling); `None`: its default.
    pub model: Option<String>,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Completion {
    /// The answer's text.
    pub text: String,
    /// The model that answered, when said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why it stopped (`endTurn`, `maxTokens`, `stop`…), when said.
    #[serde(rename = "stopReason", skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Who answered: `sampling` (the calling client) or `endpoint` (the configured one).
    pub via: String,
    /// The tools the model called instead of (or besides) answering.
    #[serde(rename = "toolCalls", skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ModelToolCall>,
    /// The tokens it used, when said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Something that answers completions.
#[async_trait]
pub trait Sampler: Send + Sync {
    /// Answers `request`, or fails: `Unconfigured` when nothing can answer, `Failed` when
    /// the model's side refused or broke.
    async fn complete(
        &self,
        request: CompletionRequest,
        cancel: &CancellationToken,
    ) -> Result<Completion, ToolError>;

    /// Whether this model can be offered tools to call ([`CompletionRequest::tools`]).
    fn calls_tools(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for dyn Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sampler")
    }
}

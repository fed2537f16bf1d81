//! Asking a model: what a plugin's `ctx.llm.complete` sends, and who answers it — the
//! calling MCP client through sampling (`sampling/createMessage`), or an OpenAI-compatible
//! endpoint configured in the host.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{CancellationToken, ToolError};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// A completion asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// The conversation so far, oldest first; the last is the user's.
    pub messages: Vec<ChatMessage>,
    /// Instructions for the model, if any.
    pub system: Option<String>,
    /// The most tokens the answer may have.
    pub max_tokens: u32,
    /// Sampling temperature, when the caller cares.
    pub temperature: Option<f64>,
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
}

impl std::fmt::Debug for dyn Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sampler")
    }
}

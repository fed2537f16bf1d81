//! `[llm]`: an OpenAI-compatible chat-completions endpoint that answers plugins' model
//! requests (`ctx.llm.complete`) when the calling client does not offer MCP sampling.
//!
//! The key is never in a config file: it is read from the environment variable the
//! config names (`api_key_env`, `TOOLSHED_LLM_API_KEY` by default) when a request is
//! made, and sent only to the configured endpoint. The endpoint's host is reached because
//! a person configured it in their own config (a workspace's `toolshed.toml` cannot set
//! `[llm] base_url`), so loopback and private addresses work for a local model server.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolshed_core::{
    CancellationToken, ChatMessage, Completion, CompletionRequest, HttpClient, HttpRequest,
    ModelToolCall, NetPolicy, Sampler, ToolError, Usage,
};

use crate::section::SectionError;

/// The largest answer body read from the endpoint.
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// `[llm]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// The endpoint's base URL, up to and including `/v1` (`http://127.0.0.1:8080/v1`);
    /// `/chat/completions` is appended. Left out: no endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model asked for.
    pub model: String,
    /// The environment variable holding the API key (sent as `Authorization: Bearer`);
    /// unset or empty: no key is sent.
    pub api_key_env: String,
    /// How long one completion may take.
    pub timeout_secs: u64,
    /// The most tokens a plugin may ask for in one answer.
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            model: "default".into(),
            api_key_env: "TOOLSHED_LLM_API_KEY".into(),
            timeout_secs: 60,
            max_tokens: 4096,
        }
    }
}

impl LlmConfig {
    /// Refuses settings that cannot work, naming them.
    pub(crate) fn check(&self) -> Result<(), SectionError> {
        let invalid = |message: String| SectionError::new("llm", message);
        if let Some(url) = &self.base_url {
            endpoint_host(url).map_err(invalid)?;
        }
        if self.timeout_secs == 0 || self.max_tokens == 0 {
            return Err(invalid(
                "[llm] timeout_secs and max_tokens must be at least 1".into(),
            ));
        }
        if self.api_key_env.is_empty()
            || !self
                .api_key_env
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(invalid(format!(
                "[llm] api_key_env = `{}` is not an environment variable name",
                self.api_key_env
            )));
        }
        Ok(())
    }

    /// The sampler over the configured endpoint; `None` without `base_url`.
    pub fn sampler(&self, http: Arc<dyn HttpClient>) -> Option<Arc<dyn Sampler>> {
        let url = self.base_url.clone()?;
        let host = endpoint_host(&url).ok()?;
        Some(Arc::new(EndpointSampler {
            url: format!("{}/chat/completions", url.trim_end_matches('/')),
            host,
            config: self.clone(),
            http,
        }))
    }
}

/// `host:port` of an endpoint URL, or why it is not one.
fn endpoint_host(url: &str) -> Result<String, String> {
    let parsed =
        url::Url::parse(url).map_err(|e| format!("[llm] base_url = `{url}` is not a URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "[llm] base_url = `{url}` must be an http:// or https:// URL"
        ));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("[llm] base_url = `{url}` names no host"))?;
    let port = parsed.port_or_known_default().unwrap_or(443);
    Ok(format!("{host}:{port}"))
}

/// Completions from an OpenAI-compatible `/chat/completions` endpoint.
struct EndpointSampler {
    url: String,
    host: String,
    config: LlmConfig,
    http: Arc<dyn HttpClient>,
}

#[async_trait]
impl Sampler for EndpointSampler {
    async fn complete(
        &self,
        request: CompletionRequest,
        cancel: &CancellationToken,
    ) -> Result<Completion, ToolError> {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for m in &request.messages {
            messages.push(chat_message(m));
        }
        let mut body = json!({
            "model": request.model.as_deref().unwrap_or(&self.config.model),
            "messages": messages,
            "max_tokens": request.max_tokens.min(self.config.max_tokens),
        });
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.input_schema,
                    }})
                })
                .collect();
        }
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if let Ok(key) = std::env::var(&self.config.api_key_env)
            && !key.is_empty()
        {
            headers.push(("authorization".into(), format!("Bearer {key}")));
        }
        let response = self
            .http
            .send(
                HttpRequest {
                    method: "POST".into(),
                    url: self.url.clone(),
                    headers,
                    body: Some(body.to_string().into_bytes()),
                    timeout: Duration::from_secs(self.config.timeout_secs),
                    max_response_bytes: MAX_RESPONSE_BYTES,
                },
                &NetPolicy::Only(vec![self.host.clone()]),
                cancel,
            )
            .await
            .map_err(|e| {
                ToolError::Failed(format!(
                    "the model endpoint {} could not be reached: {e}",
                    self.host
                ))
            })?;
        let text = String::from_utf8_lossy(&response.body);
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !(200..300).contains(&response.status) {
            let said = parsed["error"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| text.chars().take(300).collect());
            let hint = if matches!(response.status, 401 | 403) {
                format!(
                    "; check the key in ${} ([llm] api_key_env)",
                    self.config.api_key_env
                )
            } else {
                String::new()
            };
            return Err(ToolError::Failed(format!(
                "the model endpoint {} answered {}: {said}{hint}",
                self.host, response.status
            )));
        }
        let choice = &parsed["choices"][0];
        let tool_calls = tool_calls(&choice["message"]["tool_calls"]);
        let answer = match choice["message"]["content"].as_str() {
            Some(answer) => answer,
            None if !tool_calls.is_empty() => "",
            None => {
                return Err(ToolError::Failed(format!(
                    "the model endpoint {} answered without choices[0].message.content",
                    self.host
                )));
            }
        };
        let usage = &parsed["usage"];
        Ok(Completion {
            text: answer.to_string(),
            model: parsed["model"].as_str().map(str::to_string),
            stop_reason: choice["finish_reason"].as_str().map(str::to_string),
            via: "endpoint".into(),
            tool_calls,
            usage: usage.is_object().then(|| Usage {
                input_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            }),
        })
    }

    fn calls_tools(&self) -> bool {
        true
    }
}

/// One message as the chat-completions API takes it: an assistant's tool calls with their
/// arguments as JSON text, a tool's result as a `tool` message naming its call.
fn chat_message(m: &ChatMessage) -> Value {
    if let Some(id) = &m.tool_call_id {
        return json!({"role": "tool", "tool_call_id": id, "content": m.content});
    }
    let mut out = json!({"role": m.role, "content": m.content});
    if !m.tool_calls.is_empty() {
        out["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": c.arguments.to_string(),
                }})
            })
            .collect();
    }
    out
}

/// The tool calls of an answer's message; arguments that are not a JSON object's text are
/// handed on as they are, for the pipeline's validation to name.
fn tool_calls(calls: &Value) -> Vec<ModelToolCall> {
    let Some(calls) = calls.as_array() else {
        return Vec::new();
    };
    calls
        .iter()
        .enumerate()
        .filter_map(|(i, call)| {
            let function = &call["function"];
            let name = function["name"].as_str()?.to_string();
            let arguments = match &function["arguments"] {
                Value::String(text) if text.trim().is_empty() => json!({}),
                Value::String(text) => {
                    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
                }
                Value::Null => json!({}),
                other => other.clone(),
            };
            Some(ModelToolCall {
                id: call["id"]
                    .as_str()
                    .map_or_else(|| format!("call_{i}"), str::to_string),
                name,
                arguments,
            })
        })
        .collect()
}

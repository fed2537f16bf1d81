//! What a mounted server asks of whoever called its tool: a question for the person
//! (`elicitation/create`), a completion from a model (`sampling/createMessage`), the roots
//! (`roots/list`). Answered through the call's own asker and sampler, so the person is
//! reached however the calling client can be reached (its elicitation, an input round trip,
//! REST) and the model however toolshed can reach one (the client's sampling, the
//! configured endpoint). A legacy server sends these as requests during the call; a
//! 2026-07-28 server answers the call `input_required` with them.

use std::sync::Arc;

use serde_json::{Value, json};
use toolshed_core::{
    Answer, Asker, CancellationToken, ChatMessage, CompletionRequest, MAX_QUESTION_CHARS, Question,
    Sampler,
};

/// The most tokens a server may ask a completion for.
const MAX_SAMPLING_TOKENS: u32 = 8192;

/// The most questions and completions a server may ask for during one call.
pub(crate) const MAX_ASKS_PER_CALL: usize = 16;

/// What one call can answer with.
pub(crate) struct Asks {
    pub(crate) asker: Option<Arc<dyn Asker>>,
    pub(crate) sampler: Option<Arc<dyn Sampler>>,
    /// Whether the server may ask a model at all (its manifest declares `llm`, granted).
    pub(crate) may_sample: bool,
    /// Fires when the call ends, whichever way: what it asked is asked no longer.
    pub(crate) cancel: CancellationToken,
    /// One question or completion at a time.
    pub(crate) gate: tokio::sync::Semaphore,
    /// How many it asked for.
    pub(crate) asked: std::sync::atomic::AtomicUsize,
    /// Whose call it is.
    pub(crate) owner: String,
    /// Where the server's log messages during the call go.
    pub(crate) log: Option<toolshed_core::LogSink>,
}

impl Asks {
    pub(crate) fn new(
        owner: String,
        asker: Option<Arc<dyn Asker>>,
        sampler: Option<Arc<dyn Sampler>>,
        may_sample: bool,
        cancel: CancellationToken,
        log: Option<toolshed_core::LogSink>,
    ) -> Self {
        Self {
            owner,
            log,
            asker,
            sampler: sampler.filter(|_| may_sample),
            may_sample,
            cancel,
            gate: tokio::sync::Semaphore::new(1),
            asked: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Counts one more request; `false` past [`MAX_ASKS_PER_CALL`].
    pub(crate) fn count(&self) -> bool {
        self.asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            < MAX_ASKS_PER_CALL
    }
}

/// The capabilities toolshed declares to the servers it mounts: questions for the person
/// always, completions when the server was granted `llm`.
pub(crate) fn capabilities(sampling: bool) -> Value {
    if sampling {
        json!({"elicitation": {"form": {}}, "sampling": {}})
    } else {
        json!({"elicitation": {"form": {}}})
    }
}

/// Whether a server's request `method` is one [`answer`] needs a call for.
pub(crate) fn needs_call(method: &str) -> bool {
    matches!(method, "elicitation/create" | "sampling/createMessage")
}

/// The result of the server's request `method` with `params`, or a JSON-RPC error (code,
/// message).
pub(crate) async fn answer(
    asks: &Asks,
    server: &str,
    method: &str,
    params: &Value,
) -> Result<Value, (i64, String)> {
    match method {
        "ping" => Ok(json!({})),
        "roots/list" => Ok(json!({"roots": []})),
        "elicitation/create" => elicit(asks, server, params).await,
        "sampling/createMessage" => sample(asks, params).await,
        other => Err((
            -32601,
            format!("toolshed does not answer `{other}` for the servers it mounts"),
        )),
    }
}

/// Waits for the call's turn to ask (one question or completion at a time); an error once
/// the call has ended.
async fn turn(asks: &Asks) -> Result<tokio::sync::SemaphorePermit<'_>, (i64, String)> {
    let ended = || (-32603, "the call it belongs to has ended".to_string());
    tokio::select! {
        permit = asks.gate.acquire() => permit.map_err(|_| ended()),
        () = asks.cancel.cancelled() => Err(ended()),
    }
}

async fn elicit(asks: &Asks, server: &str, params: &Value) -> Result<Value, (i64, String)> {
    if params["mode"].as_str().is_some_and(|m| m != "form") {
        return Err((
            -32602,
            "toolshed puts only form questions to the person (no URL elicitation)".into(),
        ));
    }
    let asker = asks
        .asker
        .as_ref()
        .ok_or((-32603, "nobody can be asked during this call".to_string()))?;
    let message = params["message"].as_str().unwrap_or_default().trim();
    if message.is_empty() {
        return Err((-32602, "the question has no message".into()));
    }
    // Who asks, on a line of its own, so that the server's text cannot pass for toolshed's;
    // the server's part cut to what fits.
    let from = format!("The MCP server `{server}` asks:\n");
    let room = MAX_QUESTION_CHARS.saturating_sub(from.chars().count() + 1);
    let mut text: String = message.chars().take(room).collect();
    if text.len() < message.len() {
        text.push('…');
    }
    let schema = params
        .get("requestedSchema")
        .filter(|s| !s.is_null())
        .cloned();
    let question = Question::new(format!("{from}{text}"), schema)
        .map_err(|why| (-32602, format!("the question cannot be asked: {why}")))?;
    let _turn = turn(asks).await?;
    match asker.ask(&question, &asks.cancel).await {
        Ok(answer) => Ok(elicit_result(&answer)),
        Err(e) => Err((-32603, e.to_string())),
    }
}

/// An answer as `elicitation/create` returns it.
fn elicit_result(answer: &Answer) -> Value {
    match answer {
        Answer::Accept { content } => json!({"action": "accept", "content": content}),
        Answer::Decline => json!({"action": "decline"}),
        Answer::Cancel => json!({"action": "cancel"}),
    }
}

async fn sample(asks: &Asks, params: &Value) -> Result<Value, (i64, String)> {
    if !asks.may_sample {
        return Err((
            -32601,
            "this server may not ask for completions: mount it with `--sampling` (its manifest declares `llm` and it is granted)".into(),
        ));
    }
    let sampler = asks.sampler.as_ref().ok_or((
        -32603,
        "no model answers for this call: the client offers no sampling and toolshed has no [llm] endpoint".to_string(),
    ))?;
    let mut messages = Vec::new();
    for message in params["messages"].as_array().into_iter().flatten() {
        let text = match &message["content"] {
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            block => block["text"].as_str().unwrap_or_default().to_string(),
        };
        // A conversation of the user and the assistant: no other role is taken from a
        // server (its instructions are `systemPrompt`, kept apart).
        let role = match message["role"].as_str() {
            Some("assistant") => "assistant",
            _ => "user",
        };
        messages.push(ChatMessage::text(role, text));
    }
    if messages.is_empty() {
        return Err((-32602, "sampling/createMessage needs `messages`".into()));
    }
    let request = CompletionRequest {
        messages,
        system: params["systemPrompt"].as_str().map(String::from),
        max_tokens: params["maxTokens"]
            .as_u64()
            .map_or(1024, |n| n.min(u64::from(MAX_SAMPLING_TOKENS)) as u32),
        temperature: params["temperature"].as_f64(),
        tools: Vec::new(),
        model: None,
    };
    let _turn = turn(asks).await?;
    let completion = sampler
        .complete(request, &asks.cancel)
        .await
        .map_err(|e| (-32603, e.to_string()))?;
    Ok(json!({
        "role": "assistant",
        "content": {"type": "text", "text": completion.text},
        "model": completion.model.unwrap_or_else(|| completion.via.clone()),
        "stopReason": completion.stop_reason.unwrap_or_else(|| "endTurn".into()),
    }))
}

/// The answers to a 2026-07-28 server's `inputRequests` (key → request), keyed alike.
pub(crate) async fn input_responses(
    asks: &Asks,
    server: &str,
    requests: &serde_json::Map<String, Value>,
) -> Result<Value, String> {
    if requests.is_empty() {
        return Err("it answered input_required with nothing to answer".into());
    }
    let mut responses = serde_json::Map::new();
    for (key, request) in requests {
        if !asks.count() {
            return Err(format!(
                "it asked for more than {MAX_ASKS_PER_CALL} inputs in one call"
            ));
        }
        let method = request["method"].as_str().unwrap_or_default();
        let result = answer(asks, server, method, &request["params"])
            .await
            .map_err(|(_, why)| format!("cannot answer its `{method}`: {why}"))?;
        responses.insert(key.clone(), result);
    }
    Ok(Value::Object(responses))
}

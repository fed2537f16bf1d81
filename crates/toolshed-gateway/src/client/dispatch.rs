//! Routing what a server sends: replies settle their requests, notifications go where
//! they belong, and the server's own requests get an [`Answer`].

use serde_json::{Value, json};
use toolshed_core::Progress;

use super::{RpcError, Shared};

/// The answer to a server's request: at once, or once the person or model has answered.
pub(crate) enum Answer {
    Now(Value),
    Later(std::pin::Pin<Box<dyn std::future::Future<Output = Value> + Send>>),
}

impl Answer {
    /// The answer when it is there at once (tests).
    #[cfg(test)]
    pub(crate) fn now(self) -> Option<Value> {
        match self {
            Self::Now(value) => Some(value),
            Self::Later(_) => None,
        }
    }
}

/// Handles one message from the server; the answer to write back, for its requests.
/// `related` is the request whose response stream brought it (HTTP), if any.
pub(crate) fn dispatch(
    mut message: Value,
    shared: &Shared,
    related: Option<u64>,
) -> Option<Answer> {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(String::from);
    match (method.as_deref(), message.get("id").and_then(Value::as_u64)) {
        (None, Some(id)) => {
            let reply = match message.get_mut("error") {
                Some(error) => Err(RpcError::Server {
                    message: error["message"].as_str().unwrap_or("an error").to_string(),
                }),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            shared.settle(id, reply);
            None
        }
        (Some("notifications/progress"), _) => {
            let params = &message["params"];
            let token = params["progressToken"].as_u64()?;
            let sink = shared.lock_progress().get(&token).cloned();
            if let Some(sink) = sink {
                sink.send(Progress {
                    progress: params["progress"].as_f64(),
                    total: params["total"].as_f64(),
                    message: params["message"].as_str().map(String::from),
                });
            }
            None
        }
        (Some("notifications/tools/list_changed"), _) => {
            shared.tools_changed.notify_one();
            None
        }
        // A log message of the server's: to the caller of the call it came with (the one
        // in flight), named after the server.
        (Some("notifications/message"), None) => {
            let mut params = message["params"].take();
            if let Ok(asks) = shared.call_for(related)
                && let Some(log) = &asks.log
                && let Some(fields) = params.as_object_mut()
            {
                // Named after the server as mounted: a server cannot pass for another.
                fields.insert(
                    "logger".into(),
                    json!(shared.name.get().cloned().unwrap_or_default()),
                );
                log.send(params);
            }
            None
        }
        (Some("notifications/resources/updated"), None) => {
            if let Some(uri) = message["params"]["uri"].as_str() {
                shared.watchers.updated(uri);
            }
            None
        }
        // Requests from the server (an id and a method): answered, never left waiting.
        (Some(method), _) if message.get("id").is_some() => {
            let id = message["id"].take();
            let reply = move |outcome: Result<Value, (i64, String)>| match outcome {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                }
            };
            if !crate::asks::needs_call(method) {
                let outcome = match method {
                    "ping" => Ok(json!({})),
                    "roots/list" => Ok(json!({"roots": []})),
                    other => Err((
                        -32601,
                        format!("toolshed does not answer `{other}` for the servers it mounts"),
                    )),
                };
                return Some(Answer::Now(reply(outcome)));
            }
            let asks = match shared.call_for(related) {
                Ok(asks) if !asks.count() => {
                    return Some(Answer::Now(reply(Err((
                        -32603,
                        format!(
                            "the server asked for more than {} inputs in one call",
                            crate::asks::MAX_ASKS_PER_CALL
                        ),
                    )))));
                }
                Ok(asks) => asks,
                Err(why) => {
                    return Some(Answer::Now(reply(Err((
                        -32603,
                        format!("toolshed cannot put `{method}` to anyone: {why}"),
                    )))));
                }
            };
            let method = method.to_string();
            let params = message["params"].take();
            let server = shared.name.get().cloned().unwrap_or_default();
            Some(Answer::Later(Box::pin(async move {
                reply(crate::asks::answer(&asks, &server, &method, &params).await)
            })))
        }
        _ => None,
    }
}

//! `toolshed call NAME --args JSON`.

use std::io::Read;
use std::time::Duration;

use serde_json::{Value, json};
use toolshed_core::{Content, OwnerId};
use toolshed_host::{CallRequest, Host};

use crate::Failure;
use crate::cli::CallArgs;
use crate::render::print_json;

/// The most bytes of arguments read from standard input.
const MAX_STDIN_ARGS: u64 = 16 * 1024 * 1024;

pub(crate) fn read_args(raw: Option<&str>) -> Result<Value, Failure> {
    let text = match raw {
        None => return Ok(json!({})),
        Some("-") => {
            let mut buf = String::new();
            std::io::stdin()
                .take(MAX_STDIN_ARGS + 1)
                .read_to_string(&mut buf)
                .map_err(|e| {
                    Failure::Usage(format!("cannot read --args from standard input: {e}"))
                })?;
            if buf.len() as u64 > MAX_STDIN_ARGS {
                return Err(Failure::Usage(format!(
                    "--args on standard input is larger than {MAX_STDIN_ARGS} bytes"
                )));
            }
            buf
        }
        Some(text) => text.to_string(),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::Usage(format!(
            "--args is not valid JSON ({e}); pass an object such as --args '{{\"expression\":\"1+1\"}}'"
        ))
    })?;
    if !value.is_object() {
        return Err(Failure::Usage(format!(
            "--args must be a JSON object of named arguments, not {}",
            type_name(&value)
        )));
    }
    Ok(value)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Calls a tool and prints the result; a tool error exits 1.
pub(crate) async fn run(
    host: &Host,
    args: CallArgs,
    caller: Option<toolshed_host::identity::Caller>,
) -> Result<(), Failure> {
    let arguments = read_args(args.args.as_deref())?;
    let owner = match &caller {
        Some(caller) => {
            caller.require("tools:call")?;
            caller.owner_for(args.owner.as_deref())?
        }
        None => OwnerId::new(args.owner.clone().unwrap_or_else(|| "cli".into())),
    };
    let mut request = CallRequest::new(&args.name, arguments, owner, "cli");
    request.caller_tools = caller.as_ref().and_then(|c| c.tools.clone());
    request.credential = caller.as_ref().and_then(|c| c.token_id.clone());
    request.timeout = args.timeout_ms.map(Duration::from_millis);
    request.profile = args.profile;
    // Tell the person at the terminal when the call waits for an approval.
    let mut events = host.events().subscribe();
    let waiting = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            if let toolshed_host::Event::ApprovalRequested { request } = event {
                eprintln!(
                    "waiting for approval {id}: {reason}\n  approve: toolshed approvals approve {id}\n  deny:    toolshed approvals deny {id}",
                    id = request.id,
                    reason = request.reason
                );
            }
        }
    });
    let cancel = request.cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let span = tracing::info_span!(
        target: toolshed_core::TRACE,
        "toolshed call",
        otel.name = %format_args!("toolshed call {}", request.tool),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %request.tool,
    );
    let result = tracing::Instrument::instrument(host.call(request), span).await;
    ctrl_c.abort();
    waiting.abort();
    match result.result {
        Ok(output) => {
            if args.json {
                print_json(&json!({
                    "call_id": result.call_id.0,
                    "plugin": result.plugin_id,
                    "is_error": output.is_error,
                    "content": output.content,
                    "structured": output.structured,
                }))?;
            } else {
                for block in &output.content {
                    match block {
                        Content::Text { text } if text.ends_with('\n') => out!("{text}"),
                        Content::Text { text } => outln!("{text}"),
                        Content::Json { json } | Content::Mcp { block: json } => print_json(json)?,
                        Content::Image { data, mime_type } => {
                            outln!(
                                "[image {mime_type}, {} base64 characters; use --json to get it]",
                                data.len()
                            )
                        }
                    }
                }
            }
            if output.is_error {
                Err(Failure::Runtime(String::new()))
            } else {
                Ok(())
            }
        }
        Err(error) => {
            if args.json {
                print_json(&json!({
                    "call_id": result.call_id.0,
                    "error": error.to_json(),
                }))?;
                Err(Failure::Runtime(String::new()))
            } else {
                Err(Failure::Runtime(format!("[{}] {}", error.kind(), error)))
            }
        }
    }
}

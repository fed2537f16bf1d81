//! What a Node.js plugin asks of the host (`tools.call`, `memory`, `events.publish`,
//! `llm.complete`), checked against its grants and run with the call's context.

use serde_json::{Map, Value, json};
use toolshed_core::CallContext;

use crate::engine::{HostError, ask_request, check_event, llm_request, memory_request};
use crate::worker::WorkerConfig;

pub(super) fn answer(id: &Value, result: Result<Value, HostError>) -> Value {
    match result {
        Ok(value) => json!({"op": "answer", "id": id, "value": value}),
        Err(e) => {
            json!({"op": "answer", "id": id, "error": {"message": e.message, "kind": e.kind}})
        }
    }
}

/// One thing the plugin asked of the host, checked against its grants.
pub(super) async fn host_request(
    config: &WorkerConfig,
    ctx: &CallContext,
    method: &str,
    params: Value,
) -> Result<Value, HostError> {
    let reach = &config.reach;
    let plugin = &config.plugin_id;
    let no_caller =
        || HostError::from("this toolshed host does not let plugins call tools".to_string());
    match method {
        "tools.call" => {
            let name = params[0].as_str().unwrap_or_default();
            reach.check_tool(name)?;
            let args = match &params[1] {
                Value::Null => Value::Object(Map::new()),
                args @ Value::Object(_) => args.clone(),
                _ => {
                    return Err("tools.call: the arguments must be a JSON object"
                        .to_string()
                        .into());
                }
            };
            let caller = ctx.caller.clone().ok_or_else(no_caller)?;
            let output = caller
                .call_tool(ctx, plugin, name, args)
                .await
                .map_err(|e| HostError {
                    message: e.to_string(),
                    kind: Some(e.kind().as_str()),
                })?;
            Ok(json!({
                "text": output.text_joined(),
                "structured": output.structured,
                "isError": output.is_error,
            }))
        }
        "memory" => {
            reach.check_memory()?;
            let op = params[0].as_str().unwrap_or_default();
            let args = match &params[1] {
                Value::Object(map) => map.clone(),
                Value::Null => Map::new(),
                _ => return Err(format!("memory.{op}: the argument must be an object").into()),
            };
            let caller = ctx.caller.clone().ok_or_else(no_caller)?;
            memory_request(caller.as_ref(), ctx, plugin, op, args).await
        }
        "events.publish" => {
            reach.check_events()?;
            let kind = params[0].as_str().unwrap_or_default();
            let data = params[1].clone();
            check_event(kind, &data)?;
            config.access.notices.publish(
                format!("plugin.{plugin}.{kind}"),
                Some(&ctx.owner.0),
                json!({ "plugin_id": plugin, "data": data }),
            );
            Ok(Value::Null)
        }
        "llm.complete" => {
            reach.check_llm()?;
            llm_request(ctx, &params[0]).await
        }
        // No grant: see `ask_request`.
        "ask" => ask_request(ctx, &params[0], params.get(1)).await,
        other => Err(format!("`{other}` is not something the host does").into()),
    }
}

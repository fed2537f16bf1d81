//! `ctx.memory`: a plugin's memories, through the memory tools and the whole pipeline
//! (review, validation, policy, audit), as the calling owner and in a namespace of the
//! plugin's own (`plugin/<id>`), so that a plugin reads and changes its memories only.

use std::rc::Rc;

use rquickjs::{Ctx, Promise, Value};
use serde_json::{Map, json};
use toolshed_core::{CallContext, ToolCaller, ToolError, ToolOutput};

use super::{CallScope, HostError, HostValue, rejected};
use crate::engine::convert::to_json;

/// The namespace of plugin `id`'s memories.
pub(crate) fn namespace(plugin_id: &str) -> String {
    format!("plugin/{plugin_id}")
}

/// `ctx.memory`'s operations: `store`, `search`, `get`, `list`, `delete`.
pub(crate) fn memory_op<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    op: &str,
    args: Option<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    if let Err(message) = scope.reach.check_memory() {
        return rejected(ctx, &message);
    }
    let call = scope.call(ctx)?.clone();
    let args = match args.map(|v| to_json(ctx, v)) {
        None => Map::new(),
        Some(Ok(Some(serde_json::Value::Object(map)))) => map,
        Some(_) => {
            return rejected(ctx, &format!("memory.{op}: the argument must be an object"));
        }
    };
    let Some(caller) = call.caller.clone() else {
        return rejected(
            ctx,
            "this toolshed host does not give plugins memory (no tool caller is configured)",
        );
    };
    let plugin = scope.plugin_id.clone();
    let op = op.to_string();
    scope.start(ctx, async move {
        memory_request(caller.as_ref(), &call, &plugin, &op, args)
            .await
            .map(HostValue::Json)
    })
}

/// One `ctx.memory` operation of plugin `plugin` for the call `call`, whatever runtime
/// asked: through the memory tools, in the plugin's namespace.
pub(crate) async fn memory_request(
    caller: &dyn ToolCaller,
    call: &CallContext,
    plugin: &str,
    op: &str,
    mut args: Map<String, serde_json::Value>,
) -> Result<serde_json::Value, HostError> {
    let ns = namespace(plugin);
    let tool = match op {
        "store" => "memory_store",
        "search" => "memory_search",
        "get" => "memory_get",
        "list" => "memory_list",
        "delete" => "memory_delete",
        other => return Err(format!("memory.{other} is not an operation").into()),
    };
    if matches!(op, "store" | "search" | "list") {
        args.insert("namespace".into(), ns.clone().into());
    }
    let memory = Memory {
        caller,
        call,
        plugin,
    };
    // A memory named by id must be one of this plugin's (ids are the caller's across
    // namespaces; a namespace never changes once stored).
    let id = args.get("id").and_then(|v| v.as_str()).map(str::to_string);
    if let Some(id) = &id {
        let found = memory.call("memory_get", json!({ "id": id })).await?;
        if found["namespace"] != json!(ns) {
            return Err(HostError {
                message: format!("no memory `{id}` of plugin `{plugin}`"),
                kind: Some("not_found"),
            });
        }
        if op == "get" {
            return Ok(found);
        }
    }
    let mut out = memory.call(tool, serde_json::Value::Object(args)).await?;
    Ok(match op {
        "store" => out["memory"].take(),
        "search" => out["results"].take(),
        _ => out,
    })
}

struct Memory<'a> {
    caller: &'a dyn ToolCaller,
    call: &'a CallContext,
    plugin: &'a str,
}

impl Memory<'_> {
    /// Calls a memory tool; its structured result, or why not.
    async fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, HostError> {
        let output: ToolOutput = self
            .caller
            .call_tool(self.call, self.plugin, tool, args)
            .await
            .map_err(|e: ToolError| HostError {
                message: e.to_string(),
                kind: Some(e.kind().as_str()),
            })?;
        if output.is_error {
            return Err(HostError {
                message: output.text_joined(),
                kind: Some("failed"),
            });
        }
        Ok(output.structured.unwrap_or_default())
    }
}

//! `POST /plugins/{id}/tools/execute`: running a plugin's tool the way Agent Spaces' web
//! workflow asks for it — the tool named in the body, with the caller's `workspaceId`,
//! `executorId`, `taskId` and `meta` echoed in the call's events and reply. The call goes
//! through the same pipeline as `POST /tools/{name}/execute`.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolshed_host::CallRequest;
use toolshed_host::identity::Caller;

use super::tools::{Route, answer};
use super::{AppState, owner, parsed_body};
use crate::error::ApiError;

/// The most bytes of `meta`, as JSON.
const MAX_META_BYTES: usize = 16 * 1024;

/// The body of `POST /plugins/{id}/tools/execute`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PluginExecute {
    /// The tool, as the plugin names it (`tool` and `name` are taken too).
    #[serde(rename = "toolName", alias = "tool", alias = "name")]
    #[schemars(length(min = 1, max = 200))]
    pub tool_name: String,
    /// Its arguments, checked against its input schema (`arguments` and `params` are taken
    /// too; default `{}`).
    #[serde(default, alias = "arguments", alias = "params")]
    pub args: Option<Map<String, Value>>,
    /// The caller's workspace, echoed (the token chooses the workspace the call runs in).
    #[serde(default, rename = "workspaceId")]
    #[schemars(length(max = 200))]
    pub workspace_id: Option<String>,
    /// The caller's executor (the agent or workflow running the call), echoed.
    #[serde(default, rename = "executorId")]
    #[schemars(length(max = 200))]
    pub executor_id: Option<String>,
    /// The caller's task, echoed.
    #[serde(default, rename = "taskId")]
    #[schemars(length(max = 200))]
    pub task_id: Option<String>,
    /// Anything else the caller wants back in the events, up to 16 KiB of JSON.
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
    /// Start a job and answer `202` at once (the default for a `complex` tool).
    #[serde(default, rename = "async")]
    pub run_async: Option<bool>,
    /// The call's deadline, in milliseconds.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

/// `POST /plugins/{id}/tools/execute`.
pub(crate) async fn execute(
    State(state): State<AppState>,
    Path(id): Path<String>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    request: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let (request, room, _) =
        parsed_body::<PluginExecute>(&state.trees, &headers, request, None).await?;
    let owner = owner(caller.as_deref(), &headers)?;
    if state.host.plugins().manifest(&id).is_none() {
        return Err(ApiError::not_found(format!(
            "no plugin `{id}`; GET /api/v1/plugins lists them"
        )));
    }
    // The tool must be this plugin's: a name another plugin serves is not run here.
    let name = request.tool_name;
    let served_by = state
        .host
        .catalog()
        .lookup(&name)
        .map(|t| t.plugin_id.clone());
    if served_by.as_deref() != Some(id.as_str()) {
        let mine: Vec<String> = state
            .host
            .catalog()
            .tools()
            .into_iter()
            .filter(|t| t.plugin_id == id)
            .map(|t| t.spec().name.clone())
            .collect();
        return Err(ApiError::not_found(match served_by {
            Some(other) => format!(
                "`{name}` is plugin `{other}`'s tool, not `{id}`'s; call it through /api/v1/plugins/{other}/tools/execute"
            ),
            None if mine.is_empty() => {
                format!(
                    "plugin `{id}` has no tool `{name}`, and no tools now (is it enabled and running? GET /api/v1/plugins/{id})"
                )
            }
            None => format!(
                "plugin `{id}` has no tool `{name}`; its tools: {}",
                mine.join(", ")
            ),
        }));
    }
    if let Some(ms) = request.timeout_ms {
        let max = state.host.config().config.limits.max_timeout_ms;
        if ms == 0 || ms > max {
            return Err(ApiError::bad_request(format!(
                "timeout_ms = {ms} is out of range: give 1 to {max} milliseconds"
            )));
        }
    }
    let mut context = Map::new();
    for (key, value) in [
        ("workspaceId", request.workspace_id),
        ("executorId", request.executor_id),
        ("taskId", request.task_id),
    ] {
        if let Some(value) = value {
            context.insert(key.into(), Value::String(value));
        }
    }
    if let Some(meta) = request.meta {
        let bytes = serde_json::to_vec(&meta).map_or(0, |v| v.len());
        if bytes > MAX_META_BYTES {
            return Err(ApiError::bad_request(format!(
                "meta is {bytes} bytes of JSON, over the {MAX_META_BYTES} kept; send less, or an id that leads to the rest"
            )));
        }
        context.insert("meta".into(), Value::Object(meta));
    }
    let arguments = Value::Object(request.args.unwrap_or_default());
    let mut call = CallRequest::new(name, arguments, owner, "rest");
    call.caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    call.credential = caller.as_deref().and_then(|c| c.token_id.clone());
    call.timeout = request.timeout_ms.map(std::time::Duration::from_millis);
    call.context = (!context.is_empty()).then_some(Value::Object(context));
    let route = Route {
        sync: "/api/v1/plugins/{id}/tools/execute",
        job: "/api/v1/plugins/{id}/tools/execute (job)",
    };
    let run_async = request
        .run_async
        .unwrap_or_else(|| super::tools::runs_long(&state, &call.tool));
    answer(&state, call, run_async, Box::new(room), &headers, route).await
}

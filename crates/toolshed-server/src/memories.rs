//! `/api/v1/memories`: the caller's memories over REST. Each request is a call of a memory
//! tool through the pipeline (door `rest`), so review, policy, quotas and audit hold as for
//! any other call, and the owner is the caller's (see [`owner`]).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolshed_host::CallRequest;
use toolshed_host::identity::Caller;
use tracing::Instrument as _;

use crate::api::{AppState, body, owner, query};
use crate::error::ApiError;
use crate::reply::{Deleted, Memory, MemoryMatches, MemoryPage, Stored, read};

/// Filters of `GET /memories`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// Only this namespace.
    #[schemars(length(max = 80))]
    pub namespace: Option<String>,
    /// Only memories with all these tags, comma-separated.
    pub tags: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// The most memories on the page (default 20).
    #[schemars(range(min = 1, max = toolshed_host::memory::MAX_PAGE))]
    pub limit: Option<u32>,
}

/// Parameters of `GET /memories/search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchQuery {
    /// The query: words, `"a phrase"`, `prefix*`, `OR`, `-word`.
    #[schemars(required, length(min = 1, max = toolshed_host::memory::MAX_QUERY_LEN))]
    pub q: Option<String>,
    /// Only this namespace.
    #[schemars(length(max = 80))]
    pub namespace: Option<String>,
    /// Only memories with all these tags, comma-separated.
    pub tags: Option<String>,
    /// The most results (default 10).
    #[schemars(range(min = 1, max = toolshed_host::memory::MAX_PAGE))]
    pub limit: Option<u32>,
    /// Only memories changed since then (`7d`, an RFC 3339 time, epoch milliseconds).
    pub since: Option<String>,
}

/// Calls memory tool `tool` for the caller; its structured result.
async fn call(
    state: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Value, ApiError> {
    let owner = owner(caller, headers)?;
    // The dashboard, signed in as the admin, reading what it shows: not audited.
    let looking = caller.is_none_or(|c| !c.is_agent())
        && headers
            .get(crate::dashboard::CLIENT_HEADER)
            .is_some_and(|v| v.as_bytes() == b"dashboard")
        && matches!(tool, "memory_list" | "memory_search" | "memory_get");
    let door = if looking {
        toolshed_host::DASHBOARD_DOOR
    } else {
        "rest"
    };
    let mut request = CallRequest::new(tool, Value::Object(arguments), owner, door);
    request.caller_tools = caller.and_then(|c| c.tools.clone());
    request.credential = caller.and_then(|c| c.token_id.clone());
    // A client that goes away cancels the call.
    let cancel = tokio_util::sync::CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    request.cancel = cancel;
    let (method, route) = match tool {
        "memory_list" => ("GET", "/api/v1/memories"),
        "memory_search" => ("GET", "/api/v1/memories/search"),
        "memory_store" => ("POST", "/api/v1/memories"),
        "memory_get" => ("GET", "/api/v1/memories/{id}"),
        _ => ("POST", "/api/v1/memories/{id}"),
    };
    let span = crate::api::door_span(method, route, tool);
    let result = state.host.call(request).instrument(span.clone()).await;
    toolshed_host::jobs::record_outcome(&span, &result);
    match result.result {
        Ok(output) if !output.is_error => Ok(output.structured.unwrap_or_default()),
        Ok(output) => Err(ApiError::internal(output.text_joined())),
        Err(error) if error.kind() == toolshed_core::ErrorKind::Failed => {
            Err(ApiError::internal(error.to_string()))
        }
        Err(error) => Err(ApiError::from(&error)),
    }
}

/// `a,b` as `["a", "b"]` (blanks dropped).
fn tag_list(tags: Option<&str>) -> Option<Value> {
    let tags: Vec<Value> = tags?
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Value::from)
        .collect();
    (!tags.is_empty()).then_some(Value::Array(tags))
}

/// Puts `value` under `key` when there is one.
fn put(args: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        args.insert(key.into(), value);
    }
}

/// `GET /memories`: the caller's memories, newest first, a page at a time.
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    filter: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<MemoryPage>, ApiError> {
    let filter = query(filter)?;
    let mut args = Map::new();
    put(&mut args, "namespace", filter.namespace.map(Value::from));
    put(&mut args, "tags", tag_list(filter.tags.as_deref()));
    put(&mut args, "cursor", filter.cursor.map(Value::from));
    put(&mut args, "limit", filter.limit.map(Value::from));
    let page = call(&state, caller.as_deref(), &headers, "memory_list", args).await?;
    read(page, "memory_list's result").map(Json)
}

/// `GET /memories/search`: full-text search, best first.
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    params: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<Json<MemoryMatches>, ApiError> {
    let params = query(params)?;
    let Some(q) = params.q.filter(|q| !q.trim().is_empty()) else {
        return Err(ApiError::bad_request(
            "`q` is missing: give what to search for, e.g. ?q=postgres",
        ));
    };
    let mut args = Map::new();
    args.insert("query".into(), q.into());
    put(&mut args, "namespace", params.namespace.map(Value::from));
    put(&mut args, "tags", tag_list(params.tags.as_deref()));
    put(&mut args, "limit", params.limit.map(Value::from));
    put(&mut args, "since", params.since.map(Value::from));
    let found = call(&state, caller.as_deref(), &headers, "memory_search", args).await?;
    read(found, "memory_search's result").map(Json)
}

/// The body of `POST /memories`: what `memory_store` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMemory {
    #[schemars(length(min = 1))]
    text: String,
    #[schemars(length(max = 200))]
    title: Option<String>,
    #[schemars(length(max = toolshed_host::memory::MAX_TAGS))]
    tags: Option<Vec<String>>,
    #[schemars(length(max = 80))]
    namespace: Option<String>,
    /// Update this memory instead of storing a new one.
    id: Option<String>,
    /// Forget after e.g. `7d`.
    ttl: Option<String>,
}

/// `POST /memories`: stores a memory (`201`), or updates memory `id` (`200`).
pub(crate) async fn store(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    new: Result<Json<NewMemory>, JsonRejection>,
) -> Result<(StatusCode, Json<Memory>), ApiError> {
    let new = body(new)?;
    let update = new.id.is_some();
    let mut args = Map::new();
    args.insert("text".into(), new.text.into());
    put(&mut args, "title", new.title.map(Value::from));
    put(&mut args, "tags", new.tags.map(Value::from));
    put(&mut args, "namespace", new.namespace.map(Value::from));
    put(&mut args, "id", new.id.map(Value::from));
    put(&mut args, "ttl", new.ttl.map(Value::from));
    let stored = call(&state, caller.as_deref(), &headers, "memory_store", args).await?;
    let Stored { memory } = read(stored, "memory_store's result")?;
    let status = if update {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(memory)))
}

fn id_arg(id: String) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("id".into(), id.into());
    args
}

/// `GET /memories/{id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Memory>, ApiError> {
    let memory = call(
        &state,
        caller.as_deref(),
        &headers,
        "memory_get",
        id_arg(id.clone()),
    )
    .await?;
    let memory: Memory = read(memory, "memory_get's result")?;
    // A deleted memory is gone from this resource; it stays restorable.
    if memory.deleted_ms.is_some() {
        return Err(ApiError::not_found(format!(
            "memory `{id}` was deleted; POST /api/v1/memories/{id}/restore brings it back"
        )));
    }
    Ok(Json(memory))
}

/// `DELETE /memories/{id}`: a soft delete, restorable for `[memory] deleted_days`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    let memory = call(
        &state,
        caller.as_deref(),
        &headers,
        "memory_delete",
        id_arg(id),
    )
    .await?;
    Ok(Json(Deleted {
        deleted: read(memory, "memory_delete's result")?,
    }))
}

/// `POST /memories/{id}/restore`: brings back a deleted or compacted memory.
pub(crate) async fn restore(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Memory>, ApiError> {
    let mut args = id_arg(id);
    args.insert("restore".into(), true.into());
    let memory = call(&state, caller.as_deref(), &headers, "memory_delete", args).await?;
    read(memory, "memory_delete's result").map(Json)
}

//! What the plugins keep running for owners — background processes, command sessions,
//! browser sessions — read without calling a tool (so an operator's view is not audited as
//! calls): every owner's for the admin (`?owner=` narrows), an agent token's own owner's.

use axum::extract::{Path, Query, State};
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::OwnerId;
use toolshed_host::identity::Caller;

use super::{AppState, query, sees};
use crate::error::ApiError;
use crate::reply::{Running, RunningList, RunningOutput};

/// The most output bytes `GET /running/{plugin}/{id}/output` returns.
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Filters of `GET /running`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunningFilter {
    /// Only this owner's and its sub-owners' (`alice` takes in `alice/task-7`).
    pub owner: Option<String>,
    /// Only this kind: `process`, `command_session`, `browser_session`.
    pub kind: Option<String>,
}

/// `GET /running`.
pub(crate) async fn running(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<RunningFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RunningList>, ApiError> {
    let filter = query(filter)?;
    let owner = filter.owner.filter(|o| !o.is_empty()).map(OwnerId::new);
    let kind = filter.kind.filter(|k| !k.is_empty());
    let mut items: Vec<Running> = state
        .host
        .plugins()
        .running()
        .await
        .into_iter()
        .filter(|(_, r)| sees(caller.as_deref(), &r.owner))
        .filter(|(_, r)| owner.as_ref().is_none_or(|o| o.covers(&r.owner)))
        .filter(|(_, r)| kind.as_deref().is_none_or(|k| k == r.kind))
        .map(|(plugin, r)| Running::new(plugin, r))
        .collect();
    items.sort_by(|a, b| b.started_ms.cmp(&a.started_ms).then(a.id.cmp(&b.id)));
    Ok(Json(RunningList { running: items }))
}

/// `GET /running/{plugin}/{id}/output`: the last 64 KiB of its output.
pub(crate) async fn output(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path((plugin, id)): Path<(String, String)>,
) -> Result<Json<RunningOutput>, ApiError> {
    let missing = || {
        ApiError::not_found(format!(
            "nothing running with id `{id}` in plugin `{plugin}`; GET /api/v1/running lists them"
        ))
    };
    let plugins = state.host.plugins();
    let found = plugins
        .running()
        .await
        .into_iter()
        .find(|(p, r)| *p == plugin && r.id == id)
        .filter(|(_, r)| sees(caller.as_deref(), &r.owner))
        .ok_or_else(missing)?;
    let output = plugins
        .running_output(&plugin, &id, MAX_OUTPUT_BYTES)
        .ok_or_else(missing)?;
    Ok(Json(RunningOutput {
        running: Running::new(found.0, found.1),
        output,
    }))
}

/// `POST /running/{plugin}/{id}/stop`: stops it with the call its plugin names (a command
/// session's `command_run_terminate`, a process's `process_stop`, a browser page's
/// `browser_close`), made through the pipeline as its owner — reviewed, checked by policy
/// and audited like any call — and answered as `POST /tools/{name}/execute` is.
pub(crate) async fn stop(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: axum::http::HeaderMap,
    Path((plugin, id)): Path<(String, String)>,
) -> Result<axum::response::Response, ApiError> {
    let (_, item) = state
        .host
        .plugins()
        .running()
        .await
        .into_iter()
        .find(|(p, r)| *p == plugin && r.id == id)
        .filter(|(_, r)| sees(caller.as_deref(), &r.owner))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "nothing running with id `{id}` in plugin `{plugin}`; GET /api/v1/running lists them"
            ))
        })?;
    let Some(stop) = item.stop else {
        return Err(ApiError::conflict(format!(
            "`{id}` of plugin `{plugin}` cannot be stopped from here; its plugin's tools stop it"
        )));
    };
    let mut call = toolshed_host::CallRequest::new(
        stop.tool,
        stop.arguments,
        OwnerId::new(item.owner),
        "rest",
    );
    call.caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    call.credential = caller.as_deref().and_then(|c| c.token_id.clone());
    let route = super::tools::Route {
        sync: "/api/v1/running/{plugin}/{id}/stop",
        job: "/api/v1/running/{plugin}/{id}/stop (job)",
    };
    super::tools::answer(&state, call, false, Box::new(()), &headers, route).await
}

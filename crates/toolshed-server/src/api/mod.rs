//! The `/api/v1` handlers, by resource: [`plugins`] and their [`config`], [`tools`] and
//! running one, [`jobs`], what the agent tools keep ([`agents`]: todo lists and
//! schedules), what plugins keep running for owners ([`running`]) and the variables
//! commands get ([`env`]); files sent to the workspace ([`upload`]). Here: what they share (the state, the caller's owner, the
//! parsing of bodies and queries into the API's error, the room for large JSON trees), the
//! health checks, and the answers for a path or method that is not an endpoint.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use toolshed_core::OwnerId;
use toolshed_host::Host;
use toolshed_host::identity::{Caller, IdentityError};
use toolshed_host::registry::RegistryError;

use crate::error::ApiError;
use crate::events::EventLog;
use crate::reply::{Health, Liveness, ServerStatus};
use toolshed_host::jobs::{Jobs, default_owner};

mod agents;
mod commands;
mod config;
mod env;
mod jobs;
mod plugins;
mod running;
mod spaces;
mod tools;
mod upload;

pub(crate) use agents::{OwnerFilter, schedules, todos};
pub(crate) use commands::{
    CommandAnswer, CommandList, list as commands, run as run_command, run_on as run_command_on,
};
pub(crate) use config::{ConfigUpdate, get_config, put_config};
pub(crate) use env::{
    EnvLayers, clear as clear_env, get as get_env, put as put_env, session_env_schema,
};
pub(crate) use jobs::{JobFilter, cancel_job, job, jobs};
pub(crate) use plugins::{
    GrantsChange, InstallBody, LocaleQuery, PluginsQuery, change_grants, disable, enable,
    get_grants, install, pause, plugin, plugin_health, plugin_icon, plugin_tools, plugins, reload,
    resume, uninstall, verify,
};
pub(crate) use running::{RunningFilter, output as running_output, running, stop as stop_running};
pub(crate) use spaces::{PluginExecute, execute as execute_in_plugin};
pub(crate) use tools::door_span;
#[cfg(feature = "grpc")]
pub(crate) use tools::usable;
pub(crate) use tools::{
    Execute, ToolFilter, ToolSearch, execute, groups as tool_groups, search_tools, tool, tools,
};
pub(crate) use upload::{UploadQuery, Uploaded, download as download_upload, upload};

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    /// The host.
    pub host: Arc<Host>,
    /// Async jobs.
    pub jobs: Arc<Jobs>,
    /// The event log.
    pub events: Arc<EventLog>,
    /// When the server started.
    pub started: std::time::Instant,
    /// Fired when the server stops: live event streams end.
    pub stop: tokio_util::sync::CancellationToken,
    /// Set once the server is shutting down.
    pub draining: Arc<std::sync::atomic::AtomicBool>,
    /// Fired when a shutdown's grace period is over: calls still running are cancelled.
    pub calls_stop: tokio_util::sync::CancellationToken,
    /// The event streams open, per owner and in all.
    pub streams: Arc<crate::stream::StreamSlots>,
    /// The memory (KiB) that parsed call arguments may take at once (see [`tree_room`]).
    pub trees: Arc<tokio::sync::Semaphore>,
}

/// How much memory the call arguments parsed from request bodies may take at once, in KiB.
pub(crate) const TREE_BUDGET_KIB: u32 = 64 * 1024;

pub(crate) use toolshed_core::oversized::parsed_estimate;

/// Room for the tree a request body parses into, held until the call has answered: large
/// bodies of many values (past [`LARGE_TREE_KIB`]) are parsed and run a few at a time, so
/// their trees never add up past [`TREE_BUDGET_KIB`]; smaller ones never wait. A large one
/// that finds no room within [`TREE_WAIT`] is answered `503` with `Retry-After`.
pub(crate) struct TreeRoom {
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
    large: bool,
}

/// Past this estimate (KiB), a body waits for room, and the memory its call freed is given
/// back when it ends.
const LARGE_TREE_KIB: u32 = 8 * 1024;

/// How long a large body waits for room before it is refused.
const TREE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Drop for TreeRoom {
    fn drop(&mut self) {
        if self.large {
            // The tree is gone: its pages go back, or every worker thread's heap would
            // keep the size of the largest request it parsed.
            toolshed_ops::give_back_free_memory();
        }
    }
}

pub(crate) async fn tree_room(
    trees: &Arc<tokio::sync::Semaphore>,
    estimate: usize,
) -> Result<TreeRoom, ApiError> {
    let kib = u32::try_from(estimate.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .clamp(1, TREE_BUDGET_KIB);
    if kib < LARGE_TREE_KIB {
        return Ok(TreeRoom {
            _permit: None,
            large: false,
        });
    }
    match tokio::time::timeout(TREE_WAIT, trees.clone().acquire_many_owned(kib)).await {
        Ok(permit) => Ok(TreeRoom {
            _permit: permit.ok(),
            large: true,
        }),
        Err(_) => {
            let mut error = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                format!(
                    "this request's arguments take about {} MiB once parsed, and other large requests hold the room for them now; retry in a few seconds, or send a smaller document",
                    kib / 1024
                ),
            );
            error.details = json!({"retry_after": 5});
            Err(error)
        }
    }
}

/// A JSON request body read whole, then parsed into `T` once there is room for its tree;
/// errors as the `Json` extractor words them (`415` without a JSON content type, `400`).
/// Arguments over the tool's `limits` are left out unparsed, and returned instead.
pub(super) async fn parsed_body<T: serde::de::DeserializeOwned>(
    trees: &Arc<tokio::sync::Semaphore>,
    headers: &HeaderMap,
    bytes: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
    limits: Option<&std::collections::BTreeMap<String, usize>>,
) -> Result<(T, TreeRoom, Vec<toolshed_core::OversizedArgument>), ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json);
    let bytes = bytes.map_err(|rejection| {
        unread_or(ApiError::new(
            rejection.status(),
            "invalid_request",
            rejection.body_text(),
        ))
    })?;
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Expected request with `Content-Type: application/json`",
        ));
    }
    let (text, oversized) =
        match limits.and_then(|limits| toolshed_core::oversized::strip_rest_body(&bytes, limits)) {
            Some(stripped) => (std::borrow::Cow::Owned(stripped.text), stripped.oversized),
            None => (std::borrow::Cow::Borrowed(&bytes[..]), Vec::new()),
        };
    let room = tree_room(trees, parsed_estimate(&text)).await?;
    let value = body(Json::<T>::from_bytes(&text))?;
    Ok((value, room, oversized))
}

/// Whether a `Content-Type` names JSON, as the `Json` extractor judges it:
/// `application/json` or `application/…+json`, parameters aside.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The header that names the caller's owner: the one the MCP door reads too.
pub(crate) use toolshed_mcp::OWNER_HEADER;

/// The owner a request runs as: what `X-Toolshed-Owner` names, within what the caller's
/// token allows (an agent token: itself or a sub-owner), else the caller's own (`rest` for
/// the admin token).
pub(crate) fn owner(caller: Option<&Caller>, headers: &HeaderMap) -> Result<OwnerId, ApiError> {
    let requested = match headers.get(OWNER_HEADER) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| ApiError::bad_request("X-Toolshed-Owner is not text".to_string()))?,
        ),
    };
    let admin;
    let caller = match caller {
        Some(caller) => caller,
        None => {
            admin = Caller::admin(default_owner());
            &admin
        }
    };
    caller
        .owner_for(requested)
        .map_err(|refused| match refused {
            IdentityError::NotYours { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "denied", refused.to_string())
            }
            _ => ApiError::bad_request(refused.to_string()),
        })
}

/// Whether `caller` may see a thing `owner` owns (a job, a todo list, a schedule): the
/// admin token sees every owner's, an agent token its own owner's and its sub-owners'.
/// Every listing of owned things filters by this one rule.
pub(crate) fn sees(caller: Option<&Caller>, owner: &str) -> bool {
    caller.is_none_or(|c| c.owns(owner))
}

/// A JSON body, with a rejection in the API's error shape.
pub(crate) fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(v)| v).map_err(|rejection| {
        let status = rejection.status();
        let kind = if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            "unsupported_media_type"
        } else if status == StatusCode::PAYLOAD_TOO_LARGE {
            "payload_too_large"
        } else {
            "invalid_request"
        };
        let status = if status == StatusCode::UNPROCESSABLE_ENTITY {
            StatusCode::BAD_REQUEST
        } else {
            status
        };
        unread_or(ApiError::new(status, kind, rejection.body_text()))
    })
}

/// `408 request_timeout` for a body that did not arrive within `[server] body_timeout_secs`
/// (axum reports any failure to read the body as `400`), else `error` as it is.
pub(crate) fn unread_or(error: ApiError) -> ApiError {
    if error.message.contains(crate::listen::BODY_TIMED_OUT) {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            error.message,
        )
    } else {
        error
    }
}

/// Query parameters, with a rejection in the API's error shape.
pub(crate) fn query<T>(
    query: Result<Query<T>, axum::extract::rejection::QueryRejection>,
) -> Result<T, ApiError> {
    query
        .map(|Query(v)| v)
        .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
}

pub(crate) fn registry_error(error: RegistryError) -> ApiError {
    match error {
        RegistryError::UnknownPlugin { .. } => ApiError::not_found(error.to_string()),
        RegistryError::Conflict(_) => ApiError::conflict(error.to_string()),
        RegistryError::Invalid(_) => ApiError::bad_request(error.to_string()),
        other => ApiError::internal(other.to_string()),
    }
}

/// `GET /health` at the root: served without a token, so it says nothing but that the
/// server answers.
pub(crate) async fn liveness() -> Json<Liveness> {
    Json(Liveness { status: "ok" })
}

/// `GET /api/v1/health`: `ok`, or `503` `draining` once the server is shutting down (a
/// readiness probe: send no more requests here).
pub(crate) async fn health(State(state): State<AppState>) -> Response {
    let draining = state.draining.load(std::sync::atomic::Ordering::SeqCst);
    let body = Json(Health {
        status: if draining {
            ServerStatus::Draining
        } else {
            ServerStatus::Ok
        },
        version: env!("CARGO_PKG_VERSION"),
        uptime_ms: u64::try_from(state.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        calls_in_flight: state.host.dispatcher().calls_in_flight(),
    });
    if draining {
        (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
    } else {
        body.into_response()
    }
}

/// Any path under `/api/v1` that is not an endpoint.
pub(crate) async fn no_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no endpoint {}; GET /api/v1/openapi.json lists them",
        uri.path()
    ))
}

/// A known path with a method it does not have.
pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on {}; GET /api/v1/openapi.json lists the methods",
            uri.path()
        ),
    )
}

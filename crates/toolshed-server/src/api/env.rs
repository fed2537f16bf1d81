//! `GET`, `PUT` and `DELETE /env`: the layers of variables the caller's commands get, by
//! name (never a value) — the workspace's `.env` files, what granted plugins contribute,
//! and the caller's own session layer, which `PUT` replaces and `DELETE` clears.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_core::OwnerId;
use toolshed_host::command_env::{Contributed, EnvLayerError};
use toolshed_host::env_overlay::EnvSource;
use toolshed_host::identity::Caller;

use super::{AppState, owner, parsed_body};
use crate::error::ApiError;

/// The layers, later winning over earlier ones; a call's own `env` wins over all.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EnvLayers {
    /// The owner whose commands these are.
    pub owner: String,
    /// The layers' names, in the order they apply.
    pub order: Vec<String>,
    /// What the workspace's `.env` files set, each variable with the file (or `process`)
    /// its value comes from.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub files: Vec<EnvSource>,
    /// What granted plugins contribute, each variable with its plugin.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub plugins: Vec<Contributed>,
    /// The names in the caller's session layer.
    pub session: Vec<String>,
}

/// The body of `PUT /env`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionEnv {
    /// The whole session layer (`[]` clears it); a name given twice keeps its last value.
    pub vars: Vec<SessionVar>,
}

/// One variable of a session layer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionVar {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// The schema of `PUT /env`'s body: names and sizes as the server takes them.
pub(crate) fn session_env_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["vars"],
        "properties": {"vars": {
            "type": "array",
            "description": "The whole session layer ([] clears it); a name given twice keeps its last value",
            "maxItems": toolshed_host::command_env::MAX_VARS,
            "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["name", "value"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$"},
                    "value": {"type": "string", "maxLength": toolshed_host::command_env::MAX_VALUE_CHARS, "pattern": "^[^\\u0000]*$"}
                }
            }
        }}
    })
}

fn layers(state: &AppState, owner: &OwnerId) -> EnvLayers {
    let host = &state.host;
    EnvLayers {
        owner: owner.0.clone(),
        order: [".env files", "plugins", "session", "the call's env"]
            .map(String::from)
            .to_vec(),
        files: host.env_overlay().sources(),
        plugins: host.command_env().contributed(),
        session: host.command_env().session_names(owner),
    }
}

/// `GET /env`.
pub(crate) async fn get(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Result<Json<EnvLayers>, ApiError> {
    let owner = owner(caller.as_deref(), &headers)?;
    Ok(Json(layers(&state, &owner)))
}

/// `PUT /env`: replaces the caller's session layer.
pub(crate) async fn put(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    request: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<EnvLayers>, ApiError> {
    let (body, _room, _) = parsed_body::<SessionEnv>(&state.trees, &headers, request, None).await?;
    let owner = owner(caller.as_deref(), &headers)?;
    if body.vars.len() > toolshed_host::command_env::MAX_VARS {
        return Err(ApiError::bad_request(format!(
            "{} variables were given; a session layer holds at most {}",
            body.vars.len(),
            toolshed_host::command_env::MAX_VARS
        )));
    }
    state
        .host
        .command_env()
        .set_session(
            &owner,
            body.vars.into_iter().map(|v| (v.name, v.value)).collect(),
        )
        .map_err(|problem| match problem {
            EnvLayerError::Full => ApiError::conflict(problem.to_string()),
            problem => ApiError::bad_request(problem.to_string()),
        })?;
    Ok(Json(layers(&state, &owner)))
}

/// `DELETE /env`: clears the caller's session layer.
pub(crate) async fn clear(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Result<Json<EnvLayers>, ApiError> {
    let owner = owner(caller.as_deref(), &headers)?;
    let _ = state
        .host
        .command_env()
        .set_session(&owner, BTreeMap::new());
    Ok(Json(layers(&state, &owner)))
}

//! A plugin's settings: read them (secrets hidden) and change them.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{AppState, body};
use crate::error::ApiError;
use crate::reply::{ConfigField, PluginConfig};

/// `GET /plugins/{id}/config`: every field, with values; secrets only say whether set.
pub(crate) async fn get_config(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginConfig>, ApiError> {
    let manifest = state.host.plugins().manifest(&id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let stored = state
        .host
        .plugins()
        .config_values(&id)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let fields = manifest
        .config
        .iter()
        .map(|field| ConfigField::new(field, &stored))
        .collect();
    Ok(Json(PluginConfig {
        plugin_id: id,
        fields,
    }))
}

/// The body of `PUT /plugins/{id}/config`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigUpdate {
    /// The keys to set and their values, each checked against its field.
    pub values: Map<String, Value>,
}

/// `PUT /plugins/{id}/config`: sets values after checking each against its field.
pub(crate) async fn put_config(
    State(state): State<AppState>,
    Path(id): Path<String>,
    update: Result<Json<ConfigUpdate>, JsonRejection>,
) -> Result<Json<PluginConfig>, ApiError> {
    let update = body(update)?;
    let manifest = state.host.plugins().manifest(&id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let mut problems = Vec::new();
    for (key, value) in &update.values {
        let Some(field) = manifest.config.iter().find(|f| &f.key == key) else {
            let keys: Vec<&str> = manifest.config.iter().map(|f| f.key.as_str()).collect();
            problems.push(format!(
                "`{key}` is not a config field of `{id}` (fields: {})",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            ));
            continue;
        };
        if let Err(problem) = toolshed_host::config_fields::check(field, value) {
            problems.push(problem.to_string());
        }
    }
    if !problems.is_empty() {
        let mut error = ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_arguments",
            format!("config for `{id}` was not changed: {}", problems.join("; ")),
        );
        error.details = Value::from(problems);
        return Err(error);
    }
    for (key, value) in &update.values {
        let secret = manifest.config.iter().any(|f| &f.key == key && f.secret);
        state
            .host
            .plugins()
            .set_config_value(&id, key, value, secret)
            .map_err(|e| ApiError::internal(e.to_string()))?;
    }
    get_config(State(state), Path(id)).await
}

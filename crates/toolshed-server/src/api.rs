//! The `/api/v1` handlers.

use std::collections::BTreeMap;
use std::sync::Arc;
use tracing::Instrument as _;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolshed_core::{OwnerId, ToolOutput};
use toolshed_host::identity::{Caller, check_owner};
use toolshed_host::registry::RegistryError;
use toolshed_host::{CallRequest, Host, Subject};

use crate::error::{ApiError, status_of};
use crate::events::EventLog;
use toolshed_host::jobs::{JobState, Jobs, default_owner, output_json, record_outcome};

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
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
pub const TREE_BUDGET_KIB: u32 = 64 * 1024;

pub use toolshed_core::oversized::parsed_estimate;

/// Room for the tree a request body parses into, held until the call has answered: large
/// bodies of many values (past [`LARGE_TREE_KIB`]) are parsed and run a few at a time, so
/// their trees never add up past [`TREE_BUDGET_KIB`]; smaller ones never wait. A large one
/// that finds no room within [`TREE_WAIT`] is answered `503` with `Retry-After`.
pub struct TreeRoom {
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
async fn parsed_body<T: serde::de::DeserializeOwned>(
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
pub use toolshed_mcp::OWNER_HEADER;

/// The owner a request runs as: what `X-Toolshed-Owner` names, within what the caller's
/// token allows (an agent token: itself or a sub-owner), else the caller's own (`rest` for
/// the admin token).
pub fn owner(caller: Option<&Caller>, headers: &HeaderMap) -> Result<OwnerId, ApiError> {
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
    caller.owner_for(requested).map_err(|message| {
        if caller.is_agent() && requested.is_some_and(|r| check_owner(r).is_ok()) {
            ApiError::new(StatusCode::FORBIDDEN, "denied", message)
        } else {
            ApiError::bad_request(message)
        }
    })
}

/// A JSON body, with a rejection in the API's error shape.
pub fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
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
pub fn unread_or(error: ApiError) -> ApiError {
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
pub fn query<T>(
    query: Result<Query<T>, axum::extract::rejection::QueryRejection>,
) -> Result<T, ApiError> {
    query
        .map(|Query(v)| v)
        .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
}

fn registry_error(error: RegistryError) -> ApiError {
    match error {
        RegistryError::UnknownPlugin { .. } => ApiError::not_found(error.to_string()),
        RegistryError::Conflict(_) => ApiError::conflict(error.to_string()),
        RegistryError::Invalid(_) => ApiError::bad_request(error.to_string()),
        other => ApiError::internal(other.to_string()),
    }
}

/// `GET /health` at the root: served without a token, so it says nothing but that the
/// server answers.
pub async fn liveness() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /api/v1/health`: `ok`, or `503` `draining` once the server is shutting down (a
/// readiness probe: send no more requests here).
pub async fn health(State(state): State<AppState>) -> Response {
    let draining = state.draining.load(std::sync::atomic::Ordering::SeqCst);
    let body = Json(json!({
        "status": if draining { "draining" } else { "ok" },
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_ms": u64::try_from(state.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "calls_in_flight": state.host.dispatcher().calls_in_flight(),
    }));
    if draining {
        (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
    } else {
        body.into_response()
    }
}

/// `GET /plugins`.
/// `?locale=`: the language names and descriptions are shown in.
#[derive(Debug, Default, serde::Deserialize)]
pub struct LocaleQuery {
    locale: Option<String>,
}

impl LocaleQuery {
    /// The locale asked for, checked (`zh`, `zh-CN`, `pt_BR`).
    fn locale(&self) -> Result<Option<&str>, ApiError> {
        match self.locale.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(l)
                if l.len() <= 35
                    && l.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
            {
                Ok(Some(l))
            }
            Some(l) => Err(ApiError::bad_request(format!(
                "`locale` {l:?} is not a language tag; use one such as `zh` or `zh-CN`"
            ))),
        }
    }
}

/// `plugin` (a plugin's JSON) with its name and description in `locale` where its
/// manifest translates them: the exact tag first, then its language (`zh-CN`, then `zh`).
fn localize(plugin: &mut Value, manifest: &toolshed_core::PluginManifest, locale: &str) {
    let Some(translation) = manifest.translation(locale) else {
        return;
    };
    if let Value::Object(map) = plugin {
        if let Some(name) = &translation.name {
            map.insert("name".into(), Value::String(name.clone()));
        }
        if let Some(description) = &translation.description {
            map.insert("description".into(), Value::String(description.clone()));
        }
    }
}

/// `?locale=` and `?tag=` of `GET /plugins`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct PluginsQuery {
    /// As [`LocaleQuery`].
    #[serde(default)]
    locale: Option<String>,
    /// Only plugins with this tag, in any language.
    #[serde(default)]
    tag: Option<String>,
}

/// `GET /plugins`: every plugin, with its tags, author, dependencies and dialect; `?tag=`
/// keeps those with that tag.
pub async fn plugins(
    State(state): State<AppState>,
    params: Result<Query<PluginsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let params = query(params)?;
    let wanted = LocaleQuery {
        locale: params.locale.clone(),
    };
    let locale = wanted.locale()?;
    let tag = params
        .tag
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let registry = state.host.registry();
    let plugins: Vec<Value> = registry
        .plugins()
        .into_iter()
        .filter_map(|info| {
            let manifest = registry.manifest(&info.id);
            if let Some(tag) = tag
                && !manifest.as_ref().is_some_and(|m| m.has_tag(tag))
            {
                return None;
            }
            let mut value = serde_json::to_value(&info).unwrap_or(Value::Null);
            if let Some(manifest) = &manifest {
                if let Some(locale) = locale {
                    localize(&mut value, manifest, locale);
                }
                if let Value::Object(map) = &mut value {
                    map.extend(manifest.listing_fields(locale, info.dir.as_deref()));
                }
            }
            Some(value)
        })
        .collect();
    Ok(Json(json!({ "plugins": plugins })))
}

fn plugin_json(state: &AppState, id: &str) -> Result<Value, ApiError> {
    let info = state.host.registry().plugin(id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let mut value = serde_json::to_value(&info).map_err(|e| ApiError::internal(e.to_string()))?;
    if let (Some(manifest), Value::Object(map)) = (state.host.registry().manifest(id), &mut value) {
        map.insert(
            "capabilities".into(),
            serde_json::to_value(&manifest.capabilities).unwrap_or(Value::Null),
        );
        map.insert(
            "env".into(),
            serde_json::to_value(&manifest.env).unwrap_or(Value::Null),
        );
        map.extend(manifest.listing_fields(None, info.dir.as_deref()));
    }
    if let Value::Object(map) = &mut value {
        let provenance = state.host.store().provenance(id).ok().flatten();
        map.insert(
            "provenance".into(),
            serde_json::to_value(provenance).unwrap_or(Value::Null),
        );
    }
    Ok(value)
}

/// `GET /plugins/{id}/health`: how the plugin is now (a JavaScript plugin's `health()`
/// export answers).
pub async fn plugin_health(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (info, health) = state.host.registry().health_now(&id).await.ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let (word, message) = toolshed_host::health_words(&health);
    Ok(Json(serde_json::json!({
        "id": info.id, "state": info.state.as_str(), "health": word, "message": message,
    })))
}

/// The largest icon served.
const MAX_ICON_BYTES: u64 = 256 * 1024;

/// `GET /plugins/{id}/icon`: the image the manifest's `icon` names inside the plugin
/// directory (svg, png, jpg, webp; at most 256 KiB; no link leading out of the directory).
pub async fn plugin_icon(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (Some(info), Some(manifest)) = (
        state.host.registry().plugin(&id),
        state.host.registry().manifest(&id),
    ) else {
        return Err(ApiError::not_found(format!(
            "no plugin `{id}`; GET /api/v1/plugins lists them"
        )));
    };
    let no_icon = || ApiError::not_found(format!("plugin `{id}` has no icon file"));
    let (Some(dir), Some(icon)) = (info.dir, manifest.icon) else {
        return Err(no_icon());
    };
    let kind = match icon.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()) {
        Some(e) if e == "svg" => "image/svg+xml",
        Some(e) if e == "png" => "image/png",
        Some(e) if e == "jpg" || e == "jpeg" => "image/jpeg",
        Some(e) if e == "webp" => "image/webp",
        _ => return Err(no_icon()),
    };
    let bytes = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        let relative = std::path::Path::new(&icon);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(format!(
                "the icon `{icon}` is not a path inside the plugin directory"
            ));
        }
        // Opened beneath the plugin directory by the kernel, and read from that same open
        // file: no link leads out, and nothing can be swapped in between.
        toolshed_ops::read_beneath(&dir, relative, MAX_ICON_BYTES).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => {
                format!("the icon is larger than the {MAX_ICON_BYTES} bytes icons are served up to")
            }
            _ => {
                format!("the icon `{icon}` is not a regular file inside the plugin directory ({e})")
            }
        })
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(|why| ApiError::not_found(format!("plugin `{id}`: {why}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            // An SVG is shown as an image, never run as a document.
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `GET /plugins/{id}/verify`: its files against what its install recorded.
pub async fn verify(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if state.host.registry().plugin(&id).is_none() {
        return Err(ApiError::not_found(format!(
            "no plugin `{id}`; GET /api/v1/plugins lists them"
        )));
    }
    let (provenance, drift) = state
        .host
        .verify_plugin(&id)
        .await
        .map_err(ApiError::conflict)?;
    Ok(Json(serde_json::json!({
        "id": id, "clean": drift.is_clean(), "drift": drift, "provenance": provenance,
    })))
}

/// `GET /plugins/{id}`.
pub async fn plugin(
    State(state): State<AppState>,
    Path(id): Path<String>,
    locale: Result<Query<LocaleQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let locale = query(locale)?;
    let mut value = plugin_json(&state, &id)?;
    if let (Some(locale), Some(manifest)) = (locale.locale()?, state.host.registry().manifest(&id))
    {
        localize(&mut value, &manifest, locale);
    }
    Ok(Json(value))
}

/// `POST /plugins/{id}/enable` and `/disable`.
pub async fn set_enabled(
    state: AppState,
    id: String,
    enabled: bool,
) -> Result<Json<Value>, ApiError> {
    state
        .host
        .registry()
        .set_enabled(&id, enabled)
        .await
        .map_err(registry_error)?;
    plugin_json(&state, &id).map(Json)
}

/// `POST /plugins/{id}/enable`.
pub async fn enable(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    set_enabled(state, id, true).await
}

/// `POST /plugins/{id}/disable`.
pub async fn disable(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    set_enabled(state, id, false).await
}

/// `POST /plugins/{id}/reload`.
pub async fn reload(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    state
        .host
        .registry()
        .reload(&id)
        .await
        .map_err(registry_error)?;
    plugin_json(&state, &id).map(Json)
}

/// `DELETE /plugins/{id}`.
pub async fn uninstall(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let info = state
        .host
        .registry()
        .uninstall(&id)
        .await
        .map_err(registry_error)?;
    Ok(Json(json!({ "uninstalled": info })))
}

/// `GET /plugins/{id}/grants`.
pub async fn get_grants(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let info = state
        .host
        .registry()
        .grants(&id)
        .await
        .map_err(registry_error)?;
    Ok(Json(json!({ "plugin_id": id, "grants": info })))
}

/// The body of `POST /plugins/{id}/grants`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsChange {
    /// Grants to add.
    #[serde(default)]
    pub add: Vec<String>,
    /// Grants to take back.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// `POST /plugins/{id}/grants`: adds and takes back grants; the plugin reloads with them.
pub async fn change_grants(
    State(state): State<AppState>,
    Path(id): Path<String>,
    change: Result<Json<GrantsChange>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let change = body(change)?;
    if change.add.len() + change.remove.len() > toolshed_host::MAX_GRANTS {
        return Err(ApiError::bad_request(format!(
            "at most {} grants per request",
            toolshed_host::MAX_GRANTS
        )));
    }
    let info = state
        .host
        .registry()
        .change_grants(&id, &change.add, &change.remove)
        .await
        .map_err(registry_error)?;
    Ok(Json(json!({ "plugin_id": id, "grants": info })))
}

/// The body of `POST /plugins`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallBody {
    /// A directory or a `.tar.gz`/`.tgz`/`.zip` file on the server's machine, or an
    /// `https` URL of an archive (with `sha256`).
    pub source: String,
    /// Refuse unless the plugin has this id.
    #[serde(default)]
    pub id: Option<String>,
    /// Refuse an archive unless its SHA-256 is this.
    #[serde(default)]
    pub sha256: Option<String>,
    /// Replace an installed plugin with the same id.
    #[serde(default)]
    pub force: bool,
}

/// `POST /plugins`: installs a plugin into the data dir and loads it.
pub async fn install(
    State(state): State<AppState>,
    request: Result<Json<InstallBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    use toolshed_host::install::InstallError;
    let request = body(request)?;
    let install_request =
        state
            .host
            .install_request(request.source, request.id, request.sha256, request.force);
    let outcome = state
        .host
        .install_plugin(install_request, Arc::new(|_: String| {}))
        .await;
    let installed = outcome.map_err(|e| match e {
        InstallError::Exists { .. } | InstallError::Reserved(_) => {
            ApiError::conflict(e.to_string())
        }
        InstallError::Io { .. } => ApiError::internal(e.to_string()),
        other => ApiError::bad_request(other.to_string()),
    })?;
    let plugin = state.host.registry().adopt(&installed.dir).await;
    let status = if installed.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        Json(json!({
            "id": installed.id,
            "version": installed.version,
            "replaced": installed.replaced,
            "plugin": plugin,
        })),
    ))
}

/// `GET /plugins/{id}/tools`.
pub async fn plugin_tools(
    State(state): State<AppState>,
    Path(id): Path<String>,
    locale: Result<Query<LocaleQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let locale = query(locale)?;
    let locale = locale.locale()?;
    let manifest = state.host.registry().manifest(&id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let registered: BTreeMap<String, toolshed_host::registry::ToolEntry> = state
        .host
        .registry()
        .tools()
        .into_iter()
        .filter(|t| t.plugin_id == id)
        .map(|t| (t.spec().name.clone(), t))
        .collect();
    // A sandboxed plugin's tools are known once its code ran: list those it registered
    // beside those its manifest declares.
    let mut specs: Vec<toolshed_core::ToolSpec> = manifest.tools.clone();
    for entry in registered.values() {
        if !specs.iter().any(|s| s.name == entry.spec().name) {
            specs.push(entry.spec().clone());
        }
    }
    let tools: Vec<Value> = specs
        .iter()
        .map(|spec| {
            let mut v = match locale {
                Some(locale) => tool_json(&spec.in_language(locale), &id),
                None => tool_json(spec, &id),
            };
            if let Value::Object(map) = &mut v {
                map.insert(
                    "callable".into(),
                    json!(registered.contains_key(&spec.name)),
                );
            }
            v
        })
        .collect();
    Ok(Json(json!({ "plugin_id": id, "tools": tools })))
}

fn tool_json(spec: &toolshed_core::ToolSpec, plugin_id: &str) -> Value {
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("plugin_id".into(), json!(plugin_id));
    }
    value
}

/// `GET /plugins/{id}/config`: every field, with values; secrets only say whether set.
pub async fn get_config(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let manifest = state.host.registry().manifest(&id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let stored = state
        .host
        .store()
        .config_values(&id)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let fields: Vec<Value> = manifest
        .config
        .iter()
        .map(|field| {
            let set = stored.contains_key(&field.key);
            let mut item = json!({
                "key": field.key,
                "type": field.field_type,
                "label": field.label,
                "description": field.description,
                "secret": field.secret,
                "required": field.required,
                "options": field.options,
                "set": set,
            });
            if !field.secret
                && let Value::Object(map) = &mut item
            {
                map.insert(
                    "default".into(),
                    field.default.clone().unwrap_or(Value::Null),
                );
                map.insert(
                    "value".into(),
                    stored
                        .get(&field.key)
                        .cloned()
                        .or_else(|| field.default.clone())
                        .unwrap_or(Value::Null),
                );
            }
            item
        })
        .collect();
    Ok(Json(json!({ "plugin_id": id, "fields": fields })))
}

/// The body of `PUT /plugins/{id}/config`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigUpdate {
    /// Keys to set.
    pub values: Map<String, Value>,
}

/// `PUT /plugins/{id}/config`: sets values after checking each against its field.
pub async fn put_config(
    State(state): State<AppState>,
    Path(id): Path<String>,
    update: Result<Json<ConfigUpdate>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let update = body(update)?;
    let manifest = state.host.registry().manifest(&id).ok_or_else(|| {
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
            problems.push(problem);
        }
    }
    if !problems.is_empty() {
        let mut error = ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_arguments",
            format!("config for `{id}` was not changed: {}", problems.join("; ")),
        );
        error.details = json!(problems);
        return Err(error);
    }
    for (key, value) in &update.values {
        let secret = manifest.config.iter().any(|f| &f.key == key && f.secret);
        state
            .host
            .store()
            .set_config_value(&id, key, value, secret)
            .map_err(|e| ApiError::internal(e.to_string()))?;
    }
    get_config(State(state), Path(id)).await
}

/// Filters of `GET /tools`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFilter {
    /// Only this group.
    pub group: Option<String>,
    /// Only this plugin's tools.
    pub plugin: Option<String>,
    /// Only tools whose name, title or description contains this (case-insensitive).
    pub q: Option<String>,
    /// Titles and descriptions in this language, where the tool has them.
    pub locale: Option<String>,
}

/// `GET /tools`.
pub async fn tools(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<ToolFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let filter = query(filter)?;
    let locale = LocaleQuery {
        locale: filter.locale.clone(),
    };
    let locale = locale.locale()?;
    let caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    let needle = filter.q.as_deref().map(str::to_lowercase);
    let tools: Vec<Value> = state
        .host
        .registry()
        .tools()
        .into_iter()
        .filter(|t| state.host.dispatcher().visible(t, None))
        .filter(|t| {
            caller_tools
                .as_deref()
                .is_none_or(|r| r.refuse(&Subject::new(t.spec(), &t.plugin_id)).is_none())
        })
        .filter(|t| filter.group.as_ref().is_none_or(|g| &t.spec().group == g))
        .filter(|t| filter.plugin.as_ref().is_none_or(|p| &t.plugin_id == p))
        .filter(|t| {
            needle.as_ref().is_none_or(|n| {
                let spec = t.spec();
                spec.name.to_lowercase().contains(n)
                    || spec.description.to_lowercase().contains(n)
                    || spec
                        .title
                        .as_deref()
                        .is_some_and(|title| title.to_lowercase().contains(n))
            })
        })
        .map(|t| match locale {
            Some(locale) => tool_json(&t.spec().in_language(locale), &t.plugin_id),
            None => tool_json(t.spec(), &t.plugin_id),
        })
        .collect();
    Ok(Json(json!({ "tools": tools })))
}

/// The query of `GET /tools/search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSearch {
    /// What the caller wants to do.
    pub q: String,
    /// The most tools returned (default 8).
    pub limit: Option<usize>,
    /// Search the tools a caller using this profile sees.
    pub profile: Option<String>,
}

/// `GET /tools/search`: the tools the caller may use that best match `q`, ranked.
pub async fn search_tools(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    search: Result<Query<ToolSearch>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let search = query(search)?;
    let limit = search.limit.unwrap_or(8);
    let max = toolshed_host::tool_search::MAX_SEARCH_RESULTS;
    if !(1..=max).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit {limit} is out of range: ask for 1 to {max} tools"
        )));
    }
    if search.q.trim().is_empty() || search.q.len() > 500 {
        return Err(ApiError::bad_request(
            "q is what you want to do, 1 to 500 bytes, e.g. q=replace+text+in+a+file",
        ));
    }
    let dispatcher = state.host.dispatcher();
    if let Some(profile) = &search.profile
        && dispatcher.review().profile(profile).is_none()
    {
        return Err(ApiError::bad_request(format!(
            "no profile `{profile}`: the profiles are {}",
            dispatcher.review().profile_names().join(", ")
        )));
    }
    let caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    let visible: Vec<toolshed_host::registry::ToolEntry> = state
        .host
        .registry()
        .tools()
        .into_iter()
        .filter(|t| dispatcher.visible(t, search.profile.as_deref()))
        .filter(|t| {
            caller_tools
                .as_deref()
                .is_none_or(|r| r.refuse(&Subject::new(t.spec(), &t.plugin_id)).is_none())
        })
        .collect();
    let results: Vec<Value> = toolshed_host::tool_search::search(&visible, &search.q, limit)
        .into_iter()
        .map(|(t, score)| toolshed_host::tool_search::found_json(&t, score))
        .collect();
    Ok(Json(json!({ "query": search.q, "results": results })))
}

/// `GET /tools/{name}`.
pub async fn tool(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    state
        .host
        .dispatcher()
        .visible_tool(&name, None, caller_tools.as_deref())
        .map(|t| Json(tool_json(t.spec(), &t.plugin_id)))
        .ok_or_else(|| unknown_tool(&state, &name))
}

fn unknown_tool(state: &AppState, name: &str) -> ApiError {
    let names = state.host.registry().tool_names();
    let close = toolshed_host::closest(name, names.iter().map(String::as_str), 3);
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(", "))
    };
    ApiError::not_found(format!(
        "no tool `{name}`{hint}; GET /api/v1/tools lists them"
    ))
}

/// The body of `POST /tools/{name}/execute`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Execute {
    /// The tool's arguments (default `{}`).
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
    /// Start a job and answer `202` at once.
    #[serde(default, rename = "async")]
    pub run_async: bool,
    /// The call's deadline.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// The REST door's span around a call: the root of the call's trace, with the HTTP
/// conventions' name and attributes (docs/telemetry.md).
pub(crate) fn door_span(method: &'static str, route: &'static str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        target: toolshed_core::TRACE,
        "rest",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        error.type = tracing::field::Empty,
    )
}

/// Makes the caller's W3C trace context (`traceparent`, `tracestate` headers) the parent
/// of the door's span.
fn adopt_trace(span: &tracing::Span, headers: &HeaderMap) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(parent) = header("traceparent").and_then(|given| {
        toolshed_core::trace_context::TraceParent::parse(given, header("tracestate"))
    }) {
        toolshed_core::trace_context::adopt(span, &parent);
    }
}

/// `POST /tools/{name}/execute`.
pub async fn execute(
    State(state): State<AppState>,
    Path(name): Path<String>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    request: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    // Held until the call has answered: the arguments' tree lives that long.
    let limits = state.host.registry().argument_limits(&name);
    let (request, room, oversized) =
        parsed_body::<Execute>(&state.trees, &headers, request, limits.as_ref()).await?;
    let owner = owner(caller.as_deref(), &headers)?;
    if let Some(ms) = request.timeout_ms {
        let max = state.host.config().config.limits.max_timeout_ms;
        if ms == 0 || ms > max {
            return Err(ApiError::bad_request(format!(
                "timeout_ms = {ms} is out of range: give 1 to {max} milliseconds"
            )));
        }
    }
    let arguments = Value::Object(request.arguments.unwrap_or_default());
    let mut call = CallRequest::new(name.clone(), arguments, owner, "rest");
    call.caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    call.timeout = request.timeout_ms.map(std::time::Duration::from_millis);
    call.oversized = oversized;
    if request.run_async {
        // An unknown or hidden tool, bad arguments or a policy refusal are the caller's
        // mistake now, not a failed job later: the pipeline's own checks, run ahead.
        state
            .host
            .dispatcher()
            .preflight(&call)
            .map_err(|e| ApiError::from(&e))?;
        // The job holds the arguments' room until it ends.
        // A job's call is the root of its own trace: this request is answered at once.
        let span = door_span("POST", "/api/v1/tools/{name}/execute (job)", &name);
        let job = state
            .jobs
            .start(state.host.clone(), call, Box::new(room), span)?;
        let location = format!("/api/v1/jobs/{}", job.id);
        let mut response = (
            StatusCode::ACCEPTED,
            Json(json!({ "job": job, "location": location })),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, value);
        }
        return Ok(response);
    }
    // A client that goes away cancels the call (and kills what it started), and so does
    // the end of a shutdown's grace period.
    let cancel = state.calls_stop.child_token();
    let _cancel_on_drop = cancel.clone().drop_guard();
    call.cancel = cancel;
    let span = door_span("POST", "/api/v1/tools/{name}/execute", &name);
    adopt_trace(&span, &headers);
    let result = state.host.call(call).instrument(span.clone()).await;
    record_outcome(&span, &result);
    match &result.result {
        Ok(output) => Ok(Json(output_json(&result, output)).into_response()),
        Err(error) if status_of(error.kind()) == StatusCode::OK => {
            let output = ToolOutput::text(error.to_string()).into_error();
            Ok(Json(output_json(&result, &output)).into_response())
        }
        Err(error) => Err(ApiError::from(error)),
    }
}

/// Filters of `GET /jobs`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFilter {
    /// Only this owner's jobs.
    pub owner: Option<String>,
    /// Only jobs in this state.
    pub state: Option<JobState>,
}

/// `GET /jobs`.
pub async fn jobs(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<JobFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let filter = query(filter)?;
    let jobs: Vec<_> = state
        .jobs
        .list(filter.owner.as_deref(), filter.state)
        .into_iter()
        .filter(|job| caller.as_deref().is_none_or(|c| c.owns(&job.owner)))
        .collect();
    Ok(Json(json!({ "jobs": jobs })))
}

/// The job `id` when the caller may see it; another owner's job is as absent as a missing
/// one.
fn job_of(
    state: &AppState,
    caller: Option<&Caller>,
    id: &str,
) -> Result<toolshed_host::jobs::JobView, ApiError> {
    state
        .jobs
        .get(id)
        .filter(|job| caller.is_none_or(|c| c.owns(&job.owner)))
        .ok_or_else(|| ApiError::not_found(format!("no job `{id}`; GET /api/v1/jobs lists them (finished jobs are removed after the retention time)")))
}

/// `GET /jobs/{id}`.
pub async fn job(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    job_of(&state, caller.as_deref(), &id).map(|job| Json(json!(job)))
}

/// `POST /jobs/{id}/cancel`.
pub async fn cancel_job(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    job_of(&state, caller.as_deref(), &id)?;
    state
        .jobs
        .cancel(&id)
        .await
        .map(|job| Json(json!(job)))
        .map_err(ApiError::from)
}

/// Any path under `/api/v1` that is not an endpoint.
pub async fn no_route(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no endpoint {}; GET /api/v1/openapi.json lists them",
        uri.path()
    ))
}

/// A known path with a method it does not have.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{method} is not allowed on {}; GET /api/v1/openapi.json lists the methods",
            uri.path()
        ),
    )
}

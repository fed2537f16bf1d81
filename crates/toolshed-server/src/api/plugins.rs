//! The plugin endpoints: the list and one plugin, its health, icon and tools, checking its
//! files against its install, turning it on and off, reloading, uninstalling and installing, and its grants.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{AppState, body, query, registry_error};
use crate::error::ApiError;
use crate::reply::{
    Installed, Listing, ManifestFields, Plugin, PluginDetail, PluginGrants, PluginHealth,
    PluginInfo, PluginList, PluginTools, Tool, Uninstalled, Verified,
};

/// `GET /plugins`.
/// `?locale=`: the language names and descriptions are shown in.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
pub(crate) struct LocaleQuery {
    /// Names and descriptions in this language where the plugin translates them (`zh`,
    /// `zh-CN`).
    #[schemars(length(max = 35), regex(pattern = r"^[A-Za-z0-9_-]*$"))]
    pub(super) locale: Option<String>,
}

impl LocaleQuery {
    /// The locale asked for, checked (`zh`, `zh-CN`, `pt_BR`).
    pub(super) fn locale(&self) -> Result<Option<&str>, ApiError> {
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

/// `?locale=` and `?tag=` of `GET /plugins`.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
pub(crate) struct PluginsQuery {
    /// Names and descriptions in this language where the plugin translates them (`zh`,
    /// `zh-CN`).
    #[serde(default)]
    #[schemars(length(max = 35), regex(pattern = r"^[A-Za-z0-9_-]*$"))]
    locale: Option<String>,
    /// Only plugins with this tag, in any language the manifest gives tags in.
    #[serde(default)]
    tag: Option<String>,
}

/// `GET /plugins`: every plugin, with its tags, author, dependencies and dialect; `?tag=`
/// keeps those with that tag.
pub(crate) async fn plugins(
    State(state): State<AppState>,
    params: Result<Query<PluginsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<PluginList>, ApiError> {
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
    let service = state.host.plugins();
    // A running plugin none of whose tools can work yet (config, secrets, grants): why,
    // from its first tool. One tool switched off alone (browser_evaluate) is not that.
    let mut needs_setup: std::collections::HashMap<String, Option<String>> = Default::default();
    let catalog = state.host.catalog();
    for entry in catalog.tools() {
        let why = catalog.unavailable(&entry).map(|(why, _)| why);
        needs_setup
            .entry(entry.plugin_id.clone())
            .and_modify(|all| {
                if why.is_none() {
                    *all = None;
                }
            })
            .or_insert(why);
    }
    let mut plugins = Vec::new();
    for info in service.list() {
        let manifest = service.manifest(&info.id);
        if let Some(tag) = tag
            && !manifest.as_ref().is_some_and(|m| m.has_tag(tag))
        {
            continue;
        }
        let listing = match &manifest {
            Some(manifest) => Some(Listing::of(manifest, locale, info.dir.as_deref())?),
            None => None,
        };
        let mut info = PluginInfo::from(info);
        if let (Some(manifest), Some(locale)) = (&manifest, locale) {
            info.localize(manifest, locale);
        }
        let needs_setup = needs_setup.remove(&info.id).flatten();
        plugins.push(Plugin {
            info,
            listing,
            needs_setup,
        });
    }
    Ok(Json(PluginList { plugins }))
}

/// Plugin `id` as one plugin is shown: with what its manifest asks for, and where it came
/// from.
fn plugin_detail(state: &AppState, id: &str) -> Result<PluginDetail, ApiError> {
    let info = state.host.plugins().info(id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let manifest = match state.host.plugins().manifest(id) {
        Some(manifest) => Some(ManifestFields::of(&manifest, info.dir.as_deref())?),
        None => None,
    };
    let provenance = state.host.plugins().provenance(id).ok().flatten();
    Ok(PluginDetail {
        info: info.into(),
        manifest,
        provenance: provenance.map(Into::into),
    })
}

/// `GET /plugins/{id}/health`: how the plugin is now (a JavaScript plugin's `health()`
/// export answers).
pub(crate) async fn plugin_health(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginHealth>, ApiError> {
    let (info, health) = state.host.plugins().health_now(&id).await.ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    Ok(Json(PluginHealth::new(info, health)))
}

/// The largest icon served.
const MAX_ICON_BYTES: u64 = 256 * 1024;

/// `GET /plugins/{id}/icon`: the image the manifest's `icon` names inside the plugin
/// directory (svg, png, jpg, webp; at most 256 KiB; no link leading out of the directory).
pub(crate) async fn plugin_icon(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (Some(info), Some(manifest)) = (
        state.host.plugins().info(&id),
        state.host.plugins().manifest(&id),
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
pub(crate) async fn verify(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Verified>, ApiError> {
    if state.host.plugins().info(&id).is_none() {
        return Err(ApiError::not_found(format!(
            "no plugin `{id}`; GET /api/v1/plugins lists them"
        )));
    }
    let (provenance, drift) = state
        .host
        .verify_plugin(&id)
        .await
        .map_err(ApiError::conflict)?;
    Ok(Json(Verified::new(id, provenance, drift)))
}

/// `GET /plugins/{id}`.
pub(crate) async fn plugin(
    State(state): State<AppState>,
    Path(id): Path<String>,
    locale: Result<Query<LocaleQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<PluginDetail>, ApiError> {
    let locale = query(locale)?;
    let mut detail = plugin_detail(&state, &id)?;
    if let (Some(locale), Some(manifest)) = (locale.locale()?, state.host.plugins().manifest(&id)) {
        detail.info.localize(&manifest, locale);
    }
    Ok(Json(detail))
}

/// `POST /plugins/{id}/enable` and `/disable`.
pub(crate) async fn set_enabled(
    state: AppState,
    id: String,
    enabled: bool,
) -> Result<Json<PluginDetail>, ApiError> {
    state
        .host
        .plugins()
        .set_enabled(&id, enabled)
        .await
        .map_err(registry_error)?;
    plugin_detail(&state, &id).map(Json)
}

/// `POST /plugins/{id}/enable`.
pub(crate) async fn enable(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginDetail>, ApiError> {
    set_enabled(state, id, true).await
}

/// `POST /plugins/{id}/disable`.
pub(crate) async fn disable(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginDetail>, ApiError> {
    set_enabled(state, id, false).await
}

/// `POST /plugins/{id}/pause`.
pub(crate) async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginDetail>, ApiError> {
    set_paused(state, id, true).await
}

/// `POST /plugins/{id}/resume`.
pub(crate) async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginDetail>, ApiError> {
    set_paused(state, id, false).await
}

async fn set_paused(
    state: AppState,
    id: String,
    paused: bool,
) -> Result<Json<PluginDetail>, ApiError> {
    state
        .host
        .plugins()
        .set_paused(&id, paused)
        .await
        .map_err(registry_error)?;
    plugin_detail(&state, &id).map(Json)
}

/// `POST /plugins/{id}/reload`.
pub(crate) async fn reload(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginDetail>, ApiError> {
    state
        .host
        .plugins()
        .reload(&id)
        .await
        .map_err(registry_error)?;
    plugin_detail(&state, &id).map(Json)
}

/// `DELETE /plugins/{id}`.
pub(crate) async fn uninstall(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Uninstalled>, ApiError> {
    let info = state
        .host
        .plugins()
        .uninstall(&id)
        .await
        .map_err(registry_error)?;
    Ok(Json(Uninstalled {
        uninstalled: info.into(),
    }))
}

/// `GET /plugins/{id}/grants`.
pub(crate) async fn get_grants(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<PluginGrants>, ApiError> {
    let info = state
        .host
        .plugins()
        .grants(&id)
        .await
        .map_err(registry_error)?;
    Ok(Json(PluginGrants::new(id, info)))
}

/// The body of `POST /plugins/{id}/grants`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrantsChange {
    /// Grants to add.
    #[serde(default)]
    #[schemars(
        length(max = 64),
        inner(regex(pattern = r"^((http|fs-read|fs-write|tool):.+|memory)$"))
    )]
    pub add: Vec<String>,
    /// Grants to take back.
    #[serde(default)]
    #[schemars(
        length(max = 64),
        inner(regex(pattern = r"^((http|fs-read|fs-write|tool):.+|memory)$"))
    )]
    pub remove: Vec<String>,
}

/// `POST /plugins/{id}/grants`: adds and takes back grants; the plugin reloads with them.
pub(crate) async fn change_grants(
    State(state): State<AppState>,
    Path(id): Path<String>,
    change: Result<Json<GrantsChange>, JsonRejection>,
) -> Result<Json<PluginGrants>, ApiError> {
    let change = body(change)?;
    if change.add.len() + change.remove.len() > toolshed_host::MAX_GRANTS {
        return Err(ApiError::bad_request(format!(
            "at most {} grants per request",
            toolshed_host::MAX_GRANTS
        )));
    }
    let info = state
        .host
        .plugins()
        .change_grants(&id, &change.add, &change.remove)
        .await
        .map_err(registry_error)?;
    Ok(Json(PluginGrants::new(id, info)))
}

/// The body of `POST /plugins`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstallBody {
    /// A directory or a `.tar.gz`/`.tgz`/`.zip` file on the server's machine, or an
    /// `https` URL of an archive (with `sha256`).
    #[schemars(length(min = 1))]
    pub source: String,
    /// Refuse unless the plugin has this id.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9._-]{0,63}$"))]
    pub id: Option<String>,
    /// Refuse an archive unless its SHA-256 is this.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{64}$"))]
    pub sha256: Option<String>,
    /// Replace an installed plugin with the same id.
    #[serde(default)]
    pub force: bool,
}

/// `POST /plugins`: installs a plugin into the data dir and loads it.
pub(crate) async fn install(
    State(state): State<AppState>,
    request: Result<Json<InstallBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Installed>), ApiError> {
    use toolshed_host::install::InstallError;
    let request = body(request)?;
    let install_request =
        state
            .host
            .install_request(request.source, request.id, request.sha256, request.force);
    // Each step (downloading, bytes so far, checking, unpacking) goes out as an event, for
    // the dashboard's progress and any other watcher.
    let progress = {
        let (events, step) = (
            state.events.clone(),
            Arc::new(std::sync::atomic::AtomicU64::new(0)),
        );
        Arc::new(move |message: String| {
            let step = step.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            events.publish(
                "plugin.install_progress",
                None,
                None,
                serde_json::json!({"step": step, "message": message}),
            );
        })
    };
    let outcome = state.host.install_plugin(install_request, progress).await;
    let installed = outcome.map_err(|e| match e {
        InstallError::Exists { .. } | InstallError::Reserved(_) => {
            ApiError::conflict(e.to_string())
        }
        InstallError::Io { .. } => ApiError::internal(e.to_string()),
        other => ApiError::bad_request(other.to_string()),
    })?;
    let plugin = state.host.plugins().adopt(&installed.dir).await;
    let status = if installed.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        Json(Installed {
            id: installed.id,
            version: installed.version,
            replaced: installed.replaced,
            plugin: plugin.map(Into::into),
        }),
    ))
}

/// `GET /plugins/{id}/tools`.
pub(crate) async fn plugin_tools(
    State(state): State<AppState>,
    Path(id): Path<String>,
    locale: Result<Query<LocaleQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<PluginTools>, ApiError> {
    let locale = query(locale)?;
    let locale = locale.locale()?;
    let manifest = state.host.plugins().manifest(&id).ok_or_else(|| {
        ApiError::not_found(format!("no plugin `{id}`; GET /api/v1/plugins lists them"))
    })?;
    let registered: BTreeMap<String, toolshed_host::registry::ToolEntry> = state
        .host
        .catalog()
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
    let tools = specs
        .into_iter()
        .map(|spec| {
            let callable = registered.contains_key(&spec.name);
            let spec = match locale {
                Some(locale) => spec.in_language(locale),
                None => spec,
            };
            let mut tool = Tool::new(spec, &id);
            tool.callable = Some(callable);
            tool
        })
        .collect();
    Ok(Json(PluginTools {
        plugin_id: id,
        tools,
    }))
}

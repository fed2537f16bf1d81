//! `/api/v1/mcp-servers`: the MCP servers toolshed mounts, managed over REST as
//! `toolshed mcp add|list|remove|import|pin` manage them on the command line (the same
//! code: `toolshed_gateway::manage`). Reads need `tools:list`, changes `plugins:admin`.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolshed_gateway::manage::{self, ManageError, NewServer};

use crate::api::{AppState, body};
use crate::error::ApiError;
use crate::reply::{ImportOutcome, Imported, McpServer, McpServerDetail, McpServerList, Removed};

fn api_error(e: ManageError) -> ApiError {
    match e {
        ManageError::Usage(why) if why.starts_with("no MCP server") => ApiError::not_found(why),
        ManageError::Usage(why) => ApiError::bad_request(why),
        ManageError::Failed(why) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "failed", why),
    }
}

/// Server `info` with what it runs.
fn mounted(state: &AppState, info: toolshed_host::PluginInfo) -> McpServer {
    let target = manage::target(&state.host, &info.id);
    McpServer {
        info: info.into(),
        target,
    }
}

/// The most lines of a server's stderr `GET /mcp-servers/{name}` shows.
const STDERR_LINES: usize = 40;

/// `GET /mcp-servers`.
pub(crate) async fn list(State(state): State<AppState>) -> Json<McpServerList> {
    let servers = manage::servers(&state.host)
        .into_iter()
        .map(|info| mounted(&state, info))
        .collect();
    Json(McpServerList { servers })
}

/// `GET /mcp-servers/{name}`: the server with its pins.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<McpServerDetail>, ApiError> {
    let (info, pins) = manage::pins(&state.host, &name).map_err(api_error)?;
    let dir = info.dir.clone();
    let stderr_tail = tokio::task::spawn_blocking(move || {
        dir.and_then(|dir| toolshed_gateway::log::tail(&dir, STDERR_LINES))
    })
    .await
    .unwrap_or_default();
    Ok(Json(McpServerDetail {
        server: mounted(&state, info),
        pins: pins.into(),
        stderr_tail,
    }))
}

/// The body of `POST /mcp-servers`: a server as `toolshed mcp add` takes it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddBody {
    /// Its name: tools become `NAME__TOOL`, the plugin `mcp.NAME`.
    #[schemars(regex(pattern = r"^[a-z0-9_-]{1,32}$"))]
    pub name: String,
    /// The command and its arguments, for a server run over stdio.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub command: Vec<String>,
    /// An `http://` or `https://` URL of a server reached over streamable HTTP, instead
    /// of `command`.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent to the `url` server.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Variables for the command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Hosts it may reach (`HOST` or `HOST:PORT`; `*` for any public host); none: no
    /// network.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub allow_hosts: Vec<String>,
    /// Start it as soon as toolshed opens, not at its first call.
    #[serde(default)]
    pub eager: bool,
    /// The sandbox mode it runs in.
    #[serde(default)]
    #[schemars(extend("enum" = ["read-only", "workspace-write", "full-access"]))]
    pub sandbox: Option<String>,
    /// Replace a server of the same name.
    #[serde(default)]
    pub force: bool,
    /// Tools and prompts become `PREFIX__TOOL` instead of `NAME__TOOL`; `""`: their own
    /// names.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{0,32}$"))]
    pub prefix: Option<String>,
    /// It may ask for model completions during a call (declares and grants `llm`).
    #[serde(default)]
    pub sampling: bool,
}

/// `POST /mcp-servers`: mounts a server; `201` with it once it runs.
pub(crate) async fn add(
    State(state): State<AppState>,
    request: Result<Json<AddBody>, JsonRejection>,
) -> Result<(StatusCode, Json<McpServer>), ApiError> {
    let request = body(request)?;
    if request.command.is_empty() == request.url.is_none() {
        return Err(ApiError::bad_request(
            "give either `command` (a server run over stdio: [\"npx\", \"-y\", \"PACKAGE\"]) or `url` (a server reached over HTTP)",
        ));
    }
    let server = NewServer {
        name: request.name,
        command: request.command,
        url: request.url,
        headers: request.headers.into_iter().collect(),
        env: request.env.into_iter().collect(),
        allow_hosts: request.allow_hosts,
        eager: request.eager,
        sandbox: request.sandbox,
        force: request.force,
        prefix: request.prefix,
        sampling: request.sampling,
    };
    let info = manage::mount(&state.host, &server)
        .await
        .map_err(api_error)?;
    Ok((StatusCode::CREATED, Json(mounted(&state, info))))
}

/// `DELETE /mcp-servers/{name}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Removed>, ApiError> {
    let id = manage::remove(&state.host, &name)
        .await
        .map_err(api_error)?;
    Ok(Json(Removed { removed: id }))
}

/// The body of `POST /mcp-servers/import`: a config with `mcpServers` (Claude Desktop,
/// Claude Code, Cursor), and whether to replace servers of the same names.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ImportBody {
    /// The config, as those tools write it: `{"mcpServers": {NAME: {command, args, env} |
    /// {url, headers}}}`.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub config: Value,
    /// Replace servers of the same names.
    #[serde(default)]
    pub force: bool,
}

/// `POST /mcp-servers/import`: mounts every server of the config; each one's outcome.
pub(crate) async fn import(
    State(state): State<AppState>,
    request: Result<Json<ImportBody>, JsonRejection>,
) -> Result<Json<Imported>, ApiError> {
    let request = body(request)?;
    let entries = manage::import_entries(&request.config, request.force).map_err(api_error)?;
    let mut results = Vec::with_capacity(entries.len());
    for (original, entry) in entries {
        let outcome = match entry {
            Ok(server) => manage::mount(&state.host, &server).await,
            Err(why) => Err(why),
        };
        results.push(match outcome {
            Ok(info) => ImportOutcome {
                name: original,
                mounted: true,
                server: Some(mounted(&state, info)),
                reason: None,
            },
            Err(ManageError::Usage(why) | ManageError::Failed(why)) => ImportOutcome {
                name: original,
                mounted: false,
                server: None,
                reason: Some(why),
            },
        });
    }
    let mounted = results.iter().filter(|r| r.mounted).count();
    Ok(Json(Imported {
        mounted,
        failed: results.len() - mounted,
        servers: results,
    }))
}

/// The body of `POST /mcp-servers/{name}/accept`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcceptBody {
    /// Tools whose changed definitions to accept, as mounted or as the server names them.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Accept every tool's current definition.
    #[serde(default)]
    pub all: bool,
}

/// `POST /mcp-servers/{name}/accept`: accepts changed tool definitions (re-pins them) and
/// starts the server again; the server as it then is.
pub(crate) async fn accept(
    State(state): State<AppState>,
    Path(name): Path<String>,
    request: Result<Json<AcceptBody>, JsonRejection>,
) -> Result<Json<McpServer>, ApiError> {
    let request = body(request)?;
    let info = manage::accept(&state.host, &name, &request.tools, request.all)
        .await
        .map_err(api_error)?;
    Ok(Json(mounted(&state, info)))
}

//! `GET /commands`, `POST /commands/{name}` and `POST /commands/{name}/{id}`: the human
//! commands (`status`, `approvals`; `approve`, `deny` of one request) over REST, as MCP
//! clients get them as prompts.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use toolshed_host::commands::{self, CommandError};
use toolshed_host::identity::Caller;

use super::{AppState, owner};
use crate::error::ApiError;

/// One command.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Command {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The argument it takes, if any.
    pub argument: Option<String>,
}

/// The commands.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct CommandList {
    /// Every command.
    pub commands: Vec<Command>,
}

/// What a command answered.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CommandAnswer {
    /// The command.
    pub command: String,
    /// For the person.
    pub text: String,
    /// The same, as data.
    #[schemars(with = "Map<String, Value>")]
    pub data: Value,
}

/// `GET /commands`.
pub(crate) async fn list() -> Json<CommandList> {
    Json(CommandList {
        commands: commands::COMMANDS
            .iter()
            .map(|c| Command {
                name: c.name.into(),
                description: c.description.into(),
                argument: c.argument.map(|(name, _)| name.to_string()),
            })
            .collect(),
    })
}

/// `POST /commands/{name}`: a command that takes no argument (`status`, `approvals`).
pub(crate) async fn run(
    State(state): State<AppState>,
    Path(name): Path<String>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Result<Json<CommandAnswer>, ApiError> {
    if let Some(command) = commands::COMMANDS
        .iter()
        .find(|c| c.name == name && c.argument.is_some())
    {
        return Err(ApiError::not_found(format!(
            "`{name}` takes the approval request's id: POST /api/v1/commands/{}/ID (the `approvals` command lists them)",
            command.name
        )));
    }
    answer(&state, caller, &headers, name, Map::new())
}

/// `POST /commands/{name}/{id}`: a command about one approval request (`approve`, `deny`).
pub(crate) async fn run_on(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Result<Json<CommandAnswer>, ApiError> {
    if commands::COMMANDS
        .iter()
        .any(|c| c.name == name && c.argument.is_none())
    {
        // There is no such command: the one of that name takes no id.
        return Err(ApiError::not_found(format!(
            "`{name}` takes no id: POST /api/v1/commands/{name}"
        )));
    }
    let mut arguments = Map::new();
    arguments.insert("id".into(), Value::String(id));
    answer(&state, caller, &headers, name, arguments)
}

fn answer(
    state: &AppState,
    caller: Option<Extension<Caller>>,
    headers: &HeaderMap,
    name: String,
    arguments: Map<String, Value>,
) -> Result<Json<CommandAnswer>, ApiError> {
    let owner = owner(caller.as_deref(), headers)?;
    let caller = caller
        .as_deref()
        .cloned()
        .unwrap_or_else(|| Caller::admin(owner.clone()));
    let by = match &caller.token_id {
        Some(token) => format!("token {token} ({}) over REST", caller.owner.0),
        None => "the admin token (REST)".to_string(),
    };
    let outcome =
        commands::run(&state.host, &caller, &by, &name, &arguments).map_err(|e| match e {
            CommandError::Invalid(m) => ApiError::not_found(m),
            CommandError::NotFound(m) => ApiError::not_found(m),
            CommandError::Denied(m) => {
                ApiError::new(axum::http::StatusCode::FORBIDDEN, "denied", m)
            }
            CommandError::Conflict(m) => ApiError::conflict(m),
            CommandError::Failed(m) => ApiError::internal(m),
        })?;
    Ok(Json(CommandAnswer {
        command: name,
        text: outcome.text,
        data: outcome.data,
    }))
}

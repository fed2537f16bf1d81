//! `GET /commands` and `POST /commands/{name}`: the human commands (`status`, `approvals`,
//! `approve`, `deny`) over REST, as MCP clients get them as prompts.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolshed_host::commands::{self, CommandError};
use toolshed_host::identity::Caller;

use super::{AppState, owner, parsed_body};
use crate::error::ApiError;

/// The body of `POST /commands/{name}` (optional).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandBody {
    /// The command's argument (`{"id": "ap-3"}` for approve and deny).
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

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

/// `POST /commands/{name}`.
pub(crate) async fn run(
    State(state): State<AppState>,
    Path(name): Path<String>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    request: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<CommandAnswer>, ApiError> {
    let empty = matches!(&request, Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace));
    let body = if empty {
        CommandBody::default()
    } else {
        parsed_body::<CommandBody>(&state.trees, &headers, request, None)
            .await?
            .0
    };
    let owner = owner(caller.as_deref(), &headers)?;
    let caller = caller
        .as_deref()
        .cloned()
        .unwrap_or_else(|| Caller::admin(owner.clone()));
    let by = match &caller.token_id {
        Some(token) => format!("token {token} ({}) over REST", caller.owner.0),
        None => "the admin token (REST)".to_string(),
    };
    let arguments = body.arguments.unwrap_or_default();
    let outcome =
        commands::run(&state.host, &caller, &by, &name, &arguments).map_err(|e| match e {
            CommandError::Invalid(m) => ApiError::bad_request(m),
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

//! What the agent tools keep (docs/agents.md): the todo lists and the schedules of the
//! owners a caller may see, by the rule of the jobs' listing ([`sees`]).

use axum::extract::{Query, State};
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::OwnerId;
use toolshed_host::identity::Caller;
use toolshed_host::{Host, StoreError};

use super::{AppState, query, sees};
use crate::error::ApiError;
use crate::reply::{Schedule, ScheduleList, TodoList, TodoLists};

/// Filters of `GET /todos` and `GET /schedules`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OwnerFilter {
    /// Only this owner's and its sub-owners' (`alice` takes in `alice/task-7`).
    pub owner: Option<String>,
}

/// The rows `read` finds that the caller may see, of the owner `filter` names (and its
/// sub-owners) or of every owner. An agent token's read is narrowed to its own owner
/// first, so other owners' rows do not take the room of its own.
async fn owned<T: Send + 'static>(
    state: &AppState,
    caller: Option<&Caller>,
    filter: OwnerFilter,
    read: fn(&Host, Option<&str>) -> Result<Vec<T>, StoreError>,
    owner_of: fn(&T) -> &str,
) -> Result<Vec<T>, ApiError> {
    // `?owner=` left blank, as a form sends it: not given.
    let wanted = filter.owner.filter(|owner| !owner.is_empty());
    let scope = wanted
        .clone()
        .or_else(|| caller.filter(|c| c.is_agent()).map(|c| c.owner.0.clone()));
    let host = state.host.clone();
    let rows = tokio::task::spawn_blocking(move || read(&host, scope.as_deref()))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
    Ok(rows
        .into_iter()
        .filter(|row| sees(caller, owner_of(row)))
        // The store matches sub-owners with `LIKE`, where `_` matches any letter.
        .filter(|row| {
            wanted
                .as_deref()
                .is_none_or(|owner| OwnerId::new(owner).covers(owner_of(row)))
        })
        .collect())
}

/// `GET /todos`.
pub(crate) async fn todos(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<OwnerFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TodoLists>, ApiError> {
    let filter = query(filter)?;
    let lists = owned(
        &state,
        caller.as_deref(),
        filter,
        |host, owner| host.agent_state().todo_lists(owner),
        |list: &toolshed_host::TodoList| &list.owner,
    )
    .await?;
    Ok(Json(TodoLists {
        todos: lists
            .into_iter()
            .map(TodoList::try_from)
            .collect::<Result<_, _>>()?,
    }))
}

/// `GET /schedules`.
pub(crate) async fn schedules(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<OwnerFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ScheduleList>, ApiError> {
    let filter = query(filter)?;
    let schedules = owned(
        &state,
        caller.as_deref(),
        filter,
        |host, owner| host.agent_state().schedules(owner),
        |schedule: &toolshed_host::Schedule| &schedule.owner,
    )
    .await?;
    Ok(Json(ScheduleList {
        schedules: schedules
            .into_iter()
            .map(Schedule::try_from)
            .collect::<Result<_, _>>()?,
    }))
}

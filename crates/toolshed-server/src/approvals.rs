//! `/api/v1/approvals`: the calls waiting for a person, and their answers.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_host::identity::Caller;

use crate::api::{AppState, query};
use crate::error::ApiError;
use crate::reply::{Approval, ApprovalList, AuditPage};

/// The most requests one listing returns.
const LIST_LIMIT: usize = 200;

/// Filters of `GET /approvals`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalFilter {
    /// Also the answered and expired requests.
    #[serde(default)]
    pub all: bool,
}

/// The body of `POST /approvals/{id}/approve`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    /// Also approve the same tool with the same arguments for this owner from now on.
    #[serde(default)]
    pub remember: bool,
}

/// `GET /approvals`.
pub(crate) async fn list(
    State(state): State<AppState>,
    filter: Result<Query<ApprovalFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ApprovalList>, ApiError> {
    let filter = query(filter)?;
    let list = state
        .host
        .approvals()
        .list(filter.all, LIST_LIMIT)
        .map_err(ApiError::from)?;
    Ok(Json(ApprovalList {
        approvals: list.into_iter().map(Approval::from).collect(),
    }))
}

/// `GET /approvals/{id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Approval>, ApiError> {
    state
        .host
        .approvals()
        .get(&id)
        .map_err(ApiError::from)?
        .map(|r| Json(r.into()))
        .ok_or_else(|| missing(&id))
}

fn missing(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "no approval request `{id}`; GET /api/v1/approvals lists the waiting ones"
    ))
}

/// `POST /approvals/{id}/approve`.
pub(crate) async fn approve(
    state: State<AppState>,
    caller: Option<Extension<Caller>>,
    id: Path<String>,
    raw: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Approval>, ApiError> {
    let raw = raw.map_err(|rejection| {
        crate::api::unread_or(ApiError::new(
            rejection.status(),
            "invalid_request",
            rejection.body_text(),
        ))
    })?;
    // The body is optional: none is `{}`.
    let remember = if raw.iter().all(u8::is_ascii_whitespace) {
        false
    } else {
        serde_json::from_slice::<Answer>(&raw)
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "the body is not an answer ({e}); send {{\"remember\": true}} or nothing"
                ))
            })?
            .remember
    };
    decide(state, caller, id, true, remember).await
}

/// `POST /approvals/{id}/deny`.
pub(crate) async fn deny(
    state: State<AppState>,
    caller: Option<Extension<Caller>>,
    id: Path<String>,
) -> Result<Json<Approval>, ApiError> {
    decide(state, caller, id, false, false).await
}

async fn decide(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    approve: bool,
    remember: bool,
) -> Result<Json<Approval>, ApiError> {
    let by = match caller.as_deref() {
        Some(c) if c.is_agent() => format!(
            "token {} ({})",
            c.token_id.as_deref().unwrap_or_default(),
            c.owner.0
        ),
        _ => "the admin token (REST)".to_string(),
    };
    // An agent does not answer its own owner's requests unless the config says so.
    if let Some(c) = caller.as_deref().filter(|c| c.is_agent()) {
        let asked = state
            .host
            .approvals()
            .get(&id)
            .map_err(ApiError::from)?
            .ok_or_else(|| missing(&id))?;
        state
            .host
            .config()
            .config
            .approvals
            .may_answer(&c.owner.0, &asked)
            .map_err(|m| ApiError::new(StatusCode::FORBIDDEN, "denied", m.to_string()))?;
    }
    let (taken, request) = state
        .host
        .approvals()
        .answer_once(&id, approve, &by, remember)
        .map_err(ApiError::from)?
        .ok_or_else(|| missing(&id))?;
    // Only the answer that decided counts: the same answer sent again is a conflict too.
    if !taken {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!(
                "{id} is not pending any more: it is {}",
                request.state.as_str()
            ),
        ));
    }
    Ok(Json(request.into()))
}

/// Filters of `GET /audit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditFilter {
    /// How many rows.
    #[serde(default = "default_audit_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: usize,
    /// Only calls of tools matching this glob (`workspace_*`).
    pub tool: Option<String>,
    /// Only calls of owners matching this glob (`alice`, `alice/*`).
    pub owner: Option<String>,
    /// Only calls since then: `30m`, `2h`, `7d`, an RFC 3339 time or epoch milliseconds.
    #[schemars(regex(pattern = r"^([0-9]+[smhd]?|[0-9]{4}-[0-9]{2}-[0-9]{2}T.+)?$"))]
    pub since: Option<String>,
    /// Only this outcome (empty, as a form left blank sends it: any).
    #[schemars(extend("enum" = ["", "ok", "tool_error", "error"]))]
    pub outcome: Option<String>,
    /// Only the calls made on behalf of this call id (a `run_code` snippet's tool calls).
    #[schemars(length(max = 64))]
    pub parent: Option<String>,
    /// The `next_cursor` of the previous page.
    #[schemars(regex(pattern = r"^([1-9][0-9]{0,17})?$"))]
    pub cursor: Option<String>,
}

fn default_audit_limit() -> usize {
    100
}

/// `GET /audit`: audit rows newest first, approvals with who answered included, filtered
/// and paged (`next_cursor`).
pub(crate) async fn audit(
    State(state): State<AppState>,
    filter: Result<Query<AuditFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    let filter = query(filter)?;
    // `?since=` from a form left blank means "not given".
    let given = |value: Option<String>| value.filter(|v| !v.is_empty());
    let (cursor, since) = (given(filter.cursor), given(filter.since));
    let wanted = toolshed_host::AuditQuery {
        tool: given(filter.tool),
        owner: given(filter.owner),
        outcome: given(filter.outcome),
        parent: given(filter.parent),
        limit: filter.limit,
        ..Default::default()
    }
    .checked(cursor.as_deref(), since.as_deref(), toolshed_host::now_ms())
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let audit = state.host.audit().detached();
    let page = tokio::task::spawn_blocking(move || audit.page(&wanted))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map_err(ApiError::from)?;
    Ok(Json(page.into()))
}

//! The job endpoints: the jobs of a caller, one job, and cancelling it.

use axum::extract::{Path, Query, State};
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_host::identity::Caller;

use super::{AppState, query, sees};
use crate::error::ApiError;
use crate::reply::{Job, JobList};
use toolshed_host::jobs::JobState;

/// Filters of `GET /jobs`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobFilter {
    /// Only this owner's jobs.
    pub owner: Option<String>,
    /// Only jobs in this state.
    #[schemars(with = "Option<String>", extend("enum" = ["running", "succeeded", "failed", "cancelled"]))]
    pub state: Option<JobState>,
}

/// `GET /jobs`.
pub(crate) async fn jobs(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<JobFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    let filter = query(filter)?;
    let jobs = state
        .jobs
        .list(filter.owner.as_deref(), filter.state)
        .into_iter()
        .filter(|job| sees(caller.as_deref(), &job.owner))
        .map(Job::from)
        .collect();
    Ok(Json(JobList { jobs }))
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
        .filter(|job| sees(caller, &job.owner))
        .ok_or_else(|| ApiError::not_found(format!("no job `{id}`; GET /api/v1/jobs lists them (finished jobs are removed after the retention time)")))
}

/// `GET /jobs/{id}`.
pub(crate) async fn job(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Job>, ApiError> {
    job_of(&state, caller.as_deref(), &id).map(|job| Json(job.into()))
}

/// `POST /jobs/{id}/cancel`.
pub(crate) async fn cancel_job(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Job>, ApiError> {
    job_of(&state, caller.as_deref(), &id)?;
    state
        .jobs
        .cancel(&id)
        .await
        .map(|job| Json(job.into()))
        .map_err(ApiError::from)
}

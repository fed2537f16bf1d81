//! `/api/v1/questions`: what tools asked a person (`ask_user`) that the calling client could
//! not put to them, and their answers. An agent token sees and answers the questions of its
//! own owner's calls (and its sub-owners'): whoever answers for a REST client uses its
//! token. The admin token sees and answers every owner's.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolshed_core::Answer;
use toolshed_host::identity::Caller;
use toolshed_host::questions::AnswerError;

use crate::api::AppState;
use crate::error::ApiError;
use crate::reply::{Answered, Question, QuestionList};

/// The body of `POST /questions/{id}/answer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Body {
    /// `accept` (with `content`), `decline` or `cancel`.
    #[schemars(extend("enum" = ["accept", "decline", "cancel"]))]
    pub action: String,
    /// The answer's fields, as the question's schema asks.
    #[serde(default)]
    pub content: Map<String, Value>,
}

/// The owner an agent token's caller is limited to (its own calls' questions and its
/// sub-owners'); `None` for the admin token.
fn limited_to(caller: Option<&Caller>) -> Option<String> {
    caller.filter(|c| c.is_agent()).map(|c| c.owner.0.clone())
}

/// `GET /questions`.
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
) -> Json<QuestionList> {
    let owner = limited_to(caller.as_deref());
    let pending = state
        .host
        .dispatcher()
        .questions()
        .pending(owner.as_deref());
    Json(QuestionList {
        questions: pending.into_iter().map(Question::from).collect(),
    })
}

/// `POST /questions/{id}/answer`.
pub(crate) async fn answer(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    raw: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Answered>, ApiError> {
    let raw = raw.map_err(|rejection| {
        crate::api::unread_or(ApiError::new(
            rejection.status(),
            "invalid_request",
            rejection.body_text(),
        ))
    })?;
    let body: Body = serde_json::from_slice(&raw).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not an answer ({e}); send {{\"action\": \"accept\", \"content\": \
             {{\"answer\": \"…\"}}}}, or {{\"action\": \"decline\"}}"
        ))
    })?;
    let answer = match body.action.as_str() {
        "accept" => Answer::Accept {
            content: body.content,
        },
        "decline" => Answer::Decline,
        "cancel" => Answer::Cancel,
        other => {
            return Err(ApiError::bad_request(format!(
                "`action` {other:?} is not one of accept, decline, cancel"
            )));
        }
    };
    let owner = limited_to(caller.as_deref());
    let question = state
        .host
        .dispatcher()
        .questions()
        .answer(&id, answer, owner.as_deref())
        .map_err(|e| match e {
            AnswerError::NotFound(_) => ApiError::not_found(e.to_string()),
            AnswerError::NotYours(_) => {
                ApiError::new(StatusCode::FORBIDDEN, "denied", e.to_string())
            }
        })?;
    Ok(Json(Answered {
        answered: question.into(),
    }))
}

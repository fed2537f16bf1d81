//! One error shape for every failure of the REST API:
//! `{"error": {"kind": "...", "message": "...", "details": ...}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use toolshed_core::{ErrorKind, ToolError};

use crate::reply::{ErrorBody, ErrorDetail};

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable kind (`not_found`, `invalid_arguments`, ...).
    pub kind: &'static str,
    /// What went wrong and what to do, for people and models.
    pub message: String,
    /// More, when there is more (schema violations, say).
    pub details: Value,
}

impl ApiError {
    /// An error of this status and kind.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            details: Value::Null,
        }
    }

    /// `404 not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// `400 invalid_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// `409 conflict`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// `500 internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The body.
    pub(crate) fn body(self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                kind: self.kind,
                message: self.message,
                details: self.details,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self.details.get("retry_after").and_then(Value::as_u64);
        let status = self.status;
        let mut response = (status, Json(self.body())).into_response();
        if let Some(secs) = retry_after.filter(|_| {
            status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE
        }) {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// The status a [`ToolError`] maps to. A tool that ran and failed (`Failed`) is not an HTTP
/// error: the caller turns it into a `200` result with `is_error: true`.
pub(crate) fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidArguments => StatusCode::BAD_REQUEST,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Denied | ErrorKind::NeedsApproval => StatusCode::FORBIDDEN,
        ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Unconfigured => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Cancelled => StatusCode::CONFLICT,
        ErrorKind::Failed => StatusCode::OK,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<toolshed_host::jobs::JobError> for ApiError {
    fn from(error: toolshed_host::jobs::JobError) -> Self {
        use toolshed_host::jobs::JobError;
        match error {
            JobError::TooMany(m) => Self::new(StatusCode::TOO_MANY_REQUESTS, "too_many_jobs", m),
            JobError::NotFound(m) => Self::not_found(m),
            JobError::Conflict(m) | JobError::Ended(m) => Self::conflict(m),
            JobError::Internal(m) => Self::internal(m),
            JobError::Closing(m) => Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m),
        }
    }
}

impl From<toolshed_host::StoreError> for ApiError {
    /// The state store failed: `500 internal`, saying how.
    fn from(error: toolshed_host::StoreError) -> Self {
        Self::internal(error.to_string())
    }
}

impl From<&ToolError> for ApiError {
    fn from(error: &ToolError) -> Self {
        // The one error shape of every door (`ToolError::to_json`), with an HTTP status.
        let kind = error.kind();
        Self {
            status: status_of(kind),
            kind: kind.as_str(),
            message: error.to_string(),
            details: error.details(),
        }
    }
}

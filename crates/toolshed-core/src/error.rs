//! How a call fails.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One way the arguments did not match the tool's schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer to the offending value (`""` is the whole arguments object).
    pub pointer: String,
    /// What was expected, in words.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "at {at}: {}", self.message)
    }
}

/// The kind of a [`ToolError`], as a stable name for doors (HTTP status, audit rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The arguments did not match the schema or made no sense.
    InvalidArguments,
    /// The tool or a thing it was asked about does not exist.
    NotFound,
    /// Policy or review refused the call.
    Denied,
    /// A person must approve the call first.
    NeedsApproval,
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// Configuration or an environment variable is missing.
    Unconfigured,
    /// State changed under the caller, or the request was ambiguous.
    Conflict,
    /// A quota or rate limit refused the call for now; retry after the time given.
    RateLimited,
    /// The tool ran and failed.
    Failed,
    /// A bug in toolshed.
    Internal,
}

impl ErrorKind {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::NotFound => "not_found",
            Self::Denied => "denied",
            Self::NeedsApproval => "needs_approval",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Unconfigured => "unconfigured",
            Self::Conflict => "conflict",
            Self::RateLimited => "rate_limited",
            Self::Failed => "failed",
            Self::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call that did not produce a result. Every message says what happened, the value that
/// caused it, and what to do instead; it is written for a model to act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments did not match the schema (every violation listed) or made no sense.
    #[error("{}", invalid_arguments_message(.message, .violations))]
    InvalidArguments {
        /// A summary.
        message: String,
        /// Every schema violation found.
        violations: Vec<Violation>,
    },
    /// Something named by the call does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Refused by review or policy.
    #[error("denied by {rule}: {message}")]
    Denied {
        /// The rule that denied the call.
        rule: String,
        /// Why, and what to do.
        message: String,
    },
    /// A person must approve the call.
    #[error("approval needed: {0}")]
    NeedsApproval(String),
    /// The deadline passed; the tool was stopped.
    #[error("timed out after {} ms; the call was stopped. Retry with a larger timeout or a smaller request", .0.as_millis())]
    Timeout(Duration),
    /// The caller cancelled the call.
    #[error("cancelled by the caller")]
    Cancelled,
    /// A configuration value or environment variable is missing.
    #[error("{message}")]
    Unconfigured {
        /// What is missing and how to set it.
        message: String,
        /// The variables or config keys to set.
        variables: Vec<String>,
    },
    /// State changed under the caller, or the request was ambiguous.
    #[error("{0}")]
    Conflict(String),
    /// A quota or rate limit refused the call for now.
    #[error("rate limited: {message}; retry after {} s", .retry_after.as_secs().max(1))]
    RateLimited {
        /// Which limit, and how it is counted.
        message: String,
        /// When a retry can succeed.
        retry_after: Duration,
    },
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// A bug in toolshed. The message never contains secrets.
    #[error("internal error: {0}")]
    Internal(String),
}

fn invalid_arguments_message(message: &str, violations: &[Violation]) -> String {
    let mut out = message.to_string();
    for v in violations {
        out.push_str("\n- ");
        out.push_str(&v.to_string());
    }
    out
}

impl ToolError {
    /// Invalid arguments with a single message and no schema pointer.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            message: message.into(),
            violations: Vec::new(),
        }
    }

    /// Invalid arguments: one violation at `pointer`.
    pub fn invalid_at(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let violation = Violation {
            pointer: pointer.into(),
            message: message.into(),
        };
        Self::InvalidArguments {
            message: "invalid arguments".into(),
            violations: vec![violation],
        }
    }

    /// The tool ran and failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// Adds `note` (a paragraph of its own) to the message, for the errors that carry one:
    /// a timeout, a cancellation, an approval wait and a rate limit say what they say.
    pub fn add_note(&mut self, note: &str) {
        match self {
            Self::InvalidArguments { message, .. }
            | Self::Denied { message, .. }
            | Self::Unconfigured { message, .. }
            | Self::NotFound(message)
            | Self::Conflict(message)
            | Self::Failed(message)
            | Self::Internal(message) => {
                message.push_str("\n\n");
                message.push_str(note);
            }
            Self::NeedsApproval(_)
            | Self::Timeout(_)
            | Self::Cancelled
            | Self::RateLimited { .. } => {}
        }
    }

    /// This error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidArguments { .. } => ErrorKind::InvalidArguments,
            Self::NotFound(_) => ErrorKind::NotFound,
            Self::Denied { .. } => ErrorKind::Denied,
            Self::NeedsApproval(_) => ErrorKind::NeedsApproval,
            Self::Timeout(_) => ErrorKind::Timeout,
            Self::Cancelled => ErrorKind::Cancelled,
            Self::Unconfigured { .. } => ErrorKind::Unconfigured,
            Self::Conflict(_) => ErrorKind::Conflict,
            Self::RateLimited { .. } => ErrorKind::RateLimited,
            Self::Failed(_) => ErrorKind::Failed,
            Self::Internal(_) => ErrorKind::Internal,
        }
    }

    /// What a program acting on this error needs besides its kind and message:
    /// `{"violations": [{pointer, message}]}` for invalid arguments, `{"rule"}` for a
    /// denial, `{"variables"}` for what to configure, `{"retry_after"}` (whole seconds) for
    /// a rate limit; `null` otherwise.
    pub fn details(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Self::InvalidArguments { violations, .. } => json!({ "violations": violations }),
            Self::Denied { rule, .. } => json!({ "rule": rule }),
            Self::Unconfigured { variables, .. } => json!({ "variables": variables }),
            Self::RateLimited { retry_after, .. } => {
                json!({ "retry_after": retry_after.as_secs().max(1) })
            }
            _ => serde_json::Value::Null,
        }
    }

    /// The one shape every door renders an error in: `{"kind", "message", "details"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind().as_str(),
            "message": self.to_string(),
            "details": self.details(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_arguments_lists_every_violation() {
        let err = ToolError::InvalidArguments {
            message: "2 problems".into(),
            violations: vec![
                Violation {
                    pointer: "/a".into(),
                    message: "expected a number".into(),
                },
                Violation {
                    pointer: String::new(),
                    message: "missing `b`".into(),
                },
            ],
        };
        let text = err.to_string();
        assert!(text.contains("at /a: expected a number"), "{text}");
        assert!(text.contains("at /: missing `b`"), "{text}");
        assert_eq!(err.kind().as_str(), "invalid_arguments");
        let shape = err.to_json();
        assert_eq!(shape["kind"], "invalid_arguments");
        assert_eq!(shape["details"]["violations"][0]["pointer"], "/a");
        let denied = ToolError::Denied {
            rule: "review.deny rule `group:exec`".into(),
            message: "no".into(),
        };
        assert_eq!(denied.details()["rule"], "review.deny rule `group:exec`");
        assert!(ToolError::Cancelled.details().is_null());
    }
}

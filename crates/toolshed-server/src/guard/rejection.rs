//! What a request refused by the guard is answered: the reasons, their status codes and
//! messages, and the limits they name.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Why a request was refused before it reached a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// `Host` is missing or does not name this server by a loopback name and its port.
    ForeignHost,
    /// `Origin` is present and is not a loopback origin.
    ForeignOrigin,
    /// No bearer token was presented.
    MissingToken,
    /// A bearer token was presented and it is not the server's.
    WrongToken,
    /// The declared body is larger than the limit.
    BodyTooLarge,
    /// The headers together are larger than [`MAX_HEADER_BYTES`].
    HeadersTooLarge,
    /// A token-like parameter was sent in the query string.
    TokenInQuery,
    /// More than one `Authorization` header: which one counts would depend on order.
    DuplicateAuthorization,
    /// The token lacks the scope the route needs.
    MissingScope(&'static str),
    /// The MCP session was opened with another token.
    ForeignSession,
    /// A state-changing request made with a dashboard cookie lacks its CSRF token.
    MissingCsrf,
    /// The server is shutting down and takes no new requests.
    ShuttingDown,
    /// The agent token is pinned to a workspace (its `workspace:` scope) this server does
    /// not serve.
    OtherWorkspace {
        /// The workspace the token is pinned to.
        pinned: String,
        /// The workspace this server serves.
        served: String,
    },
    /// This peer failed to authenticate too often lately.
    TooManyFailures {
        /// Seconds until it may try again.
        retry_after: u64,
    },
}

/// The most header bytes (names and values) a request may carry.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Failed authentications one peer address may make within [`FAILURE_WINDOW`] before it is
/// refused with `429`.
pub const MAX_AUTH_FAILURES: u32 = 10;

/// The window [`MAX_AUTH_FAILURES`] counts over.
pub const FAILURE_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

impl Rejection {
    /// The status, the error kind and the message a client gets.
    pub fn parts(self) -> (StatusCode, &'static str, String) {
        match self {
            Self::ForeignHost => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "the Host header must name this server as 127.0.0.1, localhost or [::1] with its port".into(),
            ),
            Self::ForeignOrigin => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "requests from this Origin are not accepted; only loopback origins may call this server".into(),
            ),
            Self::MissingToken => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "send `Authorization: Bearer <token>`; `toolshed token` prints the token".into(),
            ),
            Self::WrongToken => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the bearer token is wrong; `toolshed token` prints the current one".into(),
            ),
            Self::BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is larger than this server accepts".into(),
            ),
            Self::HeadersTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                format!("the request headers are larger than {MAX_HEADER_BYTES} bytes"),
            ),
            Self::DuplicateAuthorization => (
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "send one Authorization header; this request has several".into(),
            ),
            Self::TokenInQuery => (
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "credentials are never accepted in the query string; send `Authorization: Bearer <token>` instead".into(),
            ),
            Self::MissingScope(scope) => (
                StatusCode::FORBIDDEN,
                "denied",
                format!(
                    "this token lacks the `{scope}` scope; `toolshed token create --scope {scope}` makes one that has it"
                ),
            ),
            Self::ForeignSession => (
                StatusCode::FORBIDDEN,
                "denied",
                "this MCP session was opened with another token; open a new session with yours".into(),
            ),
            Self::ShuttingDown => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "this server is shutting down and takes no new requests; retry (another replica, or this one once it is back)".into(),
            ),
            Self::MissingCsrf => (
                StatusCode::FORBIDDEN,
                "denied",
                "a request that changes something, made with the dashboard's session cookie, must carry its CSRF token in X-CSRF-Token".into(),
            ),
            Self::OtherWorkspace { pinned, served } => (
                StatusCode::FORBIDDEN,
                "denied",
                format!(
                    "this token works only in workspace {pinned}, and this server serves {served}; use a token for {served}, or serve {pinned} with `toolshed serve --workspace {pinned}`"
                ),
            ),
            Self::TooManyFailures { retry_after } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many failed authentications from this address; try again in {retry_after} s"),
            ),
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let (status, kind, message) = self.clone().parts();
        // The API's one error shape.
        let body = crate::error::ApiError::new(status, kind, message).body();
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        match self {
            Self::MissingToken => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::WrongToken => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer error=\"invalid_token\""),
                );
            }
            Self::TooManyFailures { retry_after } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            }
            Self::ShuttingDown => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(1u64));
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

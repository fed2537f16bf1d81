//! Serving clients over MCP streamable HTTP at `/mcp`.
//!
//! rmcp's [`StreamableHttpService`] speaks the protocol; in front of it sits
//! [`RequestGuard`], which every request passes before any of its body is read:
//!
//! 1. the `Host` header must name this server by a loopback name and its port, and an
//!    `Origin` header, when present, must be a loopback origin — otherwise `403`. A web
//!    page the user visits cannot reach the server through a DNS name it rebinds to
//!    127.0.0.1, nor from its own origin;
//! 2. `Authorization: Bearer <token>` must carry the token — otherwise `401` with
//!    `WWW-Authenticate: Bearer` (and `error="invalid_token"` when a wrong one was sent);
//! 3. a declared body over the limit is `413` at once; rmcp enforces the same limit while
//!    streaming a body that does not declare its length.
//!
//! Each MCP session gets its own [`McpServer`], so its own owner: read-before-edit state
//! never leaks between clients.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolshed_host::Host;

use crate::token::BearerToken;
use crate::{McpServer, ServeError, Session};

/// The largest request body the HTTP door accepts by default: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The path the MCP endpoint is mounted at.
pub const MCP_PATH: &str = "/mcp";

/// What the HTTP door needs besides the host.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The token every request must present.
    pub token: BearerToken,
    /// What narrows the tools every session sees.
    pub session: Session,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
}

/// Serves MCP over streamable HTTP on `listener` until `shutdown` completes; then open
/// sessions and streams are ended and in-flight calls cancelled.
pub async fn serve_http(
    host: Arc<Host>,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Session(format!("cannot read the bound address: {e}")))?;
    let stop = CancellationToken::new();
    let router = router(host, local, options, stop.child_token());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await
        .map_err(|e| ServeError::Session(format!("the HTTP server failed: {e}")))
}

/// The axum router of the HTTP door for a server listening on `local`: the guarded MCP
/// endpoint at [`MCP_PATH`]. `stop` ends every session when cancelled.
pub fn router(
    host: Arc<Host>,
    local: SocketAddr,
    options: HttpOptions,
    stop: CancellationToken,
) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(stop);
    let session = options.session.clone();
    let proxy = crate::proxy::ProxyState {
        ports: host
            .dispatcher()
            .extensions()
            .get::<toolshed_core::PortDirectory>(),
    };
    let service = StreamableHttpService::new(
        move || {
            let server = McpServer::new(host.clone(), session.clone());
            tracing::info!(owner = %server.owner(), "new MCP session over HTTP");
            Ok(server)
        },
        LocalSessionManager::default().into(),
        config,
    );
    let guard = Arc::new(RequestGuard::new(
        local,
        options.token,
        options.max_body_bytes,
    ));
    let proxied = Router::new()
        .route("/proxy/{id}", axum::routing::any(crate::proxy::proxy_root))
        .route("/proxy/{id}/", axum::routing::any(crate::proxy::proxy))
        .route(
            "/proxy/{id}/{*rest}",
            axum::routing::any(crate::proxy::proxy),
        )
        .with_state(proxy);
    Router::new()
        .merge(proxied)
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(guard, check_request))
}

async fn check_request(
    State(guard): State<Arc<RequestGuard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(rejection) => {
            tracing::debug!(reason = ?rejection, method = %request.method(), "HTTP request refused");
            rejection.into_response()
        }
    }
}

/// Why a request was refused before it reached the MCP service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let (status, message, challenge) = match self {
            Self::ForeignHost => (
                StatusCode::FORBIDDEN,
                "the Host header must name this server as 127.0.0.1, localhost or [::1] with its port",
                None,
            ),
            Self::ForeignOrigin => (
                StatusCode::FORBIDDEN,
                "requests from this Origin are not accepted; only loopback origins may call this server",
                None,
            ),
            Self::MissingToken => (
                StatusCode::UNAUTHORIZED,
                "send `Authorization: Bearer <token>`; `toolshed token` prints the token",
                Some("Bearer"),
            ),
            Self::WrongToken => (
                StatusCode::UNAUTHORIZED,
                "the bearer token is wrong; `toolshed token` prints the current one",
                Some("Bearer error=\"invalid_token\""),
            ),
            Self::BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is larger than this server accepts",
                None,
            ),
        };
        let mut response = (status, format!("{message}\n")).into_response();
        if let Some(challenge) = challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

/// The checks every request to the HTTP door passes before the MCP service sees it.
#[derive(Debug)]
pub struct RequestGuard {
    allowed_hosts: Vec<String>,
    token: BearerToken,
    max_body_bytes: usize,
}

impl RequestGuard {
    /// A guard for a server listening on `local`. The accepted `Host` values are the
    /// loopback names with the port, plus the bound address itself when it is a specific
    /// non-loopback one.
    pub fn new(local: SocketAddr, token: BearerToken, max_body_bytes: usize) -> Self {
        let port = local.port();
        let mut allowed_hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        let ip = local.ip();
        if !ip.is_loopback() && !ip.is_unspecified() {
            allowed_hosts.push(local.to_string());
        }
        if port == 80 {
            let bare: Vec<String> = allowed_hosts
                .iter()
                .filter_map(|h| h.strip_suffix(":80").map(String::from))
                .collect();
            allowed_hosts.extend(bare);
        }
        Self {
            allowed_hosts,
            token,
            max_body_bytes,
        }
    }

    /// Checks one request's headers, in the order the module docs give.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or(Rejection::ForeignHost)?;
        if !self
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
        {
            return Err(Rejection::ForeignHost);
        }
        if let Some(origin) = headers.get(header::ORIGIN)
            && !is_loopback_origin(origin.as_bytes())
        {
            return Err(Rejection::ForeignOrigin);
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .ok_or(Rejection::MissingToken)?
            .as_bytes();
        let token = bearer_credentials(presented).ok_or(Rejection::WrongToken)?;
        if !self.token.matches(token) {
            return Err(Rejection::WrongToken);
        }
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(Rejection::BodyTooLarge);
        }
        Ok(())
    }
}

/// The credentials of an `Authorization: Bearer <credentials>` value (the scheme is
/// case-insensitive).
fn bearer_credentials(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    Some(rest.trim_ascii())
}

/// Whether an `Origin` value is `http` or `https` on a loopback host, any port.
/// `Origin: null` (sandboxed frames, `file:` pages) is not.
fn is_loopback_origin(origin: &[u8]) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let host = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || is_port(after) => inside,
            _ => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((name, port)) if is_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => authority,
        }
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() && host != "0.0.0.0")
}

fn is_port(text: &str) -> bool {
    text.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn loopback_origins_are_recognised() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "HTTP://LOCALHOST",
            "http://127.0.0.2:1",
        ] {
            assert!(is_loopback_origin(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "null",
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:80",
            "http://[::1].evil:80",
            "file://",
            "ws://localhost:1",
            "http://localhost:abc",
            "http://0.0.0.0:80",
        ] {
            assert!(!is_loopback_origin(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_credentials(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_credentials(b"bearer  abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_credentials(b"Basic abc"), None);
        assert_eq!(bearer_credentials(b"Bear"), None);
    }
}

//! The guard every request to the HTTP server passes before any of its body is read.
//!
//! 1. the `Host` header must name this server by a loopback name and its port, and an
//!    `Origin` header, when present, must be a loopback origin — otherwise `403`. A web
//!    page the user visits cannot reach the server through a DNS name it rebinds to
//!    127.0.0.1, nor from its own origin;
//! 2. `Authorization: Bearer <token>` must carry the token — the admin token, an agent
//!    token or an OAuth JWT — otherwise `401` with `WWW-Authenticate: Bearer` (and
//!    `error="invalid_token"` when a wrong one was sent); two `Authorization` headers are a
//!    `400`;
//! 3. a declared body over the limit is `413` at once; the MCP transport enforces the same
//!    limit while streaming a body that does not declare its length.
//!
//! Headers over [`MAX_HEADER_BYTES`], a credential in the query string and too many wrong
//! tokens from one address are refused too. One guard stands in front of every route —
//! `/mcp`, `/api/v1` and `/proxy/<id>/` — so there is one copy of each check.
//!
//! The checks live by concept: [`names`] (Host and Origin), [`credentials`] (tokens,
//! scopes, CSRF and failed logins), [`sessions`] (which token opened which MCP session,
//! and how many may be open) and [`rejection`] (what a refused request is answered).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use toolshed_host::Tokens;
use toolshed_host::identity::Caller;

use crate::token::BearerToken;

mod credentials;
mod names;
mod rejection;
mod sessions;

use credentials::TOKEN_PARAMS;
pub use rejection::{FAILURE_WINDOW, MAX_AUTH_FAILURES, MAX_HEADER_BYTES, Rejection};
pub(crate) use sessions::McpSessionLimits;
pub(crate) use sessions::missing_session;
use sessions::{BoundSessions, MCP_SESSION, Opener};

/// Puts `guard` in front of every route of `router`. Serve the result with connect info
/// (`into_make_service_with_connect_info`, as [`serve_router`](crate::serve_router) does)
/// so the guard can limit failed logins per peer.
pub fn guarded(router: Router, guard: Arc<RequestGuard>) -> Router {
    router.layer(axum::middleware::from_fn_with_state(guard, check_request))
}

async fn check_request(
    State(guard): State<Arc<RequestGuard>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    if guard.draining.load(std::sync::atomic::Ordering::SeqCst) && starts_work(&request) {
        return Rejection::ShuttingDown.into_response();
    }
    if let Err(rejection) = guard.check_csrf(request.method(), request.uri(), request.headers()) {
        return rejection.into_response();
    }
    match guard.check(peer, request.uri(), request.headers()) {
        Ok(None) => next.run(request).await,
        Ok(Some(caller)) => {
            if let Err(rejection) = guard.check_scope(&caller, request.method(), request.uri()) {
                return rejection.into_response();
            }
            let session = request
                .headers()
                .get(MCP_SESSION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            if let Some(id) = &session {
                match guard.session_opener(id) {
                    None => return missing_session(id, &guard.replica),
                    Some(opener) if opener.token != caller.token_id => {
                        return Rejection::ForeignSession.into_response();
                    }
                    Some(_) => {}
                }
            }
            let closing = request.method() == axum::http::Method::DELETE;
            let opener = Opener {
                token: caller.token_id.clone(),
                account: crate::stream::account_of(Some(&caller)),
            };
            request.extensions_mut().insert(caller);
            // Room for the body in the in-flight budget, held until the route has answered
            // (it has read and parsed the body by then).
            let _room = guard.body_room(request.headers()).await;
            let response = next.run(request).await;
            match (&session, response.headers().get(MCP_SESSION)) {
                (None, Some(opened)) => {
                    if let Ok(opened) = opened.to_str().map(str::to_string)
                        && let Err(refusal) = guard.admit_session(&opened, &opener).await
                    {
                        return refusal;
                    }
                }
                (Some(id), _) if closing => guard.unbind_session(id),
                _ => {}
            }
            response
        }
        Err(rejection) => {
            tracing::debug!(reason = ?rejection, method = %request.method(), path = %request.uri().path(), "HTTP request refused");
            rejection.into_response()
        }
    }
}

/// Whether a request would start new work, which a draining server refuses. What the
/// calls still running may need goes on: health checks, answering approvals and questions, reading and
/// cancelling jobs, anything on an MCP session already open (a sampling answer, a
/// cancellation), and reads.
fn starts_work(request: &Request) -> bool {
    let path = request.uri().path();
    let read = matches!(request.method().as_str(), "GET" | "HEAD");
    let on_session = path == "/mcp" && request.headers().contains_key(MCP_SESSION);
    let needed = path == "/health"
        || path.starts_with("/api/v1/health")
        || path.starts_with("/api/v1/approvals/")
        || path.starts_with("/api/v1/questions/")
        || path.starts_with("/api/v1/jobs");
    !(needed || on_session || (read && path != "/mcp"))
}

/// The agent tokens a guard accepts ([`RequestGuard::with_agent_tokens`]).
struct AgentTokens(Tokens<'static>);

impl std::fmt::Debug for AgentTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTokens").finish_non_exhaustive()
    }
}

/// The checks every request to the HTTP server passes before a route sees it.
#[derive(Debug)]
pub struct RequestGuard {
    allowed_hosts: Vec<String>,
    token: BearerToken,
    max_body_bytes: usize,
    /// Paths served without a token (`/api/v1/health`).
    open_paths: Vec<String>,
    /// Origins accepted besides the loopback ones (exact, e.g. `https://dash.example`).
    extra_origins: Vec<String>,
    /// Failed authentications one peer may make per [`FAILURE_WINDOW`].
    failure_limit: u32,
    /// Failed authentications per peer: how many, since when.
    failures: std::sync::Mutex<std::collections::HashMap<IpAddr, (u32, std::time::Instant)>>,
    /// Where agent tokens are checked, when they are accepted.
    agents: Option<AgentTokens>,
    /// The workspace this server serves, as pinned tokens name it; a token pinned to
    /// another is refused (with none set, every pinned token is).
    workspace: String,
    /// MCP sessions and the token that opened each (`None`: the admin token), oldest first.
    sessions: std::sync::Mutex<BoundSessions>,
    /// How many MCP sessions may be open, when limited.
    mcp_limits: Option<McpSessionLimits>,
    /// Bearer JWTs from an OAuth issuer, when configured.
    oauth: Option<OAuth>,
    /// The dashboard's cookie sessions, when the dashboard is served.
    dashboard: Option<Arc<crate::dashboard::Sessions>>,
    /// Set once the server is shutting down: new requests are refused.
    draining: Arc<std::sync::atomic::AtomicBool>,
    /// This server's replica name, which begins the MCP session ids it hands out.
    replica: Arc<str>,
    /// The request-body bytes that may be in flight at once, in KiB.
    body_budget: Arc<tokio::sync::Semaphore>,
    /// Its size, in KiB.
    body_budget_kib: u32,
}

/// The OAuth issuer's settings, its current keys, and a way to ask for fresh ones.
#[derive(Debug)]
pub struct OAuth {
    /// `[server.oauth]`.
    pub config: toolshed_host::oauth::OAuthConfig,
    /// The issuer's keys, refreshed in the background.
    pub jwks: Arc<std::sync::RwLock<toolshed_host::oauth::Jwks>>,
    /// Woken when a token names a key not known yet (the keys may have rotated).
    pub refresh: Arc<tokio::sync::Notify>,
}

/// The default in-flight body budget: 32 MiB.
const DEFAULT_BODY_BUDGET_KIB: u32 = 32 * 1024;

/// The most peers whose failures are remembered; beyond it the oldest windows are dropped.
const MAX_TRACKED_PEERS: usize = 4096;

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
            open_paths: Vec::new(),
            extra_origins: Vec::new(),
            failure_limit: MAX_AUTH_FAILURES,
            failures: Default::default(),
            agents: None,
            workspace: String::new(),
            sessions: Default::default(),
            mcp_limits: None,
            oauth: None,
            dashboard: None,
            draining: Arc::default(),
            replica: "toolshed".into(),
            body_budget: Arc::new(tokio::sync::Semaphore::new(
                DEFAULT_BODY_BUDGET_KIB as usize,
            )),
            body_budget_kib: DEFAULT_BODY_BUDGET_KIB,
        }
    }

    /// Refuses new requests (but health checks) once `draining` is set.
    pub fn with_draining(mut self, draining: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.draining = draining;
        self
    }

    /// This server's replica name (`[server] replica`), to say where a session of another
    /// replica lives.
    pub fn with_replica(mut self, replica: Arc<str>) -> Self {
        self.replica = replica;
        self
    }

    /// Accepts the dashboard's session cookies (with a CSRF token on state-changing
    /// requests) besides bearer tokens.
    pub(crate) fn with_dashboard(mut self, sessions: Arc<crate::dashboard::Sessions>) -> Self {
        self.dashboard = Some(sessions);
        self
    }

    /// Lets at most `bytes` of request bodies be received and parsed at once.
    pub fn with_body_budget(mut self, bytes: usize) -> Self {
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .max(1);
        self.body_budget = Arc::new(tokio::sync::Semaphore::new(kib as usize));
        self.body_budget_kib = kib;
        self
    }

    /// Waits for room for a request's body in the in-flight budget: its declared length,
    /// or the most a body may be when it is sent in chunks. `None` for a request without
    /// a body.
    async fn body_room(&self, headers: &HeaderMap) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let bytes = match declared {
            Some(0) => return None,
            Some(n) => n.min(self.max_body_bytes as u64),
            None if headers.contains_key(header::TRANSFER_ENCODING) => self.max_body_bytes as u64,
            None => return None,
        };
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.body_budget_kib);
        self.body_budget.clone().acquire_many_owned(kib).await.ok()
    }

    /// Also accepts bearer JWTs verified against `oauth`.
    pub fn with_oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Also accepts the agent tokens `tokens` holds (`toolshed token create`), each checked
    /// against the database on every request, so a revoked token is refused at once.
    pub fn with_agent_tokens(mut self, tokens: Tokens<'static>) -> Self {
        self.agents = Some(AgentTokens(tokens));
        self
    }

    /// Serves `workspace` ([`toolshed_host::Host::workspace_name`]): agent tokens pinned
    /// to it are accepted, those pinned to another refused.
    pub fn with_workspace(mut self, workspace: impl Into<String>) -> Self {
        self.workspace = workspace.into();
        self
    }

    /// Also accepts these `Host` values (`name:port`, or a bare name for port 80) and these
    /// `Origin` values (exact, scheme and port included), for a server reached through a
    /// name of its own. Loopback stays accepted.
    pub fn with_extra_names(mut self, hosts: &[String], origins: &[String]) -> Self {
        self.allowed_hosts.extend(hosts.iter().cloned());
        self.extra_origins
            .extend(origins.iter().map(|o| o.trim_end_matches('/').to_string()));
        self
    }

    /// Allows `limit` failed authentications per address and minute (at least 1) instead of
    /// [`MAX_AUTH_FAILURES`].
    pub fn with_failure_limit(mut self, limit: u32) -> Self {
        self.failure_limit = limit.max(1);
        self
    }

    /// Serves `paths` (exact) without a token; the other checks still apply.
    pub fn with_open_paths(mut self, paths: &[&str]) -> Self {
        self.open_paths = paths.iter().map(|p| p.to_string()).collect();
        self
    }

    /// Checks one request, in the order the module docs give.
    pub fn check(
        &self,
        peer: Option<IpAddr>,
        uri: &axum::http::Uri,
        headers: &HeaderMap,
    ) -> Result<Option<Caller>, Rejection> {
        let header_bytes: usize = headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        if header_bytes > MAX_HEADER_BYTES {
            return Err(Rejection::HeadersTooLarge);
        }
        self.check_names(headers)?;
        if let Some(query) = uri.query()
            && query.split('&').any(|pair| {
                let name = pair.split('=').next().unwrap_or("");
                TOKEN_PARAMS.iter().any(|t| t.eq_ignore_ascii_case(name))
            })
        {
            return Err(Rejection::TokenInQuery);
        }
        if self.open_paths.iter().any(|p| p == uri.path()) {
            return Ok(None);
        }
        // The right token always passes: a flood of bad requests from the same address (a
        // web page, another local process) must not lock the real client out. Only wrong
        // tokens count towards the limit and are refused with 429 past it.
        let caller = match self.check_token(uri, headers) {
            Ok(caller) => caller,
            Err(Rejection::WrongToken) => {
                if let Some(peer) = peer {
                    if let Some(retry_after) = self.blocked(peer) {
                        return Err(Rejection::TooManyFailures { retry_after });
                    }
                    self.record_failure(peer);
                }
                return Err(Rejection::WrongToken);
            }
            Err(rejection) => return Err(rejection),
        };
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err(Rejection::BodyTooLarge);
        }
        Ok(Some(caller))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[tokio::test]
    async fn bodies_in_flight_stay_within_the_budget() {
        let token = BearerToken::new("a".repeat(64)).unwrap();
        let local: SocketAddr = "127.0.0.1:7070".parse().unwrap();
        let guard = RequestGuard::new(local, token, 4 << 20).with_body_budget(5 << 20);
        let body = |len: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_LENGTH, len.parse().unwrap());
            headers
        };
        let first = guard.body_room(&body("4194304")).await;
        assert!(first.is_some());
        // A small body fits beside it, and a request without a body takes nothing.
        let small = guard.body_room(&body("1000")).await;
        assert!(small.is_some());
        assert!(guard.body_room(&HeaderMap::new()).await.is_none());
        drop(small);
        // Another 4 MiB body does not fit beside the first: it waits for room.
        let big = body("4194304");
        let second = guard.body_room(&big);
        let mut second = std::pin::pin!(second);
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), second.as_mut())
                .await
                .is_err()
        );
        drop(first);
        assert!(second.await.is_some());
        // A chunked body counts as the largest a body may be.
        let mut chunked = HeaderMap::new();
        chunked.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        assert_eq!(
            guard.body_room(&chunked).await.map(|p| p.num_permits()),
            Some(4096)
        );
    }
}

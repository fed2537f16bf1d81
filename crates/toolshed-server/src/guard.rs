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

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use toolshed_core::OwnerId;
use toolshed_host::StateStore;
use toolshed_host::identity::{Caller, TOKEN_PREFIX};

use crate::token::BearerToken;

/// Puts `guard` in front of every route of `router`. Serve the result with connect info
/// (`into_make_service_with_connect_info`, as [`serve_router`](crate::serve_router) does)
/// so the guard can limit failed logins per peer.
pub fn guarded(router: Router, guard: Arc<RequestGuard>) -> Router {
    router.layer(axum::middleware::from_fn_with_state(guard, check_request))
}

/// The header carrying an MCP session's id.
const MCP_SESSION: &str = "mcp-session-id";

/// MCP session ids and who opened each, with the ids in the order they opened.
type BoundSessions = (
    std::collections::HashMap<String, Opener>,
    std::collections::VecDeque<String>,
);

/// Who opened an MCP session.
#[derive(Debug, Clone)]
struct Opener {
    /// The agent token's id; `None`: the server's own token.
    token: Option<String>,
    /// What the session counts against: the token's owner (sub-owners as their owner),
    /// or `admin`.
    account: String,
}

/// The MCP sessions open, and how many may be.
pub struct McpSessionLimits {
    /// The MCP transport's sessions, asked whether one is still open and told to close one.
    pub sessions: Arc<toolshed_mcp::ReplicaSessions>,
    /// `[mcp] max_sessions`.
    pub max: usize,
    /// `[mcp] max_sessions_per_owner`.
    pub max_per_owner: usize,
    /// `[mcp] session_idle_secs`, for the message.
    pub idle_secs: u64,
}

impl std::fmt::Debug for McpSessionLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSessionLimits")
            .field("max", &self.max)
            .field("max_per_owner", &self.max_per_owner)
            .finish_non_exhaustive()
    }
}

/// The most MCP sessions whose token is remembered; beyond it the oldest are forgotten
/// (and a request on a forgotten session is refused: the client opens a new one).
const MAX_BOUND_SESSIONS: usize = 10_000;

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

/// The answer to a request naming an MCP session this server does not know (never opened,
/// deleted, expired): `404`, as the MCP transport asks, with a JSON-RPC error a client can
/// show, whatever the method (a second `DELETE` of one session included).
pub(crate) fn unknown_session(id: &str) -> Response {
    let shown: String = id.chars().take(80).collect();
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32001,
        "message": format!(
            "MCP session {shown:?} is not known here (it ended, expired or was never opened); \
             start a new session with initialize"
        ),
    }});
    (StatusCode::NOT_FOUND, axum::Json(reply)).into_response()
}

/// The `404` for a request of an MCP session this server does not have: one that names
/// another replica says so ([`session_elsewhere`]).
pub(crate) fn missing_session(id: &str, here: &str) -> Response {
    match toolshed_mcp::replica_of(id).filter(|home| *home != here) {
        Some(home) => {
            tracing::info!(session = %id, %home, "an MCP session's request reached another replica");
            session_elsewhere(id, home, here)
        }
        None => unknown_session(id),
    }
}

/// The `404` for a request of an MCP session that lives on replica `home`, not on this one.
pub(crate) fn session_elsewhere(id: &str, home: &str, here: &str) -> Response {
    let shown: String = id.chars().take(80).collect();
    let home: String = home.chars().take(63).collect();
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32001,
        "message": format!(
            "MCP session {shown:?} belongs to replica `{home}`, and this is replica `{here}`: a \
             load balancer must send a session's requests to the replica its id begins with (the \
             part before the first `.`). Start a new session with initialize, or use protocol \
             2026-07-28, which keeps no session and needs no affinity"
        ),
        "data": {"replica": home, "this_replica": here},
    }});
    (StatusCode::NOT_FOUND, axum::Json(reply)).into_response()
}

/// Why a request was refused before it reached a route.
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

/// Query parameters that look like credentials; a request carrying one is refused, so a
/// token never ends up in logs, browser history or a proxy's access log.
const TOKEN_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "api_key",
    "apikey",
    "key",
    "auth",
    "bearer",
    "authorization",
];

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
        let (status, kind, message) = self.parts();
        let body =
            serde_json::json!({"error": {"kind": kind, "message": message, "details": null}});
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
    agents: Option<Arc<StateStore>>,
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
    pub fn with_dashboard(mut self, sessions: Arc<crate::dashboard::Sessions>) -> Self {
        self.dashboard = Some(sessions);
        self
    }

    /// For a request authenticated by a dashboard cookie (no `Authorization` header) that
    /// changes something: whether it carries the session's CSRF token.
    fn check_csrf(
        &self,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        headers: &HeaderMap,
    ) -> Result<(), Rejection> {
        let Some(sessions) = &self.dashboard else {
            return Ok(());
        };
        let safe = matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS");
        // Where the cookie does not count, the token check refuses the request anyway.
        if safe
            || headers.contains_key(header::AUTHORIZATION)
            || !crate::dashboard::cookie_allowed(uri, headers)
        {
            return Ok(());
        }
        let Some(expected) = sessions.csrf_of(headers) else {
            return Ok(()); // no live cookie session: the token check decides
        };
        let sent = headers
            .get(crate::dashboard::CSRF_HEADER)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if toolshed_core::secret::constant_time_eq(sent, expected.as_bytes()) {
            Ok(())
        } else {
            Err(Rejection::MissingCsrf)
        }
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

    /// The caller a JWT authenticates, if OAuth is configured and it verifies.
    fn jwt_caller(&self, token: &str) -> Option<Caller> {
        let oauth = self.oauth.as_ref()?;
        if !toolshed_host::oauth::looks_like_jwt(token) {
            return None;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let jwks = oauth.jwks.read().unwrap_or_else(|e| e.into_inner());
        match toolshed_host::oauth::verify(token, &jwks, &oauth.config, now) {
            Ok(caller) => Some(caller),
            Err(refusal) => {
                if refusal == toolshed_host::oauth::Refusal::UnknownKey {
                    oauth.refresh.notify_one();
                }
                tracing::debug!(?refusal, "a bearer JWT was refused");
                None
            }
        }
    }

    /// Also accepts the agent tokens of `store` (`toolshed token create`), each checked
    /// against the database on every request, so a revoked token is refused at once.
    pub fn with_agent_tokens(mut self, store: Arc<StateStore>) -> Self {
        self.agents = Some(store);
        self
    }

    /// The scope a request needs, by route: `None` for what every token may do.
    fn check_scope(
        &self,
        caller: &Caller,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
    ) -> Result<(), Rejection> {
        let path = uri.path();
        let read = method == axum::http::Method::GET || method == axum::http::Method::HEAD;
        let scope = if let Some(rest) = path.strip_prefix("/api/v1/") {
            if rest.starts_with("approvals") {
                "approvals:answer"
            } else if rest.starts_with("audit") {
                "audit:read"
            } else if rest.starts_with("metrics") {
                // A Prometheus scraper's token needs nothing else.
                "metrics:read"
            } else if rest.starts_with("plugins") || rest.starts_with("mcp-servers") {
                if read { "tools:list" } else { "plugins:admin" }
            } else if (rest.starts_with("tools/") && rest.ends_with("/execute"))
                || rest.starts_with("jobs")
                || rest.starts_with("events")
                // The person behind a caller answers its calls' questions.
                || rest.starts_with("questions")
            {
                "tools:call"
            } else {
                "tools:list"
            }
        } else if path.starts_with("/proxy/") {
            "tools:call"
        } else {
            // `/mcp`: each request's method decides, in the MCP door.
            return Ok(());
        };
        if caller.allows(scope) {
            Ok(())
        } else {
            Err(Rejection::MissingScope(scope))
        }
    }

    /// The token id the MCP session `id` was opened with (`Some(None)`: the server's own
    /// token); `None` for a session not known here (never opened, ended, or forgotten past
    /// [`MAX_BOUND_SESSIONS`]).
    fn session_opener(&self, id: &str) -> Option<Opener> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.0.get(id).cloned()
    }

    /// Counts the session `id` just opened by `opener` against the limits; past one, closes
    /// it and answers `429` with the opener's own count and how to free room. Sessions that
    /// ended without a `DELETE` (closed while idle) are found and forgotten only when a
    /// limit seems reached, so the usual open costs no more than a count.
    async fn admit_session(&self, id: &str, opener: &Opener) -> Result<(), Response> {
        let Some(limits) = &self.mcp_limits else {
            self.bind_session(id, opener.clone());
            return Ok(());
        };
        // Counted and bound as one step, so that sessions opened together cannot all pass.
        let bind_if_room = |guard: &Self| {
            let mut sessions = guard.sessions.lock().unwrap_or_else(|e| e.into_inner());
            let mine = sessions
                .0
                .values()
                .filter(|o| o.account == opener.account)
                .count();
            let total = sessions.0.len();
            if total < limits.max && mine < limits.max_per_owner {
                let (map, order) = &mut *sessions;
                if map.insert(id.to_string(), opener.clone()).is_none() {
                    order.push_back(id.to_string());
                }
                Ok(())
            } else {
                Err((total, mine))
            }
        };
        if bind_if_room(self).is_ok() {
            return Ok(());
        }
        // Sessions that ended without a `DELETE` (closed while idle) are forgotten only now.
        let known: Vec<String> = {
            let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            sessions.0.keys().cloned().collect()
        };
        for known in known {
            if !limits.sessions.is_open(&known).await {
                self.unbind_session(&known);
            }
        }
        let Err((total, mine)) = bind_if_room(self) else {
            return Ok(());
        };
        let who = if opener.token.is_some() {
            format!("`{}`", opener.account)
        } else {
            "the admin token".into()
        };
        let free = format!(
            "end the sessions you no longer use (HTTP DELETE /mcp with their mcp-session-id), or wait: an idle one closes after {} s ([mcp] session_idle_secs)",
            limits.idle_secs
        );
        let message = if mine >= limits.max_per_owner {
            format!(
                "{who} has {mine} MCP sessions open, the most one owner may keep ([mcp] max_sessions_per_owner); {free}"
            )
        } else {
            format!(
                "{total} MCP sessions are open on this server, the most it keeps ([mcp] max_sessions); {mine} of them are {who}'s; {free}"
            )
        };
        limits.sessions.close(id).await;
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32000,
            "message": message,
            "data": {"kind": "rate_limited", "open": mine, "limit": limits.max_per_owner.min(limits.max)},
        }});
        let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(reply)).into_response();
        response.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("60"),
        );
        Err(response)
    }

    /// Limits the MCP sessions open at once, all together and per owner.
    pub fn with_mcp_limits(mut self, limits: McpSessionLimits) -> Self {
        self.mcp_limits = Some(limits);
        self
    }

    fn bind_session(&self, id: &str, opener: Opener) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *sessions;
        if map.insert(id.to_string(), opener).is_none() {
            order.push_back(id.to_string());
        }
        while order.len() > MAX_BOUND_SESSIONS {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    fn unbind_session(&self, id: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.0.remove(id);
        sessions.1.retain(|s| s != id);
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

    /// Seconds until `peer` may try again, when it is over the limit.
    fn blocked(&self, peer: IpAddr) -> Option<u64> {
        let failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let (count, since) = failures.get(&peer)?;
        let elapsed = since.elapsed();
        (*count >= self.failure_limit && elapsed < FAILURE_WINDOW)
            .then(|| (FAILURE_WINDOW - elapsed).as_secs().max(1))
    }

    fn record_failure(&self, peer: IpAddr) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() >= MAX_TRACKED_PEERS {
            failures.retain(|_, (_, since)| since.elapsed() < FAILURE_WINDOW);
            if failures.len() >= MAX_TRACKED_PEERS {
                failures.clear();
            }
        }
        let entry = failures
            .entry(peer)
            .or_insert((0, std::time::Instant::now()));
        if entry.1.elapsed() >= FAILURE_WINDOW {
            *entry = (0, std::time::Instant::now());
        }
        entry.0 += 1;
    }

    fn check_token(&self, uri: &axum::http::Uri, headers: &HeaderMap) -> Result<Caller, Rejection> {
        if headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .nth(1)
            .is_some()
        {
            return Err(Rejection::DuplicateAuthorization);
        }
        let Some(presented) = headers.get(header::AUTHORIZATION) else {
            // The dashboard's cookie stands for the admin token, where it may.
            return match &self.dashboard {
                Some(sessions)
                    if crate::dashboard::cookie_allowed(uri, headers)
                        && sessions.csrf_of(headers).is_some() =>
                {
                    Ok(Caller::admin(OwnerId::new(
                        toolshed_host::jobs::default_owner().0,
                    )))
                }
                _ => Err(Rejection::MissingToken),
            };
        };
        let presented = presented.as_bytes();
        let token = bearer_credentials(presented).ok_or(Rejection::WrongToken)?;
        if self.token.matches(token) {
            return Ok(Caller::admin(OwnerId::new(
                toolshed_host::jobs::default_owner().0,
            )));
        }
        let text = std::str::from_utf8(token).unwrap_or_default();
        let agent = match &self.agents {
            Some(store) if text.starts_with(TOKEN_PREFIX) => {
                store.authenticate(text).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot check an agent token");
                    None
                })
            }
            _ => None,
        };
        agent
            .map(|record| record.caller())
            .or_else(|| self.jwt_caller(text))
            .ok_or(Rejection::WrongToken)
    }

    /// The DNS-rebinding checks: `Host` and `Origin`.
    fn check_names(&self, headers: &HeaderMap) -> Result<(), Rejection> {
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
            && !self
                .extra_origins
                .iter()
                .any(|o| o.as_bytes().eq_ignore_ascii_case(origin.as_bytes()))
        {
            return Err(Rejection::ForeignOrigin);
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

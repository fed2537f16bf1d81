//! The server put together: the REST API, the MCP endpoint and the process proxy behind one
//! guard, served on a listener until shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolshed_host::{Event, Host};
use toolshed_mcp::Session;

use crate::guard::{RequestGuard, guarded};
use crate::listen::ConnectionLimits;
use crate::token::BearerToken;
use crate::workspaces::Routes;
use crate::{
    api, approvals, events, gateway, memories, metrics, openapi, proxy, questions, stream,
};

/// The path prefix of the REST API.
pub const API_PREFIX: &str = "/api/v1";

/// The path the MCP endpoint is mounted at.
pub const MCP_PATH: &str = "/mcp";

/// How long a stopping server waits for its cancelled jobs to end and say so.
pub(crate) const SHUTDOWN_DRAIN: Duration = Duration::from_secs(5);

/// The largest request body the server accepts by default: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What the server needs besides the host.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The token every request but `/api/v1/health` must present.
    pub token: BearerToken,
    /// What narrows the tools every MCP session sees.
    pub session: Session,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// How to open the workspaces agent tokens are pinned to, when they are not the one
    /// served; `None`: such tokens are refused.
    pub workspaces: Option<crate::Workspaces>,
}

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener could not say which address it is bound to.
    #[error("cannot read the bound address: {0}")]
    Address(#[source] std::io::Error),
    /// Accepting or serving connections failed.
    #[error("the HTTP server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// The whole router for a server bound to `local`. `stop` ends MCP sessions, event streams
/// and running jobs.
pub fn app(
    host: Arc<Host>,
    local: SocketAddr,
    options: ServerOptions,
    stop: CancellationToken,
) -> Router {
    app_draining(host, local, options, stop, Arc::default()).0
}

/// [`app`], and a token cancelled once `stop` has fired and the running jobs have ended
/// and announced it (at most [`SHUTDOWN_DRAIN`] later): connections must stay open until
/// then, so that event streams carry the news.
fn app_draining(
    host: Arc<Host>,
    local: SocketAddr,
    options: ServerOptions,
    stop: CancellationToken,
    draining: Arc<std::sync::atomic::AtomicBool>,
) -> (Router, CancellationToken) {
    let server_config = host.config().config.server.clone();
    let events = Arc::new(events::EventLog::persistent(
        host.event_journal().detached(),
    ));
    events.follow_other_servers(stop.clone());
    let jobs = host.jobs().clone();
    jobs.set_events(events.clone());
    // Due schedules run while the server does.
    {
        let schedules = host.run_schedules();
        let stop = stop.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            schedules.abort();
        });
    }
    // On shutdown, running jobs are cancelled first and their `job.cancelled` events go out
    // on the event streams; only then do the streams end.
    let streams_stop = CancellationToken::new();
    bridge_plugin_events(&host, events.clone(), streams_stop.clone());
    bridge_notices(&host, events.clone(), streams_stop.clone());
    {
        let jobs = jobs.clone();
        let stop = stop.clone();
        let streams_stop = streams_stop.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            jobs.drain(SHUTDOWN_DRAIN).await;
            streams_stop.cancel();
        });
    }
    let drained = streams_stop.clone();
    let metrics = metrics::Metrics::start(&host, stop.clone());
    let trees = Arc::new(tokio::sync::Semaphore::new(api::TREE_BUDGET_KIB as usize));
    let state = api::AppState {
        host: host.clone(),
        jobs,
        events,
        started: std::time::Instant::now(),
        stop: streams_stop,
        draining: draining.clone(),
        calls_stop: stop.clone(),
        trees: trees.clone(),
        streams: Arc::new(stream::StreamSlots::new(
            server_config.max_event_streams,
            server_config.max_event_streams_per_owner,
        )),
    };
    let samples = crate::stats::Samples::start(state.clone(), stop.clone());
    let api = Router::new()
        .route("/health", get(api::health))
        .route("/metrics", get(metrics::metrics))
        .route("/plugins", get(api::plugins).post(api::install))
        .route(
            "/plugins/{id}/grants",
            get(api::get_grants).post(api::change_grants),
        )
        .route("/plugins/{id}", get(api::plugin).delete(api::uninstall))
        .route("/plugins/{id}/enable", post(api::enable))
        .route("/plugins/{id}/disable", post(api::disable))
        .route("/plugins/{id}/pause", post(api::pause))
        .route("/plugins/{id}/resume", post(api::resume))
        .route("/plugins/{id}/reload", post(api::reload))
        .route("/plugins/{id}/verify", get(api::verify))
        .route("/plugins/{id}/health", get(api::plugin_health))
        .route("/plugins/{id}/icon", get(api::plugin_icon))
        .route("/plugins/{id}/tools", get(api::plugin_tools))
        .route("/plugins/{id}/tools/execute", post(api::execute_in_plugin))
        .route(
            "/plugins/{id}/config",
            get(api::get_config).put(api::put_config),
        )
        .route("/mcp-servers", get(gateway::list).post(gateway::add))
        .route("/mcp-servers/import", post(gateway::import))
        .route(
            "/mcp-servers/{name}",
            get(gateway::get).delete(gateway::remove),
        )
        .route("/mcp-servers/{name}/accept", post(gateway::accept))
        .route("/tools", get(api::tools))
        .route("/tools/search", get(api::search_tools))
        .route("/tools/groups", get(api::tool_groups))
        .route("/tools/{name}", get(api::tool))
        .route("/tools/{name}/execute", post(api::execute))
        .route("/memories", get(memories::list).post(memories::store))
        .route("/memories/search", get(memories::search))
        .route(
            "/memories/{id}",
            get(memories::get).delete(memories::delete),
        )
        .route("/memories/{id}/restore", post(memories::restore))
        .route("/audit", get(approvals::audit))
        .route("/approvals", get(approvals::list))
        .route("/approvals/{id}", get(approvals::get))
        .route("/approvals/{id}/approve", post(approvals::approve))
        .route("/approvals/{id}/deny", post(approvals::deny))
        .route("/questions", get(questions::list))
        .route("/questions/{id}/answer", post(questions::answer))
        .route("/jobs", get(api::jobs))
        .route("/jobs/{id}", get(api::job))
        .route("/jobs/{id}/cancel", post(api::cancel_job))
        .route("/todos", get(api::todos))
        .route("/schedules", get(api::schedules))
        .route("/stats", get(crate::stats::stats))
        .route("/commands", get(api::commands))
        .route("/commands/{name}", post(api::run_command))
        .route("/commands/{name}/{id}", post(api::run_command_on))
        .route(
            "/env",
            get(api::get_env).put(api::put_env).delete(api::clear_env),
        )
        .route("/upload", post(api::upload))
        .route("/uploads/{file}", get(api::download_upload))
        .route("/running", get(api::running))
        .route("/running/{plugin}/{id}/output", get(api::running_output))
        .route("/running/{plugin}/{id}/stop", post(api::stop_running))
        .route("/events", get(stream::sse))
        .route("/events/ws", get(stream::ws))
        .route("/openapi.json", get(openapi::serve))
        .fallback(api::no_route)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(axum::Extension(metrics))
        .layer(axum::Extension(samples))
        .with_state(state);
    let sandbox = &host.config().config.sandbox;
    let info = serde_json::json!({
        "workspace": host.workspace().display().to_string(),
        "sandbox": {"mode": sandbox.mode, "network": sandbox.network},
    });
    let ports = host.services().ports.clone();
    let tokens = host.tokens().detached();
    let replica: Arc<str> = host.config().config.server.replica_name().into();
    let net = host.services().net.clone();
    let mcp_config = host.config().config.mcp.clone();
    let workspace = host.workspace_name().to_string();
    let scan = crate::mcp_request::Scan {
        host: host.clone(),
        max_body_bytes: options.max_body_bytes,
        trees,
    };
    let (mcp, mcp_sessions) = toolshed_mcp::streamable_http_service(
        host,
        options.session,
        options.max_body_bytes,
        stop.clone(),
    );
    let mcp = Router::new()
        .nest_service(MCP_PATH, mcp)
        .layer(axum::middleware::from_fn_with_state(
            scan,
            crate::mcp_request::leave_out_oversized,
        ))
        .layer(axum::middleware::from_fn(
            crate::mcp_reply::single_reply_as_json,
        ))
        .layer(axum::middleware::from_fn_with_state(
            replica.clone(),
            mcp_statuses,
        ));
    let dashboard = Arc::new(crate::dashboard::Sessions::default());
    let routes = Router::new()
        // For load balancers and container probes: no token, and nothing but "ok".
        .route("/health", get(api::liveness))
        .merge(crate::dashboard::routes(
            options.token.clone(),
            dashboard.clone(),
            info,
        ))
        .merge(proxy::routes(ports))
        .merge(mcp)
        .nest(API_PREFIX, api)
        .layer(axum::extract::DefaultBodyLimit::max(options.max_body_bytes));
    let guard = RequestGuard::new(local, options.token, options.max_body_bytes)
        .with_body_budget(server_config.max_inflight_body_bytes)
        .with_agent_tokens(tokens)
        .with_workspace(workspace)
        .with_open_paths(
            &[
                &["/api/v1/health", "/health"][..],
                crate::dashboard::OPEN_PATHS,
            ]
            .concat(),
        )
        .with_dashboard(dashboard)
        .with_draining(draining)
        .with_mcp_limits(crate::guard::McpSessionLimits {
            sessions: mcp_sessions,
            max: mcp_config.max_sessions.max(1),
            max_per_owner: mcp_config.max_sessions_per_owner.max(1),
            idle_secs: mcp_config.session_idle_secs,
        })
        .with_replica(replica)
        .with_failure_limit(server_config.max_auth_failures)
        .with_extra_names(&server_config.allowed_hosts, &server_config.allowed_origins);
    let guard = with_oauth(guard, server_config.oauth.clone(), net, &stop);
    (guarded(routes, Arc::new(guard)), drained)
}

/// `guard` accepting the JWTs of `[server.oauth]` too, when it is set: the issuer's keys
/// are fetched, and refreshed in the background until `stop`.
pub(crate) fn with_oauth(
    guard: RequestGuard,
    config: Option<toolshed_host::oauth::OAuthConfig>,
    net: Arc<toolshed_ops::NetClient>,
    stop: &CancellationToken,
) -> RequestGuard {
    let Some(config) = config else {
        return guard;
    };
    let oauth = crate::guard::OAuth {
        config,
        jwks: Arc::default(),
        refresh: Arc::default(),
    };
    tokio::spawn(crate::oauth::refresh_keys(
        net,
        oauth.config.clone(),
        oauth.jwks.clone(),
        oauth.refresh.clone(),
        stop.clone(),
    ));
    guard.with_oauth(oauth)
}

/// Serves [`app`] on `listener` until `shutdown` completes; then event streams end, jobs
/// and MCP calls are cancelled.
pub async fn serve(
    host: Arc<Host>,
    listener: TcpListener,
    options: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let server = &host.config().config.server;
    let descriptors = toolshed_ops::descriptor_limit();
    let max_connections = crate::listen::connection_cap(server.max_connections, descriptors);
    if max_connections < server.max_connections {
        tracing::warn!(
            max_connections,
            configured = server.max_connections,
            descriptors,
            "at most {max_connections} connections at once: half of the {descriptors} file descriptors this process may open; raise the hard limit (ulimit -Hn, LimitNOFILE=) for more"
        );
    }
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(server.header_timeout_secs.max(1)),
        body_timeout: Duration::from_secs(server.body_timeout_secs.max(1)),
        max_connections,
    };
    // On the signal: refuse new requests (and say so to health checks), let the calls
    // already running finish within the grace period, then cancel what is left.
    let draining: Arc<std::sync::atomic::AtomicBool> = Arc::default();
    let grace = Duration::from_secs(server.shutdown_grace_secs);
    let shutdown = {
        let (host, draining) = (host.clone(), draining.clone());
        async move {
            shutdown.await;
            draining.store(true, std::sync::atomic::Ordering::SeqCst);
            let running = host.dispatcher().calls_in_flight();
            tracing::info!(
                running,
                grace_secs = grace.as_secs(),
                "shutting down: no new requests; waiting for the calls running"
            );
            if !host.dispatcher().until_idle(grace).await {
                tracing::warn!(
                    left = host.dispatcher().calls_in_flight(),
                    "the grace period is over: cancelling the calls still running"
                );
            }
        }
    };
    let others: Arc<std::sync::OnceLock<Arc<Routes>>> = Arc::default();
    let served =
        serve_with(
            listener,
            limits,
            |local, stop| {
                let Some(open) = options.workspaces.clone() else {
                    let (router, drained) = app_draining(host, local, options, stop, draining);
                    return (router, Some(drained));
                };
                // The workspaces opened for pinned tokens are served alike, without routing
                // of their own.
                let each = ServerOptions {
                    workspaces: None,
                    ..options.clone()
                };
                let (sub_stop, sub_draining) = (stop.clone(), draining.clone());
                let routes = Arc::new(Routes::new(
                    host.workspace_name().to_string(),
                    host.tokens().detached(),
                    open,
                    move |other| {
                        let stop = sub_stop.child_token();
                        app_draining(other, local, each.clone(), stop, sub_draining.clone()).0
                    },
                ));
                let _ = others.set(routes.clone());
                let (router, drained) = app_draining(host, local, options, stop, draining);
                // Before any routing: the request reaches the other router as it came.
                let router = Router::new().fallback_service(router).layer(
                    axum::middleware::from_fn_with_state(routes, crate::workspaces::route),
                );
                (router, Some(drained))
            },
            shutdown,
        )
        .await;
    if let Some(routes) = others.get() {
        routes.shutdown().await;
    }
    served
}

/// Serves the router `make` builds for the bound address on `listener`, with connect info
/// (for the guard's per-address limit) and the default connection limits of
/// `[server]`, until `shutdown` completes; then the token `make` was given is cancelled, so
/// sessions and streams end.
pub async fn serve_router(
    listener: TcpListener,
    make: impl FnOnce(SocketAddr, CancellationToken) -> Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let defaults = toolshed_host::config::ServerConfig::default();
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(defaults.header_timeout_secs),
        body_timeout: Duration::from_secs(defaults.body_timeout_secs),
        max_connections: crate::listen::connection_cap(
            defaults.max_connections,
            toolshed_ops::descriptor_limit(),
        ),
    };
    serve_with(
        listener,
        limits,
        |local, stop| (make(local, stop), None),
        shutdown,
    )
    .await
}

/// [`serve_router`], where `make` may also return a token that must fire before
/// connections are closed on shutdown.
async fn serve_with(
    listener: TcpListener,
    limits: ConnectionLimits,
    make: impl FnOnce(SocketAddr, CancellationToken) -> (Router, Option<CancellationToken>),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(ServeError::Address)?;
    let stop = CancellationToken::new();
    let (router, drained) = make(local, stop.child_token());
    crate::listen::serve_connections(listener, router, limits, async move {
        shutdown.await;
        stop.cancel();
        if let Some(drained) = drained {
            drained.cancelled().await;
        }
    })
    .await
    .map_err(ServeError::Serve)
}

/// The MCP transport answers a body that is not JSON-RPC with `415` (as if the media type
/// were wrong) and a body cut off by the body timeout with `500`: these become a `400`
/// carrying a JSON-RPC parse error, and a `408`. A session it no longer has (expired while
/// idle) gets the same JSON-RPC `404` as one never opened, and a session ended by `DELETE`
/// answers `204 No Content` rather than `202 Accepted`: it is gone when the reply leaves.
///
/// A session id that names another replica (`<replica>.<id>`, see `[server] replica`) gets
/// a `404` that says where the session lives: a load balancer without affinity sent it here.
async fn mcp_statuses(
    axum::extract::State(replica): axum::extract::State<Arc<str>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let deleting = request.method() == axum::http::Method::DELETE;
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let json = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    let response = next.run(request).await;
    let status = response.status();
    if deleting && status == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    if let Some(id) = &session
        && status == StatusCode::NOT_FOUND
    {
        return crate::guard::missing_session(id, &replica);
    }
    if !(status == StatusCode::UNSUPPORTED_MEDIA_TYPE && json
        || status == StatusCode::INTERNAL_SERVER_ERROR)
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return (parts.status, parts.headers).into_response();
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
            "code": -32700,
            "message": format!("parse error: {}", text.trim_start_matches("fail to deserialize request body ")),
        }});
        return (StatusCode::BAD_REQUEST, axum::Json(reply)).into_response();
    }
    if text.contains(crate::listen::BODY_TIMED_OUT) {
        return (StatusCode::REQUEST_TIMEOUT, text).into_response();
    }
    axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// Copies what tools and plugins announce (`process.exited`, `command_session.closed`,
/// `plugin.<id>.<type>`) into the API's event log, each for its owner.
fn bridge_notices(host: &Host, events: Arc<events::EventLog>, stop: CancellationToken) {
    follow(
        host.services().notices.subscribe(),
        stop,
        events,
        |events, notice| {
            events.publish(&notice.kind, None, notice.owner.as_deref(), notice.data);
        },
    );
}

/// Calls `on` with each message of `receiver` until `stop` fires or the sender is gone. A
/// burst it fell behind on is skipped, and the streams are told with an `events.missed`
/// event saying how many (their clients then refetch state, as for any missed events).
fn follow<T: Clone + Send + 'static>(
    mut receiver: tokio::sync::broadcast::Receiver<T>,
    stop: CancellationToken,
    events: Arc<events::EventLog>,
    mut on: impl FnMut(&events::EventLog, T) + Send + 'static,
) {
    tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return,
                received = receiver.recv() => received,
            };
            match received {
                Ok(message) => on(&events, message),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "the event log fell behind; events were skipped");
                    events.publish(
                        "events.missed",
                        None,
                        None,
                        serde_json::json!({"dropped": n, "message": "the server fell behind and skipped events; refetch state"}),
                    );
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

/// Copies the host's plugin state changes into the API's event log.
fn bridge_plugin_events(host: &Host, events: Arc<events::EventLog>, stop: CancellationToken) {
    follow(
        host.events().subscribe(),
        stop,
        events,
        |events, event| match event {
            Event::PluginStateChanged {
                plugin_id,
                state,
                reason,
            } => events.publish(
                "plugin.state_changed",
                None,
                None,
                serde_json::json!({"plugin_id": plugin_id, "state": state, "reason": reason}),
            ),
            Event::ApprovalRequested { request } => events.publish(
                "approval.requested",
                None,
                Some(&request.owner.clone()),
                serde_json::json!(request),
            ),
            Event::ApprovalResolved { request } => events.publish(
                "approval.resolved",
                None,
                Some(&request.owner.clone()),
                serde_json::json!(request),
            ),
            _ => {}
        },
    );
}

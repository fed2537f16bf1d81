//! The HTTP server of `toolshed serve`: the REST API under `/api/v1`, the MCP endpoint at
//! `/mcp` and the process proxy at `/proxy/<id>/`, all behind one guard (bearer token,
//! loopback `Host` and `Origin`, size limits, a limit on failed logins per address).
//!
//! Every tool call goes through the host's pipeline as door `rest`, owned by the
//! `X-Toolshed-Owner` header's owner (default `rest`). Errors have one shape,
//! `{"error": {"kind", "message", "details"}}`; a tool that ran and failed is a `200` with
//! `is_error: true`, exactly as over MCP. See `docs/rest.md`.

#![warn(missing_docs, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolshed_host::{Event, Host};
use toolshed_mcp::{BearerToken, HttpOptions, RequestGuard, ServeError, Session};

pub mod api;
pub mod error;
pub mod events;
pub mod jobs;
pub mod metrics;
pub mod openapi;
pub mod stream;

pub use api::AppState;
pub use error::ApiError;

/// The path prefix of the REST API.
pub const API_PREFIX: &str = "/api/v1";

/// What the server needs besides the host.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The token every request but `/api/v1/health` must present.
    pub token: BearerToken,
    /// What narrows the tools every MCP session sees.
    pub session: Session,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
}

/// The whole router for a server bound to `local`. `stop` ends MCP sessions, event streams
/// and running jobs.
pub fn app(
    host: Arc<Host>,
    local: SocketAddr,
    options: ServerOptions,
    stop: CancellationToken,
) -> Router {
    let config = &host.config().config.jobs;
    let server_config = host.config().config.server.clone();
    let events = Arc::new(events::EventLog::default());
    let jobs = Arc::new(jobs::Jobs::new(
        Duration::from_secs(config.retention_secs),
        config.max_jobs,
        events.clone(),
    ));
    bridge_plugin_events(&host, events.clone(), stop.clone());
    {
        let jobs = jobs.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            jobs.cancel_all();
        });
    }
    let metrics = metrics::Metrics::start(&host, stop.clone());
    let state = AppState {
        host: host.clone(),
        jobs,
        events,
        started: std::time::Instant::now(),
        stop: stop.clone(),
    };
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
        .route("/plugins/{id}/reload", post(api::reload))
        .route("/plugins/{id}/tools", get(api::plugin_tools))
        .route(
            "/plugins/{id}/config",
            get(api::get_config).put(api::put_config),
        )
        .route("/tools", get(api::tools))
        .route("/tools/{name}", get(api::tool))
        .route("/tools/{name}/execute", post(api::execute))
        .route("/jobs", get(api::jobs))
        .route("/jobs/{id}", get(api::job))
        .route("/jobs/{id}/cancel", post(api::cancel_job))
        .route("/events", get(stream::sse))
        .route("/events/ws", get(stream::ws))
        .route("/openapi.json", get(openapi::serve))
        .fallback(api::no_route)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(axum::Extension(metrics))
        .with_state(state);
    let http = HttpOptions {
        token: options.token.clone(),
        session: options.session,
        max_body_bytes: options.max_body_bytes,
    };
    let routes = toolshed_mcp::routes(host, &http, stop)
        .nest(API_PREFIX, api)
        .layer(axum::extract::DefaultBodyLimit::max(options.max_body_bytes));
    let guard = RequestGuard::new(local, options.token, options.max_body_bytes)
        .with_open_paths(&["/api/v1/health"])
        .with_failure_limit(server_config.max_auth_failures)
        .with_extra_names(&server_config.allowed_hosts, &server_config.allowed_origins);
    toolshed_mcp::guarded(routes, Arc::new(guard))
}

/// Serves [`app`] on `listener` until `shutdown` completes; then event streams end, jobs
/// and MCP calls are cancelled.
pub async fn serve(
    host: Arc<Host>,
    listener: TcpListener,
    options: ServerOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    toolshed_mcp::serve_router(
        listener,
        |local, stop| app(host, local, options, stop),
        shutdown,
    )
    .await
}

/// Copies the host's plugin state changes into the API's event log.
fn bridge_plugin_events(host: &Host, events: Arc<events::EventLog>, stop: CancellationToken) {
    let mut receiver = host.events().subscribe();
    tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                () = stop.cancelled() => return,
                received = receiver.recv() => received,
            };
            match received {
                Ok(Event::PluginStateChanged {
                    plugin_id,
                    state,
                    reason,
                }) => events.publish(
                    "plugin.state_changed",
                    None,
                    None,
                    serde_json::json!({"plugin_id": plugin_id, "state": state, "reason": reason}),
                ),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

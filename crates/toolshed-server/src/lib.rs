//! Everything HTTP of `toolshed serve`: the REST API under `/api/v1`, the MCP endpoint at
//! `/mcp` and the process proxy at `/proxy/<id>/`, all behind one guard.
//!
//! What this crate owns:
//!
//! - the guard ([`RequestGuard`], put in front of a router by [`guarded`]): the bearer
//!   token, a loopback `Host` and `Origin` against DNS rebinding, header and body limits, no
//!   credentials in the query string, and a limit on failed logins per address;
//! - the token itself ([`BearerToken`]), kept in `<data-dir>/token` with mode 0600;
//! - the REST API under `/api/v1` (the private `api` module, one file per resource; what
//!   it answers, as types, in `reply`), async jobs, live events over SSE and WebSocket,
//!   Prometheus metrics and the OpenAPI document ([`openapi_document`], its [`ROUTES`]),
//!   whose schemas of the answers are generated from those types;
//! - the process proxy, `/proxy/<id>/`, forwarding to a background process's port;
//! - agent tokens pinned to another workspace ([`Workspaces`]): that workspace's host,
//!   opened at first use, answers their requests;
//! - putting it together ([`app`]) and serving it ([`serve`], [`serve_router`]).
//! - the gRPC door ([`grpc`], feature `grpc`): the plugin manager's service of
//!   `proto/toolshed/v1/plugin_manager.proto` on its own port, behind the same guard.
//!
//! The MCP protocol is not here: `/mcp` mounts the service
//! [`toolshed_mcp::streamable_http_service`] builds, behind the same guard.
//!
//! Every tool call goes through the host's pipeline as door `rest`, owned by the
//! `X-Toolshed-Owner` header's owner (default `rest`). Errors have one shape,
//! `{"error": {"kind", "message", "details"}}`; a tool that ran and failed is a `200` with
//! `is_error: true`, exactly as over MCP. See `docs/rest.md`.
//!
//! ```no_run
//! # async fn demo(host: std::sync::Arc<toolshed_host::Host>) -> Result<(), Box<dyn std::error::Error>> {
//! use toolshed_server::{BearerToken, DEFAULT_MAX_BODY_BYTES, ServerOptions};
//! let data_dir = host.data_dir().to_path_buf();
//! let token = tokio::task::spawn_blocking(move || BearerToken::load_or_create(&data_dir)).await??;
//! let options = ServerOptions {
//!     token,
//!     session: toolshed_mcp::Session::default(),
//!     max_body_bytes: DEFAULT_MAX_BODY_BYTES,
//!     workspaces: None,
//! };
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7070").await?;
//! toolshed_server::serve(host, listener, options, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```

mod api;
mod approvals;
mod dashboard;
mod error;
mod event_writer;
mod events;
mod gateway;
#[cfg(feature = "grpc")]
pub mod grpc;
mod guard;
mod listen;
mod mcp_reply;
mod mcp_request;
mod memories;
mod metrics;
mod oauth;
mod openapi;
mod proxy;
mod questions;
mod reply;
mod serve;
mod stats;
mod stream;
mod token;
mod workspaces;

pub use dashboard::{CODE_LIFETIME, login_code};
pub use error::ApiError;
pub use guard::{
    FAILURE_WINDOW, MAX_AUTH_FAILURES, MAX_HEADER_BYTES, Rejection, RequestGuard, guarded,
};
pub use listen::{ConnectionLimits, connection_cap};
pub use openapi::{ROUTES, document as openapi_document};
pub use serve::{
    API_PREFIX, DEFAULT_MAX_BODY_BYTES, MCP_PATH, ServeError, ServerOptions, app, serve,
    serve_router,
};
pub use token::{BearerToken, TOKEN_FILE, TokenError};
pub use workspaces::{MAX_WORKSPACES, OpenError, Workspaces};

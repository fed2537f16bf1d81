//! The MCP door: toolshed's tools served over the Model Context Protocol.
//!
//! The door is thin. [`McpServer`] lists the tools the connection may see and turns each
//! `tools/call` into a [`CallRequest`](toolshed_host::CallRequest) for the host's pipeline;
//! review, validation, policy, hooks, deadlines and the audit all happen there. What the
//! door owns is the protocol: how a [`ToolSpec`](toolshed_core::ToolSpec) looks as an MCP
//! tool, how a result or a [`ToolError`](toolshed_core::ToolError) looks as a
//! `CallToolResult`, and turning the call's progress into `notifications/progress`.
//!
//! The same server is served over streamable HTTP by [`serve_http`], behind a
//! [`BearerToken`] and a DNS-rebinding guard ([`RequestGuard`]).
//!
//! ```no_run
//! # async fn demo(host: std::sync::Arc<toolshed_host::Host>) -> Result<(), Box<dyn std::error::Error>> {
//! use toolshed_mcp::{McpServer, Session};
//! let session = Session { profile: None, selection: None };
//! toolshed_mcp::serve_stdio(McpServer::new(host, session), std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```

mod convert;
mod http;
mod progress;
mod proxy;
mod server;
mod stdio;
mod streamable_http;
mod token;

pub use http::{
    DEFAULT_MAX_BODY_BYTES, FAILURE_WINDOW, HttpOptions, MAX_AUTH_FAILURES, MAX_HEADER_BYTES,
    MCP_PATH, Rejection, RequestGuard, guarded, router, routes, serve_http, serve_router,
};
pub use server::{
    MAX_OWNER_LEN, McpServer, OWNER_HEADER, OWNER_META_KEY, SHARED_HTTP_OWNER, Session,
    selection_from_globs, valid_owner_handle,
};
pub use stdio::{ServeError, serve_stdio};
pub use streamable_http::{McpHttpService, streamable_http_service};
pub use token::{BearerToken, TOKEN_FILE, TokenError};

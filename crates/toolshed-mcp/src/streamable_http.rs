//! MCP over streamable HTTP: the transport, with nothing in front of it.
//!
//! rmcp's [`StreamableHttpService`] speaks the protocol. This module only says how a
//! session is made: each MCP session gets its own [`McpServer`], so its own owner, and
//! read-before-edit state never leaks between clients. Who may reach the service (the
//! bearer token, the `Host` and `Origin` checks, the size limits) is the business of the
//! HTTP server that mounts it, `toolshed-server`.

use std::sync::Arc;

use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use toolshed_host::Host;

use crate::{McpServer, Session};

/// The tower service that answers MCP over streamable HTTP; mount it at one path (the HTTP
/// server uses `/mcp`).
pub type McpHttpService = StreamableHttpService<McpServer, LocalSessionManager>;

/// The streamable-HTTP MCP service for `host`: every session it starts sees the tools
/// `session` narrows to. Bodies larger than `max_body_bytes` are refused while they stream
/// in; a session idle for `[mcp] session_idle_secs` is closed (and what its own owner kept
/// running ends, see [`McpServer`]); cancelling `stop` ends every session and stream.
pub fn streamable_http_service(
    host: Arc<Host>,
    session: Session,
    max_body_bytes: usize,
    stop: CancellationToken,
) -> McpHttpService {
    let idle = host.config().config.mcp.session_idle_secs.max(1);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(idle));
    let config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(stop);
    StreamableHttpService::new(
        move || {
            let which = format!("the directory {}", host.workspace().display());
            let server = McpServer::new(host.clone(), session.clone())
                .with_instructions(crate::instructions(&which));
            tracing::info!(owner = %server.owner(), "new MCP session over HTTP");
            Ok(server)
        },
        sessions.into(),
        config,
    )
}

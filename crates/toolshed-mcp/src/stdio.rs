//! Serving one client over standard input and output.

use rmcp::ServiceExt;
use rmcp::service::{QuitReason, ServerInitializeError};

use crate::McpServer;

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client's first messages were not a valid start of a session.
    #[error("the MCP client did not start a session: {0}")]
    Start(String),
    /// The session's task failed.
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// Serves `server` on stdin/stdout until the client closes stdin. Only JSON-RPC is
/// written to stdout; a client that leaves before starting a session is a clean end.
pub async fn serve_stdio(server: McpServer) -> Result<(), ServeError> {
    let transport = rmcp::transport::stdio_pipes();
    let running = match server.serve(transport).await {
        Ok(running) => running,
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(ServeError::Start(e.to_string())),
    };
    match running.waiting().await {
        Ok(QuitReason::JoinError(e)) => Err(ServeError::Session(e.to_string())),
        Ok(_) => Ok(()),
        Err(e) => Err(ServeError::Session(e.to_string())),
    }
}

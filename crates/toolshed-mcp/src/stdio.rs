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

/// Serves `server` on stdin/stdout until the client closes stdin or `shutdown` completes
/// (a signal, or the parent process gone). Only JSON-RPC is written to stdout; a client
/// that leaves before starting a session is a clean end.
pub async fn serve_stdio(
    server: McpServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let transport = rmcp::transport::stdio_pipes();
    tokio::pin!(shutdown);
    let running = tokio::select! {
        started = server.serve(transport) => match started {
            Ok(running) => running,
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Start(e.to_string())),
        },
        () = &mut shutdown => return Ok(()),
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = shutdown => {
            cancel.cancel();
            waiting.await
        }
    };
    match ended {
        Ok(QuitReason::JoinError(e)) => Err(ServeError::Session(e.to_string())),
        Ok(_) => Ok(()),
        Err(e) => Err(ServeError::Session(e.to_string())),
    }
}

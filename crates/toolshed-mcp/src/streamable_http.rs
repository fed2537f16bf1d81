//! MCP over streamable HTTP: the transport, with nothing in front of it.
//!
//! rmcp's [`StreamableHttpService`] speaks the protocol. This module only says how a
//! session is made: each MCP session gets its own [`McpServer`], so its own owner, and
//! read-before-edit state never leaks between clients. Who may reach the service (the
//! bearer token, the `Host` and `Origin` checks, the size limits) is the business of the
//! HTTP server that mounts it, `toolshed-server`.

use std::sync::Arc;

use std::time::Duration;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use toolshed_host::Host;

use crate::{McpServer, Session};

/// The tower service that answers MCP over streamable HTTP; mount it at one path (the HTTP
/// server uses `/mcp`).
pub type McpHttpService = StreamableHttpService<McpServer, ReplicaSessions>;

/// The sessions of one server, their ids beginning with the server's replica name
/// (`<replica>.<id>`): rmcp's in-memory sessions, with the name put on the ids handed out
/// and taken off the ids that come back.
pub struct ReplicaSessions {
    inner: LocalSessionManager,
    prefix: String,
}

impl ReplicaSessions {
    /// The sessions of replica `replica`.
    pub fn new(inner: LocalSessionManager, replica: &str) -> Self {
        Self {
            inner,
            prefix: format!("{replica}."),
        }
    }

    /// The id rmcp knows the session by; an id of another replica stays as it is, and so
    /// is not found.
    fn local(&self, id: &SessionId) -> SessionId {
        match id.strip_prefix(&self.prefix) {
            Some(rest) => rest.into(),
            None => id.clone(),
        }
    }
}

impl ReplicaSessions {
    /// Whether the session `id` (as handed out) is still open: not ended by its client,
    /// closed while idle, or stopped.
    pub async fn is_open(&self, id: &str) -> bool {
        let id: SessionId = id.into();
        self.has_session(&id).await.unwrap_or(false)
    }

    /// Closes the session `id` (as handed out): what its own owner kept running ends.
    pub async fn close(&self, id: &str) {
        let id: SessionId = id.into();
        let _ = self.close_session(&id).await;
    }
}

/// The replica an MCP session id names: what comes before its first `.`.
pub fn replica_of(session_id: &str) -> Option<&str> {
    session_id.split_once('.').map(|(replica, _)| replica)
}

type Inner = LocalSessionManager;

/// A stream of rmcp's, boxed: its type names the borrowed id it was made with, the box
/// does not (the stream itself is `'static`).
type Messages = std::pin::Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync + 'static>>;

fn boxed(stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static) -> Messages {
    Box::pin(stream)
}

impl SessionManager for ReplicaSessions {
    type Error = <Inner as SessionManager>::Error;
    type Transport = <Inner as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        Ok((format!("{}{id}", self.prefix).into(), transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner
            .initialize_session(&self.local(id), message)
            .await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(&self.local(id)).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(&self.local(id)).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let local = self.local(id);
        Ok(boxed(self.inner.create_stream(&local, message).await?))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(&self.local(id), message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let local = self.local(id);
        Ok(boxed(self.inner.create_standalone_stream(&local).await?))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let local = self.local(id);
        Ok(boxed(self.inner.resume(&local, last_event_id).await?))
    }

    fn event_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}

/// The streamable-HTTP MCP service for `host`: every session it starts sees the tools
/// `session` narrows to. Bodies larger than `max_body_bytes` are refused while they stream
/// in; a session idle for `[mcp] session_idle_secs` is closed (and what its own owner kept
/// running ends, see [`McpServer`]); cancelling `stop` ends every session and stream.
/// Also returns the sessions, for the HTTP server to count and close.
pub fn streamable_http_service(
    host: Arc<Host>,
    session: Session,
    max_body_bytes: usize,
    stop: CancellationToken,
) -> (McpHttpService, Arc<ReplicaSessions>) {
    let idle = host.config().config.mcp.session_idle_secs.max(1);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(idle));
    let sessions = Arc::new(ReplicaSessions::new(
        sessions,
        &host.config().config.server.replica_name(),
    ));
    let config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(stop);
    let service = StreamableHttpService::new(
        move || {
            // As its file tools name it: a remote workspace's URL; and its further
            // roots, when it has some.
            let files = &host.services().ops.files;
            let mut which = format!("the directory {}", files.root_display());
            let further = files.further_roots();
            if !further.is_empty() {
                which.push_str(
                    " (with further roots, whose files the tools reach as @NAME/path and where a command runs with workdir @NAME:",
                );
                for (name, path) in further {
                    which.push_str(&format!(" @{name} = {path}"));
                }
                which.push(')');
            }
            let server = McpServer::new(host.clone(), session.clone())
                .with_instructions(crate::instructions(&which));
            tracing::info!(owner = %server.owner(), "new MCP session over HTTP");
            Ok(server)
        },
        sessions.clone(),
        config,
    );
    (service, sessions)
}

//! The MCP door: toolshed's tools served over the Model Context Protocol.
//!
//! The door is thin. [`McpServer`] lists the tools the connection may see and turns each
//! `tools/call` into a [`CallRequest`](toolshed_host::CallRequest) for the host's pipeline;
//! review, validation, policy, hooks, deadlines and the audit all happen there. What the
//! door owns is the protocol: how a [`ToolSpec`](toolshed_core::ToolSpec) looks as an MCP
//! tool, how a result or a [`ToolError`](toolshed_core::ToolError) looks as a
//! `CallToolResult`, turning the call's progress into `notifications/progress`, and which
//! owner a connection's calls run as ([`OWNER_HEADER`], [`OWNER_META_KEY`]).
//!
//! Two transports: [`serve_stdio`] serves one client over standard input and output, and
//! [`streamable_http_service`] builds the streamable-HTTP service, a session per client.
//! That service has no guard of its own: the HTTP server (`toolshed-server`) mounts it at
//! `/mcp` behind its bearer token and its `Host`/`Origin` checks.
//!
//! ```no_run
//! # async fn demo(host: std::sync::Arc<toolshed_host::Host>) -> Result<(), Box<dyn std::error::Error>> {
//! use toolshed_mcp::{McpServer, Session};
//! let session = Session::default();
//! toolshed_mcp::serve_stdio(McpServer::new(host, session), std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

mod approve;
mod convert;
mod discover;
mod input;
mod logging;
mod progress;
mod sampling;
mod server;
mod stdio;
mod streamable_http;
mod tasks;

pub use convert::listed_tool;
pub use server::{
    CatalogMode, ClientRoots, HostOpened, HostOpening, MAX_OWNER_LEN, McpServer, OWNER_HEADER,
    OWNER_META_KEY, SHARED_HTTP_OWNER, Session, host_opening, selection_from_globs,
    valid_owner_handle,
};
pub use stdio::{MAX_LINE_BYTES, ServeError, serve_lines, serve_stdio};
pub use streamable_http::{McpHttpService, ReplicaSessions, replica_of, streamable_http_service};

/// What a transport did to a large `tools/call`'s arguments before the message was parsed
/// ([`toolshed_core::oversized`]): put in the message's extensions over stdio, in the HTTP
/// request's over HTTP. The call is refused with `oversized`, and runs with the members
/// the transport lifted out and parsed put back among the message's own.
#[derive(Clone, Default)]
pub struct TransportArguments {
    /// The arguments left out because they are over the tool's limits.
    pub oversized: Vec<toolshed_core::OversizedArgument>,
    /// The members the transport parsed; taken once.
    lifted: Option<Arc<std::sync::Mutex<toolshed_core::oversized::LiftedMembers>>>,
    /// Held until the call has ended (the room its arguments take in a memory budget).
    held: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for TransportArguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportArguments")
            .field("oversized", &self.oversized)
            .field("lifted", &self.lifted.is_some())
            .finish_non_exhaustive()
    }
}

impl TransportArguments {
    /// What a transport did: left `oversized` out, and parsed `lifted` itself.
    pub fn new(
        oversized: Vec<toolshed_core::OversizedArgument>,
        lifted: toolshed_core::oversized::LiftedMembers,
    ) -> Self {
        Self {
            oversized,
            lifted: (!lifted.is_empty()).then(|| Arc::new(std::sync::Mutex::new(lifted))),
            held: None,
        }
    }

    /// This, holding `held` until the call has ended.
    pub fn holding(mut self, held: impl std::any::Any + Send + Sync) -> Self {
        self.held = Some(Arc::new(held));
        self
    }

    /// Puts the members the transport parsed back into `arguments` (the first time).
    fn put_back(&self, arguments: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(lifted) = &self.lifted {
            let members = std::mem::take(
                &mut *lifted
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            toolshed_core::oversized::put_back(arguments, members);
        }
    }
}

/// The `instructions` of the `initialize` result: what the workspace is (`which`, e.g.
/// "the directory /src/app") and the conventions every tool shares, said once here rather
/// than in every tool's schema, where a model would pay for them on every turn.
pub fn instructions(which: &str) -> String {
    format!(
        "toolshed's workspace is {which}. The workspace_* tools take paths relative to it \
         (an absolute path inside it works too) and cannot reach anything outside it; \
         exec_command, shell and background processes run commands with the workspace as \
         their working directory. Read a file with workspace_read before you edit or overwrite it. \
         A flag (true/false argument) left out is false unless its schema says otherwise."
    )
}

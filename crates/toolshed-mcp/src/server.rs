//! The MCP server handler over the host.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use toolshed_core::OwnerId;
use toolshed_host::config::ReviewRules;
use toolshed_host::registry::ToolEntry;
use toolshed_host::review::{CompiledRules, RuleError};
use toolshed_host::{CallRequest, Host};

use crate::convert::{result_from_error, result_from_output, tool_from_spec};
use crate::progress::ProgressForwarder;

/// What narrows the tools one connection sees and may call. The pipeline enforces both on
/// every call; the door only uses them to decide what to list.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// A named profile from the configuration (`[profiles.NAME]`).
    pub profile: Option<String>,
    /// Tool-name globs the connection is narrowed to (`toolshed mcp --tools`).
    pub selection: Option<Arc<CompiledRules>>,
}

/// Compiles a comma-separated list of tool-name globs (`workspace_*,calculator`) into the
/// rules a [`Session`] is narrowed by. Blank entries are ignored; `None` when the list
/// names nothing.
pub fn selection_from_globs(list: &str) -> Result<Option<CompiledRules>, RuleError> {
    let allow: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    if allow.is_empty() {
        return Ok(None);
    }
    let rules = ReviewRules {
        allow,
        deny: Vec::new(),
    };
    CompiledRules::compile("--tools", &rules).map(Some)
}

/// One MCP connection's view of the host: the tools it may see, and its calls run through
/// the host's pipeline as one owner.
pub struct McpServer {
    host: Arc<Host>,
    owner: OwnerId,
    session: Session,
}

impl McpServer {
    /// A server for one connection. Each gets a fresh [`OwnerId`], so read-before-edit
    /// state and ownership checks never leak between connections.
    pub fn new(host: Arc<Host>, session: Session) -> Self {
        Self {
            host,
            owner: new_owner(),
            session,
        }
    }

    /// The owner this connection's calls run as.
    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }

    fn is_visible(&self, name: &str) -> bool {
        self.host.dispatcher().visible_to(
            name,
            self.session.profile.as_deref(),
            self.session.selection.as_deref(),
        )
    }

    /// The tools this connection sees, sorted by name (the registry's order).
    fn visible_tools(&self) -> Vec<ToolEntry> {
        self.host
            .registry()
            .tools()
            .into_iter()
            .filter(|t| self.is_visible(&t.spec().name))
            .collect()
    }
}

fn new_owner() -> OwnerId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    OwnerId::new(format!("mcp-{micros:x}-{}-{n}", std::process::id()))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("toolshed", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .visible_tools()
            .iter()
            .map(|entry| tool_from_spec(entry.spec()))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.host
            .registry()
            .lookup(name)
            .filter(|entry| self.is_visible(name) && entry.spec().name == name)
            .map(|entry| tool_from_spec(entry.spec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.into_owned();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let mut call = CallRequest::new(name.clone(), arguments, self.owner.clone(), "mcp");
        call.cancel = context.ct.clone();
        call.profile = self.session.profile.clone();
        call.selection = self.session.selection.clone();
        let forwarder = match context.meta.get_progress_token() {
            Some(token) => {
                let (forwarder, sink) = ProgressForwarder::start(context.peer.clone(), token);
                call.progress = Some(sink);
                Some(forwarder)
            }
            None => None,
        };
        let result = self.host.call(call).await;
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        let resolved = result.plugin_id.is_some();
        match result.result {
            Ok(output) => Ok(result_from_output(output).into()),
            Err(error) => result_from_error(&name, resolved, error).map(Into::into),
        }
    }
}

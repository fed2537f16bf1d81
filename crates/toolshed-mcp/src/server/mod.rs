//! The MCP server handler over the host.
//!
//! This module holds the server's face: [`McpServer`], what narrows a connection
//! ([`Session`], [`CatalogMode`]) and the owner consts. The rest is by concept: `listing`
//! (what a connection sees in `tools/list`), `library` (plugins' resources, prompts,
//! skills and completions), `call` (`tools/call`), `answers` (tasks and resource
//! subscriptions), `opening` (a host opened in the background), `owner` (which owner a
//! request runs as) and `handler` (the `ServerHandler` method table).

use std::sync::Arc;

use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::{CancellationToken, DropGuard};
use toolshed_core::OwnerId;
use toolshed_host::identity::Caller;
use toolshed_host::{CompiledRules, Host};

mod answers;
mod call;
mod handler;
mod library;
mod listing;
mod opening;
mod owner;

use listing::Bound;
pub use listing::selection_from_globs;
pub use opening::{ClientRoots, HostOpened, HostOpening, host_opening};
pub use owner::valid_owner_handle;

/// The request `_meta` key a client may set to name the owner its calls run as.
pub const OWNER_META_KEY: &str = "toolshed/owner";

/// The HTTP header that names the owner a request's calls run as (the REST door reads the
/// same header).
pub const OWNER_HEADER: &str = "x-toolshed-owner";

/// The owner of stateless (2026-07-28) HTTP requests that name none.
pub const SHARED_HTTP_OWNER: &str = "mcp-http";

/// The longest owner handle a client may supply.
pub const MAX_OWNER_LEN: usize = toolshed_host::identity::MAX_OWNER_LEN;

/// What narrows the tools one connection sees and may call. The pipeline enforces both on
/// every call; the door only uses them to decide what to list.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// A named profile from the configuration (`[profiles.NAME]`).
    pub profile: Option<String>,
    /// Tool-name globs the connection is narrowed to (`toolshed mcp --tools`).
    pub selection: Option<Arc<CompiledRules>>,
    /// Who the connection authenticated as, for a door that authenticates once (stdio
    /// started with an agent token). Over HTTP each request carries its own, set by the
    /// server's guard.
    pub caller: Option<Caller>,
    /// The agent token `caller` came from, checked again on every request so that a
    /// revoked token stops working at once on a door that authenticated only when it
    /// opened.
    pub token: Option<String>,
    /// Which of the tools the connection may use `tools/list` holds; the rest are found
    /// and called through `tool_search` and `tool_call`. `None` (none chosen): the
    /// standard catalog, or every tool for a connection narrowed on purpose (`--tools`, a
    /// profile other than `all`, an agent token's tool rules), whose user chose what it
    /// sees.
    pub catalog: Option<CatalogMode>,
}

/// Which tools a connection's `tools/list` holds. Every mode leaves every tool the
/// connection may use callable by name; only the list differs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CatalogMode {
    /// Every tool (`--catalog full`).
    Full,
    /// Every tool but the `[mcp] on_demand` ones (rarely used families), plus
    /// `tool_search` and `tool_call` when any is left out (`--catalog standard`, the
    /// default).
    #[default]
    Standard,
    /// Only the `[mcp] core` tools, plus `tool_search` and `tool_call` (`--catalog
    /// discover`).
    Discover,
}

impl CatalogMode {
    /// The mode named `name` (`full`, `standard`, `discover`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "full" => Some(Self::Full),
            "standard" => Some(Self::Standard),
            "discover" => Some(Self::Discover),
            _ => None,
        }
    }
}

/// Whether a request is of the 2026-07-28 era: it names its version in `_meta`.
/// (`RequestContext::protocol_version` falls back to a session's negotiated version.)
fn era_2026(context: &RequestContext<RoleServer>) -> bool {
    context.meta.protocol_version().is_some()
}

/// The host and session of a server: at once, or once its host has opened.
struct Binding {
    ready: std::sync::OnceLock<Bound>,
    opening: Option<HostOpening>,
    /// The session, once its client is initialized: dropped with the connection, it fires
    /// the session end hooks.
    session: std::sync::OnceLock<toolshed_host::SessionLife>,
}

/// One MCP connection's view of the host: the tools it may see, and its calls run through
/// the host's pipeline as one owner.
pub struct McpServer {
    binding: Arc<Binding>,
    /// Said in the `initialize` result: what the workspace is, how tools address files.
    instructions: Option<Arc<str>>,
    owner: OwnerId,
    /// Ends this connection's list_changed watcher when the server is dropped.
    stop: CancellationToken,
    _stop_guard: DropGuard,
    /// The level `logging/setLevel` asked for; messages flow once it is set.
    log_level: Arc<crate::logging::LogLevel>,
    /// The client's side of the session, once `initialize` has been handled (or, for a
    /// session started without one, once rmcp has started it): what the stdio transport
    /// needs to run `tools/call` itself.
    peer: std::sync::OnceLock<rmcp::Peer<RoleServer>>,
    /// The resources this (session-era) connection subscribed to, each watched until its
    /// token fires (an unsubscribe, or the connection's end).
    watching: std::sync::Mutex<std::collections::HashMap<String, CancellationToken>>,
    /// The owners this connection of the profile `plan` started planning for: its first
    /// call as each starts plan mode afresh (docs/agents.md#plan-mode).
    planning: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// The most resources one connection subscribes to at once.
const MAX_SUBSCRIPTIONS: usize = 256;

impl McpServer {
    /// A server for one connection. Each gets a fresh [`OwnerId`], so read-before-edit
    /// state and ownership checks never leak between connections.
    pub fn new(host: Arc<Host>, session: Session) -> Self {
        let ready = std::sync::OnceLock::new();
        let _ = ready.set(Bound::new(host, session));
        Self::with(Binding {
            ready,
            opening: None,
            session: std::sync::OnceLock::new(),
        })
    }

    /// A server whose host is still opening (see [`HostOpening`]).
    pub fn opening(opening: HostOpening) -> Self {
        Self::with(Binding {
            ready: std::sync::OnceLock::new(),
            opening: Some(opening),
            session: std::sync::OnceLock::new(),
        })
    }

    fn with(binding: Binding) -> Self {
        let stop = CancellationToken::new();
        Self {
            binding: Arc::new(binding),
            instructions: None,
            owner: owner::new_owner(),
            _stop_guard: stop.clone().drop_guard(),
            stop,
            log_level: Arc::default(),
            peer: std::sync::OnceLock::new(),
            watching: std::sync::Mutex::default(),
            planning: std::sync::Mutex::default(),
        }
    }

    /// Starts plan mode for `owner` at this connection's first call as it, when the
    /// connection uses the profile `plan` (a stateless request is no connection: it keeps
    /// the state it finds).
    fn begin_planning(
        &self,
        bound: &Bound,
        owner: &OwnerId,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if bound.session.profile.as_deref() != Some("plan") || era_2026(context) {
            return Ok(());
        }
        let first = self
            .planning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(owner.0.clone());
        if first {
            bound
                .host
                .enter_plan_mode(owner)
                .map_err(|e| McpError::internal_error(format!("plan mode: {e}"), None))?;
        }
        Ok(())
    }

    /// The session's peer, once known (see [`McpServer::know_peer`]).
    pub(crate) fn session_peer(&self) -> Option<&rmcp::Peer<RoleServer>> {
        self.peer.get()
    }

    /// Records the session's peer; the first one recorded stays.
    pub(crate) fn know_peer(&self, peer: &rmcp::Peer<RoleServer>) {
        let _ = self.peer.get_or_init(|| peer.clone());
    }

    /// Sends `text` as the `instructions` of the `initialize` result.
    pub fn with_instructions(mut self, text: impl Into<Arc<str>>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The owner this connection's calls run as when a request names none.
    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }

    /// The size limits the tool `name` declares on its arguments, once the host is open:
    /// what the transport checks a large `tools/call` against before parsing it.
    pub(crate) fn argument_limits(
        &self,
        name: &str,
    ) -> Option<std::collections::BTreeMap<String, usize>> {
        self.binding
            .ready
            .get()?
            .host
            .catalog()
            .argument_limits(name)
    }

    /// The host and session, waiting for the host to open if it is still opening.
    async fn bound(&self) -> Result<&Bound, McpError> {
        if let Some(bound) = self.binding.ready.get() {
            return Ok(bound);
        }
        let Some(opening) = &self.binding.opening else {
            return Err(McpError::internal_error("toolshed has no host", None));
        };
        opening.greeted.notify_one();
        let mut opening = opening.outcome.clone();
        let opened = opening
            .wait_for(Option::is_some)
            .await
            .map_err(|_| McpError::internal_error("toolshed stopped while starting", None))?;
        match opened.as_ref() {
            Some(Ok((host, session))) => Ok(self
                .binding
                .ready
                .get_or_init(|| Bound::new(host.clone(), session.clone()))),
            Some(Err(why)) => Err(McpError::internal_error(
                format!("toolshed could not start: {why}"),
                None,
            )),
            None => Err(McpError::internal_error("toolshed is still starting", None)),
        }
    }

    /// Who sent this request: the HTTP guard's caller, else the connection's own.
    fn caller_for(bound: &Bound, context: &RequestContext<RoleServer>) -> Option<Caller> {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .or(bound.session.caller.as_ref())
            .cloned()
    }

    /// Refuses a request whose caller lacks `scope`.
    fn require(
        bound: &Bound,
        context: &RequestContext<RoleServer>,
        scope: &str,
    ) -> Result<(), McpError> {
        match Self::caller_for(bound, context) {
            Some(caller) => caller
                .require(scope)
                .map_err(|m| McpError::invalid_request(m.to_string(), None)),
            None => Ok(()),
        }
    }
}

impl Bound {
    /// Refuses a request when the connection's own token (stdio) was revoked or expired
    /// since the door opened.
    fn check_token(&self) -> Result<(), McpError> {
        let Some(token) = &self.session.token else {
            return Ok(());
        };
        match self.host.tokens().authenticate(token) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(McpError::invalid_request(
                "this connection's token was revoked or has expired; ask for a new one",
                None,
            )),
            Err(e) => Err(McpError::internal_error(e.to_string(), None)),
        }
    }
}

/// The connection is gone (closed, deleted, expired): what its own owner kept running —
/// command sessions, shells, background processes — ends with it instead of holding the
/// host's limits until each times out. Owners a request named (a handle, an agent token's
/// owner) outlive the connection and keep theirs.
impl Drop for McpServer {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(bound) = self.binding.ready.get() else {
            return;
        };
        let plugins = bound.host.plugins().detached();
        let owner = self.owner.clone();
        // A task of the connection's owner goes on without it: what the owner keeps
        // running ends once its tasks have.
        let jobs = bound.host.jobs_if_started().cloned();
        // No call outlives the longest timeout, so neither does this wait.
        let longest =
            std::time::Duration::from_millis(bound.host.config().config.limits.max_timeout_ms);
        runtime.spawn(async move {
            if let Some(jobs) = jobs {
                let _ = tokio::time::timeout(longest, jobs.until_idle(&owner.0)).await;
            }
            plugins.end_owner(&owner).await;
        });
    }
}

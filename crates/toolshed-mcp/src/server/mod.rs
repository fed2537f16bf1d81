//! The MCP server handler over the host.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CompletionInfo, CustomRequest, CustomResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, GetSkillRequestParams, GetSkillResult, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResultType, ServerCapabilities, ServerConfig, Skill, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::{CancellationToken, DropGuard};
use toolshed_core::OwnerId;
use toolshed_host::identity::Caller;
use toolshed_host::library::{Libraries, LibraryError};
use toolshed_host::registry::ToolEntry;
use toolshed_host::{CallRequest, Host};
use toolshed_host::{CompiledRules, RuleError, Subject};

use crate::convert::{result_from_error, result_from_output, tool_from_spec};
use crate::progress::ProgressForwarder;

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
    CompiledRules::allow_only("--tools", allow)
}

/// Whether a request is of the 2026-07-28 era: it names its version in `_meta`.
/// (`RequestContext::protocol_version` falls back to a session's negotiated version.)
fn era_2026(context: &RequestContext<RoleServer>) -> bool {
    context.meta.protocol_version().is_some()
}

/// Whether `rules` (allow rules, as `[mcp] core`) take `entry`; `None` takes nothing.
fn matches(rules: &Option<CompiledRules>, entry: &ToolEntry) -> bool {
    rules.as_ref().is_some_and(|rules| {
        rules
            .refuse(&Subject::new(entry.spec(), &entry.plugin_id))
            .is_none()
    })
}

/// The host a server serves and the connection's narrowing, once both are there.
struct Bound {
    host: Arc<Host>,
    session: Session,
    page_size: usize,
    /// `[mcp] list_unconfigured`: list tools that cannot work yet (they answer
    /// `unconfigured` when called).
    list_unconfigured: bool,
    /// In discovery mode, the tools listed besides `tool_search` and `tool_call` (`[mcp]
    /// core`); `None`: none.
    core: Option<CompiledRules>,
    /// In the standard mode, the tools left out of the list (`[mcp] on_demand`); `None`:
    /// none.
    on_demand: Option<CompiledRules>,
    /// In discovery mode, the tools `tool_search {activate: true}` added to this
    /// connection's list (at most [`crate::discover::MAX_ACTIVATED`]).
    activated: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Bumped when `activated` grows, so that the list watchers tell the client.
    relisted: tokio::sync::watch::Sender<u64>,
}

impl Bound {
    fn new(host: Arc<Host>, session: Session) -> Self {
        let page_size = host.config().config.mcp.page_size.max(1);
        let list_unconfigured = host.config().config.mcp.list_unconfigured;
        let mcp = &host.config().config.mcp;
        // Both lists were checked when the configuration was loaded.
        let core = CompiledRules::allow_only("[mcp] core", mcp.core.clone()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "[mcp] core has a rule that does not compile; no core tools are listed");
            None
        });
        let on_demand = CompiledRules::allow_only("[mcp] on_demand", mcp.on_demand.clone())
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "[mcp] on_demand has a rule that does not compile; every tool is listed");
                None
            });
        Self {
            host,
            session,
            page_size,
            list_unconfigured,
            core,
            on_demand,
            activated: std::sync::Mutex::default(),
            relisted: tokio::sync::watch::Sender::new(0),
        }
    }

    fn activated(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.activated
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The catalog mode of a request; `caller_narrowed`: its caller's agent token has
    /// tool rules.
    fn mode(&self, caller_narrowed: bool) -> CatalogMode {
        let narrowed = caller_narrowed
            || self.session.selection.is_some()
            || self.session.profile.as_deref().is_some_and(|p| p != "all");
        match self.session.catalog {
            Some(mode) => mode,
            None if narrowed => CatalogMode::Full,
            None => CatalogMode::Standard,
        }
    }

    /// Whether a tool the connection sees is also listed: in the standard mode all but the
    /// on-demand ones, in discovery mode only the core; in both, the tools `tool_search`
    /// activated.
    fn listed(&self, entry: &ToolEntry, mode: CatalogMode) -> bool {
        match mode {
            CatalogMode::Full => true,
            CatalogMode::Standard => {
                !self.on_demand(entry) || self.activated().contains(&entry.spec().name)
            }
            CatalogMode::Discover => {
                matches(&self.core, entry) || self.activated().contains(&entry.spec().name)
            }
        }
    }

    /// Whether `[mcp] on_demand` leaves `entry` out of the standard catalog.
    fn on_demand(&self, entry: &ToolEntry) -> bool {
        matches(&self.on_demand, entry)
    }

    /// Whether `tool_search` and `tool_call` answer: in discovery mode always, in the
    /// standard mode when some tools are on demand.
    fn discovers(&self, mode: CatalogMode) -> bool {
        match mode {
            CatalogMode::Full => false,
            CatalogMode::Discover => true,
            CatalogMode::Standard => self.on_demand.is_some(),
        }
    }

    /// Adds `names` to the connection's list (discovery mode's `activate: true`); returns
    /// the names newly listed, and tells the list watchers when there are any.
    fn activate(&self, names: &[String]) -> Vec<String> {
        let mut added = Vec::new();
        {
            let mut activated = self.activated();
            for name in names {
                if activated.len() >= crate::discover::MAX_ACTIVATED {
                    break;
                }
                if activated.insert(name.clone()) {
                    added.push(name.clone());
                }
            }
        }
        if !added.is_empty() {
            self.relisted.send_modify(|n| *n += 1);
        }
        added
    }

    /// The tools `tools/list` gives for `visible`: the listed ones, and the two discovery
    /// tools when any visible tool is not listed (always in discovery mode), sorted by
    /// name.
    fn list_of(&self, visible: &[ToolEntry], mode: CatalogMode) -> Vec<Tool> {
        let mut tools = Vec::with_capacity(visible.len());
        let mut not_listed = Vec::new();
        for entry in visible {
            if self.listed(entry, mode) {
                tools.push(tool_from_spec(entry.spec()));
            } else {
                not_listed.push(entry.spec().name.as_str());
            }
        }
        let offered = match mode {
            CatalogMode::Full => None,
            // Nearly nothing is listed: naming the rest would undo the mode.
            CatalogMode::Discover => Some(Vec::new()),
            // Still offered once every on-demand tool was activated: the list does not
            // lose its search.
            CatalogMode::Standard => visible
                .iter()
                .any(|e| self.on_demand(e))
                .then_some(not_listed),
        };
        if let Some(not_listed) = offered {
            tools.extend(crate::discover::tools(&not_listed));
            tools.sort_by(|a, b| a.name.cmp(&b.name));
        }
        tools
    }

    fn is_visible(&self, entry: &ToolEntry) -> bool {
        self.host.dispatcher().visible_to(
            entry,
            self.session.profile.as_deref(),
            self.session.selection.as_deref(),
        )
    }

    /// The tools this connection sees, sorted by name (the registry's order): a model is
    /// not offered a tool that can only answer "unconfigured" unless the config asks.
    fn visible_tools(&self) -> Vec<ToolEntry> {
        let registry = self.host.registry();
        registry
            .tools()
            .into_iter()
            .filter(|t| self.is_visible(t))
            .filter(|t| self.list_unconfigured || registry.unavailable(t).is_none())
            .collect()
    }

    /// What `tools/list` gives the connection's own caller (the list watchers compare
    /// it).
    fn visible_list(&self) -> Vec<Tool> {
        self.list_of(&self.visible_tools(), self.mode(self.caller_narrowed()))
    }

    /// Whether the connection's own caller (stdio started with an agent token) has tool
    /// rules.
    fn caller_narrowed(&self) -> bool {
        self.session
            .caller
            .as_ref()
            .is_some_and(|c| c.tools.is_some())
    }

    /// Refuses a request when the connection's own token (stdio) was revoked or expired
    /// since the door opened.
    fn check_token(&self) -> Result<(), McpError> {
        let Some(token) = &self.session.token else {
            return Ok(());
        };
        match self.host.store().authenticate(token) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(McpError::invalid_request(
                "this connection's token was revoked or has expired; ask for a new one",
                None,
            )),
            Err(e) => Err(McpError::internal_error(e.to_string(), None)),
        }
    }
}

/// A digest of a tool list as a client receives it, to tell whether it changed.
fn list_digest(tools: &[Tool]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(tools)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// What a host that is still opening resolves to: the host and the session, or why it
/// could not open.
type Opened = Option<Result<(Arc<Host>, Session), String>>;

/// What the client said about its roots (`roots/list`), for a door that takes its
/// workspace from them when none was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientRoots {
    /// Nothing yet (no `initialize` so far: a 2026-07-28 client never sends one).
    Unknown,
    /// The client's `initialize` did not offer roots.
    NotOffered,
    /// Offered; `roots/list` has been asked and not answered yet.
    Asked,
    /// The roots the client listed: URIs, in its order.
    Listed(Vec<String>),
    /// `roots/list` failed.
    Failed(String),
}

/// How long a door waits for the client to answer `roots/list`.
pub(crate) const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The sending half of [`HostOpening`]: the door that opens the host in the background
/// reports the outcome here, once.
pub struct HostOpened {
    outcome: tokio::sync::watch::Sender<Opened>,
    greeted: Arc<tokio::sync::Notify>,
    roots: tokio::sync::watch::Receiver<ClientRoots>,
}

impl HostOpened {
    /// The client's roots, once known: at once when its `initialize` offered none (or
    /// there was none), else when it has answered `roots/list` or [`ROOTS_WAIT`] has
    /// passed. Call after [`HostOpened::greeted`].
    pub async fn client_roots(&self) -> ClientRoots {
        let mut roots = self.roots.clone();
        let answered = roots.wait_for(|r| !matches!(r, ClientRoots::Asked));
        match tokio::time::timeout(ROOTS_WAIT, answered).await {
            Ok(Ok(seen)) => seen.clone(),
            Ok(Err(_)) => ClientRoots::Unknown,
            Err(_) => ClientRoots::Failed(format!(
                "the client did not answer roots/list within {} s",
                ROOTS_WAIT.as_secs()
            )),
        }
    }

    /// Completes once the client has been greeted (the server is answering `initialize`):
    /// the moment to start opening the host, so that its work never competes with the
    /// handshake's. Completes at once if the greeting already happened.
    pub async fn greeted(&self) {
        self.greeted.notified().await;
    }

    /// Reports the opened host and the connection's session, or why it failed.
    pub fn send(self, outcome: Result<(Arc<Host>, Session), String>) {
        self.outcome.send_replace(Some(outcome));
    }
}

/// A host that is opening while the door already talks: `initialize` needs nothing from
/// it, so a stdio client gets its reply before the store, plugins and engines are up, and
/// the first request that needs them waits for them.
#[derive(Clone)]
pub struct HostOpening {
    outcome: tokio::sync::watch::Receiver<Opened>,
    greeted: Arc<tokio::sync::Notify>,
    roots: Arc<tokio::sync::watch::Sender<ClientRoots>>,
}

impl HostOpening {
    /// Completes when the host could not open, or the side opening it ended without a
    /// word (it panicked); never once it has opened.
    pub async fn failed(&self) {
        let mut outcome = self.outcome.clone();
        let _ = outcome.wait_for(|o| matches!(o, Some(Err(_)))).await;
        if matches!(*outcome.borrow(), Some(Ok(_))) {
            std::future::pending::<()>().await;
        }
    }
}

/// A channel for a host opened in the background: give [`HostOpening`] to
/// [`McpServer::opening`] and report through [`HostOpened`].
pub fn host_opening() -> (HostOpened, HostOpening) {
    let (tx, rx) = tokio::sync::watch::channel(None);
    let greeted = Arc::new(tokio::sync::Notify::new());
    let (roots_tx, roots_rx) = tokio::sync::watch::channel(ClientRoots::Unknown);
    (
        HostOpened {
            outcome: tx,
            greeted: greeted.clone(),
            roots: roots_rx,
        },
        HostOpening {
            outcome: rx,
            greeted,
            roots: Arc::new(roots_tx),
        },
    )
}

/// The host and session of a server: at once, or once its host has opened.
struct Binding {
    ready: std::sync::OnceLock<Bound>,
    opening: Option<HostOpening>,
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
        })
    }

    /// A server whose host is still opening (see [`HostOpening`]).
    pub fn opening(opening: HostOpening) -> Self {
        Self::with(Binding {
            ready: std::sync::OnceLock::new(),
            opening: Some(opening),
        })
    }

    fn with(binding: Binding) -> Self {
        let stop = CancellationToken::new();
        Self {
            binding: Arc::new(binding),
            instructions: None,
            owner: new_owner(),
            _stop_guard: stop.clone().drop_guard(),
            stop,
            log_level: Arc::default(),
            peer: std::sync::OnceLock::new(),
            watching: std::sync::Mutex::default(),
        }
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
            .registry()
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

    /// The tools this request's caller sees: the connection's, narrowed by an agent
    /// token's tool rules.
    fn tools_for(bound: &Bound, context: &RequestContext<RoleServer>) -> Vec<ToolEntry> {
        let tools = bound.visible_tools();
        match Self::caller_for(bound, context).and_then(|c| c.tools) {
            None => tools,
            Some(rules) => tools
                .into_iter()
                .filter(|e| {
                    rules
                        .refuse(&Subject::new(e.spec(), &e.plugin_id))
                        .is_none()
                })
                .collect(),
        }
    }

    /// The resources and prompts this request's caller may use: those of the plugins
    /// whose tools it sees. Lists need `tools:list`; reading and getting need `tools:call`.
    async fn libraries_for(
        &self,
        context: &RequestContext<RoleServer>,
        scope: &str,
    ) -> Result<Libraries, McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        Self::require(bound, context, scope)?;
        let plugins: BTreeSet<String> = Self::tools_for(bound, context)
            .into_iter()
            .map(|e| e.plugin_id)
            .collect();
        Ok(bound.host.registry().libraries(&plugins))
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
                .map_err(|m| McpError::invalid_request(m, None)),
            None => Ok(()),
        }
    }

    /// The owner a request runs as: a handle the client names (the `toolshed/owner` request
    /// `_meta` key, or the `X-Toolshed-Owner` HTTP header), else the shared HTTP owner for a
    /// stateless HTTP request, else this connection's own. With an agent token, the token's
    /// owner, which a handle may only narrow to a sub-owner.
    fn owner_for(
        &self,
        bound: &Bound,
        context: &RequestContext<RoleServer>,
    ) -> Result<OwnerId, McpError> {
        let parts = context.extensions.get::<http::request::Parts>();
        let from_meta = context.meta.get(OWNER_META_KEY).map(|v| match v {
            Value::String(s) => Ok(s.as_str()),
            _ => Err(bad_owner(&v.to_string())),
        });
        let from_header = parts
            .and_then(|p| p.headers.get(OWNER_HEADER))
            .map(|v| v.to_str().map_err(|_| bad_owner("(not text)")));
        let requested = from_meta.or(from_header).transpose()?;
        if let Some(caller) = Self::caller_for(bound, context).filter(Caller::is_agent) {
            return caller
                .owner_for(requested)
                .map_err(|m| McpError::invalid_params(m, None));
        }
        match requested {
            Some(handle) => valid_owner(handle),
            None if parts.is_some_and(|p| !p.headers.contains_key("mcp-session-id")) => {
                Ok(OwnerId::new(SHARED_HTTP_OWNER))
            }
            None => Ok(self.owner.clone()),
        }
    }

    /// Waits for the catalog to change in a way this connection sees, then calls `send`;
    /// ends when `send` fails (the client is gone), the server is dropped or `until` fires.
    async fn watch_list<F, Fut, E>(&self, until: CancellationToken, send: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let Ok(bound) = self.bound().await else {
            return;
        };
        let mut changes = bound.host.registry().catalog_changes();
        changes.mark_unchanged();
        let mut relisted = bound.relisted.subscribe();
        relisted.mark_unchanged();
        // A digest of the list, not the list: a session may stay open for days, and the
        // converted catalog is a few hundred KB.
        let mut last = list_digest(&bound.visible_list());
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = until.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
                changed = relisted.changed() => if changed.is_err() { return },
            }
            let now = list_digest(&bound.visible_list());
            if now == last {
                continue;
            }
            last = now;
            if let Err(e) = send().await {
                tracing::debug!(error = %e, "cannot send tools/list_changed; the client is gone");
                return;
            }
        }
    }
}

fn bad_owner(value: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "owner handle {value} is not valid: use 1 to {MAX_OWNER_LEN} characters of letters, digits and . _ : @ -"
        ),
        None,
    )
}

/// Whether a client-supplied owner handle is acceptable: 1 to [`MAX_OWNER_LEN`] letters,
/// digits and `. _ : @ -`, with `/` between the parts of a sub-owner (`alice/task-7`).
pub fn valid_owner_handle(handle: &str) -> bool {
    toolshed_host::identity::check_owner(handle).is_ok()
}

fn valid_owner(handle: &str) -> Result<OwnerId, McpError> {
    if valid_owner_handle(handle) {
        Ok(OwnerId::new(handle))
    } else {
        let shown: String = handle.chars().take(MAX_OWNER_LEN).collect();
        Err(bad_owner(&format!("{shown:?}")))
    }
}

/// How long a client of the 2026-07-28 era may reuse a list it got (`ttlMs`, which that
/// era requires). Changes are announced sooner where the client listens: list-changed
/// notifications in a session, `subscriptions/listen` in the 2026-07-28 era.
const LIST_TTL_MS: u64 = 60_000;

/// A list result with `ttlMs` and `cacheScope` for a request of the 2026-07-28 era (which
/// names its version); unchanged for an older one. Private: what a list holds depends on
/// the caller's token and profile.
macro_rules! cacheable {
    ($result:expr, $context:expr) => {{
        let result = $result;
        if era_2026(&$context) {
            result
                .with_ttl_ms(LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private)
        } else {
            result
        }
    }};
}

/// The items a plugin listed that parse as `T`; one that does not is left out (and
/// logged) rather than failing the whole list.
/// The skills the extension's rules accept: one that breaks them (a name its front matter
/// spells otherwise, a file listed twice) is left out, not the whole list refused.
fn valid_skills(skills: Vec<Skill>) -> Vec<Skill> {
    skills
        .into_iter()
        .filter(|skill| match skill.validate() {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(skill = %skill.uri, error = %e, "a skill breaks the skills extension's rules; left out");
                false
            }
        })
        .collect()
}

fn from_values<T: serde::de::DeserializeOwned>(values: Vec<Value>) -> Vec<T> {
    values
        .into_iter()
        .filter_map(|v| match serde_json::from_value(v) {
            Ok(item) => Some(item),
            Err(e) => {
                tracing::warn!(error = %e, "a plugin listed an item that is not valid MCP; left out");
                None
            }
        })
        .collect()
}

/// A resource or prompt that could not be served, as the MCP error a client expects:
/// resource-not-found (-32002) or invalid params for what does not exist, internal for
/// what failed.
fn library_error(e: LibraryError) -> McpError {
    match e {
        LibraryError::NotFound(message) if message.starts_with("there is no prompt") => {
            McpError::invalid_params(message, None)
        }
        LibraryError::NotFound(message) => McpError::resource_not_found(message, None),
        LibraryError::Failed(message) => McpError::internal_error(message, None),
    }
}

/// The cursor of the page after the tool named `last`.
fn cursor_after(last: &str) -> String {
    format!("after:{last}")
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
        let registry = bound.host.registry().clone();
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
            registry.end_owner(&owner).await;
        });
    }
}

mod answers;
mod call;

impl ServerHandler for McpServer {
    // Logging is deprecated by the newest revision; clients of the earlier ones use it.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        if let Some(opening) = &self.binding.opening {
            opening.greeted.notify_one();
        }
        // Resources and prompts are offered whether or not a mounted server has any yet
        // (the host may still be opening when this is answered): lists are then empty.
        let config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_logging()
                .enable_completions()
                .enable_skills()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("toolshed", env!("CARGO_PKG_VERSION")));
        match &self.instructions {
            Some(text) => config.with_instructions(text.as_ref()),
            None => config,
        }
    }

    /// Notes whether the client offers roots before the greeting is answered, so a door
    /// waiting for its workspace knows at once whether to wait for `roots/list`.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if let Some(opening) = &self.binding.opening {
            opening
                .roots
                .send_replace(if request.capabilities.roots.is_some() {
                    ClientRoots::Asked
                } else {
                    ClientRoots::NotOffered
                });
        }
        context.peer.set_peer_info(request.clone());
        self.know_peer(&context.peer);
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        Self::require(bound, &context, "tools:list")?;
        let caller_narrowed = Self::caller_for(bound, &context).is_some_and(|c| c.tools.is_some());
        let mut tools: Vec<Tool> = bound.list_of(
            &Self::tools_for(bound, &context),
            bound.mode(caller_narrowed),
        );
        if let Some(cursor) = request.and_then(|r| r.cursor) {
            let Some(after) = cursor.strip_prefix("after:") else {
                let shown: String = cursor.chars().take(80).collect();
                return Err(McpError::invalid_params(
                    format!(
                        "cursor {shown:?} was not issued by this server; pass the nextCursor of the previous tools/list page, or none for the first page"
                    ),
                    None,
                ));
            };
            let start = tools.partition_point(|t| t.name.as_ref() <= after);
            tools.drain(..start);
        }
        let next = (tools.len() > bound.page_size).then(|| {
            tools.truncate(bound.page_size);
            tools.last().map(|t| cursor_after(&t.name))
        });
        let mut result = cacheable!(ListToolsResult::with_all_items(tools), context);
        result.next_cursor = next.flatten();
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let bound = self.binding.ready.get()?;
        if bound.discovers(bound.mode(bound.caller_narrowed()))
            && let Some(tool) = crate::discover::tools(&[])
                .into_iter()
                .find(|t| t.name == name)
        {
            return Some(tool);
        }
        bound
            .host
            .registry()
            .lookup(name)
            .filter(|entry| bound.is_visible(entry) && entry.spec().name == name)
            .map(|entry| tool_from_spec(entry.spec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        use tracing::Instrument as _;
        // The host first: over stdio it may still be opening, and opening it is what sets
        // up the export of spans (a span made before that would go nowhere).
        self.bound().await?;
        // The door's span, the root of the call's trace, named and attributed as the
        // OpenTelemetry conventions for MCP say (docs/telemetry.md).
        let http = context.extensions.get::<http::request::Parts>();
        let span = tracing::info_span!(
            target: toolshed_core::TRACE,
            "tools/call",
            otel.name = %format_args!("tools/call {}", request.name),
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %request.name,
            jsonrpc.request.id = %context.id,
            mcp.protocol.version = context.protocol_version().map(|v| v.to_string()),
            mcp.session.id = http
                .and_then(|p| p.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok()),
            network.transport = if http.is_some() { "tcp" } else { "pipe" },
            error.type = tracing::field::Empty,
        );
        // A caller's trace context (`_meta`, else the HTTP headers) parents the door's span.
        let header = |name: &str| {
            http.and_then(|p| p.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let parent = context
            .meta
            .get_traceparent()
            .and_then(|given| {
                toolshed_core::trace_context::TraceParent::parse(
                    given,
                    context.meta.get_tracestate(),
                )
            })
            .or_else(|| {
                header("traceparent").and_then(|given| {
                    toolshed_core::trace_context::TraceParent::parse(
                        &given,
                        header("tracestate").as_deref(),
                    )
                })
            });
        if let Some(parent) = &parent {
            toolshed_core::trace_context::adopt(&span, parent);
        }
        let answer = self
            .call_tool_traced(request, context)
            .instrument(span.clone())
            .await;
        match &answer {
            Err(error) => {
                span.record("error.type", error.code.0.to_string().as_str());
            }
            Ok(response) if response_is_error(response) => {
                span.record("error.type", "tool_error");
            }
            Ok(_) => {}
        }
        answer
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        Ok(cacheable!(
            ListResourcesResult::with_all_items(from_values(libraries.resources().await)),
            context
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        Ok(cacheable!(
            ListResourceTemplatesResult::with_all_items(from_values(
                libraries.resource_templates().await
            )),
            context
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        let result = libraries
            .read_resource(&request.uri)
            .await
            .map_err(library_error)?;
        let mut result: ReadResourceResult = serde_json::from_value(result).map_err(|e| {
            McpError::internal_error(format!("a plugin's resource could not be read: {e}"), None)
        })?;
        // Read from JSON, unlike rmcp's constructors it carries no `resultType`, which
        // the 2026-07-28 era requires (rmcp takes it off for an older peer).
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result.into())
    }

    /// A session-era client subscribes to a resource: the plugin that has it (a mounted
    /// server that tells of changes) is asked, and each change it reports reaches the
    /// client as `notifications/resources/updated` until it unsubscribes or goes.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_resource(request, context).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unsubscribe_resource(request, _context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        let mut params = serde_json::to_value(&request)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        // The caller's `_meta` is its own; the gateway adds the upstream request's.
        if let Value::Object(map) = &mut params {
            map.remove("_meta");
        }
        let completion = libraries.complete(params).await.map_err(library_error)?;
        let mut completion: CompletionInfo = serde_json::from_value(completion).map_err(|e| {
            McpError::internal_error(format!("a plugin's completion is not valid MCP: {e}"), None)
        })?;
        // At most what the protocol allows; the rest is said to be there.
        if completion.values.len() > CompletionInfo::MAX_VALUES {
            completion.values.truncate(CompletionInfo::MAX_VALUES);
            completion.has_more = Some(true);
        }
        Ok(CompleteResult::new(completion))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.task_get(request, context).await
    }

    /// Answers a task's questions (`inputRequests` of `tasks/get`); keys that wait for
    /// nothing are left, as the extension says.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_update(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_cancel(request, context).await
    }

    /// A request rmcp could not read as any method it knows: a known method whose params
    /// do not fit is the client's mistake, named as such; the Tasks methods that the
    /// extension's 2026 revision removed say what replaced them.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method.as_str();
        let message = match method {
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                return Err(McpError::invalid_params(
                    format!(
                        "invalid params for {method}: it needs {{\"taskId\": …}} (the id tools/call answered)"
                    ),
                    None,
                ));
            }
            "tasks/result" | "tasks/list" => format!(
                "{method} is not a method of the Tasks extension (io.modelcontextprotocol/tasks): tasks/get answers a task's result once it has one; GET /api/v1/jobs lists them"
            ),
            _ => format!("no method {method}"),
        };
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            message,
            None,
        ))
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        let skills: Vec<Skill> = from_values(libraries.skills().await);
        Ok(cacheable!(
            ListSkillsResult::with_all_items(skills),
            context
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        let skills = valid_skills(from_values(libraries.skills().await));
        let skill = skills
            .into_iter()
            .find(|s| s.uri == request.uri)
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "no skill at {}; skills/list gives the URIs of the SKILL.md of each",
                        request.uri
                    ),
                    None,
                )
            })?;
        Ok(cacheable!(GetSkillResult::new(skill), context))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        Ok(cacheable!(
            ListPromptsResult::with_all_items(from_values(libraries.prompts().await)),
            context
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        let result = libraries
            .get_prompt(&request.name, request.arguments.unwrap_or_default())
            .await
            .map_err(library_error)?;
        let mut result: GetPromptResult = serde_json::from_value(result).map_err(|e| {
            McpError::internal_error(format!("a plugin's prompt could not be read: {e}"), None)
        })?;
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result.into())
    }

    /// Legacy sessions (2025-11-25 and earlier): once the client is initialized, watch the
    /// catalog and send `notifications/tools/list_changed` when what it sees changes.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        if let Some(opening) = &self.binding.opening
            && *opening.roots.borrow() == ClientRoots::Asked
        {
            let (roots, peer) = (opening.roots.clone(), peer.clone());
            // Roots are deprecated by the newest protocol revision, but the clients that
            // start toolshed (editors, agent CLIs) are of the revisions that have them.
            #[allow(deprecated)]
            tokio::spawn(async move {
                let listed = match peer.list_roots().await {
                    Ok(list) => {
                        ClientRoots::Listed(list.roots.into_iter().map(|r| r.uri).collect())
                    }
                    Err(e) => ClientRoots::Failed(e.to_string()),
                };
                roots.send_replace(listed);
            });
        }
        let watcher = Self {
            binding: self.binding.clone(),
            instructions: None,
            owner: self.owner.clone(),
            stop: self.stop.clone(),
            _stop_guard: CancellationToken::new().drop_guard(),
            log_level: self.log_level.clone(),
            peer: std::sync::OnceLock::new(),
            watching: std::sync::Mutex::default(),
        };
        tokio::spawn(async move {
            watcher
                .watch_list(CancellationToken::new(), || peer.notify_tool_list_changed())
                .await;
        });
    }

    /// `logging/setLevel`: from now on, what tools announce for this connection's owner
    /// (`process.exited`, `command_session.closed`, plugins' events) at or above `level`
    /// comes as `notifications/message`.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        let owner = self.owner_for(bound, &context)?;
        if self.log_level.set(request.level) {
            crate::logging::forward(
                &bound.host.services().notices,
                owner,
                self.log_level.clone(),
                context.peer.clone(),
                self.stop.clone(),
            );
        }
        Ok(())
    }

    /// 2026-07-28: `subscriptions/listen` with `toolsListChanged` is honoured.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The resources asked for are taken as asked (at most MAX_SUBSCRIPTIONS): whether
        // a plugin tells of a resource's changes is known once listening, not before.
        let mut accepted = SubscriptionFilter::builder().tools_list_changed().build();
        accepted.resource_subscriptions = requested
            .resource_subscriptions
            .as_ref()
            .map(|uris| uris.iter().take(MAX_SUBSCRIPTIONS).cloned().collect())
            .filter(|uris: &Vec<String>| !uris.is_empty());
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let ended = context.request_context().ct.clone();
        // The resources it subscribes to, each watched until the subscription ends.
        if let Some(uris) = context.accepted().resource_subscriptions.clone() {
            let libraries = self
                .libraries_for(context.request_context(), "tools:call")
                .await?;
            let sink = context.sink().clone();
            let updated = answers::forwarding(ended.clone(), move |uri: String| {
                let sink = sink.clone();
                async move {
                    let _ = sink.notify_resource_updated(uri).await;
                }
            });
            // Side by side: one slow server does not hold up the others (each ask is given
            // at most 10 s).
            let watches = uris.iter().map(|uri| {
                let watch = libraries.watch(uri, updated.clone(), ended.child_token());
                async move {
                    if let Err(e) = watch.await {
                        tracing::debug!(uri = %uri, error = %e, "a subscribed resource is not watched");
                    }
                }
            });
            futures_util::future::join_all(watches).await;
        }
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        self.watch_list(ended, || context.sink().notify_tool_list_changed())
            .await;
        Ok(())
    }
}

/// Whether a `tools/call` answer reports the tool's failure.
fn response_is_error(response: &CallToolResponse) -> bool {
    matches!(response, CallToolResponse::Complete(result) if result.is_error == Some(true))
}

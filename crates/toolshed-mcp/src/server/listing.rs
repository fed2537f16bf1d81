//! What one connection sees in `tools/list`: the host and session it is bound to, its
//! catalog mode and page size, the tools `tool_search` activated, list caching and the
//! watch that tells the client when its list changed.

use std::sync::Arc;

use rmcp::model::{ListToolsResult, PaginatedRequestParams, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::CancellationToken;
use toolshed_host::registry::ToolEntry;
use toolshed_host::{CompiledRules, Host, RuleError, Subject};

use super::{CatalogMode, McpServer, Session};
use crate::convert::tool_from_spec;

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

/// Whether `rules` (allow rules, as `[mcp] core`) take `entry`; `None` takes nothing.
fn matches(rules: &Option<CompiledRules>, entry: &ToolEntry) -> bool {
    rules.as_ref().is_some_and(|rules| {
        rules
            .refuse(&Subject::new(entry.spec(), &entry.plugin_id))
            .is_none()
    })
}

/// The host a server serves and the connection's narrowing, once both are there.
pub(super) struct Bound {
    pub(super) host: Arc<Host>,
    pub(super) session: Session,
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

/// The code-mode tool.
const CODE_TOOL: &str = "run_code";

/// How a connection is given the tools: each listed, through `run_code` only, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presentation {
    /// Each tool listed; `run_code` not.
    Native,
    /// Only `run_code` listed.
    Code,
    /// Both (the default).
    Both,
}

impl Bound {
    pub(super) fn new(host: Arc<Host>, session: Session) -> Self {
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
    pub(super) fn mode(&self, caller_narrowed: bool) -> CatalogMode {
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
    pub(super) fn listed(&self, entry: &ToolEntry, mode: CatalogMode) -> bool {
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
    pub(super) fn discovers(&self, mode: CatalogMode) -> bool {
        match mode {
            CatalogMode::Full => false,
            CatalogMode::Discover => true,
            CatalogMode::Standard => self.on_demand.is_some(),
        }
    }

    /// Adds `names` to the connection's list (discovery mode's `activate: true`); returns
    /// the names newly listed, and tells the list watchers when there are any.
    pub(super) fn activate(&self, names: &[String]) -> Vec<String> {
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
    fn list_of(
        &self,
        visible: &[ToolEntry],
        mode: CatalogMode,
        caller: Option<&toolshed_host::identity::Caller>,
    ) -> Vec<Tool> {
        let presentation = self.presentation(caller);
        let has_code = visible.iter().any(|e| e.spec().name == CODE_TOOL);
        // Code mode only: `run_code` alone, through which every tool is called.
        if presentation == Presentation::Code && has_code {
            return visible
                .iter()
                .filter(|e| e.spec().name == CODE_TOOL)
                .map(|e| tool_from_spec(e.spec()))
                .collect();
        }
        let mut tools = Vec::with_capacity(visible.len());
        let mut not_listed = Vec::new();
        for entry in visible {
            if presentation == Presentation::Native && entry.spec().name == CODE_TOOL {
                continue;
            }
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
        let catalog = self.host.catalog();
        catalog
            .tools()
            .into_iter()
            .filter(|t| self.is_visible(t))
            .filter(|t| self.list_unconfigured || catalog.unavailable(t).is_none())
            .collect()
    }

    /// What `tools/list` gives the connection's own caller (the list watchers compare
    /// it).
    fn visible_list(&self) -> Vec<Tool> {
        self.list_of(
            &self.visible_tools(),
            self.mode(self.caller_narrowed()),
            self.session.caller.as_ref(),
        )
    }

    /// How the tools are presented to `caller` (the connection's own when `None`): its
    /// token's `presentation:` scope, else the profile's `presentation`, else both ways.
    fn presentation(&self, caller: Option<&toolshed_host::identity::Caller>) -> Presentation {
        let scoped = caller
            .or(self.session.caller.as_ref())
            .and_then(|c| c.scopes.as_ref())
            .and_then(|scopes| {
                scopes
                    .iter()
                    .find_map(|s| s.strip_prefix("presentation:"))
                    .map(str::to_string)
            });
        let named = scoped.or_else(|| {
            let profile = self.session.profile.as_deref()?;
            self.host
                .config()
                .config
                .profiles
                .get(profile)?
                .presentation
                .clone()
        });
        match named.as_deref() {
            Some("code") => Presentation::Code,
            Some("native") => Presentation::Native,
            _ => Presentation::Both,
        }
    }

    /// Whether the connection's own caller (stdio started with an agent token) has tool
    /// rules.
    fn caller_narrowed(&self) -> bool {
        self.session
            .caller
            .as_ref()
            .is_some_and(|c| c.tools.is_some())
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

/// How long a client of the 2026-07-28 era may reuse a list it got (`ttlMs`, which that
/// era requires). Changes are announced sooner where the client listens: list-changed
/// notifications in a session, `subscriptions/listen` in the 2026-07-28 era.
pub(super) const LIST_TTL_MS: u64 = 60_000;

/// A list result with `ttlMs` and `cacheScope` for a request of the 2026-07-28 era (which
/// names its version); unchanged for an older one. Private: what a list holds depends on
/// the caller's token and profile.
macro_rules! cacheable {
    ($result:expr, $context:expr) => {{
        let result = $result;
        if $crate::server::era_2026(&$context) {
            result
                .with_ttl_ms($crate::server::listing::LIST_TTL_MS)
                .with_cache_scope(::rmcp::model::CacheScope::Private)
        } else {
            result
        }
    }};
}
pub(super) use cacheable;

/// The cursor of the page after the tool named `last`.
fn cursor_after(last: &str) -> String {
    format!("after:{last}")
}

impl McpServer {
    /// The tools this request's caller sees: the connection's, narrowed by an agent
    /// token's tool rules.
    pub(super) fn tools_for(bound: &Bound, context: &RequestContext<RoleServer>) -> Vec<ToolEntry> {
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

    /// `tools/list`: a page of the tools this request's caller sees, as its catalog mode
    /// lists them.
    pub(super) async fn tool_list(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        Self::require(bound, &context, "tools:list")?;
        let caller_narrowed = Self::caller_for(bound, &context).is_some_and(|c| c.tools.is_some());
        let caller = Self::caller_for(bound, &context);
        let mut tools: Vec<Tool> = bound.list_of(
            &Self::tools_for(bound, &context),
            bound.mode(caller_narrowed),
            caller.as_ref(),
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

    /// The tool `name` as listed, when the connection sees it (or it is one of the
    /// discovery tools the connection's catalog offers).
    pub(super) fn tool_get(&self, name: &str) -> Option<Tool> {
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
            .catalog()
            .lookup(name)
            .filter(|entry| bound.is_visible(entry) && entry.spec().name == name)
            .map(|entry| tool_from_spec(entry.spec()))
    }

    /// Waits for the catalog to change in a way this connection sees, then calls `send`;
    /// ends when `send` fails (the client is gone), the server is dropped or `until` fires.
    pub(super) async fn watch_list<F, Fut, E>(&self, until: CancellationToken, send: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let Ok(bound) = self.bound().await else {
            return;
        };
        let mut changes = bound.host.catalog().changes();
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

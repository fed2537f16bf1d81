//! The plugin registry: discovery, lifecycle and the tool index.
//!
//! Discovery walks the roots in trust order — system (compiled in), curated (shipped with
//! toolshed), user (the data dir, then the workspace) — and never stops at a bad plugin: a
//! manifest that cannot be read becomes a [`Diagnostic`], a plugin that fails to start goes
//! to [`PluginState::Error`] with its reason, and everything else still loads. An id found
//! twice keeps the more trusted plugin; a tool name claimed twice keeps the more trusted
//! plugin's tool. Both clashes are reported when they are found, not at call time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::{Map, Value};
use toolshed_core::{
    Grants, Health, LoadRequest, Plugin, PluginKind, PluginLoader, PluginManifest, Tool, ToolSpec,
};

use crate::events::{Event, EventBus};
use crate::manifest::{MANIFEST_NAMES, check_manifest_shallow, find_manifest, load_manifest};
use crate::store::StateStore;

/// The most plugin directories read from one root.
pub const MAX_PLUGINS_PER_ROOT: usize = 1000;

/// Where a plugin was found, most trusted first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Root {
    /// Compiled into toolshed.
    System,
    /// Shipped with toolshed in `plugins/`.
    Curated,
    /// Installed by the user (data dir) or brought by the workspace.
    User,
}

impl Root {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Curated => "curated",
            Self::User => "user",
        }
    }
}

/// A plugin's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginState {
    /// Present, not yet enabled.
    Installed,
    /// Enabled, not yet started.
    Enabled,
    /// Started; its tools are callable.
    Running,
    /// Turned off by a person; its tools are not callable.
    Disabled,
    /// Running, but a required variable or binary is missing: its tools answer Unconfigured.
    Degraded,
    /// Could not start; the reason says why.
    Error,
    /// Removed (only ever seen in the `plugin.state_changed` event of an uninstall).
    Uninstalled,
}

impl PluginState {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Installed => "installed",
            Self::Enabled => "enabled",
            Self::Running => "running",
            Self::Disabled => "disabled",
            Self::Degraded => "degraded",
            Self::Error => "error",
            Self::Uninstalled => "uninstalled",
        }
    }
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Something did not load.
    Error,
    /// Something loaded, with a caveat.
    Warning,
}

/// A problem found during discovery or registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// How serious.
    pub level: Level,
    /// The file or directory concerned.
    pub path: Option<PathBuf>,
    /// The manifest field concerned.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub problem: String,
    /// The plugin concerned, when known.
    pub plugin_id: Option<String>,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.problem)
    }
}

/// A plugin as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginInfo {
    /// The id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The version.
    pub version: String,
    /// What it offers.
    pub description: String,
    /// How it is implemented.
    pub kind: PluginKind,
    /// Where it was found.
    pub root: Root,
    /// Its directory, for plugins found on disk.
    pub dir: Option<PathBuf>,
    /// Its manifest file, for plugins found on disk.
    pub manifest_path: Option<PathBuf>,
    /// Its state.
    pub state: PluginState,
    /// Why it is not running, or what it lacks.
    pub reason: Option<String>,
    /// The names of its tools, as its manifest lists them.
    pub tools: Vec<String>,
}

/// What a plugin asks for and what it was granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantsInfo {
    /// The grants its manifest asks for by name (`http:api.example.com`, ...).
    pub declared: Vec<String>,
    /// The capabilities its manifest declares as `*`: whatever a person grants
    /// (`http`, `fs-read`, `fs-write`, `tool`).
    pub wildcards: Vec<String>,
    /// What was granted.
    pub granted: Vec<String>,
}

fn wildcards(m: &PluginManifest) -> Vec<String> {
    let caps = &m.capabilities;
    [
        (&caps.network, "http"),
        (&caps.fs_read, "fs-read"),
        (&caps.fs_write, "fs-write"),
        (&caps.tools, "tool"),
    ]
    .into_iter()
    .filter(|(list, _)| list.iter().any(|v| v == "*"))
    .map(|(_, kind)| kind.to_string())
    .collect()
}

fn has_dir(i: &Inner, id: &str) -> bool {
    i.slots
        .iter()
        .any(|s| s.manifest.id == id && s.dir.is_some())
}

/// A tool's input schema, compiled the first time a call needs it. Compiling a schema
/// (which meta-validates it) is most of the cost of indexing a tool, and most tools of a
/// session are never called: doing it lazily keeps it out of start-up. Schemas from
/// manifest files were compiled once already when the manifest was read (so a broken one
/// is reported at discovery); those of built-in and JavaScript plugins are made by
/// toolshed and tested.
pub struct LazyValidator {
    schema: Value,
    compiled: std::sync::OnceLock<Result<jsonschema::Validator, String>>,
}

impl LazyValidator {
    /// A validator for `schema`, not compiled yet.
    pub fn new(schema: Value) -> Self {
        Self {
            schema,
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// The compiled schema, or why it does not compile.
    pub fn get(&self) -> Result<&jsonschema::Validator, &str> {
        self.compiled
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }
}

/// A registered, callable tool.
#[derive(Clone)]
pub struct ToolEntry {
    /// The plugin that provides it.
    pub plugin_id: String,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Its input schema, compiled when first needed.
    pub validator: Arc<LazyValidator>,
    /// Set when the plugin is degraded: what is missing, and the variables to set.
    pub unconfigured: Option<(String, Vec<String>)>,
}

impl ToolEntry {
    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }
}

/// The roots discovery walks.
#[derive(Clone, Default)]
pub struct DiscoveryRoots {
    /// Plugins compiled into toolshed.
    pub system: Vec<Arc<dyn Plugin>>,
    /// Directories of curated plugins.
    pub curated: Vec<PathBuf>,
    /// Directories of user plugins, more trusted first.
    pub user: Vec<PathBuf>,
    /// What builds plugins of sandboxed kinds (`js`, `mcp`) from their directories.
    pub loaders: Vec<Arc<dyn PluginLoader>>,
}

/// A registry operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No plugin has that id.
    #[error("no plugin `{id}`{hint}; `toolshed plugins list` shows the installed plugins")]
    UnknownPlugin {
        /// The id asked for.
        id: String,
        /// Close ids, formatted.
        hint: String,
    },
    /// The state store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The plugin cannot do that in its current state or root.
    #[error("{0}")]
    Conflict(String),
    /// The request itself is wrong (a malformed or undeclared grant).
    #[error("{0}")]
    Invalid(String),
    /// Removing the plugin's files failed.
    #[error("cannot remove {path}: {reason}")]
    Remove {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

struct Slot {
    manifest: PluginManifest,
    root: Root,
    dir: Option<PathBuf>,
    manifest_path: Option<PathBuf>,
    plugin: Option<Arc<dyn Plugin>>,
    state: PluginState,
    reason: Option<String>,
    missing_env: Vec<String>,
    /// Input schemas of the plugin's tools, by tool name: each compiled the first time a
    /// call needs it, and kept until the plugin is loaded again.
    validators: BTreeMap<String, Arc<LazyValidator>>,
    /// For plugins a loader built: the grants they were built with.
    loaded_grants: Option<Grants>,
    /// The tool names the plugin served when it last ran (a sandboxed plugin's tools are
    /// known only once its code ran).
    last_tools: Vec<String>,
    /// For plugins found in a user root: what their files looked like when loaded.
    fingerprint: Option<u64>,
    /// For sandboxed plugins: the tools recorded when their code last ran, and the key of
    /// what it was loaded from ([`crate::lazy`]).
    recorded: Option<(String, Vec<ToolSpec>)>,
    /// The key of what a loader built the plugin from, this time.
    load_key: Option<String>,
}

#[derive(Default)]
struct Inner {
    slots: Vec<Slot>,
    tools: BTreeMap<String, ToolEntry>,
    discovery: Vec<Diagnostic>,
    registration: Vec<Diagnostic>,
}

/// The plugin registry.
pub struct Registry {
    inner: RwLock<Inner>,
    store: Arc<StateStore>,
    events: EventBus,
    /// Bumped each time the tool index is rebuilt.
    catalog: tokio::sync::watch::Sender<u64>,
    loaders: Vec<Arc<dyn PluginLoader>>,
    /// Serializes lifecycle changes (enable, disable, reload, grants, sync), so two of them
    /// never load or stop one plugin at the same time.
    lifecycle: tokio::sync::Mutex<()>,
    /// The user roots, watched for plugins added, changed and removed.
    user_roots: Vec<PathBuf>,
    /// Changes seen once in the user roots, by plugin directory: applied when the next
    /// look finds the same fingerprint (the files stopped changing).
    pending: std::sync::Mutex<BTreeMap<PathBuf, u64>>,
}

impl Registry {
    /// Discovers every plugin under `roots`, starts the enabled ones and indexes their tools.
    pub async fn discover(roots: DiscoveryRoots, store: Arc<StateStore>, events: EventBus) -> Self {
        let mut inner = Inner::default();
        let mut seen: BTreeMap<String, (Root, Option<PathBuf>)> = BTreeMap::new();
        let mut candidates = Vec::new();
        for plugin in roots.system {
            let manifest = plugin.manifest().clone();
            if let Err((field, problem)) = check_manifest_shallow(&manifest) {
                inner.discovery.push(Diagnostic {
                    level: Level::Error,
                    path: None,
                    field: Some(field),
                    problem: format!("built-in plugin manifest is invalid (a bug): {problem}"),
                    plugin_id: Some(manifest.id.clone()),
                });
                continue;
            }
            candidates.push((Root::System, manifest, Some(plugin), None, None));
        }
        for (root, dirs) in [(Root::Curated, &roots.curated), (Root::User, &roots.user)] {
            for dir in dirs {
                for (plugin_dir, found) in scan_root(dir, &mut inner.discovery) {
                    candidates.push((root, found.0, None, Some(plugin_dir), Some(found.1)));
                }
            }
        }
        for (root, manifest, plugin, dir, manifest_path) in candidates {
            if let Some((first_root, first_path)) = seen.get(&manifest.id) {
                let first = first_path
                    .as_ref()
                    .map(|p| format!("{} ({})", first_root.as_str(), p.display()))
                    .unwrap_or_else(|| first_root.as_str().to_string());
                inner.discovery.push(Diagnostic {
                    level: Level::Warning,
                    path: manifest_path.clone(),
                    field: Some("id".into()),
                    problem: format!(
                        "plugin id `{}` is already provided by the {first} root, which is more trusted; this copy is ignored. Give it another id to use both",
                        manifest.id
                    ),
                    plugin_id: Some(manifest.id.clone()),
                });
                continue;
            }
            seen.insert(manifest.id.clone(), (root, manifest_path.clone()));
            inner.slots.push(Slot {
                manifest,
                root,
                dir,
                manifest_path,
                plugin,
                state: PluginState::Installed,
                reason: None,
                missing_env: Vec::new(),
                validators: BTreeMap::new(),
                loaded_grants: None,
                last_tools: Vec::new(),
                fingerprint: None,
                recorded: None,
                load_key: None,
            });
        }
        let registry = Self {
            inner: RwLock::new(inner),
            store,
            events,
            catalog: tokio::sync::watch::Sender::new(0),
            loaders: roots.loaders,
            lifecycle: tokio::sync::Mutex::new(()),
            user_roots: roots.user,
            pending: std::sync::Mutex::new(BTreeMap::new()),
        };
        let known_tools = registry.store.plugin_tools().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the recorded tools of plugins");
            BTreeMap::new()
        });
        registry.write(|i| {
            for slot in &mut i.slots {
                if slot.root == Root::User {
                    slot.fingerprint = slot.dir.as_deref().map(fingerprint);
                }
                if slot.dir.is_some()
                    && let Some((key, specs)) = known_tools.get(&slot.manifest.id)
                {
                    slot.last_tools = specs.iter().map(|t| t.name.clone()).collect();
                    slot.recorded = Some((key.clone(), specs.clone()));
                }
            }
        });
        let ids: Vec<String> =
            registry.read(|i| i.slots.iter().map(|s| s.manifest.id.clone()).collect());
        for id in ids {
            let enabled = match registry.store.plugin_enabled(&id) {
                Ok(value) => value.unwrap_or(true),
                Err(e) => {
                    tracing::warn!(plugin = %id, error = %e, "cannot read plugin state; treating it as enabled");
                    true
                }
            };
            // Nobody can be subscribed yet: the start-up states are not events.
            let _ = registry.bring_up(&id, enabled).await;
        }
        registry.reindex();
        registry
    }

    fn read<T>(&self, f: impl FnOnce(&Inner) -> T) -> T {
        f(&self.inner.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn write<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.write().unwrap_or_else(|p| p.into_inner()))
    }

    /// Starts (or stops) one plugin and records its new state. Never holds the lock across
    /// the plugin's own lifecycle calls. Returns the state change to publish once the tool
    /// index is rebuilt (so a subscriber that lists tools on the event sees the new list).
    /// A plugin a loader built is dropped when it stops, so enabling it again runs its code
    /// afresh.
    async fn bring_up(&self, id: &str, enabled: bool) -> Option<Event> {
        let (kind, plugin, manifest, dir) = self.read(|i| {
            i.slots.iter().find(|s| s.manifest.id == id).map(|s| {
                (
                    s.manifest.kind,
                    s.plugin.clone(),
                    s.manifest.clone(),
                    s.dir.clone(),
                )
            })
        })?;
        let (state, reason, missing_env) = if !enabled {
            if let Some(plugin) = &plugin
                && let Err(e) = plugin.stop().await
            {
                tracing::warn!(plugin = %id, error = %e, "plugin failed to stop cleanly");
            }
            self.unload(id);
            let why = format!("disabled; enable it with `toolshed plugins enable {id}`");
            (PluginState::Disabled, Some(why), Vec::new())
        } else {
            let plugin = match plugin {
                Some(plugin) => Ok(plugin),
                None => self.load(id, kind, &manifest, dir),
            };
            match plugin {
                Err(reason) => (PluginState::Error, Some(reason), Vec::new()),
                Ok(plugin) => match start(plugin.as_ref()).await {
                    Err(reason) => {
                        if self.read(|i| is_loaded(i, id)) {
                            if let Err(e) = plugin.stop().await {
                                tracing::warn!(plugin = %id, error = %e, "plugin failed to stop after a failed start");
                            }
                            self.unload(id);
                        }
                        (PluginState::Error, Some(reason), Vec::new())
                    }
                    Ok(()) => {
                        let names: Vec<String> = plugin
                            .tools()
                            .iter()
                            .map(|t| t.spec().name.clone())
                            .collect();
                        let remember = self.write(|i| {
                            let slot = i.slots.iter_mut().find(|s| s.manifest.id == id)?;
                            slot.last_tools = names;
                            let key = slot.load_key.clone()?;
                            if slot.recorded.as_ref().is_some_and(|(k, _)| *k == key) {
                                return None;
                            }
                            let specs: Vec<ToolSpec> =
                                plugin.tools().iter().map(|t| t.spec().clone()).collect();
                            slot.recorded = Some((key.clone(), specs.clone()));
                            Some((key, specs))
                        });
                        if let Some((key, specs)) = remember
                            && let Err(e) = self.store.set_plugin_tools(id, &key, &specs)
                        {
                            tracing::warn!(plugin = %id, error = %e, "cannot record the plugin's tools");
                        }
                        match unmet_contract(&manifest) {
                            Some((reason, missing)) => {
                                (PluginState::Degraded, Some(reason), missing)
                            }
                            None => (PluginState::Running, None, Vec::new()),
                        }
                    }
                },
            }
        };
        let changed = self.write(|i| {
            let slot = i.slots.iter_mut().find(|s| s.manifest.id == id)?;
            let changed = slot.state != state || slot.reason != reason;
            slot.state = state;
            slot.reason = reason.clone();
            slot.missing_env = missing_env;
            Some(changed)
        });
        (changed == Some(true)).then(|| Event::PluginStateChanged {
            plugin_id: id.to_string(),
            state,
            reason,
        })
    }

    /// Builds a plugin of a sandboxed kind from its directory with its loader, and keeps it
    /// in its slot. The error is the plugin's reason for being in `error`.
    fn load(
        &self,
        id: &str,
        kind: PluginKind,
        manifest: &PluginManifest,
        dir: Option<PathBuf>,
    ) -> Result<Arc<dyn Plugin>, String> {
        let loader = self.loaders.iter().find(|l| l.kind() == kind);
        let (Some(loader), Some(dir)) = (loader, dir) else {
            return Err(match kind {
                PluginKind::Builtin => format!(
                    "kind `builtin` is reserved for plugins compiled into toolshed, and none has id `{id}`; use kind `js` or `mcp`"
                ),
                other => format!(
                    "plugin kind `{}` cannot run in this build yet; its tools are listed but not callable",
                    other.as_str()
                ),
            });
        };
        let stored = self
            .store
            .grants(id)
            .map_err(|e| format!("cannot read the plugin's grants: {e}"))?;
        let grants = crate::grants::to_grants(&stored);
        let config = self.resolved_config(id);
        let key = crate::lazy::load_key(fingerprint(&dir), &config);
        let request = LoadRequest {
            manifest: manifest.clone(),
            dir,
            config,
            grants: grants.clone(),
        };
        let recorded = self.read(|i| {
            i.slots
                .iter()
                .find(|s| s.manifest.id == id)
                .and_then(|s| s.recorded.clone())
        });
        let plugin: Arc<dyn Plugin> = match recorded {
            // Listed from the record; the code runs at the first call.
            Some((recorded_key, specs)) if recorded_key == key && !specs.is_empty() => {
                Arc::new(crate::lazy::LazyPlugin::new(
                    loader.clone(),
                    request,
                    key.clone(),
                    specs,
                    self.store.clone(),
                ))
            }
            _ => loader
                .load(request)
                .map_err(|e| format!("cannot load: {e}"))?,
        };
        self.write(|i| {
            if let Some(slot) = i.slots.iter_mut().find(|s| s.manifest.id == id) {
                slot.plugin = Some(plugin.clone());
                slot.loaded_grants = Some(grants);
                slot.load_key = Some(key);
                slot.validators.clear();
            }
        });
        Ok(plugin)
    }

    /// Drops the instance of a plugin a loader built (after it stopped).
    fn unload(&self, id: &str) {
        self.write(|i| {
            if let Some(slot) = i.slots.iter_mut().find(|s| s.manifest.id == id)
                && slot.loaded_grants.is_some()
            {
                slot.plugin = None;
                slot.loaded_grants = None;
                slot.validators.clear();
            }
        });
    }

    /// Rebuilds the tool index from the running and degraded plugins, in trust order.
    fn reindex(&self) {
        self.write(|inner| {
            let mut tools: BTreeMap<String, ToolEntry> = BTreeMap::new();
            let mut diags = Vec::new();
            for slot in &mut inner.slots {
                if !matches!(slot.state, PluginState::Running | PluginState::Degraded) {
                    continue;
                }
                let Some(plugin) = &slot.plugin else { continue };
                let unconfigured = (slot.state == PluginState::Degraded)
                    .then(|| (slot.reason.clone().unwrap_or_default(), slot.missing_env.clone()));
                for tool in plugin.tools() {
                    let name = tool.spec().name.clone();
                    if let Some(existing) = tools.get(&name) {
                        diags.push(Diagnostic {
                            level: Level::Error,
                            path: slot.manifest_path.clone(),
                            field: Some("tools".into()),
                            problem: format!(
                                "tool `{name}` of plugin `{}` clashes with the tool of the same name from plugin `{}`, which is more trusted; it is not registered. Rename it",
                                slot.manifest.id, existing.plugin_id
                            ),
                            plugin_id: Some(slot.manifest.id.clone()),
                        });
                        continue;
                    }
                    let validator = slot
                        .validators
                        .entry(name.clone())
                        .or_insert_with(|| {
                            Arc::new(LazyValidator::new(tool.spec().input_schema.clone()))
                        })
                        .clone();
                    tools.insert(
                        name,
                        ToolEntry {
                            plugin_id: slot.manifest.id.clone(),
                            tool,
                            validator,
                            unconfigured: unconfigured.clone(),
                        },
                    );
                }
            }
            inner.tools = tools;
            inner.registration = diags;
        });
        self.catalog.send_modify(|generation| *generation += 1);
    }

    /// Wakes its holder each time the tool index is rebuilt (a plugin enabled, disabled,
    /// installed or reloaded). Several rebuilds in a row may wake it once; the holder
    /// compares what it sees to decide whether anything changed for it.
    pub fn catalog_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.catalog.subscribe()
    }

    /// The registered tool named `name`.
    pub fn lookup(&self, name: &str) -> Option<ToolEntry> {
        self.read(|i| i.tools.get(name).cloned())
    }

    /// Every registered tool, sorted by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.read(|i| i.tools.values().cloned().collect())
    }

    /// Every registered tool name, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.read(|i| i.tools.keys().cloned().collect())
    }

    /// The plugin that lists `tool` in its manifest but cannot serve it now, with its state
    /// and reason.
    pub fn unavailable_tool(&self, tool: &str) -> Option<(String, PluginState, Option<String>)> {
        self.read(|i| {
            i.slots
                .iter()
                .filter(|s| !matches!(s.state, PluginState::Running | PluginState::Degraded))
                .find(|s| {
                    s.manifest.tools.iter().any(|t| t.name == tool)
                        || s.last_tools.iter().any(|t| t == tool)
                })
                .map(|s| (s.manifest.id.clone(), s.state, s.reason.clone()))
        })
    }

    /// Every plugin, in trust order.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.read(|i| i.slots.iter().map(info).collect())
    }

    /// One plugin.
    pub fn plugin(&self, id: &str) -> Option<PluginInfo> {
        self.read(|i| i.slots.iter().find(|s| s.manifest.id == id).map(info))
    }

    /// The plugin's manifest.
    pub fn manifest(&self, id: &str) -> Option<PluginManifest> {
        self.read(|i| {
            i.slots
                .iter()
                .find(|s| s.manifest.id == id)
                .map(|s| s.manifest.clone())
        })
    }

    /// The plugin's configuration: manifest defaults overlaid with stored values.
    /// Runs on every call: it copies the defaults, never the whole manifest.
    pub fn resolved_config(&self, id: &str) -> Map<String, Value> {
        let defaults = self.read(|i| {
            let slot = i.slots.iter().find(|s| s.manifest.id == id)?;
            if slot.manifest.config.is_empty() {
                return None;
            }
            Some(
                slot.manifest
                    .config
                    .iter()
                    .filter_map(|f| f.default.clone().map(|d| (f.key.clone(), d)))
                    .collect::<Map<String, Value>>(),
            )
        });
        let Some(mut config) = defaults else {
            return Map::new();
        };
        match self.store.config_values(id) {
            Ok(values) => config.extend(values),
            Err(e) => tracing::warn!(plugin = %id, error = %e, "cannot read plugin config"),
        }
        config
    }

    /// Every discovery and registration problem.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.read(|i| i.discovery.iter().chain(&i.registration).cloned().collect())
    }

    /// Enables or disables a plugin, persists the choice and updates the tool index.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<PluginInfo, RegistryError> {
        if self.plugin(id).is_none() {
            return Err(self.unknown(id));
        }
        let _lifecycle = self.lifecycle.lock().await;
        self.store.set_plugin_enabled(id, enabled)?;
        let change = self.bring_up(id, enabled).await;
        self.reindex();
        if let Some(event) = change {
            self.events.publish(event);
        }
        self.known(id)
    }

    /// Restarts a running plugin: stops it and starts it again (its sessions and background
    /// work end). A plugin found on disk is read again first: its manifest and, for
    /// sandboxed kinds, its code. A disabled plugin is refused: enable it instead.
    pub async fn reload(&self, id: &str) -> Result<PluginInfo, RegistryError> {
        let _lifecycle = self.lifecycle.lock().await;
        let info = self.known(id)?;
        if info.state == PluginState::Disabled {
            return Err(RegistryError::Conflict(format!(
                "plugin `{id}` is disabled; enable it with `toolshed plugins enable {id}` instead of reloading"
            )));
        }
        self.restart(id, "reload").await;
        self.known(id)
    }

    /// Stops a plugin, reads a disk plugin's manifest again, drops an instance a loader
    /// built, starts it and publishes the change. The caller holds the lifecycle lock.
    async fn restart(&self, id: &str, why: &str) {
        self.stop_plugin(id, why).await;
        self.unload(id);
        let reread = self
            .read(|i| {
                i.slots
                    .iter()
                    .find(|s| s.manifest.id == id)
                    .map(|s| s.manifest_path.clone())
            })
            .flatten()
            .map(|path| match load_manifest(&path) {
                Ok(m) if m.id != id => Err(format!(
                    "its manifest now says id `{}`; a plugin keeps its id: uninstall `{id}` and install the new one",
                    m.id
                )),
                Ok(m) => Ok(m),
                Err(e) => Err(format!("its manifest cannot be read again: {e}")),
            });
        // A plugin a person disabled stays off, whatever brought it here (its files
        // changed, it was installed again).
        let enabled = self.store.plugin_enabled(id).ok().flatten().unwrap_or(true);
        let change = match reread {
            Some(Err(reason)) if enabled => self.set_error(id, reason),
            Some(Err(_)) => self.bring_up(id, false).await,
            Some(Ok(manifest)) => {
                self.write(|i| {
                    if let Some(slot) = i.slots.iter_mut().find(|s| s.manifest.id == id) {
                        if slot.manifest != manifest {
                            slot.validators.clear();
                        }
                        slot.manifest = manifest;
                    }
                });
                self.bring_up(id, enabled).await
            }
            None => self.bring_up(id, enabled).await,
        };
        self.reindex();
        if let Some(event) = change {
            self.events.publish(event);
        }
    }

    /// Puts a plugin in `error` with `reason`; returns the change to publish.
    fn set_error(&self, id: &str, reason: String) -> Option<Event> {
        let changed = self.write(|i| {
            let slot = i.slots.iter_mut().find(|s| s.manifest.id == id)?;
            let changed = slot.state != PluginState::Error || slot.reason.as_ref() != Some(&reason);
            slot.state = PluginState::Error;
            slot.reason = Some(reason.clone());
            Some(changed)
        });
        (changed == Some(true)).then(|| Event::PluginStateChanged {
            plugin_id: id.to_string(),
            state: PluginState::Error,
            reason: Some(reason),
        })
    }

    /// What a plugin asks for (`declared`, as grants) and what it was granted.
    pub fn grants(&self, id: &str) -> Result<GrantsInfo, RegistryError> {
        let manifest = self.manifest(id).ok_or_else(|| self.unknown(id))?;
        Ok(GrantsInfo {
            declared: crate::grants::declared(&manifest),
            wildcards: wildcards(&manifest),
            granted: self.store.grants(id)?,
        })
    }

    /// Grants and revokes capabilities of a plugin, then reloads it if it is loaded, so its
    /// code sees the new grants at once. Every grant is checked against what the manifest
    /// declares before anything is stored.
    pub async fn change_grants(
        &self,
        id: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<GrantsInfo, RegistryError> {
        let _lifecycle = self.lifecycle.lock().await;
        let manifest = self.manifest(id).ok_or_else(|| self.unknown(id))?;
        let parse = |list: &[String]| -> Result<Vec<String>, RegistryError> {
            list.iter()
                .map(|text| {
                    crate::grants::Grant::parse(text)
                        .map(|g| g.to_text())
                        .map_err(RegistryError::Invalid)
                })
                .collect()
        };
        let add = parse(add)?;
        let remove = parse(remove)?;
        for text in &add {
            crate::grants::Grant::parse(text)
                .map_err(RegistryError::Invalid)?
                .check_declared(&manifest)
                .map_err(RegistryError::Invalid)?;
        }
        let mut after: BTreeSet<String> = self.store.grants(id)?.into_iter().collect();
        after.extend(add.iter().cloned());
        for text in &remove {
            after.remove(text);
        }
        if after.len() > crate::grants::MAX_GRANTS {
            return Err(RegistryError::Invalid(format!(
                "plugin `{id}` would hold {} grants; the most is {}",
                after.len(),
                crate::grants::MAX_GRANTS
            )));
        }
        self.store.change_grants(id, &add, &remove)?;
        let loaded = self.read(|i| is_loaded(i, id));
        let state = self.plugin(id).map(|p| p.state);
        if loaded || (state == Some(PluginState::Error) && self.read(|i| has_dir(i, id))) {
            self.restart(id, "grant change").await;
        }
        self.grants(id)
    }

    /// Removes a plugin installed in a user root: stops it, deletes its directory and
    /// forgets its stored state and config. System and curated plugins cannot be removed
    /// (disable them instead).
    pub async fn uninstall(&self, id: &str) -> Result<PluginInfo, RegistryError> {
        let _lifecycle = self.lifecycle.lock().await;
        let info = self.known(id)?;
        if info.root != Root::User {
            return Err(RegistryError::Conflict(format!(
                "plugin `{id}` comes with toolshed ({} root) and cannot be uninstalled; disable it with `toolshed plugins disable {id}`",
                info.root.as_str()
            )));
        }
        self.stop_plugin(id, "uninstall").await;
        if let Some(dir) = &info.dir {
            std::fs::remove_dir_all(dir).map_err(|e| RegistryError::Remove {
                path: dir.clone(),
                reason: e.to_string(),
            })?;
        }
        self.store.forget_plugin(id)?;
        self.write(|i| i.slots.retain(|s| s.manifest.id != id));
        self.reindex();
        self.events.publish(Event::PluginStateChanged {
            plugin_id: id.to_string(),
            state: PluginState::Uninstalled,
            reason: None,
        });
        Ok(info)
    }

    /// Stops a plugin's background work (for `why`), logging a failure.
    async fn stop_plugin(&self, id: &str, why: &str) {
        let plugin = self.read(|i| {
            i.slots
                .iter()
                .find(|s| s.manifest.id == id)
                .and_then(|s| s.plugin.clone())
        });
        if let Some(plugin) = plugin
            && let Err(e) = plugin.stop().await
        {
            tracing::warn!(plugin = %id, error = %e, "plugin failed to stop cleanly on {why}");
        }
    }

    fn known(&self, id: &str) -> Result<PluginInfo, RegistryError> {
        self.plugin(id).ok_or_else(|| self.unknown(id))
    }

    /// The error for an id no plugin has, naming close ids.
    fn unknown(&self, id: &str) -> RegistryError {
        let ids: Vec<String> =
            self.read(|i| i.slots.iter().map(|s| s.manifest.id.clone()).collect());
        let close = crate::suggest::closest(id, ids.iter().map(String::as_str), 3);
        let hint = if close.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", close.join(", "))
        };
        RegistryError::UnknownPlugin {
            id: id.to_string(),
            hint,
        }
    }

    /// Applies enable and disable choices another process recorded in the state store (a
    /// `toolshed plugins disable` while a server runs), and lets config values it stored
    /// (`toolshed plugins config`) reach the next calls. Returns the plugins whose state
    /// changed; their `PluginStateChanged` events are published after the tool index is
    /// rebuilt.
    pub async fn sync_from_store(&self) -> Result<Vec<String>, RegistryError> {
        let _lifecycle = self.lifecycle.lock().await;
        self.store.forget_config_values();
        let all_grants = self.store.all_grants()?;
        let regrant: Vec<String> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| {
                    s.loaded_grants.as_ref().is_some_and(|g| {
                        let stored = all_grants.get(&s.manifest.id).map(Vec::as_slice);
                        *g != crate::grants::to_grants(stored.unwrap_or_default())
                    })
                })
                .map(|s| s.manifest.id.clone())
                .collect()
        });
        for id in &regrant {
            self.restart(id, "grant change").await;
        }
        let stored = self.store.plugin_states()?;
        let differing: Vec<(String, bool)> = self.read(|i| {
            i.slots
                .iter()
                .filter_map(|s| {
                    let want = stored.get(&s.manifest.id).copied().unwrap_or(true);
                    let is = s.state != PluginState::Disabled;
                    (want != is).then(|| (s.manifest.id.clone(), want))
                })
                .collect()
        });
        if differing.is_empty() {
            return Ok(regrant);
        }
        let mut events = Vec::new();
        for (id, enabled) in &differing {
            events.extend(self.bring_up(id, *enabled).await);
        }
        self.reindex();
        for event in events {
            self.events.publish(event);
        }
        Ok(regrant
            .into_iter()
            .chain(differing.into_iter().map(|(id, _)| id))
            .collect())
    }

    /// Looks at the user plugin roots and applies what changed there since the last look:
    /// a new plugin directory is loaded and started (if not disabled), a changed one is
    /// reloaded, a removed one is stopped and forgotten (its stored state is kept, in case
    /// it comes back). A change is applied only once two looks in a row see the same files,
    /// so a copy in progress is not loaded half done. Each plugin touched is published as a
    /// `PluginStateChanged` event. Returns the ids touched.
    pub async fn rescan_user_roots(&self) -> Vec<String> {
        // Looked at under the lock, so an install adopted meanwhile is in both views.
        let _lifecycle = self.lifecycle.lock().await;
        let roots = self.user_roots.clone();
        let seen = tokio::task::spawn_blocking(move || list_plugin_dirs(&roots))
            .await
            .unwrap_or_default();
        let known: BTreeMap<PathBuf, (String, Option<u64>)> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| s.root == Root::User)
                .filter_map(|s| {
                    s.dir
                        .clone()
                        .map(|d| (d, (s.manifest.id.clone(), s.fingerprint)))
                })
                .collect()
        });
        let mut ready = Vec::new();
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.retain(|dir, _| seen.contains_key(dir));
            for (dir, print) in &seen {
                if known.get(dir).is_some_and(|(_, old)| *old == Some(*print)) {
                    pending.remove(dir);
                    continue;
                }
                if pending.get(dir) == Some(print) {
                    pending.remove(dir);
                    ready.push((dir.clone(), *print));
                } else {
                    pending.insert(dir.clone(), *print);
                }
            }
        }
        let mut touched = Vec::new();
        let mut events = Vec::new();
        for (dir, (id, _)) in &known {
            if seen.contains_key(dir) {
                continue;
            }
            self.stop_plugin(id, "removal").await;
            self.write(|i| i.slots.retain(|s| &s.manifest.id != id));
            events.push(Event::PluginStateChanged {
                plugin_id: id.clone(),
                state: PluginState::Uninstalled,
                reason: None,
            });
            touched.push(id.clone());
        }
        for (dir, print) in ready {
            if let Some((id, _)) = known.get(&dir) {
                self.write(|i| {
                    if let Some(slot) = i.slots.iter_mut().find(|s| &s.manifest.id == id) {
                        slot.fingerprint = Some(print);
                    }
                });
                self.restart(id, "files changed").await;
                if let Some(info) = self.plugin(id) {
                    events.push(Event::PluginStateChanged {
                        plugin_id: id.clone(),
                        state: info.state,
                        reason: info.reason,
                    });
                }
                touched.push(id.clone());
                continue;
            }
            if let Some(id) = self.add_found(&dir, print).await {
                if let Some(info) = self.plugin(&id) {
                    events.push(Event::PluginStateChanged {
                        plugin_id: id.clone(),
                        state: info.state,
                        reason: info.reason,
                    });
                }
                touched.push(id);
            }
        }
        if !touched.is_empty() {
            self.reindex();
            for event in events {
                self.events.publish(event);
            }
        }
        touched
    }

    /// Loads a plugin just installed into `dir` (a directory of a user root) at once, rather
    /// than on the watcher's next look: a new plugin is added and started, a replaced one
    /// is reloaded. Returns the plugin, or `None` when the directory holds no usable
    /// plugin (a diagnostic says why).
    pub async fn adopt(&self, dir: &Path) -> Option<PluginInfo> {
        let print = {
            let dir = dir.to_path_buf();
            tokio::task::spawn_blocking(move || fingerprint(&dir))
                .await
                .ok()?
        };
        let _lifecycle = self.lifecycle.lock().await;
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(dir);
        let existing = self.read(|i| {
            i.slots
                .iter()
                .find(|s| s.dir.as_deref() == Some(dir))
                .map(|s| s.manifest.id.clone())
        });
        let id = match existing {
            Some(id) => {
                self.write(|i| {
                    if let Some(slot) = i.slots.iter_mut().find(|s| s.manifest.id == id) {
                        slot.fingerprint = Some(print);
                    }
                });
                self.restart(&id, "replacement").await;
                id
            }
            None => {
                let id = self.add_found(dir, print).await?;
                self.reindex();
                id
            }
        };
        let info = self.plugin(&id)?;
        self.events.publish(Event::PluginStateChanged {
            plugin_id: id,
            state: info.state,
            reason: info.reason.clone(),
        });
        Some(info)
    }

    /// Adds a plugin directory that appeared in a user root and brings it up. Returns its
    /// id, or `None` (with a diagnostic) when it cannot be used.
    async fn add_found(&self, dir: &Path, print: u64) -> Option<String> {
        let diagnose = |level: Level, path: PathBuf, field: Option<String>, problem: String| {
            self.write(|i| {
                i.discovery
                    .retain(|d| d.path.as_deref() != Some(path.as_path()));
                i.discovery.push(Diagnostic {
                    level,
                    path: Some(path),
                    field,
                    problem,
                    plugin_id: None,
                });
            });
        };
        let Some(path) = find_manifest(dir) else {
            diagnose(
                Level::Warning,
                dir.to_path_buf(),
                None,
                format!(
                    "no manifest found (looked for {}); not a plugin",
                    MANIFEST_NAMES.join(", ")
                ),
            );
            return None;
        };
        let manifest = match load_manifest(&path) {
            Ok(m) => m,
            Err(e) => {
                diagnose(Level::Error, e.path, Some(e.field), e.problem);
                return None;
            }
        };
        let id = manifest.id.clone();
        if let Some(other) = self.plugin(&id) {
            let at = other
                .dir
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| other.root.as_str().to_string());
            diagnose(
                Level::Warning,
                path,
                Some("id".into()),
                format!("plugin id `{id}` is already provided by {at}; this copy is ignored"),
            );
            return None;
        }
        self.write(|i| {
            i.discovery.retain(|d| {
                d.path
                    .as_deref()
                    .is_none_or(|p| p != dir && p != path.as_path())
            });
            i.slots.push(Slot {
                manifest,
                root: Root::User,
                dir: Some(dir.to_path_buf()),
                manifest_path: Some(path),
                plugin: None,
                state: PluginState::Installed,
                reason: None,
                missing_env: Vec::new(),
                validators: BTreeMap::new(),
                loaded_grants: None,
                last_tools: Vec::new(),
                fingerprint: Some(print),
                recorded: None,
                load_key: None,
            });
        });
        let enabled = self
            .store
            .plugin_enabled(&id)
            .ok()
            .flatten()
            .unwrap_or(true);
        let _ = self.bring_up(&id, enabled).await;
        Some(id)
    }

    /// Stops every running plugin.
    pub async fn shutdown(&self) {
        let plugins: Vec<(String, Arc<dyn Plugin>)> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| matches!(s.state, PluginState::Running | PluginState::Degraded))
                .filter_map(|s| s.plugin.clone().map(|p| (s.manifest.id.clone(), p)))
                .collect()
        });
        for (id, plugin) in plugins {
            if let Err(e) = plugin.stop().await {
                tracing::warn!(plugin = %id, error = %e, "plugin failed to stop cleanly");
            }
        }
    }
}

/// Whether plugin `id` was built by a loader (and is loaded now).
fn is_loaded(i: &Inner, id: &str) -> bool {
    i.slots
        .iter()
        .any(|s| s.manifest.id == id && s.loaded_grants.is_some())
}

fn info(s: &Slot) -> PluginInfo {
    PluginInfo {
        id: s.manifest.id.clone(),
        name: s.manifest.name.clone(),
        version: s.manifest.version.clone(),
        description: s.manifest.description.clone(),
        kind: s.manifest.kind,
        root: s.root,
        dir: s.dir.clone(),
        manifest_path: s.manifest_path.clone(),
        state: s.state,
        reason: s.reason.clone(),
        tools: if s.last_tools.is_empty() {
            s.manifest.tools.iter().map(|t| t.name.clone()).collect()
        } else {
            s.last_tools.clone()
        },
    }
}

async fn start(plugin: &dyn Plugin) -> Result<(), String> {
    plugin
        .init()
        .await
        .map_err(|e| format!("init failed: {e}"))?;
    plugin
        .start()
        .await
        .map_err(|e| format!("start failed: {e}"))?;
    match plugin.health().await {
        Health::Failed(reason) => Err(format!("unhealthy after start: {reason}")),
        Health::Ok | Health::Degraded(_) => Ok(()),
    }
}

/// What the plugin's env contract or requirements lack: a reason and the variables to set.
fn unmet_contract(m: &PluginManifest) -> Option<(String, Vec<String>)> {
    let missing_env: Vec<String> = m
        .env
        .iter()
        .filter(|v| v.required && std::env::var_os(&v.name).is_none_or(|x| x.is_empty()))
        .map(|v| v.name.clone())
        .collect();
    let missing_bins: Vec<String> = m
        .requirements
        .iter()
        .filter(|r| !r.optional && find_on_path(&r.binary).is_none())
        .map(|r| r.binary.clone())
        .collect();
    let mut parts = Vec::new();
    if !missing_env.is_empty() {
        parts.push(format!(
            "set the environment variable(s) {}",
            missing_env.join(", ")
        ));
    }
    if !missing_bins.is_empty() {
        parts.push(format!(
            "install {} (not found on PATH)",
            missing_bins.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| {
        (
            format!("plugin `{}` is not configured: {}", m.id, parts.join("; ")),
            missing_env,
        )
    })
}

/// The first executable file named `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The most files and directories looked at when fingerprinting one plugin directory.
const MAX_FINGERPRINT_ENTRIES: usize = 2000;

/// A hash of a plugin directory's file names, sizes, modes and modification times (links
/// are not followed; at most [`MAX_FINGERPRINT_ENTRIES`] entries, 8 levels deep).
fn fingerprint(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((at, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            seen += 1;
            if seen > MAX_FINGERPRINT_ENTRIES {
                return hasher.finish();
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            entry.path().hash(&mut hasher);
            (meta.len(), meta.mode(), meta.mtime(), meta.mtime_nsec()).hash(&mut hasher);
            if meta.is_dir() && depth < 8 {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    hasher.finish()
}

/// Every plugin directory (not hidden) under the roots, with its fingerprint.
fn list_plugin_dirs(roots: &[PathBuf]) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok).take(MAX_PLUGINS_PER_ROOT) {
            let hidden = entry
                .file_name()
                .to_str()
                .is_none_or(|n| n.starts_with('.'));
            if hidden || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            let print = fingerprint(&path);
            out.insert(path, print);
        }
    }
    out
}

/// The plugin directories under one root with their manifests; problems become diagnostics.
fn scan_root(
    root: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(PathBuf, (PluginManifest, PathBuf))> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            diags.push(Diagnostic {
                level: Level::Error,
                path: Some(root.to_path_buf()),
                field: None,
                problem: format!("cannot read plugin directory: {e}"),
                plugin_id: None,
            });
            return Vec::new();
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    dirs.sort();
    if dirs.len() > MAX_PLUGINS_PER_ROOT {
        diags.push(Diagnostic {
            level: Level::Warning,
            path: Some(root.to_path_buf()),
            field: None,
            problem: format!(
                "{} plugin directories; only the first {MAX_PLUGINS_PER_ROOT} (by name) are read",
                dirs.len()
            ),
            plugin_id: None,
        });
        dirs.truncate(MAX_PLUGINS_PER_ROOT);
    }
    let mut found = Vec::new();
    let mut ids = BTreeSet::new();
    for dir in dirs {
        let Some(path) = find_manifest(&dir) else {
            diags.push(Diagnostic {
                level: Level::Warning,
                path: Some(dir.clone()),
                field: None,
                problem: format!(
                    "no manifest found (looked for {}); not a plugin",
                    MANIFEST_NAMES.join(", ")
                ),
                plugin_id: None,
            });
            continue;
        };
        match load_manifest(&path) {
            Ok(manifest) => {
                ids.insert(manifest.id.clone());
                found.push((dir, (manifest, path)));
            }
            Err(e) => diags.push(Diagnostic {
                level: Level::Error,
                path: Some(e.path),
                field: Some(e.field),
                problem: e.problem,
                plugin_id: e.plugin_id,
            }),
        }
    }
    found
}

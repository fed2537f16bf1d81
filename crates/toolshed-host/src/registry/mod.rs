//! The plugin registry: discovery, lifecycle, the tool catalog and watching.
//!
//! Discovery walks the roots in trust order — system (compiled in), curated (shipped with
//! toolshed), user (the data dir, then the workspace) — and never stops at a bad plugin: a
//! manifest that cannot be read becomes a [`Diagnostic`], a plugin that fails to start goes
//! to [`PluginState::Error`] with its reason, and everything else still loads. An id found
//! twice keeps the more trusted plugin; a tool name claimed twice keeps the more trusted
//! plugin's tool. Both clashes are reported when they are found, not at call time.
//!
//! The code is split by concept:
//!
//! - `discovery`: the roots, their plugin directories, manifests and fingerprints;
//! - `state`: what the registry knows of one plugin, its lifecycle as one value
//!   (installed, running, disabled, failed) rather than fields that must agree;
//! - `transitions` and `lifecycle`: moving a plugin between those phases, and the
//!   operations a person or a door asks for (enable, disable, reload, grant, uninstall,
//!   adopt);
//! - `catalog`: the callable tools, by name; `contributions`: the variables plugins add
//!   to commands;
//! - `refresh` and `watching`: applying what other processes changed, and noticing it by
//!   file-system notifications, idle while nothing changes ([`Registry::watch`]).

mod catalog;
mod contributions;
mod discovery;
mod groups;
mod lifecycle;
mod pause;
mod refresh;
mod state;
mod transitions;
mod watching;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};
use toolshed_core::{PluginLoader, PluginManifest};

pub use catalog::{LazyValidator, ToolEntry};
pub use discovery::{Diagnostic, DiscoveryRoots, Level, MAX_PLUGINS_PER_ROOT, Root, find_on_path};
pub use groups::ToolGroup;
pub use lifecycle::{GrantsInfo, RegistryError};
pub use state::{PluginInfo, PluginState};
pub use watching::{WatchMode, WatchStats};

use crate::events::EventBus;
use crate::store::StateStore;

/// The plugin registry.
pub struct Registry {
    inner: RwLock<Inner>,
    store: Arc<StateStore>,
    events: EventBus,
    /// Bumped each time the tool index is rebuilt.
    catalog_generation: tokio::sync::watch::Sender<u64>,
    loaders: Vec<Arc<dyn PluginLoader>>,
    /// Serializes lifecycle changes (enable, disable, reload, grants, sync, rescan), so two
    /// of them never load or stop one plugin at the same time.
    lifecycle: tokio::sync::Mutex<()>,
    /// The user roots, watched for plugins added, changed and removed.
    user_roots: Vec<PathBuf>,
    /// Changes seen once in the user roots, by plugin directory: applied when the next
    /// look finds the same fingerprint (the files stopped changing).
    pending: std::sync::Mutex<BTreeMap<PathBuf, u64>>,
    /// What the watcher did, and how to stop it.
    watching: watching::WatchState,
    /// Set by a long-running door ([`Registry::start_eager`]): plugins asked to start
    /// eagerly start as soon as they run.
    warm_eager: std::sync::atomic::AtomicBool,
    /// The workspace's `.env` files under the process environment: what env contracts
    /// are checked against.
    env: Arc<crate::env_overlay::EnvOverlay>,
}

#[derive(Default)]
struct Inner {
    /// Every plugin, in trust order.
    slots: Vec<state::Slot>,
    catalog: catalog::Catalog,
    /// Problems found reading the roots.
    discovery: Vec<Diagnostic>,
}

impl Inner {
    fn slot(&self, id: &str) -> Option<&state::Slot> {
        self.slots.iter().find(|s| s.id() == id)
    }

    fn slot_mut(&mut self, id: &str) -> Option<&mut state::Slot> {
        self.slots.iter_mut().find(|s| s.id() == id)
    }
}

impl Registry {
    fn new(
        inner: Inner,
        store: Arc<StateStore>,
        events: EventBus,
        loaders: Vec<Arc<dyn PluginLoader>>,
        user_roots: Vec<PathBuf>,
        env: Arc<crate::env_overlay::EnvOverlay>,
    ) -> Self {
        Self {
            env,
            inner: RwLock::new(inner),
            store,
            events,
            catalog_generation: tokio::sync::watch::Sender::new(0),
            loaders,
            lifecycle: tokio::sync::Mutex::new(()),
            user_roots,
            pending: std::sync::Mutex::new(BTreeMap::new()),
            watching: watching::WatchState::default(),
            warm_eager: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn read<T>(&self, f: impl FnOnce(&Inner) -> T) -> T {
        f(&self.inner.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn write<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.write().unwrap_or_else(|p| p.into_inner()))
    }

    /// Every plugin, in trust order.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.read(|i| i.slots.iter().map(state::Slot::info).collect())
    }

    /// One plugin.
    pub fn plugin(&self, id: &str) -> Option<PluginInfo> {
        self.read(|i| i.slot(id).map(state::Slot::info))
    }

    /// The plugin's health as it reports it now (a JavaScript plugin's `health()` export
    /// is asked), with its state; `None` when there is no such plugin. A plugin that is not
    /// running reports its state's reason instead.
    pub async fn health_now(&self, id: &str) -> Option<(PluginInfo, toolshed_core::Health)> {
        let (info, running) = self.read(|i| {
            i.slot(id).map(|s| {
                let running = match &s.phase {
                    state::Phase::Running(r) => Some(r.plugin.clone()),
                    _ => None,
                };
                (s.info(), running)
            })
        })?;
        let health = match running {
            Some(plugin) => plugin.health().await,
            None => match &info.reason {
                Some(reason) => toolshed_core::Health::Failed(reason.clone()),
                None => toolshed_core::Health::Failed(format!("it is {}", info.state.as_str())),
            },
        };
        Some((info, health))
    }

    /// The plugin's manifest.
    pub fn manifest(&self, id: &str) -> Option<PluginManifest> {
        self.read(|i| {
            i.slot(id).map(|s| match &s.origin {
                // The registry keeps a built-in's tools without their schemas.
                state::Origin::Compiled(plugin) => plugin.manifest().clone(),
                _ => s.manifest.clone(),
            })
        })
    }

    /// The plugin's configuration: manifest defaults overlaid with stored values.
    /// Runs on every call: it copies the defaults, never the whole manifest, and stored
    /// values come from the store's memory after the first read.
    pub fn resolved_config(&self, id: &str) -> Map<String, Value> {
        let defaults = self.read(|i| {
            i.slot(id)
                .and_then(|s| transitions::config_defaults(&s.manifest))
        });
        transitions::overlay_config(&self.store, id, defaults)
    }

    /// Why `entry` cannot work as things are, and the environment variables that would fix
    /// it: its plugin's env contract or requirements are unmet, the tool itself lacks
    /// something (an API key), or a required config setting has no value. `None` when it
    /// can work. Checked
    /// on every call and listing, so a setting or grant made meanwhile counts at once.
    pub fn unavailable(&self, entry: &ToolEntry) -> Option<(String, Vec<String>)> {
        if let Some(unconfigured) = &entry.unconfigured {
            return Some(unconfigured.clone());
        }
        if let Some(why) = entry.tool.unavailable() {
            return Some(why);
        }
        let id = &entry.plugin_id;
        if entry.spec().annotations.open_world
            && let Some(why) = self.read(|i| i.slot(id).and_then(ungranted_network))
        {
            return Some((why, Vec::new()));
        }
        let required = self.read(|i| {
            i.slot(id).map_or(Vec::new(), |slot| {
                slot.manifest
                    .config
                    .iter()
                    .filter(|f| f.required && f.default.is_none())
                    .map(|f| f.key.clone())
                    .collect::<Vec<String>>()
            })
        });
        if !required.is_empty() {
            let config = self.resolved_config(id);
            let missing: Vec<&String> = required
                .iter()
                .filter(|key| {
                    config
                        .get(key.as_str())
                        .is_none_or(|v| v.is_null() || v.as_str() == Some(""))
                })
                .collect();
            if let Some(first) = missing.first() {
                let keys: Vec<String> = missing.iter().map(|k| format!("`{k}`")).collect();
                return Some((
                    format!(
                        "plugin `{id}` is not configured: its {} setting{} {} no value; \
                         `toolshed plugins config {id} {first} VALUE` sets it",
                        keys.join(", "),
                        if missing.len() == 1 { "" } else { "s" },
                        if missing.len() == 1 { "has" } else { "have" },
                    ),
                    Vec::new(),
                ));
            }
        }
        None
    }

    /// Starts the plugins asked to start eagerly (a mounted MCP server with `eager =
    /// true`) now, in the background, and any that start later as soon as they do. For
    /// long-running doors; a one-shot command leaves them to its first call.
    pub fn start_eager(&self) {
        self.warm_eager
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let eager: Vec<(String, Arc<dyn toolshed_core::Plugin>)> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| s.manifest.mcp.as_ref().is_some_and(|m| m.eager))
                .filter_map(|s| Some((s.id().to_string(), s.running()?.plugin.clone())))
                .collect()
        });
        for (id, plugin) in eager {
            transitions::warm(&id, plugin);
        }
    }

    /// The resources and prompts of the running plugins among `plugin_ids`, in trust order.
    pub fn libraries(
        &self,
        plugin_ids: &std::collections::BTreeSet<String>,
    ) -> crate::library::Libraries {
        crate::library::Libraries::new(self.read(|inner| {
            inner
                .slots
                .iter()
                .filter(|slot| plugin_ids.contains(slot.id()))
                .flat_map(|slot| {
                    let running = slot.running();
                    let own = running.and_then(|r| r.plugin.library());
                    // A `resources/` folder beside the manifest, while the plugin runs.
                    let folder = running
                        .and(slot.dir())
                        .and_then(|dir| crate::plugin_folders::FolderLibrary::of(slot.id(), dir))
                        .map(|l| Arc::new(l) as Arc<dyn toolshed_core::Library>);
                    own.into_iter()
                        .chain(folder)
                        .map(|library| (slot.id().to_string(), library))
                })
                .collect()
        }))
    }

    /// Every discovery and registration problem.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.read(|i| {
            i.discovery
                .iter()
                .chain(i.catalog.clashes())
                .cloned()
                .collect()
        })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Ends the watcher task, which holds the registry only weakly.
        self.watching.stop.cancel();
    }
}

/// Runs blocking work (SQLite, the file system, a loader) on the blocking pool. A panic in
/// it is resumed here; `None` means the runtime is shutting down and the work did not run.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => Some(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => None,
    }
}

/// Why a sandboxed plugin's tools that reach outside (`openWorld`) cannot work yet for want
/// of a network grant: its manifest names the hosts it talks to (a client of one web API),
/// and none of them — nor any other host — has been granted. A plugin that declares only
/// `*` (hosts from its config, such as a webhook notifier) is judged by its config instead.
fn ungranted_network(slot: &state::Slot) -> Option<String> {
    let loaded = slot.running()?.loaded.as_ref()?;
    let named: Vec<&str> = slot
        .manifest
        .capabilities
        .network
        .iter()
        .map(String::as_str)
        .filter(|host| *host != "*")
        .collect();
    if named.is_empty() || !loaded.grants.http.is_empty() {
        return None;
    }
    let id = slot.id();
    Some(format!(
        "plugin `{id}` may not reach the network yet: it needs {} granted; \
         `toolshed plugins grant {id}` grants what it names",
        named
            .iter()
            .map(|h| format!("`{h}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

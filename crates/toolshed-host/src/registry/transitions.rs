//! Transitions: moving one plugin between its phases — loading it with its loader,
//! starting it, stopping it, reading it again from disk — and telling whether that changed
//! what a subscriber sees.
//!
//! The caller holds the lifecycle lock. The state lock is never held across a plugin's own
//! lifecycle calls, and SQLite, the file system and loaders are reached on the blocking
//! pool.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolshed_core::{Health, LoadRequest, Plugin, PluginKind, PluginManifest, ToolSpec};

use super::discovery::{
    Diagnostic, Level, Root, find_on_path, fingerprint, read_plugin_dir, reread_manifest,
};
use super::state::{Loaded, Origin, Phase, PluginDir, PluginState, Running, Slot, Unmet};
use super::{Registry, blocking};
use crate::events::Event;
use crate::store::{StateStore, StoreError};

/// A plugin's public state and reason, to tell whether a change is worth an event.
pub(super) type Seen = Option<(PluginState, Option<String>)>;

/// What lists a plugin from its recorded tools once they are known ([`Registry::park`]).
pub(super) struct Park {
    loader: Arc<dyn toolshed_core::PluginLoader>,
    request: LoadRequest,
}

impl Registry {
    /// Starts (when `enabled`) or stops one plugin and records its new phase. A plugin that
    /// runs already is started again in place; a compiled one is started; one found on disk
    /// is built by its loader first. An instance a loader built is dropped when it stops,
    /// so enabling it again runs its code afresh.
    pub(super) async fn bring_up(&self, id: &str, enabled: bool) {
        if !enabled {
            self.stop_plugin(id, "disable").await;
            self.set_phase(id, Phase::Disabled);
            return;
        }
        enum Source {
            Running(Running),
            Compiled(Arc<dyn Plugin>),
            Dir(PathBuf),
        }
        let found = self.read(|i| {
            let slot = i.slot(id)?;
            let source = match (&slot.phase, &slot.origin) {
                (Phase::Running(running), _) => Source::Running(running.clone()),
                (_, Origin::Compiled(plugin)) => Source::Compiled(plugin.clone()),
                (_, Origin::Dir(found)) => Source::Dir(found.dir.clone()),
            };
            Some((slot.manifest.clone(), source))
        });
        let Some((manifest, source)) = found else {
            return;
        };
        if let Some(reason) = self.unmet_dependencies(&manifest) {
            // One that ran (its dependency went away) stops first.
            self.stop_plugin(id, "a missing dependency").await;
            return self.set_phase(id, Phase::Failed { reason });
        }
        let eager = manifest.mcp.as_ref().is_some_and(|m| m.eager);
        // Started again in place (a config change), a paused plugin stays paused.
        let paused = matches!(&source, Source::Running(r) if r.paused);
        let (plugin, loaded, validators, park) = match source {
            Source::Running(r) => (r.plugin, r.loaded, r.validators, None),
            Source::Compiled(plugin) => (plugin, None, BTreeMap::new(), None),
            Source::Dir(dir) => match self.load(&manifest, dir).await {
                Ok((plugin, loaded, park)) => (plugin, Some(loaded), BTreeMap::new(), park),
                Err(reason) => return self.set_phase(id, Phase::Failed { reason }),
            },
        };
        let degraded = match start(plugin.as_ref()).await {
            Ok(degraded) => degraded,
            Err(reason) => {
                if loaded.is_some()
                    && let Err(e) = plugin.stop().await
                {
                    tracing::warn!(plugin = %id, error = %e, "plugin failed to stop after a failed start");
                }
                return self.set_phase(id, Phase::Failed { reason });
            }
        };
        self.remember_tools(id, plugin.as_ref(), loaded.as_ref())
            .await;
        let plugin = match (park, &loaded) {
            (Some(park), Some(loaded)) if degraded.is_none() && !eager => {
                self.park(id, plugin, park, loaded).await
            }
            _ => plugin,
        };
        let unmet = if manifest.env.is_empty() && manifest.requirements.is_empty() {
            None
        } else {
            let env = self.env.clone();
            blocking(move || unmet_contract(&manifest, &env))
                .await
                .flatten()
        };
        // A plugin that started but reports working with less says why.
        let unmet = unmet.or_else(|| {
            degraded.map(|reason| Unmet {
                reason,
                missing_env: Vec::new(),
                blocks_tools: false,
            })
        });
        if eager && self.warm_eager.load(std::sync::atomic::Ordering::Relaxed) {
            warm(id, plugin.clone());
        }
        self.set_phase(
            id,
            Phase::Running(Running {
                plugin,
                loaded,
                unmet,
                validators,
                paused,
            }),
        );
    }

    /// Brings up again the enabled plugins that depend on `id` (it was enabled, disabled,
    /// installed or removed): they stop, with the reason, when it is gone, and start when
    /// it is back.
    pub(super) async fn follow_dependents(&self, id: &str) {
        let dependents: Vec<(PluginManifest, bool)> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| {
                    s.manifest.dependencies.contains_key(id) && !matches!(s.phase, Phase::Disabled)
                })
                .map(|s| (s.manifest.clone(), matches!(s.phase, Phase::Running(_))))
                .collect()
        });
        for (manifest, running) in dependents {
            // Only a change of fortune: running without its dependency, or held for one
            // that is back.
            let unmet = self.unmet_dependencies(&manifest).is_some();
            if running != unmet {
                continue;
            }
            let dependent = manifest.id;
            let before = self.seen(&dependent);
            Box::pin(self.bring_up(&dependent, true)).await;
            self.publish_change(&dependent, before);
        }
    }

    /// Why the plugins `manifest` depends on do not serve it — one missing, disabled or
    /// of a version outside the requirement — or `None` when all are there.
    pub(super) fn unmet_dependencies(&self, manifest: &PluginManifest) -> Option<String> {
        let problems: Vec<String> = manifest
            .dependencies
            .iter()
            .filter_map(|(dep, requirement)| {
                let found = self.read(|i| {
                    let slot = i.slot(dep)?;
                    Some((
                        slot.manifest.version.clone(),
                        matches!(slot.phase, Phase::Disabled),
                    ))
                });
                let wanted = semver::VersionReq::parse(requirement).unwrap_or(semver::VersionReq::STAR);
                match found {
                    None => Some(format!("`{dep}` ({requirement}) is not installed; install it")),
                    Some((version, _))
                        if !semver::Version::parse(&version).is_ok_and(|v| wanted.matches(&v)) =>
                    {
                        Some(format!(
                            "`{dep}` is version {version}, not {requirement}; install a matching version"
                        ))
                    }
                    Some((_, true)) => Some(format!(
                        "`{dep}` is disabled; enable it with `toolshed plugins enable {dep}`"
                    )),
                    Some(_) => None,
                }
            })
            .collect();
        (!problems.is_empty()).then(|| {
            format!(
                "it needs other plugins: {}; then `toolshed plugins reload {}`",
                problems.join("; "),
                manifest.id
            )
        })
    }

    /// Keeps the names of the tools a started plugin serves and, for a sandboxed plugin
    /// whose code ran on something new, records its tools in the store ([`crate::lazy`]).
    pub(super) async fn remember_tools(
        &self,
        id: &str,
        plugin: &dyn Plugin,
        loaded: Option<&Loaded>,
    ) {
        let tools = plugin.tools();
        let remember = self.write(|i| {
            let slot = i.slot_mut(id)?;
            slot.last_tools = tools.iter().map(|t| t.spec().name.clone()).collect();
            let key = loaded?.key.clone();
            if slot.recorded.as_ref().is_some_and(|(k, _)| *k == key) {
                return None;
            }
            let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec().clone()).collect();
            slot.recorded = Some((key.clone(), specs.clone()));
            Some((key, specs))
        });
        if let Some((key, specs)) = remember {
            let owned = id.to_string();
            if let Err(e) = self
                .on_store(move |s| s.set_plugin_tools(&owned, &key, &specs))
                .await
            {
                tracing::warn!(plugin = %id, error = %e, "cannot record the plugin's tools");
            }
        }
    }

    /// Stops a plugin whose code ran only to learn its tools and lists it from them until
    /// its first call ([`crate::lazy`]), as the next process would. One that registered no
    /// tools, or cannot stop, keeps running.
    async fn park(
        &self,
        id: &str,
        plugin: Arc<dyn Plugin>,
        park: Park,
        loaded: &Loaded,
    ) -> Arc<dyn Plugin> {
        let specs: Vec<ToolSpec> = plugin.tools().iter().map(|t| t.spec().clone()).collect();
        if specs.is_empty() {
            return plugin;
        }
        if let Err(e) = plugin.stop().await {
            tracing::warn!(plugin = %id, error = %e, "the plugin did not stop after its tools were recorded; it keeps running");
            return plugin;
        }
        Arc::new(crate::lazy::LazyPlugin::new(
            park.loader,
            park.request,
            loaded.key.clone(),
            specs,
            self.store.clone(),
        ))
    }

    /// Builds a plugin of a sandboxed kind from its directory with its loader. The error is
    /// the plugin's reason for being in `error`. With a [`Park`] when its code must run to
    /// learn its tools and its loader parks such plugins afterwards.
    async fn load(
        &self,
        manifest: &PluginManifest,
        dir: PathBuf,
    ) -> Result<(Arc<dyn Plugin>, Loaded, Option<Park>), String> {
        let id = manifest.id.clone();
        let Some(loader) = self
            .loaders
            .iter()
            .find(|l| l.kind() == manifest.kind)
            .cloned()
        else {
            return Err(match manifest.kind {
                PluginKind::Builtin => format!(
                    "kind `builtin` is reserved for plugins compiled into toolshed, and none has id `{id}`; use kind `js` or `mcp`"
                ),
                other => format!(
                    "plugin kind `{}` cannot run in this build yet; its tools are listed but not callable",
                    other.as_str()
                ),
            });
        };
        let recorded = self.read(|i| i.slot(&id).and_then(|s| s.recorded.clone()));
        let defaults = config_defaults(manifest);
        let manifest = manifest.clone();
        let store = self.store.clone();
        blocking(move || {
            let stored = store
                .grants(&id)
                .map_err(|e| format!("cannot read the plugin's grants: {e}"))?;
            let grants = crate::grants::to_grants(&stored);
            let config = overlay_config(&store, &id, defaults);
            let variant = loader.record_variant();
            let key = crate::lazy::load_key(fingerprint(&dir), &variant, &config);
            let request = LoadRequest {
                manifest,
                dir,
                config,
                grants: grants.clone(),
            };
            let recorded = match recorded {
                Some((recorded_key, specs)) if recorded_key == key && !specs.is_empty() => {
                    Some(specs)
                }
                // Nothing recorded for these files yet: what the plugin ships, if made
                // from the same files (a first start of a plugin shipped with toolshed).
                _ if loader.parks_after_recording() => {
                    crate::shipped::find(&request.dir, &variant, &request.config)
                }
                _ => None,
            };
            let (plugin, park): (Arc<dyn Plugin>, _) = match recorded {
                // Listed from the record; the code runs at the first call.
                Some(specs) => {
                    let lazy =
                        crate::lazy::LazyPlugin::new(loader, request, key.clone(), specs, store);
                    (Arc::new(lazy), None)
                }
                None => {
                    let park = loader.parks_after_recording().then(|| Park {
                        loader: loader.clone(),
                        request: request.clone(),
                    });
                    let plugin = loader
                        .load(request)
                        .map_err(|e| format!("cannot load: {e}"))?;
                    (plugin, park)
                }
            };
            Ok((
                plugin,
                Loaded {
                    grants: Box::new(grants),
                    key,
                },
                park,
            ))
        })
        .await
        .unwrap_or_else(|| Err("not loaded: toolshed is shutting down".into()))
    }

    /// Stops a plugin, reads a disk plugin's manifest again, starts it (a loader builds it
    /// afresh) and publishes the change. The caller holds the lifecycle lock.
    pub(super) async fn restart(&self, id: &str, why: &str) {
        let before = self.seen(id);
        self.stop_plugin(id, why).await;
        let manifest_path = self.read(|i| {
            i.slot(id)
                .and_then(|s| s.origin.dir())
                .map(|d| d.manifest_path.clone())
        });
        let reread = match manifest_path {
            Some(path) => {
                let owned = id.to_string();
                Some(
                    blocking(move || reread_manifest(&path, &owned))
                        .await
                        .unwrap_or_else(|| Err("toolshed is shutting down".into())),
                )
            }
            None => None,
        };
        // A plugin a person disabled stays off, whatever brought it here (its files
        // changed, it was installed again).
        let enabled = self.stored_enabled(id).await;
        match reread {
            Some(Err(reason)) if enabled => self.set_phase(id, Phase::Failed { reason }),
            Some(Err(_)) => self.bring_up(id, false).await,
            Some(Ok(manifest)) => {
                self.write(|i| {
                    if let Some(slot) = i.slot_mut(id) {
                        slot.manifest = manifest;
                    }
                });
                self.bring_up(id, enabled).await;
            }
            None => self.bring_up(id, enabled).await,
        }
        self.reindex();
        self.publish_change(id, before);
    }

    /// Stops a plugin's running instance (for `why`), logging a failure. The plugin is left
    /// `installed`: the caller starts it again, disables or forgets it.
    pub(super) async fn stop_plugin(&self, id: &str, why: &str) {
        let running = self.write(|i| {
            let slot = i.slot_mut(id)?;
            match std::mem::replace(&mut slot.phase, Phase::Installed) {
                Phase::Running(running) => Some(running.plugin),
                other => {
                    slot.phase = other;
                    None
                }
            }
        });
        if let Some(plugin) = running
            && let Err(e) = plugin.stop().await
        {
            tracing::warn!(plugin = %id, error = %e, "plugin failed to stop cleanly on {why}");
        }
    }

    /// Adds a plugin directory that appeared in a user root and brings it up. Returns its
    /// id, or `None` (with a diagnostic) when it cannot be used.
    pub(super) async fn add_found(&self, dir: &Path, print: u64) -> Option<String> {
        let read = {
            let dir = dir.to_path_buf();
            blocking(move || read_plugin_dir(&dir)).await?
        };
        let (manifest, manifest_path) = match read {
            Ok(found) => found,
            Err(diag) => {
                self.diagnose(diag);
                return None;
            }
        };
        let id = manifest.id.clone();
        if let Some(other) = self.plugin(&id) {
            let at = other
                .dir
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| other.root.as_str().to_string());
            self.diagnose(Diagnostic {
                level: Level::Warning,
                path: Some(manifest_path),
                field: Some("id".into()),
                problem: format!(
                    "plugin id `{id}` is already provided by {at}; this copy is ignored"
                ),
                plugin_id: Some(id),
            });
            return None;
        }
        self.write(|i| {
            i.discovery.retain(|d| {
                d.path
                    .as_deref()
                    .is_none_or(|p| p != dir && p != manifest_path.as_path())
            });
            let origin = Origin::Dir(PluginDir {
                dir: dir.to_path_buf(),
                manifest_path,
                fingerprint: Some(print),
            });
            i.slots.push(Slot::new(manifest, Root::User, origin));
        });
        let enabled = self.stored_enabled(&id).await;
        self.bring_up(&id, enabled).await;
        Some(id)
    }

    /// Records what a user plugin's files look like as it is loaded from them.
    pub(super) fn set_fingerprint(&self, id: &str, print: u64) {
        self.write(|i| {
            if let Some(Origin::Dir(found)) = i.slot_mut(id).map(|s| &mut s.origin) {
                found.fingerprint = Some(print);
            }
        });
    }

    /// Keeps `diag`, replacing an earlier one about the same path.
    fn diagnose(&self, diag: Diagnostic) {
        self.write(|i| {
            i.discovery.retain(|d| d.path != diag.path);
            i.discovery.push(diag);
        });
    }

    fn set_phase(&self, id: &str, phase: Phase) {
        self.write(|i| {
            if let Some(slot) = i.slot_mut(id) {
                slot.phase = phase;
            }
        });
    }

    /// A plugin's public state and reason now.
    pub(super) fn seen(&self, id: &str) -> Seen {
        self.read(|i| i.slot(id).map(|s| (s.state(), s.reason())))
    }

    /// Publishes a plugin's state if it differs from what it was `before`.
    pub(super) fn publish_change(&self, id: &str, before: Seen) {
        if let Some(event) = self.change_since(id, before) {
            self.events.publish(event);
        }
    }

    /// The event for a plugin whose state differs from what it was `before`.
    pub(super) fn change_since(&self, id: &str, before: Seen) -> Option<Event> {
        let now = self.seen(id)?;
        (Some(&now) != before.as_ref()).then(|| Event::PluginStateChanged {
            plugin_id: id.to_string(),
            state: now.0,
            reason: now.1,
        })
    }

    /// Whether a person left the plugin enabled (never set: its default, enabled but for
    /// a heavy built-in).
    pub(super) async fn stored_enabled(&self, id: &str) -> bool {
        let owned = id.to_string();
        let default = self.read(|i| i.slot(id).is_none_or(|s| s.enabled_by_default()));
        self.on_store(move |s| s.plugin_enabled(&owned))
            .await
            .ok()
            .flatten()
            .unwrap_or(default)
    }

    /// Runs `f` on the state store on the blocking pool.
    pub(super) async fn on_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&StateStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.store.clone();
        blocking(move || f(&store))
            .await
            .unwrap_or(Err(StoreError::Interrupted))
    }
}

/// A manifest's config defaults, or `None` when it has no config fields.
pub(super) fn config_defaults(m: &PluginManifest) -> Option<Map<String, Value>> {
    (!m.config.is_empty()).then(|| crate::shipped::first_start_config(m))
}

/// `defaults` overlaid with the values stored for plugin `id` (none when there are no
/// defaults: a plugin without config fields has no config).
pub(super) fn overlay_config(
    store: &StateStore,
    id: &str,
    defaults: Option<Map<String, Value>>,
) -> Map<String, Value> {
    let Some(mut config) = defaults else {
        return Map::new();
    };
    match store.config_values(id) {
        Ok(values) => config.extend(values),
        Err(e) => tracing::warn!(plugin = %id, error = %e, "cannot read plugin config"),
    }
    config
}

/// Starts in the background what `plugin`'s first call would start.
pub(super) fn warm(id: &str, plugin: Arc<dyn Plugin>) {
    let id = id.to_string();
    tokio::spawn(async move {
        if let Err(e) = plugin.warm().await {
            tracing::warn!(plugin = %id, error = %e, "the plugin asked to start eagerly did not start");
        }
    });
}

/// Starts `plugin`; `Ok(Some(reason))` when it started but reports being degraded.
async fn start(plugin: &dyn Plugin) -> Result<Option<String>, String> {
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
        Health::Degraded(reason) => Ok(Some(reason)),
        Health::Ok => Ok(None),
    }
}

/// What the plugin's env contract or requirements lack. Blocking (looks on `PATH`).
fn unmet_contract(m: &PluginManifest, env: &crate::env_overlay::EnvOverlay) -> Option<Unmet> {
    let missing_env: Vec<String> = m
        .env
        .iter()
        .filter(|v| v.required && env.get(&v.name).is_none_or(|x| x.is_empty()))
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
            "set the environment variable{} {}",
            if missing_env.len() == 1 { "" } else { "s" },
            missing_env.join(", ")
        ));
    }
    if !missing_bins.is_empty() {
        parts.push(format!(
            "install {} (not found on PATH)",
            missing_bins.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| Unmet {
        blocks_tools: true,
        reason: format!("plugin `{}` is not configured: {}", m.id, parts.join("; ")),
        missing_env,
    })
}

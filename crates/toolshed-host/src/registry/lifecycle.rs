//! Lifecycle: what a person or a door asks of a plugin — enable, disable, reload, grant,
//! uninstall, adopt a fresh install — and the errors they answer with.
//!
//! Each operation takes the registry's lifecycle lock, so two of them never load or stop
//! one plugin at the same time, and moves the plugin through its phases with the
//! transitions of [`super::transitions`]. Each rebuilds the catalog before its
//! `PluginStateChanged` event is published, so a subscriber that lists tools on the event
//! sees the new list.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use toolshed_core::{Plugin, PluginManifest};

use super::discovery::{Root, fingerprint};
use super::state::{PluginInfo, PluginState};
use super::{Registry, blocking};
use crate::events::Event;
use crate::store::StoreError;

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
    Store(#[from] StoreError),
    /// The plugin cannot do that in its current state or root.
    #[error("{0}")]
    Conflict(String),
    /// The request itself is wrong (a malformed or undeclared grant).
    #[error("{0}")]
    Invalid(String),
    /// Removing the plugin's files failed.
    #[error("cannot remove {path}: {source}")]
    Remove {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Registry {
    /// Enables or disables a plugin, persists the choice and updates the tool index.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<PluginInfo, RegistryError> {
        self.known(id)?;
        let _lifecycle = self.lifecycle.lock().await;
        if enabled {
            let manifest = self.read(|i| i.slot(id).map(|s| s.manifest.clone()));
            if let Some(why) = manifest.and_then(|m| self.unmet_dependencies(&m)) {
                return Err(RegistryError::Conflict(format!(
                    "plugin `{id}` cannot be enabled: {why}"
                )));
            }
        }
        let owned = id.to_string();
        self.on_store(move |s| s.set_plugin_enabled(&owned, enabled))
            .await?;
        let before = self.seen(id);
        self.bring_up(id, enabled).await;
        self.follow_dependents(id).await;
        self.reindex();
        self.publish_change(id, before);
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
        // Its code runs now, whatever was recorded: a reload is how a person asks a
        // plugin (a mounted MCP server, say) to look again.
        self.write(|i| {
            if let Some(slot) = i.slot_mut(id) {
                slot.recorded = None;
            }
        });
        self.restart(id, "reload").await;
        self.known(id)
    }

    /// Reads a running plugin's tools again (it said they changed: a mounted MCP server's
    /// `list_changed`), records them, and announces the change like any other. Schemas are
    /// compiled anew.
    pub async fn refresh_tools(&self, id: &str) {
        let _lifecycle = self.lifecycle.lock().await;
        let before = self.seen(id);
        let running = self.write(|i| {
            let slot = i.slot_mut(id)?;
            slot.recorded = None;
            match &mut slot.phase {
                super::state::Phase::Running(running) => {
                    running.validators.clear();
                    Some((running.plugin.clone(), running.loaded.clone()))
                }
                _ => None,
            }
        });
        let Some((plugin, loaded)) = running else {
            return;
        };
        self.remember_tools(id, plugin.as_ref(), loaded.as_ref())
            .await;
        self.reindex();
        self.publish_change(id, before);
    }

    /// Follows plugins' signals that their tools changed, until the registry is dropped.
    pub fn follow_catalog_signals(
        self: &Arc<Self>,
        signals: Arc<toolshed_ops::CatalogSignals>,
    ) -> tokio::task::JoinHandle<()> {
        let registry = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let changed = signals.next().await;
                let Some(registry) = registry.upgrade() else {
                    return;
                };
                for id in changed {
                    tracing::info!(plugin = %id, "the plugin's tools changed; reading them again");
                    registry.refresh_tools(&id).await;
                }
            }
        })
    }

    /// What a plugin asks for (`declared`, as grants) and what it was granted.
    pub async fn grants(&self, id: &str) -> Result<GrantsInfo, RegistryError> {
        let manifest = self.manifest(id).ok_or_else(|| self.unknown(id))?;
        let owned = id.to_string();
        let granted = self.on_store(move |s| s.grants(&owned)).await?;
        Ok(GrantsInfo {
            declared: crate::grants::declared(&manifest),
            wildcards: wildcards(&manifest),
            granted,
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
        let owned = id.to_string();
        let mut after: BTreeSet<String> = self
            .on_store(move |s| s.grants(&owned))
            .await?
            .into_iter()
            .collect();
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
        let owned = id.to_string();
        self.on_store(move |s| s.change_grants(&owned, &add, &remove))
            .await?;
        // A loaded plugin holds its grants; one that failed may have failed for want of one.
        let reload = self.read(|i| {
            i.slot(id).is_some_and(|s| {
                s.runs_loaded() || (s.state() == PluginState::Error && s.dir().is_some())
            })
        });
        if reload {
            self.restart(id, "grant change").await;
        }
        self.grants(id).await
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
        if let Some(dir) = info.dir.clone() {
            // The other toolsheds on a shared database remove it too.
            let (owned, files) = (id.to_string(), dir.clone());
            self.on_store(move |s| s.unshare_install(&owned, &files))
                .await?;
            let removed = blocking({
                let dir = dir.clone();
                move || std::fs::remove_dir_all(&dir)
            })
            .await;
            if let Some(Err(source)) = removed {
                return Err(RegistryError::Remove { path: dir, source });
            }
        }
        let owned = id.to_string();
        self.on_store(move |s| s.forget_plugin(&owned)).await?;
        self.write(|i| i.slots.retain(|s| s.id() != id));
        self.follow_dependents(id).await;
        self.reindex();
        self.events.publish(Event::PluginStateChanged {
            plugin_id: id.to_string(),
            state: PluginState::Uninstalled,
            reason: None,
        });
        Ok(info)
    }

    /// Loads a plugin just installed into `dir` (a directory of a user root) at once, rather
    /// than when the watcher next looks: a new plugin is added and started, a replaced one
    /// is reloaded. Returns the plugin, or `None` when the directory holds no usable
    /// plugin (a diagnostic says why).
    pub async fn adopt(&self, dir: &Path) -> Option<PluginInfo> {
        let print = {
            let dir = dir.to_path_buf();
            blocking(move || fingerprint(&dir)).await?
        };
        let _lifecycle = self.lifecycle.lock().await;
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(dir);
        let existing = self.read(|i| {
            i.slots
                .iter()
                .find(|s| s.dir() == Some(dir))
                .map(|s| s.id().to_string())
        });
        let id = match existing {
            Some(id) => {
                self.set_fingerprint(&id, print);
                self.restart(&id, "replacement").await;
                id
            }
            None => {
                let id = self.add_found(dir, print).await?;
                // Plugins that waited for this one start.
                self.follow_dependents(&id).await;
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

    /// Tells every running plugin that `owner` is gone, so that what it owned ends too.
    pub async fn end_owner(&self, owner: &toolshed_core::OwnerId) {
        let plugins: Vec<Arc<dyn Plugin>> = self.read(|i| {
            i.slots
                .iter()
                .filter_map(|s| s.running().map(|r| r.plugin.clone()))
                .collect()
        });
        for plugin in plugins {
            plugin.owner_ended(owner).await;
        }
    }

    /// What every running plugin keeps running for owners (processes, command sessions,
    /// browser sessions), with the plugin's id; reading it is not a call.
    pub async fn running(&self) -> Vec<(String, toolshed_core::Running)> {
        let plugins: Vec<(String, Arc<dyn Plugin>)> = self.read(|i| {
            i.slots
                .iter()
                .filter_map(|s| s.running().map(|r| (s.id().to_string(), r.plugin.clone())))
                .collect()
        });
        let mut all = Vec::new();
        for (id, plugin) in plugins {
            all.extend(plugin.running().await.into_iter().map(|r| (id.clone(), r)));
        }
        all
    }

    /// The tail of the output of item `id` of plugin `plugin_id`'s [`Registry::running`].
    pub fn running_output(&self, plugin_id: &str, id: &str, max_bytes: usize) -> Option<String> {
        let plugin = self.read(|i| {
            i.slot(plugin_id)
                .and_then(|s| s.running().map(|r| r.plugin.clone()))
        })?;
        plugin.running_output(id, max_bytes)
    }

    /// Stops every running plugin.
    pub async fn shutdown(&self) {
        let plugins: Vec<(String, Arc<dyn Plugin>)> = self.read(|i| {
            i.slots
                .iter()
                .filter_map(|s| s.running().map(|r| (s.id().to_string(), r.plugin.clone())))
                .collect()
        });
        for (id, plugin) in plugins {
            if let Err(e) = plugin.stop().await {
                tracing::warn!(plugin = %id, error = %e, "plugin failed to stop cleanly");
            }
        }
    }

    pub(super) fn known(&self, id: &str) -> Result<PluginInfo, RegistryError> {
        self.plugin(id).ok_or_else(|| self.unknown(id))
    }

    /// The error for an id no plugin has, naming close ids.
    fn unknown(&self, id: &str) -> RegistryError {
        let ids: Vec<String> = self.read(|i| i.slots.iter().map(|s| s.id().to_string()).collect());
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

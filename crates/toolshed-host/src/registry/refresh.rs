//! Refreshing: applying what changed outside this process — choices other processes record
//! in the state store, and plugin directories added, changed or removed in the user roots.
//! The watcher ([`super::watching`]) decides when to look; this decides what follows.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::discovery::{Root, list_plugin_dirs};
use super::lifecycle::RegistryError;
use super::state::PluginState;
use super::{Registry, blocking};
use crate::events::Event;
use crate::store::StateStore;

/// What one look at the user roots found.
#[derive(Debug, Default)]
pub(super) struct Look {
    /// The plugins added, reloaded or removed.
    pub touched: Vec<String>,
    /// Changes seen once and not applied yet: another look is due once the files settle.
    pub unsettled: bool,
}

impl Registry {
    /// Applies enable and disable choices another process recorded in the state store (a
    /// `toolshed plugins disable` while a server runs), reloads plugins whose grants it
    /// changed, and lets config values it stored (`toolshed plugins config`) reach the next
    /// calls. Returns the plugins whose state changed; their `PluginStateChanged` events are
    /// published after the tool index is rebuilt.
    pub async fn sync_from_store(&self) -> Result<Vec<String>, RegistryError> {
        // On a shared database: the plugins other toolsheds installed or uninstalled first.
        let replicated = self.on_store(StateStore::replicate_installs).await?;
        let mut touched = Vec::new();
        for dir in &replicated.placed {
            if let Some(info) = self.adopt(dir).await {
                touched.push(info.id);
            }
        }
        if !replicated.removed.is_empty() {
            touched.extend(self.rescan_user_roots().await);
        }
        let mut changed = self.sync_choices().await?;
        changed.extend(touched);
        Ok(changed)
    }

    /// The enable, disable, grant and config part of [`Registry::sync_from_store`].
    async fn sync_choices(&self) -> Result<Vec<String>, RegistryError> {
        let _lifecycle = self.lifecycle.lock().await;
        self.watching.count_sync();
        self.store.forget_config_values();
        let (version, all_grants, stored, paused) = self
            .on_store(|s| {
                Ok((
                    s.data_version().ok(),
                    s.all_grants()?,
                    s.plugin_states()?,
                    s.paused_plugins()?,
                ))
            })
            .await?;
        self.watching.set_seen_version(version);
        let regrant: Vec<String> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| {
                    let loaded = s.running().and_then(|r| r.loaded.as_ref());
                    loaded.is_some_and(|l| {
                        let stored = all_grants.get(s.id()).map(Vec::as_slice);
                        *l.grants != crate::grants::to_grants(stored.unwrap_or_default())
                    })
                })
                .map(|s| s.id().to_string())
                .collect()
        });
        for id in &regrant {
            self.restart(id, "grant change").await;
        }
        let differing: Vec<(String, bool)> = self.read(|i| {
            i.slots
                .iter()
                .filter_map(|s| {
                    let want = stored
                        .get(s.id())
                        .copied()
                        .unwrap_or_else(|| s.enabled_by_default());
                    let is = s.state() != PluginState::Disabled;
                    (want != is).then(|| (s.id().to_string(), want))
                })
                .collect()
        });
        let mut events = Vec::new();
        let mut regrant = regrant;
        for (id, event) in self.apply_paused(&paused) {
            events.extend(event);
            regrant.push(id);
        }
        if differing.is_empty() {
            if !events.is_empty() {
                self.reindex();
                for event in events {
                    self.events.publish(event);
                }
            }
            return Ok(regrant);
        }
        for (id, enabled) in &differing {
            let before = self.seen(id);
            self.bring_up(id, *enabled).await;
            events.extend(self.change_since(id, before));
            self.follow_dependents(id).await;
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

    /// Syncs from the store ([`Registry::sync_from_store`]) if another connection
    /// committed since the registry last read it: one cheap read when nothing changed, as
    /// after this process's own writes.
    pub(super) async fn check_store(&self) -> Result<Vec<String>, RegistryError> {
        self.watching.count_store_check();
        let version = self.on_store(StateStore::data_version).await?;
        if self.watching.seen_version() == Some(version) {
            return Ok(Vec::new());
        }
        self.sync_from_store().await
    }

    /// Looks at the user plugin roots and applies what changed there since the last look:
    /// a new plugin directory is loaded and started (if not disabled), a changed one is
    /// reloaded, a removed one is stopped and forgotten (its stored state is kept, in case
    /// it comes back). A change is applied only once two looks in a row see the same files,
    /// so a copy in progress is not loaded half done. Each plugin touched is published as a
    /// `PluginStateChanged` event. Returns the ids touched.
    pub async fn rescan_user_roots(&self) -> Vec<String> {
        self.look_at_user_roots().await.touched
    }

    /// [`Registry::rescan_user_roots`], saying also whether changes wait for another look.
    pub(super) async fn look_at_user_roots(&self) -> Look {
        // Looked at under the lock, so an install adopted meanwhile is in both views.
        let _lifecycle = self.lifecycle.lock().await;
        self.watching.count_rescan();
        let roots = self.user_roots.clone();
        let Some(seen) = blocking(move || list_plugin_dirs(&roots)).await else {
            return Look::default();
        };
        let known: BTreeMap<PathBuf, (String, Option<u64>)> = self.read(|i| {
            i.slots
                .iter()
                .filter(|s| s.root == Root::User)
                .filter_map(|s| {
                    let found = s.origin.dir()?;
                    Some((found.dir.clone(), (s.id().to_string(), found.fingerprint)))
                })
                .collect()
        });
        let mut ready = Vec::new();
        let unsettled = {
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
            !pending.is_empty()
        };
        let mut touched = Vec::new();
        let mut events = Vec::new();
        for (dir, (id, _)) in &known {
            if seen.contains_key(dir) {
                continue;
            }
            self.stop_plugin(id, "removal").await;
            self.write(|i| i.slots.retain(|s| s.id() != id));
            events.push(Event::PluginStateChanged {
                plugin_id: id.clone(),
                state: PluginState::Uninstalled,
                reason: None,
            });
            touched.push(id.clone());
        }
        for (dir, print) in ready {
            let id = match known.get(&dir) {
                Some((id, _)) => {
                    self.set_fingerprint(id, print);
                    self.restart(id, "files changed").await;
                    id.clone()
                }
                None => match self.add_found(&dir, print).await {
                    Some(id) => id,
                    None => continue,
                },
            };
            if let Some(info) = self.plugin(&id) {
                events.push(Event::PluginStateChanged {
                    plugin_id: id.clone(),
                    state: info.state,
                    reason: info.reason,
                });
            }
            touched.push(id);
        }
        if !touched.is_empty() {
            self.reindex();
            for event in events {
                self.events.publish(event);
            }
        }
        Look { touched, unsettled }
    }
}

//! [`Plugins`]: plugin administration as the doors do it.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Weak};

use serde_json::{Map, Value};
use toolshed_core::{Health, OwnerId, PluginManifest};

use super::{Held, owned};
use crate::install::provenance::Provenance;
use crate::registry::{Diagnostic, GrantsInfo, PluginInfo, Registry, RegistryError};
use crate::store::{StateStore, StoreError};

/// The plugins as a door administers them: their states, manifests, health and
/// provenance; enabling, disabling, reloading, removing and adopting them; their grants
/// and config values. Made by [`Host::plugins`](crate::Host::plugins).
#[derive(Clone)]
pub struct Plugins<'h> {
    registry: Held<'h, Registry>,
    store: Held<'h, StateStore>,
}

impl<'h> Plugins<'h> {
    pub(super) fn new(registry: Held<'h, Registry>, store: Held<'h, StateStore>) -> Self {
        Self { registry, store }
    }

    /// The same service, owning what it holds: for a task that outlives the host's borrow.
    pub fn detached(&self) -> Plugins<'static> {
        Plugins {
            registry: owned(&self.registry),
            store: owned(&self.store),
        }
    }

    /// The same service, holding the host's parts weakly: for what was made before the
    /// host opened and must not keep it alive.
    pub fn downgrade(&self) -> WeakPlugins {
        WeakPlugins {
            registry: Arc::downgrade(&self.registry),
            store: Arc::downgrade(&self.store),
        }
    }

    /// Every plugin, in trust order.
    pub fn list(&self) -> Vec<PluginInfo> {
        self.registry.plugins()
    }

    /// One plugin.
    pub fn info(&self, id: &str) -> Option<PluginInfo> {
        self.registry.plugin(id)
    }

    /// The plugin's manifest.
    pub fn manifest(&self, id: &str) -> Option<PluginManifest> {
        self.registry.manifest(id)
    }

    /// Where an installed plugin came from and what its install put in place; `None` for
    /// a plugin toolshed has no record of installing.
    pub fn provenance(&self, id: &str) -> Result<Option<Provenance>, StoreError> {
        self.store.provenance(id)
    }

    /// The plugin's health as it reports it now, with its state; `None` when there is no
    /// such plugin ([`Registry::health_now`]).
    pub async fn health_now(&self, id: &str) -> Option<(PluginInfo, Health)> {
        self.registry.health_now(id).await
    }

    /// Every discovery and registration problem.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.registry.diagnostics()
    }

    /// Enables or disables a plugin, and keeps the choice ([`Registry::set_enabled`]).
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<PluginInfo, RegistryError> {
        self.registry.set_enabled(id, enabled).await
    }

    /// Pauses or resumes a running plugin, and keeps the choice ([`Registry::set_paused`]).
    pub async fn set_paused(&self, id: &str, paused: bool) -> Result<PluginInfo, RegistryError> {
        self.registry.set_paused(id, paused).await
    }

    /// Restarts a plugin, reading a plugin found on disk again first ([`Registry::reload`]).
    pub async fn reload(&self, id: &str) -> Result<PluginInfo, RegistryError> {
        self.registry.reload(id).await
    }

    /// Removes a plugin installed in a user root, its files and what is stored of it
    /// ([`Registry::uninstall`]).
    pub async fn uninstall(&self, id: &str) -> Result<PluginInfo, RegistryError> {
        self.registry.uninstall(id).await
    }

    /// Loads the plugin just installed into `dir` at once; `None` when the directory holds
    /// no usable plugin ([`Registry::adopt`]).
    pub async fn adopt(&self, dir: &Path) -> Option<PluginInfo> {
        self.registry.adopt(dir).await
    }

    /// What a plugin asks for and what it was granted.
    pub async fn grants(&self, id: &str) -> Result<GrantsInfo, RegistryError> {
        self.registry.grants(id).await
    }

    /// Grants `add` and takes back `remove`, then reloads the plugin if it is loaded
    /// ([`Registry::change_grants`]).
    pub async fn change_grants(
        &self,
        id: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<GrantsInfo, RegistryError> {
        self.registry.change_grants(id, add, remove).await
    }

    /// Records `grants` for plugin `id` as given — not checked against a manifest, and no
    /// plugin reloaded: for a plugin about to be installed, so that it starts with them. A
    /// known plugin's grants change through [`Plugins::change_grants`].
    pub fn grant_before_install(&self, id: &str, grants: &[String]) -> Result<(), StoreError> {
        self.store.change_grants(id, grants, &[])
    }

    /// The plugin's stored config values, secrets opened: a door shows a secret only as
    /// set or unset.
    pub fn config_values(&self, id: &str) -> Result<Map<String, Value>, StoreError> {
        self.store.config_values(id)
    }

    /// Stores one config value of the plugin, sealed when `secret`. The value is stored as
    /// given: a door checks it against its field first
    /// ([`config_fields::check`](crate::config_fields::check)).
    pub fn set_config_value(
        &self,
        id: &str,
        key: &str,
        value: &Value,
        secret: bool,
    ) -> Result<(), StoreError> {
        self.store.set_config_value(id, key, value, secret)
    }

    /// What the running plugins keep running for owners (processes, command sessions,
    /// browser sessions), each with its plugin's id; reading it is not a call.
    pub async fn running(&self) -> Vec<(String, toolshed_core::Running)> {
        self.registry.running().await
    }

    /// The last `max_bytes` of output of item `id` of plugin `plugin_id`'s
    /// [`Plugins::running`]; no owner's read cursor moves.
    pub fn running_output(&self, plugin_id: &str, id: &str, max_bytes: usize) -> Option<String> {
        self.registry.running_output(plugin_id, id, max_bytes)
    }

    /// Tells every running plugin that `owner` is gone, so that what it owned ends too.
    pub async fn end_owner(&self, owner: &OwnerId) {
        self.registry.end_owner(owner).await;
    }
}

/// [`Plugins`] that does not keep the host alive ([`Plugins::downgrade`]).
#[derive(Clone, Default)]
pub struct WeakPlugins {
    registry: Weak<Registry>,
    store: Weak<StateStore>,
}

impl WeakPlugins {
    /// The plugins, while the host is still there.
    pub fn upgrade(&self) -> Option<Plugins<'static>> {
        Some(Plugins {
            registry: Cow::Owned(self.registry.upgrade()?),
            store: Cow::Owned(self.store.upgrade()?),
        })
    }
}

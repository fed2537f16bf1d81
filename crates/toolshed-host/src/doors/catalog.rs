//! [`Catalog`]: the tools as callers see them.

use std::collections::{BTreeMap, BTreeSet};

use super::{Held, owned};
use crate::library::Libraries;
use crate::registry::{Registry, ToolEntry};

/// The tool catalog as a door uses it: which tools there are, whether each can work, what
/// their arguments may weigh, and when the list changes. Made by
/// [`Host::catalog`](crate::Host::catalog).
#[derive(Clone)]
pub struct Catalog<'h> {
    registry: Held<'h, Registry>,
}

impl<'h> Catalog<'h> {
    pub(super) fn new(registry: Held<'h, Registry>) -> Self {
        Self { registry }
    }

    /// The same catalog, owning what it holds: for a task that outlives the host's borrow.
    pub fn detached(&self) -> Catalog<'static> {
        Catalog {
            registry: owned(&self.registry),
        }
    }

    /// Every registered tool, sorted by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.registry.tools()
    }

    /// The operator groups of `tools`, with their labels and descriptions
    /// ([`Registry::groups`]).
    pub fn groups(&self, tools: &[ToolEntry]) -> Vec<crate::registry::ToolGroup> {
        self.registry.groups(tools)
    }

    /// The registered tool named `name`.
    pub fn lookup(&self, name: &str) -> Option<ToolEntry> {
        self.registry.lookup(name)
    }

    /// Every registered tool name, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.registry.tool_names()
    }

    /// Why `entry` cannot work as things are, and the environment variables that would fix
    /// it; `None` when it can work ([`Registry::unavailable`]).
    pub fn unavailable(&self, entry: &ToolEntry) -> Option<(String, Vec<String>)> {
        self.registry.unavailable(entry)
    }

    /// The size limits the tool `name` declares on its arguments; `None` for a tool without
    /// any, or no such tool ([`Registry::argument_limits`]).
    pub fn argument_limits(&self, name: &str) -> Option<BTreeMap<String, usize>> {
        self.registry.argument_limits(name)
    }

    /// Wakes its holder each time the tool list is rebuilt (a plugin enabled, disabled,
    /// installed or reloaded); the holder compares what it sees to tell whether anything
    /// changed for it ([`Registry::catalog_changes`]).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.registry.catalog_changes()
    }

    /// The resources and prompts of the running plugins among `plugin_ids`, in trust order.
    pub fn libraries(&self, plugin_ids: &BTreeSet<String>) -> Libraries {
        self.registry.libraries(plugin_ids)
    }
}

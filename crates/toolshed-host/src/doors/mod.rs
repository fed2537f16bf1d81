//! What the doors (the MCP server, the CLI, the REST server) use of a host: a few
//! purpose-named services, borrowed from it, in place of the whole registry and the raw
//! state store.
//!
//! - [`Catalog`] ([`Host::catalog`]): the tools as callers see them.
//! - [`Plugins`] ([`Host::plugins`]): plugin administration — states, manifests, health,
//!   lifecycle, grants and config values.
//! - [`Tokens`] ([`Host::tokens`]): agent tokens, and the key that signs state handed to
//!   clients.
//! - [`Approvals`] ([`Host::approvals`]): the calls that wait for a person's answer.
//! - [`Host::memories`]: the memories, as the memory tools keep them.
//! - [`AgentState`] ([`Host::agent_state`]): the agent tools' todo lists and schedules.
//! - [`StateInfo`] ([`Host::state_info`]), [`Audit`] ([`Host::audit`]) and
//!   [`EventJournal`] ([`Host::event_journal`]): the state database as a door reports,
//!   reads and appends to it.
//!
//! Each service borrows what it needs of the host, so making one costs nothing; each has
//! a `detached` twin (`Catalog<'static>`, …) that owns it instead, for a task or a blocking
//! closure that outlives the borrow. Every method forwards to the registry or the store:
//! what it does and how it fails are theirs.

use std::borrow::Cow;
use std::sync::Arc;

use crate::host::Host;

mod agents;
mod approvals;
mod catalog;
mod plugins;
mod session_hooks;
mod state;
mod tokens;

pub use agents::{AgentState, Schedule, TodoList};
pub use approvals::Approvals;
pub use catalog::Catalog;
pub use plugins::{Plugins, WeakPlugins};
pub use state::{Audit, EventJournal, StateInfo};
pub use tokens::Tokens;

/// An `Arc` of the host's, borrowed by a service a [`Host`] method made, or owned by a
/// detached one.
type Held<'h, T> = Cow<'h, Arc<T>>;

/// `held`, owned.
fn owned<T>(held: &Held<'_, T>) -> Held<'static, T> {
    Cow::Owned(Arc::clone(held))
}

impl Host {
    /// The tools as callers see them: listed, looked up, whether each can work, when the
    /// list changes.
    pub fn catalog(&self) -> Catalog<'_> {
        Catalog::new(Cow::Borrowed(self.registry()))
    }

    /// The agent tools' todo lists and schedules.
    pub fn agent_state(&self) -> AgentState<'_> {
        AgentState::new(Cow::Borrowed(self.store()))
    }

    /// Plugin administration: states, manifests, health, lifecycle, grants and config
    /// values.
    pub fn plugins(&self) -> Plugins<'_> {
        Plugins::new(Cow::Borrowed(self.registry()), Cow::Borrowed(self.store()))
    }

    /// Agent tokens: authenticating, listing, making and revoking them.
    pub fn tokens(&self) -> Tokens<'_> {
        Tokens::new(Cow::Borrowed(self.store()))
    }

    /// The approval requests: listing and answering them.
    pub fn approvals(&self) -> Approvals<'_> {
        Approvals::new(Cow::Borrowed(self.store()))
    }

    /// The memories kept in the state store, with the configured `[memory]` settings.
    pub fn memories(&self) -> crate::memory::Memories {
        crate::memory::Memories::new(self.store().clone(), self.config().config.memory.clone())
    }

    /// Where the state database is and its schema version.
    pub fn state_info(&self) -> StateInfo<'_> {
        StateInfo::new(Cow::Borrowed(self.store()))
    }

    /// The audit log: pages of the calls recorded.
    pub fn audit(&self) -> Audit<'_> {
        Audit::new(Cow::Borrowed(self.store()))
    }

    /// The stored events a door's event streams resume from, and the ids they are numbered
    /// with.
    pub fn event_journal(&self) -> EventJournal<'_> {
        EventJournal::new(Cow::Borrowed(self.store()))
    }
}

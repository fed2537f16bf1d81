//! The toolshed host: everything between a door and a tool.
//!
//! - [`config`]: layered configuration with unknown keys reported; [`config_fields`]:
//!   plugin config values checked against their manifest fields.
//! - [`StateStore`]: the SQLite state store (plugin state, config values, audit), with the
//!   audit rows written in batches on a thread of its own.
//! - [`manifest`] and [`registry`]: plugin discovery, lifecycle, the tool catalog, and
//!   watching for what other processes change;
//!   [`install`]: installing plugins from directories and archives, strictly.
//! - [`Dispatcher`]: the one pipeline — resolve, review ([`Review`]), validate, policy,
//!   hooks, run, record — with [`Policy`] and [`CallHook`] as its seams.
//! - [`EventBus`]: what doors subscribe to.
//! - What else a door uses of a host, as purpose-named services borrowed from it:
//!   [`Catalog`], [`Plugins`], [`Tokens`], [`Approvals`], [`AgentState`], [`StateInfo`], [`Audit`] and
//!   [`EventJournal`] (see [`Host::catalog`] and its neighbours).
//! - [`Host`]: all of it opened together, by a [`HostBuilder`] that also builds the typed
//!   [`Services`] tools are made with.
//!
//! The concepts an embedder or a door names by module are public modules: [`config`] (the
//! layered configuration and every section's type), [`config_fields`] (plugin config
//! values checked against their fields), [`install`], [`manifest`], [`plugin_folders`]
//! and [`registry`] (plugins found, installed, loaded and listed), [`shipped`] (the tools a
//! plugin last served),
//! [`tool_search`] (BM25 over the catalog), [`library`] (plugins' resources and prompts),
//! [`policy`] (its rules and decisions), [`approvals`] and [`questions`] (calls that wait
//! for a person), [`identity`] and [`oauth`] (who calls), [`memory`], [`jobs`] and
//! [`job_store`] (calls that outlive their request, and stored events), [`env_overlay`]
//! (the workspace's `.env` layers), [`command_env`] (what plugins and session layers add to
//! commands), [`private_file`] (a file only its owner reads),
//! [`plugins_manage`] (the model's plugin tool), [`commands`] (the human commands:
//! status, approvals, approve, deny), [`workspace_layout`] (Fenix's folders) and
//! [`workspace_roots`] (the roots of a workspace given several).
//! Everything else is private, and what a door uses of it is re-exported here.
//!
//! ```no_run
//! # async fn demo(host: toolshed_host::Host) {
//! use toolshed_core::OwnerId;
//! use toolshed_host::CallRequest;
//! let req = CallRequest::new("calculator", serde_json::json!({"expression": "2+3*4"}), OwnerId::new("me"), "cli");
//! let result = host.call(req).await;
//! assert_eq!(result.result.unwrap().text_joined(), "14");
//! # }
//! ```

pub mod approvals;
pub mod command_env;
pub mod config;
pub mod config_fields;
pub mod env_overlay;
pub mod identity;
pub mod install;
pub mod job_store;
pub mod jobs;
pub mod library;
pub mod manifest;
pub mod memory;
pub mod oauth;
pub mod plugin_folders;
pub mod plugins_manage;
pub mod policy;
pub mod private_file;
pub mod questions;
pub mod registry;
pub mod shipped;
pub mod tool_search;
pub mod workspace_layout;
pub mod workspace_roots;

mod agents;
mod arguments;
mod audit;
mod audit_stats;
mod builder;
mod ceiling;
pub mod commands;
mod dispatcher;
mod doors;
mod events;
mod grants;
mod hooks;
mod host;
mod kit;
mod lazy;
mod llm;
mod manifest_compat;
mod name_glob;
mod quotas;
mod review;
mod secrets;
mod section;
mod store;
mod suggest;

pub use audit::{AuditPage, AuditQuery, AuditQueryError, AuditRow, MAX_AUDIT_PAGE, OUTCOMES};
pub use audit_stats::{
    AuditStats, CallBucket, LatencySeries, MAX_STATS_ROWS, Percentiles, STATS_TOP, ToolSummary,
};
pub use builder::HostBuilder;
pub use config::{Config, ConfigSources, LoadedConfig};
pub use dispatcher::{
    CANCEL_GRACE, CallRequest, CallResult, DASHBOARD_DOOR, DeferredApproval, Dispatcher,
    MAX_VIOLATIONS,
};
pub use doors::{
    AgentState, Approvals, Audit, Catalog, EventJournal, Plugins, Schedule, StateInfo, TodoList,
    Tokens, WeakPlugins,
};
pub use events::{EVENT_BUFFER, Event, EventBus};
pub use grants::MAX_GRANTS;
pub use hooks::{CallHook, HookDecision, Hooks, SessionLife};
pub use host::{DB_FILE, Host, HostError, PLUGINS_DIR};
pub use kit::{NotATime, NotAnHttpUrl, local_time, parse_since};
pub use policy::{AllowAll, Policy, PolicyDecision, RulePolicy, SandboxEscalation};
pub use registry::{Diagnostic, PluginInfo, PluginState, Registry, Root};
pub use review::{BUILTIN_PROFILES, CompiledRules, Review, RuleError, Subject};
pub use store::{AuditRecord, MigrateError, StateStore, StoreError, now_ms};
pub use suggest::closest;
pub use toolshed_ops::Services;

/// A health report as words: `ok`, `degraded` or `failed`, and the reason.
pub fn health_words(health: &toolshed_core::Health) -> (&'static str, String) {
    match health {
        toolshed_core::Health::Ok => ("ok", String::new()),
        toolshed_core::Health::Degraded(why) => ("degraded", why.clone()),
        toolshed_core::Health::Failed(why) => ("failed", why.clone()),
    }
}

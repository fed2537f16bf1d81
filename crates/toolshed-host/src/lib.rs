//! The toolshed host: everything between a door and a tool.
//!
//! - [`config`]: layered configuration with unknown keys reported; [`config_fields`]:
//!   plugin config values checked against their manifest fields.
//! - [`store`]: the SQLite state store (plugin state, config values, audit), with
//!   [`audit`] writing the audit rows in batches on a thread of its own.
//! - [`manifest`] and [`registry`]: plugin discovery, lifecycle, the tool catalog, and
//!   watching for what other processes change;
//!   [`install`]: installing plugins from directories and archives, strictly.
//! - [`dispatcher`]: the one pipeline — resolve, review, validate, policy, hooks, run,
//!   record — with [`policy`] and [`hooks`] as its seams.
//! - [`events`]: what doors subscribe to.
//! - [`host`]: all of it opened together, by a [`HostBuilder`] that also builds the typed
//!   [`Services`] tools are made with.
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

#![warn(missing_docs, unreachable_pub)]

pub mod audit;
mod builder;
pub mod config;
pub mod config_fields;
pub mod dispatcher;
pub mod events;
pub mod grants;
pub mod hooks;
pub mod host;
pub mod install;
pub mod lazy;
pub mod manifest;
pub mod policy;
pub mod registry;
pub mod review;
pub mod store;
pub mod suggest;

pub use builder::HostBuilder;
pub use config::{Config, ConfigSources, LoadedConfig};
pub use dispatcher::{CallRequest, CallResult, Dispatcher};
pub use events::{Event, EventBus};
pub use host::{DB_FILE, Host, HostError, PLUGINS_DIR};
pub use registry::{Diagnostic, PluginInfo, PluginState, Registry, Root};
pub use store::{AuditRecord, StateStore};
pub use toolshed_ops::Services;

//! External MCP servers mounted as toolshed plugins (kind `mcp`): toolshed as the one
//! gateway an agent needs.
//!
//! A plugin of kind `mcp` names a server in its manifest's `[mcp]` table (a command run
//! over stdio, with arguments and environment that may take `${config.KEY}` values). Its
//! [`McpPlugin`] starts the server in the command sandbox, lists its tools at `init` and
//! mounts each as `<prefix>__<tool>` in the group `mcp:<prefix>`, so review rules,
//! profiles, policy, hooks and the audit log treat them like any other tool. A call is
//! forwarded as `tools/call` with the call's progress routed back and cancellation sent on;
//! the host has validated its arguments against the server's schema first. See
//! docs/gateway.md.
//!
//! Public modules: [`manage`] (adding, importing, removing and pinning servers, for every
//! door alike), [`pins`] (each tool's definition pinned against rug pulls) and [`log`] (a
//! mounted server's stderr, kept bounded).

mod asks;
mod client;
mod convert;
mod http;
mod library;
pub mod log;
pub mod manage;
mod names;
pub use names::{InvalidPrefix, check_prefix, prefix};
pub mod pins;
mod plugin;
mod upstream;
mod watch;

pub use plugin::{McpLoader, McpPlugin};

//! The MCP servers toolshed mounts, as `/api/v1/mcp-servers` shows them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::PluginInfo;

/// A mounted MCP server: its plugin (kind `mcp`) and what it runs.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct McpServer {
    /// Its plugin.
    #[serde(flatten)]
    pub info: PluginInfo,
    /// Its command line, or its URL.
    pub target: String,
}

/// One mounted server with its pins.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct McpServerDetail {
    /// The server.
    #[serde(flatten)]
    pub server: McpServer,
    /// Its accepted tool definitions, and the tools it withholds.
    pub pins: Pins,
    /// The last lines of what it wrote to stderr (its log), when it has written any.
    pub stderr_tail: Option<String>,
}

/// What was accepted of a server's tools.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Pins {
    /// Tool name (on the server) → digest of its accepted definition.
    pub tools: BTreeMap<String, String>,
    /// Tools withheld when the server last started, their definitions having changed
    /// (`POST /mcp-servers/{name}/accept` accepts them).
    pub withheld: Vec<String>,
}

impl From<toolshed_gateway::pins::Pins> for Pins {
    fn from(pins: toolshed_gateway::pins::Pins) -> Self {
        let toolshed_gateway::pins::Pins { tools, withheld } = pins;
        Self { tools, withheld }
    }
}

/// The mounted servers.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct McpServerList {
    /// The servers.
    pub servers: Vec<McpServer>,
}

/// What an unmount removed.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Removed {
    /// The server's plugin id.
    pub removed: String,
}

/// Each server of an imported config, and how its mount went.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Imported {
    /// How many were mounted.
    pub mounted: usize,
    /// How many were not.
    pub failed: usize,
    /// Each server's outcome, in the config's order.
    pub servers: Vec<ImportOutcome>,
}

/// How one server of an imported config fared.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ImportOutcome {
    /// Its name in the config.
    pub name: String,
    /// Whether it was mounted.
    pub mounted: bool,
    /// The server, once mounted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<McpServer>,
    /// Why it was not mounted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

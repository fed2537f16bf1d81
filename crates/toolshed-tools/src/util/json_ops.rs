//! The `json_ops` tool (placeholder until implemented).

use std::sync::Arc;

use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolSpec};

use super::{GROUP, single_tool_plugin};

/// The `system.json_ops` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("json_ops", "Not implemented yet.")
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "json_ops",
        "json_ops",
        SyncTool::new(spec, |_, _| Err(ToolError::failed("not implemented"))),
    )
}

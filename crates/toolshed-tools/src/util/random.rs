//! The `random` tool (placeholder until implemented).

use std::sync::Arc;

use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolSpec};

use super::{GROUP, single_tool_plugin};

/// The `system.random` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("random", "Not implemented yet.")
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "random",
        "random",
        SyncTool::new(spec, |_, _| Err(ToolError::failed("not implemented"))),
    )
}

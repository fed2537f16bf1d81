//! The `calculator` tool (placeholder until implemented).

use std::sync::Arc;

use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolSpec};

use super::{GROUP, single_tool_plugin};

/// The `system.calculator` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("calculator", "Not implemented yet.")
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "calculator",
        "calculator",
        SyncTool::new(spec, |_, _| Err(ToolError::failed("not implemented"))),
    )
}

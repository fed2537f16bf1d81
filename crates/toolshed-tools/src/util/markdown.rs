//! The `markdown` tool (placeholder until implemented).

use std::sync::Arc;

use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolSpec};

use super::{GROUP, single_tool_plugin};

/// The `system.markdown` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("markdown", "Not implemented yet.")
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "markdown",
        "markdown",
        SyncTool::new(spec, |_, _| Err(ToolError::failed("not implemented"))),
    )
}

//! The `crypto` tool (placeholder until implemented).

use std::sync::Arc;

use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolSpec};

use super::{GROUP, single_tool_plugin};

/// The `system.crypto` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("crypto", "Not implemented yet.")
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "crypto",
        "crypto",
        SyncTool::new(spec, |_, _| Err(ToolError::failed("not implemented"))),
    )
}

//! Stateless utility plugins: calculator, datetime, text, crypto, random, markdown, json_ops.
//!
//! Each is one system plugin (`system.<name>`) with one tool named after it (`system.text`
//! also has `text_summarize` and `text_translate`, which ask a model). Tools with
//! several operations take an `operation` argument; the schema stays flat (no `oneOf`) so
//! every model provider accepts it, and each operation checks its own required fields with
//! an error that names the missing field.

use std::sync::Arc;

use toolshed_core::{BuiltinPlugin, Plugin, PluginKind, PluginManifest, SyncTool, ToolError};

pub mod calculator;
pub mod crypto;
pub mod datetime;
pub mod json_ops;
pub mod markdown;
pub mod random;
pub mod text;

#[cfg(test)]
pub(crate) mod test_support;

/// The group every utility tool belongs to.
pub const GROUP: &str = "util";

/// All utility plugins.
pub fn plugins() -> Vec<Arc<dyn Plugin>> {
    vec![
        calculator::plugin(),
        datetime::plugin(),
        text::plugin(),
        crypto::plugin(),
        random::plugin(),
        markdown::plugin(),
        json_ops::plugin(),
    ]
}

/// A system plugin `system.<name>` holding one synchronous tool.
pub(crate) fn single_tool_plugin(name: &str, title: &str, tool: SyncTool) -> Arc<dyn Plugin> {
    let mut manifest = PluginManifest::new(
        format!("system.{name}"),
        env!("CARGO_PKG_VERSION"),
        title,
        PluginKind::Builtin,
    );
    manifest.description = toolshed_core::Tool::spec(&tool).description.clone();
    manifest.tags = vec![GROUP.to_string()];
    Arc::new(BuiltinPlugin::new(manifest, vec![Arc::new(tool)]))
}

/// The value of an optional argument that `operation` requires, or an error naming it.
pub(crate) fn required<T>(value: Option<T>, field: &str, operation: &str) -> Result<T, ToolError> {
    value.ok_or_else(|| {
        ToolError::invalid_at(
            format!("/{field}"),
            format!("operation `{operation}` needs `{field}`; add it to the arguments"),
        )
    })
}

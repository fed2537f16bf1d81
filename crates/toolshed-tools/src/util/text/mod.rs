//! The `text` tool: counting, case conversion, slugs, truncation, regex and splitting; and
//! `text_summarize` / `text_translate`, which ask a model ([`model`]).
//!
//! ```text
//! {"operation": "case", "text": "HTTPServer error", "to": "snake"}   → http_server_error
//! {"operation": "slugify", "text": "Crème brûlée!"}                   → creme-brulee
//! {"operation": "regex_replace", "text": "a1b22", "pattern": "\\d+", "replacement": "#"}
//!                                                                     → a#b# (2 replacements)
//! ```
//!
//! One tool with an `operation` argument keeps the catalog short; the schema stays flat,
//! so each operation checks the fields it needs and names any that are missing. Inputs are
//! capped at 1 MiB and regexes at a compiled size limit, so no call can eat the host's
//! memory.

mod case;
mod length;
mod model;
mod pattern;
mod slug;
mod spec;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::Value;
use toolshed_core::{CallContext, Plugin, SyncTool, ToolError, ToolOutput};

use self::spec::{Args, Operation};
use super::required;

/// Largest `text` accepted, in bytes.
const MAX_TEXT_BYTES: usize = 1 << 20;

/// Largest text an operation may produce (a replacement can grow its input), in bytes.
const MAX_OUTPUT_BYTES: usize = 2 << 20;

/// Most matches or parts a call returns.
const MAX_ITEMS: usize = 10_000;

/// The `system.text` plugin: `text`, which is pure, and the two tools that ask a model.
pub fn plugin() -> Arc<dyn Plugin> {
    let mut manifest = toolshed_core::PluginManifest::new(
        "system.text",
        env!("CARGO_PKG_VERSION"),
        "Text",
        toolshed_core::PluginKind::Builtin,
    );
    manifest.description = "Count, change case, slugify, truncate, regex-extract, regex-replace or split text; summarize and translate it with a model.".into();
    manifest.tags = vec![super::GROUP.to_string()];
    let tools: Vec<Arc<dyn toolshed_core::Tool>> = vec![
        Arc::new(SyncTool::new(spec::tool_spec(), handle)),
        Arc::new(model::ModelTool::new(model::Job::Summarize)),
        Arc::new(model::ModelTool::new(model::Job::Translate)),
    ];
    Arc::new(toolshed_core::BuiltinPlugin::new(manifest, tools))
}

fn handle(_ctx: &CallContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = crate::args::parse(args)?;
    let text = args.text.as_str();
    if text.len() > MAX_TEXT_BYTES {
        return Err(ToolError::invalid_at(
            "/text",
            format!(
                "`text` is {} bytes, over the limit of {MAX_TEXT_BYTES} bytes (1 MiB); send it \
                 in smaller pieces",
                text.len()
            ),
        ));
    }
    let flags = args.flags.as_deref();
    match args.operation {
        Operation::Count => Ok(length::count(text)),
        Operation::Case => Ok(case::convert(text, required(args.to, "to", "case")?)),
        Operation::Slugify => slug::slugify(text, args.separator.as_deref(), args.max_length),
        Operation::Truncate => length::truncate(
            text,
            required(args.max_length, "max_length", "truncate")?,
            &args.ellipsis,
            args.unit,
        ),
        Operation::RegexExtract => pattern::extract(
            text,
            &required(args.pattern, "pattern", "regex_extract")?,
            flags,
            args.group.as_ref(),
            args.max_matches,
        ),
        Operation::RegexReplace => pattern::replace(
            text,
            &required(args.pattern, "pattern", "regex_replace")?,
            &required(args.replacement, "replacement", "regex_replace")?,
            flags,
            args.limit,
        ),
        Operation::Split => pattern::split(
            text,
            pattern::Splitter::new(args.separator.as_deref(), args.pattern.as_deref(), flags)?,
            args.max_parts,
            args.trim,
            args.skip_empty,
        ),
    }
}

/// `value` for an error message: at most 80 characters, with `…` when cut.
fn shorten(value: &str) -> String {
    const SHOWN: usize = 80;
    match value.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_string(),
    }
}

/// A count argument as `usize` (saturating: a count this large only means "no limit").
fn to_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

//! The `json_ops` tool: parse and pretty-print JSON, validate it against a JSON Schema, query
//! it with JSONPath, and diff two documents as a JSON Patch.
//!
//! Documents arrive either as JSON values (`document`, `left`, `right`, `schema`) or as text
//! (`text`) when the caller holds JSON as a string, e.g. a file it just read. Both are capped
//! in size and nesting so one call stays a quick computation.

mod diff;
mod format;
mod query;
mod spec;
#[cfg(test)]
mod tests;
mod validate;

use std::sync::Arc;

use serde_json::Value;
use toolshed_core::{Plugin, SyncTool, ToolError, ToolOutput};

use self::spec::{Args, Operation};
use super::{required, single_tool_plugin};

/// The largest JSON text or value accepted, in bytes (of the value's compact serialization).
const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The deepest nesting of arrays and objects accepted; serde_json's parser stops at the same
/// depth, so text and values have one limit.
const MAX_DEPTH: usize = 128;

/// The `system.json_ops` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        "json_ops",
        "JSON operations",
        SyncTool::new(spec::spec(), |_, args| run(args)),
    )
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Self::Parse => "parse",
            Self::Validate => "validate",
            Self::Query => "query",
            Self::Diff => "diff",
        }
    }

    /// The optional fields this operation reads.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Parse => &["text", "indent", "sort_keys"],
            Self::Validate => &["document", "text", "schema"],
            Self::Query => &["document", "text", "path"],
            Self::Diff => &["left", "right"],
        }
    }
}

fn run(args: Value) -> Result<ToolOutput, ToolError> {
    let args = spec::parse(args)?;
    reject_unused(&args)?;
    match args.operation {
        Operation::Parse => {
            let text = required(args.text, "text", "parse")?;
            let indent = match args.indent {
                None => 2,
                Some(n @ 0..=8) => n as usize,
                Some(other) => {
                    return Err(ToolError::invalid_at(
                        "/indent",
                        format!("`indent` is {other}; use 0 (compact) to 8 spaces"),
                    ));
                }
            };
            format::parse_output(&text, indent, args.sort_keys.unwrap_or(false))
        }
        Operation::Validate => {
            let schema = required(args.schema, "schema", "validate")?;
            format::check_value("schema", &schema)?;
            let document = document(args.document, args.text, Operation::Validate)?;
            validate::validate_output(&document, &schema)
        }
        Operation::Query => {
            let path = required(args.path, "path", "query")?;
            let document = document(args.document, args.text, Operation::Query)?;
            query::query_output(&document, &path)
        }
        Operation::Diff => {
            let left = required(args.left, "left", "diff")?;
            let right = required(args.right, "right", "diff")?;
            format::check_value("left", &left)?;
            format::check_value("right", &right)?;
            Ok(diff::diff_output(&left, &right))
        }
    }
}

/// Refuses fields the operation does not read, so a misplaced argument (say `document` for
/// `diff`) is reported instead of silently ignored.
fn reject_unused(args: &Args) -> Result<(), ToolError> {
    let present = [
        ("text", args.text.is_some()),
        ("document", args.document.is_some()),
        ("schema", args.schema.is_some()),
        ("path", args.path.is_some()),
        ("left", args.left.is_some()),
        ("right", args.right.is_some()),
        ("indent", args.indent.is_some()),
        ("sort_keys", args.sort_keys.is_some()),
    ];
    let op = args.operation;
    for (field, is_present) in present {
        if is_present && !op.fields().contains(&field) {
            return Err(ToolError::invalid_at(
                format!("/{field}"),
                format!(
                    "`{field}` does not apply to operation `{}`; remove it (`{}` reads: {})",
                    op.name(),
                    op.name(),
                    op.fields().join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The document to work on: `document` as given, or `text` parsed.
fn document(
    document: Option<Value>,
    text: Option<String>,
    op: Operation,
) -> Result<Value, ToolError> {
    match (document, text) {
        (Some(_), Some(_)) => Err(ToolError::invalid_at(
            "/text",
            format!(
                "operation `{}` got both `document` and `text`; give the JSON once, either as a \
                 value in `document` or as a string in `text`",
                op.name()
            ),
        )),
        (Some(document), None) => {
            format::check_value("document", &document)?;
            Ok(document)
        }
        (None, Some(text)) => format::parse_text("text", &text),
        (None, None) => Err(ToolError::invalid_at(
            "/document",
            format!(
                "operation `{}` needs `document` (a JSON value) or `text` (JSON as a string); \
                 add one",
                op.name()
            ),
        )),
    }
}

/// Compact JSON of `value`, for text output.
fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| value.to_string())
}

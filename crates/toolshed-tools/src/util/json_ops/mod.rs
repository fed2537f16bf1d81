//! The `json_ops` tool: parse and pretty-print JSON, validate it against a JSON Schema, query
//! it with JSONPath, and diff two documents as a JSON Patch.
//!
//! Documents arrive either as JSON values (`document`, `left`, `right`, `schema`) or as text
//! (`text`) when the caller holds JSON as a string, e.g. a file it just read. Both are capped
//! in size and nesting so one call stays a quick computation.

mod diff;
mod format;
mod query;
#[cfg(test)]
mod tests;
mod validate;

use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolOutput, ToolSpec};

use super::{GROUP, parse_args, required, single_tool_plugin};

/// The largest JSON text or value accepted, in bytes (of the value's compact serialization).
const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The deepest nesting of arrays and objects accepted; serde_json's parser stops at the same
/// depth, so text and values have one limit.
const MAX_DEPTH: usize = 128;

const DESCRIPTION: &str = "Work with JSON. `operation`:\n\
- `parse`: `text` (JSON as a string) → pretty-printed JSON; `indent` 0-8 spaces (default 2, \
0 = compact), `sort_keys` to sort object keys. A syntax error reports line, column and the \
offending line with a caret.\n\
- `validate`: `document` (a JSON value) or `text`, against `schema` (a JSON Schema, draft \
detected from `$schema`, default 2020-12) → `valid` and every error with its instance \
pointer, schema path and message. Remote `$ref`s are not fetched: inline them under `$defs`.\n\
- `query`: `document` or `text`, and `path`, a JSONPath expression (RFC 9535), e.g. \
`$.store.book[?@.price < 10].title` or `$..id` → matched values with their normalized paths \
and JSON pointers.\n\
- `diff`: `left` and `right` (JSON values) → `equal` and the changes as an RFC 6902 JSON \
Patch (add/remove/replace; applying it to `left` gives `right`). Objects are compared key by \
key; arrays index by index, extra elements are added or removed at the end (no move \
detection); 1 and 1.0 are equal. At most 1000 changes are reported.\n\
Inputs up to 1 MiB and 128 levels of nesting.";

/// The `system.json_ops` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("json_ops", DESCRIPTION)
        .title("JSON parse, validate (JSON Schema), query (JSONPath), diff (JSON Patch)")
        .input_schema(input_schema())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "json_ops",
        "JSON operations",
        SyncTool::new(spec, |_, args| run(args)),
    )
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "operation": {
                "type": "string",
                "enum": ["parse", "validate", "query", "diff"],
                "description": "What to do: `parse` and pretty-print, `validate` against a JSON Schema, `query` with JSONPath, or `diff` two values."
            },
            "text": {
                "type": "string",
                "description": "JSON as a string. Required for `parse`; for `validate` and `query` an alternative to `document`."
            },
            "document": {
                "description": "The JSON value to validate or query (any JSON value). Give this or `text`."
            },
            "schema": {
                "description": "For `validate`: the JSON Schema (an object or a boolean)."
            },
            "path": {
                "type": "string",
                "description": "For `query`: a JSONPath expression (RFC 9535) starting with `$`, e.g. `$.items[*].name` or `$..book[?@.price < 10]`."
            },
            "left": {
                "description": "For `diff`: the original JSON value."
            },
            "right": {
                "description": "For `diff`: the changed JSON value."
            },
            "indent": {
                "type": "integer",
                "minimum": 0,
                "maximum": 8,
                "description": "For `parse`: spaces per indentation level, 0-8; 0 prints compact JSON. Default 2."
            },
            "sort_keys": {
                "type": "boolean",
                "description": "For `parse`: sort object keys alphabetically. Default false (keep input order)."
            }
        },
        "required": ["operation"],
        "additionalProperties": false
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Operation {
    Parse,
    Validate,
    Query,
    Diff,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    operation: Operation,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, deserialize_with = "present")]
    document: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    schema: Option<Value>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default, deserialize_with = "present")]
    left: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    right: Option<Value>,
    #[serde(default)]
    indent: Option<i64>,
    #[serde(default)]
    sort_keys: Option<bool>,
}

/// A present field is `Some` even when it holds `null`: `null` is a document like any other.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

fn run(args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
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

//! The `json_ops` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use toolshed_core::{ToolAnnotations, ToolSpec};

use crate::util::GROUP;

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

/// The `json_ops` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new("json_ops", DESCRIPTION)
        .title("JSON parse, validate (JSON Schema), query (JSONPath), diff (JSON Patch)")
        .input_schema(crate::args::schema::<Args>())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Operation {
    Parse,
    Validate,
    Query,
    Diff,
}

/// What the schema shows for `indent` and `sort_keys` left out; the fields stay `Option`s
/// because an operation that does not read them refuses them when present.
fn two() -> Option<i64> {
    Some(2)
}

fn no() -> Option<bool> {
    Some(false)
}

/// The arguments of `json_ops`; each operation reads the fields it needs and refuses the rest.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// What to do: `parse` and pretty-print, `validate` against a JSON Schema, `query` with JSONPath, or `diff` two values.
    pub(super) operation: Operation,
    /// JSON as a string. Required for `parse`; for `validate` and `query` an alternative to `document`.
    pub(super) text: Option<String>,
    /// The JSON value to validate or query (any JSON value). Give this or `text`.
    #[serde(default, deserialize_with = "present")]
    pub(super) document: Option<Value>,
    /// For `validate`: the JSON Schema (an object or a boolean).
    #[serde(default, deserialize_with = "present")]
    pub(super) schema: Option<Value>,
    /// For `query`: a JSONPath expression (RFC 9535) starting with `$`, e.g. `$.items[*].name` or `$..book[?@.price < 10]`.
    pub(super) path: Option<String>,
    /// For `diff`: the original JSON value.
    #[serde(default, deserialize_with = "present")]
    pub(super) left: Option<Value>,
    /// For `diff`: the changed JSON value.
    #[serde(default, deserialize_with = "present")]
    pub(super) right: Option<Value>,
    /// For `parse`: spaces per indentation level; 0 prints compact JSON.
    #[schemars(default = "two", range(min = 0, max = 8))]
    pub(super) indent: Option<i64>,
    /// For `parse`: sort object keys alphabetically.
    #[schemars(default = "no")]
    pub(super) sort_keys: Option<bool>,
}

/// A present field is `Some` even when it holds `null`: `null` is a document like any other.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

//! The `json_ops` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use toolshed_core::{ToolAnnotations, ToolSpec};

use crate::util::GROUP;

const DESCRIPTION: &str = "Pretty-print, validate (JSON Schema), query (JSONPath) or diff \
JSON.";

/// The `json_ops` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new("json_ops", DESCRIPTION)
        .title("JSON tools")
        .input_schema(crate::args::schema::<Args>())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE)
        // Refused before they are parsed where a door can: a document of small values
        // costs its tree a dozen times its text.
        .max_argument_bytes("document", super::MAX_INPUT_BYTES)
        .max_argument_bytes("schema", super::MAX_INPUT_BYTES)
        .max_argument_bytes("left", super::MAX_INPUT_BYTES)
        .max_argument_bytes("right", super::MAX_INPUT_BYTES)
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
    /// parse: `text`. validate, query: `document` or `text`. diff: `left` to `right`.
    pub(super) operation: Operation,
    /// JSON as a string
    pub(super) text: Option<String>,
    /// A JSON value
    #[serde(default, deserialize_with = "present")]
    pub(super) document: Option<Value>,
    /// validate: the JSON Schema
    #[serde(default, deserialize_with = "present")]
    pub(super) schema: Option<Value>,
    /// query: JSONPath, e.g. `$.items[*].name`
    pub(super) path: Option<String>,
    /// diff: original
    #[serde(default, deserialize_with = "present")]
    pub(super) left: Option<Value>,
    /// diff: changed
    #[serde(default, deserialize_with = "present")]
    pub(super) right: Option<Value>,
    /// parse: spaces (0: compact)
    #[schemars(default = "two", range(min = 0, max = 8))]
    pub(super) indent: Option<i64>,
    /// parse: sort keys
    #[schemars(default = "no")]
    pub(super) sort_keys: Option<bool>,
}

/// The arguments, with the JSON values (`document`, `schema`, `left`, `right`) moved into
/// place rather than deserialized again: a large document is held once, not twice.
pub(super) fn parse(mut args: Value) -> Result<Args, toolshed_core::ToolError> {
    let mut taken: Vec<(&str, Value)> = Vec::new();
    if let Value::Object(map) = &mut args {
        for key in ["document", "schema", "left", "right"] {
            if let Some(value) = map.get_mut(key) {
                // `null` stays in its place: the field still reads as given.
                taken.push((key, std::mem::take(value)));
            }
        }
    }
    let mut parsed: Args = crate::args::parse(args)?;
    for (key, value) in taken {
        let slot = match key {
            "document" => &mut parsed.document,
            "schema" => &mut parsed.schema,
            "left" => &mut parsed.left,
            _ => &mut parsed.right,
        };
        *slot = Some(value);
    }
    Ok(parsed)
}

/// A present field is `Some` even when it holds `null`: `null` is a document like any other.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

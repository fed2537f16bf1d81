//! The text tool's spec, as data.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolshed_core::{ToolAnnotations, ToolSpec};

use super::pattern::DEFAULT_MAX_MATCHES;
use super::{MAX_ITEMS, MAX_TEXT_BYTES, case, length};
use crate::util::GROUP;

/// The `text` tool spec.
pub(super) fn tool_spec() -> ToolSpec {
    ToolSpec::new(
        "text",
        "Count characters, words and lines, change case, slugify, truncate, regex-extract, regex-replace or split text.",
    )
    .title("Text")
    .group(GROUP)
    .annotations(ToolAnnotations::PURE)
    .input_schema(crate::args::schema::<Args>())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Operation {
    Count,
    Case,
    Slugify,
    Truncate,
    RegexExtract,
    RegexReplace,
    Split,
}

fn ellipsis() -> String {
    "…".into()
}

fn max_matches() -> u64 {
    DEFAULT_MAX_MATCHES
}

/// The tool's arguments; each operation reads the fields it needs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    pub(super) operation: Operation,
    /// The input
    #[schemars(length(max = MAX_TEXT_BYTES))]
    pub(super) text: String,
    /// case: constant is SCREAMING_SNAKE
    pub(super) to: Option<case::Case>,
    /// slugify: word separator. split: literal
    pub(super) separator: Option<String>,
    /// truncate, slugify: most chars or words
    #[schemars(range(min = 1))]
    pub(super) max_length: Option<u64>,
    /// truncate: appended where cut
    #[serde(default = "ellipsis")]
    pub(super) ellipsis: String,
    /// truncate: what max_length counts
    #[serde(default)]
    pub(super) unit: length::Unit,
    /// A regex
    pub(super) pattern: Option<String>,
    /// Regex flags: i, m, s, x
    pub(super) flags: Option<String>,
    /// regex_extract: one group
    pub(super) group: Option<Value>,
    /// regex_extract: most matches
    #[serde(default = "max_matches")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_matches: u64,
    /// regex_replace: $1, ${name} insert groups
    pub(super) replacement: Option<String>,
    /// regex_replace: only the first N (0: all)
    #[serde(default)]
    pub(super) limit: u64,
    /// split: most parts
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_parts: Option<u64>,
    /// split: trim parts
    #[serde(default)]
    pub(super) trim: bool,
    /// split: drop empty parts
    #[serde(default)]
    pub(super) skip_empty: bool,
}

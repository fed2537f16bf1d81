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
        "Count, change case, slugify, truncate, regex-extract, regex-replace or split text: \
         one `operation` per call. Each field says which operations read it; regexes use \
         Rust syntax (no look-around or backreferences).",
    )
    .title("Text utilities")
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
    /// count: chars, words, lines, bytes. case: convert to `to`. slugify: a lowercase ASCII slug. truncate: cut to `max_length`. regex_extract: matches with offsets and groups. regex_replace: the new text and the count. split: the parts.
    pub(super) operation: Operation,
    /// The input text (at most 1 MiB).
    #[schemars(length(max = MAX_TEXT_BYTES))]
    pub(super) text: String,
    /// case (required): snake, kebab, camel, pascal and constant (SCREAMING_SNAKE) rebuild the text from its words; title and sentence keep its spacing.
    pub(super) to: Option<case::Case>,
    /// slugify: the word separator (`-` if omitted). split: the literal to split on (or use `pattern`).
    pub(super) separator: Option<String>,
    /// truncate (required): the most chars or words to keep. slugify: the longest slug (whole words).
    #[schemars(range(min = 1))]
    pub(super) max_length: Option<u64>,
    /// truncate: appended where cut ("" for none); counts toward max_length in chars.
    #[serde(default = "ellipsis")]
    pub(super) ellipsis: String,
    /// truncate: what max_length counts.
    #[serde(default)]
    pub(super) unit: length::Unit,
    /// regex_extract, regex_replace (required), split: a regex, e.g. `(?P<year>\d{4})-(\d{2})`.
    pub(super) pattern: Option<String>,
    /// Regex flags: i (ignore case), m (multi-line ^ $), s (. matches \n), x (verbose).
    pub(super) flags: Option<String>,
    /// regex_extract: return only this group, by number (0: the whole match) or name.
    pub(super) group: Option<Value>,
    /// regex_extract: the most matches to return.
    #[serde(default = "max_matches")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_matches: u64,
    /// regex_replace (required): $1 or ${name} insert a group ($$: a literal $).
    pub(super) replacement: Option<String>,
    /// regex_replace: replace only the first N matches (0: all).
    #[serde(default)]
    pub(super) limit: u64,
    /// split: the most parts; the last holds the rest.
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_parts: Option<u64>,
    /// split: trim whitespace from each part.
    #[serde(default)]
    pub(super) trim: bool,
    /// split: drop empty parts (after trimming).
    #[serde(default)]
    pub(super) skip_empty: bool,
}

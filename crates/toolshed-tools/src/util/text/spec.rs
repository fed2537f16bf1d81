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
        "Text utilities; pick one `operation` per call. `text` is always required (at most \
         1 MiB).\n\
         - count: chars (Unicode scalar values), words (whitespace-separated), lines, bytes \
         (UTF-8).\n\
         - case: `to` = upper | lower | title | sentence | snake | kebab | camel | pascal | \
         constant. snake/kebab/camel/pascal/constant rebuild the text from its words, split \
         at spaces, punctuation, camelCase humps and acronyms (HTTPServer → http, server). \
         title and sentence keep spacing and punctuation; a single identifier such as \
         user_id or parseJson is split into words first.\n\
         - slugify: lowercase ASCII slug (é → e, ß → ss; other scripts dropped); optional \
         `separator` (default -) and `max_length` (whole words kept while they fit).\n\
         - truncate: `max_length` required; `unit` chars (default: the `ellipsis`, default \
         …, counts toward max_length) or words (ellipsis appended to the last word kept). \
         Never splits a character.\n\
         - regex_extract: `pattern` (Rust regex syntax: no look-around or backreferences), \
         optional `flags` (i, m, s, x), `group` (number or name: return only that group; \
         matches where it did not take part are skipped) and `max_matches` (default 100, \
         at most 10000). Returns each match with byte offsets and its groups.\n\
         - regex_replace: `pattern`, `replacement` ($1, ${name}; $$ is a literal $; write \
         ${1}x when text follows a group), optional `flags` and `limit` (0 = all). Returns \
         the new text and the number of replacements.\n\
         - split: `separator` (literal string) or `pattern` (regex, with optional `flags`); \
         optional `max_parts` (the last part holds the rest), `trim` (trim whitespace from \
         each part) and `skip_empty` (drop empty parts, after trimming).",
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
    /// What to do with `text`; see the tool description for the fields each operation uses.
    pub(super) operation: Operation,
    /// The input text (at most 1 MiB).
    #[schemars(length(max = MAX_TEXT_BYTES))]
    pub(super) text: String,
    /// case: the target case. constant is SCREAMING_SNAKE_CASE.
    pub(super) to: Option<case::Case>,
    /// slugify: the word separator (`-` if omitted). split: the literal string to split on (use this or `pattern`).
    pub(super) separator: Option<String>,
    /// truncate (required): the most characters or words to keep. slugify: the longest slug, in characters.
    #[schemars(range(min = 1))]
    pub(super) max_length: Option<u64>,
    /// truncate: appended where the text was cut ("" for none). Counts toward max_length when unit is chars.
    #[serde(default = "ellipsis")]
    pub(super) ellipsis: String,
    /// truncate: what max_length counts.
    #[serde(default)]
    pub(super) unit: length::Unit,
    /// regex_extract, regex_replace (required), split: a regular expression in Rust regex syntax, e.g. `(?P<year>\d{4})-(\d{2})`.
    pub(super) pattern: Option<String>,
    /// Regex flags, any of: i (case-insensitive), m (^ and $ match at line breaks), s (. matches newlines), x (verbose), e.g. `im`.
    pub(super) flags: Option<String>,
    /// regex_extract: return only this capture group, by number (0 is the whole match) or by name.
    pub(super) group: Option<Value>,
    /// regex_extract: the most matches to return.
    #[serde(default = "max_matches")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_matches: u64,
    /// regex_replace (required): the replacement text; $1 or ${name} insert a group, $$ is a literal $.
    pub(super) replacement: Option<String>,
    /// regex_replace: replace only the first N matches (0 = all).
    #[serde(default)]
    pub(super) limit: u64,
    /// split: the most parts to return; the last part holds the rest of the text.
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_parts: Option<u64>,
    /// split: trim whitespace from each part.
    #[serde(default)]
    pub(super) trim: bool,
    /// split: drop empty parts, after trimming.
    #[serde(default)]
    pub(super) skip_empty: bool,
}

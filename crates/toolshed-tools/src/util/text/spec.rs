//! The text tool's spec, as data.

use serde_json::json;
use toolshed_core::{ToolAnnotations, ToolSpec};

use super::{MAX_ITEMS, MAX_TEXT_BYTES};
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
    .input_schema(json!({
        "type": "object",
        "properties": {
            "operation": {
                "type": "string",
                "enum": ["count", "case", "slugify", "truncate", "regex_extract",
                         "regex_replace", "split"],
                "description": "What to do with `text`; see the tool description for the \
                                fields each operation uses.",
            },
            "text": {
                "type": "string",
                "description": "The input text (at most 1 MiB).",
                "maxLength": MAX_TEXT_BYTES,
            },
            "to": {
                "type": "string",
                "enum": ["upper", "lower", "title", "sentence", "snake", "kebab", "camel",
                         "pascal", "constant"],
                "description": "case: the target case. constant is SCREAMING_SNAKE_CASE.",
            },
            "separator": {
                "type": "string",
                "description": "slugify: the word separator (default `-`). split: the \
                                literal string to split on (use this or `pattern`).",
            },
            "max_length": {
                "type": "integer",
                "minimum": 1,
                "description": "truncate (required): the most characters or words to keep. \
                                slugify: the longest slug, in characters.",
            },
            "ellipsis": {
                "type": "string",
                "description": "truncate: appended where the text was cut (default `…`; \
                                \"\" for none). Counts toward max_length when unit is chars.",
            },
            "unit": {
                "type": "string",
                "enum": ["chars", "words"],
                "description": "truncate: what max_length counts (default chars).",
            },
            "pattern": {
                "type": "string",
                "description": "regex_extract, regex_replace (required), split: a regular \
                                expression in Rust regex syntax, e.g. `(?P<year>\\d{4})-(\\d{2})`.",
            },
            "flags": {
                "type": "string",
                "description": "Regex flags, any of: i (case-insensitive), m (^ and $ match \
                                at line breaks), s (. matches newlines), x (verbose), e.g. `im`.",
            },
            "group": {
                "description": "regex_extract: return only this capture group, by number \
                                (0 is the whole match) or by name.",
            },
            "max_matches": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_ITEMS,
                "description": "regex_extract: the most matches to return (default 100).",
            },
            "replacement": {
                "type": "string",
                "description": "regex_replace (required): the replacement text; $1 or \
                                ${name} insert a group, $$ is a literal $.",
            },
            "limit": {
                "type": "integer",
                "minimum": 0,
                "description": "regex_replace: replace only the first N matches (default 0 \
                                = all).",
            },
            "max_parts": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_ITEMS,
                "description": "split: the most parts to return; the last part holds the \
                                rest of the text.",
            },
            "trim": {
                "type": "boolean",
                "description": "split: trim whitespace from each part (default false).",
            },
            "skip_empty": {
                "type": "boolean",
                "description": "split: drop empty parts, after trimming (default false).",
            },
        },
        "required": ["operation", "text"],
        "additionalProperties": false,
    }))
}

//! The `random` tool as data.

use serde_json::json;
use toolshed_core::{ToolAnnotations, ToolSpec};

use super::{MAX_COUNT, MAX_ITEMS, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH};
use crate::util::GROUP;

/// The tool's name.
pub(super) const NAME: &str = "random";

const DESCRIPTION: &str = "\
Random values. Set `operation`:
- `integer`: whole numbers in `min`..=`max` (inclusive; default 0..=100; any 64-bit signed range).
- `float`: numbers in `min`..`max` (min inclusive, max exclusive; default 0..1).
- `uuid`: UUIDs of `version` 4 (random, default) or 7 (time-ordered: current time in milliseconds plus random bits).
- `password`: `length` characters (default 20, 4..=1024) from the enabled classes `lowercase`, `uppercase`, `digits`, `symbols` (all on by default), at least one from each; `exclude_ambiguous` drops `0O1lI|`.
- `pick`: `count` (default 1) of `items`; `unique` (default true) picks without replacement.
- `shuffle`: `items` in random order.
`count` (default 1, at most 10,000) sets how many values integer/float/uuid/password/pick return. \
Without `seed` the generator is seeded from the operating system (cryptographically secure; fit for passwords). \
With `seed` (integer >= 0) the output is reproducible: the same seed and arguments give the same values with this build \
(for a seeded v7 UUID only the random bits repeat; the timestamp is the current time). Never use a seeded password as a real secret.
Output: the values one per line; structured `{\"values\": [...]}` plus `seed` when given.";

/// The `random` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new(NAME, DESCRIPTION)
        .title("Random numbers, UUIDs, passwords, picks and shuffles")
        .group(GROUP)
        .annotations(ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: false,
            open_world: false,
        })
        .input_schema(json!({
            "type": "object",
            "properties": {
                "operation": {
                    "type": "string",
                    "enum": ["integer", "float", "uuid", "password", "pick", "shuffle"],
                    "description": "What to generate; see the tool description for the fields each operation reads."
                },
                "seed": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Any operation: seed for reproducible output (same seed and arguments, same values). Omit for fresh OS-seeded randomness."
                },
                "count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_COUNT,
                    "description": "integer/float/uuid/password/pick: how many values to return (default 1)."
                },
                "min": {
                    "type": "number",
                    "description": "integer: smallest value, inclusive (default 0). float: lower bound, inclusive (default 0)."
                },
                "max": {
                    "type": "number",
                    "description": "integer: largest value, inclusive (default 100). float: upper bound, exclusive (default 1)."
                },
                "version": {
                    "type": "integer",
                    "enum": [4, 7],
                    "description": "uuid: 4 for random (default) or 7 for time-ordered."
                },
                "length": {
                    "type": "integer",
                    "minimum": MIN_PASSWORD_LENGTH,
                    "maximum": MAX_PASSWORD_LENGTH,
                    "description": "password: number of characters (default 20)."
                },
                "lowercase": {
                    "type": "boolean",
                    "description": "password: include a-z (default true)."
                },
                "uppercase": {
                    "type": "boolean",
                    "description": "password: include A-Z (default true)."
                },
                "digits": {
                    "type": "boolean",
                    "description": "password: include 0-9 (default true)."
                },
                "symbols": {
                    "type": "boolean",
                    "description": "password: include symbols from !#$%&()*+,-./:;<=>?@[]^_{|}~ (default true)."
                },
                "exclude_ambiguous": {
                    "type": "boolean",
                    "description": "password: leave out characters that are easy to misread: 0 O 1 l I | (default false)."
                },
                "items": {
                    "type": "array",
                    "maxItems": MAX_ITEMS,
                    "items": {"description": "Any JSON value."},
                    "description": "pick/shuffle: the values to choose from or reorder (any JSON values)."
                },
                "unique": {
                    "type": "boolean",
                    "description": "pick: true (default) picks each item at most once; false allows repeats."
                }
            },
            "required": ["operation"],
            "additionalProperties": false
        }))
}

//! The `random` tool as data.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Number, Value};
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
        .input_schema(crate::args::schema::<Args>())
}

/// What the caller asked for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Operation {
    Integer,
    Float,
    Uuid,
    Password,
    Pick,
    Shuffle,
}

fn one() -> u64 {
    1
}

fn zero() -> Number {
    Number::from(0)
}

fn four() -> u64 {
    4
}

fn twenty() -> u64 {
    20
}

fn yes() -> bool {
    true
}

/// The tool's arguments; each operation reads the fields it needs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// What to generate; see the tool description for the fields each operation reads.
    pub(super) operation: Operation,
    /// Any operation: seed for reproducible output (same seed and arguments, same values). Omit for fresh OS-seeded randomness.
    pub(super) seed: Option<u64>,
    /// integer/float/uuid/password/pick: how many values to return.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub(super) count: u64,
    /// integer: smallest value, inclusive. float: lower bound, inclusive.
    #[serde(default = "zero")]
    pub(super) min: Number,
    /// integer: largest value, inclusive (100 if omitted). float: upper bound, exclusive (1 if omitted).
    pub(super) max: Option<Number>,
    /// uuid: 4 for random or 7 for time-ordered.
    #[serde(default = "four")]
    #[schemars(range(min = 4), extend("enum" = [4, 7]))]
    pub(super) version: u64,
    /// password: number of characters.
    #[serde(default = "twenty")]
    #[schemars(range(min = MIN_PASSWORD_LENGTH, max = MAX_PASSWORD_LENGTH))]
    pub(super) length: u64,
    /// password: include a-z.
    #[serde(default = "yes")]
    pub(super) lowercase: bool,
    /// password: include A-Z.
    #[serde(default = "yes")]
    pub(super) uppercase: bool,
    /// password: include 0-9.
    #[serde(default = "yes")]
    pub(super) digits: bool,
    /// password: include symbols from !#$%&()*+,-./:;<=>?@[]^_{|}~.
    #[serde(default = "yes")]
    pub(super) symbols: bool,
    /// password: leave out characters that are easy to misread: 0 O 1 l I |.
    #[serde(default)]
    pub(super) exclude_ambiguous: bool,
    /// pick/shuffle: the values to choose from or reorder.
    // An element schema of `true` would be shorter, but strict schema checkers (the MCP
    // inspector's `--strict`) refuse a bare `true` where a schema object is expected.
    #[schemars(length(max = MAX_ITEMS), extend("items" = {"description": "Any JSON value."}))]
    pub(super) items: Option<Vec<Value>>,
    /// pick: true picks each item at most once; false allows repeats.
    #[serde(default = "yes")]
    pub(super) unique: bool,
}

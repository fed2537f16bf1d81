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
Random integers, floats, UUIDs (v4, v7), passwords, picks from a list and shuffles, from \
the operating system's secure generator; `seed` makes them reproducible (never for real \
passwords).";

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
    /// integer: in `min`..=`max`. float: in `min`..`max`. uuid: of `version`. password: `length` chars, one of each enabled class at least. pick: `count` of `items`. shuffle: `items` reordered.
    pub(super) operation: Operation,
    /// Same seed and arguments, same values (a v7 UUID keeps the current time).
    pub(super) seed: Option<u64>,
    /// How many values.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub(super) count: u64,
    /// integer, float: the lower bound (inclusive).
    #[serde(default = "zero")]
    pub(super) min: Number,
    /// integer: the upper bound, inclusive (100 if omitted). float: exclusive (1 if omitted).
    pub(super) max: Option<Number>,
    /// uuid: 4 (random) or 7 (time-ordered).
    #[serde(default = "four")]
    #[schemars(range(min = 4), extend("enum" = [4, 7]))]
    pub(super) version: u64,
    /// password: its characters.
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
    /// password: include symbols.
    #[serde(default = "yes")]
    pub(super) symbols: bool,
    /// password: leave out 0 O 1 l I |.
    #[serde(default)]
    pub(super) exclude_ambiguous: bool,
    /// pick, shuffle: the values.
    // An element schema of `true` would be shorter, but strict schema checkers (the MCP
    // inspector's `--strict`) refuse a bare `true` where a schema object is expected.
    #[schemars(length(max = MAX_ITEMS), extend("items" = {"description": "Any JSON value."}))]
    pub(super) items: Option<Vec<Value>>,
    /// pick: each item at most once.
    #[serde(default = "yes")]
    pub(super) unique: bool,
}

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
Secure random integers, floats, UUIDs, passwords, picks from a list and shuffles.";

/// The `random` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new(NAME, DESCRIPTION)
        .title("Random values")
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
    /// pick: `count` of `items`
    pub(super) operation: Operation,
    /// Reproducible values
    pub(super) seed: Option<u64>,
    /// How many
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_COUNT))]
    pub(super) count: u64,
    /// Lower bound
    #[serde(default = "zero")]
    pub(super) min: Number,
    /// Upper bound
    pub(super) max: Option<Number>,
    /// uuid version
    #[serde(default = "four")]
    #[schemars(range(min = 4), extend("enum" = [4, 7]))]
    pub(super) version: u64,
    /// password length
    #[serde(default = "twenty")]
    #[schemars(range(min = MIN_PASSWORD_LENGTH, max = MAX_PASSWORD_LENGTH))]
    pub(super) length: u64,
    /// password: a-z
    #[serde(default = "yes")]
    pub(super) lowercase: bool,
    /// password: A-Z
    #[serde(default = "yes")]
    pub(super) uppercase: bool,
    /// password: 0-9
    #[serde(default = "yes")]
    pub(super) digits: bool,
    /// password: symbols
    #[serde(default = "yes")]
    pub(super) symbols: bool,
    /// password: no 0 O 1 l I |
    #[serde(default)]
    pub(super) exclude_ambiguous: bool,
    /// pick, shuffle
    // An element schema of `true` would be shorter, but strict schema checkers (the MCP
    // inspector's `--strict`) refuse a bare `true` where a schema object is expected.
    #[schemars(length(max = MAX_ITEMS), extend("items" = {"description": "Any JSON value."}))]
    pub(super) items: Option<Vec<Value>>,
    /// pick: without repeats
    #[serde(default = "yes")]
    pub(super) unique: bool,
}

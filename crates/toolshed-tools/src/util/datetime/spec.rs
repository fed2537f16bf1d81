//! The `datetime` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use toolshed_core::{ToolAnnotations, ToolSpec};

use super::input::Disambiguation;
use crate::util::GROUP;

/// The tool's name.
pub(super) const NAME: &str = "datetime";

const DESCRIPTION: &str = "\
Dates and times, DST-aware. Instants: RFC 3339 or 9557, civil `2026-03-29T14:30`, unix \
seconds or `now`.";

/// The `datetime` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new(NAME, DESCRIPTION)
        .title("Date and time")
        .group(GROUP)
        .annotations(ToolAnnotations::PURE)
        .input_schema(crate::args::schema::<Args>())
}

/// What the caller asked for.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Operation {
    Now,
    Format,
    Parse,
    Add,
    Subtract,
    Diff,
    Convert,
}

impl Operation {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Now => "now",
            Self::Format => "format",
            Self::Parse => "parse",
            Self::Add => "add",
            Self::Subtract => "subtract",
            Self::Diff => "diff",
            Self::Convert => "convert",
        }
    }
}

/// The largest unit of a `diff` span.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum DiffUnit {
    Years,
    Months,
    Weeks,
    #[default]
    Days,
    Hours,
    Minutes,
    Seconds,
}

/// What the schema shows for `from` left out; the field stays an `Option` because a `from`
/// that the instant's own offset overrides is reported.
fn utc() -> Option<String> {
    Some("UTC".into())
}

/// The tool's arguments; each operation reads the fields it needs.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// parse reads `text`, diff `start` and `end`, the rest `instant`
    pub(super) operation: Operation,
    /// IANA zone or offset
    pub(super) timezone: Option<String>,
    /// The instant
    pub(super) instant: Option<String>,
    /// Unix seconds instead of `instant`
    pub(super) unix: Option<Number>,
    /// strftime; parse: strptime (omitted: guess)
    pub(super) format: Option<String>,
    /// parse: the text
    pub(super) text: Option<String>,
    /// add, subtract: `P1DT2H` or `1d 2h`
    pub(super) duration: Option<String>,
    /// diff: from
    pub(super) start: Option<String>,
    /// diff: to
    pub(super) end: Option<String>,
    /// diff: largest unit
    #[serde(default)]
    pub(super) unit: DiffUnit,
    /// convert: target zone
    pub(super) to: Option<String>,
    /// convert: zone of a civil `instant`
    #[schemars(default = "utc")]
    pub(super) from: Option<String>,
    /// For a time in a DST gap or overlap
    #[serde(default)]
    pub(super) disambiguation: Disambiguation,
}

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
Dates, times and time zones (IANA, DST-aware): the time now, format, parse, add or subtract \
a duration, the span between two instants, convert between zones. Instants: RFC 3339, RFC \
9557 (`2026-03-29T14:30[Europe/Paris]`), civil `2026-03-29T14:30` (read in `timezone` or \
`from`), RFC 2822, unix seconds, or `now`.";

/// The `datetime` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new(NAME, DESCRIPTION)
        .title("Date and time: now, format, parse, arithmetic, time zones")
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
    /// now: the time in `timezone`. format: `instant` (or `unix`) with `format`. parse: `text` to an instant. add, subtract: move `instant` by `duration` (calendar days keep the wall-clock time across DST). diff: `end` minus `start`. convert: `instant` in zone `to`.
    pub(super) operation: Operation,
    /// IANA zone (`Europe/London`), `UTC` or an offset (`+05:30`): where results are shown, calendar arithmetic done and offset-less times read. Omitted: the instant's own zone, else UTC.
    pub(super) timezone: Option<String>,
    /// format, add, subtract, convert: e.g. `2026-03-29T01:30:00Z`, `2026-03-29T14:30`, `1774747800`, `now`.
    pub(super) instant: Option<String>,
    /// format: unix seconds (fractions allowed) instead of `instant`.
    pub(super) unix: Option<Number>,
    /// format: strftime, e.g. `%Y-%m-%d %H:%M %Z`. parse: strptime, e.g. `%d/%m/%Y`; omitted: auto-detect.
    pub(super) format: Option<String>,
    /// parse: the date/time text to read.
    pub(super) text: Option<String>,
    /// add, subtract: ISO 8601 (`P1DT2H`) or `1d 2h 30m`, `90s`, `2 weeks`, `1 month`.
    pub(super) duration: Option<String>,
    /// diff: the earlier instant.
    pub(super) start: Option<String>,
    /// diff: the later instant (before `start`: a negative span).
    pub(super) end: Option<String>,
    /// diff: the largest unit of the human span.
    #[serde(default)]
    pub(super) unit: DiffUnit,
    /// convert: the target zone, e.g. `Asia/Kolkata`.
    pub(super) to: Option<String>,
    /// convert: the zone of an `instant` without an offset.
    #[schemars(default = "utc")]
    pub(super) from: Option<String>,
    /// A civil time a DST change skips or repeats: compatible (skipped: later, repeated: earlier), earlier, later, or reject.
    #[serde(default)]
    pub(super) disambiguation: Disambiguation,
}

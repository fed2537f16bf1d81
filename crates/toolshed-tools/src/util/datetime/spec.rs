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
Dates, times and time zones (IANA time zone database, DST-aware). Set `operation`:
- `now`: the current time in `timezone` (default UTC): RFC 3339, zone, offset, unix seconds and milliseconds, weekday.
- `format`: `instant` (or `unix` seconds) formatted with a strftime `format` such as `%Y-%m-%d %H:%M`, in `timezone` if given.
- `parse`: read `text` (with a strptime `format`, or auto-detected) into a UTC instant, unix seconds and the offset/zone it carried.
- `add` / `subtract`: move `instant` by `duration` (ISO 8601 `P1DT2H` or friendly `1d 2h 30m`, `90s`, `2 weeks`). Days, months and years follow the calendar in `timezone` (default: the instant's own zone), so `1d` across a DST change stays at the same wall-clock time.
- `diff`: `end` minus `start` as signed seconds, a human span with largest unit `unit` (default `days`) and ISO 8601.
- `convert`: `instant` shown in zone `to`; `from` is the zone of an `instant` written without an offset.
Instants: RFC 3339 (`2026-03-29T01:30:00Z`, `...+02:00`), RFC 9557 (`2026-03-29T14:30[Europe/Paris]`), civil `2026-03-29` or `2026-03-29T14:30[:00]` (read in `timezone`/`from`, default UTC), RFC 2822, unix seconds as digits, or `now`. A civil time that falls in a DST gap or fold is resolved by `disambiguation` (default `compatible`: a gap moves forward by its length, a fold takes the earlier time) and the result says so. Zones are IANA names like `Europe/London`, `UTC`, or fixed offsets like `+05:30`.";

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
    /// What to do; see the tool description for the fields each operation reads.
    pub(super) operation: Operation,
    /// IANA zone (`Europe/London`), `UTC` or a fixed offset (`+05:30`). now/format/add/subtract/diff: the zone to show results and do calendar arithmetic in. parse and civil instants: the zone a time without an offset is read in. Omitted: UTC, or the instant's own zone when it carries one.
    pub(super) timezone: Option<String>,
    /// format/add/subtract/convert: the point in time, e.g. `2026-03-29T01:30:00Z`, `2026-03-29T14:30`, `1774747800` or `now`.
    pub(super) instant: Option<String>,
    /// format: unix time in seconds (fractions allowed), instead of `instant`.
    pub(super) unix: Option<Number>,
    /// format: strftime pattern for the output, e.g. `%Y-%m-%d %H:%M %Z`. parse: strptime pattern the text follows, e.g. `%d/%m/%Y %H:%M`; omit to auto-detect.
    pub(super) format: Option<String>,
    /// parse: the date/time text to read.
    pub(super) text: Option<String>,
    /// add/subtract: ISO 8601 (`P1DT2H`, `PT90M`) or friendly (`1d 2h 30m`, `90s`, `2 weeks`, `1 month`).
    pub(super) duration: Option<String>,
    /// diff: the earlier instant (any accepted instant form).
    pub(super) start: Option<String>,
    /// diff: the later instant; a negative result means `end` is before `start`.
    pub(super) end: Option<String>,
    /// diff: the largest unit of the human span.
    #[serde(default)]
    pub(super) unit: DiffUnit,
    /// convert: the target zone, e.g. `Europe/London`, `Asia/Kolkata`, `UTC`.
    pub(super) to: Option<String>,
    /// convert: the zone of an `instant` written without an offset; ignored when `instant` has an offset.
    #[schemars(default = "utc")]
    pub(super) from: Option<String>,
    /// How to read a civil time that a DST change skips (gap) or repeats (fold): `compatible` (gap: shift forward, fold: earlier), `earlier`, `later`, or `reject` with an error.
    #[serde(default)]
    pub(super) disambiguation: Disambiguation,
}

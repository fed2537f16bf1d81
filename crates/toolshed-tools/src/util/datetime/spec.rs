//! The `datetime` tool as data.

use serde_json::json;
use toolshed_core::{ToolAnnotations, ToolSpec};

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
        .input_schema(json!({
            "type": "object",
            "properties": {
                "operation": {
                    "type": "string",
                    "enum": ["now", "format", "parse", "add", "subtract", "diff", "convert"],
                    "description": "What to do; see the tool description for the fields each operation reads."
                },
                "timezone": {
                    "type": "string",
                    "description": "IANA zone (`Europe/London`), `UTC` or a fixed offset (`+05:30`). now/format/add/subtract/diff: the zone to show results and do calendar arithmetic in. parse and civil instants: the zone a time without an offset is read in. Default: UTC, or the instant's own zone when it carries one."
                },
                "instant": {
                    "type": "string",
                    "description": "format/add/subtract/convert: the point in time, e.g. `2026-03-29T01:30:00Z`, `2026-03-29T14:30`, `1774747800` or `now`."
                },
                "unix": {
                    "type": "number",
                    "description": "format: unix time in seconds (fractions allowed), instead of `instant`."
                },
                "format": {
                    "type": "string",
                    "description": "format: strftime pattern for the output, e.g. `%Y-%m-%d %H:%M %Z`. parse: strptime pattern the text follows, e.g. `%d/%m/%Y %H:%M`; omit to auto-detect."
                },
                "text": {
                    "type": "string",
                    "description": "parse: the date/time text to read."
                },
                "duration": {
                    "type": "string",
                    "description": "add/subtract: ISO 8601 (`P1DT2H`, `PT90M`) or friendly (`1d 2h 30m`, `90s`, `2 weeks`, `1 month`)."
                },
                "start": {
                    "type": "string",
                    "description": "diff: the earlier instant (any accepted instant form)."
                },
                "end": {
                    "type": "string",
                    "description": "diff: the later instant; a negative result means `end` is before `start`."
                },
                "unit": {
                    "type": "string",
                    "enum": ["years", "months", "weeks", "days", "hours", "minutes", "seconds"],
                    "description": "diff: the largest unit of the human span (default `days`)."
                },
                "to": {
                    "type": "string",
                    "description": "convert: the target zone, e.g. `Europe/London`, `Asia/Kolkata`, `UTC`."
                },
                "from": {
                    "type": "string",
                    "description": "convert: the zone of an `instant` written without an offset (default UTC); ignored when `instant` has an offset."
                },
                "disambiguation": {
                    "type": "string",
                    "enum": ["compatible", "earlier", "later", "reject"],
                    "description": "How to read a civil time that a DST change skips (gap) or repeats (fold): `compatible` (default; gap: shift forward, fold: earlier), `earlier`, `later`, or `reject` with an error."
                }
            },
            "required": ["operation"],
            "additionalProperties": false
        }))
}

//! Writing results: RFC 3339 strings, offsets and the facts about a zone at an instant.

use jiff::ZonedDateTime;
use jiff::civil::Weekday;
use jiff::tz::Offset;
use serde_json::{Map, Value, json};

use super::input::{Adjustment, zone_label};

/// RFC 3339 with the zone's offset, e.g. `2026-03-29T02:30:00+01:00` (never `Z`, so the
/// offset is always visible).
pub(super) fn rfc3339(zdt: &ZonedDateTime) -> String {
    zdt.timestamp()
        .display_with_offset(zdt.offset())
        .to_string()
}

/// RFC 3339 in UTC, e.g. `2026-03-29T01:30:00Z`.
pub(super) fn rfc3339_utc(zdt: &ZonedDateTime) -> String {
    zdt.timestamp().to_string()
}

/// An offset as `+HH:MM` (with `:SS` when it has seconds).
pub(super) fn offset_string(offset: Offset) -> String {
    let total = offset.seconds();
    let sign = if total < 0 { '-' } else { '+' };
    let abs = total.unsigned_abs();
    let (h, m, s) = (abs / 3600, abs / 60 % 60, abs % 60);
    if s == 0 {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}:{m:02}:{s:02}")
    }
}

/// The weekday's English name.
pub(super) fn weekday_name(weekday: Weekday) -> &'static str {
    match weekday {
        Weekday::Monday => "Monday",
        Weekday::Tuesday => "Tuesday",
        Weekday::Wednesday => "Wednesday",
        Weekday::Thursday => "Thursday",
        Weekday::Friday => "Friday",
        Weekday::Saturday => "Saturday",
        Weekday::Sunday => "Sunday",
    }
}

/// The facts every result shares: the instant with its offset, in UTC and as unix seconds,
/// and the zone's name, offset, abbreviation and DST state at that instant.
pub(super) fn instant_facts(zdt: &ZonedDateTime) -> Map<String, Value> {
    let info = zdt.time_zone().to_offset_info(zdt.timestamp());
    let abbreviation = info.abbreviation();
    // A fixed-offset zone's "abbreviation" is just its offset again; leave it out.
    let abbreviation = if abbreviation.is_empty()
        || abbreviation.starts_with(['+', '-'])
        || zdt.time_zone().iana_name().is_none()
    {
        Value::Null
    } else {
        Value::String(abbreviation.to_string())
    };
    let mut out = Map::new();
    out.insert("instant".into(), json!(rfc3339(zdt)));
    out.insert("utc".into(), json!(rfc3339_utc(zdt)));
    out.insert("unix".into(), json!(zdt.timestamp().as_second()));
    out.insert("timezone".into(), json!(zone_label(zdt.time_zone())));
    out.insert("offset".into(), json!(offset_string(zdt.offset())));
    out.insert("abbreviation".into(), abbreviation);
    out.insert("dst".into(), json!(info.dst().is_dst()));
    out.insert("weekday".into(), json!(weekday_name(zdt.weekday())));
    out
}

/// Adds the gap/fold note, if any, to a result and returns the line to append to the text.
pub(super) fn add_adjustment(
    out: &mut Map<String, Value>,
    adjustment: Option<&Adjustment>,
) -> Option<String> {
    let adjustment = adjustment?;
    out.insert(
        "adjusted".into(),
        json!({
            "kind": adjustment.kind,
            "rule": adjustment.rule,
            "note": adjustment.note,
        }),
    );
    Some(format!("note: {}", adjustment.note))
}

/// A one-line description: `2026-03-29T02:30:00+01:00 Europe/London (BST, DST)`.
pub(super) fn one_line(zdt: &ZonedDateTime) -> String {
    let facts = instant_facts(zdt);
    let mut line = rfc3339(zdt);
    // A fixed-offset zone's label is the offset already printed in the instant.
    if let Some(name) = zdt.time_zone().iana_name() {
        line.push(' ');
        line.push_str(name);
    }
    let abbreviation = facts
        .get("abbreviation")
        .and_then(Value::as_str)
        .filter(|a| Some(*a) != zdt.time_zone().iana_name());
    let dst = facts.get("dst").and_then(Value::as_bool).unwrap_or(false);
    match (abbreviation, dst) {
        (Some(a), true) => line.push_str(&format!(" ({a}, DST)")),
        (Some(a), false) => line.push_str(&format!(" ({a})")),
        (None, true) => line.push_str(" (DST)"),
        (None, false) => {}
    }
    line
}

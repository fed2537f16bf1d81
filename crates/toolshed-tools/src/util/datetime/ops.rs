//! The operations of the `datetime` tool.

use jiff::fmt::{friendly, strtime, temporal};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp, Unit};
use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};

use super::input::{
    MAX_FORMAT_CHARS, read_duration, read_instant, read_with_format, read_zone, shorten, zone_label,
};
use super::report::{add_adjustment, instant_facts, one_line, rfc3339, weekday_name};
use super::{Args, DiffUnit, Operation};
use crate::util::required;

/// The zone named by `timezone`, if given.
fn optional_zone(args: &Args) -> Result<Option<TimeZone>, ToolError> {
    args.timezone
        .as_deref()
        .map(|name| read_zone(name, "timezone"))
        .transpose()
}

/// Joins the main line of a result with an optional note line.
fn with_note(line: String, note: Option<String>) -> String {
    match note {
        Some(note) => format!("{line}\n{note}"),
        None => line,
    }
}

pub(super) fn now(args: &Args) -> Result<ToolOutput, ToolError> {
    let zone = optional_zone(args)?.unwrap_or(TimeZone::UTC);
    let now = Timestamp::now();
    // Whole seconds read better; the milliseconds are in `unix_ms`.
    let whole = Timestamp::from_second(now.as_second())
        .map_err(|e| ToolError::failed(format!("the system clock is out of range: {e}")))?;
    let zdt = whole.to_zoned_datetime(zone);
    let mut out = instant_facts(&zdt);
    out.insert("unix_ms".into(), json!(now.as_millisecond()));
    out.insert("date".into(), json!(zdt.date().to_string()));
    out.insert("time".into(), json!(zdt.time().to_string()));
    let text = format!("{}, {}", one_line(&zdt), weekday_name(zdt.weekday()));
    Ok(ToolOutput::text_and_structured(text, Value::Object(out)))
}

pub(super) fn format(args: &Args) -> Result<ToolOutput, ToolError> {
    let pattern = required(args.format.as_deref(), "format", "format")?;
    if pattern.chars().count() > MAX_FORMAT_CHARS {
        return Err(ToolError::invalid_at(
            "/format",
            format!(
                "`format` is {} characters long; the limit is {MAX_FORMAT_CHARS}",
                pattern.chars().count()
            ),
        ));
    }
    let zone = optional_zone(args)?;
    let civil_zone = zone.clone().unwrap_or(TimeZone::UTC);
    let rule = args.disambiguation;
    let (zdt, adjustment) = match (&args.instant, &args.unix) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid(
                "operation `format` takes either `instant` or `unix`, not both; drop one",
            ));
        }
        (None, None) => {
            return Err(ToolError::invalid_at(
                "/instant",
                "operation `format` needs `instant` (e.g. `2026-03-29T01:30:00Z`) or `unix` (seconds); add one",
            ));
        }
        (Some(instant), None) => {
            let read = read_instant(instant, "instant", &civil_zone, rule)?;
            (read.zdt, read.adjustment)
        }
        (None, Some(unix)) => (unix_seconds(unix)?.to_zoned_datetime(civil_zone), None),
    };
    let zdt = match zone {
        Some(zone) => zdt.with_time_zone(zone),
        None => zdt,
    };
    let formatted = strtime::format(pattern, &zdt).map_err(|e| {
        ToolError::invalid_at(
            "/format",
            format!(
                "cannot format with `format` `{}` ({e}); use strftime specifiers such as `%Y-%m-%d %H:%M:%S %Z`, `%A`, `%B`, `%:z`",
                shorten(pattern)
            ),
        )
    })?;
    let mut out = instant_facts(&zdt);
    out.insert("formatted".into(), json!(formatted));
    let note = add_adjustment(&mut out, adjustment.as_ref());
    Ok(ToolOutput::text_and_structured(
        with_note(formatted, note),
        Value::Object(out),
    ))
}

/// A JSON number of unix seconds, fractions allowed, as a timestamp.
fn unix_seconds(unix: &serde_json::Number) -> Result<Timestamp, ToolError> {
    let out_of_range = |e: String| {
        ToolError::invalid_at(
            "/unix",
            format!(
                "`unix` {unix} is not a usable unix time in seconds ({e}); give seconds since 1970-01-01T00:00:00Z between {} and {}",
                Timestamp::MIN.as_second(),
                Timestamp::MAX.as_second()
            ),
        )
    };
    if let Some(seconds) = unix.as_i64() {
        return Timestamp::from_second(seconds).map_err(|e| out_of_range(e.to_string()));
    }
    let seconds = unix
        .as_f64()
        .ok_or_else(|| out_of_range("not a number".into()))?;
    let duration =
        SignedDuration::try_from_secs_f64(seconds).map_err(|e| out_of_range(e.to_string()))?;
    Timestamp::from_duration(duration).map_err(|e| out_of_range(e.to_string()))
}

pub(super) fn parse(args: &Args) -> Result<ToolOutput, ToolError> {
    let text = required(args.text.as_deref(), "text", "parse")?;
    let civil_zone = optional_zone(args)?.unwrap_or(TimeZone::UTC);
    let rule = args.disambiguation;
    let read = match args.format.as_deref() {
        Some(pattern) => read_with_format(text, pattern, &civil_zone, rule)?,
        None => read_instant(text, "text", &civil_zone, rule)?,
    };
    let mut out = instant_facts(&read.zdt);
    out.insert(
        "unix_ms".into(),
        json!(read.zdt.timestamp().as_millisecond()),
    );
    out.insert("form".into(), json!(read.form));
    out.insert("had_offset".into(), json!(read.has_zone));
    let how = if read.has_zone {
        format!(
            "read as {} with offset {}",
            read.form,
            super::report::offset_string(read.zdt.offset())
        )
    } else {
        out.insert("read_in".into(), json!(zone_label(&civil_zone)));
        format!("read as {} in {}", read.form, zone_label(&civil_zone))
    };
    let line = format!(
        "{} (unix {}; {how})",
        read.zdt.timestamp(),
        read.zdt.timestamp().as_second()
    );
    let note = add_adjustment(&mut out, read.adjustment.as_ref());
    Ok(ToolOutput::text_and_structured(
        with_note(line, note),
        Value::Object(out),
    ))
}

/// `add` and `subtract`.
pub(super) fn shift(args: &Args) -> Result<ToolOutput, ToolError> {
    let op = args.operation.name();
    let instant = required(args.instant.as_deref(), "instant", op)?;
    let duration = required(args.duration.as_deref(), "duration", op)?;
    let zone = optional_zone(args)?;
    let civil_zone = zone.clone().unwrap_or(TimeZone::UTC);
    let read = read_instant(instant, "instant", &civil_zone, args.disambiguation)?;
    let span = read_duration(duration)?;
    let start = match zone {
        Some(zone) => read.zdt.with_time_zone(zone),
        None => read.zdt.clone(),
    };
    let result = match args.operation {
        Operation::Subtract => start.checked_sub(span),
        _ => start.checked_add(span),
    }
    .map_err(|e| {
        ToolError::invalid_at(
            "/duration",
            format!(
                "cannot {op} `{}` to/from {} ({e}); use a smaller duration",
                shorten(duration),
                rfc3339(&start)
            ),
        )
    })?;
    let mut out = instant_facts(&result);
    out.insert("start".into(), json!(rfc3339(&start)));
    out.insert("duration".into(), json!(iso_span(&span)));
    let note = add_adjustment(&mut out, read.adjustment.as_ref());
    Ok(ToolOutput::text_and_structured(
        with_note(one_line(&result), note),
        Value::Object(out),
    ))
}

fn iso_span(span: &Span) -> String {
    temporal::SpanPrinter::new().span_to_string(span)
}

fn friendly_span(span: &Span) -> String {
    friendly::SpanPrinter::new()
        .direction(friendly::Direction::Sign)
        .span_to_string(span)
}

pub(super) fn diff(args: &Args) -> Result<ToolOutput, ToolError> {
    let start = required(args.start.as_deref(), "start", "diff")?;
    let end = required(args.end.as_deref(), "end", "diff")?;
    let zone = optional_zone(args)?;
    let civil_zone = zone.clone().unwrap_or(TimeZone::UTC);
    let rule = args.disambiguation;
    let start = read_instant(start, "start", &civil_zone, rule)?;
    let end = read_instant(end, "end", &civil_zone, rule)?;
    // Calendar units need one zone for both ends: `timezone`, else the start's own zone.
    let zone = zone.unwrap_or_else(|| start.zdt.time_zone().clone());
    let start_z = start.zdt.with_time_zone(zone.clone());
    let end_z = end.zdt.with_time_zone(zone.clone());
    let unit = args.unit;
    let (largest, unit_name) = match unit {
        DiffUnit::Years => (Unit::Year, "years"),
        DiffUnit::Months => (Unit::Month, "months"),
        DiffUnit::Weeks => (Unit::Week, "weeks"),
        DiffUnit::Days => (Unit::Day, "days"),
        DiffUnit::Hours => (Unit::Hour, "hours"),
        DiffUnit::Minutes => (Unit::Minute, "minutes"),
        DiffUnit::Seconds => (Unit::Second, "seconds"),
    };
    let span = start_z.until((largest, &end_z)).map_err(|e| {
        ToolError::invalid_at(
            "/unit",
            format!(
                "cannot express the difference in {unit_name} ({e}); try a smaller `unit` such as `hours`"
            ),
        )
    })?;
    let exact = end_z.duration_since(&start_z);
    let seconds = if exact.subsec_nanos() == 0 {
        json!(exact.as_secs())
    } else {
        json!(exact.as_secs_f64())
    };
    let human = friendly_span(&span);
    let mut out = serde_json::Map::new();
    out.insert("seconds".into(), seconds.clone());
    out.insert("span".into(), json!(human));
    out.insert("iso".into(), json!(iso_span(&span)));
    out.insert("unit".into(), json!(unit_name));
    out.insert("start".into(), json!(rfc3339(&start_z)));
    out.insert("end".into(), json!(rfc3339(&end_z)));
    out.insert("timezone".into(), json!(zone_label(&zone)));
    let mut notes = Vec::new();
    for (which, adjustment) in [("start", &start.adjustment), ("end", &end.adjustment)] {
        if let Some(a) = adjustment {
            notes.push(format!("note ({which}): {}", a.note));
            out.insert(
                format!("{which}_adjusted"),
                json!({"kind": a.kind, "rule": a.rule, "note": a.note}),
            );
        }
    }
    let mut text = format!("{human} ({seconds} s)");
    for note in notes {
        text.push('\n');
        text.push_str(&note);
    }
    Ok(ToolOutput::text_and_structured(text, Value::Object(out)))
}

pub(super) fn convert(args: &Args) -> Result<ToolOutput, ToolError> {
    let instant = required(args.instant.as_deref(), "instant", "convert")?;
    let to = required(args.to.as_deref(), "to", "convert")?;
    let target = read_zone(to, "to")?;
    let from = args
        .from
        .as_deref()
        .map(|name| read_zone(name, "from"))
        .transpose()?;
    let civil_zone = from.clone().unwrap_or(TimeZone::UTC);
    let read = read_instant(instant, "instant", &civil_zone, args.disambiguation)?;
    let result = read.zdt.with_time_zone(target);
    let mut out = instant_facts(&result);
    out.insert("source".into(), json!(rfc3339(&read.zdt)));
    let mut text = one_line(&result);
    if let Some(note) = add_adjustment(&mut out, read.adjustment.as_ref()) {
        text.push('\n');
        text.push_str(&note);
    }
    if read.has_zone && from.is_some() {
        let note = "`from` was ignored because `instant` carries its own offset or zone";
        out.insert("from_ignored".into(), json!(true));
        text.push_str(&format!("\nnote: {note}"));
    }
    Ok(ToolOutput::text_and_structured(text, Value::Object(out)))
}

//! Reading the tool's inputs: time zones, instants and durations.
//!
//! Every reader takes the name of the field it reads so its errors can point at it, and
//! every error lists the forms that are accepted, because the caller is usually a model that
//! guessed a format.

use jiff::civil::{DateTime, Time};
use jiff::fmt::temporal::{Pieces, PiecesOffset};
use jiff::fmt::{rfc2822, strtime};
use jiff::tz::{self, AmbiguousOffset, Offset, TimeZone};
use jiff::{Span, Timestamp, ZonedDateTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_core::ToolError;

use super::report::offset_string;

/// Longest instant, zone or duration text accepted.
pub(super) const MAX_VALUE_CHARS: usize = 256;
/// Longest strftime/strptime pattern accepted.
pub(super) const MAX_FORMAT_CHARS: usize = 1_000;

const INSTANT_FORMS: &str = "RFC 3339 (`2026-03-29T01:30:00Z`, `2026-03-29T02:30:00+01:00`), \
     RFC 9557 with a zone (`2026-03-29T14:30[Europe/London]`), a civil date or date-time \
     (`2026-03-29`, `2026-03-29T14:30`, `2026-03-29T14:30:00`, read in `timezone`, default UTC), \
     RFC 2822 (`Sun, 29 Mar 2026 01:30:00 +0000`), unix seconds as digits (`1774747800`) or `now`";

const ZONE_FORMS: &str = "use an IANA time zone name in Area/City form, e.g. `Europe/London` or \
     `America/New_York`, or `UTC`, or a fixed offset like `+05:30`";

/// How to read a civil time that a time zone transition skips or repeats.
///
/// The variants carry plain comments, not doc comments: a documented variant would turn the
/// generated schema's `enum` into a `oneOf`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Disambiguation {
    // Gap: shift forward by the gap's length; fold: the earlier of the two.
    #[default]
    Compatible,
    // The earlier of the two possible instants.
    Earlier,
    // The later of the two possible instants.
    Later,
    // Refuse the ambiguous time with an error.
    Reject,
}

impl Disambiguation {
    fn name(self) -> &'static str {
        match self {
            Self::Compatible => "compatible",
            Self::Earlier => "earlier",
            Self::Later => "later",
            Self::Reject => "reject",
        }
    }
}

/// A civil time that fell in a gap or fold, and what was done about it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Adjustment {
    /// `gap` or `fold`.
    pub kind: &'static str,
    /// The rule applied.
    pub rule: &'static str,
    /// One sentence saying what happened.
    pub note: String,
}

/// An instant as read from the input, in the zone it carried.
#[derive(Debug, Clone)]
pub(super) struct ReadInstant {
    /// The instant, in its own zone: the zone named in the input, else its offset, else the
    /// zone civil times are read in.
    pub zdt: ZonedDateTime,
    /// Which form the input had: `rfc3339`, `rfc9557`, `civil`, `date`, `rfc2822`, `unix`,
    /// `strptime` or `now`.
    pub form: &'static str,
    /// Whether the input carried its own offset or zone (civil times and unix seconds don't).
    pub has_zone: bool,
    /// Set when a civil time fell in a DST gap or fold.
    pub adjustment: Option<Adjustment>,
}

/// `value`, cut to a length fit for an error message.
pub(super) fn shorten(value: &str) -> String {
    const KEEP: usize = 60;
    if value.chars().count() <= KEEP {
        return value.to_string();
    }
    let head: String = value.chars().take(KEEP).collect();
    format!("{head}…")
}

fn check_len(value: &str, field: &str, max: usize) -> Result<(), ToolError> {
    let chars = value.chars().count();
    if chars > max {
        return Err(ToolError::invalid_at(
            format!("/{field}"),
            format!(
                "`{field}` is {chars} characters long (`{}`); the limit is {max}",
                shorten(value)
            ),
        ));
    }
    Ok(())
}

/// Reads a time zone: an IANA name, `UTC`/`Z`, or a fixed offset `±HH[:MM[:SS]]`.
pub(super) fn read_zone(name: &str, field: &str) -> Result<TimeZone, ToolError> {
    check_len(name, field, MAX_VALUE_CHARS)?;
    let trimmed = name.trim();
    if trimmed.eq_ignore_ascii_case("utc") || trimmed.eq_ignore_ascii_case("z") {
        return Ok(TimeZone::UTC);
    }
    if trimmed.starts_with(['+', '-']) {
        return read_fixed_offset(trimmed).map(TimeZone::fixed).ok_or_else(|| {
            ToolError::invalid_at(
                format!("/{field}"),
                format!(
                    "`{field}` `{}` is not a valid fixed offset; write it as `+05:30` or `-08:00` (at most ±25:59), or {ZONE_FORMS}",
                    shorten(trimmed)
                ),
            )
        });
    }
    tz::db()
        .get(trimmed)
        .map_err(|_| unknown_zone(trimmed, field))
}

fn unknown_zone(name: &str, field: &str) -> ToolError {
    let hint = match suggest_zone(name) {
        Some(s) => format!(" (did you mean `{s}`?)"),
        None => String::new(),
    };
    ToolError::invalid_at(
        format!("/{field}"),
        format!(
            "unknown time zone `{}` in `{field}`{hint}; {ZONE_FORMS}",
            shorten(name)
        ),
    )
}

/// Parses `±HH`, `±HHMM`, `±HH:MM` or `±HH:MM:SS`.
fn read_fixed_offset(text: &str) -> Option<Offset> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| -> Option<i32> { digits.get(range)?.parse().ok() };
    let (hours, minutes, seconds) = match digits.len() {
        2 => (field(0..2)?, 0, 0),
        4 => (field(0..2)?, field(2..4)?, 0),
        6 => (field(0..2)?, field(2..4)?, field(4..6)?),
        _ => return None,
    };
    if hours > 25 || minutes > 59 || seconds > 59 {
        return None;
    }
    Offset::from_seconds(sign * (hours * 3600 + minutes * 60 + seconds)).ok()
}

/// The closest IANA name to a misspelt one: same city with another area, or a small edit.
fn suggest_zone(name: &str) -> Option<String> {
    let wanted = name.to_ascii_lowercase().replace(' ', "_");
    let wanted_city = wanted.rsplit('/').next().unwrap_or(&wanted).to_string();
    let mut best: Option<(usize, String)> = None;
    for candidate in tz::db().available() {
        let candidate = candidate.as_str();
        let lower = candidate.to_ascii_lowercase();
        let city = lower.rsplit('/').next().unwrap_or(&lower);
        let distance = toolshed_core::suggest::edit_distance(&lower, &wanted)
            .min(toolshed_core::suggest::edit_distance(city, &wanted_city));
        // Allow about one typo per three letters, so `Tokio` finds `Asia/Tokyo` but short
        // names don't match everything.
        let allowed = (wanted_city.chars().count() / 3).min(2);
        if distance <= allowed && best.as_ref().is_none_or(|(d, _)| distance < *d) {
            best = Some((distance, candidate.to_string()));
        }
    }
    best.map(|(_, name)| name)
}

/// Reads an instant in any accepted form. A civil time (no offset, no zone) and unix
/// seconds are placed in `civil_zone`.
pub(super) fn read_instant(
    value: &str,
    field: &str,
    civil_zone: &TimeZone,
    rule: Disambiguation,
) -> Result<ReadInstant, ToolError> {
    check_len(value, field, MAX_VALUE_CHARS)?;
    let text = value.trim();
    let bad = |detail: String| {
        ToolError::invalid_at(
            format!("/{field}"),
            format!(
                "cannot read `{field}` `{}` as a date/time{detail}; accepted: {INSTANT_FORMS}",
                shorten(value)
            ),
        )
    };

    if text.eq_ignore_ascii_case("now") {
        // Whole seconds: nanoseconds of "now" only clutter differences and sums.
        let now = Timestamp::from_second(Timestamp::now().as_second())
            .map_err(|e| ToolError::failed(format!("the system clock is out of range: {e}")))?;
        return Ok(ReadInstant {
            zdt: now.to_zoned_datetime(civil_zone.clone()),
            form: "now",
            has_zone: false,
            adjustment: None,
        });
    }
    if let Some(seconds) = unix_digits(text) {
        let ts = Timestamp::from_second(seconds)
            .map_err(|e| bad(format!(" (unix seconds out of range: {e})")))?;
        return Ok(ReadInstant {
            zdt: ts.to_zoned_datetime(civil_zone.clone()),
            form: "unix",
            has_zone: false,
            adjustment: None,
        });
    }
    let pieces_error = match Pieces::parse(text) {
        Ok(pieces) => return from_pieces(text, &pieces, field, civil_zone, rule),
        Err(e) => e,
    };
    if let Ok(zdt) = rfc2822::parse(text) {
        return Ok(ReadInstant {
            zdt,
            form: "rfc2822",
            has_zone: true,
            adjustment: None,
        });
    }
    // jiff's own message helps when the text was meant as ISO 8601 (a bad day, say).
    let looks_iso = text.len() >= 7
        && text.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && text.as_bytes()[4] == b'-';
    let detail = if looks_iso {
        format!(" ({pieces_error})")
    } else {
        String::new()
    };
    Err(bad(detail))
}

/// Unix seconds written as optionally signed digits.
fn unix_digits(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn from_pieces(
    text: &str,
    pieces: &Pieces<'_>,
    field: &str,
    civil_zone: &TimeZone,
    rule: Disambiguation,
) -> Result<ReadInstant, ToolError> {
    let invalid = |detail: String| {
        ToolError::invalid_at(
            format!("/{field}"),
            format!("`{field}` `{}` {detail}", shorten(text)),
        )
    };
    let time = pieces.time().unwrap_or_else(Time::midnight);
    let dt = pieces.date().to_datetime(time);
    if let Some(annotation) = pieces.time_zone_annotation() {
        let zone = annotation.to_time_zone().map_err(|_| {
            let name = text
                .split_once('[')
                .map(|(_, rest)| rest.trim_end_matches(']').trim_start_matches('!'))
                .unwrap_or(text);
            unknown_zone(name, field)
        })?;
        if pieces.offset().is_some() {
            // jiff checks that the offset agrees with the zone.
            let zdt: ZonedDateTime = text.parse().map_err(|e| {
                invalid(format!(
                    "has an offset that does not match its zone ({e}); drop the offset or the zone"
                ))
            })?;
            return Ok(ReadInstant {
                zdt,
                form: "rfc9557",
                has_zone: true,
                adjustment: None,
            });
        }
        let (zdt, adjustment) = resolve_civil(dt, &zone, rule, field)?;
        return Ok(ReadInstant {
            zdt,
            form: "rfc9557",
            has_zone: true,
            adjustment,
        });
    }
    if let Some(offset) = pieces.offset() {
        let zone = match offset {
            PiecesOffset::Zulu => TimeZone::UTC,
            other => TimeZone::fixed(other.to_numeric_offset()),
        };
        let ts = offset
            .to_numeric_offset()
            .to_timestamp(dt)
            .map_err(|e| invalid(format!("is out of the supported range ({e})")))?;
        return Ok(ReadInstant {
            zdt: ts.to_zoned_datetime(zone),
            form: "rfc3339",
            has_zone: true,
            adjustment: None,
        });
    }
    let (zdt, adjustment) = resolve_civil(dt, civil_zone, rule, field)?;
    Ok(ReadInstant {
        zdt,
        form: if pieces.time().is_some() {
            "civil"
        } else {
            "date"
        },
        has_zone: false,
        adjustment,
    })
}

/// Places a civil datetime in `zone`, resolving DST gaps and folds by `rule`.
pub(super) fn resolve_civil(
    dt: DateTime,
    zone: &TimeZone,
    rule: Disambiguation,
    field: &str,
) -> Result<(ZonedDateTime, Option<Adjustment>), ToolError> {
    let ambiguous = zone.to_ambiguous_zoned_datetime(dt);
    let zone_name = zone_label(zone);
    let (kind, before, after) = match ambiguous.offset() {
        AmbiguousOffset::Gap { before, after } => ("gap", before, after),
        AmbiguousOffset::Fold { before, after } => ("fold", before, after),
        AmbiguousOffset::Unambiguous { .. } => {
            let zdt = ambiguous.compatible().map_err(|e| {
                ToolError::invalid_at(
                    format!("/{field}"),
                    format!("`{field}` `{dt}` is out of the supported range in {zone_name} ({e})"),
                )
            })?;
            return Ok((zdt, None));
        }
    };
    let (what, choice) = if kind == "gap" {
        (
            format!(
                "{dt} does not exist in {zone_name}: clocks jump from {} to {} there",
                offset_string(before),
                offset_string(after)
            ),
            "`compatible` or `later` (shift forward by the gap) or `earlier` (shift back)",
        )
    } else {
        (
            format!(
                "{dt} happens twice in {zone_name}: first at {}, then at {}",
                offset_string(before),
                offset_string(after)
            ),
            "`compatible` or `earlier` (the first) or `later` (the second)",
        )
    };
    let resolved = match rule {
        Disambiguation::Compatible => ambiguous.compatible(),
        Disambiguation::Earlier => ambiguous.earlier(),
        Disambiguation::Later => ambiguous.later(),
        Disambiguation::Reject => {
            return Err(ToolError::invalid_at(
                format!("/{field}"),
                format!("{what}; set `disambiguation` to {choice} to pick one"),
            ));
        }
    };
    let zdt = resolved.map_err(|e| {
        ToolError::invalid_at(
            format!("/{field}"),
            format!("{what}, and resolving it failed ({e})"),
        )
    })?;
    let note = format!(
        "{what}; `{}` chose {}",
        rule.name(),
        super::report::rfc3339(&zdt)
    );
    Ok((
        zdt,
        Some(Adjustment {
            kind,
            rule: rule.name(),
            note,
        }),
    ))
}

/// Reads `text` with a strptime `format`. Without an offset or zone in the text, the time is
/// civil and is placed in `civil_zone`.
pub(super) fn read_with_format(
    text: &str,
    format: &str,
    civil_zone: &TimeZone,
    rule: Disambiguation,
) -> Result<ReadInstant, ToolError> {
    check_len(text, "text", MAX_VALUE_CHARS)?;
    check_len(format, "format", MAX_FORMAT_CHARS)?;
    let tm = strtime::parse(format, text).map_err(|e| {
        ToolError::invalid_at(
            "/text",
            format!(
                "`text` `{}` does not match `format` `{}` ({e}); fix the pattern (e.g. `%Y-%m-%d %H:%M`) or omit `format` to auto-detect",
                shorten(text),
                shorten(format)
            ),
        )
    })?;
    let has_zone = tm.offset().is_some() || tm.iana_time_zone().is_some();
    if has_zone {
        let zdt = tm.to_zoned_datetime().map_err(|e| {
            ToolError::invalid_at(
                "/text",
                format!(
                    "`text` `{}` parsed with `format` but is not a complete date/time ({e}); the pattern needs at least a year, month and day",
                    shorten(text)
                ),
            )
        })?;
        return Ok(ReadInstant {
            zdt,
            form: "strptime",
            has_zone: true,
            adjustment: None,
        });
    }
    if let Some(ts) = tm.timestamp() {
        return Ok(ReadInstant {
            zdt: ts.to_zoned_datetime(civil_zone.clone()),
            form: "strptime",
            has_zone: false,
            adjustment: None,
        });
    }
    let dt = tm.to_datetime().map_err(|e| {
        ToolError::invalid_at(
            "/text",
            format!(
                "`text` `{}` parsed with `format` `{}` but is not a complete date/time ({e}); the pattern needs at least a year, month and day (e.g. `%Y-%m-%d`)",
                shorten(text),
                shorten(format)
            ),
        )
    })?;
    let (zdt, adjustment) = resolve_civil(dt, civil_zone, rule, "text")?;
    Ok(ReadInstant {
        zdt,
        form: "strptime",
        has_zone: false,
        adjustment,
    })
}

/// Reads a duration in ISO 8601 (`P1DT2H`) or jiff's friendly form (`1d 2h 30m`).
pub(super) fn read_duration(text: &str) -> Result<Span, ToolError> {
    check_len(text, "duration", MAX_VALUE_CHARS)?;
    text.trim().parse::<Span>().map_err(|e| {
        ToolError::invalid_at(
            "/duration",
            format!(
                "cannot read `duration` `{}` ({e}); write ISO 8601 like `P1DT2H30M` or `PT90S`, or friendly like `1d 2h 30m`, `90s`, `2 weeks`, `1 month`",
                shorten(text)
            ),
        )
    })
}

/// The zone's IANA name, or its fixed offset.
pub(super) fn zone_label(zone: &TimeZone) -> String {
    if let Some(name) = zone.iana_name() {
        return name.to_string();
    }
    match zone.to_fixed_offset() {
        Ok(offset) => offset_string(offset),
        Err(_) => "the given zone".to_string(),
    }
}

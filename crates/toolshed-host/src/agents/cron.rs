//! Cron expressions and one-shot times for schedules.
//!
//! A schedule (`schedule_create`) runs a tool call either once, at an instant (`at`), or
//! repeatedly, on a five-field cron expression read in a time zone (`cron` + `tz`). This module
//! parses both and computes when a schedule is next due.
//!
//! Cron follows the Vixie cron dialect: five fields `minute hour day-of-month month
//! day-of-week`, each a list of `*`, `n`, `a-b`, `*/s`, `a-b/s` or `a/s` (`a` to the field's
//! maximum); months and days of the week may be named (`JAN`, `mon`); day-of-week 0 and 7 are
//! both Sunday; the macros `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
//! `@midnight` and `@hourly` stand for their usual expansions. When both day-of-month and
//! day-of-week are restricted (neither starts with `*`), a day matches if *either* does, as
//! in every cron; otherwise both must match.
//!
//! Daylight saving time: due times are civil times in the schedule's zone. A civil time that
//! a transition skips (spring forward: 02:30 on 2026-03-29 in Europe/Berlin) runs at the first
//! instant after the gap (03:00 local); several skipped times of the same gap run once. A
//! civil time that a transition repeats (fall back: 02:30 on 2026-10-25 in Europe/Berlin) runs
//! once, at its first occurrence.
//!
//! Every error names the value at fault and says what to write instead, since the caller is
//! usually a model that can correct itself.

use std::time::Duration;

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Span, Timestamp, ZonedDateTime};

/// Longest cron expression accepted, in characters.
const MAX_EXPRESSION_CHARS: usize = 200;
/// How much of an unreadable `at` or time zone an error repeats, in characters.
const MAX_SHOWN_CHARS: usize = 100;
/// How far ahead `next_after` looks before deciding a schedule never fires again.
const HORIZON_YEARS: i64 = 5;
/// The window `min_interval` samples.
const SAMPLE_WINDOW: SignedDuration = SignedDuration::from_hours(48);
/// The most due times `min_interval` looks at (two days of a schedule firing every minute).
const MAX_SAMPLES: usize = 2 * 24 * 60 + 1;
/// The shortest interval cron can express.
const ONE_MINUTE: Duration = Duration::from_secs(60);

const FIELD_FORMS: &str = "minute hour day-of-month month day-of-week";
const MACROS: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// Why one field of an expression is wrong: the message, naming the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct FieldError(String);

impl From<String> for FieldError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

/// Why a schedule's time could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CronError {
    /// Both `at` and `cron` were given.
    #[error(
        "give either `at` (one run, e.g. `2026-12-07T09:00:00+01:00`) or `cron` (repeated runs, \
         e.g. `0 9 * * 1-5`), not both"
    )]
    BothGiven,
    /// Neither `at` nor `cron` was given.
    #[error(
        "give one of `at` (one run, e.g. `2026-12-07T09:00:00+01:00`) or `cron` (repeated runs, \
         e.g. `0 9 * * 1-5` with `tz` `Europe/Berlin`)"
    )]
    NoneGiven,
    /// `at` is not a time.
    #[error(
        "`at` `{0}` is not a time; write RFC 3339 with an offset, e.g. \
         `2026-12-07T09:00:00+01:00`, or a civil date and time read in `tz`, e.g. \
         `2026-12-07T09:00`"
    )]
    At(String),
    /// The time zone is not in the time zone database.
    #[error("time zone `{0}` is not known; use an IANA name such as `Europe/Berlin` or `UTC`")]
    TimeZone(String),
    /// The cron expression is empty.
    #[error(
        "cron expression is empty; write 5 fields ({FIELD_FORMS}), e.g. `0 9 * * 1-5` for \
         09:00 on weekdays, or a macro such as `@daily`"
    )]
    Empty,
    /// The cron expression is longer than [`MAX_EXPRESSION_CHARS`].
    #[error(
        "cron expression is {0} characters long; the limit is {MAX_EXPRESSION_CHARS}: write 5 \
         fields ({FIELD_FORMS}), e.g. `0 9 * * 1-5`, and use ranges (`1-5`) or steps (`*/15`) \
         instead of long lists"
    )]
    TooLong(usize),
    /// The expression has seconds (6 fields) or seconds and years (7 fields).
    #[error(
        "cron `{0}` has {1} fields; schedules use 5 ({FIELD_FORMS}) and fire at most once a \
         minute, e.g. `*/5 * * * *`"
    )]
    Seconds(String, usize),
    /// The expression has a number of fields other than 5, 6 or 7.
    #[error(
        "cron `{0}` has {1} field{s}; write 5 ({FIELD_FORMS}), e.g. `0 9 * * 1-5` for 09:00 on \
         weekdays, or a macro such as `@daily`",
        s = if *.1 == 1 { "" } else { "s" }
    )]
    FieldCount(String, usize),
    /// `@something` that is not one of the macros.
    #[error(
        "cron `{0}` is not a known macro; use one of `@yearly`, `@annually`, `@monthly`, \
         `@weekly`, `@daily`, `@midnight`, `@hourly`, or 5 fields ({FIELD_FORMS}) such as \
         `0 9 * * 1-5`"
    )]
    Macro(String),
    /// One field of the expression is wrong; the message says which and how.
    #[error("cron `{expression}`: {message}")]
    Field {
        /// The whole expression.
        expression: String,
        /// What is wrong and what to write instead.
        message: String,
    },
}

/// When a schedule is due.
#[derive(Debug, Clone)]
pub(crate) enum When {
    /// Once, at this instant.
    At(Timestamp),
    /// Repeatedly, on a cron expression.
    Cron(Cron),
}

impl When {
    /// Parses what a caller gives: exactly one of `at` (RFC 3339 with an offset, e.g.
    /// `2026-12-07T09:00:00+01:00`, RFC 9557 with a zone, or a civil date and time such as
    /// `2026-12-07T09:00` read in `tz`) or `cron` (read in `tz`). `tz` defaults to `UTC`.
    /// Blank values count as not given.
    pub(crate) fn parse(
        at: Option<&str>,
        cron: Option<&str>,
        tz: Option<&str>,
    ) -> Result<When, CronError> {
        let tz = given(tz).unwrap_or("UTC");
        match (given(at), given(cron)) {
            (Some(_), Some(_)) => Err(CronError::BothGiven),
            (None, None) => Err(CronError::NoneGiven),
            (None, Some(cron)) => Cron::parse(cron, tz).map(When::Cron),
            (Some(at), None) => parse_at(at, tz).map(When::At),
        }
    }

    /// The first due time strictly after `after`, if there is one (within five years, for a
    /// cron).
    pub(crate) fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        match self {
            When::At(at) => (*at > after).then_some(*at),
            When::Cron(cron) => cron.next_after(after),
        }
    }

    /// The shortest gap between two consecutive due times from `from` over the next two days
    /// (and at least one gap, however far apart), to refuse schedules that fire too often.
    /// `None` for a one-shot time, or a cron that fires fewer than twice more.
    pub(crate) fn min_interval(&self, from: Timestamp) -> Option<Duration> {
        let When::Cron(cron) = self else {
            return None;
        };
        let end = from.saturating_add(SAMPLE_WINDOW).ok()?;
        let mut previous = cron.next_after(from)?;
        let mut shortest: Option<Duration> = None;
        for _ in 0..MAX_SAMPLES {
            let Some(next) = cron.next_after(previous) else {
                break;
            };
            let gap = next.duration_since(previous).unsigned_abs();
            shortest = Some(shortest.map_or(gap, |shortest| shortest.min(gap)));
            if gap <= ONE_MINUTE || next > end {
                break;
            }
            previous = next;
        }
        shortest
    }
}

/// `value` trimmed, unless it is blank or absent.
fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

/// Reads `at`: an instant with an offset (or a zone), else a civil time in `tz`.
fn parse_at(at: &str, tz: &str) -> Result<Timestamp, CronError> {
    let (_, zone) = time_zone(tz)?;
    if let Ok(instant) = at.parse::<Timestamp>() {
        return Ok(instant);
    }
    if let Ok(zoned) = at.parse::<ZonedDateTime>() {
        return Ok(zoned.timestamp());
    }
    // A civil time must not carry a zone annotation the civil parser would ignore.
    let civil = match at.parse::<DateTime>() {
        Ok(civil) if !at.contains('[') => civil,
        _ => return Err(CronError::At(shown(at))),
    };
    resolve(&zone, civil).ok_or_else(|| CronError::At(shown(at)))
}

/// Looks a time zone up by name, returning its canonical name and the zone.
fn time_zone(name: &str) -> Result<(String, TimeZone), CronError> {
    let name = name.trim();
    let unknown = || CronError::TimeZone(shown(name));
    // Fixed offsets and POSIX strings are not names; the database would not know them anyway.
    if name.is_empty() || name.len() > MAX_SHOWN_CHARS {
        return Err(unknown());
    }
    let zone = TimeZone::get(name).map_err(|_| unknown())?;
    let canonical = zone.iana_name().unwrap_or(name).to_string();
    Ok((canonical, zone))
}

/// `value`, cut to [`MAX_SHOWN_CHARS`] for an error message.
fn shown(value: &str) -> String {
    match value.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_string(),
    }
}

/// The instant a civil time in `zone` is due at: the time itself when it exists once, the
/// first instant after the gap when a transition skips it, its first occurrence when a
/// transition repeats it.
///
/// Over one day this maps later civil times to the same or later instants, which is what lets
/// [`Cron::next_after`] skip whole days and hours by looking at their last due time.
fn resolve(zone: &TimeZone, civil: DateTime) -> Option<Timestamp> {
    let ambiguous = zone.to_ambiguous_timestamp(civil);
    match ambiguous.offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(civil).ok(),
        AmbiguousOffset::Fold { before, after } => {
            let first = before.to_timestamp(civil).ok()?;
            let second = after.to_timestamp(civil).ok()?;
            Some(first.min(second))
        }
        AmbiguousOffset::Gap { before, after } => {
            // Read with the offset after the gap, the civil time lands before the transition;
            // the next transition from there is the first instant after the gap.
            let early = before.to_timestamp(civil).ok()?;
            let early = early.min(after.to_timestamp(civil).ok()?);
            zone.following(early)
                .next()
                .map(|transition| transition.timestamp())
                .or_else(|| ambiguous.compatible().ok())
        }
    }
}

/// A parsed cron expression with its time zone.
#[derive(Debug, Clone)]
pub(crate) struct Cron {
    /// The expression as given (trimmed).
    text: String,
    /// The time zone's canonical IANA name.
    zone_name: String,
    zone: TimeZone,
    /// Bit `n` set: due at minute `n` (0-59).
    minutes: u64,
    /// Bit `n` set: due at hour `n` (0-23).
    hours: u32,
    /// Bit `n` set: due on day of month `n` (1-31).
    days: u32,
    /// Bit `n` set: due in month `n` (1-12).
    months: u16,
    /// Bit `n` set: due on weekday `n` (0 = Sunday - 6).
    weekdays: u8,
    /// Both day-of-month and day-of-week are restricted: a day matches if either does.
    either_day: bool,
}

impl Cron {
    /// Parses `expr` (5 fields `minute hour day-of-month month day-of-week`, or a macro such
    /// as `@daily`), to be read in the time zone `tz` (an IANA name such as `Europe/Berlin`,
    /// or `UTC`).
    pub(crate) fn parse(expr: &str, tz: &str) -> Result<Cron, CronError> {
        let text = expr.trim();
        let length = text.chars().count();
        if length > MAX_EXPRESSION_CHARS {
            return Err(CronError::TooLong(length));
        }
        if text.is_empty() {
            return Err(CronError::Empty);
        }
        let fields_text = if text.starts_with('@') {
            MACROS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(text))
                .map(|(_, fields)| *fields)
                .ok_or_else(|| CronError::Macro(text.to_string()))?
        } else {
            text
        };
        let fields: Vec<&str> = fields_text.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(match fields.len() {
                6 | 7 => CronError::Seconds(text.to_string(), fields.len()),
                count => CronError::FieldCount(text.to_string(), count),
            });
        };
        let field = |spec: &Spec, value: &str| {
            parse_field(spec, value).map_err(|message| CronError::Field {
                expression: text.to_string(),
                message: message.to_string(),
            })
        };
        let minutes = field(&MINUTE, minute)?;
        let hours = field(&HOUR, hour)?;
        let days = field(&DAY, day)?;
        let months = field(&MONTH, month)?;
        let weekdays = field(&WEEKDAY, weekday)?;
        let (zone_name, zone) = time_zone(tz)?;
        // The bit masks fit their types: each field's values are bounded by its `Spec::max`.
        let weekdays = (weekdays | weekdays >> 7) & 0x7f;
        Ok(Cron {
            text: text.to_string(),
            zone_name,
            zone,
            minutes,
            hours: u32::try_from(hours).unwrap_or(u32::MAX),
            days: u32::try_from(days).unwrap_or(u32::MAX),
            months: u16::try_from(months).unwrap_or(u16::MAX),
            weekdays: u8::try_from(weekdays).unwrap_or(u8::MAX),
            either_day: !day.starts_with('*') && !weekday.starts_with('*'),
        })
    }

    /// The expression as given (trimmed).
    // API for showing a schedule; not every caller is written yet.
    #[allow(dead_code)]
    pub(crate) fn expression(&self) -> &str {
        &self.text
    }

    /// The time zone's canonical IANA name (`UTC`, `Europe/Berlin`).
    // API for showing a schedule; not every caller is written yet.
    #[allow(dead_code)]
    pub(crate) fn time_zone(&self) -> &str {
        &self.zone_name
    }

    /// The first due time strictly after `after`, or `None` if there is none within five
    /// years (`0 0 30 2 *`). See the module documentation for daylight saving time.
    pub(crate) fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start = self.zone.to_datetime(after).date();
        let last = start.saturating_add(Span::new().years(HORIZON_YEARS));
        let mut date = start;
        while date <= last {
            if !has(u64::from(self.months), date.month()) {
                date = first_of_next_month(date)?;
                continue;
            }
            if self.day_matches(date)
                && let Some(due) = self.first_on(date, after)
            {
                return Some(due);
            }
            date = date.tomorrow().ok()?;
        }
        None
    }

    /// Whether `date`'s day of month and day of week match.
    fn day_matches(&self, date: Date) -> bool {
        let day = has(u64::from(self.days), date.day());
        let weekday = has(
            u64::from(self.weekdays),
            date.weekday().to_sunday_zero_offset(),
        );
        if self.either_day {
            day || weekday
        } else {
            day && weekday
        }
    }

    /// The first due time on `date` strictly after `after`.
    fn first_on(&self, date: Date, after: Timestamp) -> Option<Timestamp> {
        let at = |hour: i8, minute: i8| {
            let time = Time::new(hour, minute, 0, 0).ok()?;
            resolve(&self.zone, date.to_datetime(time))
        };
        let last_minute = highest(self.minutes)?;
        let last_hour = highest(u64::from(self.hours))?;
        // Due times of one day map to ascending instants (see `resolve`): a day or hour whose
        // last due time is not after `after` has none that is.
        if at(last_hour, last_minute).is_none_or(|last| last <= after) {
            return None;
        }
        for hour in bits(u64::from(self.hours)) {
            if at(hour, last_minute).is_none_or(|last| last <= after) {
                continue;
            }
            for minute in bits(self.minutes) {
                if let Some(due) = at(hour, minute).filter(|due| *due > after) {
                    return Some(due);
                }
            }
        }
        None
    }
}

/// The first day of the month after `date`'s.
fn first_of_next_month(date: Date) -> Option<Date> {
    let (year, month) = match date.month() {
        12 => (date.year().checked_add(1)?, 1),
        month => (date.year(), month + 1),
    };
    Date::new(year, month, 1).ok()
}

/// Whether bit `n` of `mask` is set.
fn has(mask: u64, n: i8) -> bool {
    u32::try_from(n).is_ok_and(|n| n < 64 && mask & (1 << n) != 0)
}

/// The set bits of `mask`, lowest first.
fn bits(mask: u64) -> impl Iterator<Item = i8> {
    (0..64i8).filter(move |n| has(mask, *n))
}

/// The highest set bit of `mask`.
fn highest(mask: u64) -> Option<i8> {
    (mask != 0).then(|| 63 - mask.leading_zeros() as i8)
}

/// What one cron field accepts.
struct Spec {
    /// The field's name in messages: `minute`, `day-of-week`.
    name: &'static str,
    min: u32,
    max: u32,
    /// Names for values, the first standing for `min` (day-of-week: `SUN` = 0).
    names: &'static [&'static str],
    /// The accepted values, for messages: `0-59`, `1-12 or JAN-DEC`.
    range: &'static str,
    /// The longest useful step of `*/n`, and the period it restarts in.
    max_step: u32,
    period: &'static str,
    /// Examples of a list and of a step, for messages.
    list: &'static str,
    step: &'static str,
}

const MINUTE: Spec = Spec {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
    range: "0-59",
    max_step: 59,
    period: "hour",
    list: "0,15,30,45",
    step: "*/5",
};
const HOUR: Spec = Spec {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
    range: "0-23",
    max_step: 23,
    period: "day",
    list: "9,12,18",
    step: "*/2",
};
const DAY: Spec = Spec {
    name: "day-of-month",
    min: 1,
    max: 31,
    names: &[],
    range: "1-31",
    max_step: 30,
    period: "month",
    list: "1,15",
    step: "*/2",
};
const MONTH: Spec = Spec {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ],
    range: "1-12 (or JAN-DEC)",
    max_step: 11,
    period: "year",
    list: "JAN,JUL",
    step: "*/3",
};
const WEEKDAY: Spec = Spec {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    range: "0-7 (0 and 7 are Sunday; or SUN-SAT)",
    max_step: 6,
    period: "week",
    list: "MON,WED,FRI",
    step: "*/2",
};

/// Parses one field into a bit mask of its values; the error is the message for the model.
fn parse_field(spec: &Spec, text: &str) -> Result<u64, FieldError> {
    let (name, list) = (spec.name, spec.list);
    let mut mask = 0u64;
    for item in text.split(',') {
        if item.is_empty() {
            return Err(format!(
                "{name} list `{text}` has an empty item; separate values with single commas, \
                 e.g. `{list}`"
            )
            .into());
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (item, None),
        };
        let step = match step {
            None => 1,
            Some(step) => parse_step(spec, item, range, step)?,
        };
        let (low, high) = if range == "*" {
            (spec.min, spec.max)
        } else if let Some((low, high)) = range.split_once('-') {
            let (low, high) = (value(spec, item, low)?, value(spec, item, high)?);
            if low > high {
                return Err(format!(
                    "{name} range `{range}` goes backwards; write the lower bound first, e.g. \
                     `{high}-{low}`, or for a range that wraps around use a list such as \
                     `{low}-{},{}-{high}`",
                    spec.max, spec.min
                )
                .into());
            }
            (low, high)
        } else {
            let single = value(spec, item, range)?;
            // `a/n` is `a-max/n`, as in Vixie cron.
            (single, if item.contains('/') { spec.max } else { single })
        };
        let step = usize::try_from(step).unwrap_or(usize::MAX);
        for n in (low..=high.min(63)).step_by(step) {
            mask |= 1 << n;
        }
    }
    Ok(mask)
}

/// Parses the step `step` of `item` (whose range part is `range`).
fn parse_step(spec: &Spec, item: &str, range: &str, step: &str) -> Result<u32, FieldError> {
    let (name, example) = (spec.name, spec.step);
    let step = if step.bytes().all(|byte| byte.is_ascii_digit()) && !step.is_empty() {
        step.parse::<u32>().unwrap_or(u32::MAX)
    } else {
        return Err(format!(
            "{name} step in `{item}` is not a number; write a range, a slash and a number, \
             e.g. `{example}`"
        )
        .into());
    };
    if step == 0 {
        return Err(format!(
            "{name} step in `{item}` is 0; a step must be at least 1, e.g. `{example}`"
        )
        .into());
    }
    if range == "*" && step > spec.max_step {
        let (max_step, period, min) = (spec.max_step, spec.period, spec.min);
        return Err(format!(
            "{name} step {step} in `{item}` is larger than {max_step}: steps restart every \
             {period}, so it would fire only at {name} {min}; use a step of at most {max_step}, \
             e.g. `*/{}`, or list the values, e.g. `{}`",
            max_step.div_ceil(2),
            spec.list,
        )
        .into());
    }
    Ok(step)
}

/// Reads one value (a number or a name) of `item`.
fn value(spec: &Spec, item: &str, text: &str) -> Result<u32, FieldError> {
    let (name, range, step) = (spec.name, spec.range, spec.step);
    if text.is_empty() {
        return Err(format!(
            "{name} `{item}` is missing a value; write a number in {range}, a range such as \
             `1-5`, or `*`"
        )
        .into());
    }
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        let n = text.parse::<u32>().unwrap_or(u32::MAX);
        return if (spec.min..=spec.max).contains(&n) {
            Ok(n)
        } else {
            Err(format!("{name} {text} is out of range {range}").into())
        };
    }
    let position = spec
        .names
        .iter()
        .position(|known| known.eq_ignore_ascii_case(text));
    match position {
        Some(index) => Ok(spec.min + u32::try_from(index).unwrap_or(u32::MAX - spec.min)),
        None if spec.names.is_empty() => Err(format!(
            "{name} `{text}` is not a number; write a number in {range}, a range such as \
             `1-5`, a step such as `{step}`, or `*`"
        )
        .into()),
        None => Err(format!(
            "{name} `{text}` is neither a number nor a name; write a number in {range}, e.g. \
             `{}` or `{}`",
            spec.min + 1,
            spec.names.get(1).copied().unwrap_or_default(),
        )
        .into()),
    }
}

#[cfg(test)]
#[path = "cron_tests.rs"]
mod tests;

use std::time::Duration;

use jiff::Timestamp;

use super::{Cron, CronError, When};

fn ts(text: &str) -> Timestamp {
    text.parse().expect("a test timestamp")
}

fn cron(expr: &str, tz: &str) -> Cron {
    Cron::parse(expr, tz).expect("a valid test expression")
}

/// The next `count` due times after `after`.
fn due(cron: &Cron, after: &str, count: usize) -> Vec<Timestamp> {
    let mut times = Vec::new();
    let mut after = ts(after);
    for _ in 0..count {
        let next = cron.next_after(after).expect("a due time");
        times.push(next);
        after = next;
    }
    times
}

fn all(texts: &[&str]) -> Vec<Timestamp> {
    texts.iter().map(|text| ts(text)).collect()
}

fn error(expr: &str) -> String {
    Cron::parse(expr, "UTC")
        .expect_err("an invalid expression")
        .to_string()
}

#[test]
fn every_five_minutes() {
    let every = cron("*/5 * * * *", "UTC");
    assert_eq!(
        due(&every, "2026-01-01T10:02:30Z", 3),
        all(&[
            "2026-01-01T10:05:00Z",
            "2026-01-01T10:10:00Z",
            "2026-01-01T10:15:00Z"
        ])
    );
    // Strictly after: a due time is not due again.
    assert_eq!(
        every.next_after(ts("2026-01-01T10:05:00Z")),
        Some(ts("2026-01-01T10:10:00Z"))
    );
    assert_eq!(
        every.next_after(ts("2026-12-31T23:57:00Z")),
        Some(ts("2027-01-01T00:00:00Z"))
    );
}

#[test]
fn daily_in_berlin_across_spring_forward() {
    let daily = cron("0 9 * * *", "Europe/Berlin");
    // 09:00 CET is 08:00Z; from 2026-03-29 09:00 CEST is 07:00Z.
    assert_eq!(
        due(&daily, "2026-03-27T12:00:00Z", 3),
        all(&[
            "2026-03-28T08:00:00Z",
            "2026-03-29T07:00:00Z",
            "2026-03-30T07:00:00Z"
        ])
    );
}

#[test]
fn daily_in_berlin_across_fall_back() {
    let daily = cron("0 9 * * *", "Europe/Berlin");
    assert_eq!(
        due(&daily, "2026-10-24T06:00:00Z", 3),
        all(&[
            "2026-10-24T07:00:00Z",
            "2026-10-25T08:00:00Z",
            "2026-10-26T08:00:00Z"
        ])
    );
}

#[test]
fn skipped_local_time_runs_at_the_end_of_the_gap() {
    // 02:30 does not exist on 2026-03-29 in Berlin: 02:00 CET jumps to 03:00 CEST (01:00Z).
    let nightly = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        due(&nightly, "2026-03-28T12:00:00Z", 2),
        all(&["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"])
    );
}

#[test]
fn several_skipped_local_times_run_once() {
    let quarterly = cron("*/15 2 * * *", "Europe/Berlin");
    assert_eq!(
        due(&quarterly, "2026-03-29T00:00:00Z", 2),
        all(&["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"])
    );
    // 03:00 is due too: it is the same instant as the gap's due time, and runs once.
    let around = cron("*/30 2,3 * * *", "Europe/Berlin");
    assert_eq!(
        due(&around, "2026-03-29T00:00:00Z", 2),
        all(&["2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"])
    );
}

#[test]
fn repeated_local_time_runs_once_at_its_first_occurrence() {
    // 02:30 happens twice on 2026-10-25 in Berlin: at 00:30Z (CEST) and 01:30Z (CET).
    let nightly = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        due(&nightly, "2026-10-24T12:00:00Z", 2),
        all(&["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"])
    );
    // Hourly: 02:00 CEST (00:00Z) runs, 02:00 CET (01:00Z) does not, 03:00 CET (02:00Z) does.
    let hourly = cron("0 * * * *", "Europe/Berlin");
    assert_eq!(
        due(&hourly, "2026-10-24T23:30:00Z", 2),
        all(&["2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z"])
    );
}

#[test]
fn day_names_case_insensitive() {
    // 2026-01-03 is a Saturday.
    let weekdays = cron("0 12 * * MON-fri", "UTC");
    assert_eq!(
        due(&weekdays, "2026-01-03T00:00:00Z", 2),
        all(&["2026-01-05T12:00:00Z", "2026-01-06T12:00:00Z"])
    );
    let list = cron("0 12 * * sun,Wed", "UTC");
    assert_eq!(
        due(&list, "2026-01-03T00:00:00Z", 2),
        all(&["2026-01-04T12:00:00Z", "2026-01-07T12:00:00Z"])
    );
}

#[test]
fn sunday_is_0_and_7() {
    for expr in ["0 0 * * 0", "0 0 * * 7", "0 0 * * SUN", "0 0 * * 6-7"] {
        let sunday = cron(expr, "UTC");
        assert_eq!(
            sunday.next_after(ts("2026-01-03T12:00:00Z")),
            Some(ts("2026-01-04T00:00:00Z")),
            "{expr}"
        );
    }
}

#[test]
fn month_names() {
    let twice = cron("0 0 1 jun,DEC *", "UTC");
    assert_eq!(
        due(&twice, "2026-01-15T00:00:00Z", 3),
        all(&[
            "2026-06-01T00:00:00Z",
            "2026-12-01T00:00:00Z",
            "2027-06-01T00:00:00Z"
        ])
    );
    let range = cron("0 0 1 Oct-Nov *", "UTC");
    assert_eq!(
        due(&range, "2026-01-15T00:00:00Z", 2),
        all(&["2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z"])
    );
}

#[test]
fn february_30_never_fires() {
    let never = cron("0 0 30 2 *", "UTC");
    assert_eq!(never.next_after(ts("2026-01-01T00:00:00Z")), None);
}

#[test]
fn february_29_fires_in_leap_years() {
    let leap = cron("0 0 29 2 *", "UTC");
    assert_eq!(
        leap.next_after(ts("2026-01-01T00:00:00Z")),
        Some(ts("2028-02-29T00:00:00Z"))
    );
}

#[test]
fn day_of_month_or_day_of_week_when_both_restricted() {
    // The 10th, or any Monday: 2026-02-02 and 02-09 are Mondays, 02-10 a Tuesday.
    let either = cron("0 0 10 * 1", "UTC");
    assert_eq!(
        due(&either, "2026-02-01T00:00:00Z", 4),
        all(&[
            "2026-02-02T00:00:00Z",
            "2026-02-09T00:00:00Z",
            "2026-02-10T00:00:00Z",
            "2026-02-16T00:00:00Z"
        ])
    );
}

#[test]
fn day_of_month_and_day_of_week_when_one_starts_with_star() {
    // `*/2` is unrestricted in the Vixie sense: odd days that are also Mondays.
    let both = cron("0 0 */2 * 1", "UTC");
    assert_eq!(
        due(&both, "2026-02-01T00:00:00Z", 2),
        all(&["2026-02-09T00:00:00Z", "2026-02-23T00:00:00Z"])
    );
    let mondays = cron("0 0 * * 1", "UTC");
    assert_eq!(
        due(&mondays, "2026-02-01T00:00:00Z", 2),
        all(&["2026-02-02T00:00:00Z", "2026-02-09T00:00:00Z"])
    );
}

#[test]
fn ranges_steps_and_lists() {
    let mixed = cron("5,50-59/5 8-9 * * *", "UTC");
    assert_eq!(
        due(&mixed, "2026-01-01T00:00:00Z", 5),
        all(&[
            "2026-01-01T08:05:00Z",
            "2026-01-01T08:50:00Z",
            "2026-01-01T08:55:00Z",
            "2026-01-01T09:05:00Z",
            "2026-01-01T09:50:00Z"
        ])
    );
    // `a/n` runs from `a` to the field's end.
    let from_ten = cron("10/20 0 * * *", "UTC");
    assert_eq!(
        due(&from_ten, "2026-01-01T00:00:00Z", 3),
        all(&[
            "2026-01-01T00:10:00Z",
            "2026-01-01T00:30:00Z",
            "2026-01-01T00:50:00Z"
        ])
    );
}

#[test]
fn macros() {
    let after = "2026-01-07T10:30:00Z"; // a Wednesday
    let cases = [
        ("@hourly", "2026-01-07T11:00:00Z"),
        ("@daily", "2026-01-08T00:00:00Z"),
        ("@midnight", "2026-01-08T00:00:00Z"),
        ("@weekly", "2026-01-11T00:00:00Z"),
        ("@monthly", "2026-02-01T00:00:00Z"),
        ("@yearly", "2027-01-01T00:00:00Z"),
        ("@annually", "2027-01-01T00:00:00Z"),
        ("@DAILY", "2026-01-08T00:00:00Z"),
    ];
    for (expr, expected) in cases {
        let parsed = cron(expr, "UTC");
        assert_eq!(parsed.next_after(ts(after)), Some(ts(expected)), "{expr}");
        assert_eq!(parsed.expression(), expr);
    }
}

#[test]
fn accessors_give_the_expression_and_the_canonical_zone() {
    let parsed = cron("  0 9 * * 1-5 ", "europe/berlin");
    assert_eq!(parsed.expression(), "0 9 * * 1-5");
    assert_eq!(parsed.time_zone(), "Europe/Berlin");
    assert_eq!(cron("@daily", "UTC").time_zone(), "UTC");
}

#[test]
fn error_six_or_seven_fields() {
    assert_eq!(
        error("*/1 * * * * *"),
        "cron `*/1 * * * * *` has 6 fields; schedules use 5 (minute hour day-of-month month \
         day-of-week) and fire at most once a minute, e.g. `*/5 * * * *`"
    );
    assert!(error("0 0 9 * * * 2026").starts_with("cron `0 0 9 * * * 2026` has 7 fields;"));
}

#[test]
fn error_other_field_counts() {
    assert_eq!(
        error("0 9 *"),
        "cron `0 9 *` has 3 fields; write 5 (minute hour day-of-month month day-of-week), \
         e.g. `0 9 * * 1-5` for 09:00 on weekdays, or a macro such as `@daily`"
    );
    assert!(error("daily").starts_with("cron `daily` has 1 field; write 5"));
    assert!(error("  ").starts_with("cron expression is empty;"));
}

#[test]
fn error_out_of_range() {
    assert_eq!(
        error("0 25 * * *"),
        "cron `0 25 * * *`: hour 25 is out of range 0-23"
    );
    assert_eq!(
        error("60 * * * *"),
        "cron `60 * * * *`: minute 60 is out of range 0-59"
    );
    assert_eq!(
        error("0 0 0 * *"),
        "cron `0 0 0 * *`: day-of-month 0 is out of range 1-31"
    );
    assert_eq!(
        error("0 0 1 13 *"),
        "cron `0 0 1 13 *`: month 13 is out of range 1-12 (or JAN-DEC)"
    );
    assert_eq!(
        error("0 0 * * 8"),
        "cron `0 0 * * 8`: day-of-week 8 is out of range 0-7 (0 and 7 are Sunday; or SUN-SAT)"
    );
    assert_eq!(
        error("99999999999 * * * *"),
        "cron `99999999999 * * * *`: minute 99999999999 is out of range 0-59"
    );
}

#[test]
fn error_unknown_time_zone() {
    assert_eq!(
        Cron::parse("0 9 * * *", "Mars/Olympus")
            .expect_err("unknown zone")
            .to_string(),
        "time zone `Mars/Olympus` is not known; use an IANA name such as `Europe/Berlin` or `UTC`"
    );
    assert_eq!(
        When::parse(Some("2026-12-07T09:00"), None, Some("Mars/Olympus"))
            .expect_err("unknown zone"),
        CronError::TimeZone("Mars/Olympus".into())
    );
}

#[test]
fn error_step_of_zero() {
    assert_eq!(
        error("*/0 * * * *"),
        "cron `*/0 * * * *`: minute step in `*/0` is 0; a step must be at least 1, e.g. `*/5`"
    );
}

#[test]
fn error_step_longer_than_the_field() {
    assert_eq!(
        error("*/90 * * * *"),
        "cron `*/90 * * * *`: minute step 90 in `*/90` is larger than 59: steps restart every \
         hour, so it would fire only at minute 0; use a step of at most 59, e.g. `*/30`, or \
         list the values, e.g. `0,15,30,45`"
    );
    assert!(error("0 */x * * *").contains("hour step in `*/x` is not a number"));
}

#[test]
fn error_reversed_range() {
    assert_eq!(
        error("0 0 * * 5-1"),
        "cron `0 0 * * 5-1`: day-of-week range `5-1` goes backwards; write the lower bound \
         first, e.g. `1-5`, or for a range that wraps around use a list such as `5-7,0-1`"
    );
    assert!(error("0 22-2 * * *").contains("`22-23,0-2`"));
}

#[test]
fn error_empty_list_item() {
    assert_eq!(
        error("1,,2 * * * *"),
        "cron `1,,2 * * * *`: minute list `1,,2` has an empty item; separate values with \
         single commas, e.g. `0,15,30,45`"
    );
    assert!(error("0 0 * * 1,").contains("day-of-week list `1,` has an empty item"));
    assert!(error("0 0 * * 1,").ends_with("e.g. `MON,WED,FRI`"));
    assert!(error("0 -5 * * *").contains("hour `-5` is missing a value"));
}

#[test]
fn error_bad_names() {
    assert!(error("0 0 * FOO *").contains("month `FOO` is neither a number nor a name"));
    assert!(error("0 0 * * MONDAY").contains("day-of-week `MONDAY` is neither"));
    assert!(error("MON 0 * * *").contains("minute `MON` is not a number"));
}

#[test]
fn error_too_long() {
    let long = format!("0 0 {} * *", vec!["1"; 100].join(","));
    assert_eq!(
        error(&long),
        "cron expression is 207 characters long; the limit is 200: write 5 fields (minute hour \
         day-of-month month day-of-week), e.g. `0 9 * * 1-5`, and use ranges (`1-5`) or steps \
         (`*/15`) instead of long lists"
    );
}

#[test]
fn error_unknown_macro() {
    assert!(error("@reboot").starts_with("cron `@reboot` is not a known macro; use one of"));
    assert!(error("@daily 5").starts_with("cron `@daily 5` is not a known macro"));
}

#[test]
fn error_both_at_and_cron() {
    let both = When::parse(Some("2026-12-07T09:00Z"), Some("0 9 * * *"), None);
    assert_eq!(both.expect_err("both"), CronError::BothGiven);
    assert_eq!(
        CronError::BothGiven.to_string(),
        "give either `at` (one run, e.g. `2026-12-07T09:00:00+01:00`) or `cron` (repeated \
         runs, e.g. `0 9 * * 1-5`), not both"
    );
}

#[test]
fn error_neither_at_nor_cron() {
    let neither = When::parse(None, Some("  "), Some("UTC"));
    assert_eq!(neither.expect_err("neither"), CronError::NoneGiven);
    assert!(
        CronError::NoneGiven
            .to_string()
            .starts_with("give one of `at`")
    );
}

#[test]
fn error_unreadable_at() {
    for at in [
        "tomorrow 9am",
        "2026-12-07T09:00[Mars/Olympus]",
        "2026-13-07T09:00",
    ] {
        let error = When::parse(Some(at), None, None).expect_err("unreadable");
        assert_eq!(
            error.to_string(),
            format!(
                "`at` `{at}` is not a time; write RFC 3339 with an offset, e.g. \
                 `2026-12-07T09:00:00+01:00`, or a civil date and time read in `tz`, e.g. \
                 `2026-12-07T09:00`"
            )
        );
    }
}

#[test]
fn at_with_offset_civil_and_zone() {
    let cases = [
        ("2026-12-07T09:00:00+01:00", None, "2026-12-07T08:00:00Z"),
        (
            "2026-12-07T09:00:00Z",
            Some("Europe/Berlin"),
            "2026-12-07T09:00:00Z",
        ),
        ("2026-12-07T09:00", None, "2026-12-07T09:00:00Z"),
        (
            "2026-12-07T09:00",
            Some("Europe/Berlin"),
            "2026-12-07T08:00:00Z",
        ),
        (
            "2026-07-07 09:00:00",
            Some("Europe/Berlin"),
            "2026-07-07T07:00:00Z",
        ),
        (
            "2026-12-07T09:00[Europe/Berlin]",
            None,
            "2026-12-07T08:00:00Z",
        ),
        // A skipped civil time runs at the end of the gap.
        (
            "2026-03-29T02:30",
            Some("Europe/Berlin"),
            "2026-03-29T01:00:00Z",
        ),
    ];
    for (at, tz, expected) in cases {
        let when = When::parse(Some(at), None, tz).expect("a valid at");
        assert!(
            matches!(when, When::At(instant) if instant == ts(expected)),
            "{at} {tz:?}: {when:?}"
        );
    }
}

#[test]
fn at_in_the_past_is_never_due() {
    let when = When::parse(Some("2026-12-07T09:00:00Z"), None, None).expect("a valid at");
    let at = ts("2026-12-07T09:00:00Z");
    assert_eq!(when.next_after(ts("2026-12-07T08:59:59Z")), Some(at));
    assert_eq!(when.next_after(at), None);
    assert_eq!(when.next_after(ts("2027-01-01T00:00:00Z")), None);
    assert_eq!(when.min_interval(ts("2026-01-01T00:00:00Z")), None);
}

#[test]
fn cron_defaults_to_utc() {
    let when = When::parse(None, Some("0 9 * * *"), None).expect("a valid cron");
    let When::Cron(parsed) = &when else {
        panic!("a cron: {when:?}");
    };
    assert_eq!(parsed.time_zone(), "UTC");
    assert_eq!(
        when.next_after(ts("2026-01-01T00:00:00Z")),
        Some(ts("2026-01-01T09:00:00Z"))
    );
}

#[test]
fn min_interval_every_minute_is_60_seconds() {
    let when = When::parse(None, Some("* * * * *"), None).expect("a valid cron");
    assert_eq!(
        when.min_interval(ts("2026-01-01T00:00:30Z")),
        Some(Duration::from_secs(60))
    );
    let every_five =
        When::parse(None, Some("*/5 * * * *"), Some("Europe/Berlin")).expect("a valid cron");
    assert_eq!(
        every_five.min_interval(ts("2026-03-28T12:00:00Z")),
        Some(Duration::from_secs(300))
    );
}

#[test]
fn min_interval_of_weekdays_at_nine_is_at_least_a_day() {
    let when = When::parse(None, Some("0 9 * * 1-5"), Some("Europe/Berlin")).expect("valid");
    // From a Friday morning the next two runs are three days apart; from a Monday, one.
    assert_eq!(
        when.min_interval(ts("2026-01-02T06:00:00Z")),
        Some(Duration::from_secs(3 * 86_400))
    );
    assert_eq!(
        when.min_interval(ts("2026-01-05T00:00:00Z")),
        Some(Duration::from_secs(86_400))
    );
    let never = When::parse(None, Some("0 0 30 2 *"), None).expect("valid");
    assert_eq!(never.min_interval(ts("2026-01-01T00:00:00Z")), None);
}

#[test]
fn next_after_skips_ahead_instead_of_scanning_minutes() {
    // Scanning five years minute by minute would take seconds; skipping takes well under a
    // millisecond per call, even unoptimized.
    let never = cron("0 0 30 2 *", "Europe/Berlin");
    let start = std::time::Instant::now();
    for _ in 0..10 {
        assert_eq!(never.next_after(ts("2026-03-28T23:59:59Z")), None);
    }
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

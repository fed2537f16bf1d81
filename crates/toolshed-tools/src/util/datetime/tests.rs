//! Tests of the `datetime` tool, called through its plugin as a door would.

use serde_json::{Value, json};

use super::plugin;
use crate::util::test_support;

async fn ok(args: Value) -> (String, Value) {
    let out = test_support::ok(&plugin(), args).await;
    assert!(!out.is_error);
    (
        out.text_joined(),
        out.structured.expect("structured output"),
    )
}

async fn invalid(args: Value) -> String {
    test_support::invalid(&plugin(), args).await
}

#[test]
fn plugin_has_one_tool_named_datetime() {
    let p = plugin();
    assert_eq!(p.manifest().id, "system.datetime");
    let tools = p.tools();
    assert_eq!(tools.len(), 1);
    let spec = tools[0].spec();
    assert_eq!(spec.name, "datetime");
    assert_eq!(spec.group, "util");
    assert!(spec.annotations.read_only && spec.annotations.idempotent);
    assert!(!spec.annotations.destructive && !spec.annotations.open_world);
}

#[test]
fn schema_compiles_and_validates() {
    // Also checks that every property is described, for the model.
    test_support::check_schema(
        &plugin(),
        &[
            json!({
                "operation": "convert", "instant": "2026-03-29T00:30:00Z", "to": "Europe/London"
            }),
            json!({"operation": "format", "unix": 1.5, "format": "%Y"}),
        ],
        &[
            json!({"operation": "teleport"}),
            json!({"operation": "now", "zone": "UTC"}),
            json!({"instant": "now"}),
            json!({"operation": "diff", "unit": "fortnights"}),
        ],
    );
}

// --- convert ---

#[tokio::test]
async fn convert_to_london_follows_the_march_2026_dst_change() {
    let (text, v) = ok(json!({
        "operation": "convert", "instant": "2026-03-29T00:30:00Z", "to": "Europe/London"
    }))
    .await;
    assert_eq!(v["offset"], "+00:00");
    assert_eq!(v["instant"], "2026-03-29T00:30:00+00:00");
    assert_eq!(v["abbreviation"], "GMT");
    assert_eq!(v["dst"], false);
    assert_eq!(v["timezone"], "Europe/London");
    assert_eq!(text, "2026-03-29T00:30:00+00:00 Europe/London (GMT)");

    let (text, v) = ok(json!({
        "operation": "convert", "instant": "2026-03-29T01:30:00Z", "to": "Europe/London"
    }))
    .await;
    assert_eq!(v["offset"], "+01:00");
    assert_eq!(v["instant"], "2026-03-29T02:30:00+01:00");
    assert_eq!(v["abbreviation"], "BST");
    assert_eq!(v["dst"], true);
    assert_eq!(v["utc"], "2026-03-29T01:30:00Z");
    assert_eq!(v["unix"], 1_774_747_800);
    assert_eq!(text, "2026-03-29T02:30:00+01:00 Europe/London (BST, DST)");
}

#[tokio::test]
async fn convert_reads_a_civil_time_in_from() {
    let (_, v) = ok(json!({
        "operation": "convert", "instant": "2026-07-01T12:00", "from": "America/New_York",
        "to": "Asia/Kolkata"
    }))
    .await;
    assert_eq!(v["utc"], "2026-07-01T16:00:00Z");
    assert_eq!(v["instant"], "2026-07-01T21:30:00+05:30");
    assert_eq!(v["offset"], "+05:30");
    assert_eq!(v["source"], "2026-07-01T12:00:00-04:00");
    assert!(v.get("from_ignored").is_none());
}

#[tokio::test]
async fn convert_ignores_from_when_the_instant_has_an_offset() {
    let (text, v) = ok(json!({
        "operation": "convert", "instant": "2026-07-01T12:00:00+02:00", "from": "America/New_York",
        "to": "UTC"
    }))
    .await;
    assert_eq!(v["instant"], "2026-07-01T10:00:00+00:00");
    assert_eq!(v["from_ignored"], true);
    assert!(text.contains("`from` was ignored"), "{text}");
}

#[tokio::test]
async fn convert_accepts_fixed_offsets_and_rfc9557_zones() {
    let (text, v) = ok(json!({
        "operation": "convert", "instant": "2026-01-10T09:00[Europe/Paris]", "to": "-03:30"
    }))
    .await;
    assert_eq!(v["instant"], "2026-01-10T04:30:00-03:30");
    assert_eq!(v["timezone"], "-03:30");
    assert_eq!(v["abbreviation"], Value::Null);
    assert_eq!(text, "2026-01-10T04:30:00-03:30");
}

#[tokio::test]
async fn civil_time_in_a_dst_gap_moves_forward_by_default() {
    // 01:30 on 2026-03-29 never happens in London: clocks go from 01:00 GMT to 02:00 BST.
    let (text, v) = ok(json!({
        "operation": "convert", "instant": "2026-03-29T01:30", "from": "Europe/London", "to": "UTC"
    }))
    .await;
    assert_eq!(v["utc"], "2026-03-29T01:30:00Z");
    assert_eq!(v["source"], "2026-03-29T02:30:00+01:00");
    assert_eq!(v["adjusted"]["kind"], "gap");
    assert_eq!(v["adjusted"]["rule"], "compatible");
    assert!(text.contains("does not exist in Europe/London"), "{text}");

    let (_, v) = ok(json!({
        "operation": "convert", "instant": "2026-03-29T01:30", "from": "Europe/London",
        "to": "UTC", "disambiguation": "earlier"
    }))
    .await;
    assert_eq!(v["utc"], "2026-03-29T00:30:00Z");

    let msg = invalid(json!({
        "operation": "convert", "instant": "2026-03-29T01:30", "from": "Europe/London",
        "to": "UTC", "disambiguation": "reject"
    }))
    .await;
    assert!(msg.contains("does not exist in Europe/London"), "{msg}");
    assert!(msg.contains("disambiguation"), "{msg}");
}

#[tokio::test]
async fn civil_time_in_a_dst_fold_takes_the_earlier_by_default() {
    // 01:30 on 2026-10-25 happens twice in London: at +01:00, then at +00:00.
    let (_, v) = ok(json!({
        "operation": "convert", "instant": "2026-10-25T01:30", "from": "Europe/London", "to": "UTC"
    }))
    .await;
    assert_eq!(v["utc"], "2026-10-25T00:30:00Z");
    assert_eq!(v["adjusted"]["kind"], "fold");
    let (_, v) = ok(json!({
        "operation": "convert", "instant": "2026-10-25T01:30", "from": "Europe/London",
        "to": "UTC", "disambiguation": "later"
    }))
    .await;
    assert_eq!(v["utc"], "2026-10-25T01:30:00Z");
    let msg = invalid(json!({
        "operation": "convert", "instant": "2026-10-25T01:30", "from": "Europe/London",
        "to": "UTC", "disambiguation": "reject"
    }))
    .await;
    assert!(msg.contains("happens twice in Europe/London"), "{msg}");
}

#[tokio::test]
async fn unknown_zone_names_the_zone_and_the_expected_form() {
    let msg = invalid(json!({
        "operation": "convert", "instant": "2026-03-29T00:30:00Z", "to": "Europe/Lodnon"
    }))
    .await;
    assert!(msg.contains("Europe/Lodnon"), "{msg}");
    assert!(msg.contains("Area/City"), "{msg}");
    assert!(msg.contains("did you mean `Europe/London`"), "{msg}");
    assert!(msg.contains("/to"), "{msg}");

    let msg = invalid(json!({"operation": "now", "timezone": "Mars/Olympus_Mons"})).await;
    assert!(msg.contains("Mars/Olympus_Mons"), "{msg}");
    assert!(msg.contains("Europe/London"), "{msg}");

    // A bare city is matched to its IANA name.
    let msg = invalid(json!({"operation": "now", "timezone": "Tokyo"})).await;
    assert!(msg.contains("did you mean `Asia/Tokyo`"), "{msg}");

    let msg = invalid(json!({"operation": "now", "timezone": "Tokio"})).await;
    assert!(msg.contains("did you mean `Asia/Tokyo`"), "{msg}");

    // Zones inside an RFC 9557 instant get the same treatment.
    let msg = invalid(json!({
        "operation": "convert", "instant": "2026-10-25T01:30[Europe/Lodnon]", "to": "UTC"
    }))
    .await;
    assert!(msg.contains("unknown time zone `Europe/Lodnon`"), "{msg}");
    assert!(msg.contains("/instant"), "{msg}");

    let msg = invalid(json!({"operation": "now", "timezone": "+99:00"})).await;
    assert!(msg.contains("+99:00"), "{msg}");
}

#[tokio::test]
async fn garbage_instants_name_the_value_and_the_accepted_forms() {
    let msg = invalid(json!({
        "operation": "convert", "instant": "next tuesday-ish", "to": "UTC"
    }))
    .await;
    assert!(msg.contains("next tuesday-ish"), "{msg}");
    assert!(msg.contains("RFC 3339"), "{msg}");
    assert!(msg.contains("unix seconds"), "{msg}");
    assert!(msg.contains("/instant"), "{msg}");

    let msg = invalid(json!({"operation": "convert", "instant": "2026-02-30", "to": "UTC"})).await;
    assert!(msg.contains("2026-02-30"), "{msg}");

    let long = "9".repeat(300) + "x";
    let msg = invalid(json!({"operation": "convert", "instant": long, "to": "UTC"})).await;
    assert!(msg.contains("the limit is 256"), "{msg}");
}

#[tokio::test]
async fn missing_fields_are_named() {
    let msg = invalid(json!({"operation": "convert", "instant": "now"})).await;
    assert!(msg.contains("`to`"), "{msg}");
    let msg = invalid(json!({"operation": "add", "instant": "now"})).await;
    assert!(msg.contains("`duration`"), "{msg}");
    let msg = invalid(json!({"operation": "diff", "start": "now"})).await;
    assert!(msg.contains("`end`"), "{msg}");
    let msg = invalid(json!({"operation": "parse"})).await;
    assert!(msg.contains("`text`"), "{msg}");
}

// --- now ---

#[tokio::test]
async fn now_reports_the_time_in_the_requested_zone() {
    let before = jiff::Timestamp::now().as_second();
    let (text, v) = ok(json!({"operation": "now", "timezone": "Asia/Tokyo"})).await;
    let after = jiff::Timestamp::now().as_second();
    let unix = v["unix"].as_i64().expect("unix");
    assert!(before <= unix && unix <= after, "{unix}");
    let ms = v["unix_ms"].as_i64().expect("unix_ms");
    assert_eq!(ms / 1000, unix);
    assert_eq!(v["offset"], "+09:00");
    assert_eq!(v["timezone"], "Asia/Tokyo");
    assert_eq!(v["abbreviation"], "JST");
    assert!(v["instant"].as_str().expect("instant").ends_with("+09:00"));
    assert!(text.contains("Asia/Tokyo (JST)"), "{text}");
    let weekday = v["weekday"].as_str().expect("weekday");
    assert!(text.ends_with(weekday), "{text}");
}

#[tokio::test]
async fn now_defaults_to_utc() {
    let (_, v) = ok(json!({"operation": "now"})).await;
    assert_eq!(v["timezone"], "UTC");
    assert_eq!(v["offset"], "+00:00");
    assert!(v["utc"].as_str().expect("utc").ends_with('Z'));
}

// --- format ---

#[tokio::test]
async fn format_uses_strftime_in_the_given_zone() {
    let (text, v) = ok(json!({
        "operation": "format", "instant": "2026-03-29T01:30:00Z",
        "format": "%Y-%m-%d %H:%M %Z (%A)", "timezone": "Europe/London"
    }))
    .await;
    assert_eq!(text, "2026-03-29 02:30 BST (Sunday)");
    assert_eq!(v["formatted"], "2026-03-29 02:30 BST (Sunday)");
}

#[tokio::test]
async fn format_keeps_the_instants_own_offset_without_timezone() {
    let (text, _) = ok(json!({
        "operation": "format", "instant": "2026-03-29T08:15:00-07:00", "format": "%H:%M %:z"
    }))
    .await;
    assert_eq!(text, "08:15 -07:00");
}

#[tokio::test]
async fn format_accepts_unix_seconds_with_fractions() {
    let (text, _) =
        ok(json!({"operation": "format", "unix": 0, "format": "%Y-%m-%dT%H:%M:%S"})).await;
    assert_eq!(text, "1970-01-01T00:00:00");
    let (text, _) = ok(json!({"operation": "format", "unix": 1.25, "format": "%S%.3f"})).await;
    assert_eq!(text, "01.250");
    let msg = invalid(json!({"operation": "format", "unix": 1e15, "format": "%Y"})).await;
    assert!(msg.contains("`unix`"), "{msg}");
}

#[tokio::test]
async fn format_errors_are_explained() {
    let msg = invalid(json!({
        "operation": "format", "instant": "2026-03-29T01:30:00Z", "unix": 5, "format": "%Y"
    }))
    .await;
    assert!(msg.contains("not both"), "{msg}");
    let msg = invalid(json!({"operation": "format", "format": "%Y"})).await;
    assert!(msg.contains("`instant`"), "{msg}");
    let msg = invalid(json!({"operation": "format", "instant": "2026-03-29T01:30:00Z"})).await;
    assert!(msg.contains("`format`"), "{msg}");
    let msg = invalid(json!({
        "operation": "format", "instant": "2026-03-29T01:30:00Z", "format": "%Y %!"
    }))
    .await;
    assert!(msg.contains("%Y %!"), "{msg}");
    assert!(msg.contains("strftime"), "{msg}");
}

// --- parse ---

#[tokio::test]
async fn parse_rfc3339_keeps_the_offset_and_normalizes_to_utc() {
    let (text, v) = ok(json!({"operation": "parse", "text": "2026-03-29T02:30:00+01:00"})).await;
    assert_eq!(v["utc"], "2026-03-29T01:30:00Z");
    assert_eq!(v["unix"], 1_774_747_800);
    assert_eq!(v["unix_ms"], 1_774_747_800_000_i64);
    assert_eq!(v["offset"], "+01:00");
    assert_eq!(v["form"], "rfc3339");
    assert_eq!(v["had_offset"], true);
    assert_eq!(
        text,
        "2026-03-29T01:30:00Z (unix 1774747800; read as rfc3339 with offset +01:00)"
    );
}

#[tokio::test]
async fn parse_civil_forms_are_read_in_timezone() {
    let (_, v) =
        ok(json!({"operation": "parse", "text": "2026-03-29", "timezone": "America/New_York"}))
            .await;
    assert_eq!(v["utc"], "2026-03-29T04:00:00Z");
    assert_eq!(v["form"], "date");
    assert_eq!(v["had_offset"], false);
    assert_eq!(v["read_in"], "America/New_York");

    let (_, v) = ok(json!({"operation": "parse", "text": "2026-03-29T14:05"})).await;
    assert_eq!(v["utc"], "2026-03-29T14:05:00Z");
    assert_eq!(v["form"], "civil");
    assert_eq!(v["read_in"], "UTC");

    let (_, v) =
        ok(json!({"operation": "parse", "text": "2026-03-29T14:05:09", "timezone": "+02:00"}))
            .await;
    assert_eq!(v["utc"], "2026-03-29T12:05:09Z");
}

#[tokio::test]
async fn parse_unix_seconds_and_rfc2822() {
    let (_, v) = ok(json!({"operation": "parse", "text": "1774747800"})).await;
    assert_eq!(v["utc"], "2026-03-29T01:30:00Z");
    assert_eq!(v["form"], "unix");

    let (_, v) = ok(json!({"operation": "parse", "text": "Sun, 29 Mar 2026 02:30:00 +0100"})).await;
    assert_eq!(v["utc"], "2026-03-29T01:30:00Z");
    assert_eq!(v["offset"], "+01:00");
    assert_eq!(v["form"], "rfc2822");
}

#[tokio::test]
async fn parse_with_a_strptime_format() {
    let (_, v) = ok(json!({
        "operation": "parse", "text": "29/03/2026 14:05", "format": "%d/%m/%Y %H:%M",
        "timezone": "Europe/London"
    }))
    .await;
    assert_eq!(v["utc"], "2026-03-29T13:05:00Z");
    assert_eq!(v["form"], "strptime");

    let (_, v) = ok(json!({
        "operation": "parse", "text": "2026-03-29 14:05 -0500", "format": "%Y-%m-%d %H:%M %z"
    }))
    .await;
    assert_eq!(v["utc"], "2026-03-29T19:05:00Z");
    assert_eq!(v["offset"], "-05:00");

    let msg =
        invalid(json!({"operation": "parse", "text": "29.03.2026", "format": "%d/%m/%Y"})).await;
    assert!(msg.contains("29.03.2026"), "{msg}");
    assert!(msg.contains("%d/%m/%Y"), "{msg}");

    let msg = invalid(json!({"operation": "parse", "text": "14:05", "format": "%H:%M"})).await;
    assert!(msg.contains("year, month and day"), "{msg}");
}

// --- add / subtract ---

#[tokio::test]
async fn add_a_day_across_dst_keeps_the_wall_clock_time() {
    let (text, v) = ok(json!({
        "operation": "add", "instant": "2026-03-28T12:00:00Z", "duration": "1d",
        "timezone": "Europe/London"
    }))
    .await;
    assert_eq!(v["instant"], "2026-03-29T12:00:00+01:00");
    assert_eq!(v["utc"], "2026-03-29T11:00:00Z");
    assert_eq!(v["start"], "2026-03-28T12:00:00+00:00");
    assert_eq!(v["duration"], "P1D");
    assert_eq!(text, "2026-03-29T12:00:00+01:00 Europe/London (BST, DST)");

    // 24 hours is not a day on that date.
    let (_, v) = ok(json!({
        "operation": "add", "instant": "2026-03-28T12:00:00Z", "duration": "24h",
        "timezone": "Europe/London"
    }))
    .await;
    assert_eq!(v["instant"], "2026-03-29T13:00:00+01:00");
}

#[tokio::test]
async fn add_accepts_iso_and_friendly_durations() {
    for (duration, expected) in [
        ("P1DT2H", "2026-01-02T02:00:00+00:00"),
        ("1d 2h 30m", "2026-01-02T02:30:00+00:00"),
        ("90s", "2026-01-01T00:01:30+00:00"),
        ("2 weeks", "2026-01-15T00:00:00+00:00"),
        ("PT90M", "2026-01-01T01:30:00+00:00"),
    ] {
        let (_, v) =
            ok(json!({"operation": "add", "instant": "2026-01-01", "duration": duration})).await;
        assert_eq!(v["instant"], expected, "{duration}");
    }
}

#[tokio::test]
async fn subtract_months_clamps_to_the_end_of_the_month() {
    let (_, v) = ok(json!({
        "operation": "subtract", "instant": "2026-03-31T10:00:00Z", "duration": "1 month"
    }))
    .await;
    assert_eq!(v["instant"], "2026-02-28T10:00:00+00:00");
    let (_, v) = ok(json!({
        "operation": "subtract", "instant": "2026-03-31T10:00:00+02:00", "duration": "PT2H"
    }))
    .await;
    assert_eq!(v["instant"], "2026-03-31T08:00:00+02:00");
}

#[tokio::test]
async fn add_errors_are_explained() {
    let msg =
        invalid(json!({"operation": "add", "instant": "2026-01-01", "duration": "a while"})).await;
    assert!(msg.contains("a while"), "{msg}");
    assert!(msg.contains("P1DT2H30M"), "{msg}");
    let msg =
        invalid(json!({"operation": "add", "instant": "9999-12-29", "duration": "P2D"})).await;
    assert!(msg.contains("P2D"), "{msg}");
}

// --- diff ---

#[tokio::test]
async fn diff_reports_seconds_span_and_iso() {
    let (text, v) = ok(json!({
        "operation": "diff", "start": "2026-01-01T00:00:00Z", "end": "2026-01-02T01:30:00Z"
    }))
    .await;
    assert_eq!(v["seconds"], 91_800);
    assert_eq!(v["span"], "1d 1h 30m");
    assert_eq!(v["iso"], "P1DT1H30M");
    assert_eq!(v["unit"], "days");
    assert_eq!(text, "1d 1h 30m (91800 s)");

    let (text, v) = ok(json!({
        "operation": "diff", "start": "2026-01-02T01:30:00Z", "end": "2026-01-01T00:00:00Z"
    }))
    .await;
    assert_eq!(v["seconds"], -91_800);
    assert_eq!(v["iso"], "-P1DT1H30M");
    assert_eq!(text, "-1d 1h 30m (-91800 s)");
}

#[tokio::test]
async fn diff_units_choose_the_largest_unit() {
    let base = json!({"operation": "diff", "start": "2024-01-15", "end": "2026-03-20T06:00"});
    let mut args = base.clone();
    args["unit"] = json!("years");
    let (_, v) = ok(args).await;
    assert_eq!(v["span"], "2y 2mo 5d 6h");
    let mut args = base.clone();
    args["unit"] = json!("hours");
    let (_, v) = ok(args).await;
    assert_eq!(v["span"], "19086h");
    assert_eq!(v["seconds"], 19_086 * 3600);
}

#[tokio::test]
async fn diff_counts_calendar_days_in_the_zone() {
    let args = json!({
        "operation": "diff", "start": "2026-03-28T12:00[Europe/London]",
        "end": "2026-03-29T12:00[Europe/London]"
    });
    let (_, v) = ok(args.clone()).await;
    assert_eq!(v["span"], "1d");
    assert_eq!(v["seconds"], 23 * 3600);
    let mut args = args;
    args["unit"] = json!("hours");
    let (_, v) = ok(args).await;
    assert_eq!(v["span"], "23h");
}

#[tokio::test]
async fn diff_reports_fractional_seconds() {
    let (_, v) = ok(json!({
        "operation": "diff", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:01.5Z"
    }))
    .await;
    assert_eq!(v["seconds"], 1.5);
}

#[tokio::test]
async fn now_is_accepted_as_an_instant_in_whole_seconds() {
    let (_, v) = ok(json!({"operation": "diff", "start": "now", "end": "now"})).await;
    let seconds = v["seconds"].as_i64().expect("whole seconds");
    assert!((0..=1).contains(&seconds), "{seconds}");
    let (_, v) = ok(json!({"operation": "add", "instant": "now", "duration": "1h"})).await;
    assert!(
        !v["instant"].as_str().expect("instant").contains('.'),
        "{v}"
    );
}

//! Tests of the `random` tool, called through its plugin as a door would.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};

use super::plugin;
use crate::util::test_support;

async fn call(args: Value) -> Result<ToolOutput, ToolError> {
    test_support::call(&plugin(), args).await
}

/// The text and the `values` of a successful call.
async fn ok(args: Value) -> (String, Vec<Value>) {
    let out = test_support::ok(&plugin(), args).await;
    assert!(!out.is_error);
    let structured = out.structured.clone().expect("structured output");
    let values = structured["values"].as_array().expect("values").clone();
    (out.text_joined(), values)
}

async fn invalid(args: Value) -> String {
    test_support::invalid(&plugin(), args).await
}

fn ints(values: &[Value]) -> Vec<i64> {
    values
        .iter()
        .map(|v| v.as_i64().expect("integer"))
        .collect()
}

fn strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect()
}

#[test]
fn plugin_has_one_tool_with_honest_annotations() {
    let p = plugin();
    assert_eq!(p.manifest().id, "system.random");
    let tools = p.tools();
    assert_eq!(tools.len(), 1);
    let spec = tools[0].spec();
    assert_eq!(spec.name, "random");
    assert_eq!(spec.group, "util");
    let a = spec.annotations;
    assert!(a.read_only);
    assert!(!a.destructive);
    assert!(!a.idempotent);
    assert!(!a.open_world);
}

#[test]
fn schema_compiles_and_validates() {
    test_support::check_schema(
        &plugin(),
        &[
            json!({"operation": "integer", "min": -5, "max": 5, "seed": 1}),
            json!({"operation": "pick", "items": [1, "a", null, {"x": 1}]}),
        ],
        &[
            json!({"operation": "dice"}),
            json!({"operation": "integer", "seed": -1}),
            json!({"operation": "uuid", "version": 5}),
            json!({"operation": "integer", "count": 10_001}),
            json!({"operation": "integer", "colour": "red"}),
        ],
    );
}

// --- integer ---

#[tokio::test]
async fn integers_stay_in_the_inclusive_range_and_reach_both_ends() {
    let (text, values) = ok(json!({
        "operation": "integer", "min": -3, "max": 3, "count": 10_000, "seed": 42
    }))
    .await;
    let values = ints(&values);
    assert_eq!(values.len(), 10_000);
    assert!(values.iter().all(|v| (-3..=3).contains(v)));
    let seen: BTreeSet<i64> = values.iter().copied().collect();
    assert_eq!(seen, (-3..=3).collect());
    assert_eq!(text.lines().count(), 10_000);
    assert_eq!(
        text.lines().next().map(|l| l.parse::<i64>().ok()),
        Some(Some(values[0]))
    );
}

#[tokio::test]
async fn integers_default_to_0_through_100() {
    let (_, values) = ok(json!({"operation": "integer", "count": 2_000, "seed": 3})).await;
    let values = ints(&values);
    assert!(values.iter().all(|v| (0..=100).contains(v)));
    assert!(values.contains(&0) && values.contains(&100));
}

#[tokio::test]
async fn integers_cover_the_full_i64_range() {
    let (_, values) = ok(json!({
        "operation": "integer", "min": i64::MIN, "max": i64::MAX, "count": 1_000, "seed": 9
    }))
    .await;
    let values = ints(&values);
    assert_eq!(values.len(), 1_000);
    assert!(values.iter().any(|v| *v < i64::MIN / 2));
    assert!(values.iter().any(|v| *v > i64::MAX / 2));

    let (_, values) =
        ok(json!({"operation": "integer", "min": i64::MAX, "max": i64::MAX, "count": 5})).await;
    assert_eq!(ints(&values), vec![i64::MAX; 5]);
    let (_, values) = ok(json!({
        "operation": "integer", "min": i64::MIN, "max": i64::MIN + 1, "count": 200, "seed": 1
    }))
    .await;
    let seen: BTreeSet<i64> = ints(&values).into_iter().collect();
    assert_eq!(seen, BTreeSet::from([i64::MIN, i64::MIN + 1]));
}

#[tokio::test]
async fn integer_errors_name_the_values() {
    let msg = invalid(json!({"operation": "integer", "min": 10, "max": 5})).await;
    assert!(msg.contains("`min` 10") && msg.contains("`max` 5"), "{msg}");
    let msg = invalid(json!({"operation": "integer", "min": 1.5})).await;
    assert!(msg.contains("1.5") && msg.contains("whole number"), "{msg}");
    let msg = invalid(json!({"operation": "integer", "max": u64::MAX})).await;
    assert!(msg.contains(&u64::MAX.to_string()), "{msg}");
    let msg = invalid(json!({"operation": "integer", "count": 10_001})).await;
    assert!(msg.contains("10001") && msg.contains("10000"), "{msg}");
    // A whole number written as a float is fine.
    let (_, values) = ok(json!({"operation": "integer", "min": 7.0, "max": 7.0})).await;
    assert_eq!(ints(&values), vec![7]);
}

// --- float ---

#[tokio::test]
async fn floats_stay_in_the_half_open_range() {
    let (_, values) = ok(json!({
        "operation": "float", "min": -2.5, "max": 2.5, "count": 10_000, "seed": 5
    }))
    .await;
    let values: Vec<f64> = values.iter().map(|v| v.as_f64().expect("float")).collect();
    assert!(values.iter().all(|v| (-2.5..2.5).contains(v)));
    assert!(values.iter().any(|v| *v < -2.0) && values.iter().any(|v| *v > 2.0));

    let (_, values) = ok(json!({"operation": "float", "count": 1_000, "seed": 5})).await;
    assert!(
        values
            .iter()
            .all(|v| (0.0..1.0).contains(&v.as_f64().expect("float")))
    );
}

#[tokio::test]
async fn float_errors_name_the_values() {
    let msg = invalid(json!({"operation": "float", "min": 2, "max": 2})).await;
    assert!(msg.contains("`min` 2") && msg.contains("`max` 2"), "{msg}");
    let msg = invalid(json!({"operation": "float", "min": -1.7e308, "max": 1.7e308})).await;
    assert!(msg.contains("wider than"), "{msg}");
}

// --- seeds ---

#[tokio::test]
async fn the_same_seed_gives_the_same_output() {
    let cases = [
        json!({"operation": "integer", "min": 1, "max": 1_000_000, "count": 20}),
        json!({"operation": "float", "count": 20}),
        json!({"operation": "uuid", "count": 5}),
        json!({"operation": "password", "count": 3}),
        json!({"operation": "pick", "items": (0..100).collect::<Vec<_>>(), "count": 10}),
        json!({"operation": "shuffle", "items": (0..100).collect::<Vec<_>>()}),
    ];
    for case in cases {
        let mut seeded = case.clone();
        seeded["seed"] = json!(12_345);
        let first = call(seeded.clone()).await.expect("first");
        let second = call(seeded.clone()).await.expect("second");
        assert_eq!(first.structured, second.structured, "{seeded}");
        assert_eq!(first.text_joined(), second.text_joined(), "{seeded}");
        let structured = first.structured.expect("structured");
        assert_eq!(structured["seed"], 12_345);

        let mut other = case.clone();
        other["seed"] = json!(12_346);
        let third = call(other).await.expect("third");
        assert_ne!(Some(structured), third.structured, "{case}");
    }
}

#[tokio::test]
async fn without_a_seed_output_varies_and_no_seed_is_reported() {
    let args = json!({"operation": "integer", "min": 0, "max": i64::MAX, "count": 4});
    let first = call(args.clone()).await.expect("first");
    let second = call(args).await.expect("second");
    assert_ne!(first.structured, second.structured);
    assert!(first.structured.expect("structured").get("seed").is_none());
}

// --- uuid ---

#[tokio::test]
async fn uuid_v4_has_the_version_and_variant_bits() {
    let (text, values) = ok(json!({"operation": "uuid", "count": 100})).await;
    let ids = strings(&values);
    assert_eq!(ids.len(), 100);
    for id in &ids {
        let parsed = uuid::Uuid::parse_str(id).expect("valid uuid");
        assert_eq!(parsed.get_version_num(), 4, "{id}");
        assert_eq!(&id[14..15], "4", "{id}");
        assert!("89ab".contains(&id[19..20]), "{id}");
    }
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 100);
    assert_eq!(text.lines().collect::<Vec<_>>(), ids);

    let (_, values) = ok(json!({"operation": "uuid", "seed": 1, "count": 10})).await;
    for id in strings(&values) {
        assert_eq!(&id[14..15], "4", "{id}");
    }
}

#[tokio::test]
async fn uuid_v7_is_time_ordered_and_carries_the_time() {
    let before = jiff::Timestamp::now().as_millisecond();
    let (_, values) = ok(json!({"operation": "uuid", "version": 7, "count": 50})).await;
    let after = jiff::Timestamp::now().as_millisecond();
    let ids = strings(&values);
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "v7 batch is in order");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 50);
    for id in &ids {
        let parsed = uuid::Uuid::parse_str(id).expect("valid uuid");
        assert_eq!(parsed.get_version_num(), 7, "{id}");
        assert_eq!(&id[14..15], "7", "{id}");
        let millis = i64::from_str_radix(&id.replace('-', "")[..12], 16).expect("hex");
        assert!(before <= millis && millis <= after, "{id}");
    }
}

#[tokio::test]
async fn seeded_uuid_v7_repeats_its_random_bits() {
    let args = json!({"operation": "uuid", "version": 7, "count": 5, "seed": 77});
    let first = strings(&ok(args.clone()).await.1);
    let second = strings(&ok(args).await.1);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(&a[14..15], "7");
        // Everything after the timestamp: version, rand_a, variant and rand_b.
        assert_eq!(a[14..], b[14..], "{a} vs {b}");
    }
}

#[tokio::test]
async fn uuid_rejects_other_versions() {
    let msg = invalid(json!({"operation": "uuid", "version": 5})).await;
    assert!(
        msg.contains("`version` 5") && msg.contains("4") && msg.contains("7"),
        "{msg}"
    );
}

// --- password ---

#[tokio::test]
async fn passwords_have_every_enabled_class() {
    let (_, values) = ok(json!({"operation": "password", "count": 500, "seed": 8})).await;
    for pw in strings(&values) {
        assert_eq!(pw.chars().count(), 20, "{pw}");
        assert!(pw.chars().any(|c| c.is_ascii_lowercase()), "{pw}");
        assert!(pw.chars().any(|c| c.is_ascii_uppercase()), "{pw}");
        assert!(pw.chars().any(|c| c.is_ascii_digit()), "{pw}");
        assert!(pw.chars().any(|c| super::ops::SYMBOLS.contains(c)), "{pw}");
        assert!(
            pw.chars()
                .all(|c| c.is_ascii_graphic() && !"'\"\\`".contains(c)),
            "{pw}"
        );
    }
    // The shortest password still holds all four classes.
    let (_, values) =
        ok(json!({"operation": "password", "length": 4, "count": 200, "seed": 2})).await;
    for pw in strings(&values) {
        assert_eq!(pw.len(), 4);
        assert!(pw.chars().any(|c| c.is_ascii_lowercase()), "{pw}");
        assert!(pw.chars().any(|c| c.is_ascii_uppercase()), "{pw}");
        assert!(pw.chars().any(|c| c.is_ascii_digit()), "{pw}");
        assert!(pw.chars().any(|c| !c.is_ascii_alphanumeric()), "{pw}");
    }
}

#[tokio::test]
async fn password_classes_can_be_turned_off_and_ambiguous_characters_dropped() {
    let (_, values) = ok(json!({
        "operation": "password", "length": 64, "count": 20, "lowercase": false,
        "uppercase": false, "symbols": false
    }))
    .await;
    for pw in strings(&values) {
        assert!(pw.chars().all(|c| c.is_ascii_digit()), "{pw}");
        assert_eq!(pw.len(), 64);
    }
    let (_, values) = ok(json!({
        "operation": "password", "length": 200, "count": 50, "exclude_ambiguous": true, "seed": 4
    }))
    .await;
    for pw in strings(&values) {
        assert!(!pw.chars().any(|c| "0O1lI|".contains(c)), "{pw}");
    }
}

#[tokio::test]
async fn password_errors_name_the_problem() {
    let msg = invalid(json!({
        "operation": "password", "lowercase": false, "uppercase": false, "digits": false,
        "symbols": false
    }))
    .await;
    assert!(msg.contains("every character class is off"), "{msg}");
    let msg = invalid(json!({"operation": "password", "length": 3})).await;
    assert!(
        msg.contains("`length` 3") && msg.contains("4 to 1024"),
        "{msg}"
    );
    let msg = invalid(json!({"operation": "password", "length": 1025})).await;
    assert!(msg.contains("`length` 1025"), "{msg}");
    let msg = invalid(json!({"operation": "password", "length": 1024, "count": 10_000})).await;
    assert!(msg.contains("10240000") && msg.contains("limit"), "{msg}");
}

// --- pick ---

#[tokio::test]
async fn pick_unique_never_repeats_an_item() {
    let items: Vec<i64> = (0..100).collect();
    let (_, values) =
        ok(json!({"operation": "pick", "items": items, "count": 100, "seed": 6})).await;
    let picked = ints(&values);
    assert_eq!(
        picked.iter().copied().collect::<BTreeSet<_>>(),
        items.iter().copied().collect()
    );
    assert_ne!(picked, items, "a full pick comes back in random order");

    let (_, values) = ok(json!({"operation": "pick", "items": items, "count": 30})).await;
    let picked = ints(&values);
    assert_eq!(picked.iter().collect::<BTreeSet<_>>().len(), 30);
    assert!(picked.iter().all(|v| (0..100).contains(v)));
}

#[tokio::test]
async fn pick_defaults_to_one_and_keeps_json_values() {
    let (text, values) =
        ok(json!({"operation": "pick", "items": [{"name": "a"}], "seed": 1})).await;
    assert_eq!(values, vec![json!({"name": "a"})]);
    assert_eq!(text, r#"{"name":"a"}"#);
    let (text, values) = ok(json!({"operation": "pick", "items": ["only"]})).await;
    assert_eq!(values, vec![json!("only")]);
    assert_eq!(text, "only");
}

#[tokio::test]
async fn pick_with_repeats_may_exceed_the_item_count() {
    let (_, values) = ok(json!({
        "operation": "pick", "items": ["x", "y"], "count": 50, "unique": false, "seed": 11
    }))
    .await;
    let picked = strings(&values);
    assert_eq!(picked.len(), 50);
    assert!(picked.iter().any(|v| v == "x") && picked.iter().any(|v| v == "y"));
}

#[tokio::test]
async fn pick_errors_name_the_problem() {
    let msg = invalid(json!({"operation": "pick", "items": [1, 2, 3], "count": 4})).await;
    assert!(
        msg.contains("`count` 4") && msg.contains("3 items") && msg.contains("unique"),
        "{msg}"
    );
    let msg = invalid(json!({"operation": "pick", "items": []})).await;
    assert!(msg.contains("`items` is empty"), "{msg}");
    let msg = invalid(json!({"operation": "pick"})).await;
    assert!(msg.contains("`items`"), "{msg}");
    let many: Vec<i64> = (0..10_001).collect();
    let msg = invalid(json!({"operation": "shuffle", "items": many})).await;
    assert!(msg.contains("10001") && msg.contains("10000"), "{msg}");
    let big = "x".repeat(600_000);
    let msg = invalid(json!({"operation": "shuffle", "items": [big.clone(), big]})).await;
    assert!(msg.contains("bytes"), "{msg}");
}

// --- shuffle ---

#[tokio::test]
async fn shuffle_returns_the_same_items_in_another_order() {
    let items: Vec<i64> = (1..=50).collect();
    let (text, values) = ok(json!({"operation": "shuffle", "items": items, "seed": 21})).await;
    let shuffled = ints(&values);
    let mut sorted = shuffled.clone();
    sorted.sort();
    assert_eq!(sorted, items);
    assert_ne!(shuffled, items);
    assert_eq!(text.lines().count(), 50);

    let (text, values) = ok(json!({"operation": "shuffle", "items": []})).await;
    assert!(values.is_empty());
    assert_eq!(text, "");

    let (text, _) = ok(json!({"operation": "shuffle", "items": ["two\nlines"]})).await;
    assert_eq!(text, r#""two\nlines""#);
}

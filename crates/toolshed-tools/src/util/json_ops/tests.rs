use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolshed_core::{ErrorKind, ToolError, ToolOutput};

use super::plugin;
use crate::util::test_support;

async fn ok(args: Value) -> ToolOutput {
    test_support::ok(&plugin(), args).await
}

async fn err(args: Value) -> ToolError {
    test_support::err(&plugin(), args).await
}

/// Applies an RFC 6902 patch made of add/remove/replace, strictly: every path must exist
/// (or, for add, its parent must), as a conforming implementation would require.
fn apply_patch(mut doc: Value, patch: &[Value]) -> Value {
    fn unescape(segment: &str) -> String {
        segment.replace("~1", "/").replace("~0", "~")
    }
    for op in patch {
        let path = op["path"].as_str().unwrap();
        if path.is_empty() {
            assert_eq!(op["op"], "replace", "{op}");
            doc = op["value"].clone();
            continue;
        }
        let (parent_path, last) = path.rsplit_once('/').unwrap();
        let last = unescape(last);
        let parent = doc
            .pointer_mut(parent_path)
            .unwrap_or_else(|| panic!("{op}"));
        match (op["op"].as_str().unwrap(), parent) {
            ("add", Value::Object(map)) => {
                assert!(!map.contains_key(&last), "{op}");
                map.insert(last, op["value"].clone());
            }
            ("add", Value::Array(items)) => {
                let i: usize = last.parse().unwrap();
                assert!(i <= items.len(), "{op}");
                items.insert(i, op["value"].clone());
            }
            ("remove", Value::Object(map)) => {
                assert!(map.shift_remove(&last).is_some(), "{op}");
            }
            ("remove", Value::Array(items)) => {
                let i: usize = last.parse().unwrap();
                assert!(i < items.len(), "{op}");
                items.remove(i);
            }
            ("replace", Value::Object(map)) => {
                *map.get_mut(&last).unwrap_or_else(|| panic!("{op}")) = op["value"].clone();
            }
            ("replace", Value::Array(items)) => {
                let i: usize = last.parse().unwrap();
                items[i] = op["value"].clone();
            }
            (kind, _) => panic!("unexpected {kind} in {op}"),
        }
    }
    doc
}

// ---- parse ----

#[tokio::test]
async fn parse_pretty_prints_with_indent_and_sorting() {
    let text = r#"{"b": 1, "a": [1, {"d": null, "c": true}]}"#;
    let out = ok(json!({"operation": "parse", "text": text})).await;
    assert_eq!(
        out.text_joined(),
        "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    {\n      \"d\": null,\n      \"c\": true\n    }\n  ]\n}"
    );
    assert_eq!(out.structured.unwrap()["type"], "object");

    let out = ok(json!({"operation": "parse", "text": text, "sort_keys": true, "indent": 0})).await;
    assert_eq!(out.text_joined(), r#"{"a":[1,{"c":true,"d":null}],"b":1}"#);

    let out = ok(json!({"operation": "parse", "text": "[1]", "indent": 4})).await;
    assert_eq!(out.text_joined(), "[\n    1\n]");

    let out = ok(json!({"operation": "parse", "text": " \"just a string\" "})).await;
    assert_eq!(out.text_joined(), "\"just a string\"");
    assert_eq!(out.structured.unwrap()["type"], "string");
}

#[tokio::test]
async fn parse_syntax_error_shows_line_column_and_caret() {
    let e = err(json!({"operation": "parse", "text": "{\"a\": 1,\n  \"b\": 2 \"c\": 3}"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /text"), "{msg}");
    assert!(
        msg.contains(
            "expected `,` or `}` at line 2, column 10:\n      \"b\": 2 \"c\": 3}\n             ^\n"
        ),
        "{msg}"
    );

    let e = err(json!({"operation": "parse", "text": "{a: 1}"})).await;
    let msg = e.to_string();
    assert!(
        msg.contains("key must be a string (JSON keys need double quotes)"),
        "{msg}"
    );
    assert!(
        msg.contains("line 1, column 2:\n    {a: 1}\n     ^"),
        "{msg}"
    );

    let e = err(json!({"operation": "parse", "text": "[1, 2,]"})).await;
    assert!(e.to_string().contains("trailing comma"), "{e}");
}

#[tokio::test]
async fn parse_error_excerpt_of_a_long_line_is_cut_around_the_caret() {
    let text = format!("[{}x]", "1,".repeat(100));
    let e = err(json!({"operation": "parse", "text": text})).await;
    let msg = e.to_string();
    assert!(msg.contains("line 1, column 202"), "{msg}");
    // 40 characters either side of the caret, with ellipses where the line was cut.
    let expected = format!("    …{}x]\n    {}^", "1,".repeat(20), " ".repeat(41));
    assert!(msg.contains(&expected), "{msg}");
}

#[tokio::test]
async fn parse_needs_text_and_checks_indent() {
    let e = err(json!({"operation": "parse"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("needs `text`"), "{e}");

    let e = err(json!({"operation": "parse", "text": "1", "indent": 9})).await;
    let msg = e.to_string();
    assert!(msg.contains("at /indent"), "{msg}");
    assert!(msg.contains("is 9"), "{msg}");
}

#[tokio::test]
async fn parse_refuses_too_deep_and_too_big_text() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let e = err(json!({"operation": "parse", "text": deep})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("nesting deeper than 128"), "{e}");

    let big = format!("\"{}\"", "a".repeat(1024 * 1024));
    let e = err(json!({"operation": "parse", "text": big})).await;
    let msg = e.to_string();
    assert!(msg.contains("1048578 bytes"), "{msg}");
    assert!(msg.contains("limit is 1048576"), "{msg}");
}

#[tokio::test]
async fn parse_refuses_output_that_indentation_would_blow_up() {
    // 100 levels deep, then 150,000 zeros: every zero is indented 101 levels.
    let text = format!(
        "{}[{}0]{}",
        "[".repeat(100),
        "0,".repeat(150_000),
        "]".repeat(100)
    );
    let e = err(json!({"operation": "parse", "text": text, "indent": 8})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /indent"), "{msg}");
    assert!(msg.contains("would exceed 8388608 bytes"), "{msg}");
    // Compact output of the same document is fine.
    ok(json!({"operation": "parse", "text": text, "indent": 0})).await;
}

// ---- validate ----

#[tokio::test]
async fn validate_reports_every_error() {
    let schema = json!({
        "type": "object",
        "required": ["id"],
        "properties": {
            "name": {"type": "string"},
            "age": {"minimum": 0},
            "tags": {"items": {"type": "string"}}
        }
    });
    let out = ok(json!({
        "operation": "validate",
        "document": {"name": 5, "age": -1, "tags": ["ok", 1]},
        "schema": schema
    }))
    .await;
    assert_eq!(
        out.structured,
        Some(json!({
            "valid": false,
            "error_count": 4,
            "errors": [
                {"instance_path": "", "schema_path": "/required", "message": "\"id\" is a required property"},
                {"instance_path": "/name", "schema_path": "/properties/name/type", "message": "5 is not of type \"string\""},
                {"instance_path": "/age", "schema_path": "/properties/age/minimum", "message": "-1 is less than the minimum of 0"},
                {"instance_path": "/tags/1", "schema_path": "/properties/tags/items/type", "message": "1 is not of type \"string\""},
            ],
            "truncated": false,
        }))
    );
    let text = out.text_joined();
    assert!(
        text.starts_with("Invalid: 4 errors.\n- at (root) (schema /required)"),
        "{text}"
    );
}

#[tokio::test]
async fn validate_valid_document_from_text_or_null_value() {
    let out = ok(json!({
        "operation": "validate", "text": "{\"id\": 1}", "schema": {"required": ["id"]}
    }))
    .await;
    assert_eq!(out.text_joined(), "Valid: the document matches the schema.");
    assert_eq!(out.structured.unwrap()["valid"], true);

    // `null` is a document, not a missing one.
    let out =
        ok(json!({"operation": "validate", "document": null, "schema": {"type": "null"}})).await;
    assert_eq!(out.structured.unwrap()["valid"], true);
    let out = ok(json!({"operation": "validate", "document": null, "schema": false})).await;
    assert_eq!(out.structured.unwrap()["valid"], false);
}

#[tokio::test]
async fn validate_invalid_schema_is_an_error_naming_the_problem() {
    let e = err(json!({"operation": "validate", "document": 1, "schema": {"type": "nope"}})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /schema"), "{msg}");
    assert!(msg.contains("\"nope\""), "{msg}");
    assert!(msg.contains("(at /type in the schema)"), "{msg}");

    let e = err(json!({"operation": "validate", "document": 1, "schema": {"pattern": "(["}})).await;
    assert!(e.to_string().contains("is not a \"regex\""), "{e}");

    let e = err(json!({
        "operation": "validate", "document": 1, "schema": {"$ref": "#/$defs/missing"}
    }))
    .await;
    assert!(e.to_string().contains("points to nothing"), "{e}");
}

#[tokio::test]
async fn validate_remote_ref_fails_fast_without_fetching() {
    let started = Instant::now();
    let e = err(json!({
        "operation": "validate",
        "document": 1,
        // A routable address that would hang if anything tried to connect.
        "schema": {"$ref": "http://10.255.255.1/schema.json"}
    }))
    .await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let msg = e.to_string();
    assert!(msg.contains("http://10.255.255.1/schema.json"), "{msg}");
    assert!(msg.contains("not fetched"), "{msg}");
    assert!(msg.contains("$defs"), "{msg}");
}

#[tokio::test]
async fn validate_needs_exactly_one_document() {
    let e = err(json!({"operation": "validate", "schema": {}})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("needs `document`"), "{e}");

    let e = err(json!({"operation": "validate", "schema": {}, "document": 1, "text": "1"})).await;
    assert!(e.to_string().contains("both `document` and `text`"), "{e}");

    let e = err(json!({"operation": "validate", "document": 1})).await;
    assert!(e.to_string().contains("needs `schema`"), "{e}");

    let e = err(json!({"operation": "validate", "schema": {}, "text": "{"})).await;
    assert!(e.to_string().contains("`text` is not valid JSON"), "{e}");
}

// ---- query ----

fn store() -> Value {
    json!({
        "store": {
            "book": [
                {"title": "Sayings", "price": 8.95, "id": 1},
                {"title": "Sword", "price": 12.99, "id": 2},
                {"title": "Moby Dick", "price": 8.99, "id": 3}
            ],
            "bicycle": {"color": "red", "price": 399, "id": 4}
        }
    })
}

#[tokio::test]
async fn query_filter_returns_values_and_locations() {
    let out = ok(json!({
        "operation": "query", "document": store(), "path": "$.store.book[?@.price < 10].title"
    }))
    .await;
    assert_eq!(
        out.text_joined(),
        "2 matches:\n$['store']['book'][0]['title'] = \"Sayings\"\n\
         $['store']['book'][2]['title'] = \"Moby Dick\""
    );
    assert_eq!(
        out.structured,
        Some(json!({
            "path": "$.store.book[?@.price < 10].title",
            "count": 2,
            "matches": [
                {"path": "$['store']['book'][0]['title']", "pointer": "/store/book/0/title", "value": "Sayings"},
                {"path": "$['store']['book'][2]['title']", "pointer": "/store/book/2/title", "value": "Moby Dick"},
            ],
            "truncated": false,
        }))
    );
}

#[tokio::test]
async fn query_descendants_and_text_input() {
    let out = ok(json!({
        "operation": "query", "text": store().to_string(), "path": "$..id"
    }))
    .await;
    let s = out.structured.clone().unwrap();
    assert_eq!(s["count"], 4);
    let mut ids: Vec<i64> = s["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["value"].as_i64().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, [1, 2, 3, 4]);

    let out = ok(json!({"operation": "query", "document": store(), "path": "$.nothing"})).await;
    assert_eq!(out.text_joined(), "No matches for `$.nothing`.");
}

#[tokio::test]
async fn query_bad_path_names_the_position() {
    let e = err(json!({"operation": "query", "document": {}, "path": "$.a[?@ <"})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /path"), "{msg}");
    assert!(msg.contains("expected closing ']' at position 8"), "{msg}");
    assert!(msg.contains("    $.a[?@ <\n           ^"), "{msg}");

    let e = err(json!({"operation": "query", "document": {}, "path": "store.book"})).await;
    let msg = e.to_string();
    assert!(msg.contains("at position 1"), "{msg}");
    assert!(msg.contains("starts with `$`"), "{msg}");
}

#[tokio::test]
async fn query_caps_output_of_repeated_subtrees() {
    // `$..*` repeats each subtree once per ancestor: 120 levels of a 10 KiB string.
    let mut doc = json!("x".repeat(10 * 1024));
    for _ in 0..120 {
        doc = json!({"a": doc});
    }
    let out = ok(json!({"operation": "query", "document": doc, "path": "$..*"})).await;
    let s = out.structured.clone().unwrap();
    assert_eq!(s["count"], 120);
    assert_eq!(s["truncated"], true);
    assert!(s["matches"].as_array().unwrap().len() < 120);
    assert!(out.content.len() == 1 && out.text_joined().contains("narrow the path"));
}

// ---- diff ----

#[tokio::test]
async fn diff_nested_example_gives_exact_patch_that_applies() {
    let left = json!({
        "name": "app",
        "version": 1,
        "deps": ["a", "b", "c"],
        "paths": {"src/main": {"size~bytes": 10, "mode": "rw"}},
        "old": true,
        "list": [1]
    });
    let right = json!({
        "name": "app",
        "version": 2,
        "deps": ["a", "x"],
        "paths": {"src/main": {"size~bytes": 12, "mode": "rw"}, "a/b~c": {}},
        "list": [1, {"k": null}, 3],
        "new": [null]
    });
    let out = ok(json!({"operation": "diff", "left": left, "right": right})).await;
    let s = out.structured.clone().unwrap();
    let changes = s["changes"].as_array().unwrap().clone();
    assert_eq!(
        changes,
        vec![
            json!({"op": "replace", "path": "/version", "value": 2}),
            json!({"op": "replace", "path": "/deps/1", "value": "x"}),
            json!({"op": "remove", "path": "/deps/2"}),
            json!({"op": "replace", "path": "/paths/src~1main/size~0bytes", "value": 12}),
            json!({"op": "add", "path": "/paths/a~1b~0c", "value": {}}),
            json!({"op": "remove", "path": "/old"}),
            json!({"op": "add", "path": "/list/1", "value": {"k": null}}),
            json!({"op": "add", "path": "/list/2", "value": 3}),
            json!({"op": "add", "path": "/new", "value": [null]}),
        ]
    );
    assert_eq!(s["equal"], false);
    assert_eq!(s["count"], 9);
    assert_eq!(apply_patch(left, &changes), right);
    let text = out.text_joined();
    assert!(
        text.starts_with(
            "Different: 9 changes as a JSON Patch:\n{\"op\":\"replace\",\"path\":\"/version\",\"value\":2}\n"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn diff_patches_apply_for_assorted_pairs() {
    let pairs = [
        (json!([1, 2, 3, 4, 5]), json!([5])),
        (json!([]), json!([[], {}, null])),
        (
            json!({"a": {"b": {"c": [1, 2]}}}),
            json!({"a": {"b": {"c": [2]}}}),
        ),
        (json!({"a": 1}), json!([1])),
        (json!(null), json!({"x": 1})),
        (json!({"": 1, "~": 2, "/": 3}), json!({"": 2, "~/": 3})),
        (json!("text"), json!("text!")),
    ];
    for (left, right) in pairs {
        let out = ok(json!({"operation": "diff", "left": left, "right": right})).await;
        let s = out.structured.clone().unwrap();
        assert_eq!(s["equal"], false, "{left} vs {right}");
        let changes = s["changes"].as_array().unwrap();
        assert_eq!(
            apply_patch(left.clone(), changes),
            right,
            "{left} → {right}: {changes:?}"
        );
    }
}

#[tokio::test]
async fn diff_root_replace_and_equal_values() {
    let out = ok(json!({"operation": "diff", "left": {"a": 1}, "right": [1]})).await;
    assert_eq!(
        out.structured.unwrap()["changes"],
        json!([{"op": "replace", "path": "", "value": [1]}])
    );

    // Numbers compare by value, objects regardless of key order.
    let out = ok(json!({
        "operation": "diff",
        "left": {"a": 1, "b": [1.5, {"c": 2}]},
        "right": {"b": [1.5, {"c": 2.0}], "a": 1.0}
    }))
    .await;
    assert_eq!(out.text_joined(), "Equal: no differences.");
    assert_eq!(
        out.structured,
        Some(json!({"equal": true, "count": 0, "changes": [], "truncated": false}))
    );

    let out = ok(json!({"operation": "diff", "left": null, "right": null})).await;
    assert_eq!(out.structured.unwrap()["equal"], true);
}

#[tokio::test]
async fn diff_caps_the_number_of_changes() {
    let left: Vec<u32> = (0..1500).collect();
    let right: Vec<u32> = (1..1501).collect();
    let out = ok(json!({"operation": "diff", "left": left, "right": right})).await;
    let s = out.structured.clone().unwrap();
    assert_eq!(s["count"], 1000);
    assert_eq!(s["truncated"], true);
    assert_eq!(s["equal"], false);
    assert_eq!(
        s["changes"][999],
        json!({"op": "replace", "path": "/999", "value": 1000})
    );
    assert!(
        out.text_joined()
            .starts_with("Different: the first 1000 changes")
    );
}

#[tokio::test]
async fn diff_needs_both_sides() {
    let e = err(json!({"operation": "diff", "left": 1})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert!(e.to_string().contains("needs `right`"), "{e}");
}

// ---- limits and arguments ----

#[tokio::test]
async fn values_over_the_limits_are_refused() {
    let big = json!({"s": "a".repeat(1024 * 1024)});
    let e = err(json!({"operation": "diff", "left": big, "right": 1})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /left"), "{msg}");
    assert!(msg.contains("1048584 bytes"), "{msg}");

    let mut deep = json!(1);
    for _ in 0..130 {
        deep = json!([deep]);
    }
    let e = err(json!({"operation": "query", "document": deep, "path": "$"})).await;
    let msg = e.to_string();
    assert!(msg.contains("at /document"), "{msg}");
    assert!(msg.contains("130 levels deep; the limit is 128"), "{msg}");
}

#[tokio::test]
async fn field_of_another_operation_is_refused() {
    let e = err(json!({"operation": "diff", "left": 1, "right": 2, "document": 3})).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    let msg = e.to_string();
    assert!(msg.contains("at /document"), "{msg}");
    assert!(msg.contains("does not apply to operation `diff`"), "{msg}");
}

#[tokio::test]
async fn schema_compiles_and_accepts_examples() {
    test_support::check_schema(
        &plugin(),
        &[
            json!({"operation": "parse", "text": "{}", "indent": 4}),
            json!({"operation": "diff", "left": null, "right": [1]}),
            json!({"operation": "validate", "document": 1, "schema": true}),
        ],
        &[
            json!({"operation": "parse", "text": "{}", "indent": 9}),
            json!({"operation": "merge"}),
            json!({"operation": "parse", "text": 1}),
            json!({"operation": "parse", "extra": 1}),
        ],
    );
}

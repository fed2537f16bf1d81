use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};

use super::plugin;
use crate::util::test_support;

async fn call(args: Value) -> Result<ToolOutput, ToolError> {
    test_support::call(&plugin(), args).await
}

/// The structured result of a call that must succeed.
async fn ok(args: Value) -> Value {
    test_support::ok(&plugin(), args)
        .await
        .structured
        .unwrap_or(Value::Null)
}

/// The message of the invalid-arguments error a call must produce.
async fn invalid(args: Value) -> String {
    test_support::invalid(&plugin(), args).await
}

async fn case(text: &str, to: &str) -> String {
    let out = ok(json!({"operation": "case", "text": text, "to": to})).await;
    out["text"].as_str().unwrap().to_string()
}

async fn slug(args: Value) -> String {
    let mut args = args;
    args["operation"] = json!("slugify");
    ok(args).await["text"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn plugin_has_a_pure_text_tool_and_two_that_ask_a_model() {
    let p = plugin();
    assert_eq!(p.manifest().id, "system.text");
    let tools = p.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names, ["text", "text_summarize", "text_translate"]);
    let spec = tools[0].spec();
    assert_eq!(spec.group, "util");
    assert_eq!(spec.annotations, toolshed_core::ToolAnnotations::PURE);
    for model in &tools[1..] {
        let a = model.spec().annotations;
        assert!(a.read_only && a.open_world && !a.destructive, "{a:?}");
    }
}

#[tokio::test]
async fn count_measures_chars_words_lines_bytes() {
    let out = call(json!({"operation": "count", "text": "héllo wörld\nsecond line\n"}))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"chars": 24, "words": 4, "lines": 2, "bytes": 26}))
    );
    assert_eq!(
        out.text_joined(),
        "chars: 24\nwords: 4\nlines: 2\nbytes: 26"
    );
    let empty = ok(json!({"operation": "count", "text": ""})).await;
    assert_eq!(
        empty,
        json!({"chars": 0, "words": 0, "lines": 0, "bytes": 0})
    );
    let one = ok(json!({"operation": "count", "text": "no newline"})).await;
    assert_eq!(one["lines"], 1);
    let blank = ok(json!({"operation": "count", "text": "a\n\nb\r\n"})).await;
    assert_eq!(blank["lines"], 3);
    let emoji = ok(json!({"operation": "count", "text": "👍🏽"})).await;
    assert_eq!(
        (emoji["chars"].clone(), emoji["bytes"].clone()),
        (json!(2), json!(8))
    );
}

#[tokio::test]
async fn case_identifier_styles_split_words() {
    assert_eq!(case("HTTPServer error", "snake").await, "http_server_error");
    assert_eq!(
        case("parseHTTPResponse", "kebab").await,
        "parse-http-response"
    );
    assert_eq!(
        case("hello world-foo_bar.baz", "camel").await,
        "helloWorldFooBarBaz"
    );
    assert_eq!(case("user id", "pascal").await, "UserId");
    assert_eq!(case("maxRetryCount", "constant").await, "MAX_RETRY_COUNT");
    assert_eq!(case("HTML5Parser", "snake").await, "html5_parser");
    assert_eq!(case("base64Encode v2", "snake").await, "base64_encode_v2");
    assert_eq!(case("  Hello, World!  ", "kebab").await, "hello-world");
    assert_eq!(case("don't stop", "snake").await, "dont_stop");
    assert_eq!(case("XMLHttpRequest", "camel").await, "xmlHttpRequest");
    assert_eq!(
        case("already_snake_case", "snake").await,
        "already_snake_case"
    );
    assert_eq!(case("Öl Straße", "constant").await, "ÖL_STRASSE");
    assert_eq!(case("", "camel").await, "");
    assert_eq!(case("---", "snake").await, "");
}

#[tokio::test]
async fn case_upper_lower_title_sentence() {
    assert_eq!(case("Straße ok", "upper").await, "STRASSE OK");
    assert_eq!(case("ÀB C", "lower").await, "àb c");
    assert_eq!(
        case("the QUICK brown-fox's tale, part 2", "title").await,
        "The Quick Brown-Fox's Tale, Part 2"
    );
    assert_eq!(
        case(
            "hello WORLD. how are you? fine! pi is 3.14 \"yes.\" ok",
            "sentence"
        )
        .await,
        "Hello world. How are you? Fine! Pi is 3.14 \"yes.\" Ok"
    );
    // A lone identifier is split into words first.
    assert_eq!(
        case("parseHTTPResponse", "title").await,
        "Parse Http Response"
    );
    assert_eq!(case("user_id", "sentence").await, "User id");
    assert_eq!(case("e.g.", "title").await, "E.G.");
}

#[tokio::test]
async fn case_requires_to() {
    let msg = invalid(json!({"operation": "case", "text": "x"})).await;
    assert!(msg.contains("operation `case` needs `to`"), "{msg}");
    let msg = invalid(json!({"operation": "case", "text": "x", "to": "shouty"})).await;
    assert!(msg.contains("shouty"), "{msg}");
}

#[tokio::test]
async fn slugify_folds_accents_and_collapses_separators() {
    assert_eq!(
        slug(json!({"text": "Crème Brûlée: the RECIPE!"})).await,
        "creme-brulee-the-recipe"
    );
    assert_eq!(
        slug(json!({"text": "Straße über Ærø"})).await,
        "strasse-uber-aero"
    );
    assert_eq!(
        slug(json!({"text": "  --Hello___World--  "})).await,
        "hello-world"
    );
    assert_eq!(slug(json!({"text": "don't panic"})).await, "dont-panic");
    assert_eq!(
        slug(json!({"text": "Cafe\u{301} au lait"})).await,
        "cafe-au-lait"
    );
    assert_eq!(
        slug(json!({"text": "日本 travel guide 2024"})).await,
        "travel-guide-2024"
    );
    assert_eq!(
        slug(json!({"text": "Hello World", "separator": "_"})).await,
        "hello_world"
    );
    assert_eq!(
        slug(json!({"text": "one two three four", "max_length": 13})).await,
        "one-two-three"
    );
    assert_eq!(
        slug(json!({"text": "one two three four", "max_length": 12})).await,
        "one-two"
    );
    assert_eq!(
        slug(json!({"text": "supercalifragilistic word", "max_length": 5})).await,
        "super"
    );
    let out = call(json!({"operation": "slugify", "text": "日本"}))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"text": "", "truncated": false}))
    );
    assert!(out.text_joined().contains("empty slug"));
}

#[tokio::test]
async fn slugify_rejects_bad_options() {
    let msg = invalid(json!({"operation": "slugify", "text": "a", "max_length": 0})).await;
    assert!(msg.contains("`max_length` is 0"), "{msg}");
    let msg =
        invalid(json!({"operation": "slugify", "text": "a", "separator": "x".repeat(17)})).await;
    assert!(msg.contains("17 characters, over the limit of 16"), "{msg}");
}

#[tokio::test]
async fn truncate_by_chars_counts_the_ellipsis() {
    let out = ok(json!({"operation": "truncate", "text": "Hello, world!", "max_length": 8})).await;
    assert_eq!(
        out,
        json!({"text": "Hello,…", "truncated": true, "length": 7, "original_length": 13,
               "unit": "chars"})
    );
    let out = ok(
        json!({"operation": "truncate", "text": "Hello world", "max_length": 7,
                        "ellipsis": "..."}),
    )
    .await;
    assert_eq!(out["text"], "Hell...");
    let out = ok(json!({"operation": "truncate", "text": "short", "max_length": 5})).await;
    assert_eq!(
        (out["text"].clone(), out["truncated"].clone()),
        (json!("short"), json!(false))
    );
    let out = ok(
        json!({"operation": "truncate", "text": "日本語のテキスト", "max_length": 4,
                        "ellipsis": ""}),
    )
    .await;
    assert_eq!(out["text"], "日本語の");
    // A combining accent is never separated from its letter.
    let out = ok(json!({"operation": "truncate", "text": "cafe\u{301}s", "max_length": 5})).await;
    assert_eq!(out["text"], "caf…");
    // Nor is a family emoji split at a joiner.
    let family = "ab👨\u{200D}👩\u{200D}👧xyz";
    let out = ok(json!({"operation": "truncate", "text": family, "max_length": 6})).await;
    assert_eq!(out["text"], "ab…");
}

#[tokio::test]
async fn truncate_by_words_keeps_spacing() {
    let out = ok(
        json!({"operation": "truncate", "text": "the  quick brown\nfox jumps",
                        "max_length": 3, "unit": "words"}),
    )
    .await;
    assert_eq!(
        out,
        json!({"text": "the  quick brown…", "truncated": true, "length": 3,
               "original_length": 5, "unit": "words"})
    );
    let out = ok(
        json!({"operation": "truncate", "text": "two words", "max_length": 2,
                        "unit": "words"}),
    )
    .await;
    assert_eq!(out["truncated"], false);
}

#[tokio::test]
async fn truncate_errors() {
    let msg = invalid(json!({"operation": "truncate", "text": "abc"})).await;
    assert!(
        msg.contains("operation `truncate` needs `max_length`"),
        "{msg}"
    );
    let msg = invalid(
        json!({"operation": "truncate", "text": "abcdef", "max_length": 2,
                             "ellipsis": "..."}),
    )
    .await;
    assert!(
        msg.contains("the ellipsis `...` is 3 characters, more than max_length 2"),
        "{msg}"
    );
    let msg = invalid(json!({"operation": "truncate", "text": "abc", "max_length": 0})).await;
    assert!(msg.contains("`max_length` is 0"), "{msg}");
}

#[tokio::test]
async fn regex_extract_returns_offsets_and_groups() {
    let out = call(
        json!({"operation": "regex_extract", "text": "on 2024-01-05 and 2025-12-31",
                          "pattern": r"(?P<year>\d{4})-(\d{2})-(\d{2})"}),
    )
    .await
    .unwrap();
    let s = out.structured.unwrap();
    assert_eq!(s["count"], 2);
    assert_eq!(s["truncated"], false);
    assert_eq!(
        s["matches"][0],
        json!({"text": "2024-01-05", "start": 3, "end": 13,
               "groups": [{"text": "2024", "start": 3, "end": 7},
                          {"text": "01", "start": 8, "end": 10},
                          {"text": "05", "start": 11, "end": 13}],
               "named": {"year": "2024"}})
    );
    assert_eq!(out.content.len(), 1, "one text block expected");
    let text = match &out.content[0] {
        toolshed_core::Content::Text { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        text.starts_with("2 matches:\n1. \"2024-01-05\" at bytes 3..13; year=\"2024\", 2=\"01\""),
        "{text}"
    );
}

#[tokio::test]
async fn regex_extract_group_flags_and_limits() {
    let base = json!({"operation": "regex_extract", "text": "Apple apple APPLE pear",
                      "pattern": "(a)?pple", "flags": "i"});
    let all = ok(base.clone()).await;
    assert_eq!(all["count"], 3);
    let mut by_group = base.clone();
    by_group["group"] = json!(1);
    let out = ok(by_group).await;
    // Case-insensitively, group 1 takes part in all three matches.
    assert_eq!(out["count"], 3);
    assert_eq!(
        out["matches"][1],
        json!({"text": "a", "start": 6, "end": 7})
    );

    let out = ok(json!({"operation": "regex_extract", "text": "x=1 y= z=3",
                        "pattern": r"\w=(?P<v>\d)?", "group": "v"}))
    .await;
    assert_eq!(out["count"], 2);
    assert_eq!(out["matches"][1]["text"], "3");
    let out = ok(
        json!({"operation": "regex_extract", "text": "x=1", "pattern": r"\w=(\d)",
                        "group": "1"}),
    )
    .await;
    assert_eq!(out["matches"][0]["text"], "1");

    let out = ok(
        json!({"operation": "regex_extract", "text": "a1b2c3", "pattern": r"\d",
                        "max_matches": 2}),
    )
    .await;
    assert_eq!(
        (out["count"].clone(), out["truncated"].clone()),
        (json!(2), json!(true))
    );

    let out = ok(
        json!({"operation": "regex_extract", "text": "line one\nline two",
                        "pattern": "^line (\\w+)$", "flags": "m", "group": 1}),
    )
    .await;
    assert_eq!(
        out["matches"],
        json!([{"text": "one", "start": 5, "end": 8},
                                      {"text": "two", "start": 14, "end": 17}])
    );
    let out = ok(
        json!({"operation": "regex_extract", "text": "a\nb", "pattern": "a.b",
                        "flags": "s"}),
    )
    .await;
    assert_eq!(out["count"], 1);
    let out = ok(
        json!({"operation": "regex_extract", "text": "ab12", "pattern": r"\d # digit",
                        "flags": "x"}),
    )
    .await;
    assert_eq!(out["count"], 2);

    let out = call(json!({"operation": "regex_extract", "text": "abc", "pattern": r"\d"}))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "no matches for `\\d`");
    assert_eq!(out.structured.unwrap()["count"], 0);
}

#[tokio::test]
async fn regex_errors_name_the_pattern_and_problem() {
    let msg =
        invalid(json!({"operation": "regex_extract", "text": "a", "pattern": "(unclosed"})).await;
    assert!(msg.contains("invalid regex `(unclosed`"), "{msg}");
    assert!(msg.contains("unclosed group"), "{msg}");
    let msg = invalid(json!({"operation": "regex_extract", "text": "a", "pattern": "(?=a)"})).await;
    assert!(msg.contains("look-around"), "{msg}");
    let msg = invalid(json!({"operation": "regex_extract", "text": "a",
                             "pattern": r"(\w{100}){100}"}))
    .await;
    assert!(msg.contains("is too big"), "{msg}");
    assert!(msg.contains("10485760-byte limit"), "{msg}");
    let msg = invalid(
        json!({"operation": "regex_extract", "text": "a", "pattern": "a",
                             "flags": "iq"}),
    )
    .await;
    assert!(msg.contains("unknown flag `q` in flags `iq`"), "{msg}");
    let msg = invalid(
        json!({"operation": "regex_extract", "text": "a", "pattern": "(a)",
                             "group": 2}),
    )
    .await;
    assert!(
        msg.contains("group 2 does not exist: the pattern has 1 capture group"),
        "{msg}"
    );
    let msg = invalid(
        json!({"operation": "regex_extract", "text": "a", "pattern": "(?P<x>a)",
                             "group": "y"}),
    )
    .await;
    assert!(
        msg.contains("no group named `y`; its named groups are: x"),
        "{msg}"
    );
    let msg = invalid(
        json!({"operation": "regex_extract", "text": "a", "pattern": "a",
                             "group": [1]}),
    )
    .await;
    assert!(msg.contains("`group` is [1]"), "{msg}");
    let msg = invalid(
        json!({"operation": "regex_extract", "text": "a", "pattern": "a",
                             "max_matches": 10001}),
    )
    .await;
    assert!(
        msg.contains("`max_matches` is 10001; give a number from 1 to 10000"),
        "{msg}"
    );
    let msg = invalid(json!({"operation": "regex_extract", "text": "a"})).await;
    assert!(
        msg.contains("operation `regex_extract` needs `pattern`"),
        "{msg}"
    );
}

#[tokio::test]
async fn regex_replace_counts_and_limits() {
    let out = call(
        json!({"operation": "regex_replace", "text": "a1b22c333", "pattern": r"\d+",
                          "replacement": "#"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"text": "a#b#c#", "replacements": 3}))
    );
    assert_eq!(out.text_joined(), "3 replacements:\na#b#c#");
    let out = ok(
        json!({"operation": "regex_replace", "text": "a1b22c333", "pattern": r"\d+",
                        "replacement": "#", "limit": 2}),
    )
    .await;
    assert_eq!(out, json!({"text": "a#b#c333", "replacements": 2}));
    let out = ok(json!({"operation": "regex_replace", "text": "2024-01-05",
                        "pattern": r"(?P<y>\d+)-(\d+)-(\d+)",
                        "replacement": "$3/${2}x/${y} $$"}))
    .await;
    assert_eq!(out["text"], "05/01x/2024 $");
    let out = ok(
        json!({"operation": "regex_replace", "text": "Hello HELLO", "pattern": "hello",
                        "replacement": "bye", "flags": "i"}),
    )
    .await;
    assert_eq!(out, json!({"text": "bye bye", "replacements": 2}));
    let out = ok(
        json!({"operation": "regex_replace", "text": "none", "pattern": r"\d",
                        "replacement": "x"}),
    )
    .await;
    assert_eq!(out, json!({"text": "none", "replacements": 0}));
}

#[tokio::test]
async fn regex_replace_refuses_unknown_group_references() {
    let msg = invalid(
        json!({"operation": "regex_replace", "text": "a1", "pattern": r"(\d)",
                             "replacement": "$1st"}),
    )
    .await;
    assert!(
        msg.contains("refers to `$1st`, which is not a group"),
        "{msg}"
    );
    assert!(msg.contains("write `${1}st`"), "{msg}");
    let msg = invalid(
        json!({"operation": "regex_replace", "text": "a1", "pattern": r"(\d)",
                             "replacement": "${name}"}),
    )
    .await;
    assert!(msg.contains("refers to `${name}`"), "{msg}");
    let msg = invalid(json!({"operation": "regex_replace", "text": "a", "pattern": "a"})).await;
    assert!(
        msg.contains("operation `regex_replace` needs `replacement`"),
        "{msg}"
    );
    // A `$` that starts no reference is literal, as in the regex crate.
    let out = ok(
        json!({"operation": "regex_replace", "text": "a", "pattern": "a",
                        "replacement": "$ and ${"}),
    )
    .await;
    assert_eq!(out["text"], "$ and ${");
}

#[tokio::test]
async fn regex_replace_caps_the_result_size() {
    let text = "x".repeat(1 << 20);
    let msg = invalid(
        json!({"operation": "regex_replace", "text": text, "pattern": "x",
                             "replacement": "yyy"}),
    )
    .await;
    assert!(msg.contains("grows past 2097152 bytes"), "{msg}");
}

#[tokio::test]
async fn split_by_separator_or_pattern() {
    let out = call(json!({"operation": "split", "text": "a, b,,c", "separator": ","}))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"parts": ["a", " b", "", "c"], "count": 4}))
    );
    assert_eq!(out.text_joined(), "4 parts:\n\"a\"\n\" b\"\n\"\"\n\"c\"");
    let out = ok(
        json!({"operation": "split", "text": "a, b,,c", "separator": ",",
                        "trim": true, "skip_empty": true}),
    )
    .await;
    assert_eq!(out["parts"], json!(["a", "b", "c"]));
    let out = ok(
        json!({"operation": "split", "text": "k=v=w", "separator": "=",
                        "max_parts": 2}),
    )
    .await;
    assert_eq!(out["parts"], json!(["k", "v=w"]));
    let out = ok(json!({"operation": "split", "text": "one1two22THREE", "pattern": r"\d+"})).await;
    assert_eq!(out["parts"], json!(["one", "two", "THREE"]));
    let out =
        ok(json!({"operation": "split", "text": "aXbxc", "pattern": "x", "flags": "i"})).await;
    assert_eq!(out["parts"], json!(["a", "b", "c"]));
    let out = ok(json!({"operation": "split", "text": "", "separator": ",",
                        "skip_empty": true}))
    .await;
    assert_eq!(out, json!({"parts": [], "count": 0}));
}

#[tokio::test]
async fn split_errors() {
    let msg = invalid(json!({"operation": "split", "text": "a"})).await;
    assert!(
        msg.contains("needs `separator` (a literal string) or `pattern`"),
        "{msg}"
    );
    let msg = invalid(json!({"operation": "split", "text": "a", "separator": ",",
                             "pattern": ","}))
    .await;
    assert!(msg.contains("not both"), "{msg}");
    let msg = invalid(json!({"operation": "split", "text": "a", "separator": ""})).await;
    assert!(msg.contains("`separator` is empty"), "{msg}");
    let msg = invalid(json!({"operation": "split", "text": "a", "pattern": "["})).await;
    assert!(msg.contains("invalid regex `[`"), "{msg}");
    let many = ",".repeat(10_000);
    let msg = invalid(json!({"operation": "split", "text": many, "separator": ","})).await;
    assert!(msg.contains("more than 10000 parts"), "{msg}");
    let out = ok(json!({"operation": "split", "text": many, "separator": ",",
                        "max_parts": 3}))
    .await;
    assert_eq!(out["count"], 3);
    let msg = invalid(json!({"operation": "split", "text": "a", "separator": ",",
                             "max_parts": 0}))
    .await;
    assert!(msg.contains("`max_parts` is 0"), "{msg}");
}

#[tokio::test]
async fn text_over_one_mib_is_refused() {
    let text = "a".repeat((1 << 20) + 1);
    let msg = invalid(json!({"operation": "count", "text": text})).await;
    assert!(
        msg.contains("`text` is 1048577 bytes, over the limit of 1048576 bytes"),
        "{msg}"
    );
    let text = "a".repeat(1 << 20);
    assert_eq!(
        ok(json!({"operation": "count", "text": text})).await["bytes"],
        1 << 20
    );
}

#[tokio::test]
async fn unknown_operation_and_fields_are_rejected() {
    let msg = invalid(json!({"operation": "reverse", "text": "a"})).await;
    assert!(msg.contains("reverse"), "{msg}");
    let msg = invalid(json!({"operation": "count", "text": "a", "colour": 1})).await;
    assert!(msg.contains("colour"), "{msg}");
    let msg = invalid(json!({"operation": "count"})).await;
    assert!(msg.contains("text"), "{msg}");
}

#[test]
fn input_schema_compiles_and_validates() {
    test_support::check_schema(
        &plugin(),
        &[
            json!({"operation": "case", "text": "a", "to": "snake"}),
            json!({"operation": "regex_extract", "text": "a", "pattern": "a", "group": "name"}),
            json!({"operation": "regex_extract", "text": "a", "pattern": "a", "group": 1}),
        ],
        &[
            json!({"operation": "shout", "text": "a"}),
            json!({"operation": "count"}),
            json!({"operation": "case", "text": "a", "to": "shouty"}),
            json!({"operation": "count", "text": "a", "extra": 1}),
            json!({"operation": "truncate", "text": "a", "max_length": 0}),
            json!({"operation": "regex_extract", "text": "a", "pattern": "a", "max_matches": 10001}),
        ],
    );
}

#[test]
fn schema_uses_the_conservative_dialect() {
    let p = plugin();
    let schema = p.tools()[0].spec().input_schema.clone();
    let text = schema.to_string();
    for banned in [
        "$ref",
        "oneOf",
        "anyOf",
        "allOf",
        "exclusiveM",
        "\"format\"",
    ] {
        assert!(!text.contains(banned), "schema uses {banned}");
    }
    for (name, property) in schema["properties"].as_object().unwrap() {
        assert!(
            property["description"].is_string() || property["enum"].is_array(),
            "{name} has no description"
        );
        assert!(!property["type"].is_array(), "{name} has a type union");
    }
}

#[tokio::test]
async fn ordinary_unicode_patterns_fit_the_size_limit() {
    for pattern in [
        r"[\w.+-]+@[\w-]+\.[\w.-]+",
        r"\w{50}",
        r"\p{L}{1,30}",
        r"(\w+\s+){1,20}",
        r"(?i)\b(error|warning|fatal)\b:\s*(.*)$",
    ] {
        let out = ok(json!({"operation": "regex_extract", "text": "hi", "pattern": pattern})).await;
        assert!(out["count"].is_u64(), "{pattern}");
    }
}

//! Arguments in one shape: every built-in tool reads its arguments into a typed struct
//! (serde) and publishes the input schema generated from that same struct (schemars), so
//! the schema a model reads and the parser a call meets cannot drift apart.
//!
//! The generated schema is made lean for a model's context: no `$schema`, `title` or
//! `format` keywords, no `null` alternatives for optional fields (leaving a field out is how
//! a model says "none"), subschemas inlined, and `additionalProperties: false` on the
//! arguments object. Defaults come from `#[serde(default = …)]` and appear as `default`
//! (but for a flag that is off by default: a flag left out is off);
//! bounds come from `#[schemars(range(…))]` / `length(…)` and appear as
//! `minimum`/`maximum`/`minLength`/`maxLength`.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use toolshed_core::ToolError;

/// The input schema of a tool whose arguments are `T`.
pub fn schema<T: JsonSchema>() -> Value {
    let mut value = lean_schema::<T>();
    if let Value::Object(top) = &mut value {
        // The tool's description says what the call is for; the struct's doc is for Rust.
        top.remove("description");
        top.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        top.insert("additionalProperties".into(), Value::Bool(false));
    }
    value
}

/// The schema of `T` as it deserializes, made lean the same way (the keywords a reader
/// does not need dropped, subschemas inlined, no `null` alternatives) but otherwise as the
/// type says: its doc as `description`, `additionalProperties: false` only with
/// `#[serde(deny_unknown_fields)]`. For documents other than a tool's input, such as the
/// REST API's request bodies and query parameters.
pub fn lean_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .for_deserialize()
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    lean(&mut value);
    value
}

/// Reads a call's arguments into `T`; the pipeline validated them against [`schema`]
/// already, so an error here is one the schema cannot express (and names the field).
pub fn parse<T: DeserializeOwned>(mut args: Value) -> Result<T, ToolError> {
    whole_numbers(&mut args);
    serde_json::from_value(args).map_err(|e| ToolError::invalid(format!("invalid arguments: {e}")))
}

/// Writes `5.0` as `5`: JSON Schema counts a number with no fraction as an integer, so
/// the pipeline lets it through for an integer argument, and serde would then refuse it
/// for an integer field. A `f64` field reads either spelling the same.
fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                // Within 2^53 an integral f64 is exactly an i64.
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *value = Value::from(whole);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// Keywords a model does not need.
const DROPPED: [&str; 3] = ["$schema", "title", "format"];

/// Removes what a model does not need from a generated schema, recursively. The maps of
/// argument names (`properties`) are walked by value: an argument may be called `format`.
fn lean(value: &mut Value) {
    let Value::Object(map) = value else {
        if let Value::Array(items) = value {
            items.iter_mut().for_each(lean);
        }
        return;
    };
    for key in DROPPED {
        map.shift_remove(key);
    }
    // `Option<T>` of a simple type: `"type": ["integer", "null"]` -> `"type": "integer"`.
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    // `Option<T>` of a composite type: `anyOf: [T, {type: null}]` -> T's keywords.
    if let Some(Value::Array(alternatives)) = map.get("anyOf") {
        let null = |v: &Value| v.get("type").is_some_and(|t| t == "null");
        if alternatives.len() == 2 && alternatives.iter().any(null) {
            let Some(Value::Array(alternatives)) = map.shift_remove("anyOf") else {
                unreachable!("checked above")
            };
            for alternative in alternatives {
                if let Value::Object(keywords) = alternative {
                    if null(&Value::Object(keywords.clone())) {
                        continue;
                    }
                    for (key, keyword) in keywords {
                        if !DROPPED.contains(&key.as_str()) {
                            map.entry(key).or_insert(keyword);
                        }
                    }
                }
            }
        }
    }
    // An enum value of `null` (an optional enum) is the same "leave it out".
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // `{"default": null}` says nothing a model can use, nor does `false` for a flag: a
    // flag left out is off (the server's instructions say so once for every tool).
    let flag = map.get("type").is_some_and(|t| t == "boolean");
    if map
        .get("default")
        .is_some_and(|d| d.is_null() || (flag && *d == Value::Bool(false)))
    {
        map.shift_remove("default");
    }
    // `additionalProperties: true` is what a schema says without it (a map of any values).
    if map.get("additionalProperties") == Some(&Value::Bool(true)) {
        map.shift_remove("additionalProperties");
    }
    for (key, child) in map.iter_mut() {
        match (key.as_str(), child) {
            ("properties" | "patternProperties" | "$defs", Value::Object(named)) => {
                named.values_mut().for_each(lean);
            }
            ("enum" | "const" | "default" | "examples", _) => {}
            (_, child) => lean(child),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    fn two() -> u32 {
        2
    }

    fn yes() -> bool {
        true
    }

    /// What a tool's arguments look like.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Example {
        /// The file.
        path: String,
        /// How many.
        #[serde(default = "two")]
        #[schemars(range(min = 1, max = 10))]
        count: u32,
        /// Maybe.
        flag: Option<bool>,
        /// Off unless asked.
        #[serde(default)]
        off: bool,
        /// On unless asked.
        #[serde(default = "yes")]
        on: bool,
        /// Pairs.
        env: Option<std::collections::BTreeMap<String, String>>,
        /// A choice.
        mode: Option<Mode>,
        /// Arguments may be named like keywords.
        format: Option<String>,
        /// Even this one.
        title: Option<String>,
        /// Any document.
        document: Option<Map<String, Value>>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow,
    }

    #[test]
    fn a_whole_number_written_with_a_fraction_reads_as_an_integer() {
        #[derive(Deserialize)]
        struct Paged {
            limit: usize,
            ratio: f64,
            more: Vec<i32>,
        }
        let paged: Paged = parse(json!({"limit": 5.0, "ratio": 2.0, "more": [1e1, -3.0]})).unwrap();
        assert_eq!(
            (paged.limit, paged.ratio, paged.more),
            (5, 2.0, vec![10, -3])
        );
        // A real fraction is still refused for an integer.
        assert!(parse::<Paged>(json!({"limit": 5.5, "ratio": 1, "more": []})).is_err());
    }

    #[test]
    fn generated_schemas_are_lean_and_carry_defaults_and_bounds() {
        let schema = schema::<Example>();
        let names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            names,
            [
                "path", "count", "flag", "off", "on", "env", "mode", "format", "title", "document"
            ]
        );
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file."},
                    "count": {"type": "integer", "description": "How many.", "default": 2, "minimum": 1, "maximum": 10},
                    "flag": {"type": "boolean", "description": "Maybe."},
                    "off": {"type": "boolean", "description": "Off unless asked."},
                    "on": {"type": "boolean", "description": "On unless asked.", "default": true},
                    "env": {"type": "object", "description": "Pairs.", "additionalProperties": {"type": "string"}},
                    "mode": {"type": "string", "description": "A choice.", "enum": ["fast", "slow"]},
                    "format": {"type": "string", "description": "Arguments may be named like keywords."},
                    "title": {"type": "string", "description": "Even this one."},
                    "document": {"type": "object", "description": "Any document."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            "{}",
            serde_json::to_string_pretty(&schema).unwrap()
        );
    }
}

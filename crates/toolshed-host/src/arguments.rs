//! Arguments as models write them, made into what a tool's schema asks for — before
//! validation, the same for every door — and what to say when they still do not fit.
//!
//! Models trained on other tool sets write `command` for `cmd`, `file_path` for `path`,
//! and `null` for an optional argument they mean to leave out. Where the meaning is
//! certain, the arguments are taken as meant; where it is not (`timeout`: seconds or
//! milliseconds?), the error names the argument the tool has.

use serde_json::{Map, Value};

/// Names other tool sets use, and the name a toolshed schema may have for the same thing.
/// An alias is applied only when the schema has the target, does not have the alias, and
/// the call did not also give the target.
const ALIASES: &[(&str, &str)] = &[
    ("command", "cmd"),
    ("cmd", "command"),
    ("file_path", "path"),
    ("filepath", "path"),
    ("file", "path"),
    ("filename", "path"),
    ("dir", "path"),
    ("directory", "path"),
    ("old_string", "old_text"),
    ("new_string", "new_text"),
    ("old_str", "old_text"),
    ("new_str", "new_text"),
    ("cwd", "workdir"),
    ("working_directory", "workdir"),
];

/// Names that look like a toolshed argument but differ in meaning or unit, so they are
/// never renamed: the error suggests the argument instead.
const LOOKALIKES: &[(&str, &str)] = &[
    ("timeout", "timeout_ms"),
    ("timeout_secs", "timeout_ms"),
    ("timeout_seconds", "timeout_ms"),
    ("wait", "yield_ms"),
    ("max_lines", "limit"),
    ("lines", "limit"),
    ("start_line", "offset"),
    ("query", "pattern"),
    ("regex", "pattern"),
];

/// What [`normalize`] changed, for the record.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Normalized {
    /// Optional arguments given as `null`, dropped.
    pub nulls: Vec<String>,
    /// Aliases renamed: (as given, as the schema names it).
    pub renamed: Vec<(String, String)>,
}

/// Takes `args` as meant by `schema`: top-level `null`s for optional arguments whose schema
/// does not accept `null` are dropped ("not given"); known aliases are renamed; a single
/// string given for an array-of-strings argument of a plural name (`pattern` for
/// `patterns`) becomes a one-item array.
pub(crate) fn normalize(schema: &Value, args: &mut Value) -> Normalized {
    let mut done = Normalized::default();
    let (Some(props), Some(given)) = (
        schema.get("properties").and_then(Value::as_object),
        args.as_object_mut(),
    ) else {
        return done;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let nulls: Vec<String> = given
        .iter()
        .filter(|(k, v)| {
            v.is_null()
                && !required.contains(&k.as_str())
                && props.get(k.as_str()).is_none_or(|p| !accepts_null(p))
        })
        .map(|(k, _)| k.clone())
        .collect();
    for key in nulls {
        given.remove(&key);
        done.nulls.push(key);
    }
    let names: Vec<String> = given.keys().cloned().collect();
    for name in names {
        if props.contains_key(&name) {
            continue;
        }
        let target = ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map(|(_, target)| (*target).to_string())
            .or_else(|| plural_of(&name, props, given));
        if let Some(target) = target
            && props.contains_key(&target)
            && !given.contains_key(&target)
            && let Some(value) = given.remove(&name)
        {
            let value = match (&value, props.get(&target)) {
                (Value::String(_), Some(p)) if is_string_array(p) => Value::Array(vec![value]),
                _ => value,
            };
            given.insert(target.clone(), value);
            done.renamed.push((name, target));
        }
    }
    done
}

/// `patterns` for `pattern` when the schema has an array of strings by that name.
fn plural_of(name: &str, props: &Map<String, Value>, given: &Map<String, Value>) -> Option<String> {
    let plural = format!("{name}s");
    let singular_string = given.get(name).is_some_and(Value::is_string);
    (singular_string && props.get(&plural).is_some_and(is_string_array)).then_some(plural)
}

fn is_string_array(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("array")
        && schema
            .get("items")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            == Some("string")
}

fn accepts_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|alts| alts.iter().any(accepts_null))
        }),
    }
}

/// "Did you mean" for each argument `args` gives that `schema` does not have: a lookalike
/// the schema has, else the nearest name. Empty when every name is known.
pub(crate) fn unknown_names(schema: &Value, args: &Value) -> Vec<String> {
    let (Some(props), Some(given)) = (
        schema.get("properties").and_then(Value::as_object),
        args.as_object(),
    ) else {
        return Vec::new();
    };
    given
        .keys()
        .filter(|k| !props.contains_key(k.as_str()))
        .map(|name| {
            let lookalike = LOOKALIKES
                .iter()
                .chain(ALIASES)
                .find(|(alias, target)| alias == name && props.contains_key(*target))
                .map(|(_, target)| (*target).to_string());
            let near = lookalike.or_else(|| {
                crate::suggest::closest(name, props.keys().map(String::as_str), 1)
                    .into_iter()
                    .next()
            });
            match near {
                Some(near) => format!("`{name}` is not an argument (did you mean `{near}`?)"),
                None => format!("`{name}` is not an argument"),
            }
        })
        .collect()
}

/// The arguments a schema takes, in a line a model can act on without another request:
/// `cmd (string, required), timeout_ms (integer), mode ("a" | "b")`.
pub(crate) fn outline(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "no arguments".into();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut parts: Vec<String> = props
        .iter()
        .map(|(name, p)| {
            let kind = match p.get("enum").and_then(Value::as_array) {
                Some(values) if values.len() <= 12 => values
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ => match p.get("type") {
                    Some(Value::String(t)) => t.clone(),
                    Some(Value::Array(ts)) => ts
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" | "),
                    _ => "any".into(),
                },
            };
            if required.contains(&name.as_str()) {
                format!("{name} ({kind}, required)")
            } else {
                format!("{name} ({kind})")
            }
        })
        .collect();
    // Required first, in schema order otherwise.
    parts.sort_by_key(|p| !p.ends_with(", required)"));
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "cmd": {"type": "string"},
                "timeout_ms": {"type": "integer"},
                "patterns": {"type": "array", "items": {"type": "string"}},
                "note": {"type": ["string", "null"]},
                "mode": {"enum": ["a", "b"]}
            },
            "required": ["cmd"],
            "additionalProperties": false
        })
    }

    #[test]
    fn nulls_aliases_and_plurals_are_taken_as_meant() {
        let mut args = json!({"command": "ls", "timeout_ms": null, "pattern": "x", "note": null});
        let done = normalize(&schema(), &mut args);
        assert_eq!(
            args,
            json!({"cmd": "ls", "patterns": ["x"], "note": null}),
            "{done:?}"
        );
        assert_eq!(done.nulls, vec!["timeout_ms"]);
        // An alias never overwrites the argument it stands for.
        let mut args = json!({"command": "ls", "cmd": "pwd"});
        normalize(&schema(), &mut args);
        assert_eq!(args, json!({"command": "ls", "cmd": "pwd"}));
        // A required argument given as null is left for validation to name.
        let mut args = json!({"cmd": null});
        normalize(&schema(), &mut args);
        assert_eq!(args, json!({"cmd": null}));
    }

    #[test]
    fn unknown_names_get_the_argument_they_probably_meant() {
        let hints = unknown_names(&schema(), &json!({"timeout": 5, "cmdd": "x", "zzz": 1}));
        assert_eq!(
            hints,
            vec![
                "`timeout` is not an argument (did you mean `timeout_ms`?)",
                "`cmdd` is not an argument (did you mean `cmd`?)",
                "`zzz` is not an argument",
            ]
        );
        assert_eq!(
            outline(&schema()),
            "cmd (string, required), timeout_ms (integer), patterns (array), note (string | null), mode (\"a\" | \"b\")"
        );
    }
}

//! Actions written the way Agent Spaces' plugins write them, read as toolshed actions.
//!
//! Agent Spaces describes an action for its editor: `properties` is an array of form
//! widgets (`{key, label, type: "text" | "textarea" | "select" | "number" | …, dataType,
//! required, default, options, tooltip}`), `outputs` an array describing the result,
//! `label`, `category` and `icon` place it in a palette, and `run` returns `{success,
//! message, data}`. [`native_action`] rewrites such an action into the shape
//! [`crate::action::ActionDef::parse`] checks: widget types become JSON types, options an
//! `enum`, the tooltip (else the label) the description, a default makes a property
//! optional, and the display keys are left out. The result convention is applied when the
//! tool answers (`success: false` is the tool's error).

use serde_json::{Map, Value};

/// A property whose default is a config template (`{{ __config__["id"]["key"] }}`, perhaps
/// `|| fallback`): filled from the plugin's config when a call leaves it out — at call
/// time, so that the value (often a credential) never appears in the tool's schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConfigDefault {
    /// The property.
    pub property: String,
    /// The config key.
    pub key: String,
    /// The template's `|| fallback`, when it has one.
    pub fallback: Option<Value>,
}

/// Keys that place an action in Agent Spaces' editor, meaningless to a model.
const DISPLAY_KEYS: [&str; 8] = [
    "category",
    "icon",
    "toolProperties",
    "configProperties",
    "tool",
    "toolOnly",
    "customView",
    "customViewMinSize",
];

/// Whether `action` is written in Agent Spaces' form: array `properties` or `outputs`, or
/// one of its display keys.
pub(crate) fn is_agent_spaces_form(action: &Map<String, Value>) -> bool {
    action.get("properties").is_some_and(Value::is_array)
        || action.get("outputs").is_some_and(Value::is_array)
        || DISPLAY_KEYS.iter().any(|k| action.contains_key(*k))
}

/// `action` in toolshed's form, when it is written in Agent Spaces' form, with the
/// defaults its config templates give.
pub(crate) fn native_action(action: &Value) -> Option<(Value, Vec<ConfigDefault>)> {
    let obj = action.as_object()?;
    if !is_agent_spaces_form(obj) {
        return None;
    }
    let mut out = obj.clone();
    for key in DISPLAY_KEYS {
        out.remove(key);
    }
    // What the result holds is said by `{success, message, data}`, and the templates'
    // `outputs` describe it inconsistently (sometimes only `data`): not enforced.
    out.remove("outputs");
    let described = out
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.trim().is_empty());
    if !described {
        let from = out
            .get("label")
            .and_then(Value::as_str)
            .filter(|l| !l.trim().is_empty())
            .or_else(|| out.get("name").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        out.insert("description".into(), Value::String(from));
    }
    // The inputs an agent gives: `toolProperties` when the action has them (the
    // editor's `properties` then describe its form).
    // A tool input without a default takes the form's (a config template, say), so the
    // settings still fill what an agent leaves out.
    if let Some(Value::Array(tool_inputs)) = obj.get("toolProperties") {
        let form: Vec<&Map<String, Value>> = match obj.get("properties") {
            Some(Value::Array(p)) => p.iter().filter_map(Value::as_object).collect(),
            _ => Vec::new(),
        };
        let inputs = tool_inputs
            .iter()
            .map(|input| {
                let mut input = input.clone();
                if let Some(fields) = input.as_object_mut()
                    && !fields.contains_key("default")
                    && let Some(default) = form
                        .iter()
                        .find(|f| f.get("key") == fields.get("key"))
                        .and_then(|f| f.get("default"))
                {
                    fields.insert("default".into(), default.clone());
                }
                input
            })
            .collect();
        out.insert("properties".into(), Value::Array(inputs));
    }
    let mut from_config = Vec::new();
    // `configProperties`: values the plugin's settings give; never asked of an agent,
    // filled as each call runs.
    if let Some(Value::Array(items)) = obj.get("configProperties") {
        for field in items.iter().filter_map(Value::as_object) {
            let Some(key) = field.get("key").and_then(Value::as_str) else {
                continue;
            };
            let default = field.get("default");
            let (config_key, fallback) =
                match default.and_then(Value::as_str).and_then(config_template) {
                    Some(found) => found,
                    None => (key.to_string(), default.cloned()),
                };
            from_config.push(ConfigDefault {
                property: key.to_string(),
                key: config_key,
                fallback,
            });
        }
    }
    if let Some(Value::Array(items)) = out.get("properties").cloned() {
        let mut properties = Map::new();
        for item in items {
            let Some(field) = item.as_object() else {
                continue;
            };
            let Some(key) = field.get("key").and_then(Value::as_str) else {
                continue;
            };
            if let Some((config_key, fallback)) = field
                .get("default")
                .and_then(Value::as_str)
                .and_then(config_template)
            {
                from_config.push(ConfigDefault {
                    property: key.to_string(),
                    key: config_key,
                    fallback,
                });
            }
            properties.insert(key.to_string(), property(field));
        }
        out.insert("properties".into(), Value::Object(properties));
    }
    Some((Value::Object(out), from_config))
}

/// The config key (and `|| fallback`) of a whole-value template
/// `{{ __config__["<plugin id>"]["<key>"] }}`.
fn config_template(text: &str) -> Option<(String, Option<Value>)> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    let (reference, fallback) = match inner.split_once("||") {
        Some((r, f)) => (r.trim(), Some(f.trim())),
        None => (inner, None),
    };
    let rest = reference.strip_prefix("__config__")?;
    // Two bracketed, quoted names: the plugin id, then the key.
    let mut names = Vec::new();
    let mut rest = rest.trim();
    while let Some(open) = rest.strip_prefix('[') {
        let close = open.find(']')?;
        let name = open[..close].trim().trim_matches(|c| c == '"' || c == '\'');
        names.push(name.to_string());
        rest = open[close + 1..].trim();
    }
    if !rest.is_empty() || names.len() != 2 {
        return None;
    }
    let fallback = fallback.map(|f| {
        serde_json::from_str(f)
            .unwrap_or_else(|_| Value::String(f.trim_matches(|c| c == '"' || c == '\'').into()))
    });
    Some((names.pop()?, fallback))
}

/// Fills what `inputs` leaves out from the plugin's `config`, as `defaults` say.
pub(crate) fn fill_from_config(
    inputs: &mut Value,
    defaults: &[ConfigDefault],
    config: &Map<String, Value>,
) {
    let Some(obj) = inputs.as_object_mut() else {
        return;
    };
    for d in defaults {
        if obj.contains_key(&d.property) {
            continue;
        }
        let value = config
            .get(&d.key)
            .filter(|v| !v.is_null() && v.as_str() != Some(""))
            .cloned()
            .or_else(|| d.fallback.clone());
        if let Some(value) = value {
            obj.insert(d.property.clone(), value);
        }
    }
}

/// One form widget as a property: `{type, description, enum, default, required, items}`.
fn property(field: &Map<String, Value>) -> Value {
    let widget = field.get("type").and_then(Value::as_str).unwrap_or("text");
    let choices: Option<Vec<Value>> = field.get("options").and_then(Value::as_array).map(|o| {
        o.iter()
            .map(|option| match option {
                Value::Object(labelled) => labelled.get("value").cloned().unwrap_or(Value::Null),
                plain => plain.clone(),
            })
            .filter(|v| !v.is_null())
            .collect()
    });
    let (ty, items) = match (field.get("dataType").and_then(Value::as_str), widget) {
        (Some("string[]"), _) => ("array", Some("string")),
        (Some("object[]"), _) => ("array", Some("object")),
        (Some("object"), _) | (_, "object") => ("object", None),
        (_, "array") => ("array", None),
        (_, "number" | "range" | "slider") => ("number", None),
        (_, "boolean" | "checkbox" | "switch") => ("boolean", None),
        (_, "select" | "radio") => (
            match choices.as_deref().and_then(<[Value]>::first) {
                Some(Value::Number(_)) => "number",
                Some(Value::Bool(_)) => "boolean",
                _ => "string",
            },
            None,
        ),
        // text, textarea, code, password, a buffer given as text, anything else.
        _ => ("string", None),
    };
    let mut out = Map::new();
    out.insert("type".into(), ty.into());
    let description = ["tooltip", "label", "key"].iter().find_map(|k| {
        field
            .get(*k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    });
    if let Some(d) = description {
        out.insert("description".into(), d.into());
    }
    if let Some(item) = items {
        out.insert("items".into(), serde_json::json!({ "type": item }));
    }
    let choices = choices.filter(|c| {
        !c.is_empty() && c.iter().all(|v| fits(ty, v)) && matches!(widget, "select" | "radio")
    });
    if let Some(c) = &choices {
        out.insert("enum".into(), Value::Array(c.clone()));
    }
    let default = field
        .get("default")
        .and_then(|d| coerce(ty, d))
        .filter(|d| choices.as_ref().is_none_or(|c| c.contains(d)));
    // `toolRequired` says whether an agent must give it, where that differs from the form.
    let required = field
        .get("toolRequired")
        .or_else(|| field.get("required"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let from_config = field
        .get("default")
        .and_then(Value::as_str)
        .is_some_and(|t| config_template(t).is_some());
    // A property with a default may be left out: the default (or the config) fills it.
    out.insert(
        "required".into(),
        (required && default.is_none() && !from_config).into(),
    );
    if let Some(d) = default {
        out.insert("default".into(), d);
    }
    Value::Object(out)
}

/// `value` as a default of type `ty`: numbers and booleans written as text are read as
/// such; a template (`{{ __config__[…] }}`) or a value of another type is no default.
fn coerce(ty: &str, value: &Value) -> Option<Value> {
    if let Value::String(text) = value
        && text.contains("{{")
    {
        return None;
    }
    let coerced = match (ty, value) {
        ("number", Value::String(t)) => {
            t.trim().parse::<i64>().map(Value::from).ok().or_else(|| {
                t.trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            })
        }
        ("boolean", Value::String(t)) => match t.trim() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        _ => Some(value.clone()),
    }?;
    fits(ty, &coerced).then_some(coerced)
}

fn fits(ty: &str, value: &Value) -> bool {
    match ty {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// What an Agent Spaces action's `{success, message, data}` result means for the tool:
/// `Err(message)` when it says it failed; otherwise the text to show (its message).
pub(crate) fn report(value: &Value) -> Option<Result<Option<String>, String>> {
    let obj = value.as_object()?;
    let success = obj.get("success")?.as_bool()?;
    let message = obj
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string);
    Some(if success {
        Ok(message)
    } else {
        Err(message.unwrap_or_else(|| "the action reported that it failed".into()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_action_becomes_a_tool_action() {
        let action = json!({
            "name": "fetch_url", "label": "Fetch a URL", "category": "Network", "icon": "Globe",
            "properties": [
                {"key": "url", "label": "URL", "type": "text", "required": true, "tooltip": "The page to fetch."},
                {"key": "method", "label": "Method", "type": "select", "default": "GET",
                 "options": [{"label": "GET", "value": "GET"}, {"label": "POST", "value": "POST"}]},
                {"key": "timeout", "label": "Timeout", "type": "number", "required": true,
                 "default": "{{ __config__[\"workflow.fetch\"][\"defaultTimeout\"] }}"},
                {"key": "retries", "label": "Retries", "type": "number", "default": "3"},
                {"key": "follow", "label": "Follow", "type": "boolean", "default": "true"},
                {"key": "headers", "label": "Headers", "type": "textarea", "dataType": "object"},
                {"key": "tags", "label": "Tags", "type": "textarea", "dataType": "string[]"}
            ],
            "outputs": [{"key": "success", "type": "boolean"}],
            "run": null
        });
        let (native, from_config) = native_action(&action).unwrap();
        assert_eq!(
            from_config,
            vec![ConfigDefault {
                property: "timeout".into(),
                key: "defaultTimeout".into(),
                fallback: None
            }]
        );
        assert_eq!(native["description"], "Fetch a URL");
        assert!(native.get("category").is_none() && native.get("outputs").is_none());
        let p = &native["properties"];
        assert_eq!(
            p["url"],
            json!({"type": "string", "description": "The page to fetch.", "required": true})
        );
        assert_eq!(p["method"]["enum"], json!(["GET", "POST"]));
        assert_eq!(p["method"]["default"], "GET");
        assert_eq!(p["method"]["required"], false);
        // A template default is no schema default; the property stays as declared, and
        // the config fills it when a call leaves it out.
        assert!(p["timeout"].get("default").is_none());
        assert_eq!(p["timeout"]["required"], false);
        let mut inputs = json!({"url": "u"});
        fill_from_config(
            &mut inputs,
            &from_config,
            json!({"defaultTimeout": 5000}).as_object().unwrap(),
        );
        assert_eq!(inputs["timeout"], 5000);
        assert_eq!(p["retries"]["default"], 3);
        assert_eq!(p["follow"]["default"], true);
        assert_eq!(p["headers"]["type"], "object");
        assert_eq!(
            p["tags"],
            json!({"type": "array", "description": "Tags", "items": {"type": "string"}, "required": false})
        );
        // And it passes toolshed's checks.
        crate::action::ActionDef::parse(&native, "fetch", toolshed_core::Plane::Execution).unwrap();
        // A native action is left alone.
        assert!(
            native_action(&json!({"name": "a", "description": "d", "properties": {}})).is_none()
        );
    }

    #[test]
    fn config_templates_are_read_with_their_fallbacks() {
        assert_eq!(
            config_template(r#"{{ __config__["workflow.mail"]["port"] || 465 }}"#),
            Some(("port".into(), Some(json!(465))))
        );
        assert_eq!(
            config_template(r#"{{__config__["a.b"]["baseUrl"] || "https://x.example"}}"#),
            Some(("baseUrl".into(), Some(json!("https://x.example"))))
        );
        assert_eq!(
            config_template(r#"{{ __config__["a"]["k"] }}"#),
            Some(("k".into(), None))
        );
        assert_eq!(config_template("plain text"), None);
        assert_eq!(config_template(r#"{{ __data__["n"].x }}"#), None);
    }

    #[test]
    fn tool_and_config_properties_shape_what_an_agent_gives() {
        // Failed before: toolProperties and configProperties were dropped, so the
        // settings never reached run() and the editor's form was the tool's schema.
        let (action, defaults) = native_action(&json!({
            "name": "sign_url", "label": "Sign", "category": "Storage",
            "properties": [{"key": "formOnly", "type": "text", "required": true},
                           {"key": "apiKey", "type": "text", "default": "{{ __config__[\"p\"][\"apiKey\"] }}"}],
            "toolProperties": [{"key": "objectKey", "type": "text", "required": true},
                               {"key": "region", "type": "text", "required": true, "toolRequired": false},
                               {"key": "apiKey", "type": "string", "required": true}],
            "configProperties": [
                {"key": "region", "type": "text", "default": "{{ __config__[\"p\"][\"region\"] }}"},
                {"key": "accessKeyId", "type": "text", "required": true, "default": "{{ __config__[\"p\"][\"accessKeyId\"] }}"},
                {"key": "secure", "type": "boolean", "default": true}
            ]
        }))
        .unwrap();
        let p = &action["properties"];
        assert!(
            p.get("formOnly").is_none() && p.get("accessKeyId").is_none(),
            "{p}"
        );
        assert_eq!(p["objectKey"]["required"], true);
        assert_eq!(p["region"]["required"], false);
        // The form's config default reaches the tool's input of the same key.
        assert_eq!(p["apiKey"]["required"], false);
        let names: Vec<(&str, &str)> = defaults
            .iter()
            .map(|d| (d.property.as_str(), d.key.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("region", "region"),
                ("accessKeyId", "accessKeyId"),
                ("secure", "secure"),
                ("apiKey", "apiKey")
            ]
        );
        // What the call gives wins; the settings fill the rest.
        let mut inputs = json!({"objectKey": "a", "region": "r-given"});
        let config = json!({"accessKeyId": "id-1", "region": "r-set"});
        fill_from_config(&mut inputs, &defaults, config.as_object().unwrap());
        assert_eq!(
            inputs,
            json!({"objectKey": "a", "region": "r-given", "accessKeyId": "id-1", "secure": true})
        );
    }

    #[test]
    fn a_report_that_failed_is_an_error_with_its_message() {
        assert_eq!(
            report(&json!({"success": false, "message": "no key"})),
            Some(Err("no key".into()))
        );
        assert_eq!(
            report(&json!({"success": true, "message": "ok", "data": {}})),
            Some(Ok(Some("ok".into())))
        );
        assert_eq!(report(&json!({"a": 1})), None);
    }
}

//! Agent Spaces' `config` entries, read as toolshed's config fields.

use serde_json::{Map, Value};

use super::Notes;

/// The keys of a config entry toolshed reads as they are.
const CONFIG_KEYS: [&str; 9] = [
    "key",
    "label",
    "type",
    "description",
    "default",
    "options",
    "secret",
    "required",
    "writable",
];

/// Agent Spaces' `config` entries (`{key, label, desc, type, value, placeholder, required,
/// options}`) as toolshed's config fields: `desc` is the description, `value` the default
/// (a number written as text read as the number), `{label, value}` options their values;
/// a key that names a credential (`apiKey`, `secret`, `token`, `password`, …) is stored as a
/// secret, since the format has no marker for one. Anything else is kept in the notes.
pub(super) fn config_fields(obj: &mut Map<String, Value>, notes: &mut Notes) {
    let Some(Value::Array(entries)) = obj.get_mut("config") else {
        return;
    };
    for (i, entry) in entries.iter_mut().enumerate() {
        let Value::Object(field) = entry else {
            continue;
        };
        let at = |name: &str| format!("config[{i}].{name}");
        if let Some(desc) = field.remove("desc") {
            if field.contains_key("description") {
                notes.ignored(&at("desc"), "the entry has a `description` as well");
            } else {
                field.insert("description".into(), desc);
                notes.mapped(&at("desc"), &at("description"), "Agent Spaces' description");
            }
        }
        if let Some(value) = field.remove("value") {
            if field.contains_key("default") {
                notes.ignored(&at("value"), "the entry has a `default` as well");
            } else {
                field.insert("default".into(), value);
                notes.mapped(&at("value"), &at("default"), "Agent Spaces' default value");
            }
        }
        if let Some(Value::String(widget)) = field.get("type").cloned()
            && let Some((kind, secret)) = widget_type(&widget)
        {
            field.insert("type".into(), kind.into());
            if secret && !field.contains_key("secret") {
                field.insert("secret".into(), Value::Bool(true));
            }
            let why = if secret {
                format!("the `{widget}` input of a settings form: a `{kind}` kept as a secret")
            } else {
                format!("the `{widget}` input of a settings form holds a `{kind}`")
            };
            notes.mapped(&at("type"), &at("type"), why);
        }
        let kind = field.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "number"
            && let Some(Value::String(text)) = field.get("default")
            && let Ok(number) = text.trim().parse::<f64>()
            && let Some(number) = serde_json::Number::from_f64(number)
        {
            let number = match text.trim().parse::<i64>() {
                Ok(whole) => Value::from(whole),
                Err(_) => Value::Number(number),
            };
            field.insert("default".into(), number);
            notes.mapped(
                &at("default"),
                &at("default"),
                "a number written as text, read as the number",
            );
        }
        if let Some(Value::Array(options)) = field.get_mut("options") {
            let mut labelled = false;
            for option in options.iter_mut() {
                if let Value::Object(o) = option
                    && let Some(value) = o.get("value").cloned()
                {
                    *option = value;
                    labelled = true;
                }
            }
            if labelled {
                notes.mapped(
                    &at("options"),
                    &at("options"),
                    "`{label, value}` options become their values; the labels are a form's",
                );
            }
        }
        let key = field
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !field.contains_key("secret") && names_a_credential(&key) {
            field.insert("secret".into(), Value::Bool(true));
            notes.defaulted(
                &at("secret"),
                format!("`{key}` names a credential: stored as a secret, never listed or logged"),
            );
        }
        let extra: Vec<String> = field
            .keys()
            .filter(|k| !CONFIG_KEYS.contains(&k.as_str()))
            .cloned()
            .collect();
        for name in extra {
            if let Some(value) = field.remove(&name) {
                let why = match name.as_str() {
                    "placeholder" => {
                        format!("a settings form's hint ({value}); not used by toolshed")
                    }
                    _ => format!("not a field of a toolshed config entry ({value})"),
                };
                notes.ignored(&at(&name), why);
            }
        }
    }
}

/// The config type a settings-form input holds (and whether it is a secret), for the
/// inputs Agent Spaces' forms use besides toolshed's own types.
fn widget_type(widget: &str) -> Option<(&'static str, bool)> {
    Some(match widget {
        "password" | "secret" => ("string", true),
        "text" | "textarea" | "input" | "url" | "email" | "color" | "file" | "path" | "folder"
        | "date" | "time" | "datetime" => ("string", false),
        "switch" | "checkbox" | "toggle" | "bool" => ("boolean", false),
        "slider" | "integer" | "int" | "float" => ("number", false),
        "radio" | "dropdown" => ("select", false),
        "json" | "map" => ("object", false),
        _ => return None,
    })
}

/// Whether a config key names a credential: `apiKey`, `api_key`, `accessKeySecret`,
/// `token`, `password`, `pass`, `secret`, `privateKey`.
pub(super) fn names_a_credential(key: &str) -> bool {
    let folded: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    [
        "secret",
        "token",
        "password",
        "passwd",
        "apikey",
        "privatekey",
        "credential",
    ]
    .iter()
    .any(|word| folded.contains(word))
        || matches!(folded.as_str(), "pass" | "key" | "sk")
}

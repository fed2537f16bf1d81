//! Checking a plugin config value against the manifest field it is for.
//!
//! One rule set for every door: the REST API's `PUT /plugins/{id}/config` and
//! `toolshed plugins config ID KEY VALUE` both call [`check`].
//!
//! ```
//! use serde_json::json;
//! use toolshed_core::{ConfigField, ConfigFieldType};
//! let field: ConfigField = serde_json::from_value(json!({"key": "retries", "type": "number"})).unwrap();
//! assert!(toolshed_host::config_fields::check(&field, &json!(3)).is_ok());
//! assert_eq!(
//!     toolshed_host::config_fields::check(&field, &json!("3")).unwrap_err().to_string(),
//!     "`retries` must be a number"
//! );
//! ```

use serde_json::Value;
use toolshed_core::{ConfigField, ConfigFieldType};

/// Whether `value` fits `field`; the error says what the field takes.
pub fn check(field: &ConfigField, value: &Value) -> Result<(), WrongValue> {
    let ok = match field.field_type {
        ConfigFieldType::String => value.is_string(),
        ConfigFieldType::Number => value.is_number(),
        ConfigFieldType::Boolean => value.is_boolean(),
        ConfigFieldType::Object => value.is_object(),
        ConfigFieldType::Select => field.options.contains(value),
    };
    if ok {
        return Ok(());
    }
    let want = match field.field_type {
        ConfigFieldType::Select => format!(
            "one of {}",
            field
                .options
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ConfigFieldType::Object => "an object".to_string(),
        other => format!("a {}", type_name(other)),
    };
    Err(WrongValue {
        key: field.key.clone(),
        want,
    })
}

/// A value that does not fit its config field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` must be {want}")]
pub struct WrongValue {
    /// The field's key.
    pub key: String,
    /// What it takes (`a number`, `one of "a", "b"`).
    pub want: String,
}

/// The field type's name as manifests spell it.
pub fn type_name(t: ConfigFieldType) -> &'static str {
    match t {
        ConfigFieldType::String => "string",
        ConfigFieldType::Number => "number",
        ConfigFieldType::Boolean => "boolean",
        ConfigFieldType::Select => "select",
        ConfigFieldType::Object => "object",
    }
}

/// Reads a value typed on a command line for `field`: JSON when it parses as JSON of a
/// fitting kind, else the text itself for string fields and for select fields with that
/// text among their options (so `mode fast` needs no quotes). [`check`] still decides.
pub fn parse_cli_value(field: &ConfigField, raw: &str) -> Value {
    let parsed = serde_json::from_str::<Value>(raw).ok();
    let text = || Value::String(raw.to_string());
    match field.field_type {
        ConfigFieldType::String => match parsed {
            Some(v @ Value::String(_)) => v,
            _ => text(),
        },
        ConfigFieldType::Select => match parsed {
            Some(v) if field.options.contains(&v) => v,
            _ if field.options.contains(&text()) => text(),
            Some(v) => v,
            None => text(),
        },
        _ => parsed.unwrap_or_else(text),
    }
}

//! A plugin's settings as the REST API shows them: every field its manifest declares, with
//! its value, except a secret's, of which only whether it is set is told.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// A plugin's config fields and values.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PluginConfig {
    /// The plugin.
    pub plugin_id: String,
    /// Its fields, in manifest order.
    pub fields: Vec<ConfigField>,
}

/// The type of a config field's value.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ConfigFieldType {
    /// Text.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// One of `options`.
    Select,
    /// A JSON object.
    Object,
}

impl From<toolshed_core::ConfigFieldType> for ConfigFieldType {
    fn from(kind: toolshed_core::ConfigFieldType) -> Self {
        use toolshed_core::ConfigFieldType as T;
        match kind {
            T::String => Self::String,
            T::Number => Self::Number,
            T::Boolean => Self::Boolean,
            T::Select => Self::Select,
            T::Object => Self::Object,
        }
    }
}

/// One config field, with its value unless it is a secret.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ConfigField {
    /// The key.
    pub key: String,
    /// The value's type.
    #[serde(rename = "type")]
    pub field_type: ConfigFieldType,
    /// A label for people.
    pub label: Option<String>,
    /// What the field does.
    pub description: Option<String>,
    /// Whether the value is a secret: stored, never returned.
    pub secret: bool,
    /// Whether the plugin cannot work without it.
    pub required: bool,
    /// The allowed values of a `select` field.
    pub options: Vec<Value>,
    /// Whether a value is set.
    pub set: bool,
    /// The value used when none is set (`null`: none); absent for secret fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The value in effect: the one set, else the default (`null`: neither); absent for
    /// secret fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

impl ConfigField {
    /// `field` of a plugin whose stored values are `stored`.
    pub(crate) fn new(field: &toolshed_core::ConfigField, stored: &Map<String, Value>) -> Self {
        let toolshed_core::ConfigField {
            key,
            label,
            field_type,
            description,
            default,
            options,
            secret,
            required,
            writable: _,
        } = field.clone();
        let set = stored.contains_key(&key);
        let (default, value) = if secret {
            (None, None)
        } else {
            let value = stored.get(&key).cloned().or_else(|| default.clone());
            (
                Some(default.unwrap_or(Value::Null)),
                Some(value.unwrap_or(Value::Null)),
            )
        };
        Self {
            key,
            field_type: field_type.into(),
            label,
            description,
            secret,
            required,
            options,
            set,
            default,
            value,
        }
    }
}

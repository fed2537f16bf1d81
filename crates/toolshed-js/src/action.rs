//! Actions as a plugin registers them, checked and turned into tool specs.
//!
//! The engine hands over each action as the JSON of the object the plugin passed to
//! `registerActions` (its `run` function checked separately), so every rule about names,
//! properties and schemas lives here in plain Rust.

use serde_json::{Map, Value, json};
use toolshed_core::{Danger, Plane, ToolAnnotations, ToolSpec};

/// The longest action name.
pub(crate) const MAX_ACTION_NAME: usize = 40;
/// The longest tool name.
const MAX_TOOL_NAME: usize = 64;
/// The longest property name.
const MAX_PROPERTY_NAME: usize = 64;

const ACTION_KEYS: &[&str] = &[
    "name",
    "label",
    "description",
    "properties",
    "outputs",
    "annotations",
    "complexity",
    "run",
];
const PROPERTY_KEYS: &[&str] = &[
    "type",
    "description",
    "default",
    "enum",
    "required",
    "items",
    "format",
];
const ANNOTATION_KEYS: &[&str] = &["readOnly", "destructive", "idempotent", "openWorld"];

/// The value types a property may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PropType {
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Object,
}

impl PropType {
    const NAMES: &str = "string, number, integer, boolean, array, object";

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            "object" => Self::Object,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Array => "array",
            Self::Object => "object",
        }
    }

    fn admits(self, value: &Value) -> bool {
        match self {
            Self::String => value.is_string(),
            Self::Number => value.is_number(),
            Self::Integer => {
                value.is_i64()
                    || value.is_u64()
                    || value
                        .as_f64()
                        .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
            }
            Self::Boolean => value.is_boolean(),
            Self::Array => value.is_array(),
            Self::Object => value.is_object(),
        }
    }
}

/// One property of an action's inputs or outputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Property {
    ty: PropType,
    description: Option<String>,
    default: Option<Value>,
    choices: Option<Vec<Value>>,
    required: bool,
    items: Option<PropType>,
    date_time: bool,
}

impl Property {
    fn parse(value: &Value, name: &str) -> Result<Self, String> {
        let at = |problem: String| format!("property `{name}`: {problem}");
        let obj = value.as_object().ok_or_else(|| {
            at("must be an object like { type: \"string\", description: \"...\" }".into())
        })?;
        if let Some(unknown) = obj.keys().find(|k| !PROPERTY_KEYS.contains(&k.as_str())) {
            return Err(at(format!(
                "unknown key `{unknown}`; a property takes {}",
                PROPERTY_KEYS.join(", ")
            )));
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => PropType::parse(t).ok_or_else(|| {
                at(format!(
                    "unknown type `{t}`; use one of {}",
                    PropType::NAMES
                ))
            })?,
            Some(other) => {
                return Err(at(format!(
                    "`type` must be one type name as a string (one of {}), not {other}",
                    PropType::NAMES
                )));
            }
            None => {
                return Err(at(format!(
                    "`type` is missing; use one of {}",
                    PropType::NAMES
                )));
            }
        };
        let description = match obj.get("description") {
            None => None,
            Some(Value::String(d)) => Some(d.clone()),
            Some(_) => return Err(at("`description` must be a string".into())),
        };
        let required = match obj.get("required") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(at("`required` must be true or false".into())),
        };
        let items = match (obj.get("items"), ty) {
            (None, _) => None,
            (Some(items), PropType::Array) => {
                let t = items
                    .as_object()
                    .filter(|o| o.len() == 1)
                    .and_then(|o| o.get("type"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("`items` must be { type: \"...\" }".into()))?;
                Some(PropType::parse(t).ok_or_else(|| {
                    at(format!(
                        "unknown item type `{t}`; use one of {}",
                        PropType::NAMES
                    ))
                })?)
            }
            (Some(_), _) => return Err(at("`items` is only for properties of type array".into())),
        };
        let date_time = match obj.get("format") {
            None => false,
            Some(Value::String(f)) if f == "date-time" && ty == PropType::String => true,
            Some(_) => {
                return Err(at(
                    "the only `format` allowed is \"date-time\", on a string property".into(),
                ));
            }
        };
        let choices = match obj.get("enum") {
            None => None,
            Some(Value::Array(values)) if !values.is_empty() => {
                if let Some(bad) = values.iter().find(|v| !ty.admits(v)) {
                    return Err(at(format!(
                        "enum value {bad} is not of type {}",
                        ty.as_str()
                    )));
                }
                Some(values.clone())
            }
            Some(_) => return Err(at("`enum` must be a non-empty array of values".into())),
        };
        let default = obj.get("default").cloned();
        if let Some(d) = &default {
            if !ty.admits(d) {
                return Err(at(format!("default {d} is not of type {}", ty.as_str())));
            }
            if choices.as_ref().is_some_and(|c| !c.contains(d)) {
                return Err(at(format!("default {d} is not one of its enum values")));
            }
        }
        Ok(Self {
            ty,
            description,
            default,
            choices,
            required,
            items,
            date_time,
        })
    }

    fn schema(&self) -> Value {
        let mut s = Map::new();
        s.insert("type".into(), json!(self.ty.as_str()));
        if let Some(d) = &self.description {
            s.insert("description".into(), json!(d));
        }
        if let Some(c) = &self.choices {
            s.insert("enum".into(), Value::Array(c.clone()));
        }
        if let Some(d) = &self.default {
            s.insert("default".into(), d.clone());
        }
        if let Some(i) = self.items {
            s.insert("items".into(), json!({ "type": i.as_str() }));
        }
        if self.date_time {
            s.insert("format".into(), json!("date-time"));
        }
        Value::Object(s)
    }

    /// Why `value` does not fit this property, if it does not.
    fn misfit(&self, value: &Value) -> Option<String> {
        if !self.ty.admits(value) {
            return Some(format!(
                "expected {}, got {}",
                self.ty.as_str(),
                kind_of(value)
            ));
        }
        if let Some(c) = &self.choices
            && !c.contains(value)
        {
            return Some(format!("{value} is not one of the declared enum values"));
        }
        if let (Some(item), Value::Array(values)) = (self.items, value)
            && let Some((i, bad)) = values.iter().enumerate().find(|(_, v)| !item.admits(v))
        {
            return Some(format!(
                "item {i} should be {}, got {}",
                item.as_str(),
                kind_of(bad)
            ));
        }
        None
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A set of named properties: an action's `properties` or `outputs`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Shape(Vec<(String, Property)>);

impl Shape {
    fn parse(value: &Value, what: &str) -> Result<Self, String> {
        let obj = value.as_object().ok_or_else(|| {
            format!("`{what}` must be an object mapping names to {{ type, description, ... }}")
        })?;
        let mut props = Vec::with_capacity(obj.len());
        for (name, prop) in obj {
            if !valid_property_name(name) {
                return Err(format!(
                    "{what}: `{name}` is not a usable property name; use letters, digits and _ (not starting with a digit), at most {MAX_PROPERTY_NAME} characters"
                ));
            }
            let prop = Property::parse(prop, name).map_err(|e| format!("{what}: {e}"))?;
            props.push((name.clone(), prop));
        }
        Ok(Self(props))
    }

    /// The JSON Schema of an object with these properties. `closed` forbids other keys.
    fn schema(&self, closed: bool) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (name, prop) in &self.0 {
            properties.insert(name.clone(), prop.schema());
            if prop.required {
                required.push(json!(name));
            }
        }
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        if closed {
            schema.insert("additionalProperties".into(), json!(false));
        }
        Value::Object(schema)
    }

    fn defaults(&self) -> Map<String, Value> {
        self.0
            .iter()
            .filter_map(|(name, p)| p.default.clone().map(|d| (name.clone(), d)))
            .collect()
    }

    /// Why `value` does not fit this shape (the first problem), if it does not.
    pub(crate) fn misfit(&self, value: &Value) -> Option<String> {
        let Some(obj) = value.as_object() else {
            return Some(format!("expected an object, got {}", kind_of(value)));
        };
        for (name, prop) in &self.0 {
            match obj.get(name) {
                None if prop.required => return Some(format!("`{name}` is missing")),
                None => {}
                Some(v) => {
                    if let Some(why) = prop.misfit(v) {
                        return Some(format!("`{name}`: {why}"));
                    }
                }
            }
        }
        None
    }
}

fn valid_property_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_PROPERTY_NAME
}

/// Whether `name` is a valid action name: `[a-z0-9_]`, 1 to 40 characters.
pub(crate) fn valid_action_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ACTION_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The prefix of a plugin's tool names: the last dot-separated segment of its id with `-`
/// and `.` mapped to `_` (`acme.hello-world` → `hello_world`).
pub(crate) fn tool_prefix(plugin_id: &str) -> String {
    plugin_id
        .rsplit('.')
        .next()
        .unwrap_or(plugin_id)
        .replace(['-', '.'], "_")
}

/// An action, checked: its tool spec and what calls need to know about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ActionDef {
    /// The action's own name (without the plugin prefix).
    pub name: String,
    /// The tool as data.
    pub spec: ToolSpec,
    /// Values for inputs the caller left out.
    pub defaults: Map<String, Value>,
    /// The declared outputs; when set, every result must be an object fitting them.
    pub outputs: Option<Shape>,
    /// Written in Agent Spaces' form: its result is `{success, message, data}`, and
    /// `success: false` is the tool's error.
    pub reports: bool,
    /// Inputs filled from the plugin's config when a call leaves them out (Agent Spaces'
    /// `{{ __config__[…] }}` defaults).
    pub config_defaults: Vec<crate::agent_spaces::ConfigDefault>,
}

impl ActionDef {
    /// Checks one registered action (its JSON, `run` already checked) and builds its spec.
    /// `prefix` is [`tool_prefix`] of the plugin id; `plane` the manifest's plane.
    pub(crate) fn parse(value: &Value, prefix: &str, plane: Plane) -> Result<Self, String> {
        let rewritten = crate::agent_spaces::native_action(value);
        let reports = rewritten.is_some();
        let (value, config_defaults) = match &rewritten {
            Some((v, d)) => (v, d.clone()),
            None => (value, Vec::new()),
        };
        let obj = value.as_object().ok_or("an action must be an object")?;
        let name = match obj.get("name") {
            Some(Value::String(n)) if valid_action_name(n) => n.clone(),
            Some(Value::String(n)) => {
                return Err(format!(
                    "name `{n}` is not valid; use 1 to {MAX_ACTION_NAME} characters from a-z, 0-9 and _"
                ));
            }
            _ => return Err("`name` is missing or not a string".into()),
        };
        let at = |problem: String| format!("action `{name}`: {problem}");
        if let Some(unknown) = obj.keys().find(|k| !ACTION_KEYS.contains(&k.as_str())) {
            return Err(at(format!(
                "unknown key `{unknown}`; an action takes {}",
                ACTION_KEYS.join(", ")
            )));
        }
        let tool_name = format!("{prefix}_{name}");
        if tool_name.len() > MAX_TOOL_NAME {
            return Err(at(format!(
                "the tool name `{tool_name}` is longer than {MAX_TOOL_NAME} characters; use a shorter action name"
            )));
        }
        let description = match obj.get("description") {
            Some(Value::String(d)) if !d.trim().is_empty() => d.clone(),
            _ => {
                return Err(at(
                    "`description` is required: a non-empty string telling a model what the action does".into(),
                ));
            }
        };
        let label = match obj.get("label") {
            None => None,
            Some(Value::String(l)) => Some(l.clone()),
            Some(_) => return Err(at("`label` must be a string".into())),
        };
        let inputs = match obj.get("properties") {
            None => Shape::default(),
            Some(p) => Shape::parse(p, "properties").map_err(at)?,
        };
        let outputs = match obj.get("outputs") {
            None => None,
            Some(p) => Some(Shape::parse(p, "outputs").map_err(at)?),
        };
        let annotations = parse_annotations(obj.get("annotations")).map_err(at)?;
        // Cyrene's `Complexity()`: `complex` runs long (a job or a task by default).
        let complexity = match obj.get("complexity") {
            None => toolshed_core::Complexity::Simple,
            Some(Value::String(c)) if c.eq_ignore_ascii_case("simple") => {
                toolshed_core::Complexity::Simple
            }
            Some(Value::String(c)) if c.eq_ignore_ascii_case("complex") => {
                toolshed_core::Complexity::Complex
            }
            Some(other) => {
                return Err(at(format!(
                    "`complexity` is \"simple\" or \"complex\", not {other}"
                )));
            }
        };
        let mut spec = ToolSpec::new(tool_name, description)
            .input_schema(inputs.schema(true))
            .group(prefix)
            .annotations(annotations);
        spec.title = label;
        spec.output_schema = outputs.as_ref().map(|o| o.schema(false));
        classify(&mut spec);
        spec.plane = plane;
        spec.complexity = complexity;
        Ok(Self {
            name,
            spec,
            defaults: inputs.defaults(),
            outputs,
            reports,
            config_defaults,
        })
    }
}

impl ActionDef {
    /// A tool the manifest lists (Fenix's `tool_catalog`), served by an exported function
    /// of its name: it keeps its name and schema; defaults come from the schema's
    /// properties' `default`s.
    pub(crate) fn from_catalog(mut spec: ToolSpec, prefix: &str, plane: Plane) -> Self {
        if spec.group.is_empty() {
            spec.group = prefix.to_string();
        }
        // The plugin's plane, unless the tool names the other one (a tool on the program
        // plane of an execution plugin: Fenix's per-tool plane).
        if spec.plane == Plane::Execution {
            spec.plane = plane;
        }
        if spec.annotations.read_only {
            spec.annotations.destructive = false;
        }
        classify(&mut spec);
        let defaults = spec
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter_map(|(k, p)| Some((k.clone(), p.get("default")?.clone())))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            name: spec.name.clone(),
            spec,
            defaults,
            outputs: None,
            reports: false,
            config_defaults: Vec::new(),
        }
    }
}

/// What a plugin's tool is taken to do, from its annotations: whether it changes state
/// and how dangerous it is (read-only low, destructive high, the rest medium).
fn classify(spec: &mut ToolSpec) {
    let hints = spec.annotations;
    spec.mutates_state = !hints.read_only;
    spec.danger = if hints.read_only {
        Danger::Low
    } else if hints.destructive {
        Danger::High
    } else {
        Danger::Medium
    };
}

fn parse_annotations(value: Option<&Value>) -> Result<ToolAnnotations, String> {
    let mut out = ToolAnnotations::default();
    let Some(value) = value else {
        return Ok(out);
    };
    let obj = value
        .as_object()
        .ok_or("`annotations` must be an object of booleans")?;
    for (key, v) in obj {
        let Some(b) = v.as_bool() else {
            return Err(format!("annotation `{key}` must be true or false"));
        };
        match key.as_str() {
            "readOnly" => out.read_only = b,
            "destructive" => out.destructive = b,
            "idempotent" => out.idempotent = b,
            "openWorld" => out.open_world = b,
            _ => {
                return Err(format!(
                    "unknown annotation `{key}`; use {}",
                    ANNOTATION_KEYS.join(", ")
                ));
            }
        }
    }
    if out.read_only {
        // A read-only action destroys nothing, whatever the default says.
        out.destructive = false;
    }
    Ok(out)
}

/// Fills in defaults for inputs the caller left out. Non-object arguments become `{}`
/// first (the host has already validated them against the schema).
pub(crate) fn apply_defaults(args: Value, defaults: &Map<String, Value>) -> Value {
    let mut obj = match args {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    for (k, v) in defaults {
        if !obj.contains_key(k) {
            obj.insert(k.clone(), v.clone());
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<ActionDef, String> {
        ActionDef::parse(&v, "hello_world", Plane::Execution)
    }

    #[test]
    fn builds_a_conservative_schema() {
        let a = parse(json!({
            "name": "greet", "label": "Greet", "description": "Say hello.",
            "properties": {
                "name": { "type": "string", "default": "world", "description": "who" },
                "tone": { "type": "string", "enum": ["warm", "dry"], "required": true },
                "times": { "type": "number" },
                "tags": { "type": "array", "items": { "type": "string" } },
                "when": { "type": "string", "format": "date-time" }
            },
            "annotations": { "readOnly": true, "openWorld": false }
        }))
        .unwrap();
        assert_eq!(a.spec.name, "hello_world_greet");
        assert_eq!(a.spec.title.as_deref(), Some("Greet"));
        assert_eq!(
            a.spec.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "who", "default": "world" },
                    "tone": { "type": "string", "enum": ["warm", "dry"] },
                    "times": { "type": "number" },
                    "tags": { "type": "array", "items": { "type": "string" } },
                    "when": { "type": "string", "format": "date-time" }
                },
                "required": ["tone"],
                "additionalProperties": false
            })
        );
        assert!(a.spec.annotations.read_only && !a.spec.annotations.destructive);
        assert_eq!(a.spec.danger, Danger::Low);
        assert_eq!(
            a.defaults,
            json!({"name": "world"}).as_object().cloned().unwrap()
        );
        assert_eq!(
            apply_defaults(json!({"tone": "dry"}), &a.defaults),
            json!({"tone": "dry", "name": "world"})
        );
    }

    #[test]
    fn refuses_what_the_dialect_does_not_have() {
        let err = |v: Value| parse(v).unwrap_err();
        let base = |props: Value| json!({"name": "a", "description": "d", "properties": props});
        let e = err(base(json!({"n": {"type": "int"}})));
        assert!(e.contains("`n`") && e.contains("unknown type `int`"), "{e}");
        let e = err(base(json!({"n": {"type": ["string", "null"]}})));
        assert!(e.contains("one type name"), "{e}");
        let e = err(base(json!({"n": {"type": "string", "$ref": "#/x"}})));
        assert!(e.contains("unknown key `$ref`"), "{e}");
        let e = err(base(json!({"n": {"type": "string", "format": "email"}})));
        assert!(e.contains("date-time"), "{e}");
        let e = err(base(json!({"n": {"type": "number", "default": "x"}})));
        assert!(e.contains("default"), "{e}");
        let e = err(json!({"name": "Bad-Name", "description": "d"}));
        assert!(e.contains("Bad-Name"), "{e}");
        let e = err(json!({"name": "a"}));
        assert!(e.contains("description"), "{e}");
        let e = err(json!({"name": "a", "description": "d", "input": {}}));
        assert!(e.contains("unknown key `input`"), "{e}");
        let long = json!({"name": "a".repeat(40), "description": "d"});
        let e = ActionDef::parse(&long, &"p".repeat(30), Plane::Execution).unwrap_err();
        assert!(e.contains("longer than 64"), "{e}");
    }

    #[test]
    fn outputs_become_an_open_schema_and_are_checked() {
        let a = parse(json!({
            "name": "count", "description": "d",
            "outputs": { "n": { "type": "integer", "required": true }, "note": { "type": "string" } }
        }))
        .unwrap();
        assert_eq!(
            a.spec.output_schema,
            Some(json!({
                "type": "object",
                "properties": { "n": { "type": "integer" }, "note": { "type": "string" } },
                "required": ["n"]
            }))
        );
        let shape = a.outputs.unwrap();
        assert_eq!(shape.misfit(&json!({"n": 3, "extra": true})), None);
        assert!(
            shape
                .misfit(&json!({"note": "x"}))
                .unwrap()
                .contains("`n` is missing")
        );
        assert!(
            shape
                .misfit(&json!({"n": 1.5}))
                .unwrap()
                .contains("integer")
        );
        assert!(shape.misfit(&json!([1])).unwrap().contains("object"));
    }

    #[test]
    fn prefixes_come_from_the_last_id_segment() {
        assert_eq!(tool_prefix("acme.hello-world"), "hello_world");
        assert_eq!(tool_prefix("solo"), "solo");
        assert!(valid_action_name("a_1") && !valid_action_name("") && !valid_action_name("A"));
    }
}

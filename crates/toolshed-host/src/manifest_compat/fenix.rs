//! Fenix's `plugin.yml`: the plugin id, integer versions, the `tool_catalog` and its
//! attributes, the planes, and the `env_contract`.

use serde_json::{Map, Value};

use super::Notes;

pub(super) fn fenix_fields(
    obj: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
) {
    if let Some(id) = obj.remove("plugin_id") {
        if obj.contains_key("id") {
            notes.ignored("plugin_id", "`id` is also set and wins");
        } else {
            let text = match &id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let lower = text.to_ascii_lowercase();
            let why = if lower == text {
                "Fenix's plugin id".to_string()
            } else {
                format!(
                    "Fenix's plugin id, lower-cased (`{text}` → `{lower}`): toolshed ids are lower case"
                )
            };
            out.insert("id".into(), Value::String(lower));
            notes.mapped("plugin_id", "id", why);
        }
    }
    if let Some(version) = obj.get("version").cloned() {
        let fixed = match &version {
            Value::Number(n) if n.is_u64() => Some(format!("{n}.0.0")),
            Value::Number(n) => n.as_f64().map(|f| {
                let text = f.to_string();
                if text.contains('.') {
                    format!("{text}.0")
                } else {
                    format!("{text}.0.0")
                }
            }),
            Value::String(s) if s.split('.').count() == 2 && !s.contains('-') => {
                Some(format!("{s}.0"))
            }
            Value::String(s) if s.split('.').count() == 1 && s.parse::<u64>().is_ok() => {
                Some(format!("{s}.0.0"))
            }
            _ => None,
        };
        if let Some(fixed) = fixed {
            obj.remove("version");
            notes.mapped(
                "version",
                "version",
                format!(
                    "`{}` read as the semantic version `{fixed}`",
                    version_text(&version)
                ),
            );
            out.insert("version".into(), Value::String(fixed));
        }
    }
    if let Some(catalog) = obj.remove("tool_catalog") {
        if obj.contains_key("tools") {
            notes.ignored("tool_catalog", "`tools` is also set and wins");
        } else {
            let tools = match catalog {
                Value::Array(items) => items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| catalog_tool(i, item, notes))
                    .collect(),
                // A map of name → tool.
                Value::Object(map) => map
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, mut item))| {
                        if let Some(o) = item.as_object_mut() {
                            o.entry("name").or_insert(Value::String(name));
                        }
                        catalog_tool(i, item, notes)
                    })
                    .collect(),
                other => vec![other],
            };
            out.insert("tools".into(), Value::Array(tools));
            notes.mapped(
                "tool_catalog",
                "tools",
                "Fenix's tool catalog: each tool keeps its name and schema",
            );
        }
    }
    if let Some(contract) = obj.remove("env_contract") {
        if obj.contains_key("env") {
            notes.ignored("env_contract", "`env` is also set and wins");
        } else {
            out.insert("env".into(), Value::Array(env_contract(contract)));
            notes.mapped(
                "env_contract",
                "env",
                "the variables the plugin needs: a required one missing makes it unconfigured, naming it",
            );
        }
    }
    if let Some(name) = obj.remove("display_name") {
        if obj.contains_key("name") || out.contains_key("name") {
            let _ = name;
            notes.ignored("display_name", "`name` is also set and wins");
        } else {
            out.insert("name".into(), name);
            notes.mapped("display_name", "name", "Fenix's display name");
        }
    }
    for key in ["group_metadata", "GROUP_METADATA", "operator_groups"] {
        let Some(groups) = obj.remove(key) else {
            continue;
        };
        if obj.contains_key("groups") || out.contains_key("groups") {
            notes.ignored(key, "`groups` is also set and wins");
            continue;
        }
        out.insert("groups".into(), group_metadata(groups));
        notes.mapped(
            key,
            "groups",
            "the operator groups' labels and descriptions",
        );
    }
    if let Some(plane) = obj.remove("default_runtime_plane") {
        if obj.contains_key("plane") {
            notes.ignored("default_runtime_plane", "`plane` is also set and wins");
        } else {
            obj.insert("plane".into(), plane);
            notes.mapped(
                "default_runtime_plane",
                "plane",
                "the plane the plugin's tools run on unless a tool says otherwise",
            );
        }
    }
    if let Some(Value::Object(map)) = obj.get("requirements").cloned() {
        obj.remove("requirements");
        out.insert(
            "requirements".into(),
            Value::Array(requirements(map, notes)),
        );
        notes.mapped(
            "requirements",
            "requirements",
            "Fenix's requirements by kind: each program becomes a requirement checked on PATH",
        );
    }
    if let Some(Value::String(plane)) = obj.get("plane").cloned() {
        let mapped = match plane_name(&plane) {
            Some(to) if to == plane => None,
            Some(to) => Some(to),
            None => {
                obj.remove("plane");
                notes.ignored("plane", format!("`{plane}` is not a plane toolshed knows (execution, program); the default, execution, applies"));
                return;
            }
        };
        if let Some(to) = mapped {
            obj.remove("plane");
            out.insert("plane".into(), Value::String(to.into()));
            notes.mapped(
                "plane",
                "plane",
                format!("`{plane}` is toolshed's `{to}` plane"),
            );
        }
    }
}

/// Fenix's `env_contract` as toolshed's `env` list: a list of names or of `{name,
/// description, required, secret}` (`key`/`var` for the name, `desc` for the description,
/// `sensitive` for secret), or a map of name → `true`/`false` (required), a description,
/// or such an object. A variable a contract lists is required unless it says otherwise.
pub(super) fn env_contract(contract: Value) -> Vec<Value> {
    let entry = |name: String, spec: Value| -> Value {
        let mut var = Map::new();
        var.insert("name".into(), Value::String(name));
        let (required, description, secret) = match &spec {
            Value::Bool(b) => (*b, None, false),
            Value::String(d) => (true, Some(d.clone()), false),
            Value::Object(o) => (
                o.get("required")
                    .and_then(Value::as_bool)
                    .or_else(|| o.get("optional").and_then(Value::as_bool).map(|b| !b))
                    .unwrap_or(true),
                o.get("description")
                    .or_else(|| o.get("desc"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                o.get("secret")
                    .or_else(|| o.get("sensitive"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            ),
            _ => (true, None, false),
        };
        var.insert("required".into(), Value::Bool(required));
        if let Some(d) = description {
            var.insert("description".into(), Value::String(d));
        }
        if secret {
            var.insert("secret".into(), Value::Bool(true));
        }
        Value::Object(var)
    };
    match contract {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| match item {
                Value::String(name) => Some(entry(name, Value::Bool(true))),
                Value::Object(o) => {
                    let name = ["name", "key", "var"]
                        .iter()
                        .find_map(|k| o.get(*k).and_then(Value::as_str))?
                        .to_string();
                    Some(entry(name, Value::Object(o)))
                }
                _ => None,
            })
            .collect(),
        Value::Object(map) => map
            .into_iter()
            .map(|(name, spec)| entry(name, spec))
            .collect(),
        _ => Vec::new(),
    }
}

/// Toolshed's plane for one of the names Fenix and its plugins give planes.
fn plane_name(plane: &str) -> Option<&'static str> {
    match plane.to_ascii_lowercase().as_str() {
        "execution" | "execution_runtime" | "runtime" | "data" | "agent" | "exec" | "workspace"
        | "user" => Some("execution"),
        "program" | "program_runtime" | "control" | "management" | "admin" | "system" => {
            Some("program")
        }
        _ => None,
    }
}

/// Fenix's group metadata (name → `{label, description}`, `display_name`/`title` for the
/// label, `desc` for the description, or just the label as a string) as toolshed's `groups`.
fn group_metadata(groups: Value) -> Value {
    let Value::Object(groups) = groups else {
        return Value::Object(Map::new());
    };
    let entries = groups.into_iter().map(|(name, meta)| {
        let text = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| meta.get(*k).and_then(Value::as_str))
                .map(str::to_string)
        };
        let label = match &meta {
            Value::String(label) => Some(label.clone()),
            _ => text(&["label", "display_name", "title", "name"]),
        }
        .unwrap_or_else(|| name.clone());
        let description = text(&["description", "desc", "summary"]).unwrap_or_default();
        (
            name,
            serde_json::json!({"label": label, "description": description}),
        )
    });
    Value::Object(entries.collect())
}

pub(super) fn version_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Fenix's object-form `requirements` as toolshed's list: a list of programs under any
/// key (`binaries`, `bins`, `commands`, `tools`, …; under `optional` they are optional), a
/// program with its version (`git: ">=2.30"`), or with `{version, description,
/// optional}`. Keys naming no programs (`env`, `python_packages`, …) are kept in the notes.
fn requirements(map: Map<String, Value>, notes: &mut Notes) -> Vec<Value> {
    let mut out = Vec::new();
    let mut add = |binary: &str, description: Option<String>, optional: bool| {
        let mut r = Map::new();
        r.insert("binary".into(), Value::String(binary.to_string()));
        if let Some(d) = description {
            r.insert("description".into(), Value::String(d));
        }
        if optional {
            r.insert("optional".into(), Value::Bool(true));
        }
        out.push(Value::Object(r));
    };
    for (key, value) in map {
        let optional = key == "optional";
        match value {
            Value::Array(items)
                if !matches!(
                    key.as_str(),
                    "env" | "env_vars" | "python_packages" | "packages" | "pip" | "npm"
                ) =>
            {
                for item in items {
                    match item {
                        Value::String(name) => add(&name, None, optional),
                        Value::Object(o) => {
                            if let Some(name) = o
                                .get("name")
                                .or_else(|| o.get("binary"))
                                .and_then(Value::as_str)
                            {
                                let description = o
                                    .get("description")
                                    .or_else(|| o.get("version"))
                                    .and_then(Value::as_str)
                                    .map(str::to_string);
                                let optional = optional
                                    || o.get("optional") == Some(&Value::Bool(true))
                                    || o.get("required") == Some(&Value::Bool(false));
                                add(name, description, optional);
                            }
                        }
                        _ => {}
                    }
                }
            }
            Value::String(version) => add(&key, Some(format!("version {version}")), false),
            Value::Object(o) => {
                let description = o
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| {
                        o.get("version")
                            .and_then(Value::as_str)
                            .map(|v| format!("version {v}"))
                    });
                let optional = o.get("optional") == Some(&Value::Bool(true))
                    || o.get("required") == Some(&Value::Bool(false));
                add(&key, description, optional);
            }
            other => notes.ignored(
                &format!("requirements.{key}"),
                format!(
                    "not a program toolshed can check on PATH ({})",
                    version_text(&other)
                ),
            ),
        }
    }
    out
}

/// One `tool_catalog` entry as a toolshed tool: `parameters` / `inputSchema` / `input`
/// become `input_schema`, `outputSchema` becomes `output_schema`; other keys are dropped
/// with a note.
pub(super) fn catalog_tool(i: usize, item: Value, notes: &mut Notes) -> Value {
    let Value::Object(fields) = item else {
        return item;
    };
    let mut tool = Map::new();
    let mut read_only = false;
    let mut idempotent = false;
    let mut attributes = Map::new();
    for (key, value) in fields {
        let at = format!("tool_catalog[{i}].{key}");
        match key.as_str() {
            "annotations" => {
                tool.insert(key, hint_names(value));
            }
            "name" | "title" | "description" | "input_schema" | "output_schema" => {
                tool.insert(key, value);
            }
            "tool_name" | "tool_id" | "id" | "key" => {
                tool.entry("name").or_insert(value);
                notes.mapped(&at, &format!("tools[{i}].name"), "the tool's name");
            }
            "display_name" | "label" => {
                tool.entry("title").or_insert(value);
                notes.mapped(&at, &format!("tools[{i}].title"), "the tool's title");
            }
            "summary" => {
                tool.entry("description").or_insert(value);
                notes.mapped(
                    &at,
                    &format!("tools[{i}].description"),
                    "what the tool does",
                );
            }
            "parameters" | "inputSchema" | "input" | "params" => {
                tool.insert("input_schema".into(), value);
                notes.mapped(
                    &at,
                    &format!("tools[{i}].input_schema"),
                    "the tool's input schema",
                );
            }
            "outputSchema" | "output" | "returns" => {
                tool.insert("output_schema".into(), value);
                notes.mapped(
                    &at,
                    &format!("tools[{i}].output_schema"),
                    "the tool's output schema",
                );
            }
            "mutates_state" => {
                if value == Value::Bool(false) {
                    read_only = true;
                }
                tool.insert(key, value);
            }
            "streaming_support" => {
                tool.insert("streaming".into(), value);
                notes.mapped(
                    &at,
                    &format!("tools[{i}].streaming"),
                    "whether it streams progress",
                );
            }
            "operator_group" => {
                tool.insert("group".into(), value);
                notes.mapped(&at, &format!("tools[{i}].group"), "the tool's group");
            }
            "plane" | "runtime_plane" | "default_runtime_plane" => {
                match value.as_str().and_then(plane_name) {
                    Some(plane) => {
                        tool.insert("plane".into(), Value::String(plane.into()));
                        notes.mapped(
                            &at,
                            &format!("tools[{i}].plane"),
                            format!("the plane this tool runs on: toolshed's `{plane}`"),
                        );
                    }
                    None => notes.ignored(
                        &at,
                        "not a plane toolshed knows (execution, program): the plugin's applies",
                    ),
                }
            }
            "tool_kind"
            | "resource_identity_kind"
            | "implementation_source"
            | "implementation_ref"
            | "idempotency_policy"
            | "idempotency_key_field"
            | "supports_streaming_output" => {
                if key == "supports_streaming_output" {
                    tool.entry("streaming").or_insert(value.clone());
                }
                if key == "idempotency_policy"
                    && value
                        .as_str()
                        .is_some_and(|p| p.eq_ignore_ascii_case("idempotent"))
                {
                    idempotent = true;
                }
                attributes.insert(key.clone(), value);
                notes.mapped(
                    &at,
                    &format!("tools[{i}].attributes.{key}"),
                    "kept as written and shown with the tool",
                );
            }
            _ => notes.ignored(&at, "not a field of a toolshed tool"),
        }
    }
    if !tool.contains_key("description") {
        let text = tool
            .get("title")
            .or_else(|| tool.get("name"))
            .cloned()
            .unwrap_or(Value::Null);
        if !text.is_null() {
            tool.insert("description".into(), text);
            notes.defaulted(
                &format!("tools[{i}].description"),
                "the entry has no description: its title stands in",
            );
        }
    }
    if !attributes.is_empty() {
        tool.insert("attributes".into(), Value::Object(attributes));
    }
    if idempotent {
        let annotations = tool
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(hints) = annotations.as_object_mut() {
            hints.entry("idempotent").or_insert(Value::Bool(true));
        }
    }
    // A tool that changes no state is read-only, unless its annotations say otherwise
    // (toolshed derives whether a tool changes state from them).
    if read_only {
        let annotations = tool
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(hints) = annotations.as_object_mut() {
            hints.entry("read_only").or_insert(Value::Bool(true));
        }
    }
    Value::Object(tool)
}

/// Annotations as MCP names them (`readOnlyHint`, `readOnly`…) in toolshed's names.
pub(super) fn hint_names(value: Value) -> Value {
    let Value::Object(hints) = value else {
        return value;
    };
    let renamed = hints
        .into_iter()
        .map(|(k, v)| {
            let name = match k.trim_end_matches("Hint") {
                "readOnly" => "read_only",
                "destructive" => "destructive",
                "idempotent" => "idempotent",
                "openWorld" => "open_world",
                _ => return (k, v),
            };
            (name.to_string(), v)
        })
        .collect();
    Value::Object(renamed)
}

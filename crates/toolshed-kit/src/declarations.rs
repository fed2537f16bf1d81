//! TypeScript declarations of the tools a `run_code` snippet can call, generated from their
//! input schemas: what a model reads (an MCP resource, a REST document) before it writes a
//! snippet, instead of every tool's schema in its tool list.

use std::fmt::Write as _;

use serde_json::Value;
use toolshed_core::ToolSpec;

/// The resource's URI.
pub const DECLARATIONS_URI: &str = "toolshed://run_code/tools.d.ts";

/// How deep nested schemas are written out before `unknown` stands in.
const MAX_DEPTH: usize = 6;

/// The declarations of `tools`, sorted by name.
pub fn declarations(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "// The tools a run_code snippet calls as `await tools.NAME(args)`. Each call resolves to\n\
         // the tool's text (or its structured result when it gives only that) and throws an\n\
         // Error whose `kind` says why it failed (not_found, denied, invalid_arguments, ...).\n\
         declare const tools: {\n",
    );
    let mut sorted: Vec<&ToolSpec> = tools.iter().filter(|t| t.name != "run_code").collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for spec in sorted {
        comment(&mut out, "  ", &spec.description);
        let _ = writeln!(
            out,
            "  {}(args{}: {}): Promise<any>;",
            spec.name,
            if required_any(&spec.input_schema) {
                ""
            } else {
                "?"
            },
            ty(&spec.input_schema, "  ", 0)
        );
    }
    out.push_str("};\n");
    out
}

fn required_any(schema: &Value) -> bool {
    schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
}

fn comment(out: &mut String, indent: &str, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
    } else {
        let _ = writeln!(out, "{indent}/**");
        for line in lines {
            let _ = writeln!(out, "{indent} * {line}");
        }
        let _ = writeln!(out, "{indent} */");
    }
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => serde_json::to_string(s).unwrap_or_else(|_| "string".into()),
        other => other.to_string(),
    }
}

/// The TypeScript type of `schema`, its lines indented past `indent`.
fn ty(schema: &Value, indent: &str, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Some(obj) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "never"
        } else {
            "unknown"
        }
        .into();
    };
    if let Some(value) = obj.get("const") {
        return literal(value);
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        return values.iter().map(literal).collect::<Vec<_>>().join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(choices)) = obj.get(key) {
            return choices
                .iter()
                .map(|c| ty(c, indent, depth + 1))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    match obj.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .map(|t| {
                let mut one = obj.clone();
                one.insert("type".into(), t.clone());
                ty(&Value::Object(one), indent, depth + 1)
            })
            .collect::<Vec<_>>()
            .join(" | "),
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = obj
                    .get("items")
                    .map_or_else(|| "unknown".into(), |i| ty(i, indent, depth + 1));
                if item.contains(' ') {
                    format!("Array<{item}>")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object(obj, indent, depth),
            _ => "unknown".into(),
        },
        _ if obj.contains_key("properties") => object(obj, indent, depth),
        _ => "unknown".into(),
    }
}

fn object(obj: &serde_json::Map<String, Value>, indent: &str, depth: usize) -> String {
    let Some(Value::Object(properties)) = obj.get("properties") else {
        return "Record<string, unknown>".into();
    };
    if properties.is_empty() {
        return "{}".into();
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for (name, schema) in properties {
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            comment(&mut out, &inner, description);
        }
        let key = if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
        {
            name.clone()
        } else {
            literal(&Value::String(name.clone()))
        };
        let _ = writeln!(
            out,
            "{inner}{key}{}: {};",
            if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            },
            ty(schema, &inner, depth + 1)
        );
    }
    out.push_str(indent);
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_become_typescript_with_their_descriptions() {
        let read = ToolSpec::new("workspace_read", "Read a file.").input_schema(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file"},
                "limit": {"type": ["integer", "null"]},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "where": {"type": "object", "properties": {"x-y": {"type": "boolean"}}}
            },
            "required": ["path"]
        }));
        let now = ToolSpec::new("datetime_now", "The time.");
        let text = declarations(&[read, now]);
        assert!(text.contains("declare const tools: {"), "{text}");
        assert!(
            text.contains("  /** Read a file. */\n  workspace_read(args: {"),
            "{text}"
        );
        assert!(
            text.contains("    /** The file */\n    path: string;"),
            "{text}"
        );
        assert!(text.contains("limit?: number | null;"), "{text}");
        assert!(text.contains("mode?: \"a\" | \"b\";"), "{text}");
        assert!(text.contains("tags?: string[];"), "{text}");
        assert!(text.contains("\"x-y\"?: boolean;"), "{text}");
        assert!(
            text.contains("datetime_now(args?: {}): Promise<any>;"),
            "{text}"
        );
        assert!(text.find("datetime_now") < text.find("workspace_read"));
    }
}

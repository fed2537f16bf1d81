//! Between the MCP wire types and toolshed's: a server's tool becomes a [`ToolSpec`], its
//! call result a [`ToolOutput`]. Read through JSON, so every field the protocol carries is
//! seen whatever the SDK models.

use serde_json::{Value, json};
use toolshed_core::{Content, Danger, ToolAnnotations, ToolOutput, ToolSpec};

/// The spec of a server's tool (`tool` as the server listed it) mounted as `name` in
/// `group`.
pub(crate) fn spec(tool: &Value, name: &str, group: &str) -> ToolSpec {
    let description = tool["description"].as_str().unwrap_or_default().to_string();
    let mut spec = ToolSpec::new(name, description);
    spec.title = tool["title"]
        .as_str()
        .or_else(|| tool["annotations"]["title"].as_str())
        .map(String::from);
    spec.input_schema = match &tool["inputSchema"] {
        Value::Object(schema) => Value::Object(schema.clone()),
        _ => json!({"type": "object"}),
    };
    spec.output_schema = tool["outputSchema"]
        .as_object()
        .map(|o| Value::Object(o.clone()));
    spec.group = group.to_string();
    // MCP's defaults: not read-only, destructive, not idempotent, open world.
    let hint = |key: &str, default: bool| tool["annotations"][key].as_bool().unwrap_or(default);
    spec.annotations = ToolAnnotations {
        read_only: hint("readOnlyHint", false),
        destructive: hint("destructiveHint", true),
        idempotent: hint("idempotentHint", false),
        open_world: hint("openWorldHint", true),
    };
    spec.mutates_state = !spec.annotations.read_only;
    spec.danger = if spec.annotations.read_only {
        Danger::Low
    } else if spec.annotations.destructive {
        Danger::High
    } else {
        Danger::Medium
    };
    spec
}

/// A `tools/call` result as toolshed's output: text and images as they are, any other
/// block (audio, resource links, embedded resources) kept whole as JSON.
pub(crate) fn output(result: &Value) -> ToolOutput {
    let content = result["content"]
        .as_array()
        .map(|blocks| blocks.iter().map(block).collect())
        .unwrap_or_default();
    ToolOutput {
        content,
        structured: result
            .get("structuredContent")
            .filter(|v| !v.is_null())
            .cloned(),
        is_error: result["isError"].as_bool().unwrap_or(false),
    }
}

fn block(block: &Value) -> Content {
    match block["type"].as_str() {
        Some("text") => Content::Text {
            text: block["text"].as_str().unwrap_or_default().to_string(),
        },
        Some("image") => Content::Image {
            data: block["data"].as_str().unwrap_or_default().to_string(),
            mime_type: block["mimeType"]
                .as_str()
                .unwrap_or("image/png")
                .to_string(),
        },
        _ => Content::Json {
            json: block.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_results_cross_over_whole() {
        let tool = json!({
            "name": "echo", "description": "Echoes.", "title": "Echo",
            "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        });
        let spec = spec(&tool, "srv__echo", "mcp:srv");
        assert_eq!(spec.name, "srv__echo");
        assert_eq!(spec.title.as_deref(), Some("Echo"));
        assert_eq!(spec.group, "mcp:srv");
        assert!(spec.annotations.read_only && spec.danger == Danger::Low);
        let bare = super::spec(&json!({"name": "x"}), "srv__x", "mcp:srv");
        assert!(bare.annotations.destructive && bare.danger == Danger::High);

        let out = output(&json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "aGk=", "mimeType": "image/gif"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"}
            ],
            "structuredContent": {"n": 1},
            "isError": true
        }));
        assert!(out.is_error);
        assert_eq!(out.structured, Some(json!({"n": 1})));
        assert_eq!(out.content.len(), 3);
        assert!(matches!(&out.content[2], Content::Json { json } if json["uri"] == "file:///x"));
    }
}

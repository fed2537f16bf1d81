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

/// A `tools/call` result as toolshed's output: text and images as they are (moved, not
/// copied), any other block (audio, resource links, embedded resources) kept whole, for MCP
/// clients to get as it is.
pub(crate) fn output(mut result: Value) -> ToolOutput {
    let content = match result.get_mut("content").map(Value::take) {
        Some(Value::Array(blocks)) => blocks.into_iter().map(block).collect(),
        _ => Vec::new(),
    };
    ToolOutput {
        content,
        is_error: result["isError"].as_bool().unwrap_or(false),
        structured: result
            .get_mut("structuredContent")
            .map(Value::take)
            .filter(|v| !v.is_null()),
    }
}

/// The string at `key` of `block`, taken out of it.
fn take_str(block: &mut Value, key: &str) -> Option<String> {
    match block.get_mut(key).map(Value::take) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn block(mut block: Value) -> Content {
    match block["type"].as_str() {
        Some("text") => Content::Text {
            text: take_str(&mut block, "text").unwrap_or_default(),
        },
        Some("image") => Content::Image {
            data: take_str(&mut block, "data").unwrap_or_default(),
            mime_type: take_str(&mut block, "mimeType").unwrap_or_else(|| "image/png".into()),
        },
        _ => Content::Mcp { block },
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

        let out = output(json!({
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
        assert!(
            matches!(&out.content[2], Content::Mcp { block } if block["uri"] == "file:///x" && block["type"] == "resource_link")
        );
    }
}

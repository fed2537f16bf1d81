//! Translating between toolshed's vocabulary and MCP's: specs to tools, outputs and errors
//! to `CallToolResult`s.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use toolshed_core::{Content, ToolError, ToolOutput, ToolSpec};

/// The MCP tool for `spec`. Annotations state only the hints whose value differs from
/// what the protocol reads into an absent one ([`toolshed_core::ToolAnnotations::stated`]):
/// a client reads exactly what the spec says, and a model pays for no restated default.
pub(crate) fn tool_from_spec(spec: &ToolSpec) -> Tool {
    let input = match &spec.input_schema {
        Value::Object(map) => {
            let mut map = map.clone();
            // The pipeline refuses unknown arguments (naming them) whatever the listing
            // says; a model needs no `additionalProperties: false` to call a tool right, and
            // would pay for it in every tool of every `tools/list`.
            if map.get("additionalProperties") == Some(&Value::Bool(false)) {
                map.remove("additionalProperties");
            }
            map
        }
        // Registration compiles every schema, so this is unreachable in practice; an
        // argument-less schema is the honest fallback.
        _ => JsonObject::from_iter([("type".to_string(), json!("object"))]),
    };
    let mut tool = Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(input));
    let hints = spec.annotations.stated();
    if !hints.is_empty() {
        let mut annotations = ToolAnnotations::new();
        for (hint, value) in hints {
            annotations = match hint {
                "readOnlyHint" => annotations.read_only(value),
                "destructiveHint" => annotations.destructive(value),
                "idempotentHint" => annotations.idempotent(value),
                _ => annotations.open_world(value),
            };
        }
        tool = tool.with_annotations(annotations);
    }
    if let Some(title) = &spec.title {
        tool = tool.with_title(title.clone());
    }
    // MCP requires an output schema to describe an object; anything else is left out
    // rather than advertised wrongly.
    if let Some(Value::Object(schema)) = &spec.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(schema.clone()));
    }
    tool
}

/// `spec` as an MCP client receives it in `tools/list`, as JSON.
pub fn listed_tool(spec: &ToolSpec) -> Value {
    serde_json::to_value(tool_from_spec(spec)).unwrap_or(Value::Null)
}

/// The result for a tool that ran. Text is always present: a structured-only output gets
/// its JSON as a text block, since many clients show only text to the model.
pub(crate) fn result_from_output(output: ToolOutput) -> CallToolResult {
    let mut blocks: Vec<ContentBlock> = output.content.into_iter().map(block).collect();
    let has_text = blocks.iter().any(|b| matches!(b, ContentBlock::Text(_)));
    if !has_text && let Some(value) = &output.structured {
        blocks.push(ContentBlock::text(pretty(value)));
    }
    let mut result = if output.is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    // structuredContent is a JSON object in MCP; a non-object value already travels as
    // text above.
    if let Some(value @ Value::Object(_)) = output.structured {
        result.structured_content = Some(value);
    }
    result
}

fn block(content: Content) -> ContentBlock {
    match content {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
        Content::Json { json } => ContentBlock::text(pretty(&json)),
        // A block a mounted server sent, as it sent it; one this SDK cannot read, as JSON.
        Content::Mcp { block } => serde_json::from_value::<ContentBlock>(block.clone())
            .unwrap_or_else(|_| ContentBlock::text(pretty(&block))),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// How a call that produced no output reaches the client. `resolved` is false when the
/// pipeline could not resolve the tool name: that is a fault of the request, so a
/// JSON-RPC error (invalid params); every other error is the model's to read and act on,
/// so an `isError` result with the pipeline's message.
pub(crate) fn result_from_error(
    tool: &str,
    resolved: bool,
    error: ToolError,
) -> Result<CallToolResult, McpError> {
    if !resolved && matches!(error, ToolError::NotFound(_)) {
        return Err(McpError::invalid_params(
            error.to_string(),
            Some(json!({ "tool": tool })),
        ));
    }
    Ok(CallToolResult::error(vec![ContentBlock::text(
        error.to_string(),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolshed_core::ToolAnnotations as Hints;

    #[test]
    fn annotations_state_what_differs_from_the_protocols_defaults() {
        let spec = ToolSpec::new("t", "d").annotations(Hints::PURE).title("T");
        let tool = serde_json::to_value(tool_from_spec(&spec)).unwrap();
        // Read-only: destructive and idempotent mean nothing; closed world differs.
        assert_eq!(
            tool["annotations"],
            json!({"readOnlyHint": true, "openWorldHint": false})
        );
        let writes = Hints {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: true,
        };
        let spec = ToolSpec::new("w", "d").annotations(writes);
        let tool = serde_json::to_value(tool_from_spec(&spec)).unwrap();
        assert_eq!(
            tool["annotations"],
            json!({"destructiveHint": false, "idempotentHint": true})
        );
        // Every hint at the protocol's default: nothing to state.
        let spec = ToolSpec::new("d", "d").annotations(Hints::default());
        let tool = serde_json::to_value(tool_from_spec(&spec)).unwrap();
        assert!(tool.get("annotations").is_none(), "{tool}");
        let spec = ToolSpec::new("t", "d").annotations(Hints::PURE).title("T");
        let tool = serde_json::to_value(tool_from_spec(&spec)).unwrap();
        assert_eq!(tool["title"], "T");
        assert_eq!(tool["inputSchema"]["type"], "object");
    }

    #[test]
    fn the_listing_leaves_out_additional_properties_false_and_nothing_else() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"o": {"type": "object", "additionalProperties": false}}});
        let spec = ToolSpec::new("t", "d").input_schema(schema);
        let tool = serde_json::to_value(tool_from_spec(&spec)).unwrap();
        assert_eq!(
            tool["inputSchema"],
            json!({"type": "object", "properties": {"o": {"type": "object", "additionalProperties": false}}})
        );
        // The spec the pipeline validates with keeps it.
        assert_eq!(spec.input_schema["additionalProperties"], false);
    }

    #[test]
    fn structured_output_keeps_a_text_block() {
        let out = ToolOutput {
            content: vec![],
            structured: Some(json!({"a": 1})),
            is_error: false,
        };
        let result = serde_json::to_value(result_from_output(out)).unwrap();
        assert_eq!(result["content"][0]["type"], "text");
        assert_eq!(result["structuredContent"], json!({"a": 1}));
        assert_eq!(result["isError"], false);
    }

    #[test]
    fn a_non_object_structured_value_travels_as_text_only() {
        let out = ToolOutput {
            content: vec![],
            structured: Some(json!([1, 2])),
            is_error: true,
        };
        let result = serde_json::to_value(result_from_output(out)).unwrap();
        assert!(result.get("structuredContent").is_none());
        assert_eq!(result["isError"], true);
    }

    #[test]
    fn unknown_tools_are_protocol_errors_and_the_rest_are_results() {
        let err = result_from_error("nope", false, ToolError::NotFound("no tool".into()));
        assert_eq!(err.unwrap_err().code.0, -32602);
        let missing_file = ToolError::NotFound("no file `a.txt`".into());
        let result = result_from_error("workspace_read", true, missing_file).unwrap();
        assert_eq!(result.is_error, Some(true));
    }
}

//! What a tool returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text written for a model to act on.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the image bytes.
        data: String,
        /// MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// A JSON value.
    Json {
        /// The value.
        json: Value,
    },
    /// An MCP content block other than text and image — audio, an embedded resource, a
    /// resource link — as a mounted server sent it: MCP clients get it as it is, other
    /// doors show it as JSON.
    Mcp {
        /// The block, with its `type`.
        block: Value,
    },
}

/// The result of a tool that ran. A tool that ran and failed in a way the model should see
/// and correct (a command exiting non-zero, say) sets `is_error`; faults of the call itself
/// are [`ToolError`](crate::ToolError)s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Content blocks, in order.
    pub content: Vec<Content>,
    /// A machine-readable result matching the tool's output schema, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether the result reports a failure.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// One text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            ..Self::default()
        }
    }

    /// A text block for people and models plus the same result as structured JSON.
    pub fn text_and_structured(text: impl Into<String>, structured: Value) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            structured: Some(structured),
            is_error: false,
        }
    }

    /// A structured result, with its pretty-printed JSON as the text block.
    pub fn structured(value: Value) -> Self {
        let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
        Self::text_and_structured(text, value)
    }

    /// Marks this output as reporting a failure.
    pub fn into_error(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// All text blocks joined by newlines.
    pub fn text_joined(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Content::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// `n` and the noun for it, singular for one: `counted(1, "line", "lines")` is `1 line`,
/// `counted(3, "line", "lines")` is `3 lines`. Messages read by people and models say
/// neither "1 lines" nor "1 line(s)".
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod counted_tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::counted(1, "line", "lines"), "1 line");
        assert_eq!(super::counted(0, "line", "lines"), "0 lines");
        assert_eq!(super::counted(2, "match", "matches"), "2 matches");
    }
}

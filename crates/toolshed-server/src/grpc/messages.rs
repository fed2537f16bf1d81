//! The messages of `proto/toolshed/v1/plugin_manager.proto`, written out with prost's
//! derive so that building toolshed needs no protoc. The tag numbers are the file's; the
//! Python test builds its client from the file, so a difference fails there.

#![allow(missing_docs)] // the .proto file documents every field

use prost::{Message, Oneof};

#[derive(Clone, PartialEq, Message)]
pub(super) struct ListPluginsRequest {}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ListPluginsResponse {
    #[prost(message, repeated, tag = "1")]
    pub(super) plugins: Vec<Plugin>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct PluginRef {
    #[prost(string, tag = "1")]
    pub(super) id: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Plugin {
    #[prost(string, tag = "1")]
    pub(super) id: String,
    #[prost(string, tag = "2")]
    pub(super) name: String,
    #[prost(string, tag = "3")]
    pub(super) version: String,
    #[prost(string, tag = "4")]
    pub(super) description: String,
    #[prost(string, tag = "5")]
    pub(super) kind: String,
    #[prost(string, tag = "6")]
    pub(super) state: String,
    #[prost(string, tag = "7")]
    pub(super) reason: String,
    #[prost(string, repeated, tag = "8")]
    pub(super) tools: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ListToolsRequest {
    #[prost(string, tag = "1")]
    pub(super) plugin_id: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ListToolsResponse {
    #[prost(message, repeated, tag = "1")]
    pub(super) tools: Vec<Tool>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Tool {
    #[prost(string, tag = "1")]
    pub(super) name: String,
    #[prost(string, tag = "2")]
    pub(super) plugin_id: String,
    #[prost(string, tag = "3")]
    pub(super) description: String,
    #[prost(string, tag = "4")]
    pub(super) input_schema_json: String,
    #[prost(string, tag = "5")]
    pub(super) complexity: String,
    #[prost(string, tag = "6")]
    pub(super) group: String,
    #[prost(bool, tag = "7")]
    pub(super) read_only: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ExecuteRequest {
    #[prost(string, tag = "1")]
    pub(super) tool: String,
    #[prost(string, tag = "2")]
    pub(super) arguments_json: String,
    #[prost(uint64, tag = "3")]
    pub(super) timeout_ms: u64,
    #[prost(string, tag = "4")]
    pub(super) idempotency_key: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Content {
    #[prost(string, tag = "1")]
    pub(super) r#type: String,
    #[prost(string, tag = "2")]
    pub(super) text: String,
    #[prost(string, tag = "3")]
    pub(super) mime_type: String,
    #[prost(string, tag = "4")]
    pub(super) data: String,
    #[prost(string, tag = "5")]
    pub(super) json: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ExecuteResult {
    #[prost(string, tag = "1")]
    pub(super) call_id: String,
    #[prost(string, tag = "2")]
    pub(super) plugin_id: String,
    #[prost(bool, tag = "3")]
    pub(super) is_error: bool,
    #[prost(message, repeated, tag = "4")]
    pub(super) content: Vec<Content>,
    #[prost(string, tag = "5")]
    pub(super) structured_json: String,
    #[prost(uint64, tag = "6")]
    pub(super) duration_ms: u64,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct Progress {
    #[prost(double, tag = "1")]
    pub(super) progress: f64,
    #[prost(bool, tag = "2")]
    pub(super) has_progress: bool,
    #[prost(double, tag = "3")]
    pub(super) total: f64,
    #[prost(bool, tag = "4")]
    pub(super) has_total: bool,
    #[prost(string, tag = "5")]
    pub(super) message: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct LogMessage {
    #[prost(string, tag = "1")]
    pub(super) json: String,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ExecuteEvent {
    #[prost(oneof = "Event", tags = "1, 2, 3")]
    pub(super) event: Option<Event>,
}

#[derive(Clone, PartialEq, Oneof)]
pub(super) enum Event {
    #[prost(message, tag = "1")]
    Progress(Progress),
    #[prost(message, tag = "2")]
    Log(LogMessage),
    #[prost(message, tag = "3")]
    Result(ExecuteResult),
}

impl From<&toolshed_core::Content> for Content {
    fn from(content: &toolshed_core::Content) -> Self {
        let mut out = Content::default();
        match content {
            toolshed_core::Content::Text { text } => {
                out.r#type = "text".into();
                out.text.clone_from(text);
            }
            toolshed_core::Content::Image { data, mime_type } => {
                out.r#type = "image".into();
                out.data.clone_from(data);
                out.mime_type.clone_from(mime_type);
            }
            toolshed_core::Content::Json { json } => {
                out.r#type = "json".into();
                out.json = json.to_string();
            }
            toolshed_core::Content::Mcp { block } => {
                out.r#type = block
                    .get("type")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("resource")
                    .to_string();
                out.json = block.to_string();
            }
        }
        out
    }
}

impl From<toolshed_host::registry::PluginInfo> for Plugin {
    fn from(info: toolshed_host::registry::PluginInfo) -> Self {
        Self {
            kind: info.kind.as_str().to_string(),
            state: info.state.as_str().to_string(),
            reason: info.reason.unwrap_or_default(),
            id: info.id,
            name: info.name,
            version: info.version,
            description: info.description,
            tools: info.tools,
        }
    }
}

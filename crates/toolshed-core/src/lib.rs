//! The vocabulary every part of toolshed speaks.
//!
//! A tool is described by data ([`ToolSpec`]) and implemented by code ([`Tool`]). A call
//! carries a [`CallContext`] (who calls, its deadline and cancellation, where progress goes)
//! and ends in a [`ToolOutput`] or a [`ToolError`]. Tools arrive in [`Plugin`]s, which are
//! described by a [`PluginManifest`].
//!
//! Small shared pieces are public modules: [`secret`] (constant-time compares and random
//! tokens), [`suggest`] ("did you mean"), [`oversized`] (arguments larger than their tool
//! takes, found before parsing), [`runtime`] (which JavaScript runtime a plugin needs),
//! [`groups`] (operator groups' labels and descriptions) and [`trace_context`] (W3C trace
//! context across toolshed's edges).
//!
//! ```
//! use toolshed_core::{ToolOutput, ToolSpec};
//! let spec = ToolSpec::new("echo", "Repeat the input back.");
//! assert_eq!(spec.name, "echo");
//! let out = ToolOutput::text("hello");
//! assert_eq!(out.text_joined(), "hello");
//! ```

mod ask;
mod context;
mod error;
mod gauges;
pub mod groups;
mod llm;
mod loader;
mod manifest;
mod note;
mod output;
pub mod oversized;
mod plugin;
mod ports;
pub mod runtime;
pub mod secret;
mod spec;
pub mod suggest;
mod touches;
pub mod trace_context;

pub use ask::{Answer, Asker, BadQuestion, MAX_FIELDS, MAX_QUESTION_CHARS, Question};
pub use context::{
    AuditNote, CallContext, CallId, CommandEnv, CommandEnvSource, LogSink, OwnerId, Progress,
    ProgressSink,
};
pub use error::{ErrorKind, ToolError, Violation};
pub use gauges::Gauges;
pub use llm::{
    ChatMessage, Completion, CompletionRequest, ModelTool, ModelToolCall, Sampler, Usage,
};
pub use loader::{
    Grants, HttpClient, HttpRequest, HttpResponse, LoadRequest, NetPolicy, PLUGIN_STATE_DIR,
    PluginLoader, ToolCaller,
};
pub use manifest::{
    AgentPreset, Capabilities, ConfigField, ConfigFieldType, EnvVar, McpServer, PluginKind,
    PluginManifest, Requirement, Translation, is_valid_plugin_id,
};
pub use output::{Content, ToolOutput, counted};
pub use oversized::OversizedArgument;
pub use plugin::{
    BuiltinPlugin, Health, Library, Plugin, PluginError, ResourceUpdated, Running, StopCall,
    SyncTool, Tool,
};
pub use ports::{PortDirectory, ProxyTarget};
pub use spec::{Complexity, Danger, Plane, ToolAnnotations, ToolSpec, ToolText};
pub use touches::{TouchArg, TouchKind, Touches, WriteScope};

/// Re-exported so tools and doors share one cancellation type.
pub use tokio_util::sync::CancellationToken;

/// The `tracing` target of the spans that describe a call for tracing systems (the doors,
/// the pipeline's steps, the tool, the operations it runs). Exported over OpenTelemetry when
/// `[telemetry] otlp_endpoint` is set (docs/telemetry.md); nothing else listens to them, so
/// they cost a relaxed load each when it is not.
pub const TRACE: &str = "toolshed_trace";

//! Plugins: a unit of tools with a lifecycle.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::{CallContext, PluginManifest, ToolError, ToolOutput, ToolSpec};

/// A tool: a spec (data) and the code that serves calls to it.
///
/// The host has already resolved, reviewed and validated the call against
/// [`ToolSpec::input_schema`] before `call` runs, and enforces the deadline and cancellation
/// around it; a tool only does its work, watching `ctx.cancel` when it waits.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool as data.
    fn spec(&self) -> &ToolSpec;

    /// Serves one call.
    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError>;

    /// Why the tool cannot work as things are (an API key that is not set), with the
    /// environment variables that would fix it: the catalog shows it as unconfigured and
    /// MCP clients do not list it by default. `None` (the default) when it can.
    fn unavailable(&self) -> Option<(String, Vec<String>)> {
        None
    }

    /// What a call with `arguments` will touch (see [`crate::Touches`]): by default what
    /// the spec declares ([`ToolSpec::touch`]); a tool whose arguments name their touches
    /// less plainly (a patch) says it itself.
    fn touches(&self, arguments: &Value) -> crate::Touches {
        crate::Touches::from_declared(&self.spec().touches, arguments)
    }

    /// Whether a call may change files past toolshed's file boundary and its command
    /// sandbox's per-caller mode — a mounted server's own process writing the workspace —
    /// so that a caller narrowed to read-only cannot be held to it and is refused the tool.
    /// `false` by default: tools change files through the host's operations, commands
    /// through a sandbox in the caller's mode.
    fn writes_past_the_boundary(&self) -> bool {
        false
    }
}

/// Why a plugin failed to start or stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PluginError(pub String);

/// A plugin's health as it reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Working.
    Ok,
    /// Working with less; the reason says what is missing.
    Degraded(String),
    /// Not working.
    Failed(String),
}

/// A plugin: metadata, a lifecycle and tools. Lifecycle methods default to doing nothing, so
/// a stateless plugin implements only `manifest` and `tools`.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The plugin as data.
    fn manifest(&self) -> &PluginManifest;

    /// The tools, one per spec in the manifest.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Whether it runs before anyone enabled it: `false` for a heavy built-in a person
    /// turns on (`toolshed plugins enable <id>`), such as the browser. A choice a person
    /// made, either way, is kept in the state store and wins.
    fn enabled_by_default(&self) -> bool {
        true
    }

    /// Prepares the plugin; called once before `start`.
    async fn init(&self) -> Result<(), PluginError> {
        Ok(())
    }

    /// Starts background work, if any.
    async fn start(&self) -> Result<(), PluginError> {
        Ok(())
    }

    /// Stops background work and releases resources.
    async fn stop(&self) -> Result<(), PluginError> {
        Ok(())
    }

    /// Reports health.
    async fn health(&self) -> Health {
        Health::Ok
    }

    /// `owner` is gone for good (the MCP session it was made for closed or expired): end
    /// what it owns — command sessions, background processes — rather than keep it running
    /// with no one able to reach it.
    async fn owner_ended(&self, _owner: &crate::OwnerId) {}

    /// What it keeps running for owners — background processes, command sessions,
    /// browser sessions — for an operator's view (the dashboard, `GET /api/v1/running`).
    /// Reading it is not a call. Empty by default.
    async fn running(&self) -> Vec<Running> {
        Vec::new()
    }

    /// The last `max_bytes` of output of the item `id` of [`Plugin::running`], if it has
    /// output; reading it moves no cursor of its owner's.
    fn running_output(&self, _id: &str, _max_bytes: usize) -> Option<String> {
        None
    }

    /// Starts now what its first call would start (the code of a plugin listed from its
    /// recorded tools): for plugins asked to start eagerly. Does nothing by default.
    async fn warm(&self) -> Result<(), PluginError> {
        Ok(())
    }

    /// The resources and prompts it offers besides tools (a mounted MCP server's), or
    /// `None` (the default) when it offers none.
    fn library(&self) -> Option<Arc<dyn Library>> {
        None
    }
}

/// One thing a plugin keeps running for an owner, as [`Plugin::running`] lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Running {
    /// What it is: `process`, `command_session`, `browser_session`.
    pub kind: String,
    /// Its id, as its tools take it.
    pub id: String,
    /// The owner it belongs to.
    pub owner: String,
    /// One line saying what it is: a command line, a page's URL.
    pub summary: String,
    /// Whether it is still running (an exited one is kept until read or evicted).
    pub running: bool,
    /// When it started (Unix ms), if known.
    pub started_ms: Option<i64>,
    /// The rest, as its list tool describes it (exit code, port, terminal size).
    pub fields: Value,
    /// The call that stops it, made through the pipeline as its owner (`POST
    /// /api/v1/running/{plugin}/{id}/stop`); `None` when it cannot be stopped so.
    pub stop: Option<StopCall>,
}

/// A tool call that stops a running item ([`Running::stop`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StopCall {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
}

/// What a plugin offers besides tools: MCP resources, resource templates and prompts, in
/// the JSON shapes of the MCP methods that list and read them. Prompt names are the ones
/// clients see (a mounted server's prefixed like its tools); resource URIs are the
/// server's own.
#[async_trait]
pub trait Library: Send + Sync {
    /// The items of `resources/list`.
    async fn resources(&self) -> Result<Vec<Value>, PluginError>;

    /// The items of `resources/templates/list`.
    async fn resource_templates(&self) -> Result<Vec<Value>, PluginError>;

    /// The result of `resources/read` for `uri`.
    async fn read_resource(&self, uri: &str) -> Result<Value, PluginError>;

    /// The items of `prompts/list`.
    async fn prompts(&self) -> Result<Vec<Value>, PluginError>;

    /// The result of `prompts/get` for the prompt `name` (as listed).
    async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, PluginError>;

    /// Completions for an argument of one of its prompts or resource templates: the
    /// `completion/complete` params (`ref`, `argument`, `context`, with a prompt's name as
    /// listed) in, the result's `completion` (`values`, `total`, `hasMore`) out (`{"values":
    /// []}` for none). Required, like every method here: a wrapper that forgot one would
    /// hide what it wraps.
    async fn complete(&self, params: Value) -> Result<Value, PluginError>;

    /// The skills it offers in the MCP skills extension's shape (`skills/list` items:
    /// `uri` of the `SKILL.md`, `frontmatter`, `resources` with digests), their files read
    /// through [`Library::read_resource`].
    async fn skills(&self) -> Result<Vec<Value>, PluginError>;

    /// Asks to hear of changes to the resource `uri`: `updated` is called with the uri
    /// each time it changes, until `stop` fires. `Err` when it does not have the resource
    /// or cannot tell of its changes.
    async fn watch(
        &self,
        uri: &str,
        updated: ResourceUpdated,
        stop: crate::CancellationToken,
    ) -> Result<(), PluginError>;
}

/// Told the uri of a watched resource each time it changes ([`Library::watch`]).
pub type ResourceUpdated = Arc<dyn Fn(&str) + Send + Sync>;

/// A built-in plugin made of a manifest and a fixed list of tools.
pub struct BuiltinPlugin {
    manifest: PluginManifest,
    tools: Vec<Arc<dyn Tool>>,
}

impl BuiltinPlugin {
    /// A plugin whose manifest lists exactly the given tools' specs.
    pub fn new(mut manifest: PluginManifest, tools: Vec<Arc<dyn Tool>>) -> Self {
        manifest.tools = tools.iter().map(|t| t.spec().clone()).collect();
        Self { manifest, tools }
    }
}

#[async_trait]
impl Plugin for BuiltinPlugin {
    fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }
}

type SyncHandler = dyn Fn(&CallContext, Value) -> Result<ToolOutput, ToolError> + Send + Sync;

/// A tool whose work is a quick, synchronous computation (a calculator, a hash). Runs inline:
/// use it only for work that takes microseconds to a few milliseconds.
pub struct SyncTool {
    spec: ToolSpec,
    handler: Box<SyncHandler>,
}

impl SyncTool {
    /// A tool serving calls with `handler`.
    pub fn new(
        spec: ToolSpec,
        handler: impl Fn(&CallContext, Value) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec,
            handler: Box::new(handler),
        }
    }
}

#[async_trait]
impl Tool for SyncTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        (self.handler)(&ctx, args)
    }
}

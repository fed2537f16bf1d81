//! Seams between the host and the code behind sandboxed plugin kinds: loading a plugin from
//! its directory, the capabilities a person granted it, and the host services a sandboxed
//! plugin reaches only through those grants (calling other tools, HTTP).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::{CallContext, Plugin, PluginError, PluginKind, PluginManifest, ToolError, ToolOutput};

/// What a person allowed one plugin to touch. A sandboxed plugin gets the intersection of
/// what its manifest declares (`capabilities`) and these grants: a capability its manifest
/// does not declare is never granted, and a declared one is off until granted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Grants {
    /// Hosts the plugin may send HTTP requests to: `host` (any port) or `host:port`.
    pub http: Vec<String>,
    /// Workspace-relative directories (or files) the plugin may read.
    pub fs_read: Vec<String>,
    /// Workspace-relative directories (or files) the plugin may write (and read).
    pub fs_write: Vec<String>,
    /// Names of tools the plugin may call through the pipeline.
    pub tools: Vec<String>,
    /// Whether the plugin may keep memories (`ctx.memory`).
    pub memory: bool,
    /// Whether the plugin may publish events (`ctx.events.publish`).
    pub events: bool,
    /// Whether the plugin may ask a model (`ctx.llm.complete`).
    pub llm: bool,
    /// Whether the plugin may change its writable config fields (`ctx.config.set`).
    pub config_write: bool,
    /// Environment variables of its env contract the plugin may read (`ctx.env`, a
    /// Node.js plugin's environment).
    pub env: Vec<String>,
    /// Whether the variables of its manifest's `shell_env` reach the commands toolshed runs.
    pub shell_env: bool,
}

impl Grants {
    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.http.is_empty()
            && self.fs_read.is_empty()
            && self.fs_write.is_empty()
            && self.tools.is_empty()
            && !self.memory
            && !self.events
            && !self.llm
            && !self.config_write
            && !self.shell_env
            && self.env.is_empty()
    }
}

/// Everything a loader gets to build one plugin from its directory.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// The checked manifest.
    pub manifest: PluginManifest,
    /// The plugin's directory (its manifest's directory).
    pub dir: PathBuf,
    /// The plugin's configuration at load time: defaults merged with stored values,
    /// including this plugin's own secrets. Calls get the current values in
    /// [`CallContext::config`].
    pub config: Map<String, Value>,
    /// What the plugin may touch.
    pub grants: Grants,
}

/// The directory inside a plugin's directory where the host and its loaders keep state of
/// that plugin (a mounted MCP server's pinned tool digests): not part of the plugin, so a
/// change there neither reloads it nor counts as a new version.
pub const PLUGIN_STATE_DIR: &str = ".state";

/// Builds plugins of one kind from directories. The host calls [`PluginLoader::load`] when a
/// plugin of that kind is enabled (at start, on enable and on reload); the plugin's `init`
/// then runs its code, and its `tools` are read after `init`.
pub trait PluginLoader: Send + Sync {
    /// The kind this loader builds.
    fn kind(&self) -> PluginKind;

    /// Builds the plugin. Cheap checks only (files present, limits sane): running the
    /// plugin's code belongs in `init`, so a failure there puts the plugin in `error`.
    fn load(&self, request: LoadRequest) -> Result<Arc<dyn Plugin>, PluginError>;

    /// The health of a plugin listed from its recorded tools whose code has not run in this
    /// process: what the loader can tell without running it (state it keeps beside the
    /// plugin, in [`PLUGIN_STATE_DIR`]). Blocking but quick. [`Health::Ok`] by default.
    fn idle_health(&self, _request: &LoadRequest) -> crate::Health {
        crate::Health::Ok
    }

    /// Whether a plugin of this kind whose code had to run to learn its tools (nothing was
    /// recorded for what it is loaded from) is stopped again once they are recorded, and
    /// listed from the record until its first call — as a later process would. `false` by
    /// default: a kind whose plugins are cheap to keep running, or that starts them itself
    /// when it should.
    fn parks_after_recording(&self) -> bool {
        false
    }

    /// What else than a plugin's files, config and toolshed's version decides the tools its
    /// code registers (the language their descriptions are written in, for one). Part of
    /// the key its recorded tools are kept under, so that a change runs its code to list
    /// them afresh. Empty by default.
    fn record_variant(&self) -> String {
        String::new()
    }
}

/// Calls other tools through the whole pipeline (review, validation, policy, hooks, audit),
/// for plugins granted `tools`. The host puts one in every call's [`CallContext::caller`].
#[async_trait]
pub trait ToolCaller: Send + Sync {
    /// Calls `name` with `args` on behalf of plugin `caller` inside the call `ctx` (same
    /// owner, cancellation and deadline). The grant check is the caller's job; the host
    /// refuses a plugin calling its own tools.
    async fn call_tool(
        &self,
        ctx: &CallContext,
        caller: &str,
        name: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError>;

    /// The caller as its concrete type, for the host that made it (a host's own tools
    /// reach the pipeline's lineage of the call through it); `None` by default.
    fn as_any(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        None
    }

    /// Whether the call `ctx` may also touch what it found only while running (the files a
    /// rename's server named, the paths a plugin's `ctx.fs` is given): judged by the
    /// policy's rules on `reads` and `writes` and the caller's sandbox mode as if the call
    /// had declared them. A tool asks before it touches them. Allowed by default.
    fn may_touch(&self, ctx: &CallContext, touches: &crate::Touches) -> Result<(), ToolError> {
        let _ = (ctx, touches);
        Ok(())
    }

    /// Sets config field `key` of plugin `plugin` (its own: `ctx.config.set`) to `value`,
    /// when its manifest marks the field `writable` and the value fits. The grant check is
    /// the caller's job.
    async fn set_own_config(&self, plugin: &str, key: &str, value: Value) -> Result<(), ToolError> {
        let _ = (plugin, key, value);
        Err(ToolError::Unconfigured {
            message: "this host does not let plugins change their config".into(),
            variables: Vec::new(),
        })
    }
}

/// One HTTP request.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// An absolute `http` or `https` URL.
    pub url: String,
    /// Request headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// The whole exchange must finish within this.
    pub timeout: Duration,
    /// The most response body bytes kept; the rest is dropped and `truncated` set.
    pub max_response_bytes: usize,
}

/// One HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Response headers, in order, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body, at most `max_response_bytes`.
    pub body: Vec<u8>,
    /// Whether the body was cut at `max_response_bytes`.
    pub truncated: bool,
}

/// Which hosts a request may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetPolicy {
    /// Only public addresses: private, loopback, link-local and metadata addresses are
    /// refused on the URL, on every address dialled and on every redirect.
    Public,
    /// Only these hosts (`host` or `host:port`), whatever their addresses: a person named
    /// them. Everything else is refused.
    Only(Vec<String>),
    /// Only these hosts (`host` or `host:port`), and only where [`NetPolicy::Public`]
    /// goes (public addresses, and what `[web] allow` opens): a plugin's grants, a mounted
    /// server's URL. The list narrows the web rules; it never opens a private address the
    /// person running toolshed has not allowed.
    PublicWithin(Vec<String>),
}

/// An HTTP client that enforces a [`NetPolicy`]: the host's is `toolshed_ops::NetClient`,
/// which tools and sandboxed plugins are built with.
#[async_trait]
pub trait HttpClient: Send + Sync {
    /// Sends `request`; redirects are not followed (the response is returned).
    async fn send(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        cancel: &CancellationToken,
    ) -> Result<HttpResponse, ToolError>;
}

//! Sandboxed plugins started on their first call.
//!
//! A JavaScript plugin's tools are known only once its code ran. Running it at start-up
//! costs every process a runtime per plugin, though most sessions call few plugins. So the
//! registry remembers the tools each plugin registered, with a key of what it was loaded
//! from (its files, toolshed's version, its config), and when a later process finds the
//! same key it lists those tools from the record and leaves the code alone until a call
//! needs it. Any change to the key runs the code at start again and records anew.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use toolshed_core::{
    CallContext, Health, Library, LoadRequest, Plugin, PluginError, PluginKind, PluginLoader,
    PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};

use crate::store::StateStore;

/// The key of what a plugin is loaded from: the fingerprint of its directory, toolshed's
/// version, its loader's variant ([`PluginLoader::record_variant`]) and its config values.
pub(crate) fn load_key(dir_fingerprint: u64, variant: &str, config: &Map<String, Value>) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    dir_fingerprint.hash(&mut hasher);
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    variant.hash(&mut hasher);
    serde_json::to_string(config)
        .unwrap_or_default()
        .hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// A plugin listed from its recorded tools, whose code runs at its first call.
pub(crate) struct LazyPlugin {
    shared: Arc<Shared>,
    tools: Vec<Arc<dyn Tool>>,
}

struct Shared {
    manifest: PluginManifest,
    loader: Arc<dyn PluginLoader>,
    request: LoadRequest,
    key: String,
    specs: Vec<ToolSpec>,
    store: Arc<StateStore>,
    real: tokio::sync::Mutex<Option<Arc<dyn Plugin>>>,
    /// The running plugin once started, for [`Plugin::tools`] (not async): a plugin whose
    /// tools change while it runs then lists its own.
    live: std::sync::Mutex<Option<Arc<dyn Plugin>>>,
    /// Set by `stop`: a call that resolved the tool before stays refused, rather than
    /// starting the code again with what the plugin was loaded with.
    stopped: std::sync::atomic::AtomicBool,
}

impl LazyPlugin {
    /// A plugin serving `specs` until its code, built by `loader` from `request`, runs.
    pub(crate) fn new(
        loader: Arc<dyn PluginLoader>,
        request: LoadRequest,
        key: String,
        specs: Vec<ToolSpec>,
        store: Arc<StateStore>,
    ) -> Self {
        let shared = Arc::new(Shared {
            manifest: request.manifest.clone(),
            loader,
            request,
            key,
            specs: specs.clone(),
            store,
            real: tokio::sync::Mutex::new(None),
            live: std::sync::Mutex::new(None),
            stopped: std::sync::atomic::AtomicBool::new(false),
        });
        let tools = specs
            .into_iter()
            .map(|spec| {
                Arc::new(LazyTool {
                    spec,
                    shared: shared.clone(),
                }) as Arc<dyn Tool>
            })
            .collect();
        Self { shared, tools }
    }
}

impl Shared {
    /// The running plugin, started now if it is not yet.
    async fn real(&self) -> Result<Arc<dyn Plugin>, ToolError> {
        let mut real = self.real.lock().await;
        let id = &self.manifest.id;
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ToolError::Conflict(format!(
                "plugin `{id}` was stopped (disabled, reloaded or given other grants) while this call waited; call the tool again"
            )));
        }
        if let Some(plugin) = real.as_ref() {
            return Ok(plugin.clone());
        }
        let plugin = self
            .loader
            .load(self.request.clone())
            .map_err(|e| ToolError::Failed(format!("plugin `{id}` cannot load: {e}")))?;
        if let Err(e) = plugin.init().await {
            return Err(ToolError::Failed(format!(
                "plugin `{id}` failed to start: {e}; `toolshed plugins reload {id}` tries again"
            )));
        }
        if let Err(e) = plugin.start().await {
            let _ = plugin.stop().await;
            return Err(ToolError::Failed(format!(
                "plugin `{id}` failed to start: {e}"
            )));
        }
        let specs: Vec<ToolSpec> = plugin.tools().iter().map(|t| t.spec().clone()).collect();
        if specs != self.specs {
            tracing::warn!(plugin = %id, "the plugin registered other tools than recorded; the list is corrected at the next start");
            if let Err(e) = self.store.set_plugin_tools(id, &self.key, &specs) {
                tracing::warn!(plugin = %id, error = %e, "cannot record the plugin's tools");
            }
        }
        *real = Some(plugin.clone());
        *self.live.lock().unwrap_or_else(|e| e.into_inner()) = Some(plugin.clone());
        Ok(plugin)
    }
}

#[async_trait]
impl Plugin for LazyPlugin {
    fn manifest(&self) -> &PluginManifest {
        &self.shared.manifest
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let live = self
            .shared
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match live {
            Some(plugin) => plugin.tools(),
            None => self.tools.clone(),
        }
    }

    async fn stop(&self) -> Result<(), PluginError> {
        self.shared
            .stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let real = self.shared.real.lock().await.take();
        *self.shared.live.lock().unwrap_or_else(|e| e.into_inner()) = None;
        match real {
            Some(plugin) => plugin.stop().await,
            None => Ok(()),
        }
    }

    async fn warm(&self) -> Result<(), PluginError> {
        self.shared
            .real()
            .await
            .map(|_| ())
            .map_err(|e| PluginError(e.to_string()))
    }

    /// A mounted MCP server's resources and prompts start it, like a call to one of its
    /// tools; other kinds offer none.
    fn library(&self) -> Option<Arc<dyn Library>> {
        (self.shared.manifest.kind == PluginKind::Mcp).then(|| {
            Arc::new(LazyLibrary {
                shared: self.shared.clone(),
            }) as Arc<dyn Library>
        })
    }

    async fn health(&self) -> Health {
        let real = self.shared.real.lock().await.clone();
        match real {
            Some(plugin) => plugin.health().await,
            None => self.shared.loader.idle_health(&self.shared.request),
        }
    }
}

struct LazyTool {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

#[async_trait]
impl Tool for LazyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Known from the manifest, without starting the plugin.
    fn writes_past_the_boundary(&self) -> bool {
        self.shared
            .manifest
            .mcp
            .as_ref()
            .is_some_and(toolshed_core::McpServer::writes_files)
            && !self.spec.annotations.read_only
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let plugin = self.shared.real().await?;
        let found = plugin
            .tools()
            .into_iter()
            .find(|t| t.spec().name == self.spec.name);
        let Some(tool) = found else {
            let id = &self.shared.manifest.id;
            // A plugin that withholds the tool (a mounted server's changed definition) says
            // why.
            return Err(match plugin.health().await {
                Health::Degraded(why) | Health::Failed(why) => ToolError::Unconfigured {
                    message: format!("`{}` is not available: {why}", self.spec.name),
                    variables: Vec::new(),
                },
                Health::Ok => ToolError::NotFound(format!(
                    "plugin `{id}` no longer has the tool `{}`; `toolshed plugins reload {id}` lists its tools again",
                    self.spec.name
                )),
            });
        };
        // The recorded definition may be older than the server's: the live tool decides.
        if tool.writes_past_the_boundary() && (ctx.sandbox.is_some() || !ctx.write_scope.is_empty())
        {
            return Err(ToolError::Denied {
                rule: "sandbox".into(),
                message: format!(
                    "`{}` is served by `{}`, whose own process may change files where toolshed \
                     cannot hold it, and this caller is narrowed (sandbox mode or policy rules \
                     on what it writes or reads); use a tool the server marks read-only",
                    self.spec.name, self.shared.manifest.id
                ),
            });
        }
        tool.call(ctx, args).await
    }
}

/// The library of a plugin not started yet: starts it when asked, then answers from it.
struct LazyLibrary {
    shared: Arc<Shared>,
}

impl LazyLibrary {
    async fn real(&self) -> Result<Option<Arc<dyn Library>>, PluginError> {
        let plugin = self
            .shared
            .real()
            .await
            .map_err(|e| PluginError(e.to_string()))?;
        Ok(plugin.library())
    }
}

#[async_trait]
impl Library for LazyLibrary {
    async fn resources(&self) -> Result<Vec<Value>, PluginError> {
        match self.real().await? {
            Some(library) => library.resources().await,
            None => Ok(Vec::new()),
        }
    }

    async fn resource_templates(&self) -> Result<Vec<Value>, PluginError> {
        match self.real().await? {
            Some(library) => library.resource_templates().await,
            None => Ok(Vec::new()),
        }
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, PluginError> {
        match self.real().await? {
            Some(library) => library.read_resource(uri).await,
            None => Err(self.offers_none()),
        }
    }

    async fn prompts(&self) -> Result<Vec<Value>, PluginError> {
        match self.real().await? {
            Some(library) => library.prompts().await,
            None => Ok(Vec::new()),
        }
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, PluginError> {
        match self.real().await? {
            Some(library) => library.get_prompt(name, arguments).await,
            None => Err(self.offers_none()),
        }
    }

    async fn complete(&self, params: Value) -> Result<Value, PluginError> {
        match self.real().await? {
            Some(library) => library.complete(params).await,
            None => Ok(serde_json::json!({"values": []})),
        }
    }

    async fn skills(&self) -> Result<Vec<Value>, PluginError> {
        // Lazy plugins are mounted servers, whose skills are not passed on: a listing
        // must not start every one of them.
        Ok(Vec::new())
    }

    async fn watch(
        &self,
        uri: &str,
        updated: toolshed_core::ResourceUpdated,
        stop: toolshed_core::CancellationToken,
    ) -> Result<(), PluginError> {
        match self.real().await? {
            Some(library) => library.watch(uri, updated, stop).await,
            None => Err(self.offers_none()),
        }
    }
}

impl LazyLibrary {
    fn offers_none(&self) -> PluginError {
        PluginError(format!(
            "plugin `{}` offers no resources or prompts",
            self.shared.manifest.id
        ))
    }
}

//! Fixtures shared by the integration tests: plugin directories in temporary folders,
//! loading and starting them with the real loader and QuickJS.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tempfile::TempDir;
use toolshed_core::{
    CallContext, Capabilities, Grants, HttpClient, LoadRequest, Plugin, PluginKind, PluginLoader,
    PluginManifest, Tool, ToolError, ToolOutput,
};
use toolshed_js::{JsLimits, JsLoader};
use toolshed_ops::{Ops, Services};

/// The deadline of calls made by [`Started::call`]: generous, for slow machines.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A plugin to write to disk and start.
pub(crate) struct TestPlugin {
    id: String,
    files: Vec<(String, String)>,
    manifest: PluginManifest,
    grants: Grants,
    config: Map<String, Value>,
    limits: JsLimits,
    language: Option<String>,
    services: Services,
    http: Option<Arc<dyn HttpClient>>,
}

impl TestPlugin {
    /// A plugin `id` whose `main.js` is `main`.
    pub(crate) fn new(id: &str, main: &str) -> Self {
        Self {
            id: id.to_string(),
            files: vec![("main.js".into(), main.into())],
            manifest: PluginManifest::new(id, "0.1.0", "Test plugin", PluginKind::Js),
            grants: Grants::default(),
            config: Map::new(),
            limits: JsLimits::default(),
            language: None,
            services: Services::new(Ops::memory()),
            http: None,
        }
    }

    /// Adds a file beside `main.js`.
    pub(crate) fn file(mut self, name: &str, content: &str) -> Self {
        self.files.push((name.into(), content.into()));
        self
    }

    /// Sets what the manifest declares.
    pub(crate) fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.manifest.capabilities = capabilities;
        self
    }

    /// Lists these tools in the manifest (a Fenix `tool_catalog`).
    pub(crate) fn tools(mut self, tools: Vec<toolshed_core::ToolSpec>) -> Self {
        self.manifest.tools = tools;
        self
    }

    /// Sets the manifest's entry.
    pub(crate) fn entry(mut self, entry: &str) -> Self {
        self.manifest.entry = Some(entry.into());
        self
    }

    /// Sets what is granted.
    pub(crate) fn grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// Sets the load-time configuration.
    pub(crate) fn config(mut self, config: Value) -> Self {
        self.config = config.as_object().cloned().unwrap_or_default();
        self
    }

    /// Loads the plugin over these workspace operations (`ctx.fs`).
    pub(crate) fn ops(mut self, ops: Ops) -> Self {
        self.services.ops = ops;
        self
    }

    /// Sends the plugin's HTTP requests (`ctx.http`) through `client`.
    pub(crate) fn http(mut self, client: Arc<dyn HttpClient>) -> Self {
        self.http = Some(client);
        self
    }

    /// Sets the limits.
    pub(crate) fn limits(mut self, limits: JsLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the language for `t()`.
    pub(crate) fn language(mut self, language: &str) -> Self {
        self.language = Some(language.into());
        self
    }

    /// Writes the files and loads the plugin (without `init`).
    pub(crate) fn load(self) -> Result<(Arc<dyn Plugin>, TempDir), toolshed_core::PluginError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{}-", self.id))
            .tempdir()
            .expect("temp dir");
        for (name, content) in &self.files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(path, content).expect("write plugin file");
        }
        let mut loader = JsLoader::new(&self.services).with_limits(self.limits);
        if let Some(http) = self.http {
            loader = loader.with_http(http);
        }
        if let Some(lang) = &self.language {
            loader = loader.with_language(lang);
        }
        let plugin = loader.load(LoadRequest {
            manifest: self.manifest,
            dir: dir.path().to_path_buf(),
            config: self.config,
            grants: self.grants,
        })?;
        Ok((plugin, dir))
    }

    /// Loads and initializes the plugin; panics if that fails.
    pub(crate) async fn start(self) -> Started {
        let (plugin, dir) = self.load().expect("load");
        plugin.init().await.expect("init");
        Started { plugin, _dir: dir }
    }

    /// Loads and initializes the plugin, which must fail; returns the reason.
    pub(crate) async fn init_error(self) -> String {
        let (plugin, _dir) = self.load().expect("load");
        match plugin.init().await {
            Ok(()) => panic!("init succeeded"),
            Err(e) => e.to_string(),
        }
    }
}

/// A started plugin; stops it when dropped.
pub(crate) struct Started {
    pub plugin: Arc<dyn Plugin>,
    _dir: TempDir,
}

impl Started {
    /// The tool named `name`.
    pub(crate) fn tool(&self, name: &str) -> Arc<dyn Tool> {
        self.plugin
            .tools()
            .into_iter()
            .find(|t| t.spec().name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    /// Calls `name` with `args` and a generous deadline.
    pub(crate) async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_with(name, CallContext::for_test(CALL_TIMEOUT), args)
            .await
    }

    /// Calls `name` with `args` in `ctx`.
    pub(crate) async fn call_with(
        &self,
        name: &str,
        ctx: CallContext,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        self.tool(name).call(ctx, args).await
    }

    /// Calls `name` and returns its text, panicking on an error.
    pub(crate) async fn text(&self, name: &str, args: Value) -> String {
        match self.call(name, args).await {
            Ok(out) => out.text_joined(),
            Err(e) => panic!("{name} failed: {e}"),
        }
    }
}

/// A `main.js` registering one action `name` whose `run` body is `body` (an async function
/// of `inputs` and `ctx`).
pub(crate) fn one_action(name: &str, body: &str) -> String {
    format!(
        r#"export function activate(context) {{
  context.registerActions([{{
    name: "{name}",
    description: "test action",
    properties: {{ n: {{ type: "number" }} }},
    async run(inputs, ctx) {{ {body} }},
  }}]);
}}"#
    )
}

/// A string list.
pub(crate) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Log lines captured from every thread of this test binary, down to debug: one global
/// subscriber, installed by the first caller, shared by every module that reads logs.
pub(crate) fn captured_logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || Capture(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        logs
    })
    .clone()
}

struct Capture(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

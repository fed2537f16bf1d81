//! Plugins built by a test loader from their directories: a directory's `tools.txt` names
//! its tools, each answering with the grants and config it was loaded with; a file `fail`
//! makes `init` fail. A fixture opens a host on temporary directories with that loader.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, LoadRequest, OwnerId, Plugin, PluginError, PluginKind,
    PluginLoader, PluginManifest, SyncTool, Tool, ToolOutput, ToolSpec,
};
use toolshed_host::config::ConfigSources;
use toolshed_host::{CallRequest, Host};

/// Builds a plugin whose tools are named in the directory's `tools.txt` (one per line);
/// each tool answers with the grants and config the plugin was loaded with. A file `fail`
/// makes `init` fail with its contents.
pub(crate) struct TextLoader {
    /// How many times a plugin was built.
    pub loads: AtomicUsize,
    /// How many times a plugin it built was stopped.
    pub stops: Arc<AtomicUsize>,
    /// Whether its plugins are stopped once their tools are recorded, as JavaScript
    /// plugins are.
    pub parks: bool,
    /// What it says its plugins' tools vary with besides their files and config.
    pub variant: String,
}

struct TextPlugin {
    inner: BuiltinPlugin,
    fail: Option<String>,
    stops: Arc<AtomicUsize>,
}

#[async_trait]
impl Plugin for TextPlugin {
    fn manifest(&self) -> &PluginManifest {
        self.inner.manifest()
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.tools()
    }
    async fn init(&self) -> Result<(), PluginError> {
        match &self.fail {
            Some(reason) => Err(PluginError(reason.clone())),
            None => Ok(()),
        }
    }
    async fn stop(&self) -> Result<(), PluginError> {
        self.stops.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

impl PluginLoader for TextLoader {
    fn kind(&self) -> PluginKind {
        PluginKind::Js
    }

    fn parks_after_recording(&self) -> bool {
        self.parks
    }

    fn record_variant(&self) -> String {
        self.variant.clone()
    }

    fn load(&self, request: LoadRequest) -> Result<Arc<dyn Plugin>, PluginError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        let names = std::fs::read_to_string(request.dir.join("tools.txt"))
            .map_err(|e| PluginError(format!("no tools.txt: {e}")))?;
        let loaded_with = json!({
            "grants": request.grants,
            "config": request.config,
        });
        let tools: Vec<Arc<dyn Tool>> = names
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|name| {
                let answer = loaded_with.clone();
                Arc::new(SyncTool::new(
                    ToolSpec::new(name.trim(), "Says how it was loaded."),
                    move |_: &CallContext, _: Value| Ok(ToolOutput::structured(answer.clone())),
                )) as Arc<dyn Tool>
            })
            .collect();
        Ok(Arc::new(TextPlugin {
            inner: BuiltinPlugin::new(request.manifest, tools),
            fail: std::fs::read_to_string(request.dir.join("fail")).ok(),
            stops: self.stops.clone(),
        }))
    }
}

pub(crate) const MANIFEST: &str = r#"
id = "acme.text"
version = "1.0.0"
name = "Text"
kind = "js"
[capabilities]
# Hosts from its config: its tools work without a network grant.
network = ["*"]
fs_read = ["notes"]
[[config]]
key = "colour"
type = "string"
default = "red"
"#;

pub(crate) use toolshed_test_support::files::write;

pub(crate) struct Fixture {
    pub host: Host,
    pub loader: Arc<TextLoader>,
    /// `<data dir>/plugins`.
    pub plugins: std::path::PathBuf,
    /// The workspace and the data dir.
    pub _dirs: (tempfile::TempDir, tempfile::TempDir),
}

pub(crate) async fn open(with_plugin: bool) -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    if with_plugin {
        write(&plugins, "text/plugin.toml", MANIFEST);
        write(&plugins, "text/tools.txt", "text_hello\n");
    }
    open_on(workspace, data).await
}

/// A host on these directories with these built-in plugins and loaders, default config.
pub(crate) async fn host_on(
    workspace: &tempfile::TempDir,
    data: &tempfile::TempDir,
    system_plugins: Vec<Arc<dyn Plugin>>,
    loaders: Vec<Arc<dyn PluginLoader>>,
) -> Host {
    let config = ConfigSources {
        workspace: workspace.path().to_path_buf(),
        ..Default::default()
    }
    .load()
    .unwrap();
    let mut builder = Host::builder(workspace.path(), data.path())
        .config(config)
        .plugins(move |_| system_plugins);
    for loader in loaders {
        builder = builder.loader(move |_| loader);
    }
    builder.open().await.unwrap()
}

/// A host on existing directories, as a later process would open it.
pub(crate) async fn open_on(workspace: tempfile::TempDir, data: tempfile::TempDir) -> Fixture {
    open_with(workspace, data, false, "").await
}

/// [`open_on`], with a loader whose plugins park once their tools are recorded when
/// `parks`, and whose record variant is `variant`.
pub(crate) async fn open_with(
    workspace: tempfile::TempDir,
    data: tempfile::TempDir,
    parks: bool,
    variant: &str,
) -> Fixture {
    let plugins = data.path().join(toolshed_host::PLUGINS_DIR);
    let loader = Arc::new(TextLoader {
        loads: AtomicUsize::new(0),
        stops: Arc::new(AtomicUsize::new(0)),
        parks,
        variant: variant.into(),
    });
    let host = host_on(
        &workspace,
        &data,
        vec![],
        vec![loader.clone() as Arc<dyn PluginLoader>],
    )
    .await;
    Fixture {
        host,
        loader,
        plugins,
        _dirs: (workspace, data),
    }
}

pub(crate) async fn call(host: &Host, tool: &str) -> Result<ToolOutput, toolshed_core::ToolError> {
    host.call(CallRequest::new(tool, json!({}), OwnerId::new("t"), "cli"))
        .await
        .result
}

//! Shared fixtures for the host's integration tests: a host on temporary directories with
//! test plugins.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, Plugin, PluginKind, PluginManifest, Tool, ToolError, ToolOutput,
    ToolSpec,
};
use toolshed_host::Host;
use toolshed_host::config::{ConfigSources, LoadedConfig};

pub(crate) mod text_plugins;

/// A manifest with defaults, for test plugins.
pub(crate) fn manifest(id: &str) -> PluginManifest {
    PluginManifest::new(id, "1.0.0", id, PluginKind::Builtin)
}

/// What a test tool does when called.
#[derive(Clone)]
pub(crate) enum Behaviour {
    /// Returns its arguments as JSON text.
    Echo,
    /// Waits until cancelled, then tells `observed` and returns Cancelled.
    WaitForCancel(Arc<tokio::sync::Notify>),
    /// Panics.
    Panic,
    /// Returns a result with `is_error`.
    ReportFailure,
    /// Returns its resolved config.
    Config,
    /// Reports progress three times.
    Progress,
    /// Takes this long without watching its token, then reports success: a change that
    /// commits after the deadline.
    FinishAfter(std::time::Duration),
    /// Returns where the bytes of its `text` argument live: the same address as the
    /// caller's means the arguments reached it without a copy.
    TextAddress,
}

pub(crate) struct TestTool {
    pub spec: ToolSpec,
    pub behaviour: Behaviour,
}

#[async_trait]
impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        match &self.behaviour {
            Behaviour::Echo => Ok(ToolOutput::structured(args)),
            Behaviour::WaitForCancel(observed) => {
                ctx.cancel.cancelled().await;
                observed.notify_one();
                Err(ToolError::Cancelled)
            }
            Behaviour::Panic => panic!("test tool panics on purpose"),
            Behaviour::ReportFailure => Ok(ToolOutput::text("it failed").into_error()),
            Behaviour::Config => Ok(ToolOutput::structured(Value::Object(ctx.config.clone()))),
            Behaviour::Progress => {
                for i in 0..3 {
                    ctx.progress.message(format!("step {i}"));
                }
                Ok(ToolOutput::text("done"))
            }
            Behaviour::FinishAfter(took) => {
                tokio::time::sleep(*took).await;
                Ok(ToolOutput::text("committed"))
            }
            Behaviour::TextAddress => {
                let address = args["text"].as_str().map_or(0, |t| t.as_ptr() as usize);
                Ok(ToolOutput::structured(json!({ "address": address })))
            }
        }
    }
}

/// A tool spec whose schema needs `n` (integer ≥ 0) and `s` (string), nothing else.
pub(crate) fn strict_spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, "A test tool with a strict schema.").input_schema(json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 0},
            "s": {"type": "string"}
        },
        "required": ["n", "s"],
        "additionalProperties": false
    }))
}

pub(crate) fn tool(spec: ToolSpec, behaviour: Behaviour) -> Arc<dyn Tool> {
    Arc::new(TestTool { spec, behaviour })
}

pub(crate) fn plugin(id: &str, tools: Vec<Arc<dyn Tool>>) -> Arc<dyn Plugin> {
    Arc::new(BuiltinPlugin::new(manifest(id), tools))
}

/// The configuration read from `toml` (as a workspace `toolshed.toml`) and nothing else.
pub(crate) fn config_from(workspace: &Path, toml: &str) -> LoadedConfig {
    std::fs::write(workspace.join("toolshed.toml"), toml).expect("write config");
    ConfigSources {
        workspace: workspace.to_path_buf(),
        ..Default::default()
    }
    .load()
    .expect("config loads")
}

/// A host on temporary directories.
pub(crate) struct TestHost {
    pub host: Host,
    pub workspace: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

pub(crate) async fn open(plugins: Vec<Arc<dyn Plugin>>, config_toml: &str) -> TestHost {
    let workspace = tempfile::tempdir().expect("tempdir");
    let data = tempfile::tempdir().expect("tempdir");
    open_in(workspace, data, plugins, config_toml).await
}

pub(crate) async fn open_in(
    workspace: tempfile::TempDir,
    data: tempfile::TempDir,
    plugins: Vec<Arc<dyn Plugin>>,
    config_toml: &str,
) -> TestHost {
    open_with(
        workspace,
        data,
        plugins,
        config_toml,
        None,
        Default::default(),
    )
    .await
}

/// A host with a policy and hooks.
pub(crate) async fn open_with(
    workspace: tempfile::TempDir,
    data: tempfile::TempDir,
    plugins: Vec<Arc<dyn Plugin>>,
    config_toml: &str,
    policy: Option<Arc<dyn toolshed_host::Policy>>,
    hooks: toolshed_host::Hooks,
) -> TestHost {
    let config = config_from(workspace.path(), config_toml);
    let mut builder = Host::builder(workspace.path(), data.path())
        .config(config)
        .plugins(move |_| plugins)
        .hooks(hooks);
    if let Some(policy) = policy {
        builder = builder.policy(policy);
    }
    let host = builder.open().await.expect("host opens");
    TestHost {
        host,
        workspace,
        data,
    }
}

pub(crate) const SECOND: Duration = Duration::from_secs(1);

//! `plugins_manage`: the model-facing plugin tool of the TypeScript harness — list,
//! inspect, enable, disable and reload plugins — in `system.plugins_manage`, which is off
//! until a person enables it. Its danger is high: a policy that asks about high-danger
//! tools (`[policy.default] high = "ask"`, a rule on `danger:high`) asks a person before
//! each call (docs/plugins.md shows a rule that lets `list` and `inspect` through).

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, Danger, Plugin, PluginKind, PluginManifest, Tool, ToolAnnotations,
    ToolError, ToolOutput, ToolSpec,
};
use toolshed_kit::args::{parse, schema};

use crate::doors::{Plugins, WeakPlugins};
use crate::registry::{PluginInfo, RegistryError};

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.plugins_manage";

/// Where the tool finds the host's plugins once the host is open.
pub type PluginsCell = Arc<OnceLock<WeakPlugins>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    List,
    Inspect,
    Enable,
    Disable,
    Reload,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// list, inspect, enable, disable or reload
    action: Action,
    /// The plugin id (all but list)
    #[schemars(length(min = 1, max = 128))]
    id: Option<String>,
}

/// The `system.plugins_manage` plugin, over the plugins `cell` holds once the host is open.
pub fn plugin(cell: PluginsCell) -> Arc<dyn Plugin> {
    let mut spec = ToolSpec::new(
        "plugins_manage",
        "List, inspect, enable, disable or reload toolshed's plugins.",
    )
    .title("Manage plugins")
    .group("plugins")
    .annotations(ToolAnnotations {
        read_only: false,
        destructive: false,
        idempotent: true,
        open_world: false,
    })
    .input_schema(schema::<Args>());
    spec.danger = Danger::High;
    // It acts on toolshed itself, not on the agent's world.
    spec.plane = toolshed_core::Plane::Program;
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Manage plugins",
        PluginKind::Builtin,
    );
    manifest.description = "A tool for the model to list, inspect, enable, disable and reload \
        plugins; off until a person enables it, and of high danger for policy."
        .into();
    manifest.tags = vec!["plugins".into()];
    Arc::new(Off(BuiltinPlugin::new(
        manifest,
        vec![Arc::new(Manage { spec, cell })],
    )))
}

/// A built-in plugin that starts disabled.
struct Off(BuiltinPlugin);

#[async_trait]
impl Plugin for Off {
    fn manifest(&self) -> &PluginManifest {
        self.0.manifest()
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0.tools()
    }

    fn enabled_by_default(&self) -> bool {
        false
    }
}

struct Manage {
    spec: ToolSpec,
    cell: PluginsCell,
}

fn summary(info: &PluginInfo) -> Value {
    json!({
        "id": info.id,
        "name": info.name,
        "version": info.version,
        "state": info.state.as_str(),
        "reason": info.reason,
        "tools": info.tools,
    })
}

fn line(info: &PluginInfo) -> String {
    match &info.reason {
        Some(reason) => format!("{}: {} ({reason})", info.id, info.state.as_str()),
        None => format!("{}: {}", info.id, info.state.as_str()),
    }
}

fn failed(e: RegistryError) -> ToolError {
    match e {
        RegistryError::UnknownPlugin { .. } => ToolError::NotFound(e.to_string()),
        RegistryError::Conflict(_) => ToolError::Conflict(e.to_string()),
        RegistryError::Invalid(_) => ToolError::invalid(e.to_string()),
        other => ToolError::Failed(other.to_string()),
    }
}

impl Manage {
    fn plugins(&self) -> Result<Plugins<'static>, ToolError> {
        self.cell
            .get()
            .and_then(WeakPlugins::upgrade)
            .ok_or_else(|| ToolError::Internal("the host's plugins are not reachable".into()))
    }
}

#[async_trait]
impl Tool for Manage {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse(args)?;
        let plugins = self.plugins()?;
        if args.action == Action::List {
            let list = plugins.list();
            let text = list.iter().map(line).collect::<Vec<_>>().join("\n");
            let values: Vec<Value> = list.iter().map(summary).collect();
            return Ok(ToolOutput::text_and_structured(
                text,
                json!({ "plugins": values }),
            ));
        }
        let Some(id) = args.id else {
            return Err(ToolError::invalid_at(
                "/id",
                "this action needs the plugin's `id`; `action: list` shows them",
            ));
        };
        if id == PLUGIN_ID && args.action != Action::Inspect {
            return Err(ToolError::Conflict(format!(
                "`{PLUGIN_ID}` is this tool's own plugin: a person turns it off or reloads it (`toolshed plugins disable {PLUGIN_ID}`)"
            )));
        }
        let info = match args.action {
            Action::Enable => plugins.set_enabled(&id, true).await.map_err(failed)?,
            Action::Disable => plugins.set_enabled(&id, false).await.map_err(failed)?,
            Action::Reload => plugins.reload(&id).await.map_err(failed)?,
            Action::List | Action::Inspect => plugins.info(&id).ok_or_else(|| {
                ToolError::NotFound(format!("no plugin `{id}`; `action: list` shows them"))
            })?,
        };
        let mut value = summary(&info);
        if args.action == Action::Inspect
            && let Some(manifest) = plugins.manifest(&id)
        {
            value["description"] = json!(manifest.description);
            value["kind"] = json!(info.kind);
            value["root"] = json!(info.root);
        }
        Ok(ToolOutput::text_and_structured(line(&info), value))
    }
}

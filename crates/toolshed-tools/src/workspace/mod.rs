//! The `system.workspace` plugin: reading, writing, editing, patching and searching the
//! files of the workspace.
//!
//! Every tool goes through the host's [`Ops`](toolshed_ops::Ops), which the plugin is built
//! with: paths are resolved by the
//! kernel beneath the workspace root and `.toolshed/` is out of reach (see
//! `toolshed_ops::LocalOps`). File work is blocking, so it runs on the blocking pool.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, Capabilities, ConfigField, ConfigFieldType, OwnerId, Plugin,
    PluginKind, PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::{Cancel, FileOps, Ops, ReadLog, SearchOps, Services};

mod edit_tool;
pub mod engine;
mod files;
pub(crate) mod ledger;
mod near;
mod patch_tool;
mod read;
mod search_tools;
mod spec;
mod write;

/// The plugin id.
pub const PLUGIN_ID: &str = "system.workspace";

/// The config key that turns read-before-edit off.
pub const READ_BEFORE_EDIT: &str = "require_read_before_edit";

/// What one call of a workspace tool works with.
pub struct Env {
    /// The confined file operations.
    pub files: Arc<dyn FileOps>,
    /// Searching the same workspace.
    pub search: Arc<dyn SearchOps>,
    /// Who is calling.
    pub owner: OwnerId,
    /// The plugin's resolved config.
    pub config: Map<String, Value>,
    /// What each owner has read.
    pub ledger: Arc<dyn ReadLog>,
    /// Set when the call is cancelled or times out, so long searches stop early.
    pub cancel: Cancel,
}

impl Env {
    /// Whether edits must follow a read of the current version.
    pub fn read_before_edit(&self) -> bool {
        self.config
            .get(READ_BEFORE_EDIT)
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }
}

type Handler = fn(&Env, Value) -> Result<ToolOutput, ToolError>;

struct WorkspaceTool {
    spec: ToolSpec,
    ops: Ops,
    read_log: Arc<dyn ReadLog>,
    handler: Handler,
}

#[async_trait]
impl Tool for WorkspaceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let flag = Arc::new(AtomicBool::new(false));
        let env = Env {
            files: self.ops.files.clone(),
            search: self.ops.search.clone(),
            owner: ctx.owner.clone(),
            config: ctx.config.clone(),
            ledger: self.read_log.clone(),
            cancel: Cancel::new(flag.clone()),
        };
        let handler = self.handler;
        // The operations' spans belong to the call's trace, on whichever thread they run.
        let span = tracing::Span::current();
        let mut work = tokio::task::spawn_blocking(move || {
            let _span = span.entered();
            let asked = ["path", "from"]
                .iter()
                .find_map(|key| args.get(key).and_then(Value::as_str).map(String::from));
            match handler(&env, args) {
                Err(ToolError::NotFound(message)) => {
                    let near = asked.map_or_else(Vec::new, |p| near::near_paths(&env, &p));
                    Err(ToolError::NotFound(near::with_near(message, &near)))
                }
                other => other,
            }
        });
        // The blocking work cannot await the token: cancellation while it runs raises the
        // flag it polls, and the work is still awaited so it ends before the call does.
        let joined = tokio::select! {
            joined = &mut work => joined,
            () = ctx.cancel.cancelled() => {
                flag.store(true, Ordering::Relaxed);
                work.await
            }
        };
        joined.map_err(|e| ToolError::Internal(format!("workspace tool task failed: {e}")))?
    }
}

/// The `system.workspace` plugin over the host's files, search and read log.
pub fn plugin(services: &Services) -> Arc<dyn Plugin> {
    let handlers: Vec<(ToolSpec, Handler)> = vec![
        (spec::read(), read::run),
        (spec::write(), write::run),
        (spec::edit(), edit_tool::run),
        (spec::patch(), patch_tool::run),
        (spec::stat(), files::stat),
        (spec::list(), files::list),
        (spec::mkdir(), files::mkdir),
        (spec::move_(), files::move_),
        (spec::delete(), files::delete),
        (spec::tree(), search_tools::tree),
        (spec::glob(), search_tools::glob),
        (spec::find(), search_tools::find),
        (spec::grep(), search_tools::grep),
    ];
    let tools: Vec<Arc<dyn Tool>> = handlers
        .into_iter()
        .map(|(spec, handler)| {
            Arc::new(WorkspaceTool {
                spec,
                ops: services.ops.clone(),
                read_log: services.read_log.clone(),
                handler,
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Workspace files",
        PluginKind::Builtin,
    );
    manifest.description = "Read, write, edit, patch, list and search the files of the workspace, \
        confined to it by the kernel."
        .into();
    manifest.tags = vec!["workspace".into()];
    manifest.config = vec![ConfigField {
        key: READ_BEFORE_EDIT.into(),
        label: Some("Require read before edit".into()),
        field_type: ConfigFieldType::Boolean,
        description: Some(
            "Edits, patches and overwrites need a prior workspace_read of the file's current \
             version by the same caller."
                .into(),
        ),
        default: Some(json!(true)),
        options: Vec::new(),
        secret: false,
        required: false,
        writable: false,
    }];
    manifest.capabilities = Capabilities {
        fs_read: vec![".".into()],
        fs_write: vec![".".into()],
        ..Default::default()
    };
    Arc::new(BuiltinPlugin::new(manifest, tools))
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_edit;
#[cfg(test)]
mod tests_search;

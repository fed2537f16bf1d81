//! The `system.workspace` plugin: reading, writing, editing, patching and searching the
//! files of the workspace.
//!
//! Every tool goes through the host's [`Ops`](toolshed_ops::Ops), which the plugin is built
//! with: paths are resolved by the
//! kernel beneath the workspace root and `.toolshed/` is out of reach (see
//! `toolshed_ops::LocalOps`). File work is blocking, so it runs on the blocking pool; only
//! stats and reads of small files on a local disk run on the async thread (`Inline`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, Capabilities, ConfigField, ConfigFieldType, OwnerId, Plugin,
    PluginKind, PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::{Cancel, Digest, FileKind, FileOps, Follow, Ops, ReadLog, SearchOps, Services};

mod edit_tool;
pub mod engine;
mod files;
pub(crate) use toolshed_kit::ledger;
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
    inline: Inline,
}

/// Which calls of a tool run on the async thread that received them rather than on the
/// blocking pool, when the workspace's small operations are quick ([`FileOps::quick`]):
/// handing a small read to another thread and back costs about a quarter of its CPU and
/// gives every busy thread a malloc arena of its own (docs/benchmarks.md). Whatever may
/// take longer — big files, writes (flushed to disk), listings, searches — stays on the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inline {
    Never,
    /// Always (one `stat`).
    Always,
    /// When `path` names a regular file of at most [`INLINE_READ_BYTES`].
    SmallFile,
}

/// The largest file read on an async thread.
const INLINE_READ_BYTES: u64 = 256 * 1024;

impl WorkspaceTool {
    fn runs_inline(&self, args: &Value) -> bool {
        match self.inline {
            Inline::Never => false,
            _ if !self.ops.files.quick() => false,
            Inline::Always => true,
            Inline::SmallFile => args
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|path| {
                    self.ops
                        .files
                        .stat(path, Follow::Yes)
                        .is_ok_and(|m| m.kind == FileKind::File && m.size <= INLINE_READ_BYTES)
                }),
        }
    }
}

/// Runs `handler`; a path not found is answered with the paths near it.
fn run(handler: Handler, env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let asked = ["path", "from"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str).map(String::from));
    match handler(env, args) {
        Err(ToolError::NotFound(message)) => {
            let near = asked.map_or_else(Vec::new, |p| near::near_paths(env, &p));
            Err(ToolError::NotFound(near::with_near(message, &near)))
        }
        other => other,
    }
}

/// A read log for a call running on an async thread: what the real log does not already
/// know is kept, for the caller to record on the blocking pool (the host's log writes to
/// its state store, which may wait for a lock).
struct Deferred {
    real: Arc<dyn ReadLog>,
    pending: std::sync::Mutex<Vec<(String, String, Digest)>>,
}

impl Deferred {
    fn take(&self) -> Vec<(String, String, Digest)> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl ReadLog for Deferred {
    fn seen(&self, owner: &str, real_path: &str) -> Option<Digest> {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending
            .iter()
            .rev()
            .find(|(o, p, _)| o == owner && p == real_path)
            .map(|(_, _, d)| *d)
            .or_else(|| self.real.seen(owner, real_path))
    }

    fn record(&self, owner: &str, real_path: &str, digest: Digest) {
        if !self.real.known(owner, real_path, &digest) {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.push((owner.to_string(), real_path.to_string(), digest));
        }
    }
}

#[async_trait]
impl Tool for WorkspaceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// A patch names its files inside its text: every file it adds, updates, deletes or
    /// moves (both ends) is written. A patch that does not parse touches nothing (and is
    /// refused when it runs).
    fn touches(&self, arguments: &Value) -> toolshed_core::Touches {
        if self.spec.name != "workspace_patch" {
            return toolshed_core::Touches::from_declared(&self.spec.touches, arguments);
        }
        let mut touches = toolshed_core::Touches::default();
        let Some(text) = arguments.get("patch").and_then(Value::as_str) else {
            return touches;
        };
        if let Ok(parsed) = engine::patch::parse(text) {
            for file in &parsed.files {
                touches.writes.push(file.path.clone());
                if let engine::patch::FileOp::Update {
                    move_to: Some(to), ..
                } = &file.op
                {
                    touches.writes.push(to.clone());
                }
            }
        }
        touches
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let flag = Arc::new(AtomicBool::new(false));
        // What policy rules on reads keep from this call, a search leaves out as it leaves
        // out `[sandbox] deny` (a search of `.` would otherwise print it).
        let search = if ctx.write_scope.hidden.is_empty() {
            self.ops.search.clone()
        } else {
            let root = std::path::PathBuf::from(self.ops.files.root_display());
            Arc::new(toolshed_ops::BoundedSearch::new(
                self.ops.search.clone(),
                self.ops.files.clone(),
                toolshed_ops::FileBoundary::hiding(&root, &ctx.write_scope.hidden),
            )) as Arc<dyn SearchOps>
        };
        let env = Env {
            files: self.ops.files.clone(),
            search,
            owner: ctx.owner.clone(),
            config: ctx.config.clone(),
            ledger: self.read_log.clone(),
            cancel: Cancel::new(flag.clone()),
        };
        let handler = self.handler;
        if self.runs_inline(&args) {
            let deferred = Arc::new(Deferred {
                real: self.read_log.clone(),
                pending: std::sync::Mutex::new(Vec::new()),
            });
            let env = Env {
                ledger: deferred.clone(),
                ..env
            };
            let result = run(handler, &env, args);
            let pending = deferred.take();
            if !pending.is_empty() {
                let log = self.read_log.clone();
                let span = tracing::Span::current();
                tokio::task::spawn_blocking(move || {
                    let _span = span.entered();
                    for (owner, path, digest) in pending {
                        log.record(&owner, &path, digest);
                    }
                })
                .await
                .map_err(|e| ToolError::Internal(format!("recording the read failed: {e}")))?;
            }
            return result;
        }
        // The operations' spans belong to the call's trace, on whichever thread they run.
        let span = tracing::Span::current();
        // Retries of a remote workspace's reads reach the call's audit note from there too.
        let note = ctx.audit_note.clone();
        let mut work = tokio::task::spawn_blocking(move || {
            let _span = span.entered();
            let _note = note.enter();
            run(handler, &env, args)
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
    use Inline::{Always, Never, SmallFile};
    let handlers: Vec<(ToolSpec, Handler, Inline)> = vec![
        (spec::read(), read::run, SmallFile),
        (spec::write(), write::run, Never),
        (spec::edit(), edit_tool::run, Never),
        (spec::patch(), patch_tool::run, Never),
        (spec::stat(), files::stat, Always),
        (spec::list(), files::list, Never),
        (spec::mkdir(), files::mkdir, Never),
        (spec::move_(), files::move_, Never),
        (spec::delete(), files::delete, Never),
        (spec::tree(), search_tools::tree, Never),
        (spec::glob(), search_tools::glob, Never),
        (spec::find(), search_tools::find, Never),
        (spec::grep(), search_tools::grep, Never),
    ];
    let tools: Vec<Arc<dyn Tool>> = handlers
        .into_iter()
        .map(|(spec, handler, inline)| {
            Arc::new(WorkspaceTool {
                spec,
                ops: services.ops.clone(),
                read_log: services.read_log.clone(),
                handler,
                inline,
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

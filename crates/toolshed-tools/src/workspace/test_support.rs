//! Calling workspace tools in tests, on `MemoryOps` or on a real directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolshed_core::{CallContext, OwnerId, Plugin, ToolError, ToolOutput};
use toolshed_ops::Ops;

/// The workspace plugin over one `Ops`, called as one owner.
pub(crate) struct Harness {
    pub plugin: Arc<dyn Plugin>,
    pub ops: Ops,
    pub owner: OwnerId,
    pub config: Map<String, Value>,
    /// The in-memory backend, when the harness runs on one (for fixtures).
    pub memory: Option<Arc<toolshed_ops::MemoryOps>>,
}

impl Harness {
    pub(crate) fn memory() -> Self {
        let memory = Arc::new(toolshed_ops::MemoryOps::new());
        let mut h = Self::over(Ops {
            files: memory.clone(),
            search: memory.clone(),
            process: memory.clone(),
        });
        h.memory = Some(memory);
        h
    }

    pub(crate) fn over(ops: Ops) -> Self {
        Self {
            plugin: super::plugin(&toolshed_ops::Services::new(ops.clone())),
            ops,
            owner: OwnerId::new("tester"),
            config: Map::new(),
            memory: None,
        }
    }

    /// The same plugin (and read ledger) called by another owner.
    pub(crate) fn as_owner(&self, owner: &str) -> Self {
        Self {
            plugin: self.plugin.clone(),
            ops: self.ops.clone(),
            owner: OwnerId::new(owner),
            config: self.config.clone(),
            memory: self.memory.clone(),
        }
    }

    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let tool = self
            .plugin
            .tools()
            .into_iter()
            .find(|t| t.spec().name == tool)
            .expect("tool exists");
        let mut ctx = CallContext::for_test(Duration::from_secs(10));
        ctx.owner = self.owner.clone();
        ctx.config = self.config.clone();
        tool.call(ctx, args).await
    }

    pub(crate) async fn ok(&self, tool: &str, args: Value) -> ToolOutput {
        match self.call(tool, args.clone()).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {e}"),
        }
    }

    pub(crate) async fn err(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args.clone()).await {
            Ok(out) => panic!("{tool} {args} succeeded: {}", out.text_joined()),
            Err(e) => e,
        }
    }

    /// Writes a file directly, bypassing the tools (and the read ledger).
    pub(crate) fn put(&self, path: &str, content: &str) {
        self.ops
            .files
            .write(path, content.as_bytes(), toolshed_ops::Parents::Create)
            .unwrap();
    }

    /// Writes a file straight into the in-memory backend (past any failing wrapper).
    pub(crate) fn put_memory(&self, path: &str, content: &str) {
        let memory = self.memory.as_ref().expect("a memory harness");
        toolshed_ops::FileOps::write(
            memory.as_ref(),
            path,
            content.as_bytes(),
            toolshed_ops::Parents::Create,
        )
        .unwrap();
    }

    pub(crate) fn get(&self, path: &str) -> String {
        String::from_utf8(self.ops.files.read(path, 1 << 30).unwrap().bytes).unwrap()
    }
}

/// A file backend that fails every write of one path, like a full disk would, and passes
/// everything else to `MemoryOps`.
pub(crate) struct FailWritesTo {
    pub inner: Arc<toolshed_ops::MemoryOps>,
    pub path: String,
}

impl toolshed_ops::FileOps for FailWritesTo {
    fn read(
        &self,
        path: &str,
        max: u64,
    ) -> Result<toolshed_ops::FileContents, toolshed_ops::OpsError> {
        self.inner.read(path, max)
    }
    fn write(
        &self,
        path: &str,
        data: &[u8],
        parents: toolshed_ops::Parents,
    ) -> Result<toolshed_ops::Written, toolshed_ops::OpsError> {
        if path == self.path {
            return Err(toolshed_ops::OpsError::Io {
                action: "write".into(),
                path: path.into(),
                message: "No space left on device".into(),
            });
        }
        self.inner.write(path, data, parents)
    }
    fn commit(&self, changes: &[toolshed_ops::Change<'_>]) -> Result<(), toolshed_ops::OpsError> {
        if let Some(change) = changes.iter().find(|c| c.path() == self.path) {
            return Err(toolshed_ops::OpsError::Io {
                action: "write".into(),
                path: change.path().into(),
                message: "No space left on device".into(),
            });
        }
        self.inner.commit(changes)
    }
    fn append(&self, path: &str, data: &[u8]) -> Result<(), toolshed_ops::OpsError> {
        self.inner.append(path, data)
    }
    fn stat(
        &self,
        path: &str,
        follow: toolshed_ops::Follow,
    ) -> Result<toolshed_ops::Metadata, toolshed_ops::OpsError> {
        self.inner.stat(path, follow)
    }
    fn read_dir(&self, path: &str) -> Result<toolshed_ops::DirListing, toolshed_ops::OpsError> {
        self.inner.read_dir(path)
    }
    fn mkdir(
        &self,
        path: &str,
        parents: toolshed_ops::Parents,
    ) -> Result<(), toolshed_ops::OpsError> {
        self.inner.mkdir(path, parents)
    }
    fn remove(&self, path: &str, recursive: bool) -> Result<(), toolshed_ops::OpsError> {
        self.inner.remove(path, recursive)
    }
    fn rename(
        &self,
        from: &str,
        to: &str,
        overwrite: toolshed_ops::Overwrite,
    ) -> Result<(), toolshed_ops::OpsError> {
        self.inner.rename(from, to, overwrite)
    }
    fn realpath(&self, path: &str) -> Result<String, toolshed_ops::OpsError> {
        self.inner.realpath(path)
    }
    fn root_display(&self) -> String {
        self.inner.root_display()
    }
}

impl Harness {
    /// A memory harness whose writes of `path` fail.
    pub(crate) fn failing_writes_to(path: &str) -> Self {
        let memory = Arc::new(toolshed_ops::MemoryOps::new());
        let files = Arc::new(FailWritesTo {
            inner: memory.clone(),
            path: path.into(),
        });
        let mut h = Self::over(Ops {
            files,
            search: memory.clone(),
            process: memory.clone(),
        });
        h.memory = Some(memory);
        h
    }
}

//! Calling workspace tools in tests, on `MemoryOps` or on a real directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolshed_core::{CallContext, OwnerId, Plugin, ToolError, ToolOutput};
use toolshed_ops::Ops;

/// The workspace plugin over one `Ops`, called as one owner.
pub struct Harness {
    pub plugin: Arc<dyn Plugin>,
    pub ops: Ops,
    pub owner: OwnerId,
    pub config: Map<String, Value>,
    /// The in-memory backend, when the harness runs on one (for fixtures).
    pub memory: Option<Arc<toolshed_ops::MemoryOps>>,
}

impl Harness {
    pub fn memory() -> Self {
        let memory = Arc::new(toolshed_ops::MemoryOps::new());
        let mut h = Self::over(Ops {
            files: memory.clone(),
            search: memory.clone(),
        });
        h.memory = Some(memory);
        h
    }

    pub fn over(ops: Ops) -> Self {
        Self {
            plugin: super::plugin(),
            ops,
            owner: OwnerId::new("tester"),
            config: Map::new(),
            memory: None,
        }
    }

    /// The same plugin (and read ledger) called by another owner.
    pub fn as_owner(&self, owner: &str) -> Self {
        Self {
            plugin: self.plugin.clone(),
            ops: self.ops.clone(),
            owner: OwnerId::new(owner),
            config: self.config.clone(),
            memory: self.memory.clone(),
        }
    }

    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let tool = self
            .plugin
            .tools()
            .into_iter()
            .find(|t| t.spec().name == tool)
            .expect("tool exists");
        let mut ctx = CallContext::for_test(Duration::from_secs(10));
        ctx.owner = self.owner.clone();
        ctx.config = self.config.clone();
        ctx.extensions.insert(Arc::new(self.ops.clone()));
        tool.call(ctx, args).await
    }

    pub async fn ok(&self, tool: &str, args: Value) -> ToolOutput {
        match self.call(tool, args.clone()).await {
            Ok(out) => out,
            Err(e) => panic!("{tool} {args} failed: {e}"),
        }
    }

    pub async fn err(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args.clone()).await {
            Ok(out) => panic!("{tool} {args} succeeded: {}", out.text_joined()),
            Err(e) => e,
        }
    }

    /// Writes a file directly, bypassing the tools (and the read ledger).
    pub fn put(&self, path: &str, content: &str) {
        self.ops
            .files
            .write(path, content.as_bytes(), toolshed_ops::Parents::Create)
            .unwrap();
    }

    pub fn get(&self, path: &str) -> String {
        String::from_utf8(self.ops.files.read(path, 1 << 30).unwrap().bytes).unwrap()
    }
}

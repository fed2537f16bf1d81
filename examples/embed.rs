//! Embedding toolshed: a host with one tool of your own, called through the same pipeline
//! every door uses (resolve, review, schema validation, policy, hooks, run, audit).
//!
//! ```sh
//! cargo run -p toolshed-host --example embed
//! ```
//!
//! The tool, `line_count`, counts the lines of a workspace file. It is written the way the
//! built-in tools are (docs/architecture.md, "Where a new piece goes"):
//! - its arguments are a serde struct whose doc comments and attributes become the input
//!   schema (`toolshed_kit::args::schema`), so the schema a model reads and the parser a
//!   call meets cannot drift apart;
//! - it is built with the host's typed `Services` — here the workspace's confined file
//!   operations: a service the tool needs is a constructor argument, so forgetting to wire
//!   it does not compile.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, OwnerId, Plugin, PluginKind, PluginManifest, SyncTool, Tool,
    ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};
use toolshed_host::{CallRequest, HostBuilder, Services};
use toolshed_kit::args;
use toolshed_ops::Parents;

/// The arguments of `line_count`. Their docs and attributes are the input schema; the
/// struct's own doc is for Rust readers and is left out of it.
#[derive(Debug, Deserialize, JsonSchema)]
struct LineCountArgs {
    /// The file, relative to the workspace.
    #[schemars(length(min = 1))]
    path: String,
}

/// A plugin with one tool that reads files through the host's file operations.
fn line_count_plugin(services: &Services) -> Arc<dyn Plugin> {
    let files = services.ops.files.clone();
    let spec = ToolSpec::new("line_count", "Count the lines of a workspace file.")
        .group("example")
        .annotations(ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        })
        .input_schema(args::schema::<LineCountArgs>());
    let tool = SyncTool::new(spec, move |_ctx: &CallContext, args: Value| {
        // The pipeline validated `args` against the schema before this runs.
        let LineCountArgs { path } = args::parse(args)?;
        let read = files
            .read(&path, 1 << 20)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let lines = read.bytes.iter().filter(|b| **b == b'\n').count();
        Ok(ToolOutput::text_and_structured(
            format!("{path}: {lines} lines"),
            json!({ "lines": lines }),
        ))
    });
    let manifest = PluginManifest::new("example.lines", "0.1.0", "Lines", PluginKind::Builtin);
    Arc::new(BuiltinPlugin::new(
        manifest,
        vec![Arc::new(tool) as Arc<dyn Tool>],
    ))
}

/// Opens a host in a fresh workspace, calls the tool through the pipeline, and returns
/// what it answered and how the pipeline refused a bad call.
async fn run() -> Result<(String, String), Box<dyn std::error::Error>> {
    let workspace = tempfile::tempdir()?;
    let data = tempfile::tempdir()?;
    let host = HostBuilder::new(workspace.path(), data.path())
        .plugins(|services| vec![line_count_plugin(services)])
        .open()
        .await?;
    host.services()
        .ops
        .files
        .write("notes.txt", b"one\ntwo\nthree\n", Parents::Create)?;

    let owner = OwnerId::new("embedder");
    let mut request = CallRequest::new(
        "line_count",
        json!({"path": "notes.txt"}),
        owner.clone(),
        "embed",
    );
    request.timeout = Some(Duration::from_secs(5));
    let answer = host.call(request).await.result?.text_joined();

    // Schema violations are caught by the pipeline, before the tool runs.
    let refused = host
        .call(CallRequest::new("line_count", json!({}), owner, "embed"))
        .await
        .result
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    host.shutdown().await;
    Ok((answer, refused))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (answer, refused) = run().await?;
    println!("{answer}");
    println!("a call without `path`: {refused}");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_comes_from_the_arguments_type() {
        let schema = toolshed_kit::args::schema::<super::LineCountArgs>();
        assert_eq!(schema["required"], serde_json::json!(["path"]));
        assert_eq!(schema["properties"]["path"]["minLength"], 1);
        assert_eq!(schema["additionalProperties"], false);
    }

    #[tokio::test]
    async fn the_example_runs() {
        let (answer, refused) = super::run().await.unwrap();
        assert_eq!(answer, "notes.txt: 3 lines");
        assert!(refused.contains("path"), "{refused}");
    }
}

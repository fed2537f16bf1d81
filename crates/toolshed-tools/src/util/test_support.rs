//! Helpers shared by the utility tools' tests: call a plugin's one tool as a door would,
//! and check its input schema the way a model provider would read it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolshed_core::{CallContext, ErrorKind, Plugin, ToolError, ToolOutput};

/// Calls the plugin's one tool with `args`, as a door would.
pub(crate) async fn call(plugin: &Arc<dyn Plugin>, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = plugin.tools()[0].clone();
    tool.call(CallContext::for_test(Duration::from_secs(5)), args)
        .await
}

/// The output of a call that must succeed; panics naming `args` if it fails.
pub(crate) async fn ok(plugin: &Arc<dyn Plugin>, args: Value) -> ToolOutput {
    match call(plugin, args.clone()).await {
        Ok(out) => out,
        Err(e) => panic!("{args} failed: {e}"),
    }
}

/// The error of a call that must fail; panics naming `args` if it succeeds.
pub(crate) async fn err(plugin: &Arc<dyn Plugin>, args: Value) -> ToolError {
    match call(plugin, args.clone()).await {
        Ok(out) => panic!("{args} succeeded: {}", out.text_joined()),
        Err(e) => e,
    }
}

/// The message of the invalid-arguments error a call must produce.
pub(crate) async fn invalid(plugin: &Arc<dyn Plugin>, args: Value) -> String {
    let e = err(plugin, args).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{e}");
    e.to_string()
}

/// Checks that the tool's input schema compiles, accepts every `valid` example, rejects
/// every `invalid` one, and describes every top-level property for the model (an enum's
/// values may be all it says).
pub(crate) fn check_schema(plugin: &Arc<dyn Plugin>, valid: &[Value], invalid: &[Value]) {
    let spec = plugin.tools()[0].spec().clone();
    let validator = jsonschema::validator_for(&spec.input_schema).expect("schema compiles");
    for example in valid {
        assert!(validator.is_valid(example), "schema rejects {example}");
    }
    for example in invalid {
        assert!(!validator.is_valid(example), "schema accepts {example}");
    }
    let props = spec.input_schema["properties"]
        .as_object()
        .expect("properties");
    for (name, prop) in props {
        assert!(
            prop["description"].is_string() || prop["enum"].is_array(),
            "{name} lacks a description"
        );
    }
}

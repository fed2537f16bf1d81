//! Code mode: the built-in plugin `system.code` and its one tool, `run_code`.
//!
//! A model writes one JavaScript snippet, the body of an async function, that calls tools
//! as async functions (`await tools.workspace_read({path: "a.rs"})` gives the text a model
//! would read; a tool that answers with structured data only gives that), loops and filters in
//! code, and returns only what it needs: twenty reads and a grep cost one round trip and
//! the few lines the snippet returns, not twenty replies in the model's context.
//!
//! Each call runs in a fresh QuickJS runtime on a thread of its own (nothing survives from
//! one snippet to the next; snippets of different callers never share a heap), with the
//! JavaScript plugins' limits: memory, stack, CPU time without awaiting, and the call's
//! deadline and cancellation. The snippet has no network, files, timers or host objects:
//! only `tools` and `console`. Every `tools.NAME(args)` is a call through the host's whole
//! pipeline on behalf of the `run_code` call — the same owner, profile and narrowing,
//! policy, approvals, hooks and audit — whose audit row names the `run_code` call as its
//! parent. A call the pipeline refuses, or a tool that fails, throws an `Error` whose
//! `kind` says why (`not_found`, `denied`, `invalid_arguments`, `tool_error`, ...), which
//! the snippet may catch. `run_code` cannot call itself.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use toolshed_core::{
    BuiltinPlugin, CallContext, Danger, Plane, Plugin, PluginKind, PluginManifest, Tool,
    ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};
use toolshed_kit::args;
use toolshed_ops::Services;

use crate::engine::HostAccess;
use crate::grants::Reach;
use crate::limits::JsLimits;
use crate::tool::{JsTool, Link};
use crate::worker::{self, WorkerConfig};

/// The plugin's id.
pub const PLUGIN_ID: &str = "system.code";
/// The tool's name.
pub const TOOL: &str = "run_code";
/// The tool's group.
const GROUP: &str = "code";
/// The longest snippet taken.
pub const MAX_CODE_BYTES: usize = 64 * 1024;
/// The most `console` output kept per run; lines past it are counted, not kept.
pub const MAX_LOG_BYTES: usize = 16 * 1024;
/// The most bytes of the reply's text: the console lines and the returned value.
pub const MAX_REPLY_BYTES: usize = 64 * 1024;
/// The most snippets running at once; more wait (within their deadline) for a turn. Each
/// holds a thread and up to its memory limit.
const MAX_RUNNING: usize = 4;
/// Extra time allowed past the activation limit for starting the thread.
const START_GRACE: Duration = Duration::from_secs(2);

/// The module each run evaluates.
const MODULE: &str = include_str!("code.js");

const DESCRIPTION: &str = "Run JavaScript (an async function body) where `await \
tools.NAME(args)` calls a tool and gives its text; a failed call throws an Error with `kind`. \
Returns what you `return` and `console.log`.";

/// `system.code`, the plugin holding `run_code`.
pub fn code_plugin(services: &Services) -> Arc<dyn Plugin> {
    code_plugin_with(services, JsLimits::default())
}

/// `system.code` with `limits` for each snippet's runtime.
pub fn code_plugin_with(services: &Services, limits: JsLimits) -> Arc<dyn Plugin> {
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Code mode",
        PluginKind::Builtin,
    );
    manifest.description =
        "Runs JavaScript snippets that call tools through the pipeline (run_code).".into();
    manifest.tags = vec![GROUP.to_string()];
    let tool = RunCode {
        spec: spec(),
        limits,
        access: HostAccess {
            files: services.ops.files.clone(),
            http: services.net.clone(),
            notices: services.notices.clone(),
            processes: services.ops.process.clone(),
        },
        running: Arc::new(Semaphore::new(MAX_RUNNING)),
        spare: Arc::default(),
    };
    Arc::new(BuiltinPlugin::new(manifest, vec![Arc::new(tool)]))
}

/// `run_code`'s arguments: the input schema is generated from them.
#[derive(Debug, Deserialize, JsonSchema)]
struct RunCodeArgs {
    /// e.g. `const r = await tools.workspace_grep({pattern: "TODO"}); return r.split("\n").length`
    #[schemars(length(min = 1, max = MAX_CODE_BYTES))]
    code: String,
}

fn spec() -> ToolSpec {
    let mut spec = ToolSpec::new(TOOL, DESCRIPTION)
        .title("Run code")
        .group(GROUP)
        .input_schema(args::schema::<RunCodeArgs>())
        // Its effects are those of the tools it calls (each checked on its own), so it
        // claims none of the safe hints.
        .annotations(ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        });
    spec.danger = Danger::Medium;
    spec.mutates_state = true;
    spec
}

/// The `run_code` tool.
struct RunCode {
    spec: ToolSpec,
    limits: JsLimits,
    access: HostAccess,
    running: Arc<Semaphore>,
    /// A runtime started ahead of the next snippet (made after each one is taken): starting
    /// one costs about a millisecond, which the next call then does not wait for. Each is
    /// used once, as a fresh one would be.
    spare: Arc<std::sync::Mutex<Option<Snippet>>>,
}

impl RunCode {
    /// A fresh runtime: the spare when there is one, else one started now; either way, the
    /// next spare starts in the background.
    async fn snippet(&self) -> Result<Snippet, ToolError> {
        let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (slot, limits, access) = (self.spare.clone(), self.limits.clone(), self.access.clone());
        tokio::spawn(async move {
            if let Ok(next) = Snippet::start(&limits, &access).await {
                // A spare already there (two calls at once) is dropped, which ends it.
                let _ = slot.lock().unwrap_or_else(|p| p.into_inner()).replace(next);
            }
        });
        match spare {
            Some(spare) if !spare.tool.failed() => Ok(spare),
            _ => Snippet::start(&self.limits, &self.access).await,
        }
    }
}

#[async_trait]
impl Tool for RunCode {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let code = match args::parse::<RunCodeArgs>(args) {
            Ok(RunCodeArgs { code }) if !code.trim().is_empty() => code,
            _ => {
                return Err(ToolError::invalid_at(
                    "/code",
                    "`code` is the JavaScript to run: the body of an async function, e.g. `return await tools.calculator({expression: \"2+2\"})`",
                ));
            }
        };
        if code.len() > MAX_CODE_BYTES {
            return Err(ToolError::invalid_at(
                "/code",
                format!(
                    "the code is {} bytes; run_code takes at most {MAX_CODE_BYTES}",
                    code.len()
                ),
            ));
        }
        let deadline = tokio::time::Instant::from_std(ctx.deadline);
        let _turn = tokio::select! {
            biased;
            permit = self.running.clone().acquire_owned() => permit
                .map_err(|_| ToolError::Internal("run_code is shutting down".into()))?,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            () = tokio::time::sleep_until(deadline) => {
                return Err(ToolError::Failed(format!(
                    "{MAX_RUNNING} snippets were running until this call's deadline; retry shortly"
                )));
            }
        };
        let snippet = self.snippet().await?;
        let inputs = json!({ "code": code, "max_log_bytes": MAX_LOG_BYTES });
        let outcome = snippet.tool.call(ctx, inputs).await;
        drop(snippet);
        let output = outcome?;
        Ok(reply(output.structured.unwrap_or(Value::Null)))
    }
}

/// One snippet's runtime: a JavaScript thread with the module activated.
struct Snippet {
    tool: JsTool,
    shutdown: toolshed_core::CancellationToken,
}

impl Snippet {
    async fn start(limits: &JsLimits, access: &HostAccess) -> Result<Self, ToolError> {
        let config = WorkerConfig {
            plugin_id: PLUGIN_ID.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            prefix: GROUP.into(),
            plane: Plane::Execution,
            catalog: Vec::new(),
            dir: PathBuf::new(),
            entry: "run_code.js".into(),
            source: Some(MODULE.into()),
            config: Map::new(),
            language: "en".into(),
            limits: limits.clone(),
            reach: Arc::new(Reach::all_tools(PLUGIN_ID)),
            access: access.clone(),
            context_first: false,
            node: None,
            env: Default::default(),
        };
        let (handle, ready) = worker::spawn(config).map_err(ToolError::Internal)?;
        let wait = limits.activate_timeout + START_GRACE;
        let defs = match tokio::time::timeout(wait, ready).await {
            Ok(Ok(Ok(defs))) => defs,
            Ok(Ok(Err(why))) => return Err(ToolError::Internal(format!("run_code: {why}"))),
            _ => {
                handle.shutdown.cancel();
                return Err(ToolError::Internal(
                    "run_code's JavaScript runtime did not start".into(),
                ));
            }
        };
        let Some(def) = defs.into_iter().next() else {
            handle.shutdown.cancel();
            return Err(ToolError::Internal(
                "run_code's module registered nothing".into(),
            ));
        };
        let link = Arc::new(Link {
            plugin_id: PLUGIN_ID.into(),
            commands: handle.commands.clone(),
            failure: handle.failure.clone(),
            max_queued: 1,
        });
        Ok(Self {
            tool: JsTool::new(def, link),
            shutdown: handle.shutdown,
        })
    }
}

impl Drop for Snippet {
    /// Ends the thread; it frees the runtime on its way out.
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The reply for what the module returned (`{value, logs, dropped}`): the console lines,
/// then the value (a string as it is, anything else as JSON), cut at [`MAX_REPLY_BYTES`]
/// with a note; `structured` holds the same when nothing was cut.
fn reply(returned: Value) -> ToolOutput {
    let value = returned.get("value").cloned().unwrap_or(Value::Null);
    let logs: Vec<String> = returned
        .get("logs")
        .and_then(Value::as_array)
        .map(|lines| {
            lines
                .iter()
                .filter_map(|l| l.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let dropped = returned.get("dropped").and_then(Value::as_u64).unwrap_or(0);
    let mut text = String::new();
    for line in &logs {
        text.push_str(line);
        text.push('\n');
    }
    if dropped > 0 {
        text.push_str(&format!(
            "({dropped} more console lines were dropped past {} KiB)\n",
            MAX_LOG_BYTES / 1024
        ));
    }
    let shown = match &value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    };
    text.push_str(&shown);
    if text.len() <= MAX_REPLY_BYTES {
        let mut structured = BTreeMap::new();
        structured.insert("value", value);
        structured.insert("logs", json!(logs));
        if dropped > 0 {
            structured.insert("dropped_log_lines", json!(dropped));
        }
        let mut output = ToolOutput::text(text.trim_end_matches('\n').to_string());
        output.structured = Some(json!(structured));
        return output;
    }
    let total = text.len();
    let mut cut = MAX_REPLY_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n… (cut: the reply was {total} bytes, run_code returns at most {MAX_REPLY_BYTES}; return less — a summary, a count, the lines that matter)"
    ));
    ToolOutput::text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_shows_console_lines_then_the_value_and_caps_both() {
        let out = reply(json!({"value": {"n": 2}, "logs": ["a", "b"], "dropped": 0}));
        assert_eq!(out.text_joined(), "a\nb\n{\n  \"n\": 2\n}");
        assert_eq!(
            out.structured,
            Some(json!({"value": {"n": 2}, "logs": ["a", "b"]}))
        );
        let out = reply(json!({"value": "done", "logs": [], "dropped": 3}));
        assert!(
            out.text_joined().starts_with("(3 more console lines"),
            "{}",
            out.text_joined()
        );
        assert_eq!(out.structured.unwrap()["dropped_log_lines"], 3);
        let big = "é".repeat(MAX_REPLY_BYTES);
        let out = reply(json!({"value": big, "logs": [], "dropped": 0}));
        let text = out.text_joined();
        assert!(text.len() < MAX_REPLY_BYTES + 300, "{}", text.len());
        assert!(text.contains("cut: the reply was"), "{text}");
        assert!(out.structured.is_none());
    }
}

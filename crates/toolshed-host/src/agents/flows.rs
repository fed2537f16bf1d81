//! `workflow_run` and `workflow_list`: the workflows of the workspace
//! (`.toolshed/workflows/NAME.json|yaml`, `[orchestration] workflows_dir`) run step by step
//! through the pipeline, as the caller, each step's call with the run as its parent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use toolshed_core::{CallContext, Progress, ToolError, ToolOutput};
use toolshed_kit::args::parse;

use super::spec::{NoArgs, WorkflowRunArgs};
use super::workflow::{self, Failure, StepRunner, Workflow, WorkflowError};
use super::{Op, Shared};
use crate::Dispatcher;
use crate::dispatcher::nested::NestedCaller;

/// The workflows of the workspace, read now (each file checked).
async fn load(shared: &Shared) -> Vec<(String, Result<Workflow, WorkflowError>)> {
    let dir = shared.workspace.join(&shared.config.workflows_dir);
    tokio::task::spawn_blocking(move || workflow::load_dir(&dir))
        .await
        .unwrap_or_default()
}

pub(super) async fn call(
    op: Op,
    shared: &Arc<Shared>,
    ctx: &CallContext,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    match op {
        Op::WorkflowList => {
            let _: NoArgs = parse(args)?;
            list(shared).await
        }
        _ => run(shared, ctx, parse(args)?).await,
    }
}

async fn list(shared: &Shared) -> Result<ToolOutput, ToolError> {
    let loaded = load(shared).await;
    if loaded.is_empty() {
        return Ok(ToolOutput::text_and_structured(
            format!(
                "No workflows: add one as {}/NAME.yaml or NAME.json (docs/agents.md#workflows).",
                shared.config.workflows_dir
            ),
            json!({"workflows": [], "problems": []}),
        ));
    }
    let mut text = String::new();
    let mut listed = Vec::new();
    let mut problems = Vec::new();
    for (name, result) in loaded {
        match result {
            Ok(w) => {
                let summary = w.summary();
                let value = serde_json::to_value(&summary).unwrap_or(Value::Null);
                let inputs: Vec<String> = value["inputs"]
                    .as_array()
                    .map(|inputs| {
                        inputs
                            .iter()
                            .filter_map(|i| i["name"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                text.push_str(&format!(
                    "{name}: {} (inputs: {})\n",
                    value["description"].as_str().unwrap_or("no description"),
                    if inputs.is_empty() {
                        "none".to_string()
                    } else {
                        inputs.join(", ")
                    }
                ));
                listed.push(value);
            }
            Err(e) => {
                text.push_str(&format!("{name}: cannot run: {e}\n"));
                problems.push(json!({"name": name, "error": e.to_string()}));
            }
        }
    }
    Ok(ToolOutput::text_and_structured(
        text.trim_end().to_string(),
        json!({"workflows": listed, "problems": problems}),
    ))
}

/// Runs each step's call through the pipeline for the call `ctx`.
struct PipelineSteps<'a> {
    /// The workflow's name, marked on its steps' calls (`workflow:NAME`) so that it
    /// cannot run itself through them.
    name: &'a str,
    ctx: &'a CallContext,
    nested: &'a NestedCaller,
    dispatcher: Arc<Dispatcher>,
    total: AtomicU64,
}

impl PipelineSteps<'_> {
    async fn call(&self, tool: &str, args: Value) -> Result<Value, Failure> {
        if let Some(refused) = self.nested.reentry(tool) {
            return Err(Failure(refused));
        }
        let mut request =
            self.nested
                .agent_request(self.ctx, self.ctx.owner.clone(), tool, args, &[]);
        request.via_plugins.push(format!("workflow:{}", self.name));
        let dispatcher = self.dispatcher.clone();
        // On a task of its own: the call is recorded even if the run stops waiting.
        let result = tokio::spawn(async move { dispatcher.call(request).await })
            .await
            .map_err(|e| format!("the call failed: {e}"))?;
        match result.result {
            Ok(output) if output.is_error => Err(workflow::Failure(output.text_joined())),
            Ok(output) => Ok(output
                .structured
                .clone()
                .unwrap_or_else(|| Value::String(output.text_joined()))),
            Err(e) => Err(format!("{} ({})", e, e.kind().as_str()).into()),
        }
    }
}

#[async_trait::async_trait]
impl StepRunner for PipelineSteps<'_> {
    async fn call_tool(&self, _step_id: &str, tool: &str, args: Value) -> Result<Value, Failure> {
        self.call(tool, args).await
    }

    async fn run_agent(&self, _step_id: &str, spec: Value) -> Result<Value, Failure> {
        self.call("agent_run", spec).await
    }

    fn step_started(&self, step_id: &str, done: u64) {
        let total = self.total.load(Ordering::Relaxed);
        self.ctx.progress.send(Progress {
            progress: Some(done as f64),
            total: (total > 0).then_some(total as f64),
            message: Some(format!("step `{step_id}`")),
        });
    }
}

async fn run(
    shared: &Shared,
    ctx: &CallContext,
    args: WorkflowRunArgs,
) -> Result<ToolOutput, ToolError> {
    let loaded = load(shared).await;
    let names: Vec<String> = loaded.iter().map(|(n, _)| n.clone()).collect();
    let Some((_, found)) = loaded.into_iter().find(|(n, _)| *n == args.name) else {
        return Err(ToolError::NotFound(format!(
            "no workflow `{}` in {}; workflows: {}",
            args.name,
            shared.config.workflows_dir,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    let flow = found.map_err(|e| ToolError::invalid(e.to_string()))?;
    let nested = super::lineage(ctx)?;
    let marker = format!("workflow:{}", args.name);
    if nested.via().contains(&marker) {
        return Err(ToolError::Denied {
            rule: "orchestration".into(),
            message: format!(
                "workflow `{}` would run itself (calls went {}); a workflow cannot call itself, \
                 directly or through another",
                args.name,
                nested.via().join(" -> ")
            ),
        });
    }
    let dispatcher = nested
        .dispatcher()
        .ok_or_else(|| ToolError::Internal("the host is shutting down".into()))?;
    let runner = PipelineSteps {
        name: &args.name,
        ctx,
        nested,
        dispatcher,
        total: AtomicU64::new(0),
    };
    let inputs = args.inputs.unwrap_or_else(|| json!({}));
    match workflow::run(&flow, inputs, &runner, &ctx.cancel).await {
        Ok(report) => {
            let text = format!(
                "Workflow `{}` ran {} step(s). Output:\n{}",
                args.name,
                report.steps.len(),
                match &report.output {
                    Value::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                }
            );
            Ok(ToolOutput::text_and_structured(
                text,
                serde_json::to_value(&report).unwrap_or(Value::Null),
            ))
        }
        Err(WorkflowError::Cancelled { .. }) => Err(ToolError::Cancelled),
        Err(e) => match e.report() {
            // A step failed: what ran is reported with the failure.
            Some(report) => Ok(ToolOutput::text_and_structured(
                format!("Workflow `{}` failed: {e}", args.name),
                json!({"error": e.to_string(), "report": report}),
            )
            .into_error()),
            None => Err(ToolError::invalid(e.to_string())),
        },
    }
}

//! Agent orchestration as tools (`system.agents`, docs/agents.md): subagents
//! (`agent_run`) with named presets, todo lists and goals, plan mode, schedules and
//! workflows. Every call a subagent, a schedule or a workflow makes goes through the
//! pipeline as a direct call does — review, policy, approvals, quotas, the sandbox mode
//! and the audit — as a sub-owner of the caller (`alice/agent-3`), with `parent` set.

mod cron;
mod flows;
mod run;
mod schedule;
mod settings;
mod spec;
mod todo;
mod workflow;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolshed_core::{
    BuiltinPlugin, CallContext, Plugin, PluginKind, PluginManifest, Tool, ToolError, ToolOutput,
    ToolSpec,
};

pub(crate) use schedule::{ScheduleHost, run_schedules};
pub(crate) use settings::check_presets;
pub use settings::{AgentPreset, OrchestrationConfig};
pub(crate) use spec::Op;

use crate::dispatcher::nested::NestedCaller;
use crate::store::StateStore;

/// The plugin id.
pub(crate) const PLUGIN_ID: &str = crate::dispatcher::plan::AGENTS_PLUGIN;

/// What the agent tools share.
pub(crate) struct Shared {
    pub(crate) config: OrchestrationConfig,
    pub(crate) presets: Vec<AgentPreset>,
    pub(crate) store: Arc<StateStore>,
    pub(crate) workspace: std::path::PathBuf,
    /// Runs of `agent_run` going on now, per owner at the top (`alice` for `alice/x`).
    pub(crate) running: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

/// The agent tools' plugin.
pub(crate) fn plugin(
    config: OrchestrationConfig,
    presets: Vec<AgentPreset>,
    store: Arc<StateStore>,
    workspace: std::path::PathBuf,
) -> Arc<dyn Plugin> {
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Agents",
        PluginKind::Builtin,
    );
    manifest.description = "Subagents, presets, todo lists, goals, plan mode, schedules and \
                            workflows (agent_run, todo_write, plan_submit, schedule_create, \
                            workflow_run, ...)."
        .into();
    manifest.tags = vec![spec::GROUP.into()];
    let shared = Arc::new(Shared {
        config,
        presets: presets
            .into_iter()
            .map(|mut p| {
                p.source = "config".into();
                p
            })
            .collect(),
        store,
        workspace,
        running: std::sync::Mutex::default(),
    });
    let tools: Vec<Arc<dyn Tool>> = Op::ALL
        .iter()
        .map(|op| {
            Arc::new(AgentTool {
                op: *op,
                spec: spec::spec(*op),
                shared: shared.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    Arc::new(BuiltinPlugin::new(manifest, tools))
}

struct AgentTool {
    op: Op,
    spec: ToolSpec,
    shared: Arc<Shared>,
}

/// The pipeline's lineage of the call `ctx` (who called, narrowed how), for the tools that
/// make calls of their own.
pub(crate) fn lineage(ctx: &CallContext) -> Result<&NestedCaller, ToolError> {
    ctx.caller
        .as_deref()
        .and_then(|c| c.as_any())
        .and_then(|any| any.downcast_ref::<NestedCaller>())
        .ok_or_else(|| ToolError::Internal("this tool runs only inside a toolshed host".into()))
}

#[async_trait]
impl Tool for AgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let shared = &self.shared;
        if matches!(self.op, Op::Run | Op::WorkflowRun | Op::ScheduleCreate) {
            refuse_plugins(&self.spec.name, &ctx)?;
        }
        match self.op {
            Op::Run => run::agent_run(shared, &ctx, args).await,
            Op::Presets => run::presets_list(shared, &ctx, args),
            Op::TodoWrite | Op::TodoRead | Op::GoalSet | Op::GoalStatus => {
                let shared = shared.clone();
                let (op, owner) = (self.op, ctx.owner.0.clone());
                tokio::task::spawn_blocking(move || todo::call(op, &shared, &owner, args))
                    .await
                    .map_err(|e| ToolError::Internal(format!("the todo task failed: {e}")))?
            }
            Op::PlanEnter | Op::PlanSubmit => plan_call(self.op, &ctx, args),
            Op::ScheduleCreate | Op::ScheduleList | Op::ScheduleDelete => {
                schedule::call(self.op, shared, &ctx, args).await
            }
            Op::WorkflowRun | Op::WorkflowList => flows::call(self.op, shared, &ctx, args).await,
        }
    }
}

/// The most plugins and workflows one chain of calls passes through.
const MAX_CHAIN: usize = 16;

/// Refuses `tool` (one that makes calls of its own, now or later) to a plugin's code: its
/// calls would reach every tool of the plugin's caller, beyond the plugin's grants.
/// `run_code` snippets and the agent tools themselves run as their caller and may. Refuses
/// a chain of calls grown too long, too.
fn refuse_plugins(tool: &str, ctx: &CallContext) -> Result<(), ToolError> {
    let via = lineage(ctx)?.via();
    if let Some(plugin) = via
        .iter()
        .find(|p| !p.starts_with("system.") && !p.starts_with("workflow:"))
    {
        return Err(ToolError::Denied {
            rule: "plugin capabilities".into(),
            message: format!(
                "plugin `{plugin}` cannot call `{tool}`: its calls would reach tools beyond \
                 the plugin's grants"
            ),
        });
    }
    if via.len() > MAX_CHAIN {
        return Err(ToolError::Denied {
            rule: "orchestration".into(),
            message: format!(
                "`{tool}` would be the {}th call in one chain (calls went {}); at most \
                 {MAX_CHAIN} nest",
                via.len() + 1,
                via.join(" -> ")
            ),
        });
    }
    Ok(())
}

/// `plan_enter` and `plan_submit` (which runs only once the person approved it).
fn plan_call(op: Op, ctx: &CallContext, args: Value) -> Result<ToolOutput, ToolError> {
    let nested = lineage(ctx)?;
    let dispatcher = nested
        .dispatcher()
        .ok_or_else(|| ToolError::Internal("the host is shutting down".into()))?;
    let plans = dispatcher.plans();
    let owner = &ctx.owner.0;
    let stored = |e: crate::store::StoreError| ToolError::Internal(e.to_string());
    match op {
        Op::PlanEnter => {
            plans.enter(owner).map_err(stored)?;
            Ok(ToolOutput::text(format!(
                "`{owner}` is in plan mode: only read-only tools run. Explore, write your plan \
                 (todo_write helps), then submit it with plan_submit {{plan, mode?}}; the \
                 person approves it or not."
            )))
        }
        _ => {
            let args: spec::PlanSubmitArgs = toolshed_kit::args::parse(args)?;
            if !ctx.approved {
                return Err(ToolError::Denied {
                    rule: "plan mode".into(),
                    message: "a plan runs only once a person approves it".into(),
                });
            }
            let mode = match args.mode.as_deref() {
                None => None,
                Some(m) => Some(toolshed_ops::sandbox::SandboxMode::parse(m).map_err(|_| {
                    ToolError::invalid_at(
                        "/mode",
                        format!(
                            "mode `{m}` is not one of `read-only`, `workspace-write`, \
                             `full-access`"
                        ),
                    )
                })?),
            };
            plans.approve(owner, mode, &args.plan).map_err(stored)?;
            let how = match mode {
                Some(m) => format!(
                    " in {} (or narrower, where the caller is narrowed)",
                    m.as_str()
                ),
                None => String::new(),
            };
            Ok(ToolOutput::text(format!(
                "The person approved your plan. Carry it out: calls run from now{how}."
            )))
        }
    }
}

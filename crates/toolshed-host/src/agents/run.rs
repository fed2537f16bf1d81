//! `agent_run`: a model loop inside toolshed. The model — the calling client's through MCP
//! sampling with tools, else the `[llm]` endpoint — gets the task and the tools its caller
//! may use, narrowed by the preset and the call; each tool it calls goes through the
//! pipeline as a sub-owner of the caller (`alice/agent-…`), with the run's call as parent.
//! A budget of steps, tokens and wall time ends it with what it had.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolshed_core::{
    AgentPreset, CallContext, ChatMessage, CompletionRequest, ModelTool, OwnerId, Progress,
    Sampler, ToolError, ToolOutput,
};
use toolshed_kit::args::parse;

use super::Shared;
use super::spec::{NoArgs, RunArgs};
use crate::review::{CompiledRules, Subject};

/// The instructions a run gets without a preset's.
const DEFAULT_SYSTEM: &str = "You are a subagent of toolshed, given one task by another \
    agent. Use the tools offered to do it; when a call is refused, read why and do without or \
    say so. When done, answer with the result alone: the agent that asked reads only your \
    final answer.";

/// The most tools offered to the model in one run.
const MAX_TOOLS_OFFERED: usize = 128;

/// The most bytes of one tool result the model reads back.
const MAX_RESULT_BYTES: usize = 16 * 1024;

/// The most tool calls of one model turn that run; the rest are answered as not run.
const MAX_CALLS_PER_TURN: usize = 64;

/// The most bytes the conversation a run sends its model grows to.
const MAX_CONVERSATION_BYTES: usize = 2 * 1024 * 1024;

/// The most tokens asked for in one turn.
const TURN_TOKENS: u64 = 4096;

/// Time kept back from the call's deadline, to answer with what the run had.
const ANSWER_MARGIN: Duration = Duration::from_millis(500);

/// How deep `owner` is in runs: the `agent-…` parts of its id.
fn depth(owner: &str) -> u32 {
    owner
        .split('/')
        .filter(|part| part.starts_with("agent-"))
        .count() as u32
}

/// Every preset: the configuration's, then the loaded plugins'.
fn presets(shared: &Shared, dispatcher: &crate::Dispatcher) -> Vec<AgentPreset> {
    let mut all = shared.presets.clone();
    for plugin in dispatcher.registry().plugins() {
        if let Some(manifest) = dispatcher.registry().manifest(&plugin.id) {
            for mut preset in manifest.agents {
                if all.iter().any(|p| p.name == preset.name) {
                    continue;
                }
                // A plugin's preset is held to the rules of the configuration's.
                if let Err(e) =
                    super::check_presets(std::slice::from_ref(&preset), shared.config.max_steps)
                {
                    tracing::warn!(plugin = %plugin.id, error = %e, "agent preset left out");
                    continue;
                }
                preset.source = format!("plugin {}", plugin.id);
                all.push(preset);
            }
        }
    }
    all
}

/// `agent_presets_list`.
pub(super) fn presets_list(
    shared: &Shared,
    ctx: &CallContext,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let _: NoArgs = parse(args)?;
    let dispatcher = super::lineage(ctx)?
        .dispatcher()
        .ok_or_else(|| ToolError::Internal("the host is shutting down".into()))?;
    let all = presets(shared, &dispatcher);
    if all.is_empty() {
        return Ok(ToolOutput::text_and_structured(
            "No presets are defined ([[agents]] in the configuration, or a plugin's). \
             agent_run works without one: give it `task` and, if you like, `tools`.",
            json!({"presets": []}),
        ));
    }
    let mut text = String::new();
    for p in &all {
        text.push_str(&format!("{}: {}", p.name, p.description));
        if !p.tools.is_empty() {
            text.push_str(&format!(" (tools: {})", p.tools.join(", ")));
        }
        text.push('\n');
    }
    let listed: Vec<Value> = all
        .iter()
        .map(|p| {
            json!({
                "name": p.name, "description": p.description, "tools": p.tools,
                "profile": p.profile, "model": p.model, "max_steps": p.max_steps,
                "source": p.source,
            })
        })
        .collect();
    Ok(ToolOutput::text_and_structured(
        text.trim_end().to_string(),
        json!({"presets": listed}),
    ))
}

/// Holds one running run's place in its owner's count.
struct Slot<'a> {
    shared: &'a Shared,
    root: String,
}

impl<'a> Slot<'a> {
    fn take(shared: &'a Shared, owner: &str) -> Result<Self, ToolError> {
        let root = owner.split('/').next().unwrap_or(owner).to_string();
        let mut running = shared.running.lock().unwrap_or_else(|p| p.into_inner());
        let n = running.entry(root.clone()).or_insert(0);
        let max = shared.config.max_running_per_owner;
        if *n >= max {
            return Err(ToolError::RateLimited {
                message: format!(
                    "`{root}` has {n} subagents running, the most it may have at once \
                     ([orchestration] max_running_per_owner = {max}); wait for one to finish"
                ),
                retry_after: Duration::from_secs(5),
            });
        }
        *n += 1;
        Ok(Self { shared, root })
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut running = self
            .shared
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = running.get_mut(&self.root) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(&self.root);
            }
        }
    }
}

/// One tool call of a run, for its transcript.
#[derive(serde::Serialize)]
struct Step {
    step: u32,
    tool: String,
    call_id: Option<String>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more bytes cut]", &text[..end], text.len() - end)
}

/// `agent_run`.
pub(super) async fn agent_run(
    shared: &Shared,
    ctx: &CallContext,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args: RunArgs = parse(args)?;
    let nested = super::lineage(ctx)?;
    let dispatcher = nested
        .dispatcher()
        .ok_or_else(|| ToolError::Internal("the host is shutting down".into()))?;
    let config = &shared.config;
    let owner = &ctx.owner.0;
    let deep = depth(owner);
    if deep >= config.max_depth {
        return Err(ToolError::Denied {
            rule: "orchestration.max_depth".into(),
            message: format!(
                "`{owner}` is a subagent {deep} deep, and subagents may start others only \
                 {} deep ([orchestration] max_depth); do the task yourself",
                config.max_depth
            ),
        });
    }
    let preset = match &args.preset {
        None => None,
        Some(name) => {
            let all = presets(shared, &dispatcher);
            Some(
                all.iter()
                    .find(|p| &p.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
                        ToolError::NotFound(format!(
                            "no agent preset `{name}`; presets: {} (agent_presets_list)",
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ))
                    })?,
            )
        }
    };
    let max_steps = args
        .max_steps
        .or(preset.as_ref().and_then(|p| p.max_steps))
        .unwrap_or(config.default_steps);
    if max_steps > config.max_steps && args.max_steps.is_none() {
        return Err(ToolError::Unconfigured {
            message: format!(
                "preset `{}` asks for {max_steps} steps, more than a run may take \
                 ([orchestration] max_steps = {}); lower its max_steps",
                preset.as_ref().map(|p| p.name.as_str()).unwrap_or_default(),
                config.max_steps
            ),
            variables: vec!["orchestration.max_steps".into()],
        });
    }
    if max_steps > config.max_steps {
        return Err(ToolError::invalid_at(
            "/max_steps",
            format!(
                "max_steps = {max_steps} is more than a run may take ([orchestration] \
                 max_steps = {})",
                config.max_steps
            ),
        ));
    }
    // The narrowing: the preset's tools and profile, then the call's own globs.
    let mut narrowing: Vec<Arc<CompiledRules>> = Vec::new();
    let rules = |source: &str, globs: Vec<String>| {
        CompiledRules::allow_only(source, globs)
            .map_err(|e| ToolError::invalid_at("/tools", e.to_string()))
    };
    if let Some(p) = &preset {
        if let Some(r) = rules(&format!("agents.{}.tools", p.name), p.tools.clone())? {
            narrowing.push(Arc::new(r));
        }
        if let Some(profile) = &p.profile {
            let compiled =
                dispatcher
                    .review()
                    .profile(profile)
                    .ok_or_else(|| ToolError::Unconfigured {
                        message: format!(
                            "preset `{}` names profile `{profile}`, which is not defined",
                            p.name
                        ),
                        variables: vec![format!("profiles.{profile}")],
                    })?;
            narrowing.push(Arc::new(compiled.clone()));
        }
    }
    if let Some(globs) = args.tools.clone()
        && let Some(r) = rules("agent_run.tools", globs)?
    {
        narrowing.push(Arc::new(r));
    }
    let sampler: Arc<dyn Sampler> = match ctx.sampler.clone().filter(|s| s.calls_tools()) {
        Some(s) => s,
        None => dispatcher
            .llm()
            .filter(|s| s.calls_tools())
            .cloned()
            .ok_or_else(|| ToolError::Unconfigured {
                message: "agent_run needs a model that can call tools: a client offering MCP \
                          sampling with tools, or an OpenAI-compatible endpoint in [llm] \
                          base_url"
                    .into(),
                variables: vec!["llm.base_url".into()],
            })?,
    };
    let _slot = Slot::take(shared, owner)?;
    let sub_owner = OwnerId::new(format!("{owner}/agent-{}", ctx.call_id.0));
    // The tools offered: what the caller may call, narrowed, and available.
    let mut tools: Vec<ModelTool> = dispatcher
        .registry()
        .tools()
        .into_iter()
        .filter(|entry| {
            nested.allows(
                &dispatcher,
                &Subject::new(entry.spec(), &entry.plugin_id),
                &narrowing,
            ) && dispatcher.registry().unavailable(entry).is_none()
                && (deep + 1 < config.max_depth || entry.spec().name != "agent_run")
        })
        .map(|entry| {
            let spec = entry.spec();
            ModelTool {
                name: spec.name.clone(),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
            }
        })
        .collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools.truncate(MAX_TOOLS_OFFERED);
    let mut task = args.task.clone();
    if let Some(goal) = &args.goal {
        let goals = super::todo::goal_rows(shared, owner, Some(goal))?;
        let Some(goal) = goals.first() else {
            return Err(ToolError::NotFound(format!(
                "you have no goal `{goal}`; set it with goal_set first"
            )));
        };
        task.push_str(&format!(
            "\n\nThis works towards the goal `{}`: {}\nIt is reached when: {}",
            goal["name"].as_str().unwrap_or_default(),
            goal["objective"].as_str().unwrap_or_default(),
            goal["criteria"]
                .as_array()
                .map(|c| c
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("; "))
                .unwrap_or_default()
        ));
    }
    let system = preset
        .as_ref()
        .and_then(|p| p.system.clone())
        .unwrap_or_else(|| DEFAULT_SYSTEM.to_string());
    let started = Instant::now();
    let mut ends = ctx
        .deadline
        .checked_sub(ANSWER_MARGIN)
        .unwrap_or(ctx.deadline);
    if let Some(ms) = args.timeout_ms {
        ends = ends.min(started + Duration::from_millis(ms));
    }
    let budget_tokens = args.max_tokens;
    let mut size = task.len() + system.len();
    let mut messages = vec![ChatMessage::text("user", task)];
    let mut transcript: Vec<Step> = Vec::new();
    let mut used = toolshed_core::Usage::default();
    let mut answer = String::new();
    let mut stopped = "max_steps";
    let mut model_error = None;
    let mut steps = 0;
    'steps: for step in 1..=max_steps {
        ctx.progress.send(Progress {
            progress: Some(f64::from(step - 1)),
            total: Some(f64::from(max_steps)),
            message: Some(format!("step {step} of at most {max_steps}")),
        });
        let spent = used.input_tokens + used.output_tokens;
        if budget_tokens.is_some_and(|max| spent >= max) {
            stopped = "max_tokens";
            break;
        }
        if size > MAX_CONVERSATION_BYTES {
            stopped = "max_conversation";
            break;
        }
        let turn_tokens = budget_tokens
            .map_or(TURN_TOKENS, |max| (max - spent).min(TURN_TOKENS))
            .max(1);
        let request = CompletionRequest {
            messages: messages.clone(),
            system: Some(system.clone()),
            max_tokens: u32::try_from(turn_tokens).unwrap_or(u32::MAX),
            temperature: None,
            tools: tools.clone(),
            model: preset.as_ref().and_then(|p| p.model.clone()),
        };
        let completion = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            () = tokio::time::sleep_until(ends.into()) => { stopped = "timeout"; break; }
            c = sampler.complete(request, &ctx.cancel) => c,
        };
        let completion = match completion {
            Ok(c) => c,
            // Nothing ran yet: the run failed. Else it answers with what it had.
            Err(e) if transcript.is_empty() => return Err(e),
            Err(e) => {
                stopped = "model_error";
                model_error = Some(e.to_string());
                break;
            }
        };
        steps = step;
        let written = completion.text.len()
            + completion
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().len())
                .sum::<usize>();
        if let Some(u) = completion.usage {
            used.input_tokens += u.input_tokens;
            used.output_tokens += u.output_tokens;
        } else {
            // Without a count from the model's side (MCP sampling gives none): about four
            // bytes a token, of what was sent and what came back.
            used.input_tokens += (size as u64).div_ceil(4);
            used.output_tokens += (written as u64).div_ceil(4);
        }
        if !completion.text.is_empty() {
            answer = completion.text.clone();
        }
        if completion.tool_calls.is_empty() {
            stopped = "done";
            break;
        }
        let mut assistant = ChatMessage::text("assistant", completion.text.clone());
        assistant.tool_calls = completion.tool_calls.clone();
        size += written;
        messages.push(assistant);
        for (i, call) in completion.tool_calls.into_iter().enumerate() {
            if i >= MAX_CALLS_PER_TURN {
                let text = format!(
                    "not run: a turn runs at most {MAX_CALLS_PER_TURN} tool calls; ask for \
                     this one again in the next turn"
                );
                size += text.len();
                messages.push(ChatMessage::tool_result(call.id, text, true));
                continue;
            }
            // Each call gets what is left of the run's time, not of the whole call's: the
            // run answers with what it had when its time is up.
            let left = ends.saturating_duration_since(Instant::now());
            if left.is_zero() {
                stopped = "timeout";
                break 'steps;
            }
            if let Some(refused) = nested.reentry(&call.name) {
                let text = format!("error (denied): {refused}");
                transcript.push(Step {
                    step,
                    tool: call.name.clone(),
                    call_id: None,
                    ok: false,
                    error: Some(text.clone()),
                });
                size += text.len();
                messages.push(ChatMessage::tool_result(call.id, text, true));
                continue;
            }
            let mut request = nested.agent_request(
                ctx,
                sub_owner.clone(),
                &call.name,
                call.arguments,
                &narrowing,
            );
            request.timeout = Some(left);
            // On a task of its own, so that the call is recorded even if the run stops
            // waiting for it; the run's cancellation reaches it through its child token.
            let dispatcher = dispatcher.clone();
            let running = tokio::spawn(async move { dispatcher.call(request).await });
            let result = tokio::select! {
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                r = running => r.map_err(|e| ToolError::Internal(format!("a subagent's call failed: {e}")))?,
            };
            let (text, ok, error) = match &result.result {
                Ok(output) => (output.text_joined(), !output.is_error, None),
                Err(e) => {
                    let text = format!("error ({}): {e}", e.kind().as_str());
                    (text.clone(), false, Some(text))
                }
            };
            transcript.push(Step {
                step,
                tool: call.name.clone(),
                call_id: Some(result.call_id.0.clone()),
                ok,
                error,
            });
            let text = cut(&text, MAX_RESULT_BYTES);
            size += text.len();
            messages.push(ChatMessage::tool_result(call.id, text, !ok));
        }
        if Instant::now() >= ends {
            stopped = "timeout";
            break;
        }
    }
    let calls = transcript.len();
    let failed = transcript.iter().filter(|s| !s.ok).count();
    let mut text = if answer.is_empty() {
        "(the subagent gave no answer)".to_string()
    } else {
        answer.clone()
    };
    let why = match stopped {
        "done" => "it finished".to_string(),
        "max_steps" => format!("it used all {max_steps} steps"),
        "max_tokens" => format!("it used its {} tokens", budget_tokens.unwrap_or(0)),
        "max_conversation" => format!(
            "its conversation outgrew {} MiB",
            MAX_CONVERSATION_BYTES >> 20
        ),
        "model_error" => format!(
            "its model failed: {}",
            model_error.as_deref().unwrap_or_default()
        ),
        _ => "its time ran out".to_string(),
    };
    text.push_str(&format!(
        "\n\n— subagent {}: {steps} step(s), {calls} tool call(s) ({failed} failed or refused); \
         stopped because {why}",
        sub_owner.0
    ));
    let output = ToolOutput::text_and_structured(
        text,
        json!({
            "answer": answer,
            "stopped": stopped,
            "steps": steps,
            "owner": sub_owner.0,
            "calls": transcript,
            "usage": used,
            "preset": preset.as_ref().map(|p| p.name.clone()),
            "tools_offered": tools.len(),
            "duration_ms": started.elapsed().as_millis() as u64,
            "error": model_error,
        }),
    );
    // A run its model broke off reports what it did, as a failure.
    Ok(if stopped == "model_error" {
        output.into_error()
    } else {
        output
    })
}

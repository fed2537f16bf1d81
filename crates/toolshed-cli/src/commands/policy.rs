//! `toolshed policy test TOOL --args JSON [--owner O]`: what the policy decides for a call,
//! and which rule decided it, without running anything.

use serde_json::json;
use toolshed_core::OwnerId;
use toolshed_host::policy::{Decision, PolicyRules};
use toolshed_host::{Host, Policy, PolicyDecision, SandboxEscalation, Subject, closest};

use crate::Failure;
use crate::commands::call::read_args;
use crate::render::print_json;

/// Prints the decision for `tool` called by `owner` with `args`.
pub(crate) fn test(
    host: &Host,
    tool: &str,
    args: Option<&str>,
    owner: &str,
    json: bool,
) -> Result<(), Failure> {
    let arguments = read_args(args)?;
    let Some(entry) = host.catalog().lookup(tool) else {
        let names = host.catalog().tool_names();
        let close = closest(tool, names.iter().map(String::as_str), 3);
        let hint = if close.is_empty() {
            "`toolshed tools list` shows every tool".to_string()
        } else {
            format!("did you mean {}?", close.join(", "))
        };
        return Err(Failure::Usage(format!("no tool named `{tool}`; {hint}")));
    };
    let config = &host.config().config;
    let rules = PolicyRules::compile(&config.policy).map_err(|e| Failure::Usage(e.to_string()))?;
    let owner = OwnerId(owner.to_string());
    // What the call would touch, worked out as the pipeline does.
    let touches = host.dispatcher().touches(&entry, &arguments);
    let subject = Subject::new(entry.tool.spec(), &entry.plugin_id).with_touches(&touches);
    let mut verdict = rules.evaluate(&subject, &owner, &arguments);
    if verdict.decision == Decision::Allow {
        let mode = config
            .sandbox
            .mode()
            .map_err(|e| Failure::Usage(e.to_string()))?;
        if let PolicyDecision::NeedsApproval { rule, reason } =
            SandboxEscalation::new(mode).check(&subject, &owner, &arguments)
        {
            verdict.decision = Decision::Ask;
            verdict.rule = rule;
            verdict.message = Some(reason);
        }
    }
    if json {
        print_json(&json!({
            "tool": tool,
            "owner": owner.0,
            "decision": verdict.decision.as_str(),
            "rule": verdict.rule,
            "message": verdict.message,
            "rules": rules.len(),
        }))?;
    } else {
        outln!("{}  ({})", verdict.decision.as_str(), verdict.rule);
        if let Some(message) = &verdict.message {
            outln!("{message}");
        }
    }
    Ok(())
}

//! Human commands (the TypeScript harness's slash commands): actions a person runs from
//! their client without the model — `status`, `approvals`, `approve ID`, `deny ID` — offered
//! as MCP prompts (a client shows them as `/…` commands; getting one runs it and its text is
//! the answer) and over REST (`POST /api/v1/commands/{name}`). Each is the same action
//! whatever door it came through, with the caller's rights.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::Host;
use crate::approvals::{ApprovalRequest, principal};
use crate::identity::Caller;
use crate::registry::PluginState;

/// One command as listed.
#[derive(Debug, Clone, Serialize)]
pub struct CommandInfo {
    /// Its name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its argument, if it takes one: (name, description).
    pub argument: Option<(&'static str, &'static str)>,
}

/// Every command.
pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "status",
        description: "toolshed's status: workspace, sandbox, plugins, pending approvals, running jobs.",
        argument: None,
    },
    CommandInfo {
        name: "approvals",
        description: "The approval requests waiting for an answer.",
        argument: None,
    },
    CommandInfo {
        name: "approve",
        description: "Approve a waiting call (its request id, from `approvals`).",
        argument: Some(("id", "The approval request's id, e.g. ap-12")),
    },
    CommandInfo {
        name: "deny",
        description: "Deny a waiting call (its request id, from `approvals`).",
        argument: Some(("id", "The approval request's id, e.g. ap-12")),
    },
];

/// What a command answered.
#[derive(Debug, Clone, Serialize)]
pub struct CommandOutcome {
    /// For the person.
    pub text: String,
    /// The same, as data.
    pub data: Value,
}

/// Why a command did not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// No such command, or a bad argument.
    #[error("{0}")]
    Invalid(String),
    /// No such approval request.
    #[error("{0}")]
    NotFound(String),
    /// The caller may not do that.
    #[error("{0}")]
    Denied(String),
    /// The request was answered already, or expired.
    #[error("{0}")]
    Conflict(String),
    /// The state store failed.
    #[error("{0}")]
    Failed(String),
}

/// Runs command `name` with `arguments` for `caller`, who `by` names in what it records.
pub fn run(
    host: &Host,
    caller: &Caller,
    by: &str,
    name: &str,
    arguments: &Map<String, Value>,
) -> Result<CommandOutcome, CommandError> {
    let Some(info) = COMMANDS.iter().find(|c| c.name == name) else {
        return Err(CommandError::Invalid(format!(
            "no command `{name}`; the commands: {}",
            COMMANDS
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    if let Some(unknown) = arguments
        .keys()
        .find(|k| info.argument.is_none_or(|(a, _)| a != k.as_str()))
    {
        return Err(CommandError::Invalid(format!(
            "`{name}` takes {}, not `{unknown}`",
            info.argument
                .map_or_else(|| "no argument".to_string(), |(a, _)| format!("`{a}`"))
        )));
    }
    match name {
        "status" => Ok(status(host, caller)),
        "approvals" => approvals(host, caller),
        _ => {
            let id = arguments
                .get("id")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| {
                    CommandError::Invalid(format!(
                        "`{name}` needs `id`: the approval request's id (the `approvals` command lists them)"
                    ))
                })?;
            answer(host, caller, by, id, name == "approve")
        }
    }
}

/// Whether `caller` sees `request`: the admin every one, an agent its own owner's.
fn sees(caller: &Caller, request: &ApprovalRequest) -> bool {
    !caller.is_agent() || principal(&request.owner) == principal(&caller.owner.0)
}

fn failed(e: impl std::fmt::Display) -> CommandError {
    CommandError::Failed(format!("the state store failed: {e}"))
}

fn status(host: &Host, caller: &Caller) -> CommandOutcome {
    let plugins = host.plugins().list();
    let count = |state: PluginState| plugins.iter().filter(|p| p.state == state).count();
    let unwell: Vec<String> = plugins
        .iter()
        .filter(|p| {
            matches!(
                p.state,
                PluginState::Error | PluginState::Degraded | PluginState::Paused
            )
        })
        .map(|p| format!("{} ({})", p.id, p.state.as_str()))
        .collect();
    let pending = host
        .approvals()
        .list(false, 1000)
        .map(|all| all.iter().filter(|r| sees(caller, r)).count())
        .unwrap_or(0);
    let owner = caller.is_agent().then_some(caller.owner.0.as_str());
    let jobs = host.jobs_if_started().map_or(0, |jobs| {
        jobs.list(owner, Some(crate::jobs::JobState::Running)).len()
    });
    let sandbox = &host.config().config.sandbox;
    let data = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "workspace": host.workspace().display().to_string(),
        "sandbox": {"mode": sandbox.mode, "network": sandbox.network},
        "plugins": {
            "running": count(PluginState::Running),
            "degraded": count(PluginState::Degraded),
            "paused": count(PluginState::Paused),
            "error": count(PluginState::Error),
            "disabled": count(PluginState::Disabled),
        },
        "tools": host.catalog().tools().len(),
        "approvals_pending": pending,
        "jobs_running": jobs,
        "calls_in_flight": host.dispatcher().calls_in_flight(),
    });
    let mut text = format!(
        "toolshed {} — workspace {}\nsandbox: {} (network {})\nplugins: {} running, {} degraded, {} paused, {} in error, {} disabled; {} tools\napprovals waiting: {pending}; jobs running: {jobs}; calls now: {}",
        env!("CARGO_PKG_VERSION"),
        host.workspace().display(),
        data["sandbox"]["mode"].as_str().unwrap_or("?"),
        data["sandbox"]["network"].as_str().unwrap_or("?"),
        data["plugins"]["running"],
        data["plugins"]["degraded"],
        data["plugins"]["paused"],
        data["plugins"]["error"],
        data["plugins"]["disabled"],
        data["tools"],
        data["calls_in_flight"],
    );
    if !unwell.is_empty() {
        text.push_str(&format!("\nneeds a look: {}", unwell.join(", ")));
    }
    CommandOutcome { text, data }
}

fn approvals(host: &Host, caller: &Caller) -> Result<CommandOutcome, CommandError> {
    let waiting: Vec<ApprovalRequest> = host
        .approvals()
        .list(false, 100)
        .map_err(failed)?
        .into_iter()
        .filter(|r| sees(caller, r))
        .collect();
    let text = if waiting.is_empty() {
        "No call waits for an approval.".to_string()
    } else {
        let mut text = format!("{} call(s) wait for an approval:", waiting.len());
        for r in &waiting {
            text.push_str(&format!(
                "\n{}: {} by {} — {} (rule {}); answer with approve or deny and id {}",
                r.id, r.tool, r.owner, r.summary, r.rule, r.id
            ));
        }
        text
    };
    let data = json!({"approvals": waiting});
    Ok(CommandOutcome { text, data })
}

fn answer(
    host: &Host,
    caller: &Caller,
    by: &str,
    id: &str,
    approve: bool,
) -> Result<CommandOutcome, CommandError> {
    let missing = || {
        CommandError::NotFound(format!(
            "no approval request `{id}`; the `approvals` command lists those waiting"
        ))
    };
    let asked = host
        .approvals()
        .get(id)
        .map_err(failed)?
        .ok_or_else(missing)?;
    if !sees(caller, &asked) {
        return Err(missing());
    }
    if caller.is_agent() {
        caller
            .allows("approvals:answer")
            .then_some(())
            .ok_or_else(|| {
                CommandError::Denied(
                    "this token lacks the `approvals:answer` scope; `toolshed token create --scope approvals:answer` makes one that has it".into(),
                )
            })?;
        host.config()
            .config
            .approvals
            .may_answer(&caller.owner.0, &asked)
            .map_err(|e| CommandError::Denied(e.to_string()))?;
    }
    let (taken, request) = host
        .approvals()
        .answer_once(id, approve, by, false)
        .map_err(failed)?
        .ok_or_else(missing)?;
    if !taken {
        return Err(CommandError::Conflict(format!(
            "{id} is not pending any more: it is {}",
            request.state.as_str()
        )));
    }
    let text = format!(
        "{} {id}: {} by {} may {}",
        if approve { "Approved" } else { "Denied" },
        request.tool,
        request.owner,
        if approve { "run now" } else { "not run" }
    );
    Ok(CommandOutcome {
        text,
        data: json!({"approval": request}),
    })
}

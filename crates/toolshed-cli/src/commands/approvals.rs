//! `toolshed approvals list|approve|deny`: answering the calls that wait for a person.

use serde_json::json;
use toolshed_host::Host;
use toolshed_host::approvals::{ApprovalRequest, ApprovalState};

use crate::Failure;
use crate::cli::ApprovalsCommand;
use crate::render::print_json;

/// The most requests listed.
const LIST_LIMIT: usize = 200;

/// Runs one approvals command.
pub(crate) fn run(host: &Host, command: ApprovalsCommand) -> Result<(), Failure> {
    let failed = |e: toolshed_host::StoreError| Failure::Runtime(e.to_string());
    match command {
        ApprovalsCommand::List { all, json } => {
            let list = host.approvals().list(all, LIST_LIMIT).map_err(failed)?;
            if json {
                return print_json(&json!(list));
            }
            if list.is_empty() {
                outln!(
                    "{}",
                    if all {
                        "no approval requests"
                    } else {
                        "nothing waits for an approval"
                    }
                );
            }
            for r in &list {
                print_request(r);
            }
            Ok(())
        }
        ApprovalsCommand::Approve { id, remember } => answer(host, &id, true, remember),
        ApprovalsCommand::Deny { id } => answer(host, &id, false, false),
    }
}

fn print_request(r: &ApprovalRequest) {
    let left = (r.expires_ms - toolshed_host::now_ms()).max(0) / 1000;
    let state = match r.state {
        ApprovalState::Pending => format!("pending, {left} s left"),
        other => match &r.answered_by {
            Some(by) => format!("{} by {by}", other.as_str()),
            None => other.as_str().to_string(),
        },
    };
    outln!(
        "{}  {}  [{state}]  owner {}  rule {}",
        r.id,
        r.summary,
        r.owner,
        r.rule
    );
    outln!("    {}", r.reason);
}

fn answer(host: &Host, id: &str, approve: bool, remember: bool) -> Result<(), Failure> {
    let by = format!(
        "cli ({})",
        std::env::var("USER").unwrap_or_else(|_| "local user".into())
    );
    let Some(request) = host
        .approvals()
        .answer(id, approve, &by, remember)
        .map_err(|e| Failure::Runtime(e.to_string()))?
    else {
        return Err(Failure::Usage(format!(
            "no approval request `{id}`; `toolshed approvals list` shows the waiting ones"
        )));
    };
    let wanted = if approve {
        ApprovalState::Approved
    } else {
        ApprovalState::Denied
    };
    if request.state != wanted || request.answered_by.as_deref() != Some(by.as_str()) {
        return Err(Failure::Usage(format!(
            "{id} was not pending any more: it is {}{}",
            request.state.as_str(),
            request
                .answered_by
                .map(|b| format!(" (by {b})"))
                .unwrap_or_default()
        )));
    }
    outln!(
        "{} {id}: {}{}",
        if approve { "approved" } else { "denied" },
        request.summary,
        if approve && remember {
            format!(" — remembered for owner {}", request.owner)
        } else {
            String::new()
        }
    );
    Ok(())
}

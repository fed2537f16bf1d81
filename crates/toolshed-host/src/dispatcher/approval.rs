//! Waiting for a person's answer when policy (or a hook) asks: the door's approver, the
//! CLI or REST, whichever answers first.

use std::time::Duration;

use serde_json::Value;
use toolshed_core::ToolError;

use super::{CallRequest, Dispatcher};
use crate::approvals::{self, ApprovalState, NewApproval};
use crate::events::Event;

impl Dispatcher {
    pub(super) fn approvals_off(&self, rule: &str, reason: &str) -> ToolError {
        ToolError::NeedsApproval(format!(
            "{reason} (rule `{rule}`); approvals are off here ([approvals] timeout_secs = 0), so \
             the call is refused"
        ))
    }

    /// Waits for a person to approve `arguments` of `req`'s tool: the door's approver, the
    /// CLI or REST, whichever answers first; no answer before the expiry is a no.
    pub(super) async fn approve(
        &self,
        req: &CallRequest,
        arguments: &Value,
        rule: &str,
        reason: &str,
        note: &mut Option<String>,
    ) -> Result<(), ToolError> {
        if self.approvals.timeout_secs == 0 {
            return Err(self.approvals_off(rule, reason));
        }
        let failed = |e: crate::store::StoreError| ToolError::Failed(format!("approval: {e}"));
        let digest = approvals::call_digest(&req.tool, arguments);
        if self
            .store
            .approval_remembered(&req.owner.0, &req.tool, &digest)
            .map_err(failed)?
        {
            *note = Some(format!(
                "approved earlier for `{}` (remembered; rule `{rule}`)",
                req.owner.0
            ));
            return Ok(());
        }
        if let Some(id) = &req.answered_approval
            && let Some(decided) = self.answered(req, id, &digest, rule, reason, note)?
        {
            return decided;
        }
        let timeout = Duration::from_secs(self.approvals.timeout_secs);
        let request = self
            .store
            .create_approval(
                &NewApproval {
                    tool: &req.tool,
                    owner: &req.owner.0,
                    arguments,
                    rule,
                    reason,
                    timeout,
                },
                self.approvals.max_pending,
                self.approvals.max_pending_per_owner,
            )
            .map_err(|e| ToolError::NeedsApproval(format!("{reason} (rule `{rule}`): {e}")))?;
        self.events.publish(Event::ApprovalRequested {
            request: request.clone(),
        });
        let id = request.id.clone();
        if let Some(deferred) = &req.defer_approval {
            deferred.set(request);
            *note = Some(format!("{id} asked of the person (rule `{rule}`)"));
            return Err(ToolError::NeedsApproval(format!(
                "{reason} (rule `{rule}`): approval {id} was asked of the person; the call runs \
                 when it is called again with their answer"
            )));
        }
        // Waiting for REST alone (no client can be asked): a door may treat the call as
        // running from now, so that it can end the request and hand back a task.
        if req.approver.is_none()
            && let Some(started) = &req.started
        {
            started.notify_one();
        }
        let ask = {
            let approver = req.approver.clone();
            let request = request.clone();
            async move {
                match approver {
                    Some(approver) => match approver.ask(&request).await {
                        Some(answer) => Some((answer, approver.who())),
                        None => std::future::pending().await,
                    },
                    None => std::future::pending().await,
                }
            }
        };
        tokio::pin!(ask);
        let expiry = tokio::time::sleep(timeout);
        tokio::pin!(expiry);
        let mut poll = tokio::time::interval(approvals::POLL);
        let ended = loop {
            tokio::select! {
                () = req.cancel.cancelled() => {
                    let _ = self.store.expire_approval(&id);
                    self.resolved(&id);
                    return Err(ToolError::Cancelled);
                }
                () = &mut expiry => {
                    let _ = self.store.expire_approval(&id);
                    break self.store.approval(&id).map_err(failed)?;
                }
                Some((answer, who)) = &mut ask => {
                    break self.store.answer_approval(&id, answer, &who, false).map_err(failed)?;
                }
                _ = poll.tick() => {
                    let now = self.store.approval(&id).map_err(failed)?;
                    if now.as_ref().is_none_or(|r| r.state != ApprovalState::Pending) {
                        break now;
                    }
                }
            }
        };
        self.resolved(&id);
        let Some(ended) = ended else {
            return Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!("the approval request {id} is gone, so the call is refused"),
            });
        };
        let by = ended.answered_by.clone().unwrap_or_default();
        *note = Some(match ended.state {
            ApprovalState::Approved | ApprovalState::Denied => {
                format!(
                    "{} {} by {by} (rule `{rule}`)",
                    ended.id,
                    ended.state.as_str()
                )
            }
            _ => format!("{} expired unanswered (rule `{rule}`)", ended.id),
        });
        match ended.state {
            ApprovalState::Approved => Ok(()),
            ApprovalState::Denied => Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!(
                    "{by} declined the approval {id} that rule `{rule}` asked for: {reason}"
                ),
            }),
            ApprovalState::Expired | ApprovalState::Pending => Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!(
                    "nobody approved {id} within {} s ([approvals] timeout_secs), so the call \
                     is refused: {reason}",
                    timeout.as_secs()
                ),
            }),
        }
    }

    /// A call whose door saw a person answer approval `id` in an input round trip: the
    /// answer decides this check if it was asked about it (this owner, tool, arguments and
    /// rule); a yes is taken for one run. `None`: it was about another check (another
    /// rule, or the arguments a hook rewrote), which asks anew.
    fn answered(
        &self,
        req: &CallRequest,
        id: &str,
        digest: &str,
        rule: &str,
        reason: &str,
        note: &mut Option<String>,
    ) -> Result<Option<Result<(), ToolError>>, ToolError> {
        let failed = |e: crate::store::StoreError| ToolError::Failed(format!("approval: {e}"));
        let Some(request) = self.store.approval(id).map_err(failed)? else {
            return Ok(None);
        };
        if request.owner != req.owner.0
            || request.tool != req.tool
            || request.digest != digest
            || request.rule != rule
        {
            return Ok(None);
        }
        self.resolved(id);
        let by = request.answered_by.clone().unwrap_or_default();
        Ok(Some(match request.state {
            ApprovalState::Approved => {
                if self.store.use_approval(id).map_err(failed)? {
                    *note = Some(format!("{id} approved by {by} (rule `{rule}`)"));
                    Ok(())
                } else {
                    Err(ToolError::Denied {
                        rule: rule.to_string(),
                        message: format!(
                            "approval {id} was used by a call already (a yes is for one run); \
                             call again without it to be asked anew"
                        ),
                    })
                }
            }
            ApprovalState::Denied => {
                *note = Some(format!("{id} denied by {by} (rule `{rule}`)"));
                Err(ToolError::Denied {
                    rule: rule.to_string(),
                    message: format!(
                        "{by} declined the approval {id} that rule `{rule}` asked for: {reason}"
                    ),
                })
            }
            ApprovalState::Pending | ApprovalState::Expired => Err(ToolError::Denied {
                rule: rule.to_string(),
                message: format!(
                    "approval {id} is {} and approves nothing; call again without it to be \
                     asked anew",
                    request.state.as_str()
                ),
            }),
        }))
    }

    /// Publishes how request `id` ended.
    fn resolved(&self, id: &str) {
        if let Ok(Some(request)) = self.store.approval(id) {
            self.events.publish(Event::ApprovalResolved { request });
        }
    }
}

//! Approvals: a person's yes or no to one exact call.
//!
//! When policy asks (`decision = "ask"`, or a call wanting a wider sandbox), the pipeline
//! records an approval request — the tool, a digest of the exact arguments, a readable
//! summary, the owner, the rule, an expiry — and the call waits for an answer, its deadline
//! paused and its cancellation still live. The answer comes from whoever sees it first:
//! the calling client (MCP elicitation, through the door's [`Approver`]), `toolshed
//! approvals approve|deny` in another terminal, or `POST /api/v1/approvals/ID/approve|deny`.
//! Requests live in the state database, so an answer given by another process reaches the
//! waiting call (it looks every [`POLL`]). A yes is for that call only, unless remembered
//! for the owner: then the same tool with the same arguments runs for that owner without
//! asking again. No answer before the expiry means no; so does a restart, since the call
//! that waited is gone (its request then expires unanswered).

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::db::{Row, args, locks, serialize};
use crate::store::{StateStore, StoreError, now_ms};

/// How often a waiting call looks for an answer given by another process.
pub const POLL: Duration = Duration::from_millis(200);

/// The most answered requests kept; the oldest are removed first.
pub const MAX_KEPT: i64 = 10_000;

/// `[approvals]`: how long a call waits for a person, and how many may wait at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApprovalsConfig {
    /// How long a call waits for an answer before it is denied, in seconds; 0 refuses at
    /// once with `needs_approval` (no one will answer: CI, unattended runs).
    pub timeout_secs: u64,
    /// The most requests pending at once; more are refused.
    pub max_pending: u32,
    /// The most requests one owner (with its sub-owners: `alice` and `alice/agent-3`
    /// count together) may have pending at once, so that one owner's flood of asks never
    /// leaves another owner unable to ask.
    pub max_pending_per_owner: u32,
    /// Whether an agent token holding `approvals:answer` may answer a request of its own
    /// owner (or a sub-owner of it): `deny` (the default) or `allow`. A person — the admin
    /// token, the CLI, the client's user through elicitation — always may.
    pub self_approval: SelfApproval,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 300,
            max_pending: 100,
            max_pending_per_owner: 20,
            self_approval: SelfApproval::Deny,
        }
    }
}

/// `[approvals] self_approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SelfApproval {
    /// An agent cannot approve its own calls.
    #[default]
    Deny,
    /// It can (audited with who answered).
    Allow,
}

/// The principal an owner acts for: `alice` for `alice` and `alice/agent-3`.
pub fn principal(owner: &str) -> &str {
    owner.split('/').next().unwrap_or(owner)
}

impl ApprovalsConfig {
    /// Whether an agent token of `answerer` may answer `request`; the reason when not.
    pub fn may_answer(
        &self,
        answerer: &str,
        request: &ApprovalRequest,
    ) -> Result<(), SelfApprovalRefused> {
        if self.self_approval == SelfApproval::Allow
            || principal(answerer) != principal(&request.owner)
        {
            return Ok(());
        }
        Err(SelfApprovalRefused {
            id: request.id.clone(),
            owner: request.owner.clone(),
            answerer: answerer.to_string(),
        })
    }
}

/// An agent token answering its own owner's approval request, which
/// `[approvals] self_approval = "deny"` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{id} is a call of `{owner}`, and a token of `{answerer}` may not approve or deny its own \
     owner's calls ([approvals] self_approval = \"deny\"); a person answers it (`toolshed \
     approvals approve {id}`, the dashboard, or another owner's token)"
)]
pub struct SelfApprovalRefused {
    /// The request.
    pub id: String,
    /// The owner of the call it holds.
    pub owner: String,
    /// The owner of the token that tried to answer it.
    pub answerer: String,
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for an answer.
    Pending,
    /// Approved.
    Approved,
    /// Denied.
    Denied,
    /// Nobody answered in time (or toolshed restarted).
    Expired,
}

impl ApprovalState {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied => "denied",
            ApprovalState::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "approved" => ApprovalState::Approved,
            "denied" => ApprovalState::Denied,
            "expired" => ApprovalState::Expired,
            _ => ApprovalState::Pending,
        }
    }
}

/// One approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    /// Its id (`ap-…`).
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The owner the call runs as.
    pub owner: String,
    /// SHA-256 of the tool and its exact arguments.
    pub digest: String,
    /// The call, readable: the tool and its arguments, shortened.
    pub summary: String,
    /// The rule that asked.
    pub rule: String,
    /// Why it asked.
    pub reason: String,
    /// When it was asked (Unix ms).
    pub created_ms: i64,
    /// When it expires (Unix ms).
    pub expires_ms: i64,
    /// Where it stands.
    pub state: ApprovalState,
    /// Who answered.
    pub answered_by: Option<String>,
    /// When (Unix ms).
    pub answered_ms: Option<i64>,
    /// Whether a yes was remembered for the owner.
    pub remembered: bool,
}

/// A door that can ask the calling client's user directly (MCP elicitation).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks about `request`: `Some(true)` approved, `Some(false)` declined, `None` when the
    /// client cannot be asked (the request stays open for other approvers).
    async fn ask(&self, request: &ApprovalRequest) -> Option<bool>;
    /// Who answers through this door, for the record (`mcp client of alice`).
    fn who(&self) -> String;
}

/// The digest an approval is bound to: the tool and its exact arguments.
pub fn call_digest(tool: &str, arguments: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    crate::kit::hash_json(&mut hasher, arguments);
    crate::kit::hex(&hasher.finalize())
}

/// `tool {args}`, at most 400 characters.
pub fn summary(tool: &str, arguments: &Value) -> String {
    let text = format!("{tool} {arguments}");
    if text.chars().count() <= 400 {
        text
    } else {
        format!("{}…", text.chars().take(399).collect::<String>())
    }
}

fn row(r: &Row) -> Result<ApprovalRequest, StoreError> {
    Ok(ApprovalRequest {
        id: r.text(0)?,
        tool: r.text(1)?,
        owner: r.text(2)?,
        digest: r.text(3)?,
        summary: r.text(4)?,
        rule: r.text(5)?,
        reason: r.text(6)?,
        created_ms: r.int(7)?,
        expires_ms: r.int(8)?,
        state: ApprovalState::parse(&r.text(9)?),
        answered_by: r.opt_text(10)?,
        answered_ms: r.opt_int(11)?,
        remembered: r.bool(12)?,
    })
}

const COLUMNS: &str = "id, tool, owner, digest, summary, rule, reason, created_ms, expires_ms, \
                       state, answered_by, answered_ms, remembered";

/// What a new request is about.
#[derive(Debug, Clone)]
pub struct NewApproval<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The owner.
    pub owner: &'a str,
    /// The exact arguments.
    pub arguments: &'a Value,
    /// The rule that asked.
    pub rule: &'a str,
    /// Why.
    pub reason: &'a str,
    /// How long it waits.
    pub timeout: Duration,
}

impl StateStore {
    /// Records a pending request; an error when `max_pending` are pending already, or
    /// `max_per_owner` of the request's owner (with its sub-owners).
    pub fn create_approval(
        &self,
        new: &NewApproval<'_>,
        max_pending: u32,
        max_per_owner: u32,
    ) -> Result<ApprovalRequest, StoreError> {
        let id =
            toolshed_core::secret::random_hex(8).map_err(|e| StoreError::Full(e.to_string()))?;
        let now = now_ms();
        let request = ApprovalRequest {
            id: format!("ap-{id}"),
            tool: new.tool.to_string(),
            owner: new.owner.to_string(),
            digest: call_digest(new.tool, new.arguments),
            summary: summary(new.tool, new.arguments),
            rule: new.rule.to_string(),
            reason: new.reason.to_string(),
            created_ms: now,
            expires_ms: now
                .saturating_add(i64::try_from(new.timeout.as_millis()).unwrap_or(i64::MAX)),
            state: ApprovalState::Pending,
            answered_by: None,
            answered_ms: None,
            remembered: false,
        };
        self.tx(|db| {
            serialize(db, locks::APPROVALS)?;
            db.execute(
                "UPDATE approvals SET state = 'expired' WHERE state = 'pending' AND expires_ms <= ?1",
                args![now],
            )?;
            let pending = db
                .query_one(
                    "SELECT count(*) FROM approvals WHERE state = 'pending'",
                    args![],
                )?
                .int(0)?;
            if pending >= i64::from(max_pending) {
                return Err(StoreError::Full(format!(
                    "{pending} approvals are waiting already ([approvals] max_pending); answer \
                     some (`toolshed approvals list`) and call again"
                )));
            }
            let root = principal(&request.owner);
            let prefix = format!("{root}/");
            let own = db
                .query_one(
                    "SELECT count(*) FROM approvals WHERE state = 'pending'
                     AND (owner = ?1 OR substr(owner, 1, ?2) = ?3)",
                    args![
                        root,
                        i64::try_from(prefix.chars().count()).unwrap_or(i64::MAX),
                        &prefix
                    ],
                )?
                .int(0)?;
            if own >= i64::from(max_per_owner) {
                return Err(StoreError::Full(format!(
                    "`{root}` has {own} approvals waiting already, its share \
                     ([approvals] max_pending_per_owner = {max_per_owner}); wait for them to be \
                     answered or to expire (`toolshed approvals list`), or \
                     cancel those calls, then call again"
                )));
            }
            db.execute(
                &format!("INSERT INTO approvals ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', NULL, NULL, 0)"),
                args![
                    &request.id,
                    &request.tool,
                    &request.owner,
                    &request.digest,
                    &request.summary,
                    &request.rule,
                    &request.reason,
                    request.created_ms,
                    request.expires_ms
                ],
            )?;
            db.execute(
                "DELETE FROM approvals WHERE state != 'pending' AND id NOT IN
                 (SELECT id FROM approvals ORDER BY created_ms DESC LIMIT ?1)",
                args![MAX_KEPT],
            )?;
            Ok(())
        })?;
        Ok(request)
    }

    /// One request.
    pub fn approval(&self, id: &str) -> Result<Option<ApprovalRequest>, StoreError> {
        self.db(|db| {
            db.query_opt(
                &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
                args![id],
            )?
            .as_ref()
            .map(row)
            .transpose()
        })
    }

    /// Requests, newest first: only the pending ones unless `all`.
    pub fn approvals(&self, all: bool, limit: usize) -> Result<Vec<ApprovalRequest>, StoreError> {
        let now = now_ms();
        self.db(|db| {
            db.execute(
                "UPDATE approvals SET state = 'expired' WHERE state = 'pending' AND expires_ms <= ?1",
                args![now],
            )?;
            let filter = if all { "" } else { "WHERE state = 'pending'" };
            db.query(
                &format!(
                    "SELECT {COLUMNS} FROM approvals {filter} ORDER BY created_ms DESC LIMIT ?1"
                ),
                args![limit],
            )?
            .iter()
            .map(row)
            .collect()
        })
    }

    /// Answers a pending request. `None` when there is no such request; the request as it
    /// stands otherwise (already answered or expired: unchanged).
    pub fn answer_approval(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        remember: bool,
    ) -> Result<Option<ApprovalRequest>, StoreError> {
        Ok(self
            .answer_approval_once(id, approve, by, remember)?
            .map(|(_, request)| request))
    }

    /// As [`StateStore::answer_approval`], saying too whether this answer was the one
    /// taken (`false`: it had been answered, or had expired, before).
    pub fn answer_approval_once(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        remember: bool,
    ) -> Result<Option<(bool, ApprovalRequest)>, StoreError> {
        let now = now_ms();
        self.tx(|db| {
            let state = if approve { "approved" } else { "denied" };
            let changed = db.execute(
                "UPDATE approvals SET state = ?2, answered_by = ?3, answered_ms = ?4,
                        remembered = ?5
                 WHERE id = ?1 AND state = 'pending' AND expires_ms > ?4",
                args![id, state, by, now, approve && remember],
            )?;
            let request = db
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
                    args![id],
                )?
                .as_ref()
                .map(row)
                .transpose()?;
            if changed > 0
                && approve
                && remember
                && let Some(r) = &request
            {
                db.execute(
                    "INSERT INTO approval_grants (owner, tool, digest, created_ms)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (owner, tool, digest) DO UPDATE SET created_ms = excluded.created_ms",
                    args![&r.owner, &r.tool, &r.digest, now],
                )?;
            }
            Ok(request.map(|r| (changed > 0, r)))
        })
    }

    /// Takes an approved request for the run of its call, once: `false` when it is not
    /// approved, or a run took it already (a yes is for one run).
    pub fn use_approval(&self, id: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        self.db(|db| {
            Ok(db.execute(
                "UPDATE approvals SET used_ms = ?2
                 WHERE id = ?1 AND state = 'approved' AND used_ms IS NULL",
                args![id, now],
            )? > 0)
        })
    }

    /// Marks a pending request expired (nobody answered, or the call went away).
    pub fn expire_approval(&self, id: &str) -> Result<(), StoreError> {
        self.db(|db| {
            db.execute(
                "UPDATE approvals SET state = 'expired', answered_ms = ?2
                 WHERE id = ?1 AND state = 'pending'",
                args![id, now_ms()],
            )?;
            Ok(())
        })
    }

    /// Whether `owner` has a remembered yes for `tool` with these exact arguments.
    pub fn approval_remembered(
        &self,
        owner: &str,
        tool: &str,
        digest: &str,
    ) -> Result<bool, StoreError> {
        self.db(|db| {
            Ok(db
                .query_opt(
                    "SELECT 1 FROM approval_grants WHERE owner = ?1 AND tool = ?2 AND digest = ?3",
                    args![owner, tool, digest],
                )?
                .is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn new<'a>(args: &'a Value, timeout: Duration) -> NewApproval<'a> {
        NewApproval {
            tool: "exec_command",
            owner: "alice",
            arguments: args,
            rule: "ask",
            reason: "asks",
            timeout,
        }
    }

    #[test]
    fn a_request_is_answered_once_and_a_remembered_yes_is_bound_to_the_exact_call() {
        let store = StateStore::open_in_memory().unwrap();
        let args = json!({"cmd": "rm -rf build"});
        let r = store
            .create_approval(&new(&args, Duration::from_secs(60)), 10, u32::MAX)
            .unwrap();
        assert_eq!(store.approvals(false, 10).unwrap().len(), 1);
        let answered = store
            .answer_approval(&r.id, true, "cli", true)
            .unwrap()
            .unwrap();
        assert_eq!(answered.state, ApprovalState::Approved);
        assert_eq!(answered.answered_by.as_deref(), Some("cli"));
        // A second answer changes nothing.
        let again = store
            .answer_approval(&r.id, false, "other", false)
            .unwrap()
            .unwrap();
        assert_eq!(again.state, ApprovalState::Approved);
        assert!(
            store
                .approval_remembered("alice", "exec_command", &r.digest)
                .unwrap()
        );
        let other = call_digest("exec_command", &json!({"cmd": "rm -rf /"}));
        assert!(
            !store
                .approval_remembered("alice", "exec_command", &other)
                .unwrap()
        );
        assert!(
            !store
                .approval_remembered("bob", "exec_command", &r.digest)
                .unwrap()
        );
        assert!(
            store
                .answer_approval("ap-none", true, "cli", false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn expired_and_excess_requests_are_refused() {
        let store = StateStore::open_in_memory().unwrap();
        let args = json!({});
        let r = store
            .create_approval(&new(&args, Duration::ZERO), 10, u32::MAX)
            .unwrap();
        let late = store
            .answer_approval(&r.id, true, "cli", false)
            .unwrap()
            .unwrap();
        assert_eq!(late.state, ApprovalState::Pending, "too late to approve");
        assert_eq!(
            store.approvals(true, 10).unwrap()[0].state,
            ApprovalState::Expired
        );
        store
            .create_approval(&new(&args, Duration::from_secs(60)), 1, u32::MAX)
            .unwrap();
        let full = store.create_approval(&new(&args, Duration::from_secs(60)), 1, u32::MAX);
        assert!(full.unwrap_err().to_string().contains("max_pending"));
    }
}

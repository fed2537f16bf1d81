//! Plan mode: an owner that is planning runs read-only tools (and the planning tools) only,
//! until a person approves the plan it submits with `plan_submit`; then its calls run in
//! the mode the plan asked for, never wider than the caller's own.
//!
//! An owner plans when its calls use the profile `plan`, or after `plan_enter`; its
//! sub-owners (`alice/agent-3`) plan with it. The state is kept in the state store
//! (`plan_modes`) and in memory, read on every call without a query.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use toolshed_core::{ToolError, ToolSpec};
use toolshed_ops::sandbox::SandboxMode;

use crate::store::db::args;
use crate::store::{StateStore, StoreError, now_ms};

/// The profile whose callers plan first.
pub(crate) const PLAN_PROFILE: &str = "plan";

/// The plugin of the agent tools, whose planning tools run while an owner plans.
pub(crate) const AGENTS_PLUGIN: &str = "system.agents";

/// The tools of `system.agents` a planning owner may call besides read-only ones.
const PLANNING_TOOLS: &[&str] = &[
    "plan_submit",
    "plan_enter",
    "todo_write",
    "todo_read",
    "goal_set",
    "goal_status",
    "agent_presets_list",
    "agent_run",
    "workflow_list",
    "schedule_list",
];

/// `owner`, then each owner above it: `a/b/c`, `a/b`, `a`.
fn levels(owner: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(owner), |at| at.rfind('/').map(|i| &at[..i]))
}

/// A stored state (`planning`, `approved` with its mode).
fn state_of(state: &str, mode: Option<String>) -> PlanState {
    match state {
        "approved" => PlanState::Approved(mode.and_then(|m| SandboxMode::parse(&m).ok())),
        _ => PlanState::Planning,
    }
}

/// Where an owner stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlanState {
    /// Read-only until a plan is approved.
    Planning,
    /// A plan was approved: calls run, in `mode` when it names one.
    Approved(Option<SandboxMode>),
}

/// The plan mode of every owner that entered it.
pub(crate) struct Plans {
    store: Arc<StateStore>,
    states: RwLock<HashMap<String, PlanState>>,
}

impl Plans {
    /// The states kept in `store` (none when it cannot be read: nobody plans).
    pub(crate) fn load(store: Arc<StateStore>) -> Self {
        let states = store
            .db(|db| {
                db.query("SELECT owner, state, mode FROM plan_modes", &[])?
                    .iter()
                    .map(|row| {
                        let state = match row.text(1)?.as_str() {
                            "approved" => PlanState::Approved(
                                row.opt_text(2)?.and_then(|m| SandboxMode::parse(&m).ok()),
                            ),
                            _ => PlanState::Planning,
                        };
                        Ok((row.text(0)?, state))
                    })
                    .collect::<Result<HashMap<_, _>, StoreError>>()
            })
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "reading plan modes failed; nobody starts planning");
                HashMap::new()
            });
        Self {
            store,
            states: RwLock::new(states),
        }
    }

    /// The state that holds for `owner` calling with `profile`: its own, else its nearest
    /// owner's (`alice` for `alice/agent-3`), else planning under the profile `plan`.
    ///
    /// An approved plan is taken from memory. While an owner plans, the state store is
    /// read again at each call (one lookup by key per level of the owner): the person may
    /// have approved the plan through another toolshed sharing the database.
    pub(crate) fn state_for(&self, owner: &str, profile: Option<&str>) -> Option<PlanState> {
        let cached = self.cached(owner);
        if matches!(cached, Some(PlanState::Approved(_)))
            || (cached.is_none() && profile != Some(PLAN_PROFILE))
        {
            return cached;
        }
        match self.stored(owner) {
            Ok(Some((at, state))) => {
                self.states
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(at, state);
                Some(state)
            }
            Ok(None) => cached.or(Some(PlanState::Planning)),
            Err(e) => {
                tracing::warn!(error = %e, "reading the plan mode failed; the owner plans");
                Some(PlanState::Planning)
            }
        }
    }

    /// The state kept in memory for `owner` or its nearest owner.
    fn cached(&self, owner: &str) -> Option<PlanState> {
        let states = self.states.read().unwrap_or_else(|p| p.into_inner());
        if states.is_empty() {
            return None;
        }
        levels(owner).find_map(|at| states.get(at).copied())
    }

    /// The state kept in the store for `owner` or its nearest owner, with whose it is.
    fn stored(&self, owner: &str) -> Result<Option<(String, PlanState)>, StoreError> {
        self.store.db(|db| {
            for at in levels(owner) {
                if let Some(row) = db.query_opt(
                    "SELECT state, mode FROM plan_modes WHERE owner = ?1",
                    args![at],
                )? {
                    return Ok(Some((
                        at.to_string(),
                        state_of(&row.text(0)?, row.opt_text(1)?),
                    )));
                }
            }
            Ok(None)
        })
    }

    /// Refuses a call of `spec` (of plugin `plugin_id`) while `owner` plans, telling the
    /// model what to do instead.
    pub(crate) fn gate(
        &self,
        owner: &str,
        profile: Option<&str>,
        spec: &ToolSpec,
        plugin_id: &str,
    ) -> Result<(), ToolError> {
        if self.state_for(owner, profile) != Some(PlanState::Planning)
            || spec.annotations.read_only
            || (plugin_id == AGENTS_PLUGIN && PLANNING_TOOLS.contains(&spec.name.as_str()))
        {
            return Ok(());
        }
        Err(ToolError::Denied {
            rule: "plan mode".into(),
            message: format!(
                "`{}` changes things, and `{owner}` is in plan mode: explore with read-only \
                 tools, then submit your plan with plan_submit {{plan}}. Once the person \
                 approves it, call `{}` again and it runs",
                spec.name, spec.name
            ),
        })
    }

    /// The sandbox mode the plan state narrows `owner`'s calls to: read-only while it
    /// plans, the approved plan's mode after.
    pub(crate) fn sandbox_for(&self, owner: &str, profile: Option<&str>) -> Option<SandboxMode> {
        match self.state_for(owner, profile)? {
            PlanState::Planning => Some(SandboxMode::ReadOnly),
            PlanState::Approved(mode) => mode,
        }
    }

    /// `owner` plans from now on (again, after an approved plan).
    pub(crate) fn enter(&self, owner: &str) -> Result<(), StoreError> {
        self.set(owner, PlanState::Planning, None)
    }

    /// `owner`'s plan was approved: its calls run, in `mode` when given.
    pub(crate) fn approve(
        &self,
        owner: &str,
        mode: Option<SandboxMode>,
        plan: &str,
    ) -> Result<(), StoreError> {
        self.set(owner, PlanState::Approved(mode), Some(plan))
    }

    fn set(&self, owner: &str, state: PlanState, plan: Option<&str>) -> Result<(), StoreError> {
        let (name, mode) = match state {
            PlanState::Planning => ("planning", None),
            PlanState::Approved(mode) => ("approved", mode.map(SandboxMode::as_str)),
        };
        self.store.db(|db| {
            db.execute(
                "INSERT INTO plan_modes (owner, state, mode, plan, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (owner) DO UPDATE SET state = excluded.state,
                     mode = excluded.mode, plan = excluded.plan,
                     updated_ms = excluded.updated_ms",
                args![owner, name, mode, plan, now_ms()],
            )
        })?;
        self.states
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(owner.to_string(), state);
        Ok(())
    }
}

/// Whether a call of `entry` is put to the person before it runs: `plan_submit`, whose
/// approval request is the plan.
pub(crate) fn asks_the_person(entry: &crate::registry::ToolEntry) -> bool {
    entry.plugin_id == AGENTS_PLUGIN && entry.spec().name == "plan_submit"
}

/// What the person is asked about a submitted plan.
pub(crate) fn plan_question(arguments: &serde_json::Value) -> String {
    let plan = arguments["plan"].as_str().unwrap_or_default();
    let mode = arguments["mode"].as_str().unwrap_or("its usual mode");
    format!("approve this plan, after which its calls run in {mode}:\n\n{plan}")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{PLAN_PROFILE, PlanState, Plans};
    use crate::store::StateStore;
    use toolshed_ops::sandbox::SandboxMode;

    /// Two toolsheds on one database: a plan approved through one lets the owner's calls
    /// run on the other, whose memory still said it planned.
    #[test]
    fn an_approval_made_through_another_toolshed_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolshed.db");
        let a = Plans::load(Arc::new(StateStore::open(&path).unwrap()));
        let b = Plans::load(Arc::new(StateStore::open(&path).unwrap()));
        let plan = Some(PLAN_PROFILE);
        assert_eq!(b.state_for("alice", plan), Some(PlanState::Planning));
        assert_eq!(b.state_for("alice", None), None);
        b.enter("alice").unwrap();
        assert_eq!(
            b.state_for("alice/agent-1", None),
            Some(PlanState::Planning)
        );
        a.approve("alice", Some(SandboxMode::ReadOnly), "the plan")
            .unwrap();
        let approved = Some(PlanState::Approved(Some(SandboxMode::ReadOnly)));
        assert_eq!(b.state_for("alice/agent-1", None), approved);
        assert_eq!(b.state_for("alice", plan), approved);
        assert_eq!(b.sandbox_for("alice", plan), Some(SandboxMode::ReadOnly));
        // Planning again, through the other one.
        a.enter("alice").unwrap();
        assert_eq!(a.state_for("alice", None), Some(PlanState::Planning));
        assert_eq!(b.state_for("bob", plan), Some(PlanState::Planning));
    }
}

//! What the agent tools keep, as a door shows it: todo lists, goals and schedules.

use serde::Serialize;
use serde_json::Value;

use super::Held;
use crate::store::db::args;
use crate::store::{StateStore, StoreError};

/// The most rows of each kind one read returns.
const MAX_ROWS: usize = 500;

/// The agent tools' state ([`crate::Host::agent_state`]).
pub struct AgentState<'h> {
    store: Held<'h, StateStore>,
}

/// One todo list.
#[derive(Debug, Clone, Serialize)]
pub struct TodoList {
    /// Whose it is.
    pub owner: String,
    /// Its name (`default` unless the model named one).
    pub list: String,
    /// Its items: `{id, text, status, notes?}`.
    pub items: Vec<Value>,
    /// When it was last written (epoch ms).
    pub updated_ms: i64,
}

/// One schedule.
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    /// Its id.
    pub id: String,
    /// Whose it is.
    pub owner: String,
    /// Its name.
    pub name: String,
    /// What it runs and when, as stored (`at` or `cron` and `tz`, `tool`, `arguments`,
    /// `workflow`, `missed`, `profile`).
    pub spec: Value,
    /// When it runs next (epoch ms); `None`: never again.
    pub next_ms: Option<i64>,
    /// How many times it ran.
    pub runs: i64,
    /// The job of its last run.
    pub last_job: Option<String>,
    /// How its last due time went.
    pub last_outcome: Option<String>,
}

/// The owner filter of a read: `owner` and its sub-owners (by prefix, not `LIKE`: an
/// owner's `_` or `%` is no wildcard), or everyone.
fn owners(owner: Option<&str>) -> (String, Vec<crate::store::db::SqlValue>) {
    match owner {
        None => (String::new(), Vec::new()),
        Some(owner) => (
            "WHERE owner = ?1 OR substr(owner, 1, length(?2)) = ?2".into(),
            args![owner, format!("{owner}/")].to_vec(),
        ),
    }
}

impl crate::Host {
    /// Starts plan mode afresh for `owner` (a door calls it when a session of the profile
    /// `plan` makes its first call, so that a plan approved in an earlier session of the
    /// same owner does not carry over).
    pub fn enter_plan_mode(&self, owner: &toolshed_core::OwnerId) -> Result<(), StoreError> {
        self.dispatcher().plans().enter(&owner.0)
    }
}

impl<'h> AgentState<'h> {
    pub(super) fn new(store: Held<'h, StateStore>) -> Self {
        Self { store }
    }

    /// The todo lists of `owner` and its sub-owners (everyone's with `None`), newest first.
    pub fn todo_lists(&self, owner: Option<&str>) -> Result<Vec<TodoList>, StoreError> {
        let (filter, params) = owners(owner);
        self.store.db(|db| {
            db.query(
                &format!(
                    "SELECT owner, list, items, updated_ms FROM todos {filter}
                     ORDER BY updated_ms DESC LIMIT {MAX_ROWS}"
                ),
                &params,
            )?
            .iter()
            .map(|row| {
                Ok(TodoList {
                    owner: row.text(0)?,
                    list: row.text(1)?,
                    items: serde_json::from_str(&row.text(2)?).unwrap_or_default(),
                    updated_ms: row.int(3)?,
                })
            })
            .collect()
        })
    }

    /// The schedules of `owner` and its sub-owners (everyone's with `None`), soonest first.
    pub fn schedules(&self, owner: Option<&str>) -> Result<Vec<Schedule>, StoreError> {
        let (filter, params) = owners(owner);
        self.store.db(|db| {
            db.query(
                &format!(
                    "SELECT id, owner, name, spec, next_ms, runs, last_job, last_outcome
                     FROM schedules {filter} ORDER BY next_ms LIMIT {MAX_ROWS}"
                ),
                &params,
            )?
            .iter()
            .map(|row| {
                Ok(Schedule {
                    id: row.text(0)?,
                    owner: row.text(1)?,
                    name: row.text(2)?,
                    spec: serde_json::from_str(&row.text(3)?).unwrap_or(Value::Null),
                    next_ms: row.opt_int(4)?,
                    runs: row.int(5)?,
                    last_job: row.opt_text(6)?,
                    last_outcome: row.opt_text(7)?,
                })
            })
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use super::AgentState;
    use crate::store::StateStore;
    use crate::store::db::args;

    /// Failed with `LIKE 'a_b/%'`: `_` matched any character, so `axb`'s lists showed.
    #[test]
    fn an_owner_covers_its_sub_owners_and_no_look_alike() {
        let store = Arc::new(StateStore::open_in_memory().unwrap());
        for owner in ["a_b", "a_b/agent-1", "axb/agent-2", "a_bc", "a%"] {
            store
                .db(|db| {
                    db.execute(
                        "INSERT INTO todos (owner, list, items, updated_ms) VALUES (?1, 'l', '[]', 1)",
                        args![owner],
                    )
                })
                .unwrap();
        }
        let state = AgentState::new(Cow::Owned(store));
        let owners = |of: &str| {
            let mut found: Vec<String> = state
                .todo_lists(Some(of))
                .unwrap()
                .into_iter()
                .map(|t| t.owner)
                .collect();
            found.sort();
            found
        };
        assert_eq!(owners("a_b"), ["a_b", "a_b/agent-1"]);
        assert_eq!(owners("a%"), ["a%"]);
        assert_eq!(state.todo_lists(None).unwrap().len(), 5);
    }
}

//! `todo_write`, `todo_read`, `goal_set`, `goal_status`: an owner's checklists and named
//! goals, kept in the state store (`todos`, `goals`). A write replaces the whole list, as
//! a model that keeps a todo list expects; a goal's list is the list of its name.

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};
use toolshed_kit::args::parse;

use super::Shared;
use super::spec::{
    GoalSetArgs, GoalStatus, GoalStatusArgs, Op, TodoItem, TodoReadArgs, TodoStatus, TodoWriteArgs,
};
use crate::store::db::args;
use crate::store::{StoreError, now_ms};

/// The list a call names none of.
const DEFAULT_LIST: &str = "default";

/// The most goals one owner keeps (its sub-owners counted as it).
const MAX_GOALS: usize = 100;

/// The most todo lists one owner keeps (its sub-owners counted as it).
const MAX_LISTS: usize = 100;

/// The owner at the top of `owner` (`alice` for `alice/agent-3`), and the prefix of its
/// sub-owners, for counting what they keep together.
fn root(owner: &str) -> (&str, String) {
    let root = owner.split('/').next().unwrap_or(owner);
    (root, format!("{root}/"))
}

fn stored(e: StoreError) -> ToolError {
    ToolError::Internal(format!("the state store failed: {e}"))
}

/// A list or goal name: lowercase letters, digits, `-`, `_` and `.`.
fn check_name(name: &str, key: &str) -> Result<(), ToolError> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(ToolError::invalid_at(
            format!("/{key}"),
            format!(
                "{key} `{name}` is not a name: use 1 to 64 letters, digits, `-`, `_` and `.` \
                 (e.g. `release-notes`)"
            ),
        ));
    }
    Ok(())
}

pub(super) fn call(
    op: Op,
    shared: &Shared,
    owner: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    match op {
        Op::TodoWrite => write(shared, owner, parse(args)?),
        Op::TodoRead => {
            let args: TodoReadArgs = parse(args)?;
            let list = args.list.unwrap_or_else(|| DEFAULT_LIST.into());
            check_name(&list, "list")?;
            let (items, updated) = read(shared, owner, &list)?;
            Ok(show(&list, &items, updated))
        }
        Op::GoalSet => goal_set(shared, owner, parse(args)?),
        _ => goal_status(shared, owner, parse(args)?),
    }
}

fn write(shared: &Shared, owner: &str, args: TodoWriteArgs) -> Result<ToolOutput, ToolError> {
    let list = args.list.unwrap_or_else(|| DEFAULT_LIST.into());
    check_name(&list, "list")?;
    let max = shared.config.max_todo_items;
    if args.todos.len() > max {
        return Err(ToolError::invalid_at(
            "/todos",
            format!(
                "{} items is more than a todo list holds ({max}, [orchestration] \
                 max_todo_items); nothing was written. Group small steps into one item, or keep \
                 a second list (`list`)",
                args.todos.len()
            ),
        ));
    }
    let mut ids = std::collections::BTreeSet::new();
    for (i, item) in args.todos.iter().enumerate() {
        if !ids.insert(item.id.as_str()) {
            return Err(ToolError::invalid_at(
                format!("/todos/{i}/id"),
                format!(
                    "id `{}` is used twice; give each item its own id (nothing was written)",
                    item.id
                ),
            ));
        }
    }
    let text =
        serde_json::to_string(&args.todos).map_err(|e| ToolError::Internal(e.to_string()))?;
    let now = now_ms();
    let (top, below) = root(owner);
    let kept = shared
        .store
        .tx(|db| {
            if args.todos.is_empty() {
                db.execute(
                    "DELETE FROM todos WHERE owner = ?1 AND list = ?2",
                    args![owner, &list],
                )?;
                return Ok(None);
            }
            let exists = db
                .query_opt(
                    "SELECT 1 FROM todos WHERE owner = ?1 AND list = ?2",
                    args![owner, &list],
                )?
                .is_some();
            if !exists {
                let count = db
                    .query_one(
                        "SELECT COUNT(*) FROM todos
                         WHERE owner = ?1 OR substr(owner, 1, length(?2)) = ?2",
                        args![top, &below],
                    )?
                    .int(0)?;
                if count as usize >= MAX_LISTS {
                    return Ok(Some(count));
                }
            }
            db.execute(
                "INSERT INTO todos (owner, list, items, updated_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (owner, list) DO UPDATE SET items = excluded.items,
                     updated_ms = excluded.updated_ms",
                args![owner, &list, text, now],
            )?;
            Ok(None)
        })
        .map_err(stored)?;
    if let Some(count) = kept {
        return Err(ToolError::invalid_at(
            "/list",
            format!(
                "`{top}` keeps {count} todo lists, the most it may ({MAX_LISTS}); nothing was \
                 written. Reuse a list, or empty one (todo_write with no items) to remove it"
            ),
        ));
    }
    Ok(show(&list, &args.todos, Some(now)))
}

/// The items of `owner`'s list `list` and when it was written.
pub(super) fn read(
    shared: &Shared,
    owner: &str,
    list: &str,
) -> Result<(Vec<TodoItem>, Option<i64>), ToolError> {
    let row = shared
        .store
        .db(|db| {
            db.query_opt(
                "SELECT items, updated_ms FROM todos WHERE owner = ?1 AND list = ?2",
                args![owner, list],
            )
        })
        .map_err(stored)?;
    match row {
        None => Ok((Vec::new(), None)),
        Some(row) => {
            let items = serde_json::from_str(&row.text(0).map_err(stored)?)
                .map_err(|e| ToolError::Internal(format!("a stored todo list is damaged: {e}")))?;
            Ok((items, Some(row.int(1).map_err(stored)?)))
        }
    }
}

fn counts(items: &[TodoItem]) -> (usize, usize, usize) {
    let n = |s: TodoStatus| items.iter().filter(|i| i.status == s).count();
    (
        n(TodoStatus::Pending),
        n(TodoStatus::InProgress),
        n(TodoStatus::Done),
    )
}

fn show(list: &str, items: &[TodoItem], updated: Option<i64>) -> ToolOutput {
    let (pending, doing, done) = counts(items);
    let mut text = if items.is_empty() {
        format!("Todo list `{list}` is empty.")
    } else {
        format!("Todo list `{list}`: {done} done, {doing} in progress, {pending} pending.")
    };
    for item in items {
        let mark = match item.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Done => "[x]",
        };
        text.push_str(&format!("\n{mark} {}: {}", item.id, item.text));
        if let Some(notes) = &item.notes {
            text.push_str(&format!(" ({notes})"));
        }
    }
    ToolOutput::text_and_structured(
        text,
        json!({
            "list": list,
            "todos": items,
            "counts": {"pending": pending, "in_progress": doing, "done": done},
            "updated_ms": updated,
        }),
    )
}

fn goal_set(shared: &Shared, owner: &str, args: GoalSetArgs) -> Result<ToolOutput, ToolError> {
    check_name(&args.name, "name")?;
    let now = now_ms();
    let existing = goal_rows(shared, owner, Some(&args.name))?
        .into_iter()
        .next();
    let objective = match (&args.objective, &existing) {
        (Some(o), _) => o.clone(),
        (None, Some(g)) => g["objective"].as_str().unwrap_or_default().to_string(),
        (None, None) => {
            return Err(ToolError::invalid_at(
                "/objective",
                format!(
                    "goal `{}` is new: give its `objective` (and `criteria`, how to tell it is \
                     reached)",
                    args.name
                ),
            ));
        }
    };
    let criteria = match (&args.criteria, &existing) {
        (Some(c), _) => json!(c),
        (None, Some(g)) => g["criteria"].clone(),
        (None, None) => json!([]),
    };
    let status = args
        .status
        .map(GoalStatus::as_str)
        .or_else(|| existing.as_ref().and_then(|g| g["status"].as_str()))
        .unwrap_or("active")
        .to_string();
    let note = args.note.or_else(|| {
        existing
            .as_ref()
            .and_then(|g| g["note"].as_str().map(String::from))
    });
    let name = args.name;
    shared
        .store
        .tx(|db| {
            let (top, below) = root(owner);
            let count = db
                .query_one(
                    "SELECT COUNT(*) FROM goals
                     WHERE owner = ?1 OR substr(owner, 1, length(?2)) = ?2",
                    args![top, &below],
                )?
                .int(0)?;
            if existing.is_none() && count as usize >= MAX_GOALS {
                return Ok(false);
            }
            db.execute(
                "INSERT INTO goals (owner, name, objective, criteria, status, note, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (owner, name) DO UPDATE SET objective = excluded.objective,
                     criteria = excluded.criteria, status = excluded.status,
                     note = excluded.note, updated_ms = excluded.updated_ms",
                args![
                    owner,
                    &name,
                    &objective,
                    criteria.to_string(),
                    &status,
                    &note,
                    now
                ],
            )?;
            Ok(true)
        })
        .map_err(stored)
        .and_then(|written| {
            if written {
                Ok(())
            } else {
                Err(ToolError::invalid(format!(
                    "you keep {MAX_GOALS} goals already; mark finished ones achieved or \
                     abandoned with goal_set and reuse their names"
                )))
            }
        })?;
    goal_status(shared, owner, GoalStatusArgs { name: Some(name) })
}

/// The goals of `owner` (one, when `name` is given) as JSON.
pub(super) fn goal_rows(
    shared: &Shared,
    owner: &str,
    name: Option<&str>,
) -> Result<Vec<Value>, ToolError> {
    let rows = shared
        .store
        .db(|db| {
            let mut sql = "SELECT name, objective, criteria, status, note, updated_ms FROM goals \
                           WHERE owner = ?1"
                .to_string();
            match name {
                Some(name) => {
                    sql.push_str(" AND name = ?2");
                    db.query(&sql, args![owner, name])
                }
                None => {
                    sql.push_str(" ORDER BY updated_ms DESC");
                    db.query(&sql, args![owner])
                }
            }
        })
        .map_err(stored)?;
    rows.iter()
        .map(|row| {
            Ok(json!({
                "name": row.text(0)?,
                "objective": row.text(1)?,
                "criteria": serde_json::from_str::<Value>(&row.text(2)?).unwrap_or(json!([])),
                "status": row.text(3)?,
                "note": row.opt_text(4)?,
                "updated_ms": row.int(5)?,
            }))
        })
        .collect::<Result<Vec<_>, StoreError>>()
        .map_err(stored)
}

fn goal_status(
    shared: &Shared,
    owner: &str,
    args: GoalStatusArgs,
) -> Result<ToolOutput, ToolError> {
    if let Some(name) = &args.name {
        check_name(name, "name")?;
    }
    let mut goals = goal_rows(shared, owner, args.name.as_deref())?;
    if goals.is_empty() {
        return match args.name {
            Some(name) => Err(ToolError::NotFound(format!(
                "you have no goal `{name}`; set one with goal_set {{name, objective, criteria}}"
            ))),
            None => Ok(ToolOutput::text_and_structured(
                "You have no goals; set one with goal_set {name, objective, criteria}.",
                json!({"goals": []}),
            )),
        };
    }
    let mut text = String::new();
    for goal in &mut goals {
        let name = goal["name"].as_str().unwrap_or_default().to_string();
        let (items, _) = read(shared, owner, &name)?;
        let (pending, doing, done) = counts(&items);
        goal["todos"] = json!({"pending": pending, "in_progress": doing, "done": done});
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "Goal `{name}` ({}): {}",
            goal["status"].as_str().unwrap_or_default(),
            goal["objective"].as_str().unwrap_or_default()
        ));
        if let Some(criteria) = goal["criteria"].as_array() {
            for c in criteria {
                text.push_str(&format!("\n  - {}", c.as_str().unwrap_or_default()));
            }
        }
        if !items.is_empty() {
            text.push_str(&format!(
                "\n  todo `{name}`: {done} done, {doing} in progress, {pending} pending"
            ));
        }
    }
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"goals": goals}),
    ))
}

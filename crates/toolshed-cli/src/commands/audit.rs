//! `toolshed audit`: the audit log, filtered and paged, read straight from the state store
//! (no workspace needed, nothing started).

use serde_json::json;
use toolshed_host::{AuditQuery, DB_FILE, StateStore, local_time, now_ms};

use crate::Failure;
use crate::cli::{AuditArgs, GlobalArgs};
use crate::context;
use crate::render::{print_json, table};

/// Prints one page of the audit log.
pub(crate) async fn run(global: &GlobalArgs, args: AuditArgs) -> Result<(), Failure> {
    let query = AuditQuery {
        tool: args.tool,
        owner: args.owner,
        outcome: args.outcome,
        parent: args.parent,
        limit: args.limit,
        ..Default::default()
    }
    .checked(args.cursor.as_deref(), args.since.as_deref(), now_ms())
    .map_err(|e| Failure::Usage(e.to_string()))?;
    let db = context::data_dir(global)?.join(DB_FILE);
    // Where the log is: the data dir's file, or the Postgres database `[store] url` names.
    let shared =
        crate::builtins::config_sources(&context::chosen_workspace(global)?, global.config.clone())
            .load()
            .map_err(|e| Failure::Usage(e.to_string()))?
            .config
            .store;
    if shared.url.is_none() && !db.is_file() {
        if args.json {
            return print_json(&json!({ "audit": [], "next_cursor": null }));
        }
        outln!("no calls recorded yet ({} does not exist)", db.display());
        return Ok(());
    }
    let page = tokio::task::spawn_blocking(move || {
        StateStore::open_with(&db, &shared).and_then(|store| store.audit_page(&query))
    })
    .await
    .map_err(|e| Failure::Runtime(format!("reading the audit log failed: {e}")))?
    .map_err(|e| Failure::Runtime(e.to_string()))?;
    if args.json {
        return print_json(&json!({ "audit": page.rows, "next_cursor": page.next_cursor }));
    }
    if page.rows.is_empty() {
        outln!("no calls match");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = page
        .rows
        .iter()
        .map(|row| {
            let r = &row.record;
            let outcome = match &r.error_kind {
                Some(kind) => format!("{} ({kind})", r.outcome),
                None => r.outcome.clone(),
            };
            vec![
                local_time(r.ts_ms),
                r.owner.clone(),
                r.door.clone(),
                r.tool.clone(),
                outcome,
                format!("{} ms", r.duration_ms),
                r.approval.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out!(
        "{}",
        table(
            &[
                "TIME", "OWNER", "DOOR", "TOOL", "OUTCOME", "TOOK", "APPROVAL"
            ],
            &rows
        )
    );
    if let Some(cursor) = page.next_cursor {
        outln!("older calls: toolshed audit --cursor {cursor} (with the same filters)");
    }
    Ok(())
}

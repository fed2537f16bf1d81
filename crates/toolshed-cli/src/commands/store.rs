//! `toolshed store migrate --to postgres://…`: moves the data dir's SQLite state into an
//! empty Postgres database (docs/deploy.md, "Moving to Postgres"). Nothing is started; the
//! file is left as it was.

use serde_json::json;
use toolshed_host::config::StoreConfig;
use toolshed_host::{DB_FILE, MigrateError, StateStore};

use crate::Failure;
use crate::cli::GlobalArgs;
use crate::context;
use crate::render::print_json;

/// Copies every row of `<data-dir>/toolshed.db` into the database `to` names.
pub(crate) async fn migrate(global: &GlobalArgs, to: &str, json: bool) -> Result<(), Failure> {
    if !(to.starts_with("postgres://") || to.starts_with("postgresql://")) {
        return Err(Failure::Usage(format!(
            "--to {}: give a postgres://USER:PASSWORD@HOST:PORT/DATABASE URL of an empty database",
            StateStore::shown_url(to)
        )));
    }
    let path = context::data_dir(global)?.join(DB_FILE);
    if !path.is_file() {
        return Err(Failure::Usage(format!(
            "there is nothing to move: {} does not exist (pass --data-dir for another data dir)",
            path.display()
        )));
    }
    let shown = StateStore::shown_url(to);
    let target = StoreConfig {
        url: Some(to.to_string()),
        max_connections: 2,
        ..Default::default()
    };
    let moved = tokio::task::spawn_blocking(move || {
        let source = StateStore::open(&path).map_err(MigrateError::Store)?;
        let target = StateStore::open_with(&path, &target).map_err(MigrateError::Store)?;
        source.migrate_to(&target)
    })
    .await
    .map_err(|e| Failure::Runtime(e.to_string()))?;
    let moved = moved.map_err(|e| match e {
        MigrateError::NotEmpty { .. } | MigrateError::SameEngine(_) => {
            Failure::Usage(e.to_string())
        }
        other => Failure::Runtime(format!("nothing was moved: {other}")),
    })?;
    let total: i64 = moved.iter().map(|(_, n)| n).sum();
    if json {
        return print_json(&json!({
            "to": shown,
            "rows": total,
            "tables": moved.iter().map(|(t, n)| (t.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
        }));
    }
    for (table, rows) in &moved {
        outln!("{table:<20} {rows:>10}");
    }
    outln!("{:<20} {total:>10}", "total");
    eprintln!(
        "moved {total} rows to {shown}, the same number on both sides. Point toolshed at it: \
         [store] url in your config (or TOOLSHED_STORE__URL), and give every toolshed sharing \
         it this data dir's secret.key. The file is left as it was."
    );
    Ok(())
}

//! Moving a toolshed's state from its SQLite file to a shared database
//! (`toolshed store migrate --to postgres://…`): every table of the schema — plugin state
//! and config values (secrets stay sealed with the same `secret.key`), grants, tokens,
//! approvals, jobs and their events, memories, the audit log, todo lists, goals, plan modes
//! and schedules — copied row for row in one transaction of the target, generated keys
//! carried over and the target's sequences moved past them, then counted on both sides.
//! The target must hold none of those rows yet. Tables kept by triggers (the per-owner
//! memory byte count) are rebuilt by the target's own triggers as the rows arrive.

use std::borrow::Cow;

use super::db::{Db, Dialect, SqlValue};
use super::schema::{Change, Column, MIGRATIONS, Render, Ty};
use super::{StateStore, StoreError};

/// Rows read and written per statement.
const BATCH: usize = 500;

/// Tables the engines keep from other tables' rows, by trigger: not copied.
const DERIVED: &[&str] = &["memory_usage"];

/// Why a migration did not happen; nothing was written to the target when it says so.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The target already holds rows.
    #[error(
        "the target database already holds {rows} rows in `{table}`: migrate into an empty \
         database (create a new one), so that nothing there is mixed with or overwritten by \
         this toolshed's state"
    )]
    NotEmpty {
        /// The first table found with rows.
        table: String,
        /// How many.
        rows: i64,
    },
    /// The target is the same engine as the source.
    #[error("the target is {0}, like the source: give a postgres:// URL")]
    SameEngine(&'static str),
    /// After the copy the counts differ: the transaction was rolled back.
    #[error(
        "`{table}` has {source_rows} rows here but {target_rows} in the target after the copy; \
         the copy was rolled back"
    )]
    Counts {
        /// The table.
        table: String,
        /// Rows in the source.
        source_rows: i64,
        /// Rows in the target.
        target_rows: i64,
    },
    /// Reading or writing failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One table as the schema ends up: its name and every column, added ones included.
struct TableShape {
    name: &'static str,
    columns: Vec<Column>,
}

/// Every table of [`MIGRATIONS`], in the order they were made, with their final columns.
fn tables() -> Vec<TableShape> {
    let mut out: Vec<TableShape> = Vec::new();
    for migration in MIGRATIONS {
        for change in *migration {
            match change {
                Change::Table(table) => out.push(TableShape {
                    name: table.name,
                    columns: table.columns.to_vec(),
                }),
                Change::AddColumn { table, column } => {
                    if let Some(shape) = out.iter_mut().find(|t| t.name == *table) {
                        shape.columns.push(*column);
                    }
                }
                Change::Index(_) | Change::Native(_) => {}
            }
        }
    }
    out.retain(|t| !DERIVED.contains(&t.name));
    out
}

fn ident(dialect: Dialect, name: &'static str) -> Cow<'static, str> {
    match dialect {
        Dialect::Sqlite => super::schema::sqlite::Sqlite.ident(name),
        #[cfg(feature = "postgres")]
        Dialect::Postgres => super::schema::postgres::Postgres.ident(name),
        #[cfg(not(feature = "postgres"))]
        Dialect::Postgres => Cow::Borrowed(name),
    }
}

fn count(db: &mut dyn Db, table: &'static str) -> Result<i64, StoreError> {
    let sql = format!("SELECT count(*) FROM {}", ident(db.dialect(), table));
    db.query_one(&sql, &[])?.int(0)
}

impl StateStore {
    /// Where a `[store] url` leads, for messages: never its password.
    pub fn shown_url(url: &str) -> String {
        #[cfg(feature = "postgres")]
        return super::postgres::redact(url);
        #[cfg(not(feature = "postgres"))]
        return url.split('@').next_back().unwrap_or_default().to_string();
    }

    /// Copies every row of this store into `target`, an empty store of another engine;
    /// `(table, rows)` for each table copied. All of it or nothing: one transaction of the
    /// target, committed only when every table counts the same on both sides.
    pub fn migrate_to(&self, target: &StateStore) -> Result<Vec<(String, i64)>, MigrateError> {
        let (from, to) = (self.engine_name(), target.engine_name());
        if from == to {
            return Err(MigrateError::SameEngine(to));
        }
        // Rows the audit writer still holds are part of the log.
        self.flush_audit();
        let shapes = tables();
        let mut mismatch = None;
        let result = target.tx(|tdb| {
            for shape in &shapes {
                let rows = count(tdb, shape.name)?;
                if rows > 0 {
                    return Ok(Err(MigrateError::NotEmpty {
                        table: shape.name.to_string(),
                        rows,
                    }));
                }
            }
            let mut copied = Vec::new();
            for shape in &shapes {
                let rows = self.db(|sdb| copy_table(sdb, tdb, shape))?;
                let target_rows = count(tdb, shape.name)?;
                if target_rows != rows {
                    mismatch = Some(MigrateError::Counts {
                        table: shape.name.to_string(),
                        source_rows: rows,
                        target_rows,
                    });
                    // An error ends the transaction rolled back.
                    return Err(StoreError::Db("the counts differ".into()));
                }
                copied.push((shape.name.to_string(), rows));
            }
            Ok(Ok(copied))
        });
        match (result, mismatch) {
            (_, Some(mismatch)) => Err(mismatch),
            (result, None) => result?,
        }
    }
}

/// Copies one table from `source` to `target` in batches (in the source's row order), and
/// moves the target's sequence of a generated key past the keys copied; how many rows.
fn copy_table(
    source: &mut dyn Db,
    target: &mut dyn Db,
    shape: &TableShape,
) -> Result<i64, StoreError> {
    let (sd, td) = (source.dialect(), target.dialect());
    let read_columns: Vec<Cow<'static, str>> =
        shape.columns.iter().map(|c| ident(sd, c.name)).collect();
    let write_columns: Vec<Cow<'static, str>> =
        shape.columns.iter().map(|c| ident(td, c.name)).collect();
    let width = shape.columns.len();
    // Paged by the source's own row order: SQLite's rowid (every table has one).
    let select = format!(
        "SELECT {}, rowid FROM {} WHERE rowid > ?1 ORDER BY rowid LIMIT {BATCH}",
        read_columns.join(", "),
        ident(sd, shape.name)
    );
    let mut after = i64::MIN;
    let mut total = 0i64;
    loop {
        let rows = source.query(&select, &[SqlValue::Int(after)])?;
        if rows.is_empty() {
            break;
        }
        let mut values = Vec::with_capacity(rows.len() * width);
        let mut groups = Vec::with_capacity(rows.len());
        for row in &rows {
            let start = values.len();
            values.extend(row.0.iter().take(width).cloned());
            groups.push(format!(
                "({})",
                (start + 1..=start + width)
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            after = row.int(width)?;
        }
        let insert = format!(
            "INSERT INTO {} ({}) VALUES {}",
            ident(td, shape.name),
            write_columns.join(", "),
            groups.join(", ")
        );
        target.execute(&insert, &values)?;
        total += i64::try_from(rows.len()).unwrap_or(i64::MAX);
        if rows.len() < BATCH {
            break;
        }
    }
    if td == Dialect::Postgres {
        for column in shape
            .columns
            .iter()
            .filter(|c| matches!(c.ty, Ty::Serial | Ty::RowId))
        {
            let sql = format!(
                "SELECT setval(pg_get_serial_sequence('{table}', '{col}'), \
                 (SELECT COALESCE(MAX({col_ident}), 0) + 1 FROM {table_ident}), false)",
                table = shape.name,
                col = column.name,
                col_ident = ident(td, column.name),
                table_ident = ident(td, shape.name),
            );
            target.query(&sql, &[])?;
        }
    }
    Ok(total)
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;
    use crate::memory::{Memories, MemoryConfig, NewMemory, Search};
    use crate::store::{AuditRecord, StoreConfig};

    fn postgres(dir: &std::path::Path) -> Option<StateStore> {
        let Ok(_) = std::env::var("TOOLSHED_TEST_POSTGRES_URL") else {
            assert!(
                std::env::var_os("TOOLSHED_REQUIRE_POSTGRES").is_none(),
                "TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not"
            );
            eprintln!("skipped: set TOOLSHED_TEST_POSTGRES_URL (scripts/test does)");
            return None;
        };
        let admin = std::env::var("TOOLSHED_TEST_POSTGRES_URL").unwrap();
        let url = crate::store::contract::fresh_database(&admin);
        Some(
            StateStore::open_with(
                &dir.join("toolshed.db"),
                &StoreConfig {
                    url: Some(url),
                    max_connections: 4,
                    ..Default::default()
                },
            )
            .unwrap(),
        )
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn every_row_moves_to_postgres_and_a_second_move_is_refused() {
        let here = tempfile::tempdir().unwrap();
        let there = tempfile::tempdir().unwrap();
        let Some(target) = postgres(there.path()) else {
            return;
        };
        let source = Arc::new(StateStore::open(&here.path().join("toolshed.db")).unwrap());
        // Tokens, memories (searched after the move), 1200 audit rows (more than a batch).
        let alice = source.create_token("alice", &[], None).unwrap();
        source.create_token("bob", &[], None).unwrap();
        let memories = Memories::new(source.clone(), MemoryConfig::default());
        for (i, text) in [
            "The staging database listens on 5433.",
            "Deploys go out on Tuesdays.",
        ]
        .iter()
        .enumerate()
        {
            memories
                .store(
                    "alice",
                    NewMemory {
                        text: (*text).to_string(),
                        title: Some(format!("note {i}")),
                        tags: vec!["infra".into()],
                        ..NewMemory::default()
                    },
                )
                .unwrap();
        }
        for i in 0..1200 {
            source
                .queue_audit(
                    AuditRecord {
                        ts_ms: 1_000 + i,
                        call_id: format!("c-{i}"),
                        owner: "alice".into(),
                        door: "rest".into(),
                        tool: "calculator".into(),
                        plugin: Some("system.calculator".into()),
                        args_sha256: "0".repeat(64),
                        outcome: "ok".into(),
                        error_kind: None,
                        duration_ms: 1,
                        approval: None,
                        parent: None,
                        note: None,
                    },
                    1_000_000,
                )
                .await;
        }
        let source_for_move = source.clone();
        let copied = tokio::task::spawn_blocking(move || {
            let target = target;
            let copied = source_for_move.migrate_to(&target);
            (copied, target)
        })
        .await
        .unwrap();
        let (copied, target) = (copied.0.unwrap(), copied.1);
        let rows = |table: &str| copied.iter().find(|(t, _)| t == table).unwrap().1;
        assert_eq!(rows("tokens"), 2);
        assert_eq!(rows("memories"), 2);
        assert_eq!(rows("audit"), 1200);
        // The moved state works there: the token authenticates, memories are found (the
        // target's own search index and byte count were built as they arrived), and a new
        // audit row takes an id after the moved ones.
        let target = Arc::new(target);
        assert_eq!(
            target.authenticate(&alice.token).unwrap().unwrap().owner,
            "alice"
        );
        let there_memories = Memories::new(target.clone(), MemoryConfig::default());
        let found = there_memories
            .search(
                "alice",
                &Search {
                    query: "staging".into(),
                    limit: 5,
                    ..Search::default()
                },
            )
            .unwrap();
        assert_eq!(found.len(), 1);
        let page = target.recent_audit(1).unwrap();
        assert_eq!(page[0].call_id, "c-1199");
        // Into a database that has rows now: refused, naming the table.
        let refused = source.migrate_to(&target).unwrap_err();
        assert!(
            matches!(refused, MigrateError::NotEmpty { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("empty database"), "{refused}");
        // SQLite into SQLite is not a move.
        let other = StateStore::open(&there.path().join("other.db")).unwrap();
        assert!(matches!(
            source.migrate_to(&other).unwrap_err(),
            MigrateError::SameEngine("sqlite")
        ));
    }
}

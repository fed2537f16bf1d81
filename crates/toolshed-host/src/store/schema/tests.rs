//! The rendered DDL against the hand-written DDL it replaced ([`frozen`]): after every
//! migration, a database built from each has the same tables, columns, keys, indexes and
//! triggers, read back from the engine's catalog; and the description is consistent.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::Connection;

use super::sqlite::{self, Sqlite};
use super::*;

/// What a SQLite database holds, read back from the engine: every `sqlite_master` entry
/// (its SQL with whitespace and quotes normalized away, which SQLite itself extends on
/// `ADD COLUMN`), and for every table its `table_list` row, its columns (`table_xinfo`:
/// name, type, not null, default, key position), its indexes (`index_list`: unique, origin,
/// partial) and their columns (`index_xinfo`).
fn describe_sqlite(conn: &Connection) -> BTreeMap<String, Vec<String>> {
    let rows = |sql: &str| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        let width = stmt.column_count();
        stmt.query_map([], |row| {
            (0..width)
                .map(|i| Ok(format!("{:?}", row.get::<_, rusqlite::types::Value>(i)?)))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.join(" | "))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
    };
    let mut out = BTreeMap::new();
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
        .unwrap();
    let entries: Vec<(String, String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name, table, sql) in &entries {
        out.insert(
            format!("{kind} {name}"),
            vec![table.clone(), normalized(sql)],
        );
    }
    for (_, name, _, _) in entries.iter().filter(|e| e.0 == "table") {
        out.insert(
            format!("table_list {name}"),
            rows(&format!("PRAGMA table_list('{name}')")),
        );
        out.insert(
            format!("table_xinfo {name}"),
            rows(&format!("PRAGMA table_xinfo('{name}')")),
        );
        let mut indexes = rows(&format!(
            "SELECT name, \"unique\", origin, partial FROM pragma_index_list('{name}')"
        ));
        indexes.sort();
        out.insert(format!("index_list {name}"), indexes);
    }
    for (_, name, _, _) in entries.iter().filter(|e| e.0 == "index") {
        out.insert(
            format!("index_xinfo {name}"),
            rows(&format!("PRAGMA index_xinfo('{name}')")),
        );
    }
    out
}

/// SQL with runs of whitespace as one space, none beside punctuation, and no `"` (the
/// renderer quotes keywords the hand-written SQL left bare, which SQLite took).
fn normalized(sql: &str) -> String {
    let words = sql.replace('"', "");
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    for c in words.chars() {
        if c == ' ' && out.ends_with(['(', ',', ';']) {
            continue;
        }
        if [')', ',', ';', '('].contains(&c) && out.ends_with(' ') {
            out.pop();
        }
        out.push(c);
    }
    out
}

/// The first difference between two descriptions, for a readable failure.
fn first_difference(
    old: &BTreeMap<String, Vec<String>>,
    new: &BTreeMap<String, Vec<String>>,
) -> Option<String> {
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    keys.into_iter().find_map(|k| {
        (old.get(k) != new.get(k)).then(|| {
            format!(
                "{k}:\n  released: {:?}\n  rendered: {:?}",
                old.get(k),
                new.get(k)
            )
        })
    })
}

#[test]
fn sqlite_migrations_have_the_effect_of_the_released_ones_step_by_step() {
    // Migrations after the frozen ones were written in the typed form from the start.
    assert!(MIGRATIONS.len() >= frozen::SQLITE.len());
    let old = Connection::open_in_memory().unwrap();
    let new = Connection::open_in_memory().unwrap();
    for (i, (released, migration)) in frozen::SQLITE.iter().zip(MIGRATIONS).enumerate() {
        old.execute_batch(released).unwrap();
        new.execute_batch(&sqlite::render(migration))
            .unwrap_or_else(|e| panic!("migration {i}: {e}\n{}", sqlite::render(migration)));
        let (old, new) = (describe_sqlite(&old), describe_sqlite(&new));
        assert!(old.len() > i, "migration {i} created nothing");
        if let Some(diff) = first_difference(&old, &new) {
            panic!("after migration {i} (user_version {}): {diff}", i + 1);
        }
    }
}

#[test]
fn a_sqlite_file_of_every_released_version_upgrades_to_the_rendered_schema() {
    let fresh = Connection::open_in_memory().unwrap();
    for migration in MIGRATIONS {
        fresh.execute_batch(&sqlite::render(migration)).unwrap();
    }
    let fresh = describe_sqlite(&fresh);
    for version in 0..=frozen::SQLITE.len() {
        let conn = Connection::open_in_memory().unwrap();
        for released in &frozen::SQLITE[..version] {
            conn.execute_batch(released).unwrap();
        }
        for migration in &MIGRATIONS[version..] {
            conn.execute_batch(&sqlite::render(migration)).unwrap();
        }
        if let Some(diff) = first_difference(&describe_sqlite(&conn), &fresh) {
            panic!("upgraded from user_version {version}: {diff}");
        }
    }
}

/// The normalization the comparison relies on: it drops layout and quotes only.
#[test]
fn normalized_sql_keeps_everything_but_layout_and_quotes() {
    assert_eq!(
        normalized("CREATE TABLE t (\n  a   TEXT ,\n \"key\" INTEGER PRIMARY KEY\n)"),
        "CREATE TABLE t(a TEXT,key INTEGER PRIMARY KEY)"
    );
    assert_ne!(
        normalized("CREATE TABLE t (a INTEGER PRIMARY KEY)"),
        normalized("CREATE TABLE t (a INTEGER PRIMARY KEY AUTOINCREMENT)")
    );
}

#[test]
fn renderers_spell_types_keys_and_reserved_words_as_released() {
    let find = |name: &str| -> Table {
        MIGRATIONS
            .iter()
            .flat_map(|m| m.iter())
            .find_map(|c| match c {
                Change::Table(t) if t.name == name => Some(*t),
                _ => None,
            })
            .unwrap()
    };
    let audit = Sqlite.table(&find("audit"));
    assert!(
        audit.contains("id INTEGER PRIMARY KEY AUTOINCREMENT,"),
        "{audit}"
    );
    let memories = Sqlite.table(&find("memories"));
    assert!(memories.contains("n INTEGER PRIMARY KEY,"), "{memories}");
    assert!(memories.contains("id TEXT NOT NULL UNIQUE,"), "{memories}");
    let config = Sqlite.table(&find("config_values"));
    assert!(config.contains("\"key\" TEXT NOT NULL"), "{config}");
    assert!(
        config.contains("secret INTEGER NOT NULL DEFAULT 0"),
        "{config}"
    );
    assert!(
        Sqlite
            .table(&find("read_log"))
            .contains("sha256 BLOB NOT NULL")
    );
    // SQLite has no `grant` keyword; Postgres reserves it.
    let grants = Sqlite.table(&find("plugin_grants"));
    assert!(
        grants.contains("PRIMARY KEY (plugin_id, grant)"),
        "{grants}"
    );
    #[cfg(feature = "postgres")]
    {
        use super::postgres::Postgres;
        let grants = Postgres.table(&find("plugin_grants"));
        assert!(grants.contains("\"grant\" TEXT NOT NULL"), "{grants}");
        assert!(
            grants.contains("PRIMARY KEY (plugin_id, \"grant\")"),
            "{grants}"
        );
        let audit = Postgres.table(&find("audit"));
        assert!(audit.contains("id BIGSERIAL PRIMARY KEY,"), "{audit}");
        let memories = Postgres.table(&find("memories"));
        assert!(memories.contains("n BIGSERIAL PRIMARY KEY,"), "{memories}");
        let events = Postgres.table(&find("events"));
        assert!(events.contains("id BIGINT PRIMARY KEY,"), "{events}");
        assert!(
            Postgres
                .table(&find("read_log"))
                .contains("sha256 BYTEA NOT NULL")
        );
        let index = Postgres.render(MIGRATIONS[8]);
        assert!(
            index.contains("CREATE INDEX audit_parent ON audit (parent) WHERE parent IS NOT NULL;"),
            "{index}"
        );
    }
}

/// Whether the engine assigns a column's values, as its table's key.
fn generated(ty: Ty) -> bool {
    matches!(ty, Ty::Serial | Ty::RowId)
}

/// Every name a change refers to exists when it runs, and generated keys are their
/// table's sole key: what the renderers take for granted.
#[test]
fn the_description_is_consistent() {
    let mut tables: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut indexes = BTreeSet::new();
    #[cfg(feature = "postgres")]
    let all = MIGRATIONS.iter().chain([&SHARED_ONLY]);
    #[cfg(not(feature = "postgres"))]
    let all = MIGRATIONS.iter();
    for change in all.flat_map(|m| m.iter()) {
        match change {
            Change::Table(t) => {
                let columns: Vec<&str> = t.columns.iter().map(|c| c.name).collect();
                for key in t.primary_key {
                    assert!(columns.contains(key), "{}: key {key}", t.name);
                }
                for c in t.columns.iter().filter(|c| generated(c.ty)) {
                    assert_eq!(t.primary_key, [c.name], "{}.{}", t.name, c.name);
                }
                assert!(tables.insert(t.name, columns).is_none(), "{}", t.name);
            }
            Change::AddColumn { table, column } => {
                assert!(!generated(column.ty) && !column.unique, "{table}");
                let columns = tables.get_mut(table).unwrap();
                assert!(!columns.contains(&column.name), "{table}.{}", column.name);
                columns.push(column.name);
            }
            Change::Index(i) => {
                let columns = &tables[i.table];
                assert!(i.columns.iter().all(|c| columns.contains(c)), "{}", i.name);
                assert!(indexes.insert(i.name), "{}", i.name);
            }
            Change::Native(Native::MemorySearch) => assert!(tables.contains_key("memories")),
        }
    }
}

#[cfg(feature = "postgres")]
mod postgres;

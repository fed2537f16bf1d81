//! The Postgres versions: grouped from the one list as released, the same tables as the
//! SQLite file, and (on the throwaway cluster of `scripts/test`, `TOOLSHED_TEST_POSTGRES_URL`)
//! the same catalog as the hand-written versions after every version, and after an upgrade
//! from each.

use std::collections::{BTreeMap, BTreeSet};

use super::super::postgres::{self, RELEASED, Step};
use super::super::{MIGRATIONS, frozen, sqlite};
use super::first_difference;

/// The tables a list of statements creates, full-text indexes (SQLite's FTS5 virtual
/// tables, a column and an index in Postgres) left out.
fn tables<S: AsRef<str>>(batches: &[S]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for sql in batches {
        for part in sql.as_ref().split("CREATE TABLE ").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found
}

#[test]
fn both_dialects_have_the_same_tables() {
    let sqlite: Vec<String> = MIGRATIONS.iter().map(|m| sqlite::render(m)).collect();
    let sqlite = tables(&sqlite);
    let mut postgres = tables(&postgres::rendered());
    // Plugin archives are shared with other toolsheds, which only a shared database has
    // (`crate::install`'s replication).
    assert!(postgres.remove("plugin_archives"));
    assert!(sqlite.len() > 10, "{sqlite:?}");
    assert_eq!(sqlite, postgres);
    // Every table of the hand-written lists, which the tests below compare in depth; the
    // migrations after them add tables of their own.
    assert!(tables(frozen::SQLITE).is_subset(&sqlite));
}

#[test]
fn every_migration_is_in_one_postgres_version() {
    let mut seen = vec![0; MIGRATIONS.len()];
    let mut released = 0;
    for step in RELEASED.iter().flat_map(|v| v.iter()) {
        if let Step::Shared(range) = step {
            for i in range.clone() {
                seen[i] += 1;
            }
            released = released.max(range.end);
        }
    }
    assert!(seen[..released].iter().all(|n| *n == 1), "{seen:?}");
    let versions = postgres::versions();
    assert_eq!(versions.len(), RELEASED.len() + MIGRATIONS.len() - released);
    assert_eq!(RELEASED.len(), frozen::POSTGRES.len());
    let changes: usize = versions.iter().map(Vec::len).sum();
    let shared: usize = MIGRATIONS.iter().map(|m| m.len()).sum();
    assert_eq!(changes, shared + super::super::SHARED_ONLY.len());
}

/// A client of a new empty database on the test cluster, or `None` (said) without one.
fn database() -> Option<::postgres::Client> {
    let Ok(admin) = std::env::var("TOOLSHED_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("TOOLSHED_REQUIRE_POSTGRES").is_none(),
            "TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not"
        );
        eprintln!("skipped: set TOOLSHED_TEST_POSTGRES_URL (scripts/test does)");
        return None;
    };
    let url = crate::store::contract::fresh_database(&admin);
    Some(::postgres::Client::connect(&url, ::postgres::NoTls).unwrap())
}

/// What a Postgres database's `public` schema holds, read back from the catalog: every
/// relation and its kind; every column (`information_schema.columns`: position, type,
/// nullability, default, generation); constraints, indexes, triggers and functions as
/// the server prints their definitions; sequences.
fn describe_postgres(client: &mut ::postgres::Client) -> BTreeMap<String, Vec<String>> {
    const QUERIES: &[(&str, &str)] = &[
        (
            "relation",
            "SELECT relname, relkind::text FROM pg_class
             WHERE relnamespace = 'public'::regnamespace",
        ),
        (
            "column",
            "SELECT table_name || '.' || column_name, concat_ws(' | ', ordinal_position,
                    data_type, is_nullable, column_default, is_generated, generation_expression,
                    is_identity)
             FROM information_schema.columns WHERE table_schema = 'public'",
        ),
        (
            "constraint",
            "SELECT conname, conrelid::regclass::text || ' ' || pg_get_constraintdef(oid)
             FROM pg_constraint WHERE connamespace = 'public'::regnamespace",
        ),
        (
            "index",
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
        ),
        (
            "trigger",
            "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal",
        ),
        (
            "function",
            "SELECT proname, pg_get_functiondef(oid) FROM pg_proc
             WHERE pronamespace = 'public'::regnamespace",
        ),
        (
            "sequence",
            "SELECT sequence_name, concat_ws(' | ', data_type, start_value, increment,
                    maximum_value)
             FROM information_schema.sequences WHERE sequence_schema = 'public'",
        ),
    ];
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (kind, sql) in QUERIES {
        for row in client.query(*sql, &[]).unwrap() {
            let name: String = row.get(0);
            let value: Option<String> = row.get(1);
            out.entry(format!("{kind} {name}"))
                .or_default()
                .push(value.unwrap_or_default());
        }
    }
    out
}

/// Applies one version's SQL in a transaction, as `store::postgres::migrate` does.
fn apply(client: &mut ::postgres::Client, sql: &str) {
    let mut tx = client.transaction().unwrap();
    tx.batch_execute(sql)
        .unwrap_or_else(|e| panic!("{e:?}\n{sql}"));
    tx.commit().unwrap();
}

#[test]
fn postgres_versions_have_the_effect_of_the_released_ones_step_by_step() {
    let (Some(mut old), Some(mut new)) = (database(), database()) else {
        return;
    };
    let rendered = postgres::rendered();
    for (k, released) in frozen::POSTGRES.iter().enumerate() {
        apply(&mut old, released);
        apply(&mut new, &rendered[k]);
        let (old, new) = (describe_postgres(&mut old), describe_postgres(&mut new));
        assert!(old.len() > k, "version {k} created nothing");
        if let Some(diff) = first_difference(&old, &new) {
            panic!("after Postgres version {}: {diff}", k + 1);
        }
    }
}

#[test]
fn a_postgres_database_of_every_released_version_upgrades_to_the_rendered_schema() {
    let Some(mut fresh) = database() else {
        return;
    };
    let rendered = postgres::rendered();
    for sql in &rendered {
        apply(&mut fresh, sql);
    }
    let fresh = describe_postgres(&mut fresh);
    for version in 1..=frozen::POSTGRES.len() {
        let mut db = database().unwrap();
        for released in &frozen::POSTGRES[..version] {
            apply(&mut db, released);
        }
        for sql in &rendered[version..] {
            apply(&mut db, sql);
        }
        if let Some(diff) = first_difference(&describe_postgres(&mut db), &fresh) {
            panic!("upgraded from Postgres version {version}: {diff}");
        }
    }
}

/// The renderer quotes at least every word the server reserves.
#[test]
fn postgres_reserved_words_are_the_servers() {
    let Some(mut client) = database() else {
        return;
    };
    use super::super::Render as _;
    let rows = client
        .query(
            "SELECT word FROM pg_get_keywords() WHERE catcode IN ('R', 'T')",
            &[],
        )
        .unwrap();
    assert!(rows.len() > 50);
    for row in rows {
        let word: String = row.get(0);
        assert!(postgres::Postgres.reserved(&word), "{word} is reserved");
    }
    assert!(!postgres::Postgres.reserved("key"));
    assert!(!postgres::Postgres.reserved("text"));
}

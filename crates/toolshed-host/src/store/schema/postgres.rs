//! The schema in Postgres's dialect: integers are `BIGINT` (booleans too, 0 or 1), blobs
//! `BYTEA`, generated keys `BIGSERIAL`; memory search is a weighted `tsvector` column (title,
//! tags, text) with a GIN index instead of FTS5, and the per-owner byte count is kept by a
//! trigger as there. `toolshed_schema.version` counts the versions that ran, each a group
//! of [`MIGRATIONS`]: the released ones as they were ([`RELEASED`]), then one version per
//! migration.

use std::ops::Range;

use super::{Change, MIGRATIONS, Native, Render, SHARED_ONLY, Ty};

/// Postgres's spelling of the schema.
pub(crate) struct Postgres;

impl Render for Postgres {
    fn ty(&self, ty: Ty) -> &'static str {
        match ty {
            Ty::Int => "BIGINT",
            Ty::Text => "TEXT",
            Ty::Bytes => "BYTEA",
            Ty::Serial | Ty::RowId => "BIGSERIAL",
        }
    }

    fn reserved(&self, word: &str) -> bool {
        RESERVED.split_whitespace().any(|k| k == word)
    }

    fn native(&self, native: Native) -> &'static str {
        match native {
            // As released in Postgres version 3, verbatim (a function body is stored as
            // written): never edit.
            Native::MemorySearch => {
                "
    ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A')
        || setweight(to_tsvector('english', tags), 'B')
        || setweight(to_tsvector('english', text), 'C')
    ) STORED;
    CREATE INDEX memories_search ON memories USING GIN (tsv);
    CREATE FUNCTION toolshed_memory_usage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            UPDATE memory_usage SET bytes = bytes - octet_length(OLD.text) WHERE owner = OLD.owner;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO memory_usage (owner, bytes) VALUES (NEW.owner, octet_length(NEW.text))
                ON CONFLICT (owner) DO UPDATE SET bytes = memory_usage.bytes + excluded.bytes;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_usage AFTER INSERT OR DELETE OR UPDATE OF text, owner ON memories
        FOR EACH ROW EXECUTE FUNCTION toolshed_memory_usage()"
            }
        }
    }
}

/// A part of one Postgres version.
#[derive(Debug)]
pub(crate) enum Step {
    /// These entries of [`MIGRATIONS`].
    Shared(Range<usize>),
    /// The tables only a shared database has ([`SHARED_ONLY`]).
    SharedOnly,
}

/// What each released Postgres version ran, in order; never edit. The first gathered the
/// SQLite migrations of its time but memory, which came two versions later.
pub(crate) const RELEASED: &[&[Step]] = &[
    &[Step::Shared(0..9), Step::Shared(10..12)],
    &[Step::SharedOnly],
    &[Step::Shared(9..10)],
    &[Step::Shared(12..13)],
    &[Step::Shared(13..14)],
];

/// The changes of each Postgres version, in order: the released versions, then one per
/// migration of [`MIGRATIONS`] after those they cover.
pub(crate) fn versions() -> Vec<Vec<&'static Change>> {
    let mut out: Vec<Vec<&'static Change>> = Vec::new();
    let mut covered = 0;
    for steps in RELEASED {
        let mut version = Vec::new();
        for step in *steps {
            match step {
                Step::Shared(range) => {
                    covered = covered.max(range.end);
                    for migration in &MIGRATIONS[range.clone()] {
                        version.extend(migration.iter());
                    }
                }
                Step::SharedOnly => version.extend(SHARED_ONLY.iter()),
            }
        }
        out.push(version);
    }
    out.extend(MIGRATIONS[covered..].iter().map(|m| m.iter().collect()));
    out
}

/// The SQL of each Postgres version, for one batch each.
pub(crate) fn rendered() -> Vec<String> {
    versions()
        .into_iter()
        .map(|changes| Postgres.render(changes))
        .collect()
}

/// Postgres's reserved key words, those that cannot name a column unquoted
/// (<https://www.postgresql.org/docs/current/sql-keywords-appendix.html>, "reserved" and
/// "reserved (can be function or type)"; `pg_get_keywords()` catcodes R and T).
const RESERVED: &str = "\
all analyse analyze and any array as asc asymmetric authorization binary both case \
cast check collate collation column concurrently constraint create cross \
current_catalog current_date current_role current_schema current_time \
current_timestamp current_user default deferrable desc distinct do else end except \
false fetch for foreign freeze from full grant group having ilike in initially inner \
intersect into is isnull join lateral leading left like limit localtime \
localtimestamp natural not notnull null offset on only or order outer overlaps \
placing primary references returning right select session_user similar some \
symmetric system_user table tablesample then to trailing true union unique user using \
variadic verbose when where window with";

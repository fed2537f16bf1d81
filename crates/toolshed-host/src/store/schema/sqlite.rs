//! The schema in SQLite's dialect: the embedded file's migrations, one per entry of
//! [`MIGRATIONS`](super::MIGRATIONS), `PRAGMA user_version` counting those that ran.

use super::{Migration, Native, Render, Ty};

/// SQLite's spelling of the schema.
pub(crate) struct Sqlite;

impl Render for Sqlite {
    fn ty(&self, ty: Ty) -> &'static str {
        match ty {
            Ty::Int | Ty::Serial | Ty::RowId => "INTEGER",
            Ty::Text => "TEXT",
            Ty::Bytes => "BLOB",
        }
    }

    fn sole_key(&self, ty: Ty) -> &'static str {
        match ty {
            // An `INTEGER PRIMARY KEY` is the rowid; AUTOINCREMENT never reuses one.
            Ty::Serial => "PRIMARY KEY AUTOINCREMENT",
            _ => "PRIMARY KEY",
        }
    }

    fn reserved(&self, word: &str) -> bool {
        KEYWORDS.split_whitespace().any(|k| k == word)
    }

    fn native(&self, native: Native) -> &'static str {
        match native {
            // As released in the tenth migration (`user_version` 10), verbatim: never edit.
            Native::MemorySearch => {
                "
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        title, text, tags, content = 'memories', content_rowid = 'n',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_added AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, title, text, tags)
            VALUES (new.n, new.title, new.text, new.tags);
        INSERT INTO memory_usage (owner, bytes) VALUES (new.owner, length(CAST(new.text AS BLOB)))
            ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
    END;
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, text, tags)
            VALUES ('delete', old.n, old.title, old.text, old.tags);
        UPDATE memory_usage SET bytes = bytes - length(CAST(old.text AS BLOB))
            WHERE owner = old.owner;
    END;
    CREATE TRIGGER memories_changed AFTER UPDATE OF title, text, tags ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, text, tags)
            VALUES ('delete', old.n, old.title, old.text, old.tags);
        INSERT INTO memories_fts (rowid, title, text, tags)
            VALUES (new.n, new.title, new.text, new.tags);
        UPDATE memory_usage
            SET bytes = bytes - length(CAST(old.text AS BLOB)) + length(CAST(new.text AS BLOB))
            WHERE owner = new.owner;
    END"
            }
        }
    }
}

/// The SQL of one migration, for `execute_batch`.
pub(crate) fn render(migration: Migration) -> String {
    Sqlite.render(migration)
}

/// SQLite's keywords (<https://sqlite.org/lang_keywords.html>): a name that is one is
/// quoted, as SQLite asks (it takes many unquoted, not all).
const KEYWORDS: &str = "\
abort action add after all alter always analyze and as asc attach autoincrement \
before begin between by cascade case cast check collate column commit conflict \
constraint create cross current current_date current_time current_timestamp database \
default deferrable deferred delete desc detach distinct do drop each else end escape \
except exclude exclusive exists explain fail filter first following for foreign from \
full generated glob group groups having if ignore immediate in index indexed \
initially inner insert instead intersect into is isnull join key last left like \
limit match materialized natural no not nothing notnull null nulls of offset on or \
order others outer over partition plan pragma preceding primary query raise range \
recursive references regexp reindex release rename replace restrict returning right \
rollback row rows savepoint select set table temp temporary then ties to transaction \
trigger unbounded union unique update using vacuum values view virtual when where \
window with without";

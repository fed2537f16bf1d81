//! Every table of the state store, described once ([`MIGRATIONS`]) and rendered per engine
//! by a [`Render`] of its own file: [`sqlite::Sqlite`] for the embedded file and
//! `postgres::Postgres` for a shared database. The features own their queries
//! (`crate::memory`, `crate::approvals`, `crate::audit`, ...); the tables are listed here,
//! in one ordered list, because a database's schema version counts the migrations that ran,
//! whatever feature they belong to.
//!
//! A new table or column is a new entry at the end of [`MIGRATIONS`], never an edit of a
//! released one (nor of a released engine's spelling of it, a [`Native`]). A third engine
//! is one new file beside `sqlite.rs`: a [`Render`] saying its types, its reserved words and
//! its spelling of each [`Native`], and which migrations each of its versions runs (one per
//! migration unless it has history, as Postgres has).

use std::borrow::Cow;

use Ty::{Bytes, Int, RowId, Serial, Text};

#[cfg(test)]
mod frozen;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod sqlite;
#[cfg(test)]
mod tests;

/// A column's type, in terms every engine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// A 64-bit integer (booleans too, 0 or 1).
    Int,
    /// UTF-8 text.
    Text,
    /// Bytes.
    Bytes,
    /// An integer key the engine assigns, never reusing one (SQLite's `AUTOINCREMENT`);
    /// only as its table's sole primary key.
    Serial,
    /// An integer key the engine assigns, which SQLite may reuse once the newest row is
    /// gone (its rowid; Postgres never reuses one); only as its table's sole primary key.
    RowId,
}

/// One column of a table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    /// Its name.
    pub(crate) name: &'static str,
    /// Its type.
    pub(crate) ty: Ty,
    /// `NOT NULL`.
    pub(crate) not_null: bool,
    /// `UNIQUE`.
    pub(crate) unique: bool,
    /// `DEFAULT`: a literal every engine reads the same way (`0`).
    pub(crate) default: Option<&'static str>,
}

impl Column {
    /// A column that may be null, without a default.
    pub(crate) const fn new(name: &'static str, ty: Ty) -> Self {
        Self {
            name,
            ty,
            not_null: false,
            unique: false,
            default: None,
        }
    }

    /// The column, `NOT NULL`.
    pub(crate) const fn not_null(self) -> Self {
        Self {
            not_null: true,
            ..self
        }
    }

    /// The column, `UNIQUE`.
    pub(crate) const fn unique(self) -> Self {
        Self {
            unique: true,
            ..self
        }
    }

    /// The column with a default, a literal every engine reads the same way.
    pub(crate) const fn default(self, literal: &'static str) -> Self {
        Self {
            default: Some(literal),
            ..self
        }
    }
}

/// A `CREATE TABLE`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table {
    /// Its name.
    pub(crate) name: &'static str,
    /// Its columns, in order.
    pub(crate) columns: &'static [Column],
    /// The columns of its primary key; a single one is written on its column.
    pub(crate) primary_key: &'static [&'static str],
}

/// A `CREATE INDEX`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Index {
    /// Its name.
    pub(crate) name: &'static str,
    /// The table it indexes.
    pub(crate) table: &'static str,
    /// The columns, in order.
    pub(crate) columns: &'static [&'static str],
    /// A partial index's condition, in the engines' common SQL (`parent IS NOT NULL`).
    pub(crate) where_: Option<&'static str>,
    /// `UNIQUE`.
    pub(crate) unique: bool,
}

impl Index {
    /// An index of all rows, not unique.
    pub(crate) const fn new(
        name: &'static str,
        table: &'static str,
        columns: &'static [&'static str],
    ) -> Self {
        Self {
            name,
            table,
            columns,
            where_: None,
            unique: false,
        }
    }

    /// The index, of the rows where `condition` holds only.
    pub(crate) const fn where_(self, condition: &'static str) -> Self {
        Self {
            where_: Some(condition),
            ..self
        }
    }
}

/// What has no portable form: each engine spells it in its own file ([`Render::native`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Native {
    /// Full-text search over the memories' title, text and tags (SQLite: an FTS5 table
    /// kept by triggers; Postgres: a weighted `tsvector` column with a GIN index), and the
    /// triggers that keep `memory_usage`'s per-owner byte count.
    MemorySearch,
}

/// One change of a migration.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Change {
    /// A new table.
    Table(Table),
    /// A new column at the end of a table.
    AddColumn {
        /// The table.
        table: &'static str,
        /// The column.
        column: Column,
    },
    /// A new index.
    Index(Index),
    /// What each engine spells its own way.
    Native(Native),
}

/// The migrations of one database's schema, in order.
pub(crate) type Migration = &'static [Change];

/// `name`, of type `ty`.
const fn col(name: &'static str, ty: Ty) -> Column {
    Column::new(name, ty)
}

/// A change that adds `column` to `table`.
const fn add(table: &'static str, column: Column) -> Change {
    Change::AddColumn { table, column }
}

/// The schema, one migration per entry; SQLite's `PRAGMA user_version` records how many
/// ran, Postgres's versions group them (`postgres::RELEASED`). Never edit a released
/// entry: append a new one.
pub(crate) const MIGRATIONS: &[Migration] = &[
    &[
        Change::Table(Table {
            name: "plugin_state",
            columns: &[
                col("plugin_id", Text),
                col("enabled", Int).not_null(),
                col("source", Text),
                col("sha256", Text),
                col("installed_at", Int),
                col("updated_at", Int).not_null(),
            ],
            primary_key: &["plugin_id"],
        }),
        Change::Table(Table {
            name: "config_values",
            columns: &[
                col("plugin_id", Text).not_null(),
                col("key", Text).not_null(),
                col("value", Text).not_null(),
                col("secret", Int).not_null().default("0"),
                col("updated_at", Int).not_null(),
            ],
            primary_key: &["plugin_id", "key"],
        }),
        Change::Table(Table {
            name: "audit",
            columns: &[
                col("id", Serial),
                col("ts_ms", Int).not_null(),
                col("call_id", Text).not_null(),
                col("owner", Text).not_null(),
                col("door", Text).not_null(),
                col("tool", Text).not_null(),
                col("plugin", Text),
                col("args_sha256", Text).not_null(),
                col("outcome", Text).not_null(),
                col("error_kind", Text),
                col("duration_ms", Int).not_null(),
            ],
            primary_key: &["id"],
        }),
        Change::Index(Index::new("audit_ts", "audit", &["ts_ms"])),
    ],
    &[
        Change::Table(Table {
            name: "read_log",
            columns: &[
                col("owner", Text).not_null(),
                col("path", Text).not_null(),
                col("sha256", Bytes).not_null(),
                col("ts_ms", Int).not_null(),
            ],
            primary_key: &["owner", "path"],
        }),
        Change::Index(Index::new("read_log_ts", "read_log", &["ts_ms"])),
    ],
    &[Change::Table(Table {
        name: "plugin_grants",
        columns: &[
            col("plugin_id", Text).not_null(),
            col("grant", Text).not_null(),
            col("updated_at", Int).not_null(),
        ],
        primary_key: &["plugin_id", "grant"],
    })],
    &[Change::Table(Table {
        name: "plugin_tools",
        columns: &[
            col("plugin_id", Text),
            col("load_key", Text).not_null(),
            col("specs", Text).not_null(),
            col("updated_at", Int).not_null(),
        ],
        primary_key: &["plugin_id"],
    })],
    &[Change::Table(Table {
        name: "tokens",
        columns: &[
            col("id", Text),
            col("owner", Text).not_null(),
            col("scopes", Text).not_null(),
            col("hash", Text).not_null(),
            col("created_ms", Int).not_null(),
            col("expires_ms", Int),
            col("last_used_ms", Int),
            col("revoked_ms", Int),
        ],
        primary_key: &["id"],
    })],
    &[
        Change::Table(Table {
            name: "approvals",
            columns: &[
                col("id", Text),
                col("tool", Text).not_null(),
                col("owner", Text).not_null(),
                col("digest", Text).not_null(),
                col("summary", Text).not_null(),
                col("rule", Text).not_null(),
                col("reason", Text).not_null(),
                col("created_ms", Int).not_null(),
                col("expires_ms", Int).not_null(),
                col("state", Text).not_null(),
                col("answered_by", Text),
                col("answered_ms", Int),
                col("remembered", Int).not_null().default("0"),
            ],
            primary_key: &["id"],
        }),
        Change::Index(Index::new(
            "approvals_state",
            "approvals",
            &["state", "created_ms"],
        )),
        Change::Table(Table {
            name: "approval_grants",
            columns: &[
                col("owner", Text).not_null(),
                col("tool", Text).not_null(),
                col("digest", Text).not_null(),
                col("created_ms", Int).not_null(),
            ],
            primary_key: &["owner", "tool", "digest"],
        }),
    ],
    &[add("audit", col("approval", Text))],
    &[
        Change::Table(Table {
            name: "jobs",
            columns: &[
                col("n", Serial),
                col("tool", Text).not_null(),
                col("owner", Text).not_null(),
                col("state", Text).not_null(),
                col("created_ms", Int).not_null(),
                col("finished_ms", Int),
                col("progress_count", Int).not_null().default("0"),
                col("progress", Text),
                col("result", Text),
                col("error", Text),
                col("instance", Text).not_null(),
            ],
            primary_key: &["n"],
        }),
        Change::Index(Index::new("jobs_state", "jobs", &["state", "instance"])),
        Change::Table(Table {
            name: "sequences",
            columns: &[col("name", Text), col("value", Int).not_null()],
            primary_key: &["name"],
        }),
    ],
    &[
        add("audit", col("parent", Text)),
        Change::Index(
            Index::new("audit_parent", "audit", &["parent"]).where_("parent IS NOT NULL"),
        ),
    ],
    // Memory: the tables, indexes and triggers of the memory tools (`crate::memory`).
    &[
        Change::Table(Table {
            name: "memories",
            columns: &[
                col("n", RowId),
                col("id", Text).not_null().unique(),
                col("owner", Text).not_null(),
                col("namespace", Text).not_null(),
                col("kind", Text).not_null(),
                col("day", Text),
                col("title", Text).not_null(),
                col("text", Text).not_null(),
                col("tags", Text).not_null(),
                col("created_ms", Int).not_null(),
                col("updated_ms", Int).not_null(),
                col("expires_ms", Int),
                col("deleted_ms", Int),
                col("archived_in", Text),
            ],
            primary_key: &["n"],
        }),
        Change::Index(Index::new(
            "memories_recent",
            "memories",
            &["owner", "namespace", "updated_ms"],
        )),
        Change::Index(
            Index::new("memories_gone", "memories", &["deleted_ms"])
                .where_("deleted_ms IS NOT NULL"),
        ),
        Change::Index(
            Index::new("memories_expiry", "memories", &["expires_ms"])
                .where_("expires_ms IS NOT NULL"),
        ),
        Change::Index(
            Index::new("memories_days", "memories", &["owner", "namespace", "day"])
                .where_("day IS NOT NULL"),
        ),
        Change::Table(Table {
            name: "memory_usage",
            columns: &[col("owner", Text), col("bytes", Int).not_null()],
            primary_key: &["owner"],
        }),
        Change::Native(Native::MemorySearch),
    ],
    &[Change::Table(Table {
        name: "plugin_installs",
        columns: &[
            col("plugin_id", Text),
            col("source", Text).not_null(),
            col("sha256", Text),
            col("tree_sha256", Text).not_null(),
            col("files", Text).not_null(),
            col("installed_ms", Int).not_null(),
        ],
        primary_key: &["plugin_id"],
    })],
    &[Change::Table(Table {
        name: "events",
        columns: &[
            col("id", Int),
            col("kind", Text).not_null(),
            col("time_ms", Int).not_null(),
            col("job_id", Text),
            col("owner", Text),
            col("data", Text).not_null(),
        ],
        primary_key: &["id"],
    })],
    &[add("plugin_installs", col("dependencies", Text))],
    // When an approved request's call ran: a yes is for one run.
    &[add("approvals", col("used_ms", Int))],
    // Agent orchestration (`crate::agents`): todo lists, goals, plan mode and schedules.
    &[
        Change::Table(Table {
            name: "todos",
            columns: &[
                col("owner", Text).not_null(),
                col("list", Text).not_null(),
                col("items", Text).not_null(),
                col("updated_ms", Int).not_null(),
            ],
            primary_key: &["owner", "list"],
        }),
        Change::Table(Table {
            name: "goals",
            columns: &[
                col("owner", Text).not_null(),
                col("name", Text).not_null(),
                col("objective", Text).not_null(),
                col("criteria", Text).not_null(),
                col("status", Text).not_null(),
                col("note", Text),
                col("updated_ms", Int).not_null(),
            ],
            primary_key: &["owner", "name"],
        }),
        Change::Table(Table {
            name: "plan_modes",
            columns: &[
                col("owner", Text),
                col("state", Text).not_null(),
                col("mode", Text),
                col("plan", Text),
                col("updated_ms", Int).not_null(),
            ],
            primary_key: &["owner"],
        }),
        Change::Table(Table {
            name: "schedules",
            columns: &[
                col("id", Text),
                col("owner", Text).not_null(),
                col("name", Text).not_null(),
                col("spec", Text).not_null(),
                col("next_ms", Int),
                col("runs", Int).not_null().default("0"),
                col("last_ms", Int),
                col("last_job", Text),
                col("last_outcome", Text),
                col("created_ms", Int).not_null(),
            ],
            primary_key: &["id"],
        }),
        Change::Index(Index::new("schedules_due", "schedules", &["next_ms"])),
        Change::Index(Index::new("schedules_owner", "schedules", &["owner"])),
    ],
    // A plugin paused by a person (`toolshed plugins pause`); what a tool noted about its
    // call on the audit row.
    &[
        add("plugin_state", col("paused", Int).not_null().default("0")),
        add("audit", col("note", Text)),
    ],
];

/// Tables only a database that several toolsheds share has, outside [`MIGRATIONS`] (the
/// SQLite file is never shared): the archives of installed plugins, which the others
/// install from (`crate::install`'s replication). A shared engine's versions place them.
#[cfg(feature = "postgres")]
pub(crate) const SHARED_ONLY: Migration = &[Change::Table(Table {
    name: "plugin_archives",
    columns: &[
        col("plugin_id", Text),
        col("tree_sha256", Text).not_null(),
        col("archive", Bytes),
        col("updated_ms", Int).not_null(),
    ],
    primary_key: &["plugin_id"],
})];

/// How one engine writes the schema down. The statements are those every engine shares
/// (`CREATE TABLE`, `ALTER TABLE ... ADD COLUMN`, `CREATE INDEX`); an engine says its
/// types, its reserved words and its [`Native`] pieces, and overrides a statement only
/// where its syntax differs.
pub(crate) trait Render {
    /// The type `ty` is declared as.
    fn ty(&self, ty: Ty) -> &'static str;

    /// The constraint a table's sole key column of type `ty` carries.
    fn sole_key(&self, _ty: Ty) -> &'static str {
        "PRIMARY KEY"
    }

    /// Whether `word` (lowercase) must be quoted to name a table, column or index.
    fn reserved(&self, word: &str) -> bool;

    /// The statements of `native`, `;`-separated, without the last `;`.
    fn native(&self, native: Native) -> &'static str;

    /// `name` as an identifier: double-quoted if it is a reserved word.
    fn ident(&self, name: &'static str) -> Cow<'static, str> {
        if self.reserved(&name.to_ascii_lowercase()) {
            Cow::Owned(format!("\"{name}\""))
        } else {
            Cow::Borrowed(name)
        }
    }

    /// A column's definition; `sole_key` if it is its table's one-column primary key.
    fn column(&self, column: &Column, sole_key: bool) -> String {
        let mut out = format!("{} {}", self.ident(column.name), self.ty(column.ty));
        if sole_key {
            out.push(' ');
            out.push_str(self.sole_key(column.ty));
        }
        if column.not_null {
            out.push_str(" NOT NULL");
        }
        if column.unique {
            out.push_str(" UNIQUE");
        }
        if let Some(default) = column.default {
            out.push_str(" DEFAULT ");
            out.push_str(default);
        }
        out
    }

    /// A comma-separated list of identifiers.
    fn idents(&self, names: &[&'static str]) -> String {
        let names: Vec<_> = names.iter().map(|n| self.ident(n)).collect();
        names.join(", ")
    }

    /// `CREATE TABLE`.
    fn table(&self, table: &Table) -> String {
        let sole = match table.primary_key {
            [one] => Some(*one),
            _ => None,
        };
        let mut lines: Vec<String> = table
            .columns
            .iter()
            .map(|c| self.column(c, sole == Some(c.name)))
            .collect();
        if sole.is_none() && !table.primary_key.is_empty() {
            lines.push(format!("PRIMARY KEY ({})", self.idents(table.primary_key)));
        }
        format!(
            "CREATE TABLE {} (\n    {}\n)",
            self.ident(table.name),
            lines.join(",\n    ")
        )
    }

    /// `ALTER TABLE ... ADD COLUMN`.
    fn add_column(&self, table: &'static str, column: &Column) -> String {
        format!(
            "ALTER TABLE {} ADD COLUMN {}",
            self.ident(table),
            self.column(column, false)
        )
    }

    /// `CREATE INDEX`.
    fn index(&self, index: &Index) -> String {
        let mut out = format!(
            "CREATE {}INDEX {} ON {} ({})",
            if index.unique { "UNIQUE " } else { "" },
            self.ident(index.name),
            self.ident(index.table),
            self.idents(index.columns)
        );
        if let Some(condition) = index.where_ {
            out.push_str(" WHERE ");
            out.push_str(condition);
        }
        out
    }

    /// One change's statements, without the last `;`.
    fn change(&self, change: &Change) -> String {
        match change {
            Change::Table(table) => self.table(table),
            Change::AddColumn { table, column } => self.add_column(table, column),
            Change::Index(index) => self.index(index),
            Change::Native(native) => self.native(*native).trim().to_string(),
        }
    }

    /// The changes as one batch of statements, in order.
    fn render<'a>(&self, changes: impl IntoIterator<Item = &'a Change>) -> String {
        let mut out = String::new();
        for change in changes {
            out.push_str(&self.change(change));
            out.push_str(";\n");
        }
        out
    }
}

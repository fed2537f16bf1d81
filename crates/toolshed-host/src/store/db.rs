//! The SQL the state store's code speaks, whichever engine runs it: statements with
//! numbered parameters (`?1`, `?2`, …), values as [`SqlValue`], rows as [`Row`]. The
//! embedded SQLite engine runs them as written; the Postgres engine
//! ([`super::postgres`]) numbers the parameters its way (`$1`). Where the dialects differ
//! (a pattern match, pruning a table), the code asks [`Db::dialect`].

use rusqlite::Connection;

use super::StoreError;

/// Which engine a [`Db`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// The embedded SQLite file.
    Sqlite,
    /// A Postgres server.
    Postgres,
}

/// A value going into or coming out of a statement. Integers are 64-bit, booleans are
/// integers (0 or 1) in both engines, text is UTF-8, blobs are bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlValue {
    /// `NULL`.
    Null,
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<u64> for SqlValue {
    fn from(v: u64) -> Self {
        Self::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<usize> for SqlValue {
    fn from(v: usize) -> Self {
        Self::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<bool> for SqlValue {
    fn from(v: bool) -> Self {
        Self::Int(i64::from(v))
    }
}

impl From<f64> for SqlValue {
    fn from(v: f64) -> Self {
        Self::Real(v)
    }
}

impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        Self::Text(v.to_string())
    }
}

impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

impl From<&String> for SqlValue {
    fn from(v: &String) -> Self {
        Self::Text(v.clone())
    }
}

impl From<&[u8]> for SqlValue {
    fn from(v: &[u8]) -> Self {
        Self::Blob(v.to_vec())
    }
}

impl From<Vec<u8>> for SqlValue {
    fn from(v: Vec<u8>) -> Self {
        Self::Blob(v)
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

impl<T: Clone + Into<SqlValue>> From<&Option<T>> for SqlValue {
    fn from(v: &Option<T>) -> Self {
        v.clone().map_or(Self::Null, Into::into)
    }
}

/// The parameters of a statement: `args![a, b]` is `&[SqlValue::from(a), SqlValue::from(b)]`.
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        &[$($crate::store::db::SqlValue::from($value)),*][..]
    };
}
pub(crate) use args;

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<SqlValue>);

impl Row {
    fn at(&self, i: usize) -> Result<&SqlValue, StoreError> {
        self.0
            .get(i)
            .ok_or_else(|| StoreError::Db(format!("a result row has no column {i}")))
    }

    fn wrong(&self, i: usize, want: &str) -> StoreError {
        StoreError::Db(format!(
            "column {i} of a result row is {:?}, not {want}",
            self.0.get(i)
        ))
    }

    /// An integer column.
    pub(crate) fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_int(i)?.ok_or_else(|| self.wrong(i, "an integer"))
    }

    /// An integer column that may be `NULL`.
    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.at(i)? {
            SqlValue::Null => Ok(None),
            SqlValue::Int(v) => Ok(Some(*v)),
            _ => Err(self.wrong(i, "an integer")),
        }
    }

    /// A boolean column (an integer, 0 is false).
    pub(crate) fn bool(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.int(i)? != 0)
    }

    /// A floating-point column (an integer is taken too).
    pub(crate) fn real(&self, i: usize) -> Result<f64, StoreError> {
        match self.at(i)? {
            SqlValue::Real(v) => Ok(*v),
            SqlValue::Int(v) => Ok(*v as f64),
            _ => Err(self.wrong(i, "a number")),
        }
    }

    /// A text column.
    pub(crate) fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?.ok_or_else(|| self.wrong(i, "text"))
    }

    /// A text column that may be `NULL`.
    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.at(i)? {
            SqlValue::Null => Ok(None),
            SqlValue::Text(v) => Ok(Some(v.clone())),
            _ => Err(self.wrong(i, "text")),
        }
    }

    /// A blob column that may be `NULL`.
    pub(crate) fn opt_blob(&self, i: usize) -> Result<Option<Vec<u8>>, StoreError> {
        match self.at(i)? {
            SqlValue::Null => Ok(None),
            SqlValue::Blob(v) => Ok(Some(v.clone())),
            _ => Err(self.wrong(i, "bytes")),
        }
    }
}

/// A connection, or a transaction on one, of either engine.
pub(crate) trait Db {
    /// Which engine this is.
    fn dialect(&self) -> Dialect;

    /// Runs a statement; returns how many rows it changed.
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError>;

    /// Runs a query; returns every row.
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError>;

    /// Runs a query; returns its first row, if any.
    fn query_opt(&mut self, sql: &str, params: &[SqlValue]) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Runs a query that returns one row.
    fn query_one(&mut self, sql: &str, params: &[SqlValue]) -> Result<Row, StoreError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::Db("a query that returns a row returned none".into()))
    }
}

/// The SQLite engine's [`Db`]: a connection or a transaction (which derefs to one).
pub(crate) struct SqliteDb<'a>(pub &'a Connection);

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Self::Null => ValueRef::Null,
            Self::Int(v) => ValueRef::Integer(*v),
            Self::Real(v) => ValueRef::Real(*v),
            Self::Text(v) => ValueRef::Text(v.as_bytes()),
            Self::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

impl Db for SqliteDb<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        let mut stmt = self.0.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        use rusqlite::types::ValueRef;
        let mut stmt = self.0.prepare_cached(sql)?;
        let columns = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match row.get_ref(i)? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(v) => SqlValue::Int(v),
                    ValueRef::Real(v) => SqlValue::Real(v),
                    ValueRef::Text(v) => SqlValue::Text(String::from_utf8_lossy(v).into_owned()),
                    ValueRef::Blob(v) => SqlValue::Blob(v.to_vec()),
                });
            }
            out.push(Row(values));
        }
        Ok(out)
    }
}

/// Keys of [`serialize`]: what must not interleave across toolsheds sharing a database.
pub(crate) mod locks {
    /// Memory writes (the per-owner byte count, today's journal).
    pub(crate) const MEMORY: i64 = 0x7473_0001;
    /// Token creation (the count limit).
    pub(crate) const TOKENS: i64 = 0x7473_0002;
    /// Approval requests (the pending limit).
    pub(crate) const APPROVALS: i64 = 0x7473_0003;
}

/// Makes the transaction `db` is in wait for, then exclude, every other transaction that
/// takes `key`, in any process: a read-then-write (a count checked before an insert, a text
/// read and extended) is then not raced by another server on the same database. Postgres
/// takes a transaction-level advisory lock; SQLite needs nothing, its write transactions
/// run one at a time already.
pub(crate) fn serialize(db: &mut dyn Db, key: i64) -> Result<(), StoreError> {
    if db.dialect() == Dialect::Postgres {
        db.query(
            "SELECT CAST(pg_advisory_xact_lock(?1) AS TEXT)",
            &[SqlValue::Int(key)],
        )?;
    }
    Ok(())
}

/// A `GLOB` pattern (`*`, `?`) as a `LIKE` pattern with `\` as its escape, for an engine
/// without `GLOB`. Character classes (`[abc]`) are matched literally.
pub(crate) fn glob_to_like(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len() + 4);
    for c in glob.chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `column GLOB ?n` in this dialect, for a parameter made with [`glob_param`].
pub(crate) fn glob_match(dialect: Dialect, column: &str, param: usize) -> String {
    match dialect {
        Dialect::Sqlite => format!("{column} GLOB ?{param}"),
        Dialect::Postgres => format!("{column} LIKE ?{param} ESCAPE '\\'"),
    }
}

/// The parameter of a [`glob_match`]: the pattern as the dialect matches it.
pub(crate) fn glob_param(dialect: Dialect, glob: Option<&str>) -> SqlValue {
    match (dialect, glob) {
        (_, None) => SqlValue::Null,
        (Dialect::Sqlite, Some(g)) => SqlValue::Text(g.to_string()),
        (Dialect::Postgres, Some(g)) => SqlValue::Text(glob_to_like(g)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_like_patterns() {
        assert_eq!(glob_to_like("web_*"), "web\\_%");
        assert_eq!(glob_to_like("a?c%"), "a_c\\%");
    }

    #[test]
    fn sqlite_rows_come_back_typed() {
        let conn = Connection::open_in_memory().unwrap();
        let mut db = SqliteDb(&conn);
        db.execute("CREATE TABLE t (i INTEGER, s TEXT, b BLOB)", args![])
            .unwrap();
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3)",
            args![7i64, "x", vec![1u8, 2]],
        )
        .unwrap();
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3)",
            args![None::<i64>, None::<String>, None::<Vec<u8>>],
        )
        .unwrap();
        let rows = db
            .query("SELECT i, s, b FROM t ORDER BY i", args![])
            .unwrap();
        assert_eq!(rows[0].opt_int(0).unwrap(), None);
        assert_eq!(rows[1].int(0).unwrap(), 7);
        assert_eq!(rows[1].text(1).unwrap(), "x");
        assert_eq!(rows[1].opt_blob(2).unwrap(), Some(vec![1, 2]));
        assert!(rows[1].text(0).is_err());
    }
}

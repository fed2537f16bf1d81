//! The audit log: what the pipeline recorded of every call, and how it is read
//! (`toolshed audit`, `GET /api/v1/audit`). Rows are written by the store's own writer
//! thread, in batches; see the store's `audit_writer`.

use crate::kit::parse_since;
use crate::store::{AuditRecord, StateStore, StoreError};

/// What to read of the audit log (`toolshed audit`, `GET /api/v1/audit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only calls of tools matching this glob (`workspace_*`; a plain name matches itself).
    pub tool: Option<String>,
    /// Only calls of owners matching this glob (`alice`, `alice/*`).
    pub owner: Option<String>,
    /// Only calls started at or after this time (milliseconds since the Unix epoch).
    pub since_ms: Option<i64>,
    /// Only this outcome: `ok`, `tool_error` or `error`.
    pub outcome: Option<String>,
    /// Only the calls made on behalf of this call (its `run_code` snippet's, its plugin's).
    pub parent: Option<String>,
    /// Only rows older than this row id: the cursor a previous page returned.
    pub before: Option<i64>,
    /// The most rows on the page.
    pub limit: usize,
}

/// The most rows one page of the audit log holds.
pub const MAX_AUDIT_PAGE: usize = 1000;

/// The longest call id a `parent` filter takes.
pub(crate) const MAX_CALL_ID_LEN: usize = 64;

/// The outcomes an audit row may have.
pub const OUTCOMES: [&str; 3] = ["ok", "tool_error", "error"];

/// One audit row with its id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditRow {
    /// The row id: rows are numbered in the order they were written.
    pub id: i64,
    /// The row.
    #[serde(flatten)]
    pub record: AuditRecord,
}

/// A page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditPage {
    /// The rows.
    pub rows: Vec<AuditRow>,
    /// Pass as the cursor to read the next (older) page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// A value of an audit query a person or client gave that cannot be used, with what to
/// give instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditQueryError {
    /// The page size is out of range.
    #[error("limit {0} is out of range: give 1 to {MAX_AUDIT_PAGE}")]
    Limit(usize),
    /// Not one of [`OUTCOMES`].
    #[error("outcome `{0}` is not one of {outcomes}", outcomes = OUTCOMES.join(", "))]
    Outcome(String),
    /// Not a call id.
    #[error(
        "parent `{shown}` is not a call id ({len} bytes; call ids are 1 to {MAX_CALL_ID_LEN}): pass the `call_id` of an audit row"
    )]
    Parent {
        /// Its first 40 characters.
        shown: String,
        /// Its length in bytes.
        len: usize,
    },
    /// Not a cursor this log gave.
    #[error("cursor `{0}` is not one this log gave: pass the `next_cursor` of the previous page")]
    Cursor(String),
    /// Not a time.
    #[error(transparent)]
    Since(#[from] crate::NotATime),
}

impl AuditQuery {
    /// Checks the limit, outcome and cursor as a person or client gave them, naming the
    /// value and what to give instead.
    pub fn checked(
        mut self,
        cursor: Option<&str>,
        since: Option<&str>,
        now_ms: i64,
    ) -> Result<Self, AuditQueryError> {
        if !(1..=MAX_AUDIT_PAGE).contains(&self.limit) {
            return Err(AuditQueryError::Limit(self.limit));
        }
        if let Some(outcome) = &self.outcome
            && !OUTCOMES.contains(&outcome.as_str())
        {
            return Err(AuditQueryError::Outcome(outcome.clone()));
        }
        if let Some(parent) = &self.parent
            && (parent.is_empty() || parent.len() > MAX_CALL_ID_LEN)
        {
            return Err(AuditQueryError::Parent {
                shown: parent.chars().take(40).collect(),
                len: parent.len(),
            });
        }
        if let Some(cursor) = cursor {
            self.before = Some(
                cursor
                    .parse::<i64>()
                    .ok()
                    .filter(|id| *id > 0)
                    .ok_or_else(|| AuditQueryError::Cursor(cursor.to_string()))?,
            );
        }
        if let Some(since) = since {
            self.since_ms = Some(parse_since(since, now_ms)?);
        }
        Ok(self)
    }
}

impl StateStore {
    /// The newest audit rows, newest first, queued rows included.
    pub fn recent_audit(&self, limit: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let query = AuditQuery {
            limit,
            ..Default::default()
        };
        Ok(self
            .audit_page(&query)?
            .rows
            .into_iter()
            .map(|row| row.record)
            .collect())
    }

    /// One page of the audit log, newest first, queued rows included: the rows `query`
    /// selects, and the cursor of the next (older) page when there are more.
    pub fn audit_page(&self, query: &AuditQuery) -> Result<AuditPage, StoreError> {
        self.flush_audit();
        self.db(|db| {
            let dialect = db.dialect();
            let sql = format!(
                "SELECT id, ts_ms, call_id, owner, door, tool, plugin, args_sha256, outcome,
                 error_kind, duration_ms, approval, parent, note FROM audit
                 WHERE (CAST(?1 AS TEXT) IS NULL OR {}) AND (CAST(?2 AS TEXT) IS NULL OR {})
                   AND (CAST(?3 AS BIGINT) IS NULL OR ts_ms >= ?3)
                   AND (CAST(?4 AS BIGINT) IS NULL OR id < ?4)
                   AND (CAST(?5 AS TEXT) IS NULL OR outcome = ?5)
                   AND (CAST(?7 AS TEXT) IS NULL OR parent = ?7)
                 ORDER BY id DESC LIMIT ?6",
                crate::store::db::glob_match(dialect, "tool", 1),
                crate::store::db::glob_match(dialect, "owner", 2),
            );
            let mut rows = db
                .query(
                    &sql,
                    &[
                        crate::store::db::glob_param(dialect, query.tool.as_deref()),
                        crate::store::db::glob_param(dialect, query.owner.as_deref()),
                        query.since_ms.into(),
                        query.before.into(),
                        query.outcome.as_deref().into(),
                        query.limit.saturating_add(1).into(),
                        query.parent.as_deref().into(),
                    ],
                )?
                .iter()
                .map(|r| {
                    Ok(AuditRow {
                        id: r.int(0)?,
                        record: AuditRecord {
                            ts_ms: r.int(1)?,
                            call_id: r.text(2)?,
                            owner: r.text(3)?,
                            door: r.text(4)?,
                            tool: r.text(5)?,
                            plugin: r.opt_text(6)?,
                            args_sha256: r.text(7)?,
                            outcome: r.text(8)?,
                            error_kind: r.opt_text(9)?,
                            duration_ms: r.int(10)?,
                            approval: r.opt_text(11)?,
                            parent: r.opt_text(12)?,
                            note: r.opt_text(13)?,
                        },
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let more = rows.len() > query.limit;
            rows.truncate(query.limit);
            let next_cursor = more
                .then(|| rows.last().map(|row| row.id.to_string()))
                .flatten();
            Ok(AuditPage { rows, next_cursor })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_filter_must_look_like_a_call_id() {
        let query = |parent: &str| AuditQuery {
            parent: Some(parent.to_string()),
            limit: 10,
            ..Default::default()
        };
        assert!(query("661a45f8513b3-1").checked(None, None, 0).is_ok());
        let long = "0".repeat(MAX_CALL_ID_LEN + 1);
        let err = query(&long).checked(None, None, 0).unwrap_err().to_string();
        assert!(
            err.contains("is not a call id") && err.contains("call_id"),
            "{err}"
        );
        assert!(query("").checked(None, None, 0).is_err());
    }
}

//! The read ledger: the digest of each file as an owner last saw it (read or wrote it), so
//! that an edit of a file changed since is refused (see `toolshed_ops::ReadLog`); at most
//! `MAX_READ_LOG_ROWS` rows, the oldest removed first.

use super::db::args;
use super::{MAX_READ_LOG_ROWS, StateStore, StoreError, now_ms};

impl StateStore {
    /// The digest `owner` last saw of `path` (see `toolshed_ops::ReadLog`).
    pub fn read_log_get(&self, owner: &str, path: &str) -> Result<Option<[u8; 32]>, StoreError> {
        self.db(|db| {
            let blob = match db.query_opt(
                "SELECT sha256 FROM read_log WHERE owner = ?1 AND path = ?2",
                args![owner, path],
            )? {
                Some(row) => row.opt_blob(0)?,
                None => None,
            };
            Ok(blob.and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok()))
        })
    }

    /// Records the digest `owner` has seen of `path`, keeping the log bounded.
    pub fn read_log_put(
        &self,
        owner: &str,
        path: &str,
        digest: &[u8; 32],
    ) -> Result<(), StoreError> {
        let prune = self
            .read_log_puts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % 512
            == 511;
        self.db(|db| {
            db.execute(
                "INSERT INTO read_log (owner, path, sha256, ts_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (owner, path) DO UPDATE SET sha256 = excluded.sha256, ts_ms = excluded.ts_ms",
                args![owner, path, digest.as_slice(), now_ms()],
            )?;
            if prune {
                // Every 512 records, the oldest past the limit go.
                db.execute(
                    "DELETE FROM read_log WHERE ts_ms < (SELECT ts_ms FROM read_log
                       ORDER BY ts_ms DESC LIMIT 1 OFFSET ?1)",
                    args![MAX_READ_LOG_ROWS],
                )?;
            }
            Ok(())
        })
    }
}

//! Checking edits against what the caller has read (see `toolshed_ops::ReadLog`).

use sha2::{Digest as _, Sha256};
use toolshed_core::{OwnerId, ToolError};
use toolshed_ops::{Digest, ReadLog};

/// The SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> Digest {
    Sha256::digest(bytes).into()
}

/// Records that `owner` has seen `content` of the file at `real_path`.
pub fn record(log: &dyn ReadLog, owner: &OwnerId, real_path: &str, content: &[u8]) {
    log.record(&owner.0, real_path, digest(content));
}

/// Checks that `owner` has read exactly `current` of the file at `real_path`.
pub fn check(
    log: &dyn ReadLog,
    owner: &OwnerId,
    real_path: &str,
    shown: &str,
    current: &[u8],
) -> Result<(), ToolError> {
    match log.seen(&owner.0, real_path) {
        None => Err(ToolError::Conflict(format!(
            "`{shown}` exists and has not been read in this session; read it with workspace_read first, then retry"
        ))),
        Some(seen) if seen != digest(current) => Err(ToolError::Conflict(format!(
            "`{shown}` has changed since you last read it; read it again with workspace_read, then retry"
        ))),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolshed_ops::MemoryReadLog;

    #[test]
    fn unread_changed_and_current_versions() {
        let log = MemoryReadLog::default();
        let me = OwnerId::new("me");
        let other = OwnerId::new("other");
        assert!(
            check(&log, &me, "a", "a", b"1")
                .unwrap_err()
                .to_string()
                .contains("has not been read")
        );
        record(&log, &me, "a", b"1");
        assert!(check(&log, &me, "a", "a", b"1").is_ok());
        assert!(check(&log, &other, "a", "a", b"1").is_err());
        assert!(
            check(&log, &me, "a", "a", b"2")
                .unwrap_err()
                .to_string()
                .contains("has changed")
        );
    }
}

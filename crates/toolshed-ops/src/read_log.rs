//! Read before edit: which version of which file each owner has read.
//!
//! An agent that edits a file it has not read — or read an older version of — is working
//! from a guess. A [`ReadLog`] remembers, per owner and resolved path, the SHA-256 of the
//! content the owner last read (or wrote itself); edits check it first. The host keeps it
//! in its state store so that it outlives one process (a CLI user reads in one run and edits
//! in the next); [`MemoryReadLog`] is the in-process version.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// A content digest (SHA-256).
pub type Digest = [u8; 32];

/// What each owner has read.
pub trait ReadLog: Send + Sync {
    /// The digest `owner` last saw of the file at `real_path`.
    fn seen(&self, owner: &str, real_path: &str) -> Option<Digest>;

    /// Records that `owner` has seen `digest` of the file at `real_path`. May block (the
    /// host's log writes to its state store).
    fn record(&self, owner: &str, real_path: &str, digest: Digest);

    /// Whether recording `digest` would change nothing, answered at once without blocking
    /// (from memory); `false` when it cannot tell.
    fn known(&self, owner: &str, real_path: &str, digest: &Digest) -> bool {
        let _ = (owner, real_path, digest);
        false
    }
}

/// The most (owner, file) pairs [`MemoryReadLog`] remembers; the oldest go first.
pub const MAX_MEMORY_ENTRIES: usize = 20_000;

type Key = (String, String);

/// An in-process, bounded [`ReadLog`].
#[derive(Debug, Default)]
pub struct MemoryReadLog {
    inner: Mutex<(HashMap<Key, Digest>, VecDeque<Key>)>,
}

impl ReadLog for MemoryReadLog {
    fn seen(&self, owner: &str, real_path: &str) -> Option<Digest> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner
            .0
            .get(&(owner.to_string(), real_path.to_string()))
            .copied()
    }

    fn known(&self, owner: &str, real_path: &str, digest: &Digest) -> bool {
        self.seen(owner, real_path).as_ref() == Some(digest)
    }

    fn record(&self, owner: &str, real_path: &str, digest: Digest) {
        let key = (owner.to_string(), real_path.to_string());
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *inner;
        if map.insert(key.clone(), digest).is_none() {
            order.push_back(key);
            while order.len() > MAX_MEMORY_ENTRIES {
                if let Some(old) = order.pop_front() {
                    map.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_per_owner_and_is_bounded() {
        let log = MemoryReadLog::default();
        log.record("me", "a", [1; 32]);
        assert_eq!(log.seen("me", "a"), Some([1; 32]));
        assert_eq!(log.seen("you", "a"), None);
        for i in 0..MAX_MEMORY_ENTRIES {
            log.record("me", &i.to_string(), [0; 32]);
        }
        assert_eq!(log.seen("me", "a"), None);
        assert_eq!(log.inner.lock().unwrap().0.len(), MAX_MEMORY_ENTRIES);
    }
}

//! What this process has dealt with of a shared table's rows: for each key, the digest it
//! last acted on, or that it saw the row's tombstone. Kept by the store, used by the
//! features that share rows between toolsheds (installs: `crate::install`).

use std::collections::HashMap;
use std::sync::Mutex;

/// For each key (a plugin id), the digest last put in place or seen here (empty: gone).
#[derive(Debug, Default)]
pub(crate) struct Seen(Mutex<HashMap<String, String>>);

impl Seen {
    pub(crate) fn remember(&self, id: &str, digest: &str) {
        self.lock().insert(id.to_string(), digest.to_string());
    }

    pub(crate) fn forget(&self, id: &str) {
        self.lock().insert(id.to_string(), String::new());
    }

    pub(crate) fn mark(&self, id: &str, digest: &str, gone: bool) {
        let value = if gone {
            String::new()
        } else {
            digest.to_string()
        };
        self.lock().insert(id.to_string(), value);
    }

    /// Whether the row was dealt with already.
    pub(crate) fn is(&self, id: &str, digest: &str, gone: bool) -> bool {
        self.lock().get(id).is_some_and(|seen| {
            if gone {
                seen.is_empty()
            } else {
                seen == digest
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

//! `[store]`: the store's own section of the configuration.

use serde::{Deserialize, Serialize};

/// `[store]`: where toolshed keeps its state (docs/deploy.md).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoreConfig {
    /// A `postgres://user:password@host:port/database` URL: plugin state and config,
    /// tokens, approvals, jobs, audit and events go there, shared by every toolshed that
    /// names it. Unset: all of it is in `toolshed.db` in the data dir.
    pub url: Option<String>,
    /// The most connections to Postgres one toolshed opens.
    pub max_connections: usize,
    /// With Postgres: how long an agent token read from the database is trusted without
    /// reading it again, in seconds (revocations are pushed to every toolshed at once, and
    /// forget it sooner); 0 reads it on every request.
    pub token_cache_secs: u64,
}

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig")
            .field("url", &self.url.as_ref().map(|_| "(set)"))
            .field("max_connections", &self.max_connections)
            .field("token_cache_secs", &self.token_cache_secs)
            .finish()
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: None,
            max_connections: 8,
            token_cache_secs: 60,
        }
    }
}

//! The agent tokens a toolshed on a shared database authenticated lately, so that a request
//! does not cost a round trip to Postgres for its token. A revocation is pushed to every
//! toolshed sharing the database (`NOTIFY toolshed_tokens`), which forgets that token at
//! once; the whole cache is dropped whenever the listening connection (re)starts, since what
//! was said while it was down went unheard; and an entry is read again from the database
//! after `[store] token_cache_secs` whatever happened. On the SQLite file (one machine,
//! no round trip) nothing is cached.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::identity::TokenRecord;

/// The most tokens remembered; past it the cache starts over.
const MAX_CACHED: usize = 10_000;

/// A token as last read, with its secret's digest.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub(crate) record: TokenRecord,
    pub(crate) hash: String,
}

/// Token id → what was read, and when.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    entries: Mutex<HashMap<String, (Cached, Instant)>>,
    /// How long an entry is trusted; zero: the cache is off.
    ttl: Mutex<Duration>,
}

impl TokenCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Cached, Instant)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn ttl(&self) -> Duration {
        *self.ttl.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Turns the cache on, entries trusted for `ttl` (zero keeps it off).
    pub(crate) fn enable(&self, ttl: Duration) {
        *self.ttl.lock().unwrap_or_else(|p| p.into_inner()) = ttl;
    }

    /// Token `id` as read less than the TTL ago.
    pub(crate) fn get(&self, id: &str) -> Option<Cached> {
        let ttl = self.ttl();
        if ttl.is_zero() {
            return None;
        }
        let entries = self.lock();
        let (cached, at) = entries.get(id)?;
        (at.elapsed() < ttl).then(|| cached.clone())
    }

    /// Remembers token `id` as just read.
    pub(crate) fn put(&self, id: &str, cached: Cached) {
        if self.ttl().is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= MAX_CACHED && !entries.contains_key(id) {
            entries.clear();
        }
        entries.insert(id.to_string(), (cached, Instant::now()));
    }

    /// Forgets token `id` (revoked here or by another toolshed).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Forgets every token (the revocations of a while may have gone unheard).
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

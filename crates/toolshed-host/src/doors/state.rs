//! The state database as a door reports ([`StateInfo`]), reads ([`Audit`]) and appends to
//! it ([`EventJournal`]).

use std::path::Path;

use super::{Held, owned};
use crate::audit::{AuditPage, AuditQuery};
use crate::job_store::StoredEvent;
use crate::store::{StateStore, StoreError};

/// Where the state database is and which schema it has, for `toolshed doctor`. Made by
/// [`Host::state_info`](crate::Host::state_info).
#[derive(Clone)]
pub struct StateInfo<'h> {
    store: Held<'h, StateStore>,
}

impl<'h> StateInfo<'h> {
    pub(super) fn new(store: Held<'h, StateStore>) -> Self {
        Self { store }
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// The schema version.
    pub fn schema_version(&self) -> Result<usize, StoreError> {
        self.store.schema_version()
    }
}

/// The audit log as a door pages through it. Made by [`Host::audit`](crate::Host::audit).
#[derive(Clone)]
pub struct Audit<'h> {
    store: Held<'h, StateStore>,
}

impl<'h> Audit<'h> {
    pub(super) fn new(store: Held<'h, StateStore>) -> Self {
        Self { store }
    }

    /// The same service, owning what it holds: for a blocking task that outlives the
    /// host's borrow.
    pub fn detached(&self) -> Audit<'static> {
        Audit {
            store: owned(&self.store),
        }
    }

    /// One page of the audit log, newest first, rows not yet written included: the rows
    /// `query` selects, and the cursor of the next (older) page when there are more.
    pub fn page(&self, query: &AuditQuery) -> Result<AuditPage, StoreError> {
        self.store.audit_page(query)
    }

    /// The calls from `since_ms` to `now_ms` summed up in buckets of `bucket_ms`
    /// ([`StateStore::audit_stats`]): for pictures.
    pub fn stats(
        &self,
        since_ms: i64,
        now_ms: i64,
        bucket_ms: i64,
    ) -> Result<crate::AuditStats, StoreError> {
        self.store.audit_stats(since_ms, now_ms, bucket_ms)
    }
}

/// The events a door's event streams resume from across a restart, and the sequences
/// their ids come from; shared by every toolshed on a shared database. Made by
/// [`Host::event_journal`](crate::Host::event_journal).
#[derive(Clone)]
pub struct EventJournal<'h> {
    store: Held<'h, StateStore>,
}

impl<'h> EventJournal<'h> {
    pub(super) fn new(store: Held<'h, StateStore>) -> Self {
        Self { store }
    }

    /// The same service, owning what it holds: for a task that outlives the host's borrow.
    pub fn detached(&self) -> EventJournal<'static> {
        EventJournal {
            store: owned(&self.store),
        }
    }

    /// Whether other toolsheds share the database (and so the journal).
    pub fn is_shared(&self) -> bool {
        self.store.is_shared()
    }

    /// Reserves the next `block` numbers of the sequence `name`: returns the first. The
    /// numbers start at 1 and only ever increase, whoever reserves them.
    pub fn reserve_sequence(&self, name: &str, block: u64) -> Result<u64, StoreError> {
        self.store.reserve_sequence(name, block)
    }

    /// Keeps an event for streams that resume after a restart; the oldest beyond
    /// [`MAX_STORED_EVENTS`](crate::job_store::MAX_STORED_EVENTS) are removed.
    pub fn append(&self, event: &StoredEvent) -> Result<(), StoreError> {
        self.store.append_event(event)
    }

    /// Keeps `events` in one transaction (a batch from a queue); the oldest beyond
    /// [`MAX_STORED_EVENTS`](crate::job_store::MAX_STORED_EVENTS) are removed.
    pub fn append_many(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        self.store.append_events(events)
    }

    /// Stored event `id`, if it is kept.
    pub fn get(&self, id: u64) -> Result<Option<StoredEvent>, StoreError> {
        self.store.stored_event(id)
    }

    /// The latest `limit` stored events, oldest first.
    pub fn recent(&self, limit: usize) -> Result<Vec<StoredEvent>, StoreError> {
        self.store.recent_events(limit)
    }

    /// The ids of the events other toolsheds sharing the database append from now on
    /// (nothing on the embedded engine); a receiver that falls behind is told how many it
    /// missed.
    pub fn appended_elsewhere(&self) -> tokio::sync::broadcast::Receiver<u64> {
        self.store.other_events()
    }
}

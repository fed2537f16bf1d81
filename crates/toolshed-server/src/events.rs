//! The live event log of the REST API: job and plugin events with increasing ids, the most
//! recent kept so a reconnecting client resumes from its last event id, and a broadcast
//! channel for the live tail.
//!
//! Ids only ever increase, across restarts and across servers sharing a data dir: they are
//! handed out from blocks reserved in the state store. Each event is also stored (the
//! latest [`toolshed_host::job_store::MAX_STORED_EVENTS`]), and a server starts holding the
//! latest of them, so a client resumes across a restart; one resuming from an id no longer
//! held is told `events.missed` and refetches state, instead of silently skipping events.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use toolshed_host::EventJournal;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// How many events are kept for resuming.
pub(crate) const RETAINED_EVENTS: usize = 1000;

/// One event as clients see it: on the event streams, each event's data.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "Event")]
pub(crate) struct ApiEvent {
    /// Increasing; never reused, also across restarts.
    pub id: u64,
    /// `job.started`, `job.progress`, `job.finished`, `job.failed`, `job.cancelled`,
    /// `plugin.state_changed`, `approval.requested`, `approval.resolved`, or
    /// `plugin.<id>.<type>` for an event a plugin published.
    #[serde(rename = "type")]
    pub kind: String,
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The job, for job events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The owner of the job, for job events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The event's own fields.
    pub data: Value,
}

/// Which events a subscriber wants.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Only this job's events.
    pub job: Option<String>,
    /// Only this owner's events (and its sub-owners'); events of no owner always pass.
    pub owner: Option<String>,
}

impl Filter {
    /// Whether `event` passes.
    pub(crate) fn accepts(&self, event: &ApiEvent) -> bool {
        if let Some(job) = &self.job
            && event.job_id.as_ref() != Some(job)
        {
            return false;
        }
        // An owner's subscriber sees that owner's events (and its sub-owners'), and those
        // that are no one's (plugin state).
        if let Some(owner) = &self.owner
            && let Some(of) = &event.owner
            && !toolshed_core::OwnerId::new(owner.as_str()).covers(of)
        {
            return false;
        }
        true
    }
}

/// How many event ids one reservation in the state store covers.
pub(crate) const ID_BLOCK: u64 = 10_000;

/// The ids this log hands out.
#[derive(Debug)]
struct Ids {
    /// The last id handed out (`first - 1` before any).
    last: u64,
    /// The first id of this log's life: a resume point before it is from another life.
    first: u64,
    /// The end (exclusive) of the reserved block.
    end: u64,
}

/// The log.
pub(crate) struct EventLog {
    retained: Mutex<(Ids, VecDeque<ApiEvent>)>,
    live: broadcast::Sender<ApiEvent>,
    journal: Option<EventJournal<'static>>,
    /// Where events go to be stored in batches (with a journal).
    writer: Option<crate::event_writer::EventWriter>,
    /// How many ids are reserved at once: [`ID_BLOCK`], or one on a database shared with
    /// other servers, so that ids follow the order events happen in across all of them.
    block: u64,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog").finish_non_exhaustive()
    }
}

impl Default for EventLog {
    /// A log whose ids start at 1 and are not persisted (tests).
    fn default() -> Self {
        Self::starting_at(1, u64::MAX, None)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl EventLog {
    fn starting_at(first: u64, end: u64, journal: Option<EventJournal<'static>>) -> Self {
        Self {
            retained: Mutex::new((
                Ids {
                    last: first - 1,
                    first,
                    end,
                },
                VecDeque::new(),
            )),
            live: broadcast::channel(RETAINED_EVENTS).0,
            block: if journal.as_ref().is_some_and(EventJournal::is_shared) {
                1
            } else {
                ID_BLOCK
            },
            writer: journal
                .clone()
                .and_then(crate::event_writer::EventWriter::start),
            journal,
        }
    }

    /// A log whose ids continue the sequence kept in `journal`, holding the latest events
    /// stored by earlier servers, so a client resumes across a restart.
    pub(crate) fn persistent(journal: EventJournal<'static>) -> Self {
        let block = if journal.is_shared() { 1 } else { ID_BLOCK };
        match journal.reserve_sequence("events", block) {
            Ok(first) => {
                let log = Self::starting_at(first, first + block, Some(journal.clone()));
                match journal.recent(RETAINED_EVENTS) {
                    Ok(earlier) => {
                        let mut retained = log.retained.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(oldest) = earlier.first() {
                            retained.0.first = retained.0.first.min(oldest.id);
                        }
                        retained.1.extend(earlier.into_iter().map(|e| ApiEvent {
                            id: e.id,
                            kind: e.kind,
                            time_ms: e.time_ms,
                            job_id: e.job_id,
                            owner: e.owner,
                            data: e.data,
                        }));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read the stored events; streams resume only from this server's")
                    }
                }
                log
            }
            Err(e) => {
                // Ids still increase within this life; a resume across the restart is
                // then not caught, which the warning says.
                tracing::warn!(error = %e, "cannot reserve event ids; they restart at 1");
                Self::default()
            }
        }
    }

    /// The next id, reserving another block when this one is used up.
    fn next_id(&self, ids: &mut Ids) -> u64 {
        if self.block == 1
            && let Some(journal) = &self.journal
        {
            // Shared: each id from the database's sequence, whatever other servers' events
            // this log holds already.
            match journal.reserve_sequence("events", 1) {
                Ok(id) => {
                    ids.last = ids.last.max(id);
                    return id;
                }
                Err(e) => tracing::warn!(error = %e, "cannot reserve an event id"),
            }
        }
        if ids.last + 1 >= ids.end
            && let Some(journal) = &self.journal
        {
            match journal.reserve_sequence("events", ID_BLOCK) {
                Ok(first) => {
                    ids.last = first.max(ids.last + 1) - 1;
                    ids.end = first + ID_BLOCK;
                }
                Err(e) => tracing::warn!(error = %e, "cannot reserve more event ids"),
            }
        }
        ids.last += 1;
        ids.last
    }

    /// Records and broadcasts an event.
    pub(crate) fn publish(
        &self,
        kind: &str,
        job_id: Option<&str>,
        owner: Option<&str>,
        data: Value,
    ) {
        let mut retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
        let id = self.next_id(&mut retained.0);
        let event = ApiEvent {
            id,
            kind: kind.to_string(),
            time_ms: now_ms(),
            job_id: job_id.map(String::from),
            owner: owner.map(String::from),
            data,
        };
        let stored = || toolshed_host::job_store::StoredEvent {
            id,
            kind: event.kind.clone(),
            time_ms: event.time_ms,
            job_id: event.job_id.clone(),
            owner: event.owner.clone(),
            data: event.data.clone(),
        };
        if let Some(writer) = &self.writer {
            writer.push(stored());
        } else if let Some(journal) = &self.journal
            && let Err(e) = journal.append(&stored())
        {
            tracing::warn!(error = %e, "cannot store an event; a stream resumed after a restart misses it");
        }
        if retained.1.len() >= RETAINED_EVENTS {
            retained.1.pop_front();
        }
        // In id order: on a shared database another server's event with a higher id may
        // be here already.
        let at = retained.1.partition_point(|e| e.id < id);
        retained.1.insert(at, event.clone());
        // Sent under the lock, so a subscriber that takes the backlog and then the live
        // tail never misses or repeats an event.
        let _ = self.live.send(event);
    }

    /// The retained events after `last_id` that pass `filter`, and a receiver for what
    /// comes next. `missed` is true when events after `last_id` were no longer retained.
    pub(crate) fn subscribe(
        &self,
        last_id: Option<u64>,
        filter: &Filter,
    ) -> (Vec<ApiEvent>, bool, broadcast::Receiver<ApiEvent>) {
        let retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
        let receiver = self.live.subscribe();
        let Some(last) = last_id else {
            return (Vec::new(), false, receiver);
        };
        // Missed: the events right after `last` are gone from the buffer, `last` is from
        // before this server started (a restart), or it was never handed out.
        let oldest = retained.1.front().map_or(retained.0.last + 1, |e| e.id);
        let missed = last.saturating_add(1) < oldest
            || last.saturating_add(1) < retained.0.first
            || last > retained.0.last;
        let backlog = retained
            .1
            .iter()
            .filter(|e| e.id > last && filter.accepts(e))
            .cloned()
            .collect();
        (backlog, missed, receiver)
    }

    /// Puts the events other servers on a shared database store into this log and its live
    /// streams, as they are announced, until `stop`; nothing without a shared database.
    pub(crate) fn follow_other_servers(
        self: &Arc<Self>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let Some(journal) = self.journal.clone().filter(EventJournal::is_shared) else {
            return;
        };
        let mut announced = journal.appended_elsewhere();
        let log = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let id = tokio::select! {
                    () = stop.cancelled() => return,
                    received = announced.recv() => match received {
                        Ok(id) => id,
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            tracing::warn!(missed = n, "fell behind other servers' events; streams miss some");
                            continue;
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                };
                let journal = journal.clone();
                let stored = tokio::task::spawn_blocking(move || journal.get(id)).await;
                let Some(log) = log.upgrade() else { return };
                match stored {
                    Ok(Ok(Some(event))) => log.adopt(ApiEvent {
                        id: event.id,
                        kind: event.kind,
                        time_ms: event.time_ms,
                        job_id: event.job_id,
                        owner: event.owner,
                        data: event.data,
                    }),
                    Ok(Ok(None)) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "cannot read another server's event"),
                    Err(e) => tracing::warn!(error = %e, "reading another server's event failed"),
                }
            }
        });
    }

    /// Takes in an event another server published: in id order among the retained ones,
    /// and out to the live streams.
    fn adopt(&self, event: ApiEvent) {
        let mut retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
        if retained.1.iter().any(|e| e.id == event.id) {
            return;
        }
        let at = retained.1.partition_point(|e| e.id < event.id);
        retained.1.insert(at, event.clone());
        if retained.1.len() > RETAINED_EVENTS {
            retained.1.pop_front();
        }
        retained.0.last = retained.0.last.max(event.id);
        let _ = self.live.send(event);
    }
}

impl toolshed_host::jobs::JobEvents for EventLog {
    fn publish(&self, kind: &str, id: Option<&str>, owner: Option<&str>, data: Value) {
        EventLog::publish(self, kind, id, owner, data);
    }
}

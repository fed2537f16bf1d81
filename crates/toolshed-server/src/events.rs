//! The live event log of the REST API: job and plugin events with increasing ids, the most
//! recent kept so a reconnecting client resumes from its last event id, and a broadcast
//! channel for the live tail.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// How many events are kept for resuming.
pub const RETAINED_EVENTS: usize = 1000;

/// One event as clients see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiEvent {
    /// Increasing, unique in this server's life.
    pub id: u64,
    /// `job.started`, `job.progress`, `job.finished`, `job.failed`, `plugin.state_changed`.
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
pub struct Filter {
    /// Only this job's events.
    pub job: Option<String>,
    /// Only the events of this owner's jobs (plugin events always pass).
    pub owner: Option<String>,
}

impl Filter {
    /// Whether `event` passes.
    pub fn accepts(&self, event: &ApiEvent) -> bool {
        if let Some(job) = &self.job
            && event.job_id.as_ref() != Some(job)
        {
            return false;
        }
        if let Some(owner) = &self.owner
            && event.job_id.is_some()
            && event.owner.as_ref() != Some(owner)
        {
            return false;
        }
        true
    }
}

/// The log.
#[derive(Debug)]
pub struct EventLog {
    retained: Mutex<(u64, VecDeque<ApiEvent>)>,
    live: broadcast::Sender<ApiEvent>,
}

impl Default for EventLog {
    fn default() -> Self {
        Self {
            retained: Mutex::new((0, VecDeque::new())),
            live: broadcast::channel(RETAINED_EVENTS).0,
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl EventLog {
    /// Records and broadcasts an event.
    pub fn publish(&self, kind: &str, job_id: Option<&str>, owner: Option<&str>, data: Value) {
        let mut retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
        retained.0 += 1;
        let event = ApiEvent {
            id: retained.0,
            kind: kind.to_string(),
            time_ms: now_ms(),
            job_id: job_id.map(String::from),
            owner: owner.map(String::from),
            data,
        };
        if retained.1.len() >= RETAINED_EVENTS {
            retained.1.pop_front();
        }
        retained.1.push_back(event.clone());
        // Sent under the lock, so a subscriber that takes the backlog and then the live
        // tail never misses or repeats an event.
        let _ = self.live.send(event);
    }

    /// The retained events after `last_id` that pass `filter`, and a receiver for what
    /// comes next. `missed` is true when events after `last_id` were no longer retained.
    pub fn subscribe(
        &self,
        last_id: Option<u64>,
        filter: &Filter,
    ) -> (Vec<ApiEvent>, bool, broadcast::Receiver<ApiEvent>) {
        let retained = self.retained.lock().unwrap_or_else(|p| p.into_inner());
        let receiver = self.live.subscribe();
        let Some(last) = last_id else {
            return (Vec::new(), false, receiver);
        };
        let oldest = retained.1.front().map(|e| e.id);
        let missed =
            oldest.is_some_and(|oldest| last.saturating_add(1) < oldest) || last > retained.0;
        let backlog = retained
            .1
            .iter()
            .filter(|e| e.id > last && filter.accepts(e))
            .cloned()
            .collect();
        (backlog, missed, receiver)
    }

    /// The id of the latest event (0 before any).
    pub fn last_id(&self) -> u64 {
        self.retained.lock().unwrap_or_else(|p| p.into_inner()).0
    }
}

//! Events go to the state store in batches, off the publisher's path: a publisher queues
//! the event and returns; one thread writes what has queued in one transaction. Before, each
//! event was its own insert, made under the event log's lock by whoever published — a
//! plugin's burst of events, a tool's process exits — so under load the bridge from the
//! host's notices fell behind and skipped events (bench/events.py).
//!
//! The queue holds at most [`MAX_STORED_EVENTS`] events (the store keeps no more): past that
//! the oldest queued are dropped, as the store would drop them. A server that stops writes
//! what is queued first; one that is killed loses at most what queued since the last batch
//! (events kept only for streams resuming after a restart; the live streams have them).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use toolshed_host::EventJournal;
use toolshed_host::job_store::{MAX_STORED_EVENTS, StoredEvent};

#[derive(Default)]
struct Queue {
    events: VecDeque<StoredEvent>,
    closing: bool,
    /// Events dropped from a full queue since the last warning.
    dropped: u64,
}

/// The writer: a queue and the thread that empties it into the journal.
pub(crate) struct EventWriter {
    shared: Arc<(Mutex<Queue>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EventWriter {
    /// Starts the thread writing into `journal`; `None` when no thread can be started (the
    /// caller then writes each event itself).
    pub(crate) fn start(journal: EventJournal<'static>) -> Option<Self> {
        let shared: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("toolshed-events".into())
            .spawn(move || run(&theirs, &journal))
            .map_err(|e| tracing::warn!(error = %e, "no event writer thread; events are stored one by one"))
            .ok()?;
        Some(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `event` for the store.
    pub(crate) fn push(&self, event: StoredEvent) {
        let (lock, wake) = &*self.shared;
        let mut queue = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let cap = usize::try_from(MAX_STORED_EVENTS).unwrap_or(usize::MAX);
        if queue.events.len() >= cap {
            queue.events.pop_front();
            queue.dropped += 1;
        }
        queue.events.push_back(event);
        wake.notify_one();
    }
}

impl Drop for EventWriter {
    fn drop(&mut self) {
        let (lock, wake) = &*self.shared;
        lock.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .closing = true;
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &(Mutex<Queue>, Condvar), journal: &EventJournal<'static>) {
    let (lock, wake) = shared;
    loop {
        let (batch, dropped, closing) = {
            let mut queue = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            while queue.events.is_empty() && !queue.closing {
                queue = wake
                    .wait(queue)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            (
                Vec::from(std::mem::take(&mut queue.events)),
                std::mem::take(&mut queue.dropped),
                queue.closing,
            )
        };
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "the event store fell behind; the oldest queued events were not stored"
            );
        }
        if !batch.is_empty()
            && let Err(e) = journal.append_many(&batch)
        {
            tracing::warn!(error = %e, events = batch.len(), "cannot store events; a stream resumed after a restart misses them");
        }
        if closing {
            return;
        }
    }
}

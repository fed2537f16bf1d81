//! What a session's reader and its callers share: the requests waiting for replies, the
//! progress sinks, the calls in flight and whether the session ended.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use toolshed_core::ProgressSink;

use super::{Reply, RpcError};

/// How long after a call ends a server's request that names no call is not taken for
/// another owner's call (stdio tells no request apart).
const RECENTLY_ENDED: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Shared {
    pub(super) pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    pub(super) progress: Mutex<HashMap<u64, ProgressSink>>,
    pub(super) closed: AtomicBool,
    pub(super) why_closed: Mutex<Option<String>>,
    /// Told when the server says its tools changed.
    pub(super) tools_changed: Arc<tokio::sync::Notify>,
    /// Told when the server says a resource changed.
    pub(super) watchers: Arc<crate::watch::Watchers>,
    /// The calls in flight (request id), with what answers the server's questions to them.
    pub(super) calls: Mutex<HashMap<u64, Arc<crate::asks::Asks>>>,
    /// The owners of calls that ended lately, and when (the last few).
    pub(super) ended: Mutex<std::collections::VecDeque<(String, std::time::Instant)>>,
    /// The server's name, in what it asks the person.
    pub(crate) name: std::sync::OnceLock<String>,
}

impl Shared {
    /// Whether the session ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Settles request `id` with `reply`, if it still waits.
    pub(crate) fn settle(&self, id: u64, reply: Reply) {
        if let Some(waiter) = self.lock_pending().remove(&id) {
            let _ = waiter.send(reply);
        }
    }

    pub(super) fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn lock_progress(&self) -> std::sync::MutexGuard<'_, HashMap<u64, ProgressSink>> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn lock_calls(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<crate::asks::Asks>>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The call a server's request belongs to: the request it came with (over HTTP, on
    /// that request's stream), else the one call in flight. With several in flight and
    /// nothing to tell them apart (stdio), none: asking the wrong caller's person would be
    /// worse than not asking.
    pub(super) fn call_for(&self, related: Option<u64>) -> Result<Arc<crate::asks::Asks>, String> {
        let calls = self.lock_calls();
        if let Some(id) = related {
            return calls.get(&id).cloned().ok_or_else(|| {
                "it came with a request of toolshed's that is not a tool call, or that has ended"
                    .to_string()
            });
        }
        let only = match calls.len() {
            1 => calls.values().next().cloned(),
            0 => return Err("it came while no call of toolshed's was running".into()),
            n => {
                return Err(format!(
                    "{n} calls of toolshed's run on this server and the request does not say which it belongs to"
                ));
            }
        };
        let only = only.ok_or_else(|| "no call".to_string())?;
        // A call of someone else ended a moment ago: the request may be that call's, late.
        let ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if ended
            .iter()
            .any(|(owner, at)| *owner != only.owner && at.elapsed() < RECENTLY_ENDED)
        {
            return Err(
                "a call of another owner ended a moment ago, and the request does not say which call it belongs to"
                    .into(),
            );
        }
        Ok(only)
    }

    /// Forgets call `id` (it ended), noting whose it was.
    pub(super) fn end_call(&self, id: u64) {
        if let Some(asks) = self.lock_calls().remove(&id) {
            let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
            if ended.len() >= 8 {
                ended.pop_front();
            }
            ended.push_back((asks.owner.clone(), std::time::Instant::now()));
        }
    }

    /// Ends the session: every waiting request fails with `why`.
    pub(crate) fn close(&self, why: String) {
        self.closed.store(true, Ordering::SeqCst);
        *self.why_closed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        for (_, waiter) in self.lock_pending().drain() {
            let _ = waiter.send(Err(RpcError::Closed(why.clone())));
        }
    }
}

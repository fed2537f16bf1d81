//! The note a call leaves on its audit row: what its tool says (how a stop ended), and the
//! operations retried on its behalf (a remote worker's dropped connection, a refused
//! connection to a web server), recorded where the retry happens without the tool
//! passing anything down ([`AuditNote::record_retry`]).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};

/// The note a tool leaves on its call's audit row ([`crate::CallContext::audit_note`]),
/// with the retries made during the call.
#[derive(Clone, Debug, Default)]
pub struct AuditNote(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    note: OnceLock<String>,
    retries: Mutex<Vec<String>>,
}

tokio::task_local! {
    /// The note of the call whose task this is.
    static CURRENT: AuditNote;
}

thread_local! {
    /// The note of the call whose blocking work this thread runs ([`AuditNote::enter`]).
    static BLOCKING: RefCell<Option<AuditNote>> = const { RefCell::new(None) };
}

/// While alive, retries recorded on this thread go to one call's note.
#[derive(Debug)]
pub struct Entered(Option<AuditNote>);

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        BLOCKING.with(|b| *b.borrow_mut() = previous);
    }
}

impl AuditNote {
    /// The most bytes of a note kept.
    pub const MAX_BYTES: usize = 512;

    /// The most retries a note lists (the rest are counted).
    pub const MAX_RETRIES: usize = 8;

    /// Leaves `note` (cut to [`Self::MAX_BYTES`]); a second note is ignored.
    pub fn set(&self, note: impl Into<String>) {
        let _ = self.0.note.set(cut(note.into()));
    }

    /// The note: the tool's, then the retries made during the call (`retried: …`).
    pub fn get(&self) -> Option<String> {
        let retries = self.0.retries.lock().unwrap_or_else(|p| p.into_inner());
        let retried = (!retries.is_empty()).then(|| format!("retried: {}", retries.join("; ")));
        match (self.0.note.get(), retried) {
            (Some(note), Some(retried)) => Some(cut(format!("{note}; {retried}"))),
            (Some(note), None) => Some(note.clone()),
            (None, Some(retried)) => Some(cut(retried)),
            (None, None) => None,
        }
    }

    /// Runs `work` (a call's tool) with this note as the one retries are recorded on.
    pub async fn scope<F: std::future::Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }

    /// The note of the call running on this task or thread, if any.
    pub fn current() -> Option<Self> {
        CURRENT
            .try_with(Clone::clone)
            .ok()
            .or_else(|| BLOCKING.with(|b| b.borrow().clone()))
    }

    /// Makes this note the one retries on this thread go to, until the guard drops: for a
    /// call's blocking work, run off its task.
    pub fn enter(&self) -> Entered {
        Entered(BLOCKING.with(|b| b.borrow_mut().replace(self.clone())))
    }

    /// Records that `what` (`read of src/a.rs: the connection was lost`) was retried, on
    /// the current call's note; always logged.
    pub fn record_retry(what: impl Into<String>) {
        let what = what.into();
        tracing::warn!(retry = %what, "retrying a transient failure");
        if let Some(note) = Self::current() {
            let mut retries = note.0.retries.lock().unwrap_or_else(|p| p.into_inner());
            if retries.len() < Self::MAX_RETRIES {
                retries.push(what);
            } else if retries.len() == Self::MAX_RETRIES {
                retries.push("more".into());
            }
        }
    }
}

/// `text` cut to [`AuditNote::MAX_BYTES`] on a character boundary.
fn cut(mut text: String) -> String {
    if text.len() > AuditNote::MAX_BYTES {
        let mut at = AuditNote::MAX_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn retries_reach_the_note_of_the_call_on_its_task_and_its_blocking_threads() {
        let note = AuditNote::default();
        note.set("stopped");
        let inner = note.clone();
        note.clone()
            .scope(async move {
                AuditNote::record_retry("read of a: the connection was lost");
                tokio::task::spawn_blocking(move || {
                    let _entered = inner.enter();
                    AuditNote::record_retry("stat of b: the connection was lost");
                })
                .await
                .unwrap();
            })
            .await;
        AuditNote::record_retry("outside any call");
        assert_eq!(
            note.get().as_deref(),
            Some(
                "stopped; retried: read of a: the connection was lost; stat of b: the connection was lost"
            )
        );
        assert!(AuditNote::current().is_none());
    }
}

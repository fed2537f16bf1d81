//! Progress from a running call, forwarded as `notifications/progress`.
//!
//! A tool's [`ProgressSink`] must never block, but sending a notification is async and
//! waits on the transport. So the sink only puts reports into a bounded queue, and one
//! task per call sends them in order. When the queue is full (a tool reporting faster
//! than the client reads) reports are dropped: progress is advisory, and the result
//! carries everything that matters.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolshed_core::{Progress, ProgressSink};

/// Reports queued per call before new ones are dropped.
const QUEUE: usize = 64;

/// Forwards one call's progress to the client that asked for it.
pub(crate) struct ProgressForwarder {
    finished: CancellationToken,
    task: JoinHandle<()>,
}

impl ProgressForwarder {
    /// Starts forwarding to `peer` under `token`; the returned sink goes into the call.
    pub(crate) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> (Self, ProgressSink) {
        let (tx, rx) = mpsc::channel::<Progress>(QUEUE);
        let finished = CancellationToken::new();
        let task = tokio::spawn(forward(peer, token, rx, finished.clone()));
        let sink = ProgressSink::new(move |progress| {
            if tx.try_send(progress).is_err() {
                tracing::debug!("progress queue full or closed; report dropped");
            }
        });
        (Self { finished, task }, sink)
    }

    /// Sends what is still queued and stops, so every report reaches the client before
    /// the call's result does. A tool that kept a clone of the sink past its return cannot
    /// hold this up: later reports are not sent.
    pub(crate) async fn finish(self) {
        self.finished.cancel();
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "progress forwarder failed");
        }
    }
}

async fn forward(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut rx: mpsc::Receiver<Progress>,
    finished: CancellationToken,
) {
    // MCP asks for a value that increases with every notification; reports that carry
    // only a message (streamed output) count up from the last value.
    let mut last = 0.0_f64;
    loop {
        let report = tokio::select! {
            biased;
            report = rx.recv() => report,
            () = finished.cancelled() => {
                rx.close();
                while let Ok(report) = rx.try_recv() {
                    send(&peer, &token, report, &mut last).await;
                }
                return;
            }
        };
        match report {
            Some(report) => send(&peer, &token, report, &mut last).await,
            None => return,
        }
    }
}

async fn send(peer: &Peer<RoleServer>, token: &ProgressToken, report: Progress, last: &mut f64) {
    let value = match report.progress {
        Some(v) if v.is_finite() && v > *last => v,
        _ => *last + 1.0,
    };
    *last = value;
    let mut param = ProgressNotificationParam::new(token.clone(), value);
    if let Some(total) = report.total.filter(|t| t.is_finite()) {
        param = param.with_total(total);
    }
    if let Some(message) = report.message {
        param = param.with_message(message);
    }
    if let Err(e) = peer.notify_progress(param).await {
        tracing::debug!(error = %e, "cannot send a progress notification");
    }
}

//! MCP logging (`logging/setLevel`, `notifications/message`): what tools and plugins
//! announce — a background process exiting, a command session closing, a plugin's own
//! events — reaches a client that asked for log messages, for the owner its calls run as.
//!
//! The newest protocol revision deprecates logging (SEP-2577), but the clients of the
//! revisions that have it (session-based stdio and HTTP) still subscribe this way.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use toolshed_core::OwnerId;
use toolshed_ops::{Notice, Notices};

/// The logger name messages carry.
const LOGGER: &str = "toolshed";

/// The level a connection asked for: `None` until it sends `logging/setLevel`.
#[derive(Debug, Default)]
pub(crate) struct LogLevel(Mutex<Option<u8>>);

impl LogLevel {
    /// Sets the level; true when it was not set before (start forwarding).
    pub(crate) fn set(&self, level: LoggingLevel) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(severity(level))
            .is_none()
    }

    /// The least severity asked for, once set.
    pub(crate) fn floor(&self) -> Option<u8> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn admits(&self, level: LoggingLevel) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|min| severity(level) >= min)
    }
}

pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Where a call's log messages (a mounted server's) go to the client: over `peer`, in
/// order, those at `floor` and above (all when `None`), at most 64 waiting (more are
/// dropped). [`LogForwarder::finish`] sends what is left before the call is answered.
pub(crate) struct LogForwarder {
    finished: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl LogForwarder {
    pub(crate) fn start(
        peer: rmcp::Peer<rmcp::RoleServer>,
        floor: Option<u8>,
    ) -> (Self, toolshed_core::LogSink) {
        let (tx, mut rx) =
            tokio::sync::mpsc::channel::<rmcp::model::LoggingMessageNotificationParam>(64);
        let finished = tokio_util::sync::CancellationToken::new();
        let done = finished.clone();
        let task = tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    biased;
                    message = rx.recv() => message,
                    () = done.cancelled() => {
                        rx.close();
                        while let Ok(message) = rx.try_recv() {
                            let _ = peer.notify_logging_message(message).await;
                        }
                        return;
                    }
                };
                match message {
                    Some(message) => {
                        let _ = peer.notify_logging_message(message).await;
                    }
                    None => return,
                }
            }
        });
        let sink = toolshed_core::LogSink::new(move |params: Value| {
            let Ok(message) =
                serde_json::from_value::<rmcp::model::LoggingMessageNotificationParam>(params)
            else {
                return;
            };
            if floor.is_some_and(|floor| severity(message.level) < floor) {
                return;
            }
            if tx.try_send(message).is_err() {
                tracing::debug!("log queue full or closed; a message of the call dropped");
            }
        });
        (Self { finished, task }, sink)
    }

    /// Sends what is queued, then stops.
    pub(crate) async fn finish(self) {
        self.finished.cancel();
        let _ = self.task.await;
    }
}

/// A notice's level: an exit with a failure or a signal is a warning; the rest is info.
fn level_of(notice: &Notice) -> LoggingLevel {
    let failed = notice
        .data
        .get("exit_code")
        .is_some_and(|code| code.as_i64() != Some(0));
    if failed {
        LoggingLevel::Warning
    } else {
        LoggingLevel::Info
    }
}

/// The message a client receives: the notice's fields with its `type`.
fn message(notice: &Notice) -> Value {
    let mut data = match &notice.data {
        Value::Object(map) => map.clone(),
        other => {
            let mut map = serde_json::Map::new();
            map.insert("data".into(), other.clone());
            map
        }
    };
    data.insert("type".into(), Value::String(notice.kind.clone()));
    Value::Object(data)
}

/// Sends `owner`'s notices (and those of no owner) at or above the connection's level to
/// `peer`, until `stop` fires or the client is gone.
pub(crate) fn forward(
    notices: &Notices,
    owner: OwnerId,
    wanted: Arc<LogLevel>,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    let mut receiver = notices.subscribe();
    tokio::spawn(async move {
        loop {
            let notice = tokio::select! {
                () = stop.cancelled() => return,
                received = receiver.recv() => match received {
                    Ok(notice) => notice,
                    Err(RecvError::Lagged(n)) => {
                        tracing::debug!(missed = n, "an MCP client's log messages fell behind");
                        continue;
                    }
                    Err(RecvError::Closed) => return,
                },
            };
            if notice.owner.as_deref().is_some_and(|of| !owner.covers(of)) {
                continue;
            }
            let level = level_of(&notice);
            if !wanted.admits(level) {
                continue;
            }
            let param =
                LoggingMessageNotificationParam::new(level, message(&notice)).with_logger(LOGGER);
            if let Err(e) = peer.notify_logging_message(param).await {
                tracing::debug!(error = %e, "cannot send a log message; the client is gone");
                return;
            }
        }
    });
}

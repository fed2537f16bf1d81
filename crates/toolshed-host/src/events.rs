//! In-process events: what doors and dashboards subscribe to.
//!
//! A broadcast channel with a bounded buffer: a subscriber that falls behind misses events
//! (and is told so by the receiver's `Lagged` error) instead of slowing calls down.

use std::sync::{Arc, OnceLock};

use serde::Serialize;
use tokio::sync::broadcast;
use toolshed_core::Progress;

use crate::registry::PluginState;

/// How many events a slow subscriber may fall behind before it misses some.
pub const EVENT_BUFFER: usize = 1024;

/// Something that happened in the host.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A call passed review and validation and is about to run.
    CallStarted {
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// The caller.
        owner: String,
    },
    /// A running call reported progress or streamed output.
    CallProgress {
        /// The call.
        call_id: String,
        /// The report.
        progress: Progress,
    },
    /// A call produced a result (which may report a failure with `is_error`).
    CallFinished {
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// The owner it ran as.
        owner: String,
        /// The plugin that served it, if the name resolved.
        plugin: Option<String>,
        /// The door it came through: `cli`, `mcp`, `rest`, or `plugin` for a nested call.
        door: String,
        /// Wall time.
        duration_ms: u64,
        /// Whether the result reports a failure.
        is_error: bool,
    },
    /// A call ended without a result.
    CallFailed {
        /// The call.
        call_id: String,
        /// The tool.
        tool: String,
        /// The owner it ran as.
        owner: String,
        /// The plugin that served it, if the name resolved.
        plugin: Option<String>,
        /// The door it came through: `cli`, `mcp`, `rest`, or `plugin` for a nested call.
        door: String,
        /// Wall time.
        duration_ms: u64,
        /// The error kind.
        kind: String,
        /// The error message.
        message: String,
    },
    /// A call waits for a person's approval.
    ApprovalRequested {
        /// The request.
        request: crate::approvals::ApprovalRequest,
    },
    /// An approval request was answered, or expired.
    ApprovalResolved {
        /// The request as it ended.
        request: crate::approvals::ApprovalRequest,
    },
    /// A plugin changed state.
    PluginStateChanged {
        /// The plugin.
        plugin_id: String,
        /// Its new state.
        state: PluginState,
        /// Why, when it is not running.
        reason: Option<String>,
    },
}

/// The host's event channel. Its buffer (a slot for each of [`EVENT_BUFFER`] events, about
/// 270 KB) is made when the first subscriber comes: a process nobody watches (an MCP
/// server over stdio, a one-shot command) builds no events at all.
#[derive(Debug, Clone, Default)]
pub struct EventBus(Arc<OnceLock<broadcast::Sender<Event>>>);

impl EventBus {
    /// Publishes an event; with no subscriber it is dropped.
    pub fn publish(&self, event: Event) {
        self.publish_with(|| event);
    }

    /// Publishes the event `make` builds, building it only when someone subscribed.
    pub fn publish_with(&self, make: impl FnOnce() -> Event) {
        if let Some(sender) = self.0.get()
            && sender.receiver_count() > 0
        {
            let _ = sender.send(make());
        }
    }

    /// A new subscription, receiving events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.0
            .get_or_init(|| broadcast::channel(EVENT_BUFFER).0)
            .subscribe()
    }
}

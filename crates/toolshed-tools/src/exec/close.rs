//! Close tracking of background processes (Fenix's close requests): a stop asked for is
//! recorded with who asked and how, and how the process actually ended — within its grace
//! period (`graceful`) or killed (`forced`) — goes into the stop's result, its audit row
//! and the `process.exited` event.

use serde_json::{Map, Value, json};
use toolshed_ops::process::{Exit, ExitStatus, Stop};

/// The kill signal: a process it ended did not stop by itself.
const SIGKILL: i32 = 9;

/// A stop someone asked for.
#[derive(Debug, Clone)]
pub(super) struct Close {
    /// The close request's id: the id of the call that asked (its audit row's `call_id`),
    /// or `shutdown` when toolshed stopped it.
    pub id: String,
    /// Who asked: the calling owner, or `toolshed`.
    pub by: String,
    /// How: `graceful` (SIGTERM, then SIGKILL after the grace period) or `forced`.
    pub asked: &'static str,
}

impl Close {
    /// A close request for `stop`.
    pub(super) fn new(id: impl Into<String>, by: impl Into<String>, stop: Stop) -> Self {
        Self {
            id: id.into(),
            by: by.into(),
            asked: match stop {
                Stop::Graceful { .. } => "graceful",
                Stop::Forced => "forced",
            },
        }
    }

    /// The fields the stop's result and the `process.exited` event carry: the request, and
    /// how the process ended.
    pub(super) fn fields(&self, exit: Option<&Exit>) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("close_request_id".into(), json!(self.id));
        fields.insert("requested_by".into(), json!(self.by));
        fields.insert("asked".into(), json!(self.asked));
        if let Some(exit) = exit {
            fields.insert("ended".into(), json!(ended(exit)));
        }
        fields
    }

    /// The note on the stop's audit row.
    pub(super) fn note(&self, process: &str, exit: Option<&Exit>) -> String {
        format!(
            "close request {} for {process} by {}: asked {}, ended {}",
            self.id,
            self.by,
            self.asked,
            exit.map_or("(still running)", ended)
        )
    }
}

/// How a stopped process ended: `forced` when SIGKILL ended it, `graceful` otherwise.
fn ended(exit: &Exit) -> &'static str {
    match exit.status {
        ExitStatus::Signal(SIGKILL) => "forced",
        _ => "graceful",
    }
}

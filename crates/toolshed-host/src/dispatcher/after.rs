//! What the pipeline does with a result before it leaves: the reminder on a call repeated
//! (same caller, tool and arguments) within a short window, the file-policy events of a
//! denied read or write, and the record (audit row and events).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;
use toolshed_core::{CallId, Content, ToolError, ToolOutput};

use super::{DASHBOARD_DOOR, Dispatcher};
use crate::events::Event;
use crate::registry::ToolEntry;
use crate::store::AuditRecord;

/// The most callers remembered for the repeat reminder; past it the ones not seen within
/// the window are forgotten, and all of them if that is not enough.
const MAX_REMEMBERED: usize = 10_000;

/// Each caller's last call (its tool and arguments' hash), how many times in a row it came,
/// and when it last did.
#[derive(Default)]
pub(super) struct Repeats(Mutex<HashMap<String, (String, u32, Instant)>>);

impl Repeats {
    /// Counts `owner`'s call `key`: how many identical calls in a row, each within `window`
    /// of the last, this one included.
    fn count(&self, owner: &str, key: String, window: Duration) -> u32 {
        let now = Instant::now();
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_REMEMBERED && !seen.contains_key(owner) {
            seen.retain(|_, (_, _, last)| now.duration_since(*last) < window);
            if seen.len() >= MAX_REMEMBERED {
                seen.clear();
            }
        }
        let last = seen
            .entry(owner.to_string())
            .or_insert_with(|| (String::new(), 0, now));
        last.1 = if last.0 == key && now.duration_since(last.2) < window {
            last.1 + 1
        } else {
            last.0 = key;
            1
        };
        last.2 = now;
        last.1
    }
}

/// The workspace paths a call reads or writes, taken before its arguments go to the tool.
pub(super) struct FileTouches {
    /// `fs.write.denied` when it writes any, else `fs.read.denied`.
    kind: &'static str,
    /// The paths as the arguments spell them.
    paths: Vec<String>,
}

impl FileTouches {
    /// What `entry`'s call with `arguments` reads or writes; `None` for a tool that names
    /// no files (the usual case, which costs nothing).
    pub(super) fn of(entry: &ToolEntry, arguments: &serde_json::Value) -> Option<Self> {
        if entry.spec().touches.is_empty() {
            return None;
        }
        let touches = entry.tool.touches(arguments);
        if !touches.writes.is_empty() {
            Some(Self {
                kind: "fs.write.denied",
                paths: touches.writes,
            })
        } else if !touches.reads.is_empty() {
            Some(Self {
                kind: "fs.read.denied",
                paths: touches.reads,
            })
        } else {
            None
        }
    }
}

impl Dispatcher {
    /// Tells a caller that repeats the same call (`[limits] repeat_reminder_after` times in
    /// a row, each within `repeat_window_secs` of the last) so: a model stuck in a loop reads it in
    /// the result. A plugin's nested calls and the dashboard's reads are not counted.
    pub(super) fn remind_of_repeats(
        &self,
        req: &super::CallRequest,
        args_sha256: &str,
        result: &mut Result<ToolOutput, ToolError>,
    ) {
        let after = self.limits.repeat_reminder_after;
        if after == 0 || req.door == DASHBOARD_DOOR || req.door == "plugin" {
            return;
        }
        let window = Duration::from_secs(self.limits.repeat_window_secs.max(1));
        let key = format!("{}\0{args_sha256}", req.tool);
        let n = self.repeats.count(&req.owner.0, key, window);
        if n < after {
            return;
        }
        let note = format!(
            "note from toolshed: you have made this same call (`{}` with the same arguments) \
             {n} times in a row, each within {} s of the last. Repeating it will not change its \
             answer: change the arguments or try another way. (If you are waiting for something \
             to change, wait longer between calls.)",
            req.tool,
            window.as_secs()
        );
        match result {
            Ok(output) => output.content.push(Content::Text { text: note }),
            Err(e) => e.add_note(&note),
        }
    }

    /// A read or write of workspace files that review, policy, the workspace jail or the
    /// files' permissions refused is announced to its owner's event stream as
    /// `fs.read.denied` or `fs.write.denied` (with the tool, the paths and the rule), as
    /// the TypeScript harness's file policy reports it.
    pub(super) fn announce_file_denials(
        &self,
        req: &super::CallRequest,
        call_id: &CallId,
        result: &Result<ToolOutput, ToolError>,
        files: Option<FileTouches>,
    ) {
        let (Some(notices), Some(files), Err(ToolError::Denied { rule, message })) =
            (&self.notices, files, result)
        else {
            return;
        };
        notices.publish(
            files.kind,
            Some(&req.owner.0),
            json!({
                "call_id": call_id.0,
                "tool": req.tool,
                "paths": files.paths,
                "rule": rule,
                "message": message,
                "door": req.door,
            }),
        );
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn record(
        &self,
        req: &super::CallRequest,
        call_id: &CallId,
        plugin: Option<String>,
        result: &Result<ToolOutput, ToolError>,
        ts_ms: i64,
        args_sha256: String,
        duration: Duration,
        approval: Option<String>,
    ) {
        // An operator's dashboard reading what it shows is nobody's call (see
        // [`DASHBOARD_DOOR`]): logged, not audited.
        if req.door == DASHBOARD_DOOR {
            tracing::debug!(tool = %req.tool, owner = %req.owner.0, "dashboard read");
            return;
        }
        let duration_ms = duration.as_millis() as u64;
        let (outcome, error_kind) = match result {
            Ok(out) if out.is_error => ("tool_error", None),
            Ok(_) => ("ok", None),
            Err(e) => ("error", Some(e.kind().as_str().to_string())),
        };
        let record = AuditRecord {
            ts_ms,
            call_id: call_id.0.clone(),
            owner: req.owner.0.clone(),
            door: req.door.to_string(),
            tool: req.tool.clone(),
            plugin: plugin.clone(),
            args_sha256,
            outcome: outcome.to_string(),
            error_kind,
            duration_ms: duration_ms as i64,
            approval,
            parent: req.parent.clone(),
            note: req.audit_note.get(),
        };
        // On disk (the store's audit journal) before the reply leaves, so an acknowledged
        // call always has its row; committed to the log in batches.
        self.store.queue_audit(record, self.audit_max_rows).await;
        self.events.publish_with(|| match result {
            Ok(out) => Event::CallFinished {
                call_id: call_id.0.clone(),
                tool: req.tool.clone(),
                owner: req.owner.0.clone(),
                plugin: plugin.clone(),
                door: req.door.to_string(),
                duration_ms,
                is_error: out.is_error,
            },
            Err(e) => Event::CallFailed {
                call_id: call_id.0.clone(),
                tool: req.tool.clone(),
                owner: req.owner.0.clone(),
                plugin: plugin.clone(),
                door: req.door.to_string(),
                duration_ms,
                kind: e.kind().as_str().to_string(),
                message: e.to_string(),
            },
        });
    }
}

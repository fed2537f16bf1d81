//! Calls idempotent by key (Fenix's `idempotency_policy: by_key`): a call of such a tool
//! that carries a key — in the argument the tool names (`idempotency_key` unless it says
//! otherwise), or the REST door's `Idempotency-Key` header — runs once; a call repeated
//! with the same key (same caller and tool) gets the first call's result, and one that
//! comes while the first still runs waits for it. A call that ended without a result
//! (refused, timed out, cancelled) leaves nothing behind: it can be made again.
//!
//! Results are remembered in this process for a day, at most [`MAX_KEYS`] of them and
//! [`MAX_BYTES`] in all (the oldest go first).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::OnceCell;
use toolshed_core::{Content, ToolOutput};

/// How long a key's result is remembered.
const KEPT: Duration = Duration::from_secs(24 * 3600);
/// The most keys remembered.
pub(super) const MAX_KEYS: usize = 1000;
/// The most bytes of results remembered.
pub(super) const MAX_BYTES: usize = 16 * 1024 * 1024;
/// The longest key taken.
pub(super) const MAX_KEY_BYTES: usize = 256;

/// One key's result, once there is one.
pub(super) type Slot = Arc<OnceCell<(String, ToolOutput)>>;

#[derive(Default)]
struct Kept {
    slots: HashMap<String, (Instant, Slot, usize)>,
    order: VecDeque<String>,
    bytes: usize,
}

/// The results of calls made with an idempotency key.
#[derive(Default)]
pub(super) struct Remembered(Mutex<Kept>);

impl Remembered {
    /// The slot of `owner`'s call of `tool` with `key`: empty for the first call, which
    /// fills it; holding the first result for the others.
    pub(super) fn slot(&self, owner: &str, tool: &str, key: &str) -> Slot {
        let id = format!("{owner}\0{tool}\0{key}");
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        // The expired, the oldest first.
        while let Some(oldest) = kept.order.front().cloned() {
            let expired = kept
                .slots
                .get(&oldest)
                .is_none_or(|(at, _, _)| now.duration_since(*at) > KEPT);
            if !expired && kept.order.len() < MAX_KEYS && kept.bytes <= MAX_BYTES {
                break;
            }
            kept.order.pop_front();
            if let Some((_, _, size)) = kept.slots.remove(&oldest) {
                kept.bytes = kept.bytes.saturating_sub(size);
            }
        }
        if let Some((_, slot, _)) = kept.slots.get(&id) {
            return slot.clone();
        }
        let slot = Slot::default();
        kept.slots.insert(id.clone(), (now, slot.clone(), 0));
        kept.order.push_back(id);
        slot
    }

    /// Counts the size of the result now in `owner`'s slot for `tool` and `key`.
    pub(super) fn filled(&self, owner: &str, tool: &str, key: &str, output: &ToolOutput) {
        let id = format!("{owner}\0{tool}\0{key}");
        let size = output_bytes(output);
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = kept.slots.get_mut(&id) {
            entry.2 = size;
            kept.bytes += size;
        }
    }

    /// Forgets an empty slot whose first call ended without a result.
    pub(super) fn forget_empty(&self, owner: &str, tool: &str, key: &str) {
        let id = format!("{owner}\0{tool}\0{key}");
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept
            .slots
            .get(&id)
            .is_some_and(|(_, slot, _)| slot.get().is_none())
        {
            kept.slots.remove(&id);
            kept.order.retain(|k| k != &id);
        }
    }
}

fn output_bytes(output: &ToolOutput) -> usize {
    let content: usize = output
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.len(),
            other => serde_json::to_vec(other).map_or(0, |v| v.len()),
        })
        .sum();
    content
        + output
            .structured
            .as_ref()
            .map_or(0, |v| v.to_string().len())
}

/// The key a call carries: the door's, else the tool's key argument (a string, or a number
/// as written).
pub(super) fn key_of(door_key: Option<&str>, field: &str, arguments: &Value) -> Option<String> {
    door_key
        .map(str::to_string)
        .or_else(|| match arguments.get(field)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

/// The first call's result, told as such.
pub(super) fn replayed(first_call: &str, key: &str, output: &ToolOutput) -> ToolOutput {
    let mut output = output.clone();
    output.content.push(Content::Text {
        text: format!(
            "note from toolshed: idempotency key `{key}` was used before; this is the result of that first call ({first_call}), which is not run again."
        ),
    });
    output
}

impl super::Dispatcher {
    /// Runs a call of a tool idempotent by key once per key ([the module](self)).
    pub(super) async fn run_once(
        &self,
        req: &super::CallRequest,
        key: String,
        arguments: Value,
        call_id: &toolshed_core::CallId,
        entry: crate::registry::ToolEntry,
        approval: &mut Option<String>,
    ) -> Result<ToolOutput, toolshed_core::ToolError> {
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(toolshed_core::ToolError::invalid(format!(
                "the idempotency key is {} bytes; give 1 to {MAX_KEY_BYTES}",
                key.len()
            )));
        }
        let owner = req.owner.0.as_str();
        let slot = self.remembered.slot(owner, &req.tool, &key);
        let first = slot
            .get_or_try_init(|| async move {
                let output = self
                    .run_resolved(req, arguments, call_id, entry, approval)
                    .await?;
                Ok::<_, toolshed_core::ToolError>((call_id.0.clone(), output))
            })
            .await;
        match first {
            Ok((first_call, output)) if *first_call == call_id.0 => {
                self.remembered.filled(owner, &req.tool, &key, output);
                Ok(output.clone())
            }
            Ok((first_call, output)) => Ok(replayed(first_call, &key, output)),
            Err(e) => {
                self.remembered.forget_empty(owner, &req.tool, &key);
                Err(e)
            }
        }
    }
}

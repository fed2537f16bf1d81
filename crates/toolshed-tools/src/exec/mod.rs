//! Command execution: the `system.exec_command` plugin (one-shot commands that may become
//! sessions, PTYs, a persistent shell) and the `system.process` plugin (detached background
//! processes with logs and a port proxy).
//!
//! Every child goes through the call's [`ProcessOps`](toolshed_ops::process::ProcessOps): its
//! own session and process group, a clean environment, the working directory resolved
//! inside the workspace, bounded output, and stopping means the whole tree. The tools add
//! what a model needs on top: yield windows, output cleaned of terminal escapes and cut to
//! a budget with the middle left out, sessions keyed by owner, and limits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolshed_core::{CallContext, ToolError, ToolOutput};
use toolshed_ops::ProcessOps;
use toolshed_ops::process::{Drain, Exit, ExitStatus, LimitHit, Process, StopReason, Stream};
use toolshed_ops::sandbox::SandboxMode;

mod close;
mod command;
mod process;
mod readiness;
mod sessions;
mod shell;
mod spec;
pub mod terminal;

pub use command::{EXEC_PLUGIN_ID, exec_plugin};
pub use process::{PROCESS_PLUGIN_ID, process_plugin};
pub use sessions::{Session, SessionTable};

/// The group of every command tool.
pub const GROUP: &str = "exec";

/// The longest any wait inside one call may last: calls have deadlines of their own, and a
/// waiting call always returns a little before its deadline.
const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

/// How long a call may still wait, given what it asked for and the call's deadline.
pub(crate) fn clamp_wait(ctx: &CallContext, asked: Duration) -> Duration {
    let left = ctx
        .deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(DEADLINE_MARGIN);
    asked.min(left)
}

/// Output read from a process for a reply: cleaned text within a byte budget.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub text: String,
    /// The offset after what was read.
    pub next: u64,
    /// Bytes between `since` and `next` left out (over the budget, or no longer kept).
    pub omitted: u64,
}

/// The output of `stream` from `since` on, at most `budget` bytes of it: when there is more,
/// the first and last halves with a line saying how much was left out between them.
pub(crate) fn render(process: &Process, stream: Stream, since: u64, budget: usize) -> Rendered {
    render_to(process, stream, since, process.output_len(stream), budget)
}

/// [`render`] of the bytes from `since` up to `end` only.
pub(crate) fn render_to(
    process: &Process,
    stream: Stream,
    since: u64,
    end: u64,
    budget: usize,
) -> Rendered {
    let total = end.min(process.output_len(stream));
    let since = since.min(total);
    let budget = budget.max(2) as u64;
    let (head_end, tail_start) = if total - since <= budget {
        (total, total)
    } else {
        let half = budget / 2;
        (since + half, total - half)
    };
    let mut parts = Vec::new();
    let mut shown = 0u64;
    let mut next = read_range(process, stream, since, head_end, &mut parts, &mut shown);
    if tail_start > next {
        parts.push(Part::Gap);
        next = read_range(process, stream, tail_start, total, &mut parts, &mut shown);
    }
    let omitted = (next - since).saturating_sub(shown);
    let mut text = String::new();
    let mut gap_done = false;
    for part in parts {
        match part {
            Part::Bytes(bytes) => text.push_str(&terminal::clean(&bytes)),
            Part::Gap if !gap_done && omitted > 0 => {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&omitted_line(omitted));
                gap_done = true;
            }
            Part::Gap => {}
        }
    }
    Rendered {
        text,
        next,
        omitted,
    }
}

enum Part {
    Bytes(Vec<u8>),
    /// Bytes left out here (dropped by the buffer, or over the budget).
    Gap,
}

/// Reads `[from, to)` of a stream, chunk after chunk (a buffer read stops where its head
/// ends), noting where bytes were no longer kept. Returns the offset reached.
fn read_range(
    process: &Process,
    stream: Stream,
    from: u64,
    to: u64,
    parts: &mut Vec<Part>,
    shown: &mut u64,
) -> u64 {
    let mut at = from;
    while at < to {
        let want = usize::try_from(to - at).unwrap_or(usize::MAX).min(1 << 20);
        let chunk = process.read(stream, at, want);
        if chunk.skipped > 0 {
            parts.push(Part::Gap);
        }
        let keep = usize::try_from(to.saturating_sub(chunk.start))
            .unwrap_or(usize::MAX)
            .min(chunk.bytes.len());
        if keep == 0 && chunk.next <= at {
            break;
        }
        *shown += keep as u64;
        let mut bytes = chunk.bytes;
        bytes.truncate(keep);
        parts.push(Part::Bytes(bytes));
        at = (chunk.start + keep as u64).max(at + u64::from(keep == 0));
    }
    at.min(to)
}

fn omitted_line(bytes: u64) -> String {
    format!("[… {bytes} bytes of output omitted …]\n")
}

/// How a process ended, as fields of a reply.
pub(crate) fn exit_fields(exit: &Exit, timed_out: bool, out: &mut Map<String, Value>) {
    match exit.status {
        ExitStatus::Code(code) => {
            out.insert("exit_code".into(), json!(code));
        }
        ExitStatus::Signal(signal) => {
            out.insert("exit_code".into(), Value::Null);
            out.insert("signal".into(), json!(signal));
        }
    }
    out.insert(
        "wall_time_ms".into(),
        json!(u64::try_from(exit.duration.as_millis()).unwrap_or(u64::MAX)),
    );
    let mut notes = Vec::new();
    if timed_out {
        notes.push("timed out: the whole process tree was killed".to_string());
    } else {
        match exit.stopped {
            Some(StopReason::OutputLimit) => notes.push(
                "printed more output than the limit allows: the whole process tree was killed"
                    .to_string(),
            ),
            Some(StopReason::Requested(_)) => {
                notes.push("stopped on request: the whole process tree was killed".to_string())
            }
            None => {}
        }
    }
    match exit.limit {
        Some(LimitHit::Memory) => {
            out.insert("limit".into(), json!("memory"));
            notes.push(
                "ran out of its memory limit ([sandbox] max_memory_mb): the kernel killed a process of its tree"
                    .to_string(),
            );
        }
        Some(LimitHit::Processes) => {
            out.insert("limit".into(), json!("processes"));
            notes.push(
                "reached its process limit ([sandbox] max_processes): starting more processes failed"
                    .to_string(),
            );
        }
        None => {}
    }
    if let Drain::Abandoned { after } = exit.drain {
        notes.push(format!(
            "background processes it started kept its output open; stopped reading {} ms after it exited",
            after.as_millis()
        ));
    }
    if !exit.diverted.is_empty() {
        // Moved into the `sandbox` block by `with_sandbox`.
        out.insert("diverted".into(), json!(exit.diverted));
        notes.push(format!(
            "the sandbox kept these writes in the command's private /tmp and /dev/shm, which \
             were discarded when it ended — nothing outside the sandbox changed: {}",
            exit.diverted.join(", ")
        ));
    }
    if !notes.is_empty() {
        out.insert("note".into(), json!(notes.join("; ")));
    }
}

/// A one-line summary of how a process ended, for the text of a reply.
pub(crate) fn exit_line(fields: &Map<String, Value>) -> String {
    let mut parts = Vec::new();
    match (fields.get("exit_code"), fields.get("signal")) {
        (Some(Value::Number(code)), _) => parts.push(format!("exit code {code}")),
        (_, Some(signal)) => parts.push(format!("killed by signal {signal}")),
        _ => {}
    }
    if let Some(ms) = fields.get("wall_time_ms").and_then(Value::as_u64) {
        parts.push(format!("{:.2} s", ms as f64 / 1000.0));
    }
    if let Some(note) = fields.get("note").and_then(Value::as_str) {
        parts.push(note.to_string());
    }
    format!("[{}]", parts.join(" · "))
}

/// A duration argument in milliseconds, checked against `min..=max`: the schema says the
/// same, but direct calls (tests, other Rust code) skip the pipeline's validation.
pub(crate) fn millis(key: &str, ms: u64, min: u64, max: u64) -> Result<Duration, ToolError> {
    if (min..=max).contains(&ms) {
        Ok(Duration::from_millis(ms))
    } else {
        Err(ToolError::invalid(format!(
            "{key} = {ms} is out of range: give whole milliseconds from {min} to {max}"
        )))
    }
}

/// `output` with a `sandbox` block in its structured part: the mode the command ran in
/// (`mode`: what the call asked for, `None` for the host's) and the layers enforcing it
/// (`{"mode": "full-access", "enforced": []}` without a sandbox).
pub(crate) fn with_sandbox(
    process: &dyn ProcessOps,
    mode: Option<SandboxMode>,
    mut output: ToolOutput,
) -> ToolOutput {
    if let Some(Value::Object(fields)) = output.structured.as_mut() {
        let diverted = fields.remove("diverted");
        let block = match process.sandbox(mode) {
            Ok(Some(e)) => {
                let mut block = json!({
                    "mode": e.mode.as_str(),
                    "network": e.network.as_str(),
                    "enforced": e.enforced,
                });
                if let Some(diverted) = diverted {
                    block["diverted"] = diverted;
                }
                block
            }
            Ok(None) => json!({"mode": "full-access", "network": "on", "enforced": []}),
            // Not reached after a command started: it was checked the same way.
            Err(e) => json!({"error": e.to_string()}),
        };
        fields.insert("sandbox".into(), block);
    }
    output
}

/// The owner a limit counts an item under: a sub-owner (`alice/task-7`) counts as its owner.
fn base_owner(owner: &str) -> &str {
    owner.split('/').next().unwrap_or(owner)
}

/// What [`make_room`] counts, and how it names it.
pub(crate) struct Room<'a> {
    /// The new item's owner.
    pub(crate) owner: &'a str,
    /// The most items, all owners together.
    pub(crate) max: usize,
    /// The most items of one owner (sub-owners counted as their owner).
    pub(crate) max_per_owner: usize,
    /// `command sessions`, `background processes`.
    pub(crate) what: &'static str,
    /// The plugin and config keys that set the limits, for the message.
    pub(crate) plugin: &'static str,
    pub(crate) key: &'static str,
    pub(crate) key_per_owner: &'static str,
    /// How to stop one.
    pub(crate) stop_with: &'static str,
}

/// Makes room for one more item of `room.owner` in `items`, evicting finished items — the
/// owner's own first when the owner is at its limit — or says which limit is reached.
pub(crate) fn make_room<K: Copy + Ord, T>(
    items: &mut std::collections::BTreeMap<K, Arc<T>>,
    room: &Room<'_>,
    owner_of: impl Fn(&T) -> &str,
    running: impl Fn(&T) -> bool,
) -> Result<(), ToolError> {
    let mine = base_owner(room.owner);
    loop {
        let owned = items
            .values()
            .filter(|t| base_owner(owner_of(t)) == mine)
            .count();
        let (full, only_mine) = if owned >= room.max_per_owner {
            (true, true)
        } else if items.len() >= room.max {
            (true, false)
        } else {
            return Ok(());
        };
        debug_assert!(full);
        let finished = items
            .iter()
            .find(|(_, t)| !running(t) && (!only_mine || base_owner(owner_of(t)) == mine))
            .map(|(k, _)| *k);
        match finished {
            Some(key) => {
                items.remove(&key);
            }
            None if only_mine => {
                return Err(ToolError::Conflict(format!(
                    "`{mine}` has {owned} {} running, the most one owner may keep (config `{}` of plugin {}); {}, or wait for one to finish",
                    room.what, room.key_per_owner, room.plugin, room.stop_with
                )));
            }
            None => {
                return Err(ToolError::Conflict(format!(
                    "{} {} are running, the most this host keeps (config `{}` of plugin {}); {}, or wait for one to finish",
                    items.len(),
                    room.what,
                    room.key,
                    room.plugin,
                    room.stop_with
                )));
            }
        }
    }
}

/// Adds what the host adds to this call's commands (granted plugins' `shell_env`, the
/// caller's session layer) under the variables the call set itself.
pub(crate) fn add_command_env(request: &mut toolshed_ops::SpawnRequest, ctx: &CallContext) {
    let layered: std::collections::BTreeMap<String, String> =
        ctx.command_env.vars(&ctx.owner).into_iter().collect();
    for (name, value) in layered {
        request.env.entry(name).or_insert(value);
    }
}

/// The sandbox mode a command of this call runs in: the narrower of what the call asked
/// (`sandbox` argument) and what its caller is narrowed to (profile, token, policy rule);
/// `None`: the host's.
pub(crate) fn effective_mode(asked: Option<SandboxMode>, ctx: &CallContext) -> Option<SandboxMode> {
    let narrowed = ctx
        .sandbox
        .as_deref()
        .and_then(|m| SandboxMode::parse(m).ok());
    match (asked, narrowed) {
        (Some(a), Some(n)) => Some(a.min(n)),
        (a, n) => a.or(n),
    }
}

/// The owner id of a call, as sessions key it.
pub(crate) fn owner(ctx: &CallContext) -> String {
    ctx.owner.0.clone()
}

/// A plugin config value read as a positive integer, else `default`.
pub(crate) fn config_usize(ctx: &CallContext, key: &str, default: usize) -> usize {
    ctx.config
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|v| usize::try_from(v).ok())
        .filter(|v| *v > 0)
        .unwrap_or(default)
}

/// Shared across the tools of one plugin.
pub(crate) type Table = Arc<SessionTable>;

#[cfg(test)]
mod tests;

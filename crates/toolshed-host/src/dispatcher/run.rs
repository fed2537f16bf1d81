//! Running a resolved call: its arguments checked against the schema, the tool run
//! under its deadline and cancellation, and what is quoted or traced of it kept short.

use std::time::{Duration, Instant};

use tracing::Instrument as _;

use serde_json::Value;
use toolshed_core::{CallContext, CancellationToken, ToolError, ToolOutput, Violation};

use super::{CANCEL_GRACE, MAX_VIOLATIONS};
use crate::registry::ToolEntry;

/// The most bytes of a value quoted in a message.
const MAX_QUOTED: usize = 120;

/// `value` as a message quotes it: its JSON when short, else the start of it and its size,
/// so that an oversized argument is never echoed whole (nor rendered whole in memory).
pub(super) fn preview(value: &Value) -> String {
    struct Capped(Vec<u8>);
    impl std::io::Write for Capped {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let room = MAX_QUOTED - self.0.len();
            if bytes.len() > room {
                self.0.extend_from_slice(&bytes[..room]);
                return Err(std::io::Error::other("the preview is full"));
            }
            self.0.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut capped = Capped(Vec::with_capacity(MAX_QUOTED));
    let whole = serde_json::to_writer(&mut capped, value).is_ok();
    let text = String::from_utf8_lossy(&capped.0).into_owned();
    if whole {
        return text;
    }
    let size = match value {
        Value::String(s) => format!("a string of {} bytes", s.len()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object of {} members", o.len()),
        _ => "a long value".into(),
    };
    format!("{text}… ({size})")
}

/// Step 3: `args` against the tool's size limits (first what the door left out as over
/// them, `left_out`), then against its schema, listing every violation. The message says
/// what the tool takes: the CLI points at `toolshed tools show`; other doors (a model on
/// MCP) get the arguments themselves, and a "did you mean" for each unknown name.
pub(super) fn validate(
    entry: &ToolEntry,
    args: &Value,
    left_out: &[toolshed_core::OversizedArgument],
    door: &str,
) -> Result<(), ToolError> {
    let limits = &entry.spec().max_argument_bytes;
    if let Some(over) = left_out.first() {
        return Err(over.error(&entry.spec().name));
    }
    if !limits.is_empty()
        && let Some(over) = toolshed_core::oversized::oversized_values(args, limits).first()
    {
        return Err(over.error(&entry.spec().name));
    }
    let validator = entry.validator.get().map_err(|e| {
        ToolError::Internal(format!(
            "the input schema of `{}` does not compile: {e}",
            entry.spec().name
        ))
    })?;
    let mut violations: Vec<Violation> = validator
        .iter_errors(args)
        .map(|e| Violation {
            pointer: e.instance_path().to_string(),
            message: e.masked_with(preview(e.instance())).to_string(),
        })
        .take(MAX_VIOLATIONS + 1)
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    let more = violations.len() > MAX_VIOLATIONS;
    violations.truncate(MAX_VIOLATIONS);
    let count = if more {
        format!("more than {MAX_VIOLATIONS} problems")
    } else {
        toolshed_core::counted(violations.len(), "problem", "problems")
    };
    let spec = entry.spec();
    let mut message = format!(
        "the arguments for `{}` do not match its input schema ({count})",
        spec.name
    );
    for hint in crate::arguments::unknown_names(&spec.input_schema, args) {
        message.push_str("; ");
        message.push_str(&hint);
    }
    if door != "mcp" {
        message.push_str(&format!(
            "; `toolshed tools show {}` prints the schema",
            spec.name
        ));
    } else {
        message.push_str(&format!(
            ". `{}` takes: {}",
            spec.name,
            crate::arguments::outline(&spec.input_schema)
        ));
    }
    Err(ToolError::InvalidArguments {
        message,
        violations,
    })
}

/// Runs the tool on its own task, so a panic is contained, and stops it at the deadline or
/// on cancellation: the call's token is cancelled first (tools stop their children), then
/// the task is aborted.
///
/// A tool that changes things and finishes its work although the deadline passed (or the
/// caller cancelled) — a file write whose rename happened — is not reported as timed out:
/// what it did stands, so its result is returned with a note saying it completed late, and
/// the audit row records it as done. Tools that stop on their token answer `Cancelled` or
/// an error, and a read-only tool's late answer may be partial (a search cut short): the
/// call is then the timeout (or cancellation) it was — answered at once for a read-only
/// tool, which finishes its clean-up behind the answer.
pub(super) async fn run_with_deadline(
    entry: ToolEntry,
    ctx: CallContext,
    args: Value,
    timeout: Duration,
    caller_cancel: &CancellationToken,
    call_cancel: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let name = entry.spec().name.clone();
    let changes_things = !entry.spec().annotations.read_only;
    let tool = entry.tool.clone();
    let started = Instant::now();
    // The tool's own spans (its operations) belong to the call's trace.
    // Retries made on the call's behalf (a remote worker reconnected) reach its audit note.
    let note = ctx.audit_note.clone();
    let mut task = tokio::spawn(
        note.scope(async move { tool.call(ctx, args).await })
            .instrument(tracing::Span::current()),
    );
    let joined =
        |joined: Result<Result<ToolOutput, ToolError>, tokio::task::JoinError>| match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => {
                tracing::error!(tool = %name, "tool panicked");
                Err(ToolError::Internal(format!(
                    "tool `{name}` crashed; this is a bug in the tool, please report it"
                )))
            }
            Err(_) => Err(ToolError::Cancelled),
        };
    let stopped = tokio::select! {
        result = &mut task => return joined(result),
        _ = tokio::time::sleep(timeout) => ToolError::Timeout(timeout),
        _ = caller_cancel.cancelled() => ToolError::Cancelled,
    };
    // Let the tool see its token and clean up (kill its children, remove temp files) before
    // the task is dropped; a tool that had already finished answers at once.
    call_cancel.cancel();
    if !changes_things {
        // Whatever a read-only tool answers late is not used, so the caller is not kept
        // waiting for it (a read stuck on a slow remote, say): it cleans up, or is
        // aborted, behind the answer.
        tokio::spawn(async move {
            if tokio::time::timeout(CANCEL_GRACE, &mut task).await.is_err() {
                task.abort();
            }
        });
        return Err(stopped);
    }
    let finished = match tokio::time::timeout(CANCEL_GRACE, &mut task).await {
        Ok(result) => joined(result),
        Err(_) => {
            tracing::warn!(tool = %entry.spec().name, "tool ignored cancellation; aborting it");
            task.abort();
            return Err(stopped);
        }
    };
    match finished {
        Ok(mut output) if changes_things && !output.is_error => {
            let took = started.elapsed().as_millis();
            let note = match stopped {
                ToolError::Timeout(limit) => format!(
                    "[completed after its deadline: it took {took} ms of the {} ms allowed; \
                     what it did stands]",
                    limit.as_millis()
                ),
                _ => format!(
                    "[completed although the call was cancelled ({took} ms); what it did stands]"
                ),
            };
            output
                .content
                .push(toolshed_core::Content::Text { text: note });
            Ok(output)
        }
        _ => Err(stopped),
    }
}

/// The most bytes of a call's arguments put on its span (`[telemetry] record_arguments`).
const MAX_TRACED_ARGUMENTS: usize = 4096;

/// A call's arguments as its span carries them: JSON, cut at [`MAX_TRACED_ARGUMENTS`].
pub(super) fn arguments_for_trace(arguments: &Value) -> String {
    let mut json = arguments.to_string();
    if json.len() > MAX_TRACED_ARGUMENTS {
        let mut end = MAX_TRACED_ARGUMENTS;
        while !json.is_char_boundary(end) {
            end -= 1;
        }
        json.truncate(end);
        json.push('…');
    }
    json
}

/// Records how a call ended on its span: the plugin, the outcome, and for a failure the
/// error's kind as `error.type` with an error status (a tool's own error result included).
pub(super) fn trace_outcome(
    span: &tracing::Span,
    plugin: Option<&str>,
    result: &Result<ToolOutput, ToolError>,
) {
    if let Some(plugin) = plugin {
        span.record("toolshed.plugin", plugin);
    }
    let (outcome, error) = match result {
        Ok(output) if output.is_error => ("tool_error", Some("tool_error".to_string())),
        Ok(_) => ("ok", None),
        Err(e) => ("error", Some(e.kind().as_str().to_string())),
    };
    span.record("toolshed.outcome", outcome);
    if let Some(kind) = error {
        span.record("error.type", kind.as_str());
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_description", kind.as_str());
    }
}

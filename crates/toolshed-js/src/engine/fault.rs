//! Why a call produced no result, how what it returned is checked, and the error a caller
//! sees.

use rquickjs::{Ctx, Value};
use toolshed_core::ToolError;

use super::convert::{Thrown, to_json_text};
use super::{CallRequest, JsReturn, Stop};
use crate::limits::{JsLimits, show_bytes, show_duration};

/// Why JavaScript did not produce a result.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The script threw, or its promise rejected.
    Threw(Thrown),
    /// The guard stopped it.
    Stopped(Stop),
    /// The promise is pending and nothing the host does can settle it.
    NeverSettles,
    /// The result is larger than `max_output_bytes` (its size).
    TooLarge(usize),
    /// The result cannot be used; the text says why.
    BadResult(String),
    /// A host-side failure.
    Internal(String),
}

/// Maps what `run` settled with to a [`JsReturn`], enforcing the output size limit.
pub(super) fn returned<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    max: usize,
) -> Result<JsReturn, Fault> {
    if value.is_undefined() || value.is_null() {
        return Ok(JsReturn::Nothing);
    }
    if let Some(s) = value.as_string() {
        let text = s.to_string().map_err(|e| Fault::BadResult(e.to_string()))?;
        if text.len() > max {
            return Err(Fault::TooLarge(text.len()));
        }
        return Ok(JsReturn::Text(text));
    }
    if value.is_function() || value.is_symbol() {
        return Err(Fault::BadResult(
            "run() returned a function or symbol; return a string, an object or an array".into(),
        ));
    }
    match to_json_text(ctx, value) {
        Ok(None) => Ok(JsReturn::Nothing),
        Ok(Some(text)) => {
            if text.len() > max {
                return Err(Fault::TooLarge(text.len()));
            }
            serde_json::from_str(&text)
                .map(JsReturn::Json)
                .map_err(|e| Fault::BadResult(format!("run()'s result is not usable JSON: {e}")))
        }
        Err(Thrown::Error(why)) => Err(Fault::BadResult(format!(
            "run()'s result cannot be turned into JSON: {why}"
        ))),
        Err(other) => Err(Fault::Threw(other)),
    }
}

/// The error a caller sees for `fault`; `snippet`: the code is a caller's (`run_code`),
/// not a plugin that lives on after the call.
pub(super) fn fault_to_error(
    fault: Fault,
    plugin_id: &str,
    limits: &JsLimits,
    req: &CallRequest,
    snippet: bool,
) -> ToolError {
    let (code, usable) = if snippet {
        ("the code", "")
    } else {
        ("the plugin's code", "; the plugin stays usable")
    };
    match fault {
        Fault::Threw(Thrown::Error(text)) => {
            ToolError::Failed(without_location(text, plugin_id, req))
        }
        Fault::Threw(Thrown::OutOfMemory) => ToolError::Failed(format!(
            "{code} ran out of its {} memory limit and was stopped; its memory was reclaimed{usable}. Retry with a smaller request",
            show_bytes(limits.memory_bytes)
        )),
        Fault::Threw(Thrown::StackOverflow(text)) => ToolError::Failed(format!(
            "{code} ran past its {} stack limit (recursion too deep) and was stopped: {}",
            show_bytes(limits.stack_bytes),
            without_location(text, plugin_id, req)
        )),
        Fault::Stopped(Stop::Cpu) => ToolError::Failed(format!(
            "{code} ran past its {} CPU limit without awaiting (an endless loop?) and was stopped{usable}",
            show_duration(limits.cpu_per_call)
        )),
        Fault::Stopped(Stop::Wall) => {
            ToolError::Timeout(req.ctx.deadline.saturating_duration_since(req.started))
        }
        Fault::Stopped(Stop::Cancelled) => ToolError::Cancelled,
        Fault::Stopped(Stop::Shutdown) => {
            ToolError::Failed(format!("plugin `{plugin_id}` was stopped while the call ran"))
        }
        Fault::NeverSettles => ToolError::Failed(
            "run() returned a promise that can never settle: it awaits nothing the host is working on (a `new Promise` whose resolve is never called?)".into(),
        ),
        Fault::TooLarge(size) => ToolError::Failed(format!(
            "the result is {size} bytes; the limit is {}. Return less: a page, a summary or fewer fields",
            show_bytes(limits.max_output_bytes)
        )),
        Fault::BadResult(text) => ToolError::Failed(text),
        Fault::Internal(text) => ToolError::Internal(text),
    }
}

/// A thrown error's text without the stack line [`super::convert`] appends (`(at run
/// (main.js:12:9))`): the model calling the tool can do nothing with the plugin's source
/// positions. The plugin's author finds the line in the log (level `info`).
fn without_location(text: String, plugin_id: &str, req: &CallRequest) -> String {
    match split_location(&text) {
        Some((message, at)) => {
            tracing::info!(
                plugin = plugin_id,
                action = %req.action,
                at,
                "the plugin's code threw: {message}"
            );
            message.to_string()
        }
        None => text,
    }
}

/// `message (at frame)` split in two, when the tail is a stack frame ending in a source
/// position (`main.js:12:9`).
fn split_location(text: &str) -> Option<(&str, &str)> {
    let start = text.rfind(" (at ")?;
    let at = text[start + 2..].strip_suffix(')')?;
    let position = at.trim_end_matches(')');
    let mut parts = position.rsplitn(3, ':');
    let column = parts.next()?;
    let line = parts.next()?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (numeric(column) && numeric(line) && parts.next().is_some()).then(|| (&text[..start], at))
}

#[cfg(test)]
mod tests {
    use super::split_location;

    #[test]
    fn the_stack_frame_is_split_off_only_when_it_is_one() {
        assert_eq!(
            split_location("the widget is broken (at run (main.js:4:15))"),
            Some(("the widget is broken", "at run (main.js:4:15)"))
        );
        assert_eq!(
            split_location("TypeError: x (at main.js:3:1)"),
            Some(("TypeError: x", "at main.js:3:1"))
        );
        assert_eq!(split_location("see the manual (at page 4)"), None);
        assert_eq!(split_location("no frame"), None);
    }
}

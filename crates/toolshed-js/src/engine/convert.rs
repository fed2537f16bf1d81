//! Moving values between JavaScript and Rust, and describing what a script threw.
//!
//! Values cross as JSON (`JSON.parse` / `JSON.stringify` inside the engine), so the
//! conversion rules are JSON's: functions and `undefined` properties vanish, `toJSON` is
//! honoured, a cycle or a `BigInt` is an error.

use rquickjs::{Ctx, Exception, Value};

/// The kinds of failure the engine tells apart when a script throws or rejects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Thrown {
    /// An ordinary exception: its text, with the first stack line.
    Error(String),
    /// The runtime's memory limit was hit.
    OutOfMemory,
    /// The stack limit was hit; the text says where.
    StackOverflow(String),
}

/// The JSON text of a JavaScript value turned into a `serde_json::Value`; `None` when
/// `JSON.stringify` gives nothing (`undefined`, a function, a symbol).
pub(crate) fn to_json<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
) -> Result<Option<serde_json::Value>, Thrown> {
    let text = match ctx.json_stringify(value) {
        Ok(Some(s)) => s.to_string().map_err(|e| Thrown::Error(e.to_string()))?,
        Ok(None) => return Ok(None),
        Err(e) => return Err(caught(ctx, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Thrown::Error(format!("the value is not valid JSON: {e}")))
}

/// Like [`to_json`], but also returns the compact JSON text's length, for size limits.
pub(crate) fn to_json_text<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
) -> Result<Option<std::string::String>, Thrown> {
    match ctx.json_stringify(value) {
        Ok(Some(s)) => s
            .to_string()
            .map(Some)
            .map_err(|e| Thrown::Error(e.to_string())),
        Ok(None) => Ok(None),
        Err(e) => Err(caught(ctx, e)),
    }
}

/// A `serde_json::Value` as a JavaScript value.
pub(crate) fn from_json<'js>(
    ctx: &Ctx<'js>,
    value: &serde_json::Value,
) -> rquickjs::Result<Value<'js>> {
    let text = serde_json::to_string(value).map_err(|e| rquickjs::Error::IntoJs {
        from: "serde_json::Value",
        to: "JSON text",
        message: Some(e.to_string()),
    })?;
    ctx.json_parse(text)
}

/// Describes an `rquickjs` error, taking the pending exception when there is one.
pub(crate) fn caught(ctx: &Ctx<'_>, error: rquickjs::Error) -> Thrown {
    match error {
        rquickjs::Error::Exception => describe(ctx, ctx.catch()),
        rquickjs::Error::Allocation => Thrown::OutOfMemory,
        other => Thrown::Error(other.to_string()),
    }
}

/// The description of a thrown `null`.
pub(crate) const THREW_NULL: &str = "the script threw `null`";

/// Describes a thrown (or rejected-with) value.
pub(crate) fn describe<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Thrown {
    // A value QuickJS throws while out of memory may be `null`: it could not allocate more.
    if value.is_null() || value.is_undefined() {
        return Thrown::Error(if value.is_null() {
            THREW_NULL.into()
        } else {
            "the script threw `undefined`".into()
        });
    }
    let Some(error) = value.as_exception() else {
        let text = if let Some(s) = value.as_string() {
            s.to_string().unwrap_or_default()
        } else {
            match to_json_text(ctx, value.clone()) {
                Ok(Some(t)) => t,
                _ => "a value that is not an Error".into(),
            }
        };
        return Thrown::Error(cap(format!("the script threw {text}"), 2000));
    };
    let name: std::string::String = error
        .get::<_, Option<rquickjs::Coerced<std::string::String>>>("name")
        .ok()
        .flatten()
        .map(|c| c.0)
        .unwrap_or_else(|| "Error".into());
    let message = error.message().unwrap_or_default();
    if name == "InternalError" && message == "out of memory" {
        return Thrown::OutOfMemory;
    }
    let location = error.stack().as_deref().and_then(first_frame);
    let mut text = if name == "Error" || name.is_empty() {
        message.clone()
    } else {
        format!("{name}: {message}")
    };
    if let Some(at) = location {
        text.push_str(&format!(" ({at})"));
    }
    let text = cap(text, 2000);
    if name == "RangeError" && message.contains("call stack size exceeded") {
        return Thrown::StackOverflow(text);
    }
    Thrown::Error(text)
}

/// The first frame of a QuickJS stack (`at run (main.js:3:11)`). Module names are the
/// entry's path relative to the plugin directory, so no host path shows up.
fn first_frame(stack: &str) -> Option<std::string::String> {
    stack
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| cap(l.to_string(), 300))
}

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
pub(crate) fn cap(mut text: std::string::String, max: usize) -> std::string::String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
    text
}

/// A JavaScript `Error` with `message`, for rejecting promises.
pub(crate) fn error_value<'js>(ctx: &Ctx<'js>, message: &str) -> rquickjs::Result<Value<'js>> {
    Ok(Exception::from_message(ctx.clone(), message)?.into_value())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_character_boundaries() {
        assert_eq!(cap("héllo".into(), 2), "h…");
        assert_eq!(cap("abc".into(), 5), "abc");
        assert_eq!(
            first_frame("    at run (main.js:3:11)\n    at x").as_deref(),
            Some("at run (main.js:3:11)")
        );
    }
}

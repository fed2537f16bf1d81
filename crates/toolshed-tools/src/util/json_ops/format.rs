//! Reading JSON text with errors a model can fix, checking sizes, and printing.

use std::io;

use serde::Serialize;
use serde_json::ser::{PrettyFormatter, Serializer};
use serde_json::{Map, Value, json};
use toolshed_core::{ToolError, ToolOutput};

use super::{MAX_DEPTH, MAX_INPUT_BYTES};

/// Characters of the offending line shown on each side of the caret.
const EXCERPT_HALF_WIDTH: usize = 40;

/// Parses `text` (the argument named `field`) as JSON, within the size and depth limits.
pub(super) fn parse_text(field: &str, text: &str) -> Result<Value, ToolError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(too_big(field, text.len()));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| syntax_error(field, text, &e))?;
    // The parser already stops at its recursion limit; this keeps the limit in one place.
    check_depth(field, &value)?;
    Ok(value)
}

/// Checks a JSON value argument against the size and depth limits.
pub(super) fn check_value(field: &str, value: &Value) -> Result<(), ToolError> {
    // Depth first: it is computed without recursion, so it is safe on any value.
    check_depth(field, value)?;
    let size = serialized_len(value);
    if size > MAX_INPUT_BYTES {
        return Err(too_big(field, size));
    }
    Ok(())
}

fn too_big(field: &str, size: usize) -> ToolError {
    ToolError::invalid_at(
        format!("/{field}"),
        format!(
            "`{field}` is {size} bytes of JSON; the limit is {MAX_INPUT_BYTES} bytes (1 MiB). \
             Pass a smaller document or the part you need"
        ),
    )
}

fn check_depth(field: &str, value: &Value) -> Result<(), ToolError> {
    let depth = depth(value);
    if depth > MAX_DEPTH {
        return Err(ToolError::invalid_at(
            format!("/{field}"),
            format!(
                "`{field}` nests arrays and objects {depth} levels deep; the limit is \
                 {MAX_DEPTH}. Flatten the structure or pass an inner part"
            ),
        ));
    }
    Ok(())
}

/// The nesting depth of arrays and objects (a scalar is 0, `[]` is 1), without recursion.
pub(super) fn depth(value: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        match value {
            Value::Array(items) => {
                max = max.max(level + 1);
                stack.extend(items.iter().map(|v| (v, level + 1)));
            }
            Value::Object(map) => {
                max = max.max(level + 1);
                stack.extend(map.values().map(|v| (v, level + 1)));
            }
            _ => {}
        }
    }
    max
}

/// The length of a value's compact serialization, without building the string.
pub(super) use toolshed_core::oversized::json_len as serialized_len;

/// A syntax error with its line, column and the offending line marked by a caret.
fn syntax_error(field: &str, text: &str, e: &serde_json::Error) -> ToolError {
    let full = e.to_string();
    let reason = full
        .rfind(" at line ")
        .map_or(full.as_str(), |i| &full[..i]);
    let reason = if reason.contains("recursion limit exceeded") {
        format!("nesting deeper than {MAX_DEPTH} levels")
    } else {
        reason.to_string()
    };
    let line_no = e.line();
    let line = text.lines().nth(line_no.saturating_sub(1)).unwrap_or("");
    // serde_json counts the column in bytes, pointing at or just past the offending byte.
    let byte_column = e.column().min(line.len());
    let mut boundary = byte_column;
    while !line.is_char_boundary(boundary) {
        boundary -= 1;
    }
    let char_column = line[..boundary].chars().count();
    let caret = char_column.saturating_sub(1);
    let (excerpt, caret_in_excerpt) = excerpt(line, caret);
    let hint = if reason.contains("key must be a string") {
        " (JSON keys need double quotes)"
    } else if reason.contains("trailing comma") {
        " (JSON does not allow a comma before `]` or `}`)"
    } else {
        ""
    };
    ToolError::invalid_at(
        format!("/{field}"),
        format!(
            "`{field}` is not valid JSON: {reason}{hint} at line {line_no}, column {}:\n    \
             {excerpt}\n    {}^\nFix the JSON at that point and retry",
            char_column.max(1),
            " ".repeat(caret_in_excerpt)
        ),
    )
}

/// Up to [`EXCERPT_HALF_WIDTH`] characters on each side of character `caret` in `line`, with
/// `…` where it was cut, and the caret's position within the excerpt.
pub(super) fn excerpt(line: &str, caret: usize) -> (String, usize) {
    let chars: Vec<char> = line.chars().collect();
    let start = caret.saturating_sub(EXCERPT_HALF_WIDTH);
    let end = (caret + EXCERPT_HALF_WIDTH).min(chars.len());
    let mut out = String::new();
    let mut caret_at = caret - start;
    if start > 0 {
        out.push('…');
        caret_at += 1;
    }
    out.extend(chars.get(start..end).unwrap_or(&[]).iter().map(|&c| {
        // A tab would misalign the caret.
        if c == '\t' { ' ' } else { c }
    }));
    if end < chars.len() {
        out.push('…');
    }
    (out, caret_at)
}

/// `value` with every object's keys sorted, recursively.
fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

/// The largest pretty-printed output produced. Indentation grows with depth, so 1 MiB of
/// deeply nested JSON printed with a wide indent could otherwise expand a hundredfold.
const MAX_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// `value` printed with `indent` spaces per level, or compact for 0.
pub(super) fn print(value: &Value, indent: usize) -> Result<String, ToolError> {
    if indent == 0 {
        return Ok(super::compact(value));
    }
    /// A buffer that refuses to grow past [`MAX_OUTPUT_BYTES`].
    struct Limited(Vec<u8>);
    impl io::Write for Limited {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0.len() + buf.len() > MAX_OUTPUT_BYTES {
                return Err(io::Error::other("output limit reached"));
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let spaces = " ".repeat(indent);
    let mut out = Limited(Vec::new());
    let mut serializer =
        Serializer::with_formatter(&mut out, PrettyFormatter::with_indent(spaces.as_bytes()));
    if value.serialize(&mut serializer).is_err() {
        return Err(ToolError::invalid_at(
            "/indent",
            format!(
                "the document printed with indent {indent} would exceed {MAX_OUTPUT_BYTES} bytes \
                 (8 MiB), because indentation grows with nesting; use a smaller `indent` or 0 \
                 for compact output"
            ),
        ));
    }
    String::from_utf8(out.0)
        .map_err(|e| ToolError::Internal(format!("printed JSON is not UTF-8: {e}")))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn parse_output(text: &str, indent: usize, sort: bool) -> Result<ToolOutput, ToolError> {
    let mut value = parse_text("text", text)?;
    if sort {
        value = sort_keys(value);
    }
    let formatted = print(&value, indent)?;
    Ok(ToolOutput::text_and_structured(
        formatted.clone(),
        json!({"formatted": formatted, "type": type_name(&value)}),
    ))
}

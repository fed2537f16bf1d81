//! `query`: JSONPath (RFC 9535) over a document, with the location of every match.

use serde_json::{Value, json};
use serde_json_path::JsonPath;
use toolshed_core::{ToolError, ToolOutput};

use super::format::{excerpt, serialized_len};

/// At most this many matches are returned.
const MAX_MATCHES: usize = 10_000;

/// Matches stop being added once their values add up to this many bytes of JSON: `$..*`
/// over a deep document repeats every subtree once per ancestor.
const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

pub(super) fn query_output(document: &Value, path: &str) -> Result<ToolOutput, ToolError> {
    let query = JsonPath::parse(path).map_err(|e| path_error(path, &e))?;
    let located = query.query_located(document);
    let total = located.len();
    let mut matches = Vec::new();
    let mut text_lines = Vec::new();
    let mut bytes = 0usize;
    for node in located.iter() {
        if matches.len() >= MAX_MATCHES || bytes > MAX_OUTPUT_BYTES {
            break;
        }
        let value = node.node();
        bytes += serialized_len(value);
        let location = node.location();
        let normalized = location.to_string();
        text_lines.push(format!("{normalized} = {}", super::compact(value)));
        matches.push(json!({
            "path": normalized,
            "pointer": location.to_json_pointer(),
            "value": value,
        }));
    }
    let truncated = matches.len() < total;
    let mut text = match total {
        0 => format!("No matches for `{path}`."),
        1 => "1 match:".to_string(),
        n => format!("{n} matches:"),
    };
    for line in &text_lines {
        text.push('\n');
        text.push_str(line);
    }
    if truncated {
        text.push_str(&format!(
            "\n(showing the first {} of {total}; narrow the path to see the rest)",
            matches.len()
        ));
    }
    Ok(ToolOutput::text_and_structured(
        text,
        json!({
            "path": path,
            "count": total,
            "matches": matches,
            "truncated": truncated,
        }),
    ))
}

fn path_error(path: &str, e: &serde_json_path::ParseError) -> ToolError {
    // The crate reports a byte offset into the path; show it as a 1-based character position.
    let mut offset = e.position().min(path.len());
    while !path.is_char_boundary(offset) {
        offset -= 1;
    }
    let caret = path[..offset].chars().count();
    let (shown, caret_at) = excerpt(path, caret);
    ToolError::invalid_at(
        "/path",
        format!(
            "`path` is not valid JSONPath (RFC 9535): {} at position {}:\n    {shown}\n    {}^\n\
             A path starts with `$`, e.g. `$.store.book[0].title`, `$..price` or \
             `$.items[?@.price < 10]` (string literals in single or double quotes)",
            e.message(),
            caret + 1,
            " ".repeat(caret_at)
        ),
    )
}

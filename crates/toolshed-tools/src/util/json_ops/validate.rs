//! `validate`: a document against a JSON Schema, reporting every error.

use jsonschema::ReferencingError;
use jsonschema::error::ValidationErrorKind;
use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};

/// At most this many errors are reported.
const MAX_ERRORS: usize = 1000;

/// Error messages quote the failing value; a huge value is cut to this many characters.
const MAX_MESSAGE_CHARS: usize = 500;

pub(super) fn validate_output(document: &Value, schema: &Value) -> Result<ToolOutput, ToolError> {
    // Offline: a remote `$ref` fails at once with a clear error instead of a network fetch,
    // whatever features the jsonschema crate was built with.
    let validator = jsonschema::options()
        .offline()
        .build(schema)
        .map_err(|e| schema_error(&e))?;
    let mut errors = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(document) {
        total += 1;
        if errors.len() < MAX_ERRORS {
            errors.push(json!({
                "instance_path": error.instance_path().as_str(),
                "schema_path": error.schema_path().as_str(),
                "message": shorten(&error.to_string()),
            }));
        }
    }
    let truncated = total > errors.len();
    let text = if total == 0 {
        "Valid: the document matches the schema.".to_string()
    } else {
        let mut text = format!(
            "Invalid: {total} error{}.",
            if total == 1 { "" } else { "s" }
        );
        for e in &errors {
            let at = match e["instance_path"].as_str() {
                Some("") | None => "(root)",
                Some(p) => p,
            };
            text.push_str(&format!(
                "\n- at {at} (schema {}): {}",
                e["schema_path"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            ));
        }
        if truncated {
            text.push_str(&format!(
                "\n(only the first {MAX_ERRORS} errors are listed)"
            ));
        }
        text
    };
    Ok(ToolOutput::text_and_structured(
        text,
        json!({
            "valid": total == 0,
            "error_count": total,
            "errors": errors,
            "truncated": truncated,
        }),
    ))
}

fn schema_error(e: &jsonschema::ValidationError<'_>) -> ToolError {
    let location = match e.instance_path().as_str() {
        "" => String::new(),
        pointer => format!(" (at {pointer} in the schema)"),
    };
    let advice = match e.kind() {
        ValidationErrorKind::Referencing(ReferencingError::Unretrievable { .. }) => {
            "Remote and file references are not fetched: copy the referenced schema into \
             `$defs` and point `$ref` at `#/$defs/<name>`"
        }
        ValidationErrorKind::Referencing(_) => {
            "A `$ref` points to nothing: check the pointer or anchor against the schema"
        }
        _ => "Fix the schema and retry",
    };
    ToolError::invalid_at(
        "/schema",
        format!(
            "`schema` is not a usable JSON Schema: {}{location}. {advice}",
            shorten(&e.to_string())
        ),
    )
}

fn shorten(message: &str) -> String {
    if message.chars().count() <= MAX_MESSAGE_CHARS {
        return message.to_string();
    }
    let mut out: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    out.push('…');
    out
}

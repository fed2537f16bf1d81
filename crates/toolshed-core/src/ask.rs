//! Asking the person behind the calling client a question (`ask_user`, a plugin's
//! `ctx.ask`): through the client (MCP elicitation in a session, an input round trip in the
//! 2026-07-28 era), or, when the client can do neither, through the host's REST API and
//! dashboard.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::{CancellationToken, ToolError};

/// A question for the person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// What the person reads.
    pub message: String,
    /// The answer's shape: an object schema whose properties are strings, numbers,
    /// integers, booleans or enums (what MCP elicitation can ask for).
    pub schema: Value,
}

/// The most properties an answer's schema may have.
pub const MAX_FIELDS: usize = 16;

/// The most characters of a question.
pub const MAX_QUESTION_CHARS: usize = 2000;

/// The kinds of values a person can be asked for (what MCP elicitation offers).
const KINDS: [&str; 4] = ["string", "number", "integer", "boolean"];

impl Question {
    /// A question whose answer has `schema`'s fields, checked (an object schema of strings
    /// — optionally with an `enum` —, numbers, integers and booleans); without one, a
    /// single free-text field `answer`. The error names what is wrong.
    pub fn new(message: impl Into<String>, schema: Option<Value>) -> Result<Self, BadQuestion> {
        let message = message.into();
        if message.trim().is_empty() || message.chars().count() > MAX_QUESTION_CHARS {
            return Err(BadQuestion::Length);
        }
        let schema = match schema {
            None => serde_json::json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Your answer"}},
                "required": ["answer"],
            }),
            Some(schema) => {
                check_schema(&schema)?;
                schema
            }
        };
        Ok(Self { message, schema })
    }
}

fn check_schema(schema: &Value) -> Result<(), BadQuestion> {
    let Some(object) = schema.as_object() else {
        return Err(BadQuestion::NotAnObject(schema.to_string()));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(BadQuestion::NotObjectType);
    }
    let Some(properties) = object.get("properties").and_then(Value::as_object) else {
        return Err(BadQuestion::NoProperties);
    };
    if properties.is_empty() || properties.len() > MAX_FIELDS {
        return Err(BadQuestion::FieldCount(properties.len()));
    }
    for (name, property) in properties {
        let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
        if !KINDS.contains(&kind) {
            return Err(BadQuestion::FieldKind {
                name: name.clone(),
                kind: kind.to_string(),
            });
        }
    }
    if let Some(required) = object.get("required") {
        let names = required.as_array().map(|r| {
            r.iter()
                .all(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
        });
        if names != Some(true) {
            return Err(BadQuestion::Required(required.to_string()));
        }
    }
    Ok(())
}

/// Why a question cannot be put to a person; the message says what to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadQuestion {
    /// Empty, or longer than [`MAX_QUESTION_CHARS`].
    #[error("the question must have 1 to {MAX_QUESTION_CHARS} characters")]
    Length,
    /// The schema is not a JSON object (shown as JSON).
    #[error("`schema` must be an object schema, not {0}")]
    NotAnObject(String),
    /// The schema's `type` is not `object`.
    #[error("`schema` needs \"type\": \"object\" with `properties`")]
    NotObjectType,
    /// The schema has no `properties`.
    #[error("`schema` needs `properties`: the answer's fields")]
    NoProperties,
    /// Too few or too many fields.
    #[error("`schema` has {0} properties; give 1 to {MAX_FIELDS}")]
    FieldCount(usize),
    /// A field of a kind a person cannot be asked for.
    #[error(
        "property `{name}` is of type `{kind}`; a person can be asked only for {kinds} (a string \
         may have an `enum` of choices)",
        kinds = KINDS.join(", ")
    )]
    FieldKind {
        /// The field.
        name: String,
        /// Its type.
        kind: String,
    },
    /// `required` names what is not a field (shown as JSON).
    #[error("`required` must list property names of `schema`, not {0}")]
    Required(String),
}

/// What the person did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum Answer {
    /// Answered, with the fields of the schema.
    Accept {
        /// The answer.
        content: Map<String, Value>,
    },
    /// Chose not to answer.
    Decline,
    /// Dismissed the question.
    Cancel,
}

impl Answer {
    /// The answer as JSON, as tools give it back: `{action, content}`.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Accept { content } => {
                serde_json::json!({"action": "accept", "content": content})
            }
            Self::Decline => serde_json::json!({"action": "decline", "content": {}}),
            Self::Cancel => serde_json::json!({"action": "cancel", "content": {}}),
        }
    }

    /// An answer as MCP's elicitation result carries it (`{action, content?}`); `None`
    /// when `value` is not one.
    pub fn from_elicitation(value: &Value) -> Option<Self> {
        match value.get("action")?.as_str()? {
            "accept" => Some(Self::Accept {
                content: value
                    .get("content")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            }),
            "decline" => Some(Self::Decline),
            "cancel" => Some(Self::Cancel),
            _ => None,
        }
    }
}

/// Who puts a question to the person: the door a call came through, or the host.
#[async_trait]
pub trait Asker: Send + Sync {
    /// Asks `question` and waits for the answer (within `cancel`, which fires at the
    /// call's deadline). An error says why nobody can be asked; a door that asks in a
    /// later request ends the call here with one, having kept the question.
    async fn ask(
        &self,
        question: &Question,
        cancel: &CancellationToken,
    ) -> Result<Answer, ToolError>;
}

impl std::fmt::Debug for dyn Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_is_one_a_person_can_fill_in() {
        let free = Question::new("Which?", None).unwrap();
        assert!(free.schema["properties"]["answer"].is_object());
        let fine = json!({"type": "object", "properties": {
            "branch": {"type": "string", "enum": ["main", "dev"]}, "force": {"type": "boolean"}},
            "required": ["branch"]});
        assert_eq!(
            Question::new("Which?", Some(fine.clone())).unwrap().schema,
            fine
        );
        for (bad, says) in [
            (json!("text"), "object schema"),
            (json!({"type": "array"}), "\"type\": \"object\""),
            (json!({"type": "object", "properties": {}}), "0 properties"),
            (
                json!({"type": "object", "properties": {"x": {"type": "object"}}}),
                "`x` is of type `object`",
            ),
            (
                json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]}),
                "`required`",
            ),
        ] {
            let error = Question::new("Which?", Some(bad)).unwrap_err();
            assert!(error.to_string().contains(says), "{error}");
        }
        assert!(Question::new("  ", None).is_err());
    }
}

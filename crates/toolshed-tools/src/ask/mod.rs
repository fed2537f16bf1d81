//! `ask_user`: the model asks the person a question, with an optional shape of the answer
//! (the seeds' `ask_user`/clarify). The question reaches the person through the calling
//! client when it can ask (MCP elicitation in a session, an input round trip in the
//! 2026-07-28 era), else it waits for an answer over REST (`/api/v1/questions`) until the
//! call's deadline.

#[cfg(test)]
mod tests;

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolshed_core::{
    Answer, BuiltinPlugin, CallContext, Plugin, PluginKind, PluginManifest, Question, Tool,
    ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// What to ask, in a sentence or two
    #[schemars(length(min = 1, max = toolshed_core::MAX_QUESTION_CHARS))]
    question: String,
    /// The answer's fields, as an object schema of strings (optionally `enum`), numbers,
    /// integers and booleans; left out: one free-text answer
    #[serde(default)]
    schema: Option<Value>,
}

/// The `system.ask` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let mut spec = ToolSpec::new(
        "ask_user",
        "Ask the person a question and wait for the answer: to clarify an ambiguous request or \
         choose between options, not for what you can find out yourself.",
    )
    .title("Ask the person")
    .group("ask")
    .annotations(ToolAnnotations {
        read_only: true,
        destructive: false,
        idempotent: false,
        // It reaches the person behind the call, not the world.
        open_world: false,
    })
    .input_schema(crate::args::schema::<Args>());
    // It changes nothing and reads nothing; the person may always decline.
    spec.danger = toolshed_core::Danger::Low;
    let mut manifest = PluginManifest::new(
        "system.ask",
        env!("CARGO_PKG_VERSION"),
        "Ask the person",
        PluginKind::Builtin,
    );
    manifest.description = spec.description.clone();
    manifest.tags = vec!["ask".into()];
    Arc::new(BuiltinPlugin::new(
        manifest,
        vec![Arc::new(AskUser { spec })],
    ))
}

struct AskUser {
    spec: ToolSpec,
}

/// What the model reads of an answer.
fn said(answer: &Answer) -> String {
    match answer {
        Answer::Accept { content } => match content.get("answer") {
            Some(Value::String(text)) if content.len() == 1 => {
                format!("The person answered: {text}")
            }
            _ => format!("The person answered: {}", Value::Object(content.clone())),
        },
        Answer::Decline => "The person declined to answer.".into(),
        Answer::Cancel => "The person dismissed the question without answering.".into(),
    }
}

#[async_trait]
impl Tool for AskUser {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let question = Question::new(args.question, args.schema)
            .map_err(|e| ToolError::invalid_at("/schema", e.to_string()))?;
        let Some(asker) = ctx.asker.clone() else {
            return Err(ToolError::Unconfigured {
                message: "nobody can be asked here: ask_user needs a host".into(),
                variables: Vec::new(),
            });
        };
        let answer = asker.ask(&question, &ctx.cancel).await?;
        Ok(ToolOutput::text_and_structured(
            said(&answer),
            answer.to_json(),
        ))
    }
}

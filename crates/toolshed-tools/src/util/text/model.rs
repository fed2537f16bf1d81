//! `text_summarize` and `text_translate`: text work a model does, asked of the calling
//! client through MCP sampling or of the host's `[llm]` endpoint (the call's sampler).
//! Without either they answer `unconfigured`, naming what to set.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::{
    CallContext, ChatMessage, CompletionRequest, Tool, ToolAnnotations, ToolError, ToolOutput,
    ToolSpec,
};

use crate::util::GROUP;

/// The longest text sent to a model, in bytes.
pub(super) const MAX_MODEL_TEXT_BYTES: usize = 256 * 1024;

const DEFAULT_WORDS: u64 = 120;

/// What a caller reads when no model can answer.
const UNCONFIGURED: &str = "no model can answer: the calling client does not offer MCP sampling, \
and no endpoint is configured; set `[llm] base_url` (an OpenAI-compatible endpoint, e.g. \
http://127.0.0.1:8080/v1) in your toolshed config, with its key in $TOOLSHED_LLM_API_KEY, \
or connect with a client that supports sampling";

/// Which of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Job {
    Summarize,
    Translate,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Style {
    #[default]
    Paragraph,
    Bullets,
}

fn default_words() -> u64 {
    DEFAULT_WORDS
}

/// `text_summarize`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SummarizeArgs {
    /// The text to summarize
    #[schemars(length(min = 1, max = MAX_MODEL_TEXT_BYTES))]
    text: String,
    /// At most this many words
    #[serde(default = "default_words")]
    #[schemars(range(min = 10, max = 2000))]
    max_words: u64,
    /// A paragraph, or bullet points
    #[serde(default)]
    style: Style,
    /// Write the summary in this language instead of the text's
    language: Option<String>,
}

/// `text_translate`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TranslateArgs {
    /// The text to translate
    #[schemars(length(min = 1, max = MAX_MODEL_TEXT_BYTES))]
    text: String,
    /// The language to translate into: a name or tag (French, zh-CN)
    #[schemars(length(min = 1, max = 64))]
    to: String,
    /// The text's language, when known
    #[schemars(length(max = 64))]
    from: Option<String>,
}

/// One of the two tools.
pub(super) struct ModelTool {
    job: Job,
    spec: ToolSpec,
}

impl ModelTool {
    pub(super) fn new(job: Job) -> Self {
        let annotations = ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: false,
            // The text leaves the host for a model.
            open_world: true,
        };
        let spec = match job {
            Job::Summarize => ToolSpec::new(
                "text_summarize",
                "Summarize text with a model (the client's, through MCP sampling, or the configured [llm] endpoint): at most max_words words, as a paragraph or bullets, optionally in another language. Returns { summary, via, model }.",
            )
            .title("Summarize text")
            .input_schema(crate::args::schema::<SummarizeArgs>()),
            Job::Translate => ToolSpec::new(
                "text_translate",
                "Translate text into another language with a model (the client's, through MCP sampling, or the configured [llm] endpoint), keeping its formatting. Returns { translation, to, via, model }.",
            )
            .title("Translate text")
            .input_schema(crate::args::schema::<TranslateArgs>()),
        };
        let mut spec = spec.group(GROUP).annotations(annotations);
        // The text leaves the host: High by the definition of `Danger`.
        spec.danger = toolshed_core::Danger::High;
        Self { job, spec }
    }
}

#[async_trait]
impl Tool for ModelTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let (request, field, extra) = match self.job {
            Job::Summarize => summarize_request(crate::args::parse(args)?),
            Job::Translate => translate_request(crate::args::parse(args)?),
        };
        let Some(sampler) = ctx.sampler.clone() else {
            return Err(ToolError::Unconfigured {
                message: format!("{}: {UNCONFIGURED}", self.spec.name),
                variables: vec!["TOOLSHED_LLM_API_KEY".into()],
            });
        };
        let answer = sampler.complete(request, &ctx.cancel).await?;
        let text = answer.text.trim().to_string();
        let mut structured = json!({ field: text, "via": answer.via, "model": answer.model });
        if let (Some(obj), Some((k, v))) = (structured.as_object_mut(), extra) {
            obj.insert(k.into(), v);
        }
        Ok(ToolOutput::text_and_structured(text, structured))
    }
}

fn summarize_request(
    args: SummarizeArgs,
) -> (
    CompletionRequest,
    &'static str,
    Option<(&'static str, Value)>,
) {
    let words = args.max_words.clamp(10, 2000);
    let form = match args.style {
        Style::Paragraph => "one paragraph",
        Style::Bullets => "bullet points, one line each",
    };
    let language = args
        .language
        .map(|l| format!(", written in {}", l.trim()))
        .unwrap_or_default();
    let request = CompletionRequest {
        system: Some(
            "You summarize text faithfully: keep its facts, names and numbers, add nothing. \
             Reply with the summary only."
                .into(),
        ),
        messages: vec![ChatMessage::text(
            "user",
            format!(
                "Summarize the text below in at most {words} words, as {form}{language}.\n\n{}",
                args.text
            ),
        )],
        // A word is about two tokens in most languages; room for the form.
        max_tokens: u32::try_from(words * 3 + 64).unwrap_or(4096).min(8192),
        temperature: Some(0.2),
        ..CompletionRequest::default()
    };
    (request, "summary", None)
}

fn translate_request(
    args: TranslateArgs,
) -> (
    CompletionRequest,
    &'static str,
    Option<(&'static str, Value)>,
) {
    let from = args
        .from
        .map(|f| format!(" from {}", f.trim()))
        .unwrap_or_default();
    let to = args.to.trim().to_string();
    // A translation is about as long as its source; tokens run 1 to 3 per word.
    let budget = args.text.len() / 2 + 256;
    let request = CompletionRequest {
        system: Some(
            "You translate text. Keep its meaning, tone and formatting (Markdown, lists, \
             code blocks untouched). Reply with the translation only."
                .into(),
        ),
        messages: vec![ChatMessage::text(
            "user",
            format!("Translate the text below{from} into {to}.\n\n{}", args.text),
        )],
        max_tokens: u32::try_from(budget).unwrap_or(8192).min(8192),
        temperature: Some(0.1),
        ..CompletionRequest::default()
    };
    (request, "translation", Some(("to", Value::String(to))))
}

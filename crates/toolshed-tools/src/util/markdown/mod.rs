//! The `markdown` tool: render Markdown to HTML or plain text, and read its outline
//! (headings, a table of contents) and its links.
//!
//! Parsing is CommonMark plus the GitHub extensions people expect in READMEs: tables,
//! strikethrough, task lists and footnotes.

mod outline;
mod render;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use pulldown_cmark::Options;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolOutput, ToolSpec};

use super::{GROUP, parse_args, single_tool_plugin};

/// The largest `markdown` accepted, in bytes.
const MAX_INPUT_BYTES: usize = 1024 * 1024;

const DESCRIPTION: &str = "Work with Markdown (CommonMark with GitHub tables, strikethrough, \
task lists and footnotes). Field `markdown` (up to 1 MiB) plus `operation`:\n\
- `to_html`: render HTML. Safe by default: raw HTML in the input is escaped and \
javascript:, vbscript: and data: link targets (data: images excepted) become `#`; set \
`allow_html: true` to pass raw HTML and all links through unchanged (trusted input only).\n\
- `to_text`: plain text without markup: blank lines between paragraphs, list items as `- ` \
lines (`1. ` for numbered lists), code blocks verbatim, link text kept; `include_urls: true` \
appends ` (url)` after links and images.\n\
- `headings`: every heading with level, text, GitHub-style anchor slug and line number.\n\
- `toc`: a Markdown nested bullet list linking to the heading anchors, headings up to \
`max_level` (1-6, default 3).\n\
- `links`: every link and image with text, url, title, kind (link|image|autolink) and line; \
reference-style links are resolved.";

/// The `system.markdown` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("markdown", DESCRIPTION)
        .title("Markdown to HTML/text, headings, table of contents, links")
        .input_schema(input_schema())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin(
        "markdown",
        "Markdown",
        SyncTool::new(spec, |_, args| run(args)),
    )
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "operation": {
                "type": "string",
                "enum": ["to_html", "to_text", "headings", "toc", "links"],
                "description": "What to produce: `to_html`, `to_text`, the `headings`, a `toc` (table of contents) or the `links`."
            },
            "markdown": {
                "type": "string",
                "description": "The Markdown source (up to 1 MiB)."
            },
            "allow_html": {
                "type": "boolean",
                "description": "For `to_html`: pass raw HTML in the input through unescaped. Default false (escaped); only enable for trusted input."
            },
            "include_urls": {
                "type": "boolean",
                "description": "For `to_text`: append ` (url)` after each link and image. Default false."
            },
            "max_level": {
                "type": "integer",
                "minimum": 1,
                "maximum": 6,
                "description": "For `toc`: deepest heading level included, 1-6. Default 3."
            }
        },
        "required": ["operation", "markdown"],
        "additionalProperties": false
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Operation {
    ToHtml,
    ToText,
    Headings,
    Toc,
    Links,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Self::ToHtml => "to_html",
            Self::ToText => "to_text",
            Self::Headings => "headings",
            Self::Toc => "toc",
            Self::Links => "links",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    operation: Operation,
    markdown: String,
    #[serde(default)]
    allow_html: Option<bool>,
    #[serde(default)]
    include_urls: Option<bool>,
    #[serde(default)]
    max_level: Option<i64>,
}

/// The parser options every operation uses, so slugs and links agree with the rendering.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
}

fn run(args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
    if args.markdown.len() > MAX_INPUT_BYTES {
        return Err(ToolError::invalid_at(
            "/markdown",
            format!(
                "`markdown` is {} bytes; the limit is {MAX_INPUT_BYTES} bytes (1 MiB). \
                 Pass a smaller document or one section at a time",
                args.markdown.len()
            ),
        ));
    }
    reject_unused(&args)?;
    let md = args.markdown.as_str();
    match args.operation {
        Operation::ToHtml => {
            let allow_html = args.allow_html.unwrap_or(false);
            let html = render::to_html(md, allow_html);
            Ok(ToolOutput::text_and_structured(
                html.clone(),
                json!({"html": html, "raw_html": if allow_html { "allowed" } else { "escaped" }}),
            ))
        }
        Operation::ToText => {
            let text = render::to_text(md, args.include_urls.unwrap_or(false));
            Ok(ToolOutput::text_and_structured(
                text.clone(),
                json!({"text": text}),
            ))
        }
        Operation::Headings => Ok(outline::headings_output(md)),
        Operation::Toc => {
            let max_level = match args.max_level {
                None => 3,
                Some(level @ 1..=6) => level as u8,
                Some(other) => {
                    return Err(ToolError::invalid_at(
                        "/max_level",
                        format!("`max_level` is {other}; use a heading level from 1 to 6"),
                    ));
                }
            };
            Ok(outline::toc_output(md, max_level))
        }
        Operation::Links => Ok(outline::links_output(md)),
    }
}

/// Refuses options the operation does not read, so a misplaced option is not silently
/// ignored (e.g. `allow_html` given to `to_text`).
fn reject_unused(args: &Args) -> Result<(), ToolError> {
    let present = [
        ("allow_html", args.allow_html.is_some(), Operation::ToHtml),
        (
            "include_urls",
            args.include_urls.is_some(),
            Operation::ToText,
        ),
        ("max_level", args.max_level.is_some(), Operation::Toc),
    ];
    for (field, is_present, owner) in present {
        if is_present && owner != args.operation {
            return Err(ToolError::invalid_at(
                format!("/{field}"),
                format!(
                    "`{field}` applies only to operation `{}`, not `{}`; remove it",
                    owner.name(),
                    args.operation.name()
                ),
            ));
        }
    }
    Ok(())
}

/// Maps byte offsets to 1-based line numbers.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { starts }
    }

    fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset).max(1)
    }
}

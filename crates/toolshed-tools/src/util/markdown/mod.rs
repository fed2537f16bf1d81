//! The `markdown` tool: render Markdown to HTML or plain text, and read its outline
//! (headings, a table of contents) and its links.
//!
//! Parsing is CommonMark plus the GitHub extensions people expect in READMEs: tables,
//! strikethrough, task lists and footnotes.

mod outline;
mod render;
mod spec;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use pulldown_cmark::Options;
use serde_json::{Value, json};
use toolshed_core::{Plugin, SyncTool, ToolError, ToolOutput};

use self::spec::{Args, Operation};
use super::single_tool_plugin;

/// The largest `markdown` accepted, in bytes.
const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The `system.markdown` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        "markdown",
        "Markdown",
        SyncTool::new(spec::spec(), |_, args| run(args)),
    )
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

/// The parser options every operation uses, so slugs and links agree with the rendering.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
}

fn run(args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = crate::args::parse(args)?;
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

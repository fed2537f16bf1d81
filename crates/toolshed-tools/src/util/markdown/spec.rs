//! The `markdown` tool as data.

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::{ToolAnnotations, ToolSpec};

use crate::util::GROUP;

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

/// The `markdown` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new("markdown", DESCRIPTION)
        .title("Markdown to HTML/text, headings, table of contents, links")
        .input_schema(crate::args::schema::<Args>())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Operation {
    ToHtml,
    ToText,
    Headings,
    Toc,
    Links,
}

/// What the schema shows for options left out; the fields stay `Option`s because an
/// operation that does not read an option refuses it when present.
fn no() -> Option<bool> {
    Some(false)
}

fn three() -> Option<i64> {
    Some(3)
}

/// The arguments of `markdown`; each option belongs to one operation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// What to produce: `to_html`, `to_text`, the `headings`, a `toc` (table of contents) or the `links`.
    pub(super) operation: Operation,
    /// The Markdown source (up to 1 MiB).
    pub(super) markdown: String,
    /// For `to_html`: pass raw HTML in the input through unescaped; only enable for trusted input.
    #[schemars(default = "no")]
    pub(super) allow_html: Option<bool>,
    /// For `to_text`: append ` (url)` after each link and image.
    #[schemars(default = "no")]
    pub(super) include_urls: Option<bool>,
    /// For `toc`: deepest heading level included.
    #[schemars(default = "three", range(min = 1, max = 6))]
    pub(super) max_level: Option<i64>,
}

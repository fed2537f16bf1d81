//! The `markdown` tool as data.

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::{ToolAnnotations, ToolSpec};

use crate::util::GROUP;

const DESCRIPTION: &str = "Render Markdown to safe HTML or text, or list its headings or \
links.";

/// The `markdown` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new("markdown", DESCRIPTION)
        .title("Markdown")
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
    /// toc: nested anchor links
    pub(super) operation: Operation,
    /// The source
    pub(super) markdown: String,
    /// to_html: keep raw HTML and all links (trusted input)
    #[schemars(default = "no")]
    pub(super) allow_html: Option<bool>,
    /// to_text: append link URLs
    #[schemars(default = "no")]
    pub(super) include_urls: Option<bool>,
    /// toc: deepest level
    #[schemars(default = "three", range(min = 1, max = 6))]
    pub(super) max_level: Option<i64>,
}

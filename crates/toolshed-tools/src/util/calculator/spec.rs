//! The calculator's spec, as data.

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::{ToolAnnotations, ToolSpec};

use super::parser::MAX_EXPRESSION_CHARS;
use crate::util::GROUP;

/// The `calculator` tool spec.
pub(super) fn tool_spec() -> ToolSpec {
    ToolSpec::new(
        "calculator",
        "Evaluate arithmetic exactly: + - * / % ^, sqrt, abs, min, max, round(x, digits?), \
         floor, ceil, ln, log10, sin, cos, tan, pi, e.",
    )
    .title("Calculator")
    .group(GROUP)
    .annotations(ToolAnnotations::PURE)
    .input_schema(crate::args::schema::<Args>())
}

/// The arguments of `calculator`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// e.g. `round(2 * pi * 6371, 1)`
    #[schemars(length(min = 1, max = MAX_EXPRESSION_CHARS))]
    pub(super) expression: String,
}

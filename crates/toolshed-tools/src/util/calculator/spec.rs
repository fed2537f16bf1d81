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
        "Evaluate an arithmetic expression exactly, without running code. Supports numbers \
         (42, 3.14, .5, 1e3), + - * / % (remainder) and ^ (power, right-associative and \
         binding tighter than unary minus, so -2^2 = -4), parentheses, unary minus and plus, \
         the functions sqrt, abs, min(a, b, ...), max(a, b, ...), round(x) or \
         round(x, digits), floor, ceil, ln, log10, sin, cos, tan (radians), and the \
         constants pi and e. There is no implicit multiplication: write 2*pi, not 2pi. \
         Returns the number as text (integers without a fraction, others with up to 15 \
         significant digits) and as structured `result`. Division or modulo by zero and \
         results that are not finite real numbers (sqrt(-1), ln(0), 10^400) are errors that \
         name the operation and its position.",
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
    /// The arithmetic expression, e.g. `(1 + 2) * sqrt(16) / 3` or `round(2 * pi * 6371, 1)`. Whitespace is allowed.
    #[schemars(length(min = 1, max = MAX_EXPRESSION_CHARS))]
    pub(super) expression: String,
}

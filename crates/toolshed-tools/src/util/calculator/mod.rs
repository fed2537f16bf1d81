//! The `calculator` tool: arithmetic without `eval`.
//!
//! ```text
//! {"expression": "2 + 3 * 4"}          → 14
//! {"expression": "0.1 + 0.2"}          → 0.3
//! {"expression": "max(2, sqrt(16)) ^ 2"} → 16
//! ```
//!
//! The expression is read by a small hand-written parser ([`parser`]) that evaluates as it
//! goes; nothing is ever compiled or executed. Length and nesting are capped, so no input
//! can exhaust the stack, and every error names the 1-based character position and what
//! was expected there, so a model can fix its expression in one step.

mod number;
mod parser;
mod spec;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::{Value, json};
use toolshed_core::{CallContext, Plugin, SyncTool, ToolError, ToolOutput};

use self::spec::Args;
use super::single_tool_plugin;

/// The `system.calculator` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        "calculator",
        "Calculator",
        SyncTool::new(spec::tool_spec(), handle),
    )
}

fn handle(_ctx: &CallContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = crate::args::parse(args)?;
    let value = parser::evaluate(&args.expression)?;
    let text = number::format(value);
    let result = number::to_json(&text, value);
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"expression": args.expression, "result": result}),
    ))
}

//! The `datetime` tool: the current time, formatting, parsing, arithmetic and time zone
//! conversion, backed by jiff and the IANA time zone database.
//!
//! ```text
//! {"operation": "convert", "instant": "2026-03-29T01:30:00Z", "to": "Europe/London"}
//! → 2026-03-29T02:30:00+01:00 Europe/London (BST, DST)
//! ```
//!
//! Instants are read leniently (RFC 3339, RFC 9557, civil dates and times, RFC 2822, unix
//! seconds) because models write dates in many ways; a civil time that a DST change skips or
//! repeats is resolved by an explicit rule and the result says what was chosen, so nothing
//! is guessed silently.

use std::sync::Arc;

use serde_json::Value;
use toolshed_core::{CallContext, Plugin, SyncTool, ToolError, ToolOutput};

use super::single_tool_plugin;

mod input;
mod ops;
mod report;
mod spec;
#[cfg(test)]
mod tests;

use spec::{Args, DiffUnit, Operation};

/// The `system.datetime` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        spec::NAME,
        "Date and time",
        SyncTool::new(spec::spec(), handle),
    )
}

fn handle(_ctx: &CallContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = crate::args::parse(args)?;
    match args.operation {
        Operation::Now => ops::now(&args),
        Operation::Format => ops::format(&args),
        Operation::Parse => ops::parse(&args),
        Operation::Add | Operation::Subtract => ops::shift(&args),
        Operation::Diff => ops::diff(&args),
        Operation::Convert => ops::convert(&args),
    }
}

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

use serde::Deserialize;
use serde_json::{Number, Value};
use toolshed_core::{CallContext, Plugin, SyncTool, ToolError, ToolOutput};

use super::{parse_args, single_tool_plugin};

mod input;
mod ops;
mod report;
mod spec;
#[cfg(test)]
mod tests;

use input::Disambiguation;

/// The `system.datetime` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        spec::NAME,
        "Date and time",
        SyncTool::new(spec::spec(), handle),
    )
}

/// What the caller asked for.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Now,
    Format,
    Parse,
    Add,
    Subtract,
    Diff,
    Convert,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Self::Now => "now",
            Self::Format => "format",
            Self::Parse => "parse",
            Self::Add => "add",
            Self::Subtract => "subtract",
            Self::Diff => "diff",
            Self::Convert => "convert",
        }
    }
}

/// The largest unit of a `diff` span.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DiffUnit {
    Years,
    Months,
    Weeks,
    #[default]
    Days,
    Hours,
    Minutes,
    Seconds,
}

/// The tool's arguments; each operation reads the fields it needs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    operation: Operation,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    instant: Option<String>,
    #[serde(default)]
    unix: Option<Number>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    #[serde(default)]
    unit: Option<DiffUnit>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    disambiguation: Option<Disambiguation>,
}

fn handle(_ctx: &CallContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
    match args.operation {
        Operation::Now => ops::now(&args),
        Operation::Format => ops::format(&args),
        Operation::Parse => ops::parse(&args),
        Operation::Add | Operation::Subtract => ops::shift(&args),
        Operation::Diff => ops::diff(&args),
        Operation::Convert => ops::convert(&args),
    }
}

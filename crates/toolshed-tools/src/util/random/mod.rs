//! The `random` tool: integers, floats, UUIDs, passwords, picks and shuffles.
//!
//! ```text
//! {"operation": "integer", "min": 1, "max": 6, "count": 3, "seed": 7}
//! → three dice rolls, the same three every time for seed 7
//! ```
//!
//! Every operation draws from one [`StdRng`]: seeded from the operating system by default
//! (a CSPRNG, so passwords are fit for use), or from the caller's `seed` so a test or a
//! demo can reproduce its output. `StdRng` is not portable across `rand` releases, which is
//! why the description promises reproducibility "with this build" only.

use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Map, Value, json};
use toolshed_core::{CallContext, Plugin, SyncTool, ToolError, ToolOutput};

use self::spec::{Args, Operation};
use super::single_tool_plugin;

mod ops;
mod spec;
#[cfg(test)]
mod tests;

/// Most values one call returns.
pub(crate) const MAX_COUNT: u64 = 10_000;
/// Most items `pick` and `shuffle` accept.
pub(crate) const MAX_ITEMS: usize = 10_000;
/// Largest `items` array, serialized, in bytes.
pub(crate) const MAX_ITEMS_BYTES: usize = 1 << 20;
/// Most password characters one call produces (`count` × `length`).
pub(crate) const MAX_PASSWORD_CHARS: u64 = 1 << 20;
/// Shortest password: one character from each of the four classes.
pub(crate) const MIN_PASSWORD_LENGTH: u64 = 4;
/// Longest password.
pub(crate) const MAX_PASSWORD_LENGTH: u64 = 1024;

/// The `system.random` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        spec::NAME,
        "Random values",
        SyncTool::new(spec::spec(), handle),
    )
}

fn handle(_ctx: &CallContext, args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = crate::args::parse(args)?;
    let mut rng = match args.seed {
        Some(seed) => StdRng::seed_from_u64(seed),
        None => rand::make_rng::<StdRng>(),
    };
    let values = match args.operation {
        Operation::Integer => ops::integers(&args, &mut rng)?,
        Operation::Float => ops::floats(&args, &mut rng)?,
        Operation::Uuid => ops::uuids(&args, &mut rng)?,
        Operation::Password => ops::passwords(&args, &mut rng)?,
        Operation::Pick => ops::pick(&args, &mut rng)?,
        Operation::Shuffle => ops::shuffle(&args, &mut rng)?,
    };
    let text = values.iter().map(line).collect::<Vec<_>>().join("\n");
    let mut out = Map::new();
    out.insert("values".into(), Value::Array(values));
    if let Some(seed) = args.seed {
        out.insert("seed".into(), json!(seed));
    }
    Ok(ToolOutput::text_and_structured(text, Value::Object(out)))
}

/// One value as one line: strings bare unless they hold a line break, the rest compact JSON.
fn line(value: &Value) -> String {
    match value {
        Value::String(s) if !s.contains(['\n', '\r']) => s.clone(),
        other => other.to_string(),
    }
}

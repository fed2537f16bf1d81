//! `[limits]`: the deadlines and reply sizes the pipeline holds every call to.

use serde::{Deserialize, Serialize};

/// Deadlines and reply sizes of calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Deadline of a call whose tool and caller name none.
    pub default_timeout_ms: u64,
    /// The largest deadline a caller may ask for.
    pub max_timeout_ms: u64,
    /// The most bytes of text (and structured JSON) one call's reply may hold, whatever
    /// its tool and arguments: past it the pipeline cuts the reply and says so. About 25k
    /// tokens by default. Images are not counted (a model pays for them by their pixels).
    pub max_output_bytes: u64,
    /// The reminder on a repeated call: from this many identical calls in a row (same
    /// caller, tool and arguments), each within `repeat_window_secs` of the last, the
    /// result says so.
    /// 0 turns it off.
    pub repeat_reminder_after: u32,
    /// How close together identical calls must come to count as repeats.
    pub repeat_window_secs: u64,
}

/// The smallest `[limits] max_output_bytes` taken.
pub const MIN_OUTPUT_CEILING: u64 = 4096;

impl Default for Limits {
    fn default() -> Self {
        Self {
            default_timeout_ms: 60_000,
            max_timeout_ms: 3_600_000,
            max_output_bytes: 100_000,
            repeat_reminder_after: 3,
            repeat_window_secs: 60,
        }
    }
}

//! How much a JavaScript plugin may use.

use std::time::Duration;

/// The resources one JavaScript plugin may use. Each plugin gets its own QuickJS runtime, so
/// these limits hold per plugin, not per call: a plugin that fills its heap in one call
/// has that much less in the next until the garbage collector frees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsLimits {
    /// The most memory the plugin's runtime may allocate (heap, strings, bytecode). An
    /// allocation past it fails with an out-of-memory error inside the script.
    pub memory_bytes: usize,
    /// The most native stack the script may use; deeper recursion throws a `RangeError`.
    pub stack_bytes: usize,
    /// The most time JavaScript may run without awaiting: the budget starts again each time
    /// the script resumes after a host promise settles. Past it the script is interrupted
    /// (it cannot catch that) and the call fails.
    pub cpu_per_call: Duration,
    /// The most time loading `main.js` and running `activate` may take.
    pub activate_timeout: Duration,
    /// The most actions one plugin may register.
    pub max_actions: usize,
    /// The largest result a call may return, in bytes of text or compact JSON.
    pub max_output_bytes: usize,
    /// The most calls that may wait for the plugin while it serves another; one more is
    /// refused as busy. Calls to one plugin run one at a time.
    pub max_queued_calls: usize,
}

impl Default for JsLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            cpu_per_call: Duration::from_secs(5),
            activate_timeout: Duration::from_secs(5),
            max_actions: 64,
            max_output_bytes: 1024 * 1024,
            max_queued_calls: 64,
        }
    }
}

/// A byte count for messages: `64 MiB`, `512 KiB`, `100 bytes`.
pub(crate) fn show_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// A duration for messages: `5 s`, `250 ms`.
pub(crate) fn show_duration(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) && !d.is_zero() {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_sizes_and_durations_for_people() {
        assert_eq!(show_bytes(64 * 1024 * 1024), "64 MiB");
        assert_eq!(show_bytes(4096), "4 KiB");
        assert_eq!(show_bytes(100), "100 bytes");
        assert_eq!(show_duration(Duration::from_secs(5)), "5 s");
        assert_eq!(show_duration(Duration::from_millis(250)), "250 ms");
    }
}

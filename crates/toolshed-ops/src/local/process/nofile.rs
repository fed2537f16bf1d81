//! The descriptor limit (`RLIMIT_NOFILE`). toolshed raises its own soft limit to the hard
//! limit at start — a server holding hundreds of connections, pipes and pidfds needs more
//! than the 1,024 (or 256) a shell gives — and gives its children back the soft limit it
//! started with, as many programs expect it (some close every descriptor up to it).

use std::sync::OnceLock;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The most toolshed raises its soft limit to, whatever the hard limit.
const CEILING: u64 = 1 << 20;

/// What [`raise_descriptor_limit`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorLimit {
    /// The soft limit toolshed started with (and its children get).
    pub before: u64,
    /// The soft limit toolshed runs with now.
    pub now: u64,
    /// The hard limit.
    pub hard: Option<u64>,
}

static STARTED_WITH: OnceLock<Rlimit> = OnceLock::new();

/// Raises this process's soft descriptor limit to its hard limit (at most 2^20), once;
/// later calls report what the first did.
pub fn raise_descriptor_limit() -> DescriptorLimit {
    static DONE: OnceLock<DescriptorLimit> = OnceLock::new();
    *DONE.get_or_init(|| {
        let start = getrlimit(Resource::Nofile);
        let before = start.current.unwrap_or(u64::MAX);
        let target = start.maximum.unwrap_or(CEILING).min(CEILING);
        let mut now = before;
        if before < target {
            let raised = Rlimit {
                current: Some(target),
                maximum: start.maximum,
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                let _ = STARTED_WITH.set(start);
                now = target;
            }
        }
        DescriptorLimit {
            before,
            now,
            hard: start.maximum,
        }
    })
}

/// The soft descriptor limit in force now.
pub fn descriptor_limit() -> u64 {
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// The limit to give a child back, when toolshed raised its own.
pub(super) fn for_children() -> Option<Rlimit> {
    STARTED_WITH.get().copied()
}

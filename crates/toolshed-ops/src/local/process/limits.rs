//! Resource limits per child: how many processes its tree may have and how much memory it
//! may use, so that a fork bomb or a memory hog is stopped inside its own group and the
//! host keeps serving.
//!
//! The layer is chosen once, the strongest the system allows:
//!
//! - **cgroup v1** `pids` and `memory` hierarchies, where they are mounted and writable
//!   (root on a hybrid system): a group per child under toolshed's own;
//! - **rlimits** (`RLIMIT_NPROC`, `RLIMIT_AS`) otherwise — weaker: the process count is
//!   per user (and ignored for root), the address-space limit counts reservations, not use.
//!
//! cgroup v2 controllers (`pids.max`, `memory.max` in the per-child cgroups of the tree
//! kill, [`super::tree`]) are not used yet: on a v2-only system the limits are rlimits.
//!
//! The child joins its groups between fork and exec (a write of `0` to each group's
//! `cgroup.procs`), so everything it starts is counted. After it exits the groups say
//! whether a limit was hit ([`LimitHit`]), which the exit reports.

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

use super::owner::OwnedGroup;
use crate::process::LimitHit;

/// What a child's tree may use. `None`: no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceLimits {
    /// The most processes (and threads) its tree may have at once.
    pub max_processes: Option<u64>,
    /// The most memory its tree may use, in bytes; past it the kernel kills a process of
    /// the tree (the largest).
    pub max_memory_bytes: Option<u64>,
}

impl ResourceLimits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_processes.is_some() || self.max_memory_bytes.is_some()
    }
}

/// How limits are enforced here.
#[derive(Debug)]
pub(super) enum Limiter {
    /// One directory per controller, under which each child gets a group; each is locked
    /// while this process lives ([`super::owner`]).
    Cgroup1 {
        pids: OwnedGroup,
        memory: OwnedGroup,
        next: AtomicU64,
    },
    /// `setrlimit` in the child.
    Rlimit,
}

impl Limiter {
    /// The name reported in the sandbox's `enforced` list.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Limiter::Cgroup1 { .. } => "limits-cgroup-v1",
            Limiter::Rlimit => "limits-rlimit",
        }
    }
}

/// The limiter of this process, probed once.
pub(super) fn limiter() -> &'static Limiter {
    LIMITER.get_or_init(|| probe_cgroup1().unwrap_or(Limiter::Rlimit))
}

static LIMITER: OnceLock<Limiter> = OnceLock::new();

/// toolshed's own group in the v1 hierarchy of `controller`, as a directory.
fn own_group(controller: &str) -> Option<PathBuf> {
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.trim_start_matches('/').to_string())
    })?;
    let dir = Path::new("/sys/fs/cgroup").join(controller).join(rel);
    rustix::fs::access(dir.join("cgroup.procs"), rustix::fs::Access::WRITE_OK).ok()?;
    Some(dir)
}

fn probe_cgroup1() -> Option<Limiter> {
    let name = super::owner::own_group_name();
    let mut made: Vec<OwnedGroup> = Vec::new();
    for controller in ["pids", "memory"] {
        let parent = own_group(controller)?;
        sweep_stale(&parent);
        match OwnedGroup::establish(parent.join(&name)) {
            Ok(group) => made.push(group),
            Err(_) => {
                for group in &made {
                    group.release();
                    let _ = fs::remove_dir(&group.dir);
                }
                return None;
            }
        }
    }
    let memory = made.pop()?;
    let pids = made.pop()?;
    Some(Limiter::Cgroup1 {
        pids,
        memory,
        next: AtomicU64::new(0),
    })
}

/// Removes the groups of toolshed processes that no longer exist.
fn sweep_stale(parent: &Path) {
    for super::owner::Stale { dir, .. } in super::owner::stale_groups(parent) {
        if let Ok(children) = fs::read_dir(&dir) {
            for child in children.flatten().filter(|c| c.path().is_dir()) {
                let _ = fs::remove_dir(child.path());
            }
        }
        let _ = fs::remove_dir(dir);
    }
}

/// The groups of one child.
#[derive(Debug, Default)]
pub(super) struct Groups {
    dirs: Vec<PathBuf>,
}

/// What the child does before it executes to come under its limits.
#[derive(Debug, Default, Clone)]
pub(super) struct Join {
    /// `cgroup.procs` of each of its groups, open for writing.
    pub(super) procs: Vec<Arc<OwnedFd>>,
    /// rlimits to set: (process count, address space bytes).
    pub(super) rlimits: Option<(Option<u64>, Option<u64>)>,
}

impl Limiter {
    /// The groups of a new child with `limits`, and how it joins them.
    pub(super) fn create(&self, limits: &ResourceLimits) -> io::Result<(Groups, Join)> {
        match self {
            Limiter::Rlimit => Ok((
                Groups::default(),
                Join {
                    procs: Vec::new(),
                    rlimits: Some((limits.max_processes, limits.max_memory_bytes)),
                },
            )),
            Limiter::Cgroup1 { pids, memory, next } => {
                let name = format!("c{}", next.fetch_add(1, Ordering::Relaxed));
                let mut groups = Groups::default();
                let mut join = Join::default();
                let settings = [
                    (pids, "pids.max", limits.max_processes),
                    (memory, "memory.limit_in_bytes", limits.max_memory_bytes),
                ];
                for (parent, file, value) in settings {
                    let Some(value) = value else { continue };
                    let dir = parent.dir.join(&name);
                    if let Err(e) = fs::create_dir(&dir) {
                        if e.kind() != io::ErrorKind::NotFound {
                            return Err(e);
                        }
                        // This process's directory is gone (removed by hand, or by a
                        // toolshed that judged it dead): make it again.
                        parent.restore()?;
                        fs::create_dir(&dir)?;
                    }
                    groups.dirs.push(dir.clone());
                    fs::write(dir.join(file), value.to_string())?;
                    let procs = rustix::fs::open(
                        dir.join("cgroup.procs"),
                        OFlags::WRONLY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )?;
                    join.procs.push(Arc::new(procs));
                }
                Ok((groups, join))
            }
        }
    }
}

/// Removes this process's limit directories, at exit (its children's groups are removed
/// as each child ends).
pub(super) fn release() {
    let Some(Limiter::Cgroup1 { pids, memory, .. }) = LIMITER.get() else {
        return;
    };
    for group in [pids, memory] {
        group.release();
        if let Ok(children) = fs::read_dir(&group.dir) {
            for child in children.flatten().filter(|c| c.path().is_dir()) {
                super::tree::remove_group(&child.path(), Duration::from_millis(200));
            }
        }
        super::tree::remove_group(&group.dir, Duration::from_millis(500));
    }
}

impl Groups {
    /// Which limit the child's tree ran into, if any (read once it has exited).
    pub(super) fn hit(&self) -> Option<LimitHit> {
        let count = |file: PathBuf, key: &str| {
            fs::read_to_string(file)
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
        };
        for dir in &self.dirs {
            if count(dir.join("memory.oom_control"), "oom_kill ").is_some_and(|n| n > 0) {
                return Some(LimitHit::Memory);
            }
        }
        for dir in &self.dirs {
            if count(dir.join("pids.events"), "max ").is_some_and(|n| n > 0) {
                return Some(LimitHit::Processes);
            }
        }
        None
    }

    /// Removes the groups (waiting briefly for their last members to go).
    pub(super) fn remove(&self) {
        for dir in &self.dirs {
            super::tree::remove_group(dir, Duration::from_secs(2));
        }
    }
}

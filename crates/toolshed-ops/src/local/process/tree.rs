//! Finding and signalling every process of a child's tree.
//!
//! Two methods, the better one chosen when the backend starts:
//!
//! - **cgroup** (cgroup v2 with `cgroup.kill`, Linux 5.14+, and write access to toolshed's
//!   own cgroup — root in a container, or a delegated systemd unit): each child is put in a
//!   cgroup of its own before it executes, under `toolshed-<pid>-<start>/` beside toolshed.
//!   Every descendant is born inside it whatever it does with sessions and groups, and
//!   `cgroup.kill` SIGKILLs all of them at once, races with `fork` included. TERM goes to
//!   each member through a pidfd, after checking the pid is still a member. Cgroups left by
//!   a toolshed that died are killed and removed when the next one starts.
//! - **process tree** (the fallback): the child's session and process group, every process
//!   whose parent is in the tree, and the sessions and groups those processes lead, found
//!   by scanning `/proc` at the moment of signalling; only processes started after the
//!   child are considered, and each is signalled through a pidfd after its start time is
//!   checked again, so a reused pid is never hit. A grandchild that called `setsid` *and*
//!   whose parent has already exited was re-parented to init and is not found; that is the
//!   gap the cgroup method closes.
//!
//! A PID namespace per child would also contain the tree, but its first process is an
//! init that ignores SIGTERM and must reap orphans, which needs a helper binary between
//! toolshed and every command; cgroups give the same guarantee without one.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::process::{Pid, PidfdFlags, Signal};

use super::owner::{OwnedGroup, SELF_GROUP, Stale, own_group_name, stale_groups};

/// How the tree of a child is found and killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeKillMethod {
    /// A cgroup v2 per child, killed with `cgroup.kill`.
    Cgroup,
    /// Sessions, process groups and parent links read from `/proc`.
    ProcessTree,
}

impl std::fmt::Display for TreeKillMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TreeKillMethod::Cgroup => "cgroup",
            TreeKillMethod::ProcessTree => "process tree",
        })
    }
}

/// The tree of one child.
#[derive(Debug)]
pub(super) enum Tracker {
    Cgroup(CgroupTree),
    Tree(ProcessTree),
}

impl Tracker {
    /// Sends `signal` to every live process of the tree.
    pub(super) fn signal(&self, signal: Signal) {
        match self {
            Tracker::Cgroup(c) => c.signal(signal),
            Tracker::Tree(t) => t.signal(signal),
        }
    }

    /// SIGKILLs the whole tree.
    pub(super) fn kill(&self) {
        match self {
            Tracker::Cgroup(c) => c.kill(),
            Tracker::Tree(t) => t.signal(Signal::KILL),
        }
    }

    /// No live process is left (zombies do not count).
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Tracker::Cgroup(c) => c.is_empty(),
            Tracker::Tree(t) => t.members().is_empty(),
        }
    }

    /// Kills what is left and removes what the tracker created.
    pub(super) fn clean_up(&self) {
        if let Tracker::Cgroup(c) = self {
            c.kill();
            let deadline = Instant::now() + Duration::from_secs(2);
            while !c.is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = fs::remove_dir(&c.dir);
        }
    }
}

/// Where this process makes its cgroups: `<toolshed's cgroup>/toolshed-<pid>-<start>`.
#[derive(Debug)]
pub(super) struct CgroupBase {
    /// `toolshed-<pid>-<start>-<nonce>`, locked while this process lives.
    owner: OwnedGroup,
    /// The cgroup this process was in, to go back to before removing its base at exit.
    parent: PathBuf,
    /// Whether this process moved into its `self` group (see [`CgroupBase::join_self`]).
    joined: OnceLock<bool>,
    /// `dir` as `/proc/<pid>/cgroup` spells it.
    rel: String,
    next: AtomicU64,
}

/// The cgroup base of this process, found and created once; `Err` says why cgroups cannot
/// be used.
pub(super) fn cgroup_base() -> Result<&'static CgroupBase, String> {
    CGROUP_BASE
        .get_or_init(probe_cgroup)
        .as_ref()
        .map_err(Clone::clone)
}

static CGROUP_BASE: OnceLock<Result<CgroupBase, String>> = OnceLock::new();

fn probe_cgroup() -> Result<CgroupBase, String> {
    let own =
        fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let own = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("toolshed is not in a cgroup v2 hierarchy")?
        .trim()
        .to_string();
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let (mount_root, mount_point) = mountinfo
        .lines()
        .find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            if !right.starts_with("cgroup2 ") {
                return None;
            }
            let fields: Vec<&str> = left.split(' ').collect();
            Some((fields.get(3)?.to_string(), fields.get(4)?.to_string()))
        })
        .ok_or("no cgroup v2 file system is mounted")?;
    let inside = Path::new(&own)
        .strip_prefix(&mount_root)
        .map_err(|_| format!("toolshed's cgroup {own} is outside the mounted {mount_root}"))?;
    let parent = Path::new(&mount_point).join(inside);
    rustix::fs::access(parent.join("cgroup.procs"), rustix::fs::Access::WRITE_OK).map_err(|e| {
        format!(
            "toolshed's cgroup {} cannot be written ({e}); run as root or in a delegated unit",
            parent.display()
        )
    })?;
    sweep_stale(&parent);
    let name = own_group_name();
    let dir = parent.join(&name);
    let owner = OwnedGroup::establish(dir.clone())
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if !dir.join("cgroup.kill").exists() {
        owner.release();
        let _ = fs::remove_dir(&dir);
        return Err("the kernel has no cgroup.kill (Linux 5.14 or later is needed)".into());
    }
    let rel = Path::new(&own).join(&name).to_string_lossy().into_owned();
    Ok(CgroupBase {
        owner,
        parent,
        joined: OnceLock::new(),
        rel,
        next: AtomicU64::new(0),
    })
}

impl CgroupBase {
    /// Moves this process into its `self` group, once, before its first command's group
    /// is made: from then on a neighbour judges its groups alive from any PID namespace.
    /// (Moving a process between cgroups costs milliseconds, so it is not done at start,
    /// for a process that may never run a command.)
    fn join_self(&self) -> bool {
        *self.joined.get_or_init(|| {
            let me = self.owner.dir.join(SELF_GROUP);
            let joined = match fs::create_dir(&me) {
                Ok(()) => true,
                Err(e) => e.kind() == io::ErrorKind::AlreadyExists,
            } && fs::write(me.join("cgroup.procs"), "0").is_ok();
            if !joined {
                tracing::debug!(group = %me.display(), "cannot join the own cgroup; stale groups are judged by PID");
                let _ = fs::remove_dir(&me);
            }
            joined
        })
    }
}

/// Removes this process's cgroups, at exit: it goes back to the cgroup it came from, kills
/// what is left in its groups and removes them, so no empty `toolshed-…` group stays
/// behind; the cgroup-v1 limit groups likewise. Does nothing when cgroups were never used.
pub fn release_cgroups() {
    release_base();
    super::limits::release();
}

fn release_base() {
    let Some(Ok(base)) = CGROUP_BASE.get() else {
        return;
    };
    if base.joined.get() == Some(&true) && fs::write(base.parent.join("cgroup.procs"), "0").is_err()
    {
        // Still inside: killing or removing the base would take this process with it.
        return;
    }
    let dir = &base.owner.dir;
    let _ = fs::write(dir.join("cgroup.kill"), "1");
    if let Ok(children) = fs::read_dir(dir) {
        for child in children.flatten().filter(|c| c.path().is_dir()) {
            remove_group(&child.path(), Duration::from_millis(500));
        }
    }
    base.owner.release();
    remove_group(dir, Duration::from_millis(500));
}

/// Kills and removes the cgroups of toolshed processes that no longer exist (a crash leaves
/// their grandchildren running; the parent-death signal only reaches the direct child).
fn sweep_stale(parent: &Path) {
    for Stale { dir, .. } in stale_groups(parent) {
        let _ = fs::write(dir.join("cgroup.kill"), "1");
        if let Ok(children) = fs::read_dir(&dir) {
            for child in children.flatten() {
                if child.path().is_dir() {
                    remove_cgroup(&child.path());
                }
            }
        }
        remove_cgroup(&dir);
    }
}

/// Removes an empty cgroup, waiting briefly for killed members to go.
fn remove_cgroup(dir: &Path) {
    remove_group(dir, Duration::from_secs(1));
}

/// Removes the cgroup `dir`, retrying while it is busy (its last members still exiting) for
/// at most `wait`. A group that is gone already — another toolshed cleared the same dead
/// group first — is done, not retried.
pub(super) fn remove_group(dir: &Path, wait: Duration) {
    remove_with(dir, Instant::now() + wait, |d| fs::remove_dir(d));
}

/// [`remove_group`] with the removal given; how many attempts it made.
fn remove_with(dir: &Path, deadline: Instant, remove: impl Fn(&Path) -> io::Result<()>) -> usize {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match remove(dir) {
            Ok(()) => return attempts,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return attempts,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => return attempts,
        }
    }
}

impl CgroupBase {
    /// A new cgroup for one child, and its `cgroup.procs` open for the child to join.
    pub(super) fn create(&self) -> io::Result<(CgroupTree, OwnedFd)> {
        self.join_self();
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let name = format!("c{n}");
        let dir = self.owner.dir.join(&name);
        if let Err(e) = fs::create_dir(&dir) {
            if e.kind() != io::ErrorKind::NotFound {
                return Err(e);
            }
            // The base is gone (removed by hand, or by a toolshed that judged this one
            // dead): make it again rather than fail every command from now on.
            self.owner.restore()?;
            fs::create_dir(&dir)?;
        }
        let procs = match rustix::fs::open(
            dir.join("cgroup.procs"),
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                return Err(e.into());
            }
        };
        let tree = CgroupTree {
            membership: format!("0::{}/{name}", self.rel.trim_end_matches('/')),
            dir,
        };
        Ok((tree, procs))
    }
}

/// A child's own cgroup.
#[derive(Debug)]
pub(super) struct CgroupTree {
    pub(super) dir: PathBuf,
    /// The line `/proc/<pid>/cgroup` shows for a member.
    membership: String,
}

impl CgroupTree {
    fn pids(&self) -> Vec<i32> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    fn signal(&self, signal: Signal) {
        for pid in self.pids() {
            let Some(pid) = Pid::from_raw(pid) else {
                continue;
            };
            let Ok(fd) = rustix::process::pidfd_open(pid, PidfdFlags::empty()) else {
                continue; // gone already
            };
            // The pid was read before the pidfd was opened: check the pidfd's process is
            // still a member, so a reused pid is never signalled.
            let member = fs::read_to_string(format!("/proc/{}/cgroup", pid.as_raw_nonzero()))
                .map(|c| c.lines().any(|l| l == self.membership))
                .unwrap_or(false);
            if member {
                let _ = rustix::process::pidfd_send_signal(&fd, signal);
            }
        }
    }

    fn kill(&self) {
        let _ = fs::write(self.dir.join("cgroup.kill"), "1");
    }

    fn is_empty(&self) -> bool {
        match fs::read_to_string(self.dir.join("cgroup.events")) {
            Ok(events) => events.lines().any(|l| l == "populated 0"),
            Err(_) => self.pids().is_empty(),
        }
    }
}

/// A child's tree as `/proc` shows it.
#[derive(Debug)]
pub(super) struct ProcessTree {
    pub(super) leader: i32,
    /// The child's start time (clock ticks after boot); older processes are never members.
    pub(super) leader_start: u64,
}

/// One line of `/proc/<pid>/stat`, the fields used here.
struct Stat {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    zombie: bool,
    start: u64,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain anything, parentheses included.
    let (_, rest) = text.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        zombie: matches!(*f.first()?, "Z" | "X"),
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// A process's start time, in clock ticks after boot.
pub(super) fn start_time(pid: u32) -> Option<u64> {
    read_stat(i32::try_from(pid).ok()?).map(|s| s.start)
}

impl ProcessTree {
    /// The live members with their start times.
    fn members(&self) -> Vec<(i32, u64)> {
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        let procs: Vec<Stat> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(read_stat)
            .filter(|s| s.start >= self.leader_start)
            .collect();
        let mut pids = HashSet::from([self.leader]);
        let mut sessions = HashSet::from([self.leader]);
        let mut groups = HashSet::from([self.leader]);
        loop {
            let mut grew = false;
            for s in &procs {
                if !pids.contains(&s.pid)
                    && (sessions.contains(&s.session)
                        || groups.contains(&s.pgrp)
                        || pids.contains(&s.ppid))
                {
                    pids.insert(s.pid);
                    sessions.insert(s.session);
                    groups.insert(s.pgrp);
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        procs
            .iter()
            .filter(|s| pids.contains(&s.pid) && !s.zombie)
            .map(|s| (s.pid, s.start))
            .collect()
    }

    fn signal(&self, signal: Signal) {
        for (pid, start) in self.members() {
            let Some(p) = Pid::from_raw(pid) else {
                continue;
            };
            let Ok(fd) = rustix::process::pidfd_open(p, PidfdFlags::empty()) else {
                continue;
            };
            // Same pid, same start time, after the pidfd pins the process: the same process.
            if read_stat(pid).map(|s| s.start) == Some(start) {
                let _ = rustix::process::pidfd_send_signal(&fd, signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_already_gone_is_removed_at_once_and_a_busy_one_is_retried() {
        let later = Instant::now() + Duration::from_secs(1);
        let gone = |_: &Path| Err(io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(remove_with(Path::new("/x"), later, gone), 1);
        let busy_twice = std::cell::Cell::new(0);
        let busy = |_: &Path| {
            busy_twice.set(busy_twice.get() + 1);
            if busy_twice.get() < 3 {
                Err(io::Error::from_raw_os_error(libc::EBUSY))
            } else {
                Ok(())
            }
        };
        assert_eq!(remove_with(Path::new("/x"), later, busy), 3);
    }
}

//! Who owns a toolshed group, in any PID namespace.
//!
//! Each toolshed makes one directory per cgroup hierarchy it uses —
//! `toolshed-<pid>-<start>-<nonce>` beside its own cgroup — and puts its commands' groups
//! under it. A toolshed that crashes leaves its directory behind, so every toolshed sweeps
//! the directories of dead ones when it starts. "Dead" must hold across PID namespaces: a
//! toolshed in a container or under `unshare -p` cannot see its neighbours' PIDs, and a
//! PID it cannot see says nothing.
//!
//! So the owner holds an exclusive `flock` on its directory for as long as it lives (the
//! kernel drops it when the process dies, however it dies), and a sweeper removes only a
//! directory whose lock it could take itself — kernel state on the cgroup file system,
//! the same from every PID namespace and every mount of the hierarchy. Directories of older
//! toolsheds, which hold no lock, are still judged by their `self` group (populated while
//! that toolshed lives, cgroup v2) or by a PID with its start time that names a process
//! here.
//!
//! A directory removed by hand while its owner runs is made again, and locked, by the
//! owner's next command ([`OwnedGroup::restore`]); the owner says so once in its log.

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;

/// The group this process itself moves into, inside its directory (cgroup v2): while it
/// lives the group is populated, which a toolshed of an older version reads to judge it.
pub(super) const SELF_GROUP: &str = "self";

/// This process's directory name in a cgroup hierarchy: `toolshed-<pid>-<start>-<nonce>`.
/// The PID and start time name it for a person; the nonce keeps two toolsheds apart that
/// are PID 1 of their namespaces and started in the same clock tick.
pub(super) fn own_group_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let me = std::process::id();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let start = super::tree::start_time(me).unwrap_or(0);
        format!("toolshed-{me}-{start}-{:x}", nanos ^ me.rotate_left(16))
    })
    .clone()
}

/// A directory this process owns, with the lock that says so.
#[derive(Debug)]
pub(super) struct OwnedGroup {
    pub(super) dir: PathBuf,
    lock: Mutex<Option<OwnedFd>>,
}

/// Whether the log has said that a directory of this process was made again (it says so
/// once, not at every command).
static TOLD: AtomicBool = AtomicBool::new(false);

impl OwnedGroup {
    /// Makes `dir` (or takes it as it is) and locks it.
    pub(super) fn establish(dir: PathBuf) -> io::Result<Self> {
        let lock = make_and_lock(&dir)?;
        Ok(Self {
            dir,
            lock: Mutex::new(Some(lock)),
        })
    }

    /// Makes the directory again after someone removed it (a person, or a toolshed of an
    /// older version that judged this one dead), and takes its lock again. Says so once in
    /// the log.
    pub(super) fn restore(&self) -> io::Result<()> {
        let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(fd) = held.as_ref()
            && still_at(fd, &self.dir)
        {
            return Ok(());
        }
        *held = Some(make_and_lock(&self.dir)?);
        if !TOLD.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                group = %self.dir.display(),
                "this toolshed's cgroup directory was removed by another process; made it again (said once)"
            );
        }
        Ok(())
    }

    /// Gives the lock up, before the directory is removed at exit.
    pub(super) fn release(&self) {
        self.lock.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

fn open_dir(dir: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Whether `fd` is still the directory at `dir` (not one removed since, or made anew).
fn still_at(fd: &OwnedFd, dir: &Path) -> bool {
    match (rustix::fs::fstat(fd), rustix::fs::stat(dir)) {
        (Ok(held), Ok(now)) => held.st_ino == now.st_ino && held.st_dev == now.st_dev,
        _ => false,
    }
}

/// Makes `dir` if it is missing and takes its lock. A sweeper may remove a directory in the
/// moment between its making and its locking (it cannot tell that one from a dead one's):
/// the lock is only kept once the directory it is on is still the one at `dir`.
fn make_and_lock(dir: &Path) -> io::Result<OwnedFd> {
    // A sweeper in another namespace may hold the lock a while, removing other groups.
    for _ in 0..400 {
        match fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let fd = match open_dir(dir) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            // A sweeper holds it for a moment, deciding.
            Err(Errno::WOULDBLOCK) => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        if still_at(&fd, dir) {
            return Ok(fd);
        }
    }
    Err(io::Error::other(format!(
        "{} kept being removed while it was made",
        dir.display()
    )))
}

/// Whether the toolshed that made the directory `dir` runs, by its `self` group (cgroup v2,
/// populated while it lives). `None` for a directory without one.
fn self_populated(dir: &Path) -> Option<bool> {
    let me = dir.join(SELF_GROUP);
    if !me.is_dir() {
        return None;
    }
    match fs::read_to_string(me.join("cgroup.events")) {
        Ok(events) => Some(events.lines().any(|l| l.trim() == "populated 1")),
        Err(_) => {
            Some(fs::read_to_string(me.join("cgroup.procs")).is_ok_and(|p| !p.trim().is_empty()))
        }
    }
}

/// A directory of a dead toolshed, with its lock held by the sweeper until it is removed.
pub(super) struct Stale {
    pub(super) dir: PathBuf,
    _lock: OwnedFd,
}

/// The toolshed directories under `parent` whose owner no longer runs: nobody holds the
/// lock, no process is in its `self` group, and its PID with its start time names no
/// process here. This process's own directory is never one.
pub(super) fn stale_groups(parent: &Path) -> Vec<Stale> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let own = own_group_name();
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let mut parts = name.strip_prefix("toolshed-")?.split('-');
            let pid = parts.next()?.parse::<u32>().ok()?;
            let start = parts.next()?.parse::<u64>().ok()?;
            if name == own {
                return None;
            }
            let dir = entry.path();
            let lock = open_dir(&dir).ok()?;
            // Held: its owner lives (or another sweeper is deciding; it will remove it).
            rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).ok()?;
            let alive =
                self_populated(&dir) == Some(true) || super::tree::start_time(pid) == Some(start);
            (!alive).then_some(Stale { dir, _lock: lock })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock decides, not the PID: a directory whose lock is held is alive though its
    /// PID names nothing here; once the lock is gone it is stale.
    #[test]
    fn a_held_lock_keeps_a_directory_alive_whatever_its_pid() {
        let parent = std::env::temp_dir().join(format!("owner-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&parent);
        fs::create_dir_all(&parent).unwrap();
        let dir = parent.join("toolshed-999999-1-abc");
        let owned = OwnedGroup::establish(dir.clone()).unwrap();
        assert!(
            stale_groups(&parent).is_empty(),
            "a locked directory was judged stale"
        );
        owned.release();
        let stale: Vec<PathBuf> = stale_groups(&parent).into_iter().map(|s| s.dir).collect();
        assert_eq!(stale, vec![dir.clone()]);
        // Removed by someone else: restored, and locked again.
        let owned = OwnedGroup::establish(dir.clone()).unwrap();
        fs::remove_dir(&dir).unwrap();
        owned.restore().unwrap();
        assert!(dir.is_dir());
        assert!(stale_groups(&parent).is_empty());
        drop(owned);
        fs::remove_dir_all(&parent).unwrap();
    }
}

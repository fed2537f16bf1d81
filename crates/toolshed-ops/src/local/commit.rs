//! Writing without losing anything: compare-and-swap under the writers' locks, temporary
//! files kept in `.toolshed/tmp`, and an intent journal that finishes a multi-file commit
//! a crash interrupted.
//!
//! A commit locks (`flock`, exclusive) every directory it changes, in one order, so two
//! toolshed writers — threads or processes — never interleave; checks each change's
//! expectation against what is on disk now; writes every new content to a temporary file
//! and flushes it; then, when there is more than one change, writes a journal naming each
//! rename and removal, and only then renames and removes. A workspace opened later (see
//! [`LocalOps::recover`]) replays a journal whose writer died, and deletes temporary files
//! no live writer holds. Each temporary file and journal is locked by its writer for as
//! long as it lives, so "no live writer" is decided by the kernel, in any PID namespace.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::fs::{
    AtFlags, FlockOperation, Mode, OFlags, ResolveFlags, Stat, openat, openat2, renameat, statat,
    unlinkat,
};
use rustix::io::Errno;

use super::{LocalOps, check_writable};
use crate::error::OpsError;
use crate::file::{Change, Expect, Parents, Written};
use crate::path::{RESERVED_DIR, shown, split_parent};

/// toolshed's scratch directory, inside the reserved directory.
const SCRATCH: &str = "tmp";
/// Held shared while a writer creates and locks a temporary file, exclusive while a sweep
/// decides which are dead.
const SWEEP_LOCK: &str = ".sweep.lock";
/// Complete journals; `.part` marks one being written.
const JOURNAL_PREFIX: &str = "journal-";
/// The longest a writer waits for another's lock.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// The most bytes of journal read back.
const MAX_JOURNAL_BYTES: u64 = 16 << 20;

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// The opened scratch directory and its file system.
pub(super) struct Scratch {
    fd: OwnedFd,
    dev: u64,
}

/// Waits (at most [`LOCK_WAIT`]) for a `flock` on `fd`.
fn lock(fd: impl AsFd, exclusive: bool, path: &str) -> Result<(), OpsError> {
    let op = if exclusive {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        match rustix::fs::flock(&fd, op) {
            Ok(()) => return Ok(()),
            Err(Errno::WOULDBLOCK | Errno::INTR) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(Errno::WOULDBLOCK) => {
                return Err(OpsError::Busy {
                    path: shown(path),
                    secs: LOCK_WAIT.as_secs(),
                });
            }
            Err(e) => return Err(LocalOps::error(path, "lock", e)),
        }
    }
}

/// Whether `fd` can be locked at once: no live writer holds it.
fn unheld(fd: &OwnedFd) -> bool {
    rustix::fs::flock(fd, FlockOperation::NonBlockingLockExclusive).is_ok()
}

/// A temporary file holding new content, locked by this writer.
struct Temp {
    in_scratch: bool,
    name: String,
    file: File,
}

/// One primitive step of a commit.
enum Step<'a> {
    Put {
        dir: usize,
        name: OsString,
        rel: String,
        path: &'a str,
        data: &'a [u8],
        expect: Expect<'a>,
        /// A move's target: must not exist, takes the mode of the step at this index.
        moved_from: Option<usize>,
    },
    Del {
        dir: usize,
        name: OsString,
        rel: String,
        path: &'a str,
        expect: Expect<'a>,
    },
}

/// Whether the file `name` in `dir` holds exactly `want`.
fn holds(dir: &OwnedFd, name: &OsStr, st: &Stat, want: &[u8]) -> Result<bool, Errno> {
    if u64::try_from(st.st_size).unwrap_or(u64::MAX) != want.len() as u64 {
        return Ok(false);
    }
    let fd = openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut have = Vec::with_capacity(want.len());
    File::from(fd)
        .take(want.len() as u64 + 1)
        .read_to_end(&mut have)
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    Ok(have == want)
}

impl LocalOps {
    /// The scratch directory, created on first use; `None` when the workspace has no room
    /// for it (a read-only root, `.toolshed` not a directory).
    fn scratch(&self) -> Option<&Scratch> {
        self.scratch
            .get_or_init(|| self.open_scratch(true).ok())
            .as_ref()
    }

    /// Opens `.toolshed/tmp`, creating it (with a `.gitignore` so that version control
    /// never sees what a crash left) when `create`.
    pub(super) fn open_scratch(&self, create: bool) -> Result<Scratch, Errno> {
        let how = |fd: &OwnedFd, name: &str| {
            openat2(
                fd,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
            )
        };
        if create {
            match rustix::fs::mkdirat(&self.root_fd, RESERVED_DIR, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e),
            }
        }
        let top = how(&self.root_fd, RESERVED_DIR)?;
        if create {
            match rustix::fs::mkdirat(&top, SCRATCH, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e),
            }
        }
        let fd = how(&top, SCRATCH)?;
        if create
            && matches!(
                statat(&fd, ".gitignore", AtFlags::SYMLINK_NOFOLLOW),
                Err(Errno::NOENT)
            )
        {
            let ignore = openat(
                &fd,
                ".gitignore",
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            );
            if let Ok(ignore) = ignore {
                let _ = File::from(ignore).write_all(b"*\n");
            }
        }
        let dev = rustix::fs::fstat(&fd)?.st_dev;
        Ok(Scratch { fd, dev })
    }

    /// A fresh temporary file for content bound for directory `dir` (on device `dev`):
    /// in the scratch directory when it is on the same file system, else beside the
    /// target under one fixed name per target (which the next write replaces).
    fn new_temp(
        &self,
        dir: &OwnedFd,
        dev: u64,
        target: &OsStr,
        path: &str,
        data: &[u8],
        mode: u32,
    ) -> Result<Temp, OpsError> {
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let (in_scratch, name, fd) = match self.scratch().filter(|s| s.dev == dev) {
            Some(scratch) => {
                let name = unique_name("w-", ".tmp");
                let fd = create_locked(scratch, &name, path)?;
                (true, name, fd)
            }
            None => {
                let name = Self::temp_name(target);
                match unlinkat(dir, name.as_str(), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(e) => return Err(Self::error(path, "clear the temporary file for", e)),
                }
                let fd = openat(
                    dir,
                    name.as_str(),
                    create | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )
                .map_err(|e| Self::error(path, "create a temporary file for", e))?;
                (false, name, fd)
            }
        };
        let temp = Temp {
            in_scratch,
            name,
            file: File::from(fd),
        };
        let result = (|| {
            let mut file = &temp.file;
            file.write_all(data).map_err(|e| OpsError::Io {
                action: "write".into(),
                path: shown(path),
                message: e.to_string(),
            })?;
            rustix::fs::fchmod(file, Mode::from_raw_mode(mode))
                .map_err(|e| Self::error(path, "set the mode of", e))?;
            rustix::fs::fsync(file).map_err(|e| Self::error(path, "flush", e))
        })();
        if let Err(e) = result {
            self.drop_temp(&temp, dir);
            return Err(e);
        }
        Ok(temp)
    }

    fn temp_dir<'a>(&'a self, temp: &Temp, dir: &'a OwnedFd) -> &'a OwnedFd {
        match (temp.in_scratch, self.scratch.get()) {
            (true, Some(Some(scratch))) => &scratch.fd,
            _ => dir,
        }
    }

    fn drop_temp(&self, temp: &Temp, dir: &OwnedFd) {
        let _ = unlinkat(
            self.temp_dir(temp, dir),
            temp.name.as_str(),
            AtFlags::empty(),
        );
    }

    /// Applies `changes` all-or-nothing (see [`FileOps::commit`](crate::FileOps::commit));
    /// returns, per `Write`, whether it created or replaced.
    pub(super) fn apply(&self, changes: &[Change<'_>]) -> Result<Vec<Written>, OpsError> {
        // Resolve every target's directory, creating parents first where asked.
        let mut dirs: Vec<(OwnedFd, (u64, u64))> = Vec::new();
        let mut steps: Vec<Step<'_>> = Vec::new();
        let mut place = |this: &Self, path: &'_ str, parents: bool| {
            let rel = this.rel(path)?;
            if parents {
                let (parent, _) = split_parent(&rel);
                if parent != "." {
                    crate::FileOps::mkdir(this, parent, Parents::Create)?;
                }
            }
            let (fd, name) = this.open_parent(&rel, path)?;
            let name = name.into_owned();
            let st = rustix::fs::fstat(&fd).map_err(|e| Self::error(path, "inspect", e))?;
            super::check_dir_writable(&st, path)?;
            let key = (st.st_dev, st.st_ino);
            let index = match dirs.iter().position(|(_, k)| *k == key) {
                Some(i) => i,
                None => {
                    dirs.push((fd, key));
                    dirs.len() - 1
                }
            };
            Ok::<_, OpsError>((index, name, rel))
        };
        for change in changes {
            match *change {
                Change::Write {
                    path,
                    data,
                    expect,
                    parents,
                } => {
                    let (dir, name, rel) = place(self, path, parents == Parents::Create)?;
                    steps.push(Step::Put {
                        dir,
                        name,
                        rel,
                        path,
                        data,
                        expect,
                        moved_from: None,
                    });
                }
                Change::Remove { path, expect } => {
                    let (dir, name, rel) = place(self, path, false)?;
                    steps.push(Step::Del {
                        dir,
                        name,
                        rel,
                        path,
                        expect,
                    });
                }
                Change::Move {
                    from,
                    to,
                    data,
                    expect,
                } => {
                    let (dir, name, rel) = place(self, from, false)?;
                    let source = steps.len();
                    steps.push(Step::Del {
                        dir,
                        name,
                        rel,
                        path: from,
                        expect,
                    });
                    let (dir, name, rel) = place(self, to, true)?;
                    steps.push(Step::Put {
                        dir,
                        name,
                        rel,
                        path: to,
                        data,
                        expect: Expect::Missing,
                        moved_from: Some(source),
                    });
                }
            }
        }
        // Lock every directory, in one order, so that two commits never wait on each other.
        let mut order: Vec<usize> = (0..dirs.len()).collect();
        order.sort_by_key(|&i| dirs[i].1);
        for &i in &order {
            lock(&dirs[i].0, true, changes.first().map_or(".", |c| c.path()))?;
        }
        // Check every step against the disk as it is now, under the locks.
        let mut modes = vec![0o644_u32; steps.len()];
        let mut created = vec![false; steps.len()];
        for (i, step) in steps.iter().enumerate() {
            let (dir, name, path, expect, writing) = match step {
                Step::Put {
                    dir,
                    name,
                    path,
                    expect,
                    ..
                } => (*dir, name, *path, *expect, true),
                Step::Del {
                    dir,
                    name,
                    path,
                    expect,
                    ..
                } => (*dir, name, *path, *expect, false),
            };
            let moving = matches!(
                step,
                Step::Put {
                    moved_from: Some(_),
                    ..
                }
            ) || matches!(steps.get(i + 1), Some(Step::Put { moved_from: Some(s), .. }) if *s == i);
            let changed = |detail: &'static str| OpsError::Changed {
                path: shown(path),
                detail: detail.into(),
            };
            let dir = &dirs[dir].0;
            match statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => {
                    if let Step::Put {
                        moved_from: Some(_),
                        ..
                    } = step
                    {
                        return Err(OpsError::AlreadyExists { path: shown(path) });
                    }
                    if expect == Expect::Missing {
                        return Err(changed("it exists now"));
                    }
                    if writing || moving {
                        check_writable(&st, path)?;
                    } else if super::kind_of(&st) == crate::FileKind::Dir {
                        return Err(OpsError::IsADirectory { path: shown(path) });
                    }
                    if let Expect::Content(want) = expect {
                        let same = super::kind_of(&st) == crate::FileKind::File
                            && holds(dir, name, &st, want)
                                .map_err(|e| Self::error(path, "read", e))?;
                        if !same {
                            return Err(changed("its content differs from what you read"));
                        }
                    }
                    modes[i] = st.st_mode & 0o7777;
                }
                Err(Errno::NOENT) => {
                    if let Expect::Content(_) = expect {
                        return Err(changed("it no longer exists"));
                    }
                    if !writing {
                        return Err(OpsError::NotFound { path: shown(path) });
                    }
                    created[i] = true;
                }
                Err(e) => return Err(Self::error(path, "inspect", e)),
            }
        }
        // New contents, flushed, before anything is renamed.
        let mut temps: Vec<Option<Temp>> = Vec::with_capacity(steps.len());
        for (i, step) in steps.iter().enumerate() {
            let Step::Put {
                dir,
                name,
                path,
                data,
                moved_from,
                ..
            } = step
            else {
                temps.push(None);
                continue;
            };
            let mode = moved_from.map_or(modes[i], |s| modes[s]);
            let (fd, (dev, _)) = &dirs[*dir];
            match self.new_temp(fd, *dev, name, path, data, mode) {
                Ok(temp) => temps.push(Some(temp)),
                Err(e) => {
                    for (t, s) in temps.iter().zip(&steps) {
                        if let (Some(t), Step::Put { dir, .. }) = (t, s) {
                            self.drop_temp(t, &dirs[*dir].0);
                        }
                    }
                    return Err(e);
                }
            }
        }
        // More than one step: the journal first, so that a crash from here on is finished
        // by the next open instead of leaving half a commit.
        let journal = if steps.len() > 1 {
            self.write_journal(&steps, &temps)?
        } else {
            None
        };
        let mut failure = None;
        let mut record = |e: OpsError| {
            failure.get_or_insert(e);
        };
        for (step, temp) in steps.iter().zip(&temps) {
            if let (
                Step::Put {
                    dir, name, path, ..
                },
                Some(temp),
            ) = (step, temp)
            {
                let dir = &dirs[*dir].0;
                if let Err(e) = renameat(
                    self.temp_dir(temp, dir),
                    temp.name.as_str(),
                    dir,
                    name.as_os_str(),
                ) {
                    record(Self::error(path, "replace", e));
                }
            }
        }
        for step in &steps {
            if let Step::Del {
                dir, name, path, ..
            } = step
            {
                match unlinkat(&dirs[*dir].0, name.as_os_str(), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(e) => record(Self::error(path, "remove", e)),
                }
            }
        }
        // Make the renames durable, then retire the journal.
        for (fd, _) in &dirs {
            let _ = rustix::fs::fsync(fd);
        }
        if let Some(e) = failure {
            // The journal stays: the next open finishes what could be finished.
            return Err(e);
        }
        if let (Some((name, _held)), Some(scratch)) = (journal, self.scratch()) {
            let _ = unlinkat(&scratch.fd, name.as_str(), AtFlags::empty());
        }
        Ok(steps
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                matches!(
                    s,
                    Step::Put {
                        moved_from: None,
                        ..
                    }
                )
            })
            .map(|(i, _)| {
                if created[i] {
                    Written::Created
                } else {
                    Written::Replaced
                }
            })
            .collect())
    }

    /// Writes and flushes the journal of `steps`; returns its name and the open (locked)
    /// file, or `None` when the
    /// workspace has no scratch directory (the commit then runs unjournaled, as before
    /// journals existed).
    fn write_journal(
        &self,
        steps: &[Step<'_>],
        temps: &[Option<Temp>],
    ) -> Result<Option<(String, File)>, OpsError> {
        let Some(scratch) = self.scratch() else {
            return Ok(None);
        };
        let mut text: Vec<u8> = Vec::new();
        let mut field = |s: &str| {
            text.extend_from_slice(s.as_bytes());
            text.push(0);
        };
        for (step, temp) in steps.iter().zip(temps) {
            match (step, temp) {
                (Step::Put { rel, .. }, Some(temp)) => {
                    field("put");
                    field(if temp.in_scratch { "scratch" } else { "beside" });
                    field(&temp.name);
                    field(rel);
                }
                (Step::Del { rel, .. }, _) => {
                    field("del");
                    field(rel);
                }
                _ => {}
            }
        }
        field("end");
        let part = unique_name(JOURNAL_PREFIX, ".part");
        let fd = create_locked(scratch, &part, ".toolshed/tmp")?;
        let io = |e: std::io::Error| OpsError::Io {
            action: "write the journal in".into(),
            path: ".toolshed/tmp".into(),
            message: e.to_string(),
        };
        let mut file = File::from(fd);
        let done = file
            .write_all(&text)
            .map_err(io)
            .and_then(|()| file.sync_all().map_err(io))
            .and_then(|()| {
                let name = part.trim_end_matches(".part").to_string();
                renameat(&scratch.fd, part.as_str(), &scratch.fd, name.as_str())
                    .map_err(|e| Self::error(".toolshed/tmp", "write the journal in", e))?;
                let _ = rustix::fs::fsync(&scratch.fd);
                Ok(name)
            });
        match done {
            // The open file keeps the journal locked until this writer is done with it.
            Ok(name) => Ok(Some((name, file))),
            Err(e) => {
                let _ = unlinkat(&scratch.fd, part.as_str(), AtFlags::empty());
                Err(e)
            }
        }
    }

    /// Run when the workspace is opened: finishes every commit whose writer died after
    /// writing its journal, and deletes temporary files and unfinished journals no live
    /// writer holds. Best effort: what cannot be done is logged and left for next time.
    pub(super) fn recover(&self) {
        let Ok(scratch) = self.open_scratch(false) else {
            return;
        };
        let dead = match self.sweep(&scratch) {
            Ok(dead) => dead,
            Err(e) => {
                tracing::warn!(error = %e, "could not sweep the workspace's .toolshed/tmp");
                return;
            }
        };
        for (name, fd, records) in dead {
            match self.replay(&scratch, &records) {
                Ok(()) => {
                    let _ = unlinkat(&scratch.fd, name.as_str(), AtFlags::empty());
                    tracing::info!(journal = %name, "finished a commit interrupted by a crash");
                }
                Err(e) => tracing::warn!(journal = %name, error = %e,
                    "could not finish a commit interrupted by a crash; it is retried at the next start"),
            }
            drop(fd);
        }
    }

    /// Under the sweep lock: deletes dead temporary files (except those a journal names)
    /// and returns the dead journals, locked, with their records.
    #[allow(clippy::type_complexity)]
    fn sweep(&self, scratch: &Scratch) -> Result<Vec<(String, OwnedFd, Vec<String>)>, OpsError> {
        let guard = sweep_lock(scratch)?;
        lock(&guard, true, ".toolshed/tmp")?;
        let listing = rustix::fs::Dir::read_from(&scratch.fd)
            .map_err(|e| Self::error(".toolshed/tmp", "list", e))?;
        let names: Vec<String> = listing
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let open = |name: &str| {
            openat(
                &scratch.fd,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        let mut journals = Vec::new();
        let mut named: Vec<String> = Vec::new();
        for name in names.iter().filter(|n| is_journal(n)) {
            let Ok(fd) = open(name) else { continue };
            let mut bytes = Vec::new();
            let _ = File::from(fd.try_clone().map_err(|e| OpsError::Io {
                action: "read".into(),
                path: name.clone(),
                message: e.to_string(),
            })?)
            .take(MAX_JOURNAL_BYTES)
            .read_to_end(&mut bytes);
            let records: Vec<String> = bytes
                .split(|b| *b == 0)
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            named.extend(records.iter().cloned());
            if unheld(&fd) {
                journals.push((name.clone(), fd, records));
            }
        }
        for name in &names {
            let temp = name.ends_with(".tmp") || name.ends_with(".part");
            if !temp || named.contains(name) {
                continue;
            }
            if let Ok(fd) = open(name)
                && unheld(&fd)
            {
                let _ = unlinkat(&scratch.fd, name.as_str(), AtFlags::empty());
            }
        }
        Ok(journals)
    }

    /// Rolls a journal forward: each rename whose temporary file is still there is done,
    /// each removal whose target is still there is done. Repeating it is harmless.
    fn replay(&self, scratch: &Scratch, records: &[String]) -> Result<(), OpsError> {
        if records
            .iter()
            .rev()
            .find(|r| !r.is_empty())
            .map(String::as_str)
            != Some("end")
        {
            // Never completed: no rename was made, and the sweep took the temporary files.
            return Ok(());
        }
        let mut at = 0;
        while at < records.len() {
            match records[at].as_str() {
                "put" if at + 3 < records.len() => {
                    let (place, temp, rel) = (&records[at + 1], &records[at + 2], &records[at + 3]);
                    at += 4;
                    let (dir, name) = self.open_parent(rel, rel)?;
                    lock(&dir, true, rel)?;
                    let from: &OwnedFd = if place == "scratch" {
                        &scratch.fd
                    } else {
                        &dir
                    };
                    match renameat(from, temp.as_str(), &dir, name) {
                        Ok(()) | Err(Errno::NOENT) => {}
                        Err(e) => return Err(Self::error(rel, "replace", e)),
                    }
                    let _ = rustix::fs::fsync(&dir);
                }
                "del" if at + 1 < records.len() => {
                    let rel = &records[at + 1];
                    at += 2;
                    let (dir, name) = self.open_parent(rel, rel)?;
                    lock(&dir, true, rel)?;
                    match unlinkat(&dir, name, AtFlags::empty()) {
                        Ok(()) | Err(Errno::NOENT) => {}
                        Err(e) => return Err(Self::error(rel, "remove", e)),
                    }
                    let _ = rustix::fs::fsync(&dir);
                }
                _ => break,
            }
        }
        Ok(())
    }
}

fn is_journal(name: &str) -> bool {
    name.starts_with(JOURNAL_PREFIX) && !name.ends_with(".part")
}

fn sweep_lock(scratch: &Scratch) -> Result<OwnedFd, OpsError> {
    openat(
        &scratch.fd,
        SWEEP_LOCK,
        OFlags::RDONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| LocalOps::error(".toolshed/tmp", "lock", e))
}

/// Creates `name` in the scratch directory and locks it before a sweep can judge it dead.
fn create_locked(scratch: &Scratch, name: &str, path: &str) -> Result<OwnedFd, OpsError> {
    let guard = sweep_lock(scratch)?;
    lock(&guard, false, path)?;
    let fd = openat(
        &scratch.fd,
        name,
        OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| LocalOps::error(path, "create a temporary file for", e))?;
    rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| LocalOps::error(path, "lock a temporary file for", e))?;
    Ok(fd)
}

/// A name no other writer, in this process or another, will pick.
fn unique_name(prefix: &str, suffix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}{}-{nanos:x}-{}{suffix}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    )
}

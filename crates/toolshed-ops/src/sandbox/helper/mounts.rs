//! The mounts a command's view is built from: bind mounts made read-only, the writable
//! places, and the policy's write scope inside the workspace.

use std::path::{Path, PathBuf};

use std::os::fd::{AsRawFd, OwnedFd};

use super::{Args, c_path, cstring, os_error};
use crate::sandbox::SandboxMode;

/// Makes the bind mount at `path` read-only, keeping the flags it has (a user namespace may
/// not clear `nosuid`, `nodev`, `noexec` or the atime flags of a mount it inherited).
pub(super) fn remount_read_only(path: &Path) -> Result<(), String> {
    let vfs = rustix::fs::statvfs(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let has = |flag: rustix::fs::StatVfsMountFlags| vfs.f_flag.contains(flag);
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
    for (st, ms) in [
        (rustix::fs::StatVfsMountFlags::NOSUID, libc::MS_NOSUID),
        (rustix::fs::StatVfsMountFlags::NODEV, libc::MS_NODEV),
        (rustix::fs::StatVfsMountFlags::NOEXEC, libc::MS_NOEXEC),
        (rustix::fs::StatVfsMountFlags::NOATIME, libc::MS_NOATIME),
        (
            rustix::fs::StatVfsMountFlags::NODIRATIME,
            libc::MS_NODIRATIME,
        ),
        (rustix::fs::StatVfsMountFlags::RELATIME, libc::MS_RELATIME),
    ] {
        if has(st) {
            flags |= ms;
        }
    }
    mount("none", path, None, flags, None)
}

/// `mount(2)`; the error names the target.
pub(super) fn mount(
    source: &str,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), String> {
    let source = cstring(source.as_bytes())?;
    let target_c = c_path(target)?;
    let fstype = fstype.map(|t| cstring(t.as_bytes())).transpose()?;
    let data = data.map(|d| cstring(d.as_bytes())).transpose()?;
    // SAFETY: every pointer is a valid NUL-terminated string or null, alive for the call.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target_c.as_ptr(),
            fstype.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
            flags,
            data.as_ref()
                .map_or(std::ptr::null(), |d| d.as_ptr().cast::<libc::c_void>()),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("mount on {}: {}", target.display(), os_error()))
    }
}

/// The directories the command may write.
/// Hides the directory `path` like every hidden path (an empty tmpfs, read-only) except
/// for the directories `inside` it, each brought back read-only from its opened
/// descriptor; the directories leading to them exist (traversable, empty otherwise), and
/// nothing else of `path` is there.
pub(super) fn hide_but(path: &Path, inside: &[&(PathBuf, OwnedFd)]) -> Result<(), String> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let data = "mode=0711,size=64k";
    mount("tmpfs", path, Some("tmpfs"), flags, Some(data))?;
    for (shown, fd) in inside {
        bring_back(shown, fd)?;
    }
    mount(
        "tmpfs",
        path,
        None,
        flags | libc::MS_REMOUNT | libc::MS_RDONLY,
        Some(data),
    )
}

/// Mounts the directory opened as `fd` at `path`, read-only, unless `path` already is it.
pub(super) fn bring_back(path: &Path, fd: &OwnedFd) -> Result<(), String> {
    let seen = rustix::fs::stat(path).ok();
    let kept = rustix::fs::fstat(fd).map_err(|e| format!("{}: {e}", path.display()))?;
    if seen.is_some_and(|s| s.st_dev == kept.st_dev && s.st_ino == kept.st_ino) {
        return Ok(());
    }
    std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
    mount(&source, path, None, libc::MS_BIND | libc::MS_REC, None)?;
    remount_read_only(path)
}

pub(super) fn writable(args: &Args) -> Vec<PathBuf> {
    let mut writable = vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")];
    if args.mode == SandboxMode::WorkspaceWrite {
        writable.push(args.workspace.clone());
        writable.extend(args.writable.iter().cloned());
    }
    writable
}

/// Applies the policy's write scope inside the workspace: with `--write-only` paths the
/// workspace becomes read-only but for them; `--read-only` paths are kept read-only. Each
/// is a bind mount of the path onto itself, so the command meets "Read-only file system".
pub(super) fn scope_writes(args: &Args) -> Result<(), String> {
    let inside = |p: &PathBuf| p.starts_with(&args.workspace) && p.is_absolute();
    if !args.write_only.is_empty() {
        let mut writable: Vec<(PathBuf, OwnedFd)> = Vec::new();
        for path in args.write_only.iter().filter(|p| inside(p)) {
            if let Ok(fd) = rustix::fs::open(
                path,
                rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            ) {
                writable.push((path.clone(), fd));
            }
        }
        let ws = args.workspace.as_path();
        let text = ws.to_string_lossy();
        mount(&text, ws, None, libc::MS_BIND | libc::MS_REC, None)?;
        remount_read_only(ws)?;
        for (path, fd) in &writable {
            let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
            mount(&source, path, None, libc::MS_BIND | libc::MS_REC, None)?;
        }
    }
    for path in args.read_only.iter().filter(|p| inside(p)) {
        match path.symlink_metadata() {
            Err(_) => continue,
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!("{} is a symbolic link", path.display()));
            }
            Ok(_) => {}
        }
        // Every directory between the workspace and it becomes a mount point too, so the
        // command cannot rename one away and put an unprotected copy in its place.
        let mut ancestors: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&args.workspace) && *a != args.workspace)
            .collect();
        ancestors.reverse();
        for dir in ancestors {
            let text = dir.to_string_lossy();
            mount(&text, dir, None, libc::MS_BIND, None)?;
        }
        let text = path.to_string_lossy();
        mount(&text, path, None, libc::MS_BIND | libc::MS_REC, None)?;
        remount_read_only(path)?;
    }
    Ok(())
}

/// The directories inside the hidden paths the command may read (`--reveal`), opened
/// before anything is mounted: only what lies inside a hidden path, never one itself or
/// what holds one.
pub(super) fn open_revealed(args: &Args) -> Vec<(PathBuf, OwnedFd)> {
    let mut revealed: Vec<(PathBuf, OwnedFd)> = Vec::new();
    #[allow(clippy::disallowed_methods)]
    let hidden: Vec<PathBuf> = args
        .denied
        .iter()
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    for given in &args.revealed {
        if !given.is_absolute() {
            continue;
        }
        // Compared with the hidden paths, which are canonical.
        #[allow(clippy::disallowed_methods)]
        let Ok(path) = given.canonicalize() else {
            continue;
        };
        // Inside the workspace, only a path with no link on the way.
        if given.starts_with(&args.workspace) != path.starts_with(&args.workspace)
            || (given.starts_with(&args.workspace) && path != *given)
        {
            continue;
        }
        // Only what lies inside a hidden path, never one itself or what holds one.
        if hidden.iter().any(|h| h.starts_with(&path)) {
            continue;
        }
        // One inside the workspace (a folder granted to a skill's script) is opened
        // without following any link: a link the workspace's commands could swap in
        // since it was resolved would lead out of what was granted.
        let flags =
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
        let opened = if path.starts_with(&args.workspace) {
            rustix::fs::openat2(
                rustix::fs::CWD,
                &path,
                flags,
                rustix::fs::Mode::empty(),
                rustix::fs::ResolveFlags::NO_SYMLINKS,
            )
        } else {
            rustix::fs::open(&path, flags, rustix::fs::Mode::empty())
        };
        if let Ok(fd) = opened {
            revealed.push((path, fd));
        }
    }
    revealed
}

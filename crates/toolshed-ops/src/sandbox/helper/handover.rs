//! What crosses into the helper and out of it: the command's environment (handed over as
//! data, never the helper's own), the descriptors it keeps, and the report of what the
//! command left in its private temporary directories.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Args, cstring};

/// The largest environment the helper takes over for a command (Linux refuses an
/// `execve` whose arguments and environment pass a quarter of the stack limit; 32 MiB is
/// past any it would accept).
pub(super) const MAX_ENVIRONMENT: u64 = 32 << 20;

/// Variables that the dynamic loader or the C library act on by themselves, before or
/// outside the program's own code: a process started with one of them runs what it names
/// (`LD_PRELOAD`, `LD_AUDIT`, `GCONV_PATH`), or behaves as it says (`GLIBC_TUNABLES`,
/// `MALLOC_*`). The helper must never run with them, since it runs before the sandbox
/// exists; the command gets them, inside it.
pub(super) const LOADER_VARIABLES: [&str; 10] = [
    "LD_",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "MALLOC_",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
    "LOCALDOMAIN",
];

/// Whether `name` is one of [`LOADER_VARIABLES`] (a prefix ending in `_` covers a family).
pub(super) fn is_loader_variable(name: &[u8]) -> bool {
    LOADER_VARIABLES.iter().any(|v| {
        if v.ends_with('_') {
            name.starts_with(v.as_bytes())
        } else {
            name == v.as_bytes()
        }
    })
}

/// Refuses to go on when this process was started with a variable the loader acts on: the
/// host starts the helper with an empty environment, so one here means a way around that
/// (and whatever it named has run already, outside any sandbox: say so loudly).
pub(super) fn check_own_environment() -> Result<(), String> {
    for (name, _) in std::env::vars_os() {
        if is_loader_variable(name.as_bytes()) {
            return Err(format!(
                "the helper was started with {} in its own environment; it must be started \
                 with an empty one and get the command's through --env-fd (a variable the \
                 dynamic loader acts on runs before any sandbox)",
                name.to_string_lossy()
            ));
        }
    }
    Ok(())
}

/// Reads the command's environment from the inherited descriptor `fd` and closes it.
pub(super) fn read_environment(fd: libc::c_int) -> Result<Vec<CString>, String> {
    // SAFETY: the host passed `fd` for this; it is ours from here and closed once.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let size = rustix::fs::fstat(&fd)
        .map_err(|e| format!("--env-fd: {e}"))?
        .st_size;
    let size = u64::try_from(size).unwrap_or(0);
    if size > MAX_ENVIRONMENT {
        return Err(format!(
            "the command's environment is {size} bytes; at most {MAX_ENVIRONMENT} are taken"
        ));
    }
    let mut bytes = vec![0u8; usize::try_from(size).unwrap_or(0)];
    let mut read = 0;
    while read < bytes.len() {
        match rustix::io::pread(&fd, &mut bytes[read..], read as u64) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("reading the command's environment: {e}")),
        }
    }
    bytes.truncate(read);
    bytes
        .split(|b| *b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            if entry.contains(&b'=') {
                cstring(entry)
            } else {
                Err("an entry of the command's environment has no `=`".into())
            }
        })
        .collect()
}

/// Closes every descriptor from 3 up but those in `keep`: nothing the host left open by
/// mistake reaches the namespaces or the command.
pub(super) fn close_other_descriptors(keep: &[libc::c_int]) {
    let mut keep: Vec<libc::c_uint> = keep
        .iter()
        .filter_map(|fd| libc::c_uint::try_from(*fd).ok())
        .filter(|fd| *fd > 2)
        .collect();
    keep.sort_unstable();
    let mut first: libc::c_uint = 3;
    for fd in keep.into_iter().chain(std::iter::once(libc::c_uint::MAX)) {
        if fd > first {
            // SAFETY: close_range takes no pointers; closing descriptors nobody here uses.
            unsafe { libc::syscall(libc::SYS_close_range, first, fd - 1, 0) };
        }
        first = fd.saturating_add(1);
    }
}

/// What the command left in its private `/tmp` and `/dev/shm` (files, with their sizes):
/// writes that seemed to succeed and never reached the host. The directories made to bring
/// the workspace, the writable roots and the visible programs back are not counted. At
/// most [`crate::sandbox::MAX_DIVERTED`] + 1 entries (the last says more were left), from at most
/// 2,000 looked at.
pub(super) fn left_behind(args: &Args) -> Vec<String> {
    let scaffold: Vec<&Path> = std::iter::once(args.workspace.as_path())
        .chain(args.writable.iter().map(PathBuf::as_path))
        .chain(args.visible.iter().map(PathBuf::as_path))
        .collect();
    let mut found = Vec::new();
    let mut looked = 0;
    let mut stack: Vec<PathBuf> = vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            looked += 1;
            if looked > 2000 || found.len() > crate::sandbox::MAX_DIVERTED {
                found.push("… and more".to_string());
                return found;
            }
            let path = entry.path();
            // A brought-back directory, or one on the way to it: not the command's.
            if scaffold.iter().any(|s| s.starts_with(&path)) {
                if !scaffold.iter().any(|s| *s == path) {
                    stack.push(path);
                }
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else {
                found.push(format!("{} ({} bytes)", path.display(), meta.len()));
            }
        }
    }
    found
}

/// Writes the report lines to `fd`.
pub(super) fn write_report(fd: libc::c_int, lines: &[String]) {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    let bytes = text.as_bytes();
    // SAFETY: writes from a buffer we own into a descriptor the host passed for this.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

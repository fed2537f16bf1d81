//! Removing a directory tree without ever following a symbolic link.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, openat, unlinkat};
use rustix::io::Errno;

/// The deepest tree removed; deeper is refused rather than risking the stack.
const MAX_DEPTH: usize = 512;

/// Removes `name` (a directory in `parent`) and everything in it.
pub(super) fn remove_tree(parent: &OwnedFd, name: &std::ffi::OsStr) -> Result<(), Errno> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(name.as_bytes()).map_err(|_| Errno::INVAL)?;
    remove_in(parent, &name, 0)
}

fn remove_in(parent: &OwnedFd, name: &std::ffi::CStr, depth: usize) -> Result<(), Errno> {
    if depth > MAX_DEPTH {
        return Err(Errno::LOOP);
    }
    let dir = openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // Its entries are not removed when its owner made it read-only (root included).
    if rustix::fs::fstat(&dir)?.st_mode & 0o200 == 0 {
        return Err(Errno::ACCESS);
    }
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&dir)? {
        let entry = entry?;
        let n = entry.file_name();
        if n.to_bytes() == b"." || n.to_bytes() == b".." {
            continue;
        }
        names.push((n.to_owned(), entry.file_type()));
    }
    for (child, kind) in names {
        if kind == FileType::Directory {
            remove_in(&dir, &child, depth + 1)?;
        } else {
            match unlinkat(&dir, child.as_c_str(), AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => {}
                // The entry type from readdir may be unknown on some file systems.
                Err(Errno::ISDIR) => remove_in(&dir, &child, depth + 1)?,
                Err(e) => return Err(e),
            }
        }
    }
    unlinkat(parent, name, AtFlags::REMOVEDIR)
}

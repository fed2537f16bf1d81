//! `access(2)` within the workspace: what the server's user may do with a path, asked of
//! the kernel (`faccessat` on the opened path, with the effective ids), so a read-only
//! mount, an ACL or another owner's file answer as they would for a real write.

use rustix::fs::{Access as Mode, AtFlags, OFlags, accessat};
use std::os::fd::AsRawFd;

use rustix::fd::AsFd;
use rustix::io::Errno;

use super::LocalOps;
use crate::error::OpsError;
use crate::file::Access;

impl LocalOps {
    pub(super) fn access_local(&self, path: &str) -> Result<Access, OpsError> {
        let rel = self.rel(path)?;
        match self.open_beneath(&rel, OFlags::PATH, path, "inspect") {
            Ok(fd) => {
                self.check_opened(&fd, path)?;
                let read = asks(&fd, Mode::READ_OK)?;
                let write = protected(&fd)?.map_or_else(|| asks(&fd, Mode::WRITE_OK), Ok)?;
                let reason = match (read, write) {
                    (Ok(()), Ok(())) => None,
                    (_, Err(why)) => Some(format!("`{path}` cannot be written: {why}")),
                    (Err(why), _) => Some(format!("`{path}` cannot be read: {why}")),
                };
                Ok(Access {
                    read: read.is_ok(),
                    write: write.is_ok(),
                    exists: true,
                    reason,
                })
            }
            Err(OpsError::NotFound { .. }) => {
                // Created in the nearest directory that exists.
                let mut parent = rel.as_str();
                let (fd, parent) = loop {
                    parent = parent.rsplit_once('/').map_or(".", |(head, _)| head);
                    match self.open_beneath(
                        parent,
                        OFlags::PATH | OFlags::DIRECTORY,
                        path,
                        "inspect",
                    ) {
                        Ok(fd) => break (fd, parent),
                        Err(OpsError::NotFound { .. }) if parent != "." => {}
                        Err(e) => return Err(e),
                    }
                };
                let write = protected(&fd)?
                    .map_or_else(|| asks(&fd, Mode::WRITE_OK | Mode::EXEC_OK), Ok)?;
                Ok(Access {
                    read: false,
                    write: write.is_ok(),
                    exists: false,
                    reason: Some(match write {
                        Ok(()) => format!("`{path}` does not exist; it can be created"),
                        Err(why) => format!(
                            "`{path}` does not exist, and it cannot be created in `{parent}`: {why}"
                        ),
                    }),
                })
            }
            Err(e) => Err(e),
        }
    }
}

/// toolshed's own refusal, whoever the server runs as (root included): a file or directory
/// whose owner took away its write permission is not written ([`OpsError::ReadOnlyFile`]).
fn protected(fd: &impl rustix::fd::AsFd) -> Result<Option<Result<(), &'static str>>, OpsError> {
    let st = rustix::fs::fstat(fd).map_err(|e| OpsError::Io {
        action: "inspect".into(),
        path: String::new(),
        message: e.to_string(),
    })?;
    Ok((st.st_mode & 0o200 == 0).then_some(Err("its owner took away write permission")))
}

/// `Ok(Ok(()))` when the kernel grants `mode` on the opened path, `Ok(Err(why))` when it
/// refuses; an error only when the question itself failed.
fn asks(fd: &impl AsFd, mode: Mode) -> Result<Result<(), &'static str>, OpsError> {
    // Through the descriptor's /proc link: `AT_EMPTY_PATH` needs `faccessat2`, which not
    // every seccomp filter in front of us lets through.
    let link = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    match accessat(rustix::fs::CWD, link.as_str(), mode, AtFlags::EACCESS) {
        Ok(()) => Ok(Ok(())),
        Err(Errno::ACCESS | Errno::PERM) => Ok(Err("permission denied")),
        Err(Errno::ROFS) => Ok(Err("the file system is read-only")),
        Err(Errno::TXTBSY) => Ok(Err("a running program's file")),
        Err(e) => Err(OpsError::Io {
            action: "inspect".into(),
            path: String::new(),
            message: e.to_string(),
        }),
    }
}

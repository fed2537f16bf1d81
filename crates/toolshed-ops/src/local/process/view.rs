//! What a sandboxed command sees beyond the workspace and what its policy scope changes
//! inside it: the program and environments brought back under the private mounts, and the
//! paths policy rules keep read-only, writable or hidden.

use std::path::{Path, PathBuf};

use crate::process::SpawnRequest;

/// What a sandboxed command needs to see under the private mounts (see
/// [`crate::sandbox::visible_root`]): its program, found by path or on toolshed's own
/// `PATH` (not a caller's, which could name another user's directory), the environments
/// of toolshed's own `PATH` entries, and what the request names from configuration.
/// Nothing already visible (the workspace, writable roots) and nothing hidden.
pub(super) fn visible_roots(
    program: &str,
    request: &SpawnRequest,
    policy: &crate::sandbox::SandboxPolicy,
) -> Vec<PathBuf> {
    use crate::sandbox::visible_roots_of;
    let host_path = std::env::var_os("PATH").unwrap_or_default();
    let host_dirs: Vec<PathBuf> = std::env::split_paths(&host_path)
        .filter(|d| d.is_absolute())
        .collect();
    let mut wanted: Vec<PathBuf> = Vec::new();
    if program.starts_with('/') {
        wanted.push(PathBuf::from(program));
    } else if !program.contains('/') {
        wanted.extend(
            host_dirs
                .iter()
                .map(|d| d.join(program))
                .find(|p| p.is_file()),
        );
    }
    // Only entries under a private mount matter: the rest is readable already.
    wanted.extend(
        host_dirs
            .iter()
            .filter(|d| {
                crate::sandbox::PRIVATE_MOUNTS
                    .iter()
                    .any(|m| d.starts_with(m))
            })
            .cloned(),
    );
    wanted.extend(request.visible.iter().filter(|p| p.is_absolute()).cloned());
    let mut roots: Vec<PathBuf> = wanted
        .iter()
        .flat_map(|p| visible_roots_of(p))
        .filter(|root| {
            !std::iter::once(&policy.workspace)
                .chain(&policy.writable)
                .any(|w| root.starts_with(w))
                && !policy.denied.iter().any(|d| root.starts_with(d))
                && owned_by_us_or_root(root)
        })
        .collect();
    roots.sort();
    roots.dedup();
    // A root inside another one comes with it.
    let mut kept: Vec<PathBuf> = Vec::new();
    for root in roots {
        if !kept.iter().any(|k| root.starts_with(k)) {
            kept.push(root);
        }
    }
    kept
}

/// The workspace paths a command's policy scope names, absolute: kept read-only, the only
/// writable ones, hidden. A read-only
/// directory that does not exist yet (named with a trailing `/`) is made, empty, so that
/// it can be kept read-only: otherwise the command could create it and write inside. A
/// path with a symbolic link on the way is refused (a bind mount would follow it), as is
/// one that leaves the workspace: the command does not run rather than run unbound.
pub(super) fn scoped_paths(
    scope: &toolshed_core::WriteScope,
    workspace: &Path,
) -> Result<ScopedPaths, String> {
    let place = |rel: &String, make: bool| -> Result<Option<PathBuf>, String> {
        let is_dir = rel.ends_with('/');
        let Some(rel) = crate::path::normalize_lexically(rel.trim_end_matches('/'))
            .ok()
            .filter(|r| r != ".")
        else {
            return Ok(None);
        };
        let mut at = workspace.to_path_buf();
        for part in rel.split('/') {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(format!(
                        "`{rel}`, which a policy rule keeps from commands, goes through the \
                         symbolic link `{}`; the command is not run",
                        at.display()
                    ));
                }
                Ok(_) => {}
                Err(_) if make && is_dir => {
                    std::fs::create_dir(&at).map_err(|e| format!("{}: {e}", at.display()))?;
                }
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(at))
    };
    let mut read_only = Vec::new();
    for rel in &scope.read_only {
        read_only.extend(place(rel, true)?);
    }
    let mut write_only = Vec::new();
    for rel in scope.only.iter().flatten() {
        write_only.extend(place(&format!("{rel}/"), true)?);
    }
    let mut hidden = Vec::new();
    for rel in &scope.hidden {
        hidden.extend(place(rel, false)?);
    }
    Ok(ScopedPaths {
        read_only,
        write_only,
        hidden,
    })
}

/// A command's policy scope as absolute paths (see [`scoped_paths`]).
pub(super) struct ScopedPaths {
    pub(super) read_only: Vec<PathBuf>,
    pub(super) write_only: Vec<PathBuf>,
    pub(super) hidden: Vec<PathBuf>,
}

/// Whether `path` belongs to the user toolshed runs as, or to root (a system's own
/// programs, NixOS's `/run/current-system`): another user's files under `/tmp` are what
/// the private mounts protect, so they are never brought back.
pub(super) fn owned_by_us_or_root(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::geteuid().as_raw();
    std::fs::metadata(path).is_ok_and(|m| m.uid() == uid || m.uid() == 0)
}

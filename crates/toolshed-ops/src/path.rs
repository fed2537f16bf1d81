//! Checking and normalizing the paths tools receive.
//!
//! This is not where confinement happens — the kernel does that when the path is opened
//! beneath the workspace root. Here a path is only checked for form (empty, NUL bytes,
//! length) and turned into a relative path: an absolute path that names the workspace root
//! has the root removed; `.` components are dropped. `..` stays, for the kernel to judge.

use std::path::{Component, Path};

use crate::error::OpsError;

/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest single name accepted, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// The reserved directory at the workspace root.
pub const RESERVED_DIR: &str = ".toolshed";

/// `path` shortened for an error message.
pub fn shown(path: &str) -> String {
    if path.chars().count() <= 200 {
        return path.to_string();
    }
    let head: String = path.chars().take(200).collect();
    format!("{head}…")
}

/// Checks `path` and returns it relative to `root` (`.` for the root itself).
pub fn normalize(root: &Path, path: &str) -> Result<String, OpsError> {
    let invalid = |reason: &str| OpsError::InvalidPath {
        path: shown(path),
        reason: reason.into(),
    };
    if path.is_empty() {
        return Err(invalid("the path is empty; use `.` for the workspace root"));
    }
    if path.contains('\0') {
        return Err(invalid("the path contains a NUL byte"));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(invalid(&format!(
            "the path is {} bytes; the limit is {MAX_PATH_BYTES}",
            path.len()
        )));
    }
    let p = Path::new(path);
    let relative: &Path = if p.is_absolute() {
        p.strip_prefix(root).map_err(|_| OpsError::Escape {
            path: shown(path),
            detail: format!("absolute paths must be inside {}", root.display()),
        })?
    } else {
        p
    };
    let mut parts: Vec<&str> = Vec::new();
    for component in relative.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(name) => {
                let name = name.to_str().unwrap_or_default();
                if name.len() > MAX_NAME_BYTES {
                    return Err(invalid(&format!(
                        "a name in the path is {} bytes; the limit is {MAX_NAME_BYTES}",
                        name.len()
                    )));
                }
                parts.push(name);
            }
            Component::ParentDir => parts.push(".."),
            Component::RootDir | Component::Prefix(_) => {
                return Err(OpsError::Escape {
                    path: shown(path),
                    detail: "absolute path".into(),
                });
            }
        }
    }
    if parts.is_empty() {
        return Ok(".".into());
    }
    Ok(parts.join("/"))
}

/// Whether the normalized relative path names the reserved directory or something in it,
/// judged on its words (the kernel-resolved check comes after opening).
///
/// `..` is folded on the words here (`a/../.toolshed` counts as reserved). That can refuse a
/// path that a link would have taken elsewhere, which errs on the safe side; confinement
/// itself never relies on it.
pub fn names_reserved(relative: &str) -> bool {
    let mut folded: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            ".." if folded.last().is_some_and(|p| *p != "..") => {
                folded.pop();
            }
            "." | "" => {}
            other => folded.push(other),
        }
    }
    folded.first() == Some(&RESERVED_DIR)
}

/// Splits a normalized relative path into its parent and final name.
pub fn split_parent(relative: &str) -> (&str, &str) {
    match relative.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => (".", relative),
    }
}

/// Normalizes a workspace-relative path on its words: `.` parts dropped, `..` folded.
/// Absolute paths and `..` climbing above the workspace root are refused. The workspace
/// root itself is `.`.
pub fn normalize_lexically(path: &str) -> Result<String, String> {
    if path.is_empty() {
        return Err("the path is empty; use `.` for the workspace root".into());
    }
    if path.contains('\0') {
        return Err(format!("`{}` contains a NUL byte", shown(path)));
    }
    if path.starts_with('/') || path.starts_with('\\') {
        return Err(format!(
            "`{}` is absolute; plugins use paths relative to the workspace root",
            shown(path)
        ));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "`{}` climbs out of the workspace with `..`; use a path inside it",
                        shown(path)
                    ));
                }
            }
            name => parts.push(name),
        }
    }
    if parts.is_empty() {
        Ok(".".into())
    } else {
        Ok(parts.join("/"))
    }
}

/// Whether the normalized `path` is `root` or inside it (both from
/// [`normalize_lexically`]). The one containment check for paths that are judged before
/// any file is opened: plugin grants and the files a plugin asks for.
pub fn is_within(root: &str, path: &str) -> bool {
    root == "."
        || path == root
        || (path.len() > root.len()
            && path.starts_with(root)
            && path.as_bytes().get(root.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_rejects_malformed_paths() {
        let root = Path::new("/ws/root");
        assert_eq!(normalize(root, "a/./b").unwrap(), "a/b");
        assert_eq!(normalize(root, "/ws/root/a").unwrap(), "a");
        assert_eq!(normalize(root, "/ws/root").unwrap(), ".");
        assert_eq!(normalize(root, "./").unwrap(), ".");
        assert_eq!(normalize(root, "a/../b").unwrap(), "a/../b");
        assert!(matches!(
            normalize(root, "/ws/root2/a"),
            Err(OpsError::Escape { .. })
        ));
        assert!(matches!(
            normalize(root, "/etc/passwd"),
            Err(OpsError::Escape { .. })
        ));
        assert!(matches!(
            normalize(root, ""),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(matches!(
            normalize(root, "a\0b"),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(matches!(
            normalize(root, &"a/".repeat(3000)),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(matches!(
            normalize(root, &"n".repeat(256)),
            Err(OpsError::InvalidPath { .. })
        ));
        assert!(
            names_reserved(".toolshed")
                && names_reserved(".toolshed/x")
                && !names_reserved(".toolshedx")
        );
        assert_eq!(split_parent("a/b/c"), ("a/b", "c"));
        assert_eq!(split_parent("c"), (".", "c"));
    }
}

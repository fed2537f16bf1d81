//! The roots of a workspace given several (`--workspace A --workspace B`): each checked
//! and named after its directory, so that tools can reach a file in it as `@name/path`
//! (see [`toolshed_ops::roots`]).

use std::path::{Path, PathBuf};

use crate::HostError;

/// The workspace's roots, the primary (`workspace`, canonical) first, each with its name:
/// its directory's name, with anything but letters, digits, `-`, `_` and `.` made `-`,
/// and `-2`, `-3`… added when two would share one. A root that is not a directory, or that
/// is given twice, is refused.
pub fn named(workspace: &Path, extra: &[PathBuf]) -> Result<Vec<(String, PathBuf)>, HostError> {
    let mut roots: Vec<(String, PathBuf)> = Vec::with_capacity(extra.len() + 1);
    let mut add = |path: PathBuf| -> Result<(), HostError> {
        if roots.iter().any(|(_, p)| *p == path) {
            return Err(HostError::Config(format!(
                "workspace root {} is given twice; give each directory once",
                path.display()
            )));
        }
        let base = path
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                            c
                        } else {
                            '-'
                        }
                    })
                    .take(56)
                    .collect::<String>()
            })
            .filter(|n| toolshed_ops::roots::is_root_name(n))
            .unwrap_or_else(|| "root".into());
        let mut name = base.clone();
        let mut n = 2;
        while roots.iter().any(|(taken, _)| *taken == name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        roots.push((name, path));
        Ok(())
    };
    add(workspace.to_path_buf())?;
    for given in extra {
        // A root the person named on the command line.
        #[allow(clippy::disallowed_methods)]
        let path = std::fs::canonicalize(given).map_err(|e| HostError::Workspace {
            path: given.clone(),
            reason: format!("{e}; give an existing directory as a further --workspace"),
        })?;
        if !path.is_dir() {
            return Err(HostError::Workspace {
                path: given.clone(),
                reason: "it is not a directory; a workspace root is a directory".into(),
            });
        }
        add(path)?;
    }
    if roots.len() > toolshed_ops::roots::MAX_ROOTS {
        return Err(HostError::Config(format!(
            "{} workspace roots were given; a workspace has at most {}",
            roots.len(),
            toolshed_ops::roots::MAX_ROOTS
        )));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods)] // the test's own directory
    fn roots_are_named_after_their_directories_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["app", "one/lib", "two/lib", "odd name"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let roots = named(
            &base.join("app"),
            &[
                base.join("one/lib"),
                base.join("two/lib"),
                base.join("odd name"),
            ],
        )
        .unwrap();
        let names: Vec<&str> = roots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["app", "lib", "lib-2", "odd-name"]);
        assert!(named(&base.join("app"), &[base.join("app")]).is_err());
        assert!(named(&base.join("app"), &[base.join("missing")]).is_err());
    }
}

//! Where an installed plugin came from, and whether its files are still the ones installed.
//!
//! Every install records its source (the path or URL given), the archive's SHA-256 when
//! one was checked, the time, and the SHA-256 of every file it put in place.
//! [`verify`](crate::Host::verify_plugin) hashes the files again and names each one
//! changed, added or removed since.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::store::db::args;
use crate::store::{StateStore, StoreError};

/// The most files hashed in one plugin directory.
const MAX_FILES: usize = 20_000;

/// What an install recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// The path or URL installed from.
    pub source: String,
    /// The archive's SHA-256, when the install checked one.
    pub sha256: Option<String>,
    /// One SHA-256 over every installed file's path and hash.
    pub tree_sha256: String,
    /// When, in milliseconds since the Unix epoch.
    pub installed_ms: i64,
    /// Each installed file (plugin-relative, `/`-separated) and its SHA-256.
    #[serde(skip)]
    pub files: BTreeMap<String, String>,
    /// The dependencies installed with it (npm's packages), when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<super::npm::Dependencies>,
}

/// How a plugin's files differ from what was installed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// Files whose content changed.
    pub changed: Vec<String>,
    /// Files that were not installed.
    pub added: Vec<String>,
    /// Installed files that are gone.
    pub removed: Vec<String>,
}

impl Drift {
    /// Whether the files are exactly the ones installed.
    pub fn is_clean(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

/// The SHA-256 of every regular file under `dir` (symbolic links are listed with the hash
/// of their target's path, never followed). Blocking.
pub fn hash_tree(dir: &Path) -> io::Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at)? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            let relative = path
                .strip_prefix(dir)
                .map_err(io::Error::other)?
                .to_string_lossy()
                .replace('\\', "/");
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            if files.len() >= MAX_FILES {
                return Err(io::Error::other(format!(
                    "more than {MAX_FILES} files in {}",
                    dir.display()
                )));
            }
            let hash = if kind.is_symlink() {
                let target = std::fs::read_link(&path)?;
                format!(
                    "link:{}",
                    hex(&Sha256::digest(target.to_string_lossy().as_bytes()))
                )
            } else {
                hash_file(&path)?
            };
            files.insert(relative, hash);
        }
    }
    Ok(files)
}

fn hash_file(path: &Path) -> io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// One SHA-256 over `files`: each path and hash, in path order.
pub fn tree_digest(files: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (path, hash) in files {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(hash.as_bytes());
        hasher.update([b'\n']);
    }
    hex(&hasher.finalize())
}

/// How `now` differs from `installed`.
pub fn drift(installed: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Drift {
    let mut drift = Drift::default();
    for (path, hash) in installed {
        match now.get(path) {
            None => drift.removed.push(path.clone()),
            Some(h) if h != hash => drift.changed.push(path.clone()),
            Some(_) => {}
        }
    }
    drift.added = now
        .keys()
        .filter(|p| !installed.contains_key(*p))
        .cloned()
        .collect();
    drift
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl StateStore {
    /// Records where an installed plugin came from and the hashes of its files (replacing
    /// what an earlier install of the same id recorded).
    pub fn set_provenance(
        &self,
        plugin_id: &str,
        provenance: &Provenance,
    ) -> Result<(), StoreError> {
        let files = serde_json::to_string(&provenance.files).unwrap_or_else(|_| "{}".into());
        let dependencies = provenance
            .dependencies
            .as_ref()
            .and_then(|d| serde_json::to_string(d).ok());
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_installs
                   (plugin_id, source, sha256, tree_sha256, files, installed_ms, dependencies)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (plugin_id) DO UPDATE SET source = excluded.source,
                   sha256 = excluded.sha256, tree_sha256 = excluded.tree_sha256,
                   files = excluded.files, installed_ms = excluded.installed_ms,
                   dependencies = excluded.dependencies",
                args![
                    plugin_id,
                    &provenance.source,
                    &provenance.sha256,
                    &provenance.tree_sha256,
                    files,
                    provenance.installed_ms,
                    dependencies
                ],
            )?;
            Ok(())
        })
    }

    /// What the install of `plugin_id` recorded, if toolshed installed it.
    pub fn provenance(&self, plugin_id: &str) -> Result<Option<Provenance>, StoreError> {
        self.db(|db| {
            db.query_opt(
                "SELECT source, sha256, tree_sha256, files, installed_ms, dependencies
                 FROM plugin_installs WHERE plugin_id = ?1",
                args![plugin_id],
            )?
            .map(|row| {
                Ok(Provenance {
                    source: row.text(0)?,
                    sha256: row.opt_text(1)?,
                    tree_sha256: row.text(2)?,
                    files: serde_json::from_str(&row.text(3)?).unwrap_or_default(),
                    installed_ms: row.int(4)?,
                    dependencies: row.opt_text(5)?.and_then(|d| serde_json::from_str(&d).ok()),
                })
            })
            .transpose()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_an_added_and_a_removed_file_are_each_named() {
        let dir = tempfile::tempdir().unwrap();
        let write = |p: &str, t: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, t).unwrap();
        };
        write("plugin.toml", "id = 'a'");
        write("lib/main.js", "export function activate() {}");
        write("lib/gone.js", "x");
        let installed = hash_tree(dir.path()).unwrap();
        assert_eq!(installed.len(), 3);
        assert_eq!(
            drift(&installed, &hash_tree(dir.path()).unwrap()),
            Drift::default()
        );
        let digest = tree_digest(&installed);
        write("lib/main.js", "export function activate() { steal(); }");
        write("lib/new.js", "y");
        std::fs::remove_file(dir.path().join("lib/gone.js")).unwrap();
        let now = hash_tree(dir.path()).unwrap();
        assert_eq!(
            drift(&installed, &now),
            Drift {
                changed: vec!["lib/main.js".into()],
                added: vec!["lib/new.js".into()],
                removed: vec!["lib/gone.js".into()],
            }
        );
        assert_ne!(tree_digest(&now), digest);
    }
}

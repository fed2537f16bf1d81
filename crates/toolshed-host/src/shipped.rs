//! Tools a plugin ships recorded, so that its code need not run to list them.
//!
//! A JavaScript plugin's tools are known once its code ran, and the registry records them
//! ([`crate::lazy`]). On a data dir with no record yet (a first start), a plugin that ships
//! [`FILE`] beside its manifest is listed from that file instead, when one of its entries
//! was made from exactly the plugin's files, with the loader's variant of the moment (a
//! JavaScript plugin's language) and the config it is loaded with. Its code then runs at
//! its first call, as for any recorded plugin, and if it registers other tools the record
//! is corrected. The plugins shipped with toolshed carry such a file; a test of
//! toolshed-js (`tests/curated.rs`) fails when one no longer matches what the code
//! registers and says how to make it again.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use toolshed_core::{PluginManifest, ToolSpec};

/// The file, beside a plugin's manifest.
pub const FILE: &str = "recorded-tools.json";

/// The most a plugin's files may hold for the key to be computed (larger plugins run their
/// code to be listed, as without the file).
const MAX_HASHED_BYTES: u64 = 8 << 20;
/// The most files and directories a plugin may have for the key to be computed.
const MAX_ENTRIES: usize = 2_000;
/// The largest [`FILE`] read.
const MAX_FILE_BYTES: u64 = 2 << 20;

/// What [`FILE`] holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShippedTools {
    /// One list of tools per way the plugin is loaded.
    pub entries: Vec<ShippedEntry>,
}

/// The tools a plugin registers when loaded one way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShippedEntry {
    /// The loader's variant it was made with (for JavaScript, the language), for people.
    pub variant: String,
    /// [`key`] of what it was made from.
    pub key: String,
    /// The tools, as the plugin's code registered them.
    pub tools: Vec<ToolSpec>,
}

/// The config a plugin is loaded with on a data dir where nothing was set: its fields'
/// defaults (none for a plugin without config fields).
pub fn first_start_config(manifest: &PluginManifest) -> Map<String, Value> {
    manifest
        .config
        .iter()
        .filter_map(|f| f.default.clone().map(|d| (f.key.clone(), d)))
        .collect()
}

/// The key of an entry: a SHA-256 of the plugin's files (their paths and contents, except
/// [`FILE`] and the host's state beside the plugin), `variant` and `config`. `None` when the
/// directory cannot be read whole or is over the limits. Blocking.
pub fn key(dir: &Path, variant: &str, config: &Map<String, Value>) -> Option<String> {
    let mut hasher = Sha256::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let (mut entries, mut bytes) = (0usize, 0u64);
    while let Some((at, depth)) = stack.pop() {
        let mut children: Vec<_> = std::fs::read_dir(&at)
            .ok()?
            .collect::<Result<_, _>>()
            .ok()?;
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            let name = child.file_name();
            if depth == 0 && (name == FILE || name == toolshed_core::PLUGIN_STATE_DIR) {
                continue;
            }
            entries += 1;
            let meta = child.path().symlink_metadata().ok()?;
            if entries > MAX_ENTRIES || depth > 8 {
                return None;
            }
            let relative = child.path();
            let relative = relative.strip_prefix(dir).ok()?;
            hasher.update(relative.as_os_str().as_encoded_bytes());
            hasher.update([0]);
            if meta.is_dir() {
                hasher.update(b"dir\0");
                stack.push((child.path(), depth + 1));
            } else if meta.is_file() {
                bytes += meta.len();
                if bytes > MAX_HASHED_BYTES {
                    return None;
                }
                let content = std::fs::read(child.path()).ok()?;
                hasher.update((content.len() as u64).to_le_bytes());
                hasher.update(&content);
            } else {
                // A link or something else: its target is not part of what was shipped.
                return None;
            }
        }
    }
    hasher.update(variant.as_bytes());
    hasher.update([0]);
    hasher.update(serde_json::to_string(config).ok()?.as_bytes());
    Some(crate::kit::hex(&hasher.finalize()))
}

/// The tools `dir` ships for `variant` and `config`, if its [`FILE`] has an entry for
/// exactly these files. A file that cannot be read is logged and ignored. Blocking.
pub fn find(dir: &Path, variant: &str, config: &Map<String, Value>) -> Option<Vec<ToolSpec>> {
    let path = dir.join(FILE);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        tracing::warn!(path = %path.display(), "ignored: not a regular file of at most 2 MiB");
        return None;
    }
    let shipped: ShippedTools = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(shipped) => shipped,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignored: cannot read the recorded tools");
            return None;
        }
    };
    let key = key(dir, variant, config)?;
    shipped
        .entries
        .into_iter()
        .find(|e| e.key == key && !e.tools.is_empty())
        .map(|e| e.tools)
}

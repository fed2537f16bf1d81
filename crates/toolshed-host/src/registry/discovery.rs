//! Discovery: the roots, their plugin directories and manifests, and what a directory looked
//! like (its fingerprint).
//!
//! Everything here touches the file system and is synchronous: async callers run it on the
//! blocking pool ([`super::blocking`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use toolshed_core::{Plugin, PluginLoader, PluginManifest};

use super::state::{Origin, PluginDir, Slot};
use super::{Inner, Registry, blocking};
use crate::events::EventBus;
use crate::manifest::{MANIFEST_NAMES, check_manifest_shallow, find_manifest, load_manifest};
use crate::store::StateStore;

/// The most plugin directories read from one root.
pub const MAX_PLUGINS_PER_ROOT: usize = 1000;

/// A directory inside a plugin's directory where the host keeps state of that plugin
/// (`toolshed_core::PLUGIN_STATE_DIR`); its changes do not change the plugin.
const STATE_DIR: &str = toolshed_core::PLUGIN_STATE_DIR;

/// The most files and directories looked at when fingerprinting one plugin directory.
const MAX_FINGERPRINT_ENTRIES: usize = 2000;

/// Where a plugin was found, most trusted first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Root {
    /// Compiled into toolshed.
    System,
    /// Shipped with toolshed in `plugins/`.
    Curated,
    /// Installed by the user (data dir) or brought by the workspace.
    User,
}

impl Root {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Curated => "curated",
            Self::User => "user",
        }
    }
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Something did not load.
    Error,
    /// Something loaded, with a caveat.
    Warning,
}

/// A problem found during discovery or registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// How serious.
    pub level: Level,
    /// The file or directory concerned.
    pub path: Option<PathBuf>,
    /// The manifest field concerned.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub problem: String,
    /// The plugin concerned, when known.
    pub plugin_id: Option<String>,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.problem)
    }
}

/// The roots discovery walks.
#[derive(Clone, Default)]
pub struct DiscoveryRoots {
    /// Plugins compiled into toolshed.
    pub system: Vec<Arc<dyn Plugin>>,
    /// Directories of curated plugins.
    pub curated: Vec<PathBuf>,
    /// Directories of user plugins, more trusted first.
    pub user: Vec<PathBuf>,
    /// What builds plugins of sandboxed kinds (`js`, `mcp`) from their directories.
    pub loaders: Vec<Arc<dyn PluginLoader>>,
    /// The workspace's `.env` files, for checking plugins' env contracts.
    pub env: Arc<crate::env_overlay::EnvOverlay>,
}

impl Registry {
    /// Discovers every plugin under `roots`, starts the enabled ones and indexes their tools.
    pub async fn discover(roots: DiscoveryRoots, store: Arc<StateStore>, events: EventBus) -> Self {
        let DiscoveryRoots {
            system,
            curated,
            user,
            loaders,
            env,
        } = roots;
        let (slots, discovery) = {
            let user = user.clone();
            blocking(move || collect(system, &curated, &user))
                .await
                .unwrap_or_default()
        };
        let inner = Inner {
            slots,
            discovery,
            ..Inner::default()
        };
        let registry = Self::new(inner, store, events, loaders, user, env);
        // The data version is read before the states: whatever another process commits
        // after it, the watcher's first look at the store sees.
        let read = registry
            .on_store(|s| {
                Ok((
                    s.data_version().ok(),
                    s.plugin_states(),
                    s.plugin_tools(),
                    s.paused_plugins(),
                ))
            })
            .await;
        let (version, states, recorded, paused) = match read {
            Ok(read) => read,
            Err(e) => (None, Err(e), Ok(BTreeMap::new()), Ok(Default::default())),
        };
        registry.watching.set_seen_version(version);
        let states = states.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read plugin states; treating every plugin as enabled");
            BTreeMap::new()
        });
        let recorded = recorded.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot read the recorded tools of plugins");
            BTreeMap::new()
        });
        let ids = registry.write(|i| {
            for slot in &mut i.slots {
                if slot.origin.dir().is_some()
                    && let Some((key, specs)) = recorded.get(slot.id())
                {
                    slot.last_tools = specs.iter().map(|t| t.name.clone()).collect();
                    slot.recorded = Some((key.clone(), specs.clone()));
                }
            }
            i.slots
                .iter()
                .map(|s| (s.id().to_string(), s.enabled_by_default()))
                .collect::<Vec<_>>()
        });
        // The disabled ones first, so a plugin that depends on one sees it disabled.
        let mut ids: Vec<(String, bool)> = ids
            .into_iter()
            .map(|(id, default)| {
                let enabled = states.get(&id).copied().unwrap_or(default);
                (id, enabled)
            })
            .collect();
        ids.sort_by_key(|(_, enabled)| *enabled);
        for (id, enabled) in ids {
            // Nobody can be subscribed yet: the start-up states are not events.
            registry.bring_up(&id, enabled).await;
        }
        match paused {
            Ok(paused) => {
                registry.apply_paused(&paused);
            }
            Err(e) => tracing::warn!(error = %e, "cannot read which plugins are paused"),
        }
        registry.reindex();
        registry
    }
}

/// Every plugin of every root, in trust order, one slot per id: an id found twice keeps
/// the more trusted plugin, and the clash is a diagnostic. Plugins of user roots carry the
/// fingerprint of their directory, so the watcher can tell later changes. Blocking.
pub(super) fn collect(
    system: Vec<Arc<dyn Plugin>>,
    curated: &[PathBuf],
    user: &[PathBuf],
) -> (Vec<Slot>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut candidates = Vec::new();
    for plugin in system {
        let own = plugin.manifest();
        if let Err((field, problem)) = check_manifest_shallow(own) {
            diags.push(Diagnostic {
                level: Level::Error,
                path: None,
                field: Some(field),
                problem: format!("built-in plugin manifest is invalid (a bug): {problem}"),
                plugin_id: Some(own.id.clone()),
            });
            continue;
        }
        // The registry's copy lists the tools without their schemas: the plugin keeps the
        // whole specs (Registry::manifest answers with them), and a second copy of every
        // built-in schema was a tenth of a server's heap.
        let manifest = own.without_tool_schemas();
        candidates.push((Root::System, manifest, Origin::Compiled(plugin)));
    }
    for (root, dirs) in [(Root::Curated, curated), (Root::User, user)] {
        for dir in dirs {
            for (dir, manifest, manifest_path) in scan_root(dir, &mut diags) {
                let origin = Origin::Dir(PluginDir {
                    dir,
                    manifest_path,
                    fingerprint: None,
                });
                candidates.push((root, manifest, origin));
            }
        }
    }
    let mut seen: BTreeMap<String, (Root, Option<PathBuf>)> = BTreeMap::new();
    let mut slots = Vec::new();
    for (root, manifest, mut origin) in candidates {
        let manifest_path = origin.dir().map(|d| d.manifest_path.clone());
        if let Some((first_root, first_path)) = seen.get(&manifest.id) {
            let first = first_path
                .as_ref()
                .map(|p| format!("{} ({})", first_root.as_str(), p.display()))
                .unwrap_or_else(|| first_root.as_str().to_string());
            diags.push(Diagnostic {
                level: Level::Warning,
                path: manifest_path,
                field: Some("id".into()),
                problem: format!(
                    "plugin id `{}` is already provided by the {first} root, which is more trusted; this copy is ignored. Give it another id to use both",
                    manifest.id
                ),
                plugin_id: Some(manifest.id.clone()),
            });
            continue;
        }
        seen.insert(manifest.id.clone(), (root, manifest_path));
        if root == Root::User
            && let Origin::Dir(found) = &mut origin
        {
            found.fingerprint = Some(fingerprint(&found.dir));
        }
        slots.push(Slot::new(manifest, root, origin));
    }
    (slots, diags)
}

/// The manifest of one plugin directory, or the diagnostic that says why there is none
/// usable. Blocking.
pub(super) fn read_plugin_dir(dir: &Path) -> Result<(PluginManifest, PathBuf), Diagnostic> {
    let Some(path) = find_manifest(dir) else {
        return Err(Diagnostic {
            level: Level::Warning,
            path: Some(dir.to_path_buf()),
            field: None,
            problem: format!(
                "no manifest found (looked for {}); not a plugin",
                MANIFEST_NAMES.join(", ")
            ),
            plugin_id: None,
        });
    };
    match load_manifest(&path) {
        Ok(manifest) => Ok((manifest, path)),
        Err(e) => Err(Diagnostic {
            level: Level::Error,
            path: Some(e.path),
            field: Some(e.field),
            problem: e.problem,
            plugin_id: e.plugin_id,
        }),
    }
}

/// The manifest of plugin `id` read again from `path`: the reason it cannot be used is the
/// plugin's reason for being in `error`. Blocking.
pub(super) fn reread_manifest(path: &Path, id: &str) -> Result<PluginManifest, String> {
    match load_manifest(path) {
        Ok(m) if m.id != id => Err(format!(
            "its manifest now says id `{}`; a plugin keeps its id: uninstall `{id}` and install the new one",
            m.id
        )),
        Ok(m) => Ok(m),
        Err(e) => Err(format!("its manifest cannot be read again: {e}")),
    }
}

/// The plugin directories under one root with their manifests; problems become diagnostics.
fn scan_root(root: &Path, diags: &mut Vec<Diagnostic>) -> Vec<(PathBuf, PluginManifest, PathBuf)> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            diags.push(Diagnostic {
                level: Level::Error,
                path: Some(root.to_path_buf()),
                field: None,
                problem: format!("cannot read plugin directory: {e}"),
                plugin_id: None,
            });
            return Vec::new();
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    dirs.sort();
    if dirs.len() > MAX_PLUGINS_PER_ROOT {
        diags.push(Diagnostic {
            level: Level::Warning,
            path: Some(root.to_path_buf()),
            field: None,
            problem: format!(
                "{} plugin directories; only the first {MAX_PLUGINS_PER_ROOT} (by name) are read",
                dirs.len()
            ),
            plugin_id: None,
        });
        dirs.truncate(MAX_PLUGINS_PER_ROOT);
    }
    let mut found = Vec::new();
    for dir in dirs {
        match read_plugin_dir(&dir) {
            Ok((manifest, path)) => found.push((dir, manifest, path)),
            Err(diag) => diags.push(diag),
        }
    }
    found
}

/// Every plugin directory (not hidden) under the roots, with its fingerprint. Blocking.
pub(super) fn list_plugin_dirs(roots: &[PathBuf]) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok).take(MAX_PLUGINS_PER_ROOT) {
            let hidden = entry
                .file_name()
                .to_str()
                .is_none_or(|n| n.starts_with('.'));
            if hidden || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            let print = fingerprint(&path);
            out.insert(path, print);
        }
    }
    out
}

/// A hash of a plugin directory's file names, sizes, modes and modification times (links
/// are not followed; at most [`MAX_FINGERPRINT_ENTRIES`] entries, 8 levels deep). Blocking.
pub(super) fn fingerprint(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((at, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            // The host's own state kept beside a plugin (a mounted MCP server's pins) is
            // not a change to the plugin.
            if depth == 0 && entry.file_name() == STATE_DIR {
                continue;
            }
            seen += 1;
            if seen > MAX_FINGERPRINT_ENTRIES {
                return hasher.finish();
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            entry.path().hash(&mut hasher);
            (meta.len(), meta.mode(), meta.mtime(), meta.mtime_nsec()).hash(&mut hasher);
            if meta.is_dir() && depth < 8 {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    hasher.finish()
}

/// The first executable file named `name` on `PATH` (the standard directories when it is
/// unset, as commands get them). Blocking (a `stat` per directory).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| toolshed_ops::process::DEFAULT_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

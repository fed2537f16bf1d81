//! A plugin's npm dependencies, installed when the plugin is: `npm ci --omit=dev
//! --ignore-scripts` from its lock file, inside the command sandbox, before the plugin is
//! moved into place — a failed or stopped install leaves nothing behind.
//!
//! - Only what the lock file pins is installed (`package-lock.json` or
//!   `npm-shrinkwrap.json`; without one the install is refused, naming the fix). A plugin
//!   that ships its `node_modules` is taken as it is.
//! - No install script runs (`preinstall`, `install`, `postinstall` of the plugin or of any
//!   package): a package that needs one to build a native addon (`binding.gyp`) is refused
//!   by name, since its code would not work.
//! - npm runs in a directory of its own under the temporary directory (the sandbox keeps
//!   toolshed's data dir hidden), writing only there and to npm's cache, reaching only the
//!   registry's host. Its registry and cache are npm's own (`npm_config_registry`,
//!   `npm_config_cache`, else what `npm config get` says).
//! - It is stopped past [`NpmLimits::timeout`], or as soon as what it wrote passes
//!   [`NpmLimits::max_bytes`] or [`NpmLimits::max_entries`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use toolshed_ops::ProcessOps;
use toolshed_ops::process::{OutputLimits, SpawnRequest, Stop, Stream};

/// Caps on one plugin's dependency install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NpmLimits {
    /// The longest `npm ci` may run.
    pub timeout: Duration,
    /// The most bytes its `node_modules` may hold.
    pub max_bytes: u64,
    /// The most files and directories in it.
    pub max_entries: u64,
}

impl Default for NpmLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            max_bytes: 256 * 1024 * 1024,
            max_entries: 50_000,
        }
    }
}

/// What a dependency install put in place, kept with the install's provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Dependencies {
    /// The package manager: `npm`.
    pub manager: String,
    /// The packages in `node_modules`.
    pub packages: u64,
    /// Their size in bytes.
    pub bytes: u64,
    /// How long the install took, in milliseconds.
    pub millis: u64,
}

/// How often the install is looked at (size, time).
const POLL: Duration = Duration::from_millis(250);

/// Installs the dependencies of the plugin staged in `dir`, if its `package.json` has
/// any; reports progress lines to `progress`. Must run on a blocking thread of a tokio
/// runtime.
pub(crate) fn install_dependencies(
    processes: &Arc<dyn ProcessOps>,
    dir: &Path,
    limits: NpmLimits,
    progress: &(dyn Fn(String) + Send + Sync),
) -> Result<Option<Dependencies>, String> {
    let Some(deps) = toolshed_core::runtime::package_dependencies(dir) else {
        return Ok(None);
    };
    if deps.is_empty() {
        return Ok(None);
    }
    if dir.join("node_modules").is_dir() {
        progress(
            "its package.json dependencies come with it (node_modules); npm is not run".into(),
        );
        return Ok(None);
    }
    let lock = ["package-lock.json", "npm-shrinkwrap.json"]
        .into_iter()
        .find(|name| dir.join(name).is_file())
        .ok_or_else(|| {
            format!(
                "its package.json depends on {} but it has no package-lock.json: run `npm install --package-lock-only` in the plugin's directory and ship the lock file (toolshed installs exactly what it pins)",
                deps.join(", ")
            )
        })?;
    if let Some(scripts) = install_scripts(dir) {
        progress(format!(
            "its install scripts ({scripts}) are not run: toolshed never runs a package's scripts"
        ));
    }
    let npm = crate::registry::find_on_path("npm").ok_or(
        "installing its dependencies needs npm, which is not installed here: install it (`apt-get install npm`) and install the plugin again",
    )?;
    let build = tempfile::Builder::new()
        .prefix("toolshed-npm-")
        .tempdir()
        .map_err(|e| format!("cannot make a directory for npm: {e}"))?;
    copy_tree(dir, build.path(), &mut 0)
        .map_err(|e| format!("cannot copy the plugin for npm: {e}"))?;
    let registry =
        npm_setting("registry", &npm).unwrap_or_else(|| "https://registry.npmjs.org/".into());
    let cache = npm_setting("cache", &npm)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| build.path().join(".npm-cache"));
    std::fs::create_dir_all(&cache)
        .map_err(|e| format!("cannot create npm's cache {}: {e}", cache.display()))?;
    let mut request = SpawnRequest::new(npm.display().to_string())
        .args([
            "ci",
            "--omit=dev",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(build.path().display().to_string())
        .env("npm_config_registry", &registry)
        .env("npm_config_cache", cache.display().to_string())
        .env("npm_config_update_notifier", "false")
        .limits(OutputLimits {
            head_bytes: 4 * 1024,
            tail_bytes: 16 * 1024,
            kill_after_bytes: Some(4 << 20),
        });
    // Always in the sandbox (a host without one refuses, saying why), never reading the
    // plugin's own npm settings: the user's and the system's only.
    request.sandbox = Some(toolshed_ops::sandbox::SandboxMode::WorkspaceWrite);
    request.writable = vec![build.path().to_path_buf(), cache.clone()];
    request.network_hosts = Some(registry_host(&registry).into_iter().collect());
    request.visible = vec![npm.clone(), build.path().to_path_buf()];
    progress(format!("npm: installing {} from {lock}", deps.join(", ")));
    let started = Instant::now();
    let process = processes
        .spawn(&request)
        .map_err(|e| format!("npm cannot start: {e}"))?;
    let runtime = tokio::runtime::Handle::current();
    let modules = build.path().join("node_modules");
    let exit = loop {
        if let Some(exit) = runtime.block_on(process.wait(POLL)) {
            break exit;
        }
        let stop = |why: String| {
            runtime.block_on(process.terminate(Stop::graceful()));
            Err(format!("npm was stopped: {why}; nothing was installed"))
        };
        if started.elapsed() > limits.timeout {
            return stop(format!(
                "it ran past its {} s limit",
                limits.timeout.as_secs()
            ));
        }
        let (entries, bytes) = measure(&modules, limits.max_entries.saturating_add(1));
        if bytes > limits.max_bytes {
            return stop(format!(
                "its packages passed {} MiB",
                limits.max_bytes / (1024 * 1024)
            ));
        }
        if entries > limits.max_entries {
            return stop(format!("its packages passed {} files", limits.max_entries));
        }
    };
    if !exit.status.success() {
        let said = process.snapshot(Stream::Combined);
        let text = String::from_utf8_lossy(&said.tail);
        let text = text.trim();
        let mut start = text.len().saturating_sub(600);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let tail = &text[start..];
        return Err(format!(
            "`npm ci` failed ({:?}): {}; nothing was installed",
            exit.status,
            tail.trim_start_matches(|c: char| !c.is_ascii_graphic())
        ));
    }
    let (entries, bytes) = measure(&modules, limits.max_entries.saturating_add(1));
    if bytes > limits.max_bytes || entries > limits.max_entries {
        return Err(format!(
            "its packages are larger than the limit ({} MiB, {} files); nothing was installed",
            limits.max_bytes / (1024 * 1024),
            limits.max_entries
        ));
    }
    if let Some(link) = first_link(&modules) {
        return Err(format!(
            "npm installed `{link}` as a link (a `file:` or `link:` directory dependency); a plugin holds only files and directories: depend on a packed tarball instead. Nothing was installed"
        ));
    }
    if let Some(addon) = native_addon(&modules) {
        return Err(format!(
            "the dependency `{addon}` is a native addon (it has a binding.gyp), which needs a build step toolshed never runs; use a pure-JavaScript package instead. Nothing was installed"
        ));
    }
    let packages = count_packages(&modules);
    move_tree(&modules, &dir.join("node_modules"))
        .map_err(|e| format!("cannot put its packages in place: {e}"))?;
    let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    progress(format!(
        "npm: {packages} package(s), {} KiB, in {:.1} s",
        bytes / 1024,
        millis as f64 / 1000.0
    ));
    Ok(Some(Dependencies {
        manager: "npm".into(),
        packages,
        bytes,
        millis,
    }))
}

/// The install scripts `package.json` declares, if any.
fn install_scripts(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("package.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let scripts = value.get("scripts")?.as_object()?;
    let found: Vec<&str> = ["preinstall", "install", "postinstall", "prepare"]
        .into_iter()
        .filter(|name| scripts.contains_key(*name))
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

/// An npm setting: `npm_config_<name>` in the environment, else `npm config get <name>`
/// (run outside the sandbox, away from the plugin: it reads npm's own files).
fn npm_setting(name: &str, npm: &Path) -> Option<String> {
    if let Ok(value) = std::env::var(format!("npm_config_{name}"))
        && !value.is_empty()
    {
        return Some(value);
    }
    let out = std::process::Command::new(npm)
        .args(["config", "get", name])
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !value.is_empty() && value != "undefined").then_some(value)
}

/// `host` or `host:port` of the registry's URL.
fn registry_host(registry: &str) -> Option<String> {
    let url = url::Url::parse(registry).ok()?;
    let host = url.host_str()?.to_string();
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// Files and directories under `dir` (counting stops past `max_entries`) and the bytes of
/// its files.
fn measure(dir: &Path, max_entries: u64) -> (u64, u64) {
    let (mut entries, mut bytes) = (0u64, 0u64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in list.flatten() {
            entries += 1;
            if entries > max_entries {
                return (entries, bytes);
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                Ok(t) if t.is_file() => bytes += entry.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    (entries, bytes)
}

/// The first package under `modules` that builds a native addon.
fn native_addon(modules: &Path) -> Option<String> {
    let mut stack = vec![modules.to_path_buf()];
    let mut looked = 0;
    while let Some(current) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in list.flatten() {
            looked += 1;
            if looked > 200_000 {
                return None;
            }
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() && entry.file_name() == "binding.gyp" => {
                    let package = current.strip_prefix(modules).unwrap_or(&current);
                    return Some(package.display().to_string());
                }
                _ => {}
            }
        }
    }
    None
}

/// The first symbolic link under `modules` (npm's `.bin` left out), plugin-relative.
fn first_link(modules: &Path) -> Option<String> {
    let mut stack = vec![modules.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in list.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_symlink() && entry.file_name() != ".bin" => {
                    let path = entry.path();
                    return Some(
                        path.strip_prefix(modules)
                            .unwrap_or(&path)
                            .display()
                            .to_string(),
                    );
                }
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                _ => {}
            }
        }
    }
    None
}

/// The packages directly in `node_modules` (`@scope/name` counted once each).
fn count_packages(modules: &Path) -> u64 {
    let Ok(list) = std::fs::read_dir(modules) else {
        return 0;
    };
    let mut count = 0;
    for entry in list.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if name.starts_with('@') {
            count += std::fs::read_dir(entry.path())
                .map(|l| l.flatten().count() as u64)
                .unwrap_or(0);
        } else {
            count += 1;
        }
    }
    count
}

/// Copies the regular files and directories of `from` into `to` (links are left out;
/// `node_modules` too), at most 60,000 entries.
fn copy_tree(from: &Path, to: &Path, copied: &mut usize) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        *copied += 1;
        if *copied > 60_000 {
            return Err(std::io::Error::other("more than 60,000 files"));
        }
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            if entry.file_name() != "node_modules" {
                copy_tree(&entry.path(), &target, copied)?;
            }
        } else if kind.is_file() && entry.file_name() != ".npmrc" {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Moves `from` to `to`: a rename, or a copy of its files and directories across file
/// systems (npm's `.bin` links are left out: a plugin requires packages, it does not run
/// their commands).
fn move_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if !from.exists() {
        return std::fs::create_dir_all(to);
    }
    let bin = from.join(".bin");
    if bin.is_dir() {
        std::fs::remove_dir_all(&bin)?;
    }
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    copy_tree(from, to, &mut 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registries_name_their_host() {
        assert_eq!(
            registry_host("https://registry.npmjs.org/").as_deref(),
            Some("registry.npmjs.org")
        );
        assert_eq!(
            registry_host("http://127.0.0.1:4873/").as_deref(),
            Some("127.0.0.1:4873")
        );
        assert_eq!(registry_host("not a url"), None);
    }

    #[test]
    fn native_addons_are_found_by_their_build_file() {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("node_modules");
        std::fs::create_dir_all(modules.join("pure/lib")).unwrap();
        std::fs::write(modules.join("pure/lib/index.js"), "").unwrap();
        assert_eq!(native_addon(&modules), None);
        std::fs::create_dir_all(modules.join("@acme/fast")).unwrap();
        std::fs::write(modules.join("@acme/fast/binding.gyp"), "{}").unwrap();
        assert_eq!(native_addon(&modules).as_deref(), Some("@acme/fast"));
        assert_eq!(count_packages(&modules), 2);
    }
}

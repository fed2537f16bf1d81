//! Installing a plugin from a directory or an archive, with a strict extractor.
//!
//! ```no_run
//! use toolshed_host::install::{InstallRequest, install};
//! # fn demo(data_dir: &std::path::Path) -> Result<(), toolshed_host::install::InstallError> {
//! let mut request = InstallRequest::new("hello-plugin.tar.gz");
//! request.sha256 = Some("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into());
//! let installed = install(&data_dir.join("plugins"), &request, &mut |p| {
//!     eprintln!("{} entries, {} bytes", p.entries, p.bytes)
//! })?;
//! println!("installed {} into {}", installed.id, installed.dir.display());
//! # Ok(()) }
//! ```
//!
//! An archive is untrusted input, so the extractor is a whitelist rather than a filter:
//! only regular files and directories are written, every name is checked before anything
//! is created, and every limit counts bytes actually decompressed (sizes in headers are
//! never believed). The checksum, when one is given, is verified on the same open file
//! handle before the archive is parsed at all, so a tampered archive never reaches the
//! parsers.
//!
//! Everything is written into `<plugin root>/.staging-<random>` and only renamed into
//! `<plugin root>/<id>` once the manifest is read and checked. A process killed midway
//! leaves only the staging directory, which discovery ignores (it skips dot-directories)
//! and [`clean_stale_staging`] removes at the next host start. Installs hold an exclusive
//! `flock` on `<plugin root>/.lock`, so two installs (of one id or any) run one at a time,
//! and the clean-up never removes the staging of an install still running.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toolshed_core::is_valid_plugin_id;

use crate::manifest::{MANIFEST_NAMES, find_manifest, load_manifest};

pub mod download;
mod extract;
pub(crate) mod npm;
pub mod provenance;
mod replicate;
pub mod store;

use extract::Extractor;

/// The directory of installed plugins inside the data dir.
pub const PLUGINS_DIR: &str = "plugins";

/// The lock file installs hold inside the plugin root.
pub const LOCK_FILE: &str = ".lock";

/// The name prefix of staging directories inside the plugin root.
pub const STAGING_PREFIX: &str = ".staging-";

/// Caps on what one install may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most entries (files and directories) in the source.
    pub max_entries: u64,
    /// The most bytes of file content, counted as they are decompressed.
    pub max_total_bytes: u64,
    /// The most decompressed bytes per byte of archive, over the whole archive.
    pub max_ratio: u64,
    /// Archives whose content stays under this many bytes are not held to `max_ratio`
    /// (a small archive of text legitimately compresses well).
    pub ratio_floor_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_total_bytes: 256 * 1024 * 1024,
            max_ratio: 100,
            ratio_floor_bytes: 1024 * 1024,
        }
    }
}

/// What to do when a plugin with the same id is already installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overwrite {
    /// Refuse the install.
    #[default]
    Refuse,
    /// Replace the installed copy (its stored state and config are kept).
    Replace,
}

/// One install to perform.
#[derive(Debug, Clone, Default)]
pub struct InstallRequest {
    /// A plugin directory, a `.tar.gz`/`.tgz` file or a `.zip` file.
    pub source: String,
    /// The id the plugin must have.
    pub expected_id: Option<String>,
    /// The SHA-256 the archive file must have, in hex.
    pub sha256: Option<String>,
    /// Whether an installed copy may be replaced.
    pub overwrite: Overwrite,
    /// Ids that may not be installed (plugins that come with toolshed: an installed copy
    /// would be shadowed by them).
    pub reserved_ids: BTreeSet<String>,
    /// The caps.
    pub limits: Limits,
    /// The Agent Spaces folder digest the plugin's files must have (a store's `md5`,
    /// [`store::folder_md5`]), checked before anything is put in place.
    pub expected_md5: Option<String>,
    /// Run on the staged plugin once its manifest is checked, before it is moved into
    /// place: installs its dependencies ([`npm`]). An error fails the install.
    pub prepare: Option<Prepare>,
}

/// What [`Prepare`] runs: the staged plugin's directory in, what it installed (or why it
/// could not) out.
pub type PrepareFn = dyn Fn(&Path) -> Result<Option<npm::Dependencies>, String> + Send + Sync;

/// A step run on a staged plugin's directory (see [`InstallRequest::prepare`]).
#[derive(Clone)]
pub struct Prepare(pub std::sync::Arc<PrepareFn>);

impl std::fmt::Debug for Prepare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prepare")
    }
}

impl InstallRequest {
    /// A request for `source` with default limits, no checksum and no expected id.
    pub fn new(source: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            ..Self::default()
        }
    }
}

/// How far extraction has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Entries read so far.
    pub entries: u64,
    /// File bytes written so far.
    pub bytes: u64,
    /// Whether extraction is complete.
    pub done: bool,
}

/// A plugin that was installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Its id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// Where it now lives.
    pub dir: PathBuf,
    /// Whether an installed copy was replaced.
    pub replaced: bool,
    /// The single top-level directory that was stripped, if any.
    pub stripped: Option<String>,
    /// Entries extracted.
    pub entries: u64,
    /// File bytes written.
    pub bytes: u64,
    /// The dependencies installed with it.
    pub dependencies: Option<npm::Dependencies>,
}

/// Why an install failed. Nothing is left in the plugin root when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The source is a URL: download it first ([`download::download`]).
    #[error("{url} is a URL: download it first (`toolshed plugins install URL --sha256 HEX` does)")]
    Url {
        /// The URL given.
        url: String,
    },
    /// A download was refused or failed.
    #[error("cannot download {url}: {reason}; nothing was installed")]
    Download {
        /// The URL, without credentials or query.
        url: String,
        /// Why.
        reason: String,
    },
    /// The source cannot be read.
    #[error(
        "cannot read {path}: {reason}; pass a plugin directory, a .tar.gz/.tgz file or a .zip file"
    )]
    Source {
        /// The path given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The source is a file of a kind not supported.
    #[error(
        "{path} is not a directory, a .tar.gz/.tgz file or a .zip file; pack the plugin as one of those"
    )]
    Format {
        /// The path given.
        path: PathBuf,
    },
    /// The checksum given is not hex SHA-256.
    #[error("`{given}` is not a SHA-256 checksum; give 64 hexadecimal characters")]
    ChecksumSyntax {
        /// What was given.
        given: String,
    },
    /// A directory URL's md5 is malformed.
    #[error(
        "--md5 {given:?} is not an md5: give the 32 hex digits of Agent Spaces' folder digest of the plugin (its store index's `md5`)"
    )]
    Md5Syntax {
        /// What was given.
        given: String,
    },
    /// A checksum was given for a directory.
    #[error(
        "{path} is a directory, and --sha256 checks archive files only; install the archive, or drop --sha256"
    )]
    ChecksumOnDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// The archive's checksum differs from the one given.
    #[error(
        "checksum mismatch for {path}: expected sha256 {expected}, the file has {actual}; the archive was not opened. Check that this is the file you meant"
    )]
    ChecksumMismatch {
        /// The archive.
        path: PathBuf,
        /// The checksum asked for.
        expected: String,
        /// The file's checksum.
        actual: String,
    },
    /// An entry breaks a rule.
    #[error("refused entry `{entry}`: {reason}; nothing was installed")]
    Entry {
        /// The entry's name as stored.
        entry: String,
        /// The rule it breaks.
        reason: String,
    },
    /// A cap was reached.
    #[error("refused: {0}; nothing was installed")]
    Limit(String),
    /// The archive cannot be read.
    #[error("{path} is not a readable archive ({reason}); nothing was installed")]
    Corrupt {
        /// The archive.
        path: PathBuf,
        /// What the reader said.
        reason: String,
    },
    /// No manifest was found.
    #[error(
        "no plugin manifest at the top of the source or of its single top-level directory (looked for {names}); nothing was installed"
    )]
    NoManifest {
        /// The names tried.
        names: String,
    },
    /// The manifest is invalid.
    #[error("the plugin's manifest {file} is invalid: {field}: {problem}; nothing was installed")]
    Manifest {
        /// The manifest file, relative to the plugin.
        file: String,
        /// The field.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The id asked for is not a valid id.
    #[error("--id `{0}` is not a valid plugin id (1 to 64 of a-z, 0-9, `.`, `_`, `-`)")]
    BadId(String),
    /// The manifest's id is not the one asked for.
    #[error(
        "the source holds plugin `{found}`, not `{expected}` as --id asks; nothing was installed. Check the source, or drop --id"
    )]
    IdMismatch {
        /// The id asked for.
        expected: String,
        /// The manifest's id.
        found: String,
    },
    /// The id belongs to a plugin that comes with toolshed.
    #[error(
        "plugin id `{0}` belongs to a plugin that comes with toolshed, which would shadow an installed copy; give the plugin another id"
    )]
    Reserved(String),
    /// No configured store offers the plugin.
    #[error("plugin `{id}` is not a directory, an archive or a URL, and {why}")]
    NotInStore {
        /// The id asked for.
        id: String,
        /// Why it was not found.
        why: String,
    },
    /// The files are not the ones the store's index describes.
    #[error(
        "plugin `{id}`: its files' digest is {actual}, not {expected} as the store's index says; the store serves other files than it lists (or is being updated): nothing was installed"
    )]
    Md5Mismatch {
        /// The plugin's id.
        id: String,
        /// What the index says.
        expected: String,
        /// What the files hash to.
        actual: String,
    },
    /// Its dependencies could not be installed.
    #[error("plugin `{id}`: {reason}")]
    Dependencies {
        /// The plugin's id.
        id: String,
        /// Why (it says that nothing was installed).
        reason: String,
    },
    /// A plugin with the id is installed and replacing was not asked for.
    #[error(
        "plugin `{id}` is already installed at {dir}; pass --force to replace it, or uninstall it first"
    )]
    Exists {
        /// The id.
        id: String,
        /// Its directory.
        dir: PathBuf,
    },
    /// A file system operation failed.
    #[error("cannot {action} {path}: {reason}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

pub(crate) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> InstallError + 'a {
    move |e| InstallError::Io {
        action,
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

/// An exclusive lock on the plugin root, held for one install; released on drop.
pub struct InstallLock {
    _file: File,
}

impl InstallLock {
    fn open(root: &Path) -> io::Result<File> {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(root.join(LOCK_FILE))
    }

    /// Waits for the lock.
    pub fn acquire(root: &Path) -> io::Result<Self> {
        let file = Self::open(root)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(Self { _file: file })
    }

    /// Takes the lock if nobody holds it.
    pub fn try_acquire(root: &Path) -> io::Result<Option<Self>> {
        let file = Self::open(root)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// Removes the staging directories interrupted installs left in `root`, unless an install
/// is running now. Returns what was removed.
pub fn clean_stale_staging(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let _lock = match InstallLock::try_acquire(root) {
        Ok(Some(lock)) => lock,
        Ok(None) => return Vec::new(),
        Err(e) => {
            tracing::warn!(root = %root.display(), error = %e, "cannot lock the plugin root; stale staging left in place");
            return Vec::new();
        }
    };
    let mut removed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let is_staging = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(STAGING_PREFIX));
        if !is_staging {
            continue;
        }
        let path = entry.path();
        let outcome = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        match outcome {
            Ok(()) => removed.push(path),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove stale staging")
            }
        }
    }
    removed
}

enum Format {
    Dir,
    TarGz,
    Zip,
}

/// Installs the plugin `request` names into `root` (the user plugin directory), reporting
/// extraction progress to `progress`.
pub fn install(
    root: &Path,
    request: &InstallRequest,
    progress: &mut dyn FnMut(Progress),
) -> Result<Installed, InstallError> {
    let source = request.source.as_str();
    if source.contains("://") {
        return Err(InstallError::Url {
            url: source.to_string(),
        });
    }
    if let Some(id) = &request.expected_id
        && !is_valid_plugin_id(id)
    {
        return Err(InstallError::BadId(id.clone()));
    }
    let expected_sha = request.sha256.as_deref().map(parse_sha256).transpose()?;
    let path = Path::new(source);
    let meta = std::fs::metadata(path).map_err(|e| InstallError::Source {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let lower = source.to_ascii_lowercase();
    let format = if meta.is_dir() {
        Format::Dir
    } else if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
        Format::TarGz
    } else if lower.ends_with(".zip") {
        Format::Zip
    } else {
        return Err(InstallError::Format {
            path: path.to_path_buf(),
        });
    };
    // The checksum is checked on the handle the extractor then reads, so the file cannot
    // be swapped between the check and the parse.
    let archive = match format {
        Format::Dir => {
            if expected_sha.is_some() {
                return Err(InstallError::ChecksumOnDirectory {
                    path: path.to_path_buf(),
                });
            }
            // Nothing is copied from a directory that holds no plugin (`/`, say).
            plugin_root_of(path)?;
            None
        }
        Format::TarGz | Format::Zip => {
            let mut file = File::open(path).map_err(|e| InstallError::Source {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
            if let Some(expected) = &expected_sha {
                let actual = sha256_hex(&mut file).map_err(io_err("read", path))?;
                if &actual != expected {
                    return Err(InstallError::ChecksumMismatch {
                        path: path.to_path_buf(),
                        expected: expected.clone(),
                        actual,
                    });
                }
                file.seek(SeekFrom::Start(0))
                    .map_err(io_err("read", path))?;
            }
            let len = file.metadata().map_err(io_err("read", path))?.len();
            Some((file, len))
        }
    };

    std::fs::create_dir_all(root).map_err(io_err("create", root))?;
    let _lock = InstallLock::acquire(root).map_err(io_err("lock", root))?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(root)
        .map_err(io_err("create a staging directory in", root))?;
    let tree = staging.path().join("tree");
    std::fs::create_dir(&tree).map_err(io_err("create", &tree))?;

    let archive_len = archive.as_ref().map_or(0, |(_, len)| *len);
    let mut extractor = Extractor::new(tree.clone(), request.limits, archive_len, progress);
    match (format, archive) {
        (Format::Dir, _) => extractor.copy_dir(path, &mut Vec::new())?,
        (Format::TarGz, Some((file, _))) => extractor.tar_gz(path, file)?,
        (Format::Zip, Some((file, _))) => extractor.zip(path, file)?,
        _ => {
            return Err(InstallError::Format {
                path: path.to_path_buf(),
            });
        }
    }
    let (entries, bytes) = extractor.finish();

    let (plugin_dir, stripped) = plugin_root_of(&tree)?;
    let manifest_path = find_manifest(&plugin_dir).ok_or_else(|| InstallError::NoManifest {
        names: MANIFEST_NAMES.join(", "),
    })?;
    let manifest = load_manifest(&manifest_path).map_err(|e| InstallError::Manifest {
        file: manifest_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        field: e.field,
        problem: e.problem,
    })?;
    if let Some(expected) = &request.expected_id
        && expected != &manifest.id
    {
        return Err(InstallError::IdMismatch {
            expected: expected.clone(),
            found: manifest.id,
        });
    }
    if request.reserved_ids.contains(&manifest.id) {
        return Err(InstallError::Reserved(manifest.id));
    }
    if let Some(expected) = &request.expected_md5 {
        // The store's digest leaves `node_modules` out: code there would go unchecked.
        if plugin_dir.join("node_modules").exists() {
            return Err(InstallError::Dependencies {
                id: manifest.id,
                reason: "the store's copy ships node_modules, which its md5 does not cover; nothing was installed".into(),
            });
        }
        let actual = store::folder_md5(&plugin_dir).map_err(io_err("hash", &plugin_dir))?;
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(InstallError::Md5Mismatch {
                id: manifest.id,
                expected: expected.clone(),
                actual,
            });
        }
    }
    let dependencies = match &request.prepare {
        Some(prepare) => (prepare.0)(&plugin_dir).map_err(|reason| InstallError::Dependencies {
            id: manifest.id.clone(),
            reason,
        })?,
        None => None,
    };
    // A valid id is one plain path component (it starts with a letter or digit and has
    // no separators), so the target is a direct child of the root.
    let target = root.join(&manifest.id);
    let replaced = match std::fs::symlink_metadata(&target) {
        Ok(_) if request.overwrite == Overwrite::Refuse => {
            return Err(InstallError::Exists {
                id: manifest.id,
                dir: target,
            });
        }
        Ok(_) => {
            swap_into_place(&plugin_dir, &target, &staging.path().join("old"))?;
            true
        }
        Err(_) => {
            std::fs::rename(&plugin_dir, &target).map_err(io_err("move the plugin to", &target))?;
            false
        }
    };
    // Dropping the staging directory removes what is left in it: the replaced copy, or
    // the wrapper directory that was stripped.
    drop(staging);
    Ok(Installed {
        id: manifest.id,
        version: manifest.version,
        dir: target,
        replaced,
        stripped,
        entries,
        bytes,
        dependencies,
    })
}

/// Puts `new` at `target`, whose old content ends at `aside` (or at `new`, when swapped).
fn swap_into_place(new: &Path, target: &Path, aside: &Path) -> Result<(), InstallError> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    // One atomic exchange where the file system supports it: the id is never absent.
    if renameat_with(CWD, new, CWD, target, RenameFlags::EXCHANGE).is_ok() {
        return Ok(());
    }
    std::fs::rename(target, aside).map_err(io_err("move aside", target))?;
    if let Err(e) = std::fs::rename(new, target) {
        let _ = std::fs::rename(aside, target);
        return Err(io_err("move the plugin to", target)(e));
    }
    Ok(())
}

/// The plugin's directory inside the extracted tree: the tree itself when it holds a
/// manifest, else its single top-level directory (archives are often packed that way).
fn plugin_root_of(tree: &Path) -> Result<(PathBuf, Option<String>), InstallError> {
    if find_manifest(tree).is_some() {
        return Ok((tree.to_path_buf(), None));
    }
    let children: Vec<_> = std::fs::read_dir(tree)
        .map_err(io_err("read", tree))?
        .filter_map(Result::ok)
        .collect();
    if let [only] = children.as_slice()
        && only.file_type().is_ok_and(|t| t.is_dir())
        && find_manifest(&only.path()).is_some()
    {
        let name = only.file_name().to_string_lossy().into_owned();
        return Ok((only.path(), Some(name)));
    }
    Err(InstallError::NoManifest {
        names: MANIFEST_NAMES.join(", "),
    })
}

pub(crate) fn parse_sha256(given: &str) -> Result<String, InstallError> {
    let hex = given.trim().to_ascii_lowercase();
    if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(hex)
    } else {
        Err(InstallError::ChecksumSyntax {
            given: given.to_string(),
        })
    }
}

fn sha256_hex(reader: &mut impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

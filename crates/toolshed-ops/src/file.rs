//! The `FileOps` trait: file operations confined to one workspace.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::OpsError;

/// The most entries one directory listing returns.
pub const MAX_DIR_ENTRIES: usize = 100_000;

/// What kind of thing a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (only when not followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// Facts about one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// What it is.
    pub kind: FileKind,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits (`0o644`).
    pub mode: u32,
    /// Last modification.
    #[serde(skip)]
    pub modified: SystemTime,
    /// Hard link count.
    pub links: u64,
    /// Where a symbolic link points, when `kind` is `Symlink`.
    pub link_target: Option<String>,
}

/// What the caller may do with a path ([`FileOps::access`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Access {
    /// Whether it can be read (a directory: listed).
    pub read: bool,
    /// Whether it can be written (a directory: entries made or removed in it). A path that
    /// does not exist: whether it can be created.
    pub write: bool,
    /// Whether the path exists.
    pub exists: bool,
    /// Why not, when `read` or `write` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// The name (lossy UTF-8).
    pub name: String,
    /// Facts about it (symbolic links not followed).
    pub metadata: Metadata,
}

/// A directory's entries, sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirListing {
    /// The entries.
    pub entries: Vec<DirEntry>,
    /// Whether entries past [`MAX_DIR_ENTRIES`] were left out.
    pub truncated: bool,
}

/// The bytes of a file, possibly cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContents {
    /// The bytes read.
    pub bytes: Vec<u8>,
    /// The file's whole size.
    pub size: u64,
    /// Facts about the file.
    pub metadata: Metadata,
    /// Where the file opened really is, workspace-relative as [`FileOps::realpath`] spells
    /// it, when the backend learned that while opening it (`None`: ask `realpath`).
    pub real_path: Option<String>,
}

impl FileContents {
    /// Whether less than the whole file was read.
    pub fn truncated(&self) -> bool {
        (self.bytes.len() as u64) < self.size
    }
}

/// Whether a path is followed when it is a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Follow the final link (still only to places inside the workspace).
    Yes,
    /// Describe the link itself.
    No,
}

/// Whether missing parent directories are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parents {
    /// Create them.
    Create,
    /// Fail if they are missing.
    MustExist,
}

/// Whether an existing target may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// Replace it.
    Yes,
    /// Fail with `AlreadyExists`.
    No,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A new file was created.
    Created,
    /// An existing file was replaced.
    Replaced,
}

/// What a change expects to find at its path before it is made: the compare of a
/// compare-and-swap. A file that no longer holds what the caller read fails the whole
/// commit with [`OpsError::Changed`](crate::OpsError::Changed) instead of overwriting what
/// someone else wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect<'a> {
    /// Whatever is there (a blind write).
    Anything,
    /// Nothing: the path must not exist.
    Missing,
    /// A regular file holding exactly these bytes.
    Content(&'a [u8]),
}

/// One change of a [`FileOps::commit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    /// Creates or replaces the regular file at `path` with `data`.
    Write {
        /// The file.
        path: &'a str,
        /// Its new content.
        data: &'a [u8],
        /// What must be there now.
        expect: Expect<'a>,
        /// Whether missing parent directories are created.
        parents: Parents,
    },
    /// Removes the file (or symbolic link) at `path`.
    Remove {
        /// The file.
        path: &'a str,
        /// What must be there now.
        expect: Expect<'a>,
    },
    /// Moves the regular file at `from` to `to` (which must not exist; its parents are
    /// created) with `data` as its new content, keeping its permission bits.
    Move {
        /// Where the file is.
        from: &'a str,
        /// Where it goes.
        to: &'a str,
        /// Its new content.
        data: &'a [u8],
        /// What must be at `from` now.
        expect: Expect<'a>,
    },
}

impl Change<'_> {
    /// The path the change is about (a move's source).
    pub fn path(&self) -> &str {
        match self {
            Change::Write { path, .. } | Change::Remove { path, .. } => path,
            Change::Move { from, .. } => from,
        }
    }
}

/// File operations on one workspace. Every path is relative to the workspace root (an
/// absolute path inside the root is accepted too) and is resolved so that it can never
/// leave the root — `..`, absolute symbolic links and links pointing out are refused — and
/// never reaches the reserved `.toolshed/` directory.
///
/// The methods are blocking: call them from `spawn_blocking` (or a blocking pool) on an
/// async runtime. Implementations: [`LocalOps`](crate::LocalOps) on the real file system,
/// [`MemoryOps`](crate::MemoryOps) in memory for tests; both pass the same
/// contract suite (the `contract` module, with the `contract` feature).
pub trait FileOps: Send + Sync {
    /// Reads up to `max_bytes` of a regular file.
    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError>;

    /// Replaces (or creates) a regular file atomically: the new content is written to a
    /// temporary file beside it, flushed to disk and renamed over the old one, keeping its
    /// permission bits. Refuses symbolic links, special files and files with several hard
    /// links. Writers of one file are serialized, within the process and across processes.
    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError>;

    /// Applies `changes` all-or-nothing: every expectation is checked and every change made
    /// under the writers' locks of every directory involved (within the process and across
    /// processes, waiting at most a few seconds), so no other toolshed writer slips in
    /// between a check and its write. If any expectation fails, or any target would be
    /// refused (a link, a special file, a read-only file), nothing is changed.
    ///
    /// On disk, a crash part way cannot leave a half-applied commit: new contents are
    /// written and flushed first, then an intent journal, then the renames; a workspace
    /// opened after a crash finishes what its journal says.
    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError>;

    /// Appends to a regular file, creating it if missing.
    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError>;

    /// Facts about a path.
    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError>;

    /// What the caller may do with `path` — the question of `access(2)`, answered within
    /// the workspace: read it, write it (or, missing, create it). An escape or a reserved
    /// path is an error, as for any operation. By default the answer comes from the owner
    /// bits of the permissions; a backend that can ask the system does.
    fn access(&self, path: &str) -> Result<Access, OpsError> {
        let metadata = match self.stat(path, Follow::Yes) {
            Ok(metadata) => metadata,
            Err(OpsError::NotFound { .. }) => {
                // Created in the nearest directory that exists.
                let mut parent = path.trim_end_matches('/');
                let dir = loop {
                    parent = match parent.rsplit_once('/') {
                        Some((head, _)) if !head.is_empty() => head,
                        Some(_) => "/",
                        None => ".",
                    };
                    match self.stat(parent, Follow::Yes) {
                        Ok(m) => break m,
                        Err(OpsError::NotFound { .. }) if parent != "." && parent != "/" => {}
                        Err(e) => return Err(e),
                    }
                };
                let write = dir.kind == FileKind::Dir && dir.mode & 0o200 != 0;
                return Ok(Access {
                    read: false,
                    write,
                    exists: false,
                    reason: Some(if write {
                        format!("`{path}` does not exist; it can be created")
                    } else {
                        format!(
                            "`{path}` does not exist, and `{parent}` is not a writable directory"
                        )
                    }),
                });
            }
            Err(e) => return Err(e),
        };
        let read = metadata.mode & 0o400 != 0;
        let write = metadata.mode & 0o200 != 0;
        let reason = (!read || !write).then(|| {
            format!(
                "`{path}` has mode {:04o}{}",
                metadata.mode & 0o7777,
                if write {
                    ""
                } else {
                    ": its owner took away write permission"
                }
            )
        });
        Ok(Access {
            read,
            write,
            exists: true,
            reason,
        })
    }

    /// Whether a small operation (a stat, a read of a few hundred KiB) finishes at once here:
    /// the files are on a local disk or in memory, not behind a network or a user-space
    /// file system where one can take seconds. A caller may then run such operations on an
    /// async thread instead of handing them to a blocking pool. `false` unless the backend
    /// knows.
    fn quick(&self) -> bool {
        false
    }

    /// A directory's entries (hidden: toolshed's own temporary files and, at the root, the
    /// reserved directory).
    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError>;

    /// Creates a directory (and its parents with `Parents::Create`). An existing directory
    /// is not an error.
    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError>;

    /// Removes a file or symbolic link; a directory only if empty or with `recursive`.
    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError>;

    /// Renames a file or directory within the workspace.
    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError>;

    /// The path with every link resolved, relative to the root (`.` for the root).
    fn realpath(&self, path: &str) -> Result<String, OpsError>;

    /// The workspace root, for messages.
    fn root_display(&self) -> String;

    /// The workspace's further roots ([`crate::roots`]), by name with their directory;
    /// none for a workspace of one root.
    fn further_roots(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// `path` as the workspace's links resolve it, relative to the root, with the words
    /// past its deepest existing ancestor appended (see
    /// [`resolve_in_workspace`](crate::resolve_in_workspace), which this is by default);
    /// `None` when it leaves the workspace. A remote backend answers it in one round trip.
    fn resolve(&self, path: &str) -> Option<String> {
        resolve_in_workspace(self, path)
    }
}

/// `path` (workspace-relative or absolute inside the workspace) as the workspace's links
/// resolve it, relative to the root: its deepest existing ancestor resolved, the rest of
/// the words appended (a file and directories about to be created). `None` when even the
/// root cannot be resolved or the path leaves the workspace.
pub fn resolve_in_workspace<F: FileOps + ?Sized>(files: &F, path: &str) -> Option<String> {
    let mut head = path.trim_end_matches('/').to_string();
    if head.is_empty() {
        head = "/".into();
    }
    let mut rest: Vec<String> = Vec::new();
    for _ in 0..64 {
        if let Ok(real) = files.realpath(&head) {
            rest.reverse();
            let mut out = if real == "." { String::new() } else { real };
            for part in rest {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(&part);
            }
            return Some(if out.is_empty() { ".".into() } else { out });
        }
        let (parent, name) = match head.rsplit_once('/') {
            Some(("", name)) => ("/".to_string(), name.to_string()),
            Some((parent, name)) => (parent.to_string(), name.to_string()),
            None if head != "." => (".".to_string(), head.clone()),
            None => return None,
        };
        if name == ".." {
            return None;
        }
        if name != "." && !name.is_empty() {
            rest.push(name);
        }
        if parent == head {
            return None;
        }
        head = parent;
    }
    None
}

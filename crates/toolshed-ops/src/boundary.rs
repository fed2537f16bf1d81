//! The file boundary: the one place that decides whether a tool may change, or read, a
//! workspace path — by the rules the command sandbox applies to commands.
//!
//! Commands meet the sandbox in the kernel (Landlock, mounts); file tools meet it here. A
//! [`BoundedFiles`] wraps the host's [`FileOps`] so that every tool that touches files —
//! the workspace tools, patches, moves, deletes, LSP renames, downloads, plugins' `ctx.fs` —
//! goes through [`FileBoundary`]:
//!
//! - in `read-only`, nothing changes: every write, append, commit, mkdir, remove and rename
//!   is refused, as a command gets "Read-only file system";
//! - in every sandboxed mode, a path the sandbox hides from commands (`[sandbox] deny`
//!   entries inside the workspace) is neither read nor written, judged on the path the
//!   workspace's links resolve to;
//! - `[sandbox] writable` roots widen commands only: file tools never leave the workspace
//!   (the jail), so they add nothing here;
//! - `full-access` adds no rule of its own (the jail still holds).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::OpsError;
use crate::file::{
    Change, DirListing, FileContents, FileOps, Follow, Metadata, Overwrite, Parents, Written,
};
use crate::path::{is_within, normalize, shown};
use crate::sandbox::SandboxMode;
use crate::search::{
    FindRequest, FindResult, GlobRequest, GlobResult, GrepRequest, GrepResult, SearchOps,
    TreeRequest, TreeResult,
};

/// What file tools may touch, from the sandbox's mode and deny list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBoundary {
    mode: SandboxMode,
    /// The workspace root, canonical.
    workspace: PathBuf,
    /// The hidden paths inside the workspace, relative to it (normalized).
    hidden: Vec<String>,
    /// What hides them, for messages.
    hidden_by: &'static str,
}

impl FileBoundary {
    /// The boundary for a sandbox in `mode` over `workspace` that hides `denied` (absolute
    /// paths; those outside the workspace are out of file tools' reach anyway).
    // The paths are compared as names here; every file is opened through the jail.
    #[allow(clippy::disallowed_methods)]
    pub fn new(mode: SandboxMode, workspace: &Path, denied: &[PathBuf]) -> Self {
        let workspace = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        let hidden = denied
            .iter()
            .filter_map(|path| {
                let path = path.canonicalize().unwrap_or_else(|_| path.clone());
                let relative = path.strip_prefix(&workspace).ok()?;
                let text = relative.to_str()?;
                // The jail keeps `.toolshed/` out of reach already.
                (!text.is_empty() && !crate::path::names_reserved(text)).then(|| text.to_string())
            })
            .collect();
        Self {
            mode,
            workspace,
            hidden,
            hidden_by: "[sandbox] deny",
        }
    }

    /// A boundary that only hides `hidden` (workspace-relative paths) of the workspace at
    /// `workspace`: what policy rules on `reads` keep from one call's searches.
    pub fn hiding(workspace: &Path, hidden: &[String]) -> Self {
        Self {
            mode: SandboxMode::WorkspaceWrite,
            workspace: workspace.to_path_buf(),
            hidden: hidden
                .iter()
                .filter_map(|h| crate::path::normalize_lexically(h.trim_end_matches('/')).ok())
                .filter(|h| h != ".")
                .collect(),
            hidden_by: "a policy rule on what calls read",
        }
    }

    /// The mode it enforces.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether a tool may change `path`: refused in read-only, and where hidden.
    pub fn check_write(&self, files: &dyn FileOps, path: &str) -> Result<(), OpsError> {
        if self.mode == SandboxMode::ReadOnly {
            return Err(OpsError::SandboxRefused {
                path: shown(path),
                reason: "the sandbox mode is read-only, so no tool changes files (commands get \
                         \"Read-only file system\" too); a person can run toolshed with \
                         [sandbox] mode = \"workspace-write\" if this agent should write"
                    .into(),
            });
        }
        self.check_hidden(files, path, true)
    }

    /// Whether a tool may read `path`: refused where the sandbox hides it.
    pub fn check_read(&self, files: &dyn FileOps, path: &str) -> Result<(), OpsError> {
        self.check_hidden(files, path, false)
    }

    /// `holding`: a path that holds a hidden one is refused too (a recursive delete or a
    /// move of it would reach into what is hidden).
    fn check_hidden(&self, files: &dyn FileOps, path: &str, holding: bool) -> Result<(), OpsError> {
        if self.mode == SandboxMode::FullAccess || self.hidden.is_empty() {
            return Ok(());
        }
        let words = normalize(&self.workspace, path)?;
        // Where the links lead, through the deepest part that exists (directories about to
        // be created under a link into a hidden path count too).
        let real = crate::file::resolve_in_workspace(files, &words).ok_or(());
        let folded = crate::path::normalize_lexically(&words).unwrap_or_else(|_| words.clone());
        for candidate in std::iter::once(folded).chain(real.ok()) {
            if let Some(hidden) = self
                .hidden
                .iter()
                .find(|h| is_within(h, &candidate) || (holding && is_within(&candidate, h)))
            {
                return Err(OpsError::SandboxRefused {
                    path: shown(path),
                    reason: format!(
                        "`{hidden}` is hidden by {}, from file tools as from commands",
                        self.hidden_by
                    ),
                });
            }
        }
        Ok(())
    }
}

impl FileBoundary {
    /// Whether `item` (a path a search reported, relative to the workspace root or to
    /// `base`) lies in a hidden path.
    fn hides(&self, base: &str, item: &str) -> bool {
        if self.mode == SandboxMode::FullAccess || self.hidden.is_empty() {
            return false;
        }
        let joined = if base == "." || base.is_empty() {
            item.to_string()
        } else {
            format!("{}/{item}", base.trim_end_matches('/'))
        };
        [item, joined.as_str()].into_iter().any(|candidate| {
            let folded = crate::path::normalize_lexically(candidate.trim_start_matches('/'))
                .unwrap_or_else(|_| candidate.to_string());
            self.hidden.iter().any(|h| is_within(h, &folded))
        })
    }
}

/// A [`SearchOps`] that searches only what a [`FileBoundary`] lets file tools read: a base
/// inside a hidden path is refused, and what a walk finds inside one is left out of the
/// results (its contents never reach the caller).
pub struct BoundedSearch {
    inner: Arc<dyn SearchOps>,
    files: Arc<dyn FileOps>,
    boundary: FileBoundary,
}

impl BoundedSearch {
    /// `inner` within `boundary`, resolving bases through `files`.
    pub fn new(inner: Arc<dyn SearchOps>, files: Arc<dyn FileOps>, boundary: FileBoundary) -> Self {
        Self {
            inner,
            files,
            boundary,
        }
    }
}

impl SearchOps for BoundedSearch {
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError> {
        self.boundary
            .check_read(self.files.as_ref(), &request.base)?;
        let mut result = self.inner.glob(request)?;
        result
            .paths
            .retain(|p| !self.boundary.hides(&request.base, p));
        Ok(result)
    }

    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError> {
        self.boundary
            .check_read(self.files.as_ref(), &request.base)?;
        let mut result = self.inner.find(request)?;
        result
            .matches
            .retain(|m| !self.boundary.hides(&request.base, &m.path));
        Ok(result)
    }

    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError> {
        self.boundary
            .check_read(self.files.as_ref(), &request.base)?;
        let mut result = self.inner.grep(request)?;
        let before: usize = result.files.iter().map(|f| f.matches.len()).sum();
        result
            .files
            .retain(|f| !self.boundary.hides(&request.base, &f.path));
        let after: usize = result.files.iter().map(|f| f.matches.len()).sum();
        result.total_matches = result.total_matches.saturating_sub(before - after);
        Ok(result)
    }

    fn tree(&self, request: &TreeRequest) -> Result<TreeResult, OpsError> {
        self.boundary
            .check_read(self.files.as_ref(), &request.base)?;
        let mut result = self.inner.tree(request)?;
        result
            .entries
            .retain(|e| !self.boundary.hides(&request.base, &e.path));
        Ok(result)
    }
}

/// A [`FileOps`] whose every operation first asks a [`FileBoundary`].
pub struct BoundedFiles {
    inner: Arc<dyn FileOps>,
    boundary: FileBoundary,
}

impl BoundedFiles {
    /// `inner` within `boundary`.
    pub fn new(inner: Arc<dyn FileOps>, boundary: FileBoundary) -> Self {
        Self { inner, boundary }
    }

    /// The boundary it enforces.
    pub fn boundary(&self) -> &FileBoundary {
        &self.boundary
    }

    fn write_ok(&self, path: &str) -> Result<(), OpsError> {
        self.boundary.check_write(self.inner.as_ref(), path)
    }

    fn read_ok(&self, path: &str) -> Result<(), OpsError> {
        self.boundary.check_read(self.inner.as_ref(), path)
    }
}

impl FileOps for BoundedFiles {
    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        self.read_ok(path)?;
        self.inner.read(path, max_bytes)
    }

    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        self.write_ok(path)?;
        self.inner.write(path, data, parents)
    }

    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError> {
        for change in changes {
            self.write_ok(change.path())?;
            if let Change::Move { to, .. } = change {
                self.write_ok(to)?;
            }
        }
        self.inner.commit(changes)
    }

    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        self.write_ok(path)?;
        self.inner.append(path, data)
    }

    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        self.read_ok(path)?;
        self.inner.stat(path, follow)
    }

    fn quick(&self) -> bool {
        self.inner.quick()
    }

    /// What the files allow, narrowed by the boundary: a hidden path is neither read nor
    /// written, and a read-only sandbox writes nothing.
    fn access(&self, path: &str) -> Result<crate::file::Access, OpsError> {
        let mut access = self.inner.access(path)?;
        if let Err(e) = self.read_ok(path) {
            access.read = false;
            access.reason = Some(e.to_string());
        }
        if let Err(e) = self.write_ok(path) {
            access.write = false;
            access.reason = Some(e.to_string());
        }
        Ok(access)
    }

    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        self.read_ok(path)?;
        self.inner.read_dir(path)
    }

    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        self.write_ok(path)?;
        self.inner.mkdir(path, parents)
    }

    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        self.write_ok(path)?;
        self.inner.remove(path, recursive)
    }

    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        self.write_ok(from)?;
        self.write_ok(to)?;
        self.inner.rename(from, to, overwrite)
    }

    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        self.inner.realpath(path)
    }

    fn root_display(&self) -> String {
        self.inner.root_display()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryOps;

    fn bounded(mode: SandboxMode, denied: &[&str]) -> BoundedFiles {
        let inner = Arc::new(MemoryOps::new());
        inner.write("a.txt", b"a", Parents::Create).unwrap();
        inner.write("secrets/k", b"k", Parents::Create).unwrap();
        let ws = Path::new("/nonexistent-ws");
        let denied: Vec<PathBuf> = denied.iter().map(|d| ws.join(d)).collect();
        BoundedFiles::new(inner, FileBoundary::new(mode, ws, &denied))
    }

    #[test]
    fn read_only_refuses_every_write_and_keeps_reads() {
        let files = bounded(SandboxMode::ReadOnly, &[]);
        assert_eq!(files.read("a.txt", 10).unwrap().bytes, b"a");
        let refused = |r: Result<(), OpsError>| {
            assert!(matches!(r, Err(OpsError::SandboxRefused { .. })), "{r:?}");
        };
        refused(files.write("b", b"b", Parents::Create).map(|_| ()));
        refused(files.append("a.txt", b"more"));
        refused(files.mkdir("d", Parents::Create));
        refused(files.remove("a.txt", false));
        refused(files.rename("a.txt", "c.txt", Overwrite::No));
        refused(files.commit(&[Change::Write {
            path: "b",
            data: b"b",
            expect: crate::Expect::Anything,
            parents: Parents::Create,
        }]));
        assert!(files.stat("b", Follow::No).is_err(), "nothing was written");
        assert_eq!(files.read("a.txt", 10).unwrap().bytes, b"a");
    }

    #[test]
    fn hidden_paths_are_neither_read_nor_written_nor_moved_away() {
        let files = bounded(SandboxMode::WorkspaceWrite, &["secrets"]);
        files.write("b", b"b", Parents::Create).unwrap();
        for r in [
            files.read("secrets/k", 10).map(|_| ()),
            files.read("./x/../secrets/k", 10).map(|_| ()),
            files
                .write("secrets/new", b"n", Parents::Create)
                .map(|_| ()),
            files.remove(".", true),
            files.rename("secrets", "out", Overwrite::No),
            files.rename("b", "secrets/b", Overwrite::No),
            files.read_dir("secrets").map(|_| ()),
        ] {
            assert!(matches!(r, Err(OpsError::SandboxRefused { .. })), "{r:?}");
        }
        // What holds a hidden path can still be listed and read around it.
        assert!(files.read_dir(".").is_ok());
        assert_eq!(files.read("a.txt", 10).unwrap().bytes, b"a");
    }

    #[test]
    fn full_access_adds_nothing() {
        let files = bounded(SandboxMode::FullAccess, &["secrets"]);
        assert_eq!(files.read("secrets/k", 10).unwrap().bytes, b"k");
        files.write("secrets/n", b"n", Parents::Create).unwrap();
    }
}

//! [`FileSearch`]: searching for an operations backend that lives outside this crate.
//!
//! A backend that can list directories and read files through [`FileOps`] — a remote host
//! over SSH, a container, an object store — gets [`SearchOps`] by wrapping itself in
//! [`FileSearch`]. The walk lists directories with [`FileOps::read_dir`] and the searcher
//! reads files with [`FileOps::read`], so the backend's own confinement applies to every
//! byte; the filter (hidden names, ignore files, exclusions, `.toolshed/`, temporary files),
//! the glob and fuzzy matchers and the line searcher are the same code the built-in backends
//! use, and the search contract (`search_contract!`, with the `contract` feature) holds for it.
//!
//! Two limits differ from [`LocalOps`](crate::LocalOps), which streams from disk in
//! parallel: the walk is sequential, and a file is read whole, so one larger than
//! [`MAX_SEARCH_BUFFER`] is skipped by grep (counted in `skipped_unreadable`); a directory
//! listing is cut at the backend's [`MAX_DIR_ENTRIES`](crate::MAX_DIR_ENTRIES).

use std::path::Path;
use std::sync::Arc;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use super::grep::FileSink;
use super::walk::{Backend, Filter, MakeVisitor, Unreadable, base_chain, step};
use super::{
    FindRequest, FindResult, GlobRequest, GlobResult, GrepRequest, GrepResult, MAX_SEARCH_BUFFER,
    SearchOps, TreeRequest, TreeResult,
};
use crate::error::OpsError;
use crate::file::{
    DirListing, FileContents, FileOps, Follow, Metadata, Overwrite, Parents, Written,
};

/// A [`FileOps`] backend with [`SearchOps`] built on it; see the [module docs](self).
///
/// ```
/// use toolshed_ops::{FileOps, GlobRequest, MemoryOps, Parents, SearchOps, search::FileSearch};
///
/// let ops = FileSearch::new(MemoryOps::new());
/// ops.write("src/a.rs", b"fn a() {}\n", Parents::Create).unwrap();
/// let found = ops.glob(&GlobRequest { patterns: vec!["**/*.rs".into()], ..Default::default() });
/// assert_eq!(found.unwrap().paths, ["src/a.rs"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct FileSearch<F> {
    files: F,
}

impl<F: FileOps + Sync> FileSearch<F> {
    /// Search over `files`.
    pub fn new(files: F) -> Self {
        Self { files }
    }

    /// The wrapped backend.
    pub fn files(&self) -> &F {
        &self.files
    }

    /// The wrapped backend, unwrapped.
    pub fn into_files(self) -> F {
        self.files
    }
}

impl<F: FileOps + Sync> Backend for FileSearch<F> {
    fn walk<'v>(&self, base: &str, filter: &Arc<Filter>, make: MakeVisitor<'_, 'v>) {
        let mut visitor = make();
        // Depth first; a directory is visited when its parent lists it, before what it holds.
        let mut pending = vec![(base.to_string(), base_chain(self, base, filter))];
        while let Some((dir, chain)) = pending.pop() {
            let Ok(listing) = self.files.read_dir(&dir) else {
                continue;
            };
            for entry in listing.entries {
                let key = if dir == "." {
                    entry.name.clone()
                } else {
                    format!("{dir}/{}", entry.name)
                };
                let kind = entry.metadata.kind;
                if let Some(child) = step(
                    self,
                    filter,
                    &chain,
                    base,
                    &key,
                    &entry.name,
                    kind,
                    &mut *visitor,
                ) {
                    pending.push((key, child));
                }
            }
        }
    }

    fn search_file(
        &self,
        fs_rel: &Path,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut FileSink<'_>,
    ) -> Result<(), Unreadable> {
        let key = fs_rel.to_str().ok_or(Unreadable)?;
        let max = u64::try_from(MAX_SEARCH_BUFFER).unwrap_or(u64::MAX);
        let contents = self.files.read(key, max).map_err(|_| Unreadable)?;
        if contents.truncated() {
            return Err(Unreadable);
        }
        // Through a reader, as on disk, so that binary detection sees the same buffers.
        searcher
            .search_reader(matcher, contents.bytes.as_slice(), sink)
            .map_err(|_| Unreadable)
    }
}

impl<F: FileOps + Sync> SearchOps for FileSearch<F> {
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError> {
        super::glob::glob(self, request)
    }

    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError> {
        super::find::find(self, request)
    }

    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError> {
        super::grep::grep(self, request)
    }

    fn tree(&self, request: &TreeRequest) -> Result<TreeResult, OpsError> {
        super::tree::tree(self, request)
    }
}

/// The wrapped backend's files, unchanged.
impl<F: FileOps> FileOps for FileSearch<F> {
    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        self.files.read(path, max_bytes)
    }
    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        self.files.write(path, data, parents)
    }
    fn commit(&self, changes: &[crate::Change<'_>]) -> Result<(), OpsError> {
        self.files.commit(changes)
    }
    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        self.files.append(path, data)
    }
    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        self.files.stat(path, follow)
    }
    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        self.files.read_dir(path)
    }
    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        self.files.mkdir(path, parents)
    }
    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        self.files.remove(path, recursive)
    }
    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        self.files.rename(from, to, overwrite)
    }
    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        self.files.realpath(path)
    }
    fn root_display(&self) -> String {
        self.files.root_display()
    }
}

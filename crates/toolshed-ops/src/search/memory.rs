//! Searching a [`MemoryOps`] workspace: the same filter and searcher as on disk, over its
//! sorted map (where a directory always comes before what it holds).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use super::grep::FileSink;
use super::walk::{Backend, Filter, MakeVisitor, Unreadable, base_chain, step};
use super::{FindRequest, FindResult, GlobRequest, GlobResult, GrepRequest, GrepResult, SearchOps};
use crate::error::OpsError;
use crate::memory::MemoryOps;
use crate::path::split_parent;

impl Backend for MemoryOps {
    fn walk<'v>(&self, base: &str, filter: &Arc<Filter>, make: MakeVisitor<'_, 'v>) {
        let mut chains = HashMap::new();
        chains.insert(base.to_string(), base_chain(self, base, filter));
        let mut visitor = make();
        for (key, kind) in self.entries_under(base) {
            let (parent, name) = split_parent(&key);
            // A parent that is missing here was not admitted: skip what it holds.
            let Some(chain) = chains.get(parent).cloned() else {
                continue;
            };
            if let Some(child) = step(self, filter, &chain, base, &key, name, kind, &mut *visitor) {
                chains.insert(key.clone(), child);
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
        let bytes = self.file_bytes(key).ok_or(Unreadable)?;
        // Through a reader, as on disk, so that binary detection sees the same buffers.
        searcher
            .search_reader(matcher, bytes.as_slice(), sink)
            .map_err(|_| Unreadable)
    }
}

impl SearchOps for MemoryOps {
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError> {
        super::glob::glob(self, request)
    }

    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError> {
        super::find::find(self, request)
    }

    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError> {
        super::grep::grep(self, request)
    }

    fn tree(&self, request: &super::TreeRequest) -> Result<super::TreeResult, OpsError> {
        super::tree::tree(self, request)
    }
}

//! Tree: the files and directories below a base, to a depth.

use std::sync::{Arc, Mutex};

use super::glob::{Bounded, Handover};
use super::pattern::PathGlobs;
use super::walk::{Backend, Entry, Filter, Visitor, require_dir, resolve_base};
use super::{DEFAULT_TREE_ENTRIES, TreeEntry, TreeRequest, TreeResult};
use crate::error::OpsError;

struct TreeVisitor<'a> {
    max_depth: usize,
    found: Handover<'a, TreeEntry>,
}

impl Visitor for TreeVisitor<'_> {
    fn visit(&mut self, entry: &Entry<'_>) {
        let depth = entry.in_base.split('/').count();
        if entry.in_base.is_empty() || depth > self.max_depth {
            return;
        }
        if self
            .found
            .local
            .wants(|last| entry.rel < last.path.as_str())
        {
            self.found.local.insert(TreeEntry {
                path: entry.rel.to_string(),
                kind: entry.kind,
                depth,
            });
        } else {
            self.found.local.drop_one();
        }
    }
}

/// Runs a tree request on a backend.
pub(crate) fn tree<B: Backend>(ops: &B, request: &TreeRequest) -> Result<TreeResult, OpsError> {
    let (base, kind) = resolve_base(ops, &request.base)?;
    require_dir(kind, &request.base)?;
    let cap = if request.max_entries == 0 {
        DEFAULT_TREE_ENTRIES
    } else {
        request.max_entries
    };
    let max_depth = request.max_depth.max(1);
    let filter = Arc::new(Filter {
        cancel: request.cancel.clone(),
        max_depth: Some(max_depth),
        include_hidden: request.include_hidden,
        respect_gitignore: request.respect_gitignore,
        globs: PathGlobs::compile(&[], &[])?,
    });
    let shared = Mutex::new(Bounded::new(cap));
    let make = || -> Box<dyn Visitor + '_> {
        Box::new(TreeVisitor {
            max_depth,
            found: Handover {
                local: Bounded::new(cap),
                shared: &shared,
            },
        })
    };
    ops.walk(&base, &filter, &make);
    let (entries, truncated) = shared
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish();
    Ok(TreeResult {
        base,
        entries,
        truncated,
    })
}

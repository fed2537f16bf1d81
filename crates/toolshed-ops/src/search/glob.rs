//! Glob: the files below a base that match `.gitignore`-style patterns.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use super::pattern::PathGlobs;
use super::walk::{Backend, Entry, Filter, Visitor, require_dir, resolve_base};
use super::{DEFAULT_GLOB_RESULTS, GlobRequest, GlobResult};
use crate::error::OpsError;
use crate::file::FileKind;

/// The smallest `cap` items seen, and whether any were dropped. Each walking thread keeps
/// its own; merged, they give the smallest `cap` overall, whatever the threads' timing.
#[derive(Debug)]
pub(crate) struct Bounded<T: Ord> {
    cap: usize,
    items: BTreeSet<T>,
    dropped: bool,
}

impl<T: Ord> Bounded<T> {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            items: BTreeSet::new(),
            dropped: false,
        }
    }

    /// Whether `item` would be kept (saves building it when it would not).
    pub(crate) fn wants(&self, beats: impl FnOnce(&T) -> bool) -> bool {
        self.items.len() < self.cap || self.items.last().is_some_and(beats)
    }

    pub(crate) fn insert(&mut self, item: T) {
        self.items.insert(item);
        if self.items.len() > self.cap {
            self.items.pop_last();
            self.dropped = true;
        }
    }

    /// Marks that an item was left out without being built.
    pub(crate) fn drop_one(&mut self) {
        self.dropped = true;
    }

    pub(crate) fn merge(&mut self, other: &mut Self) {
        self.dropped |= other.dropped;
        for item in std::mem::take(&mut other.items) {
            self.insert(item);
        }
    }

    pub(crate) fn finish(self) -> (Vec<T>, bool) {
        (self.items.into_iter().collect(), self.dropped)
    }
}

/// Takes a visitor's results when it is dropped.
pub(crate) struct Handover<'s, T: Ord> {
    pub(crate) local: Bounded<T>,
    pub(crate) shared: &'s Mutex<Bounded<T>>,
}

impl<T: Ord> Drop for Handover<'_, T> {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.merge(&mut self.local);
    }
}

struct GlobVisitor<'a> {
    filter: &'a Filter,
    found: Handover<'a, String>,
}

impl Visitor for GlobVisitor<'_> {
    fn visit(&mut self, entry: &Entry<'_>) {
        if entry.kind != FileKind::File || !self.filter.globs.includes(entry.in_base) {
            return;
        }
        if self.found.local.wants(|last| entry.rel < last.as_str()) {
            self.found.local.insert(entry.rel.to_string());
        } else {
            self.found.local.drop_one();
        }
    }
}

/// Runs a glob request on a backend.
pub(crate) fn glob<B: Backend>(ops: &B, request: &GlobRequest) -> Result<GlobResult, OpsError> {
    let globs = PathGlobs::compile(&request.patterns, &[])?;
    let (base, kind) = resolve_base(ops, &request.base)?;
    require_dir(kind, &request.base)?;
    let cap = if request.max_results == 0 {
        DEFAULT_GLOB_RESULTS
    } else {
        request.max_results
    };
    let filter = Arc::new(Filter {
        cancel: request.cancel.clone(),
        max_depth: None,
        include_hidden: request.include_hidden,
        respect_gitignore: request.respect_gitignore,
        globs,
    });
    let shared = Mutex::new(Bounded::new(cap));
    let make = || -> Box<dyn Visitor + '_> {
        Box::new(GlobVisitor {
            filter: &filter,
            found: Handover {
                local: Bounded::new(cap),
                shared: &shared,
            },
        })
    };
    ops.walk(&base, &filter, &make);
    let (paths, truncated) = shared
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish();
    Ok(GlobResult { paths, truncated })
}

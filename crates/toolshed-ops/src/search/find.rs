//! Find: paths below a base ranked against a fuzzy query.

use std::cmp::Reverse;
use std::sync::{Arc, Mutex};

use super::fuzzy::FuzzyQuery;
use super::glob::{Bounded, Handover};
use super::pattern::PathGlobs;
use super::walk::{Backend, Entry, Filter, Visitor, require_dir, resolve_base};
use super::{DEFAULT_FIND_RESULTS, FindKind, FindMatch, FindRequest, FindResult};
use crate::error::OpsError;
use crate::file::FileKind;

/// Best first: higher score, then shorter path, then smaller path.
type Ranked = (Reverse<i64>, usize, String, FileKind);

struct FindVisitor<'a> {
    kind: FindKind,
    query: FuzzyQuery,
    found: Handover<'a, Ranked>,
}

impl Visitor for FindVisitor<'_> {
    fn visit(&mut self, entry: &Entry<'_>) {
        let wanted = match self.kind {
            FindKind::Files => entry.kind == FileKind::File,
            FindKind::Dirs => entry.kind == FileKind::Dir,
            FindKind::Both => true,
        };
        if !wanted {
            return;
        }
        let Some(score) = self.query.score(entry.in_base) else {
            return;
        };
        let key = (Reverse(score), entry.rel.len());
        if self
            .found
            .local
            .wants(|last| (key.0, key.1, entry.rel) < (last.0, last.1, last.2.as_str()))
        {
            self.found
                .local
                .insert((key.0, key.1, entry.rel.to_string(), entry.kind));
        } else {
            self.found.local.drop_one();
        }
    }
}

/// Runs a find request on a backend.
pub(crate) fn find<B: Backend>(ops: &B, request: &FindRequest) -> Result<FindResult, OpsError> {
    let query = FuzzyQuery::new(&request.query)?;
    let (base, kind) = resolve_base(ops, &request.base)?;
    require_dir(kind, &request.base)?;
    let cap = if request.max_results == 0 {
        DEFAULT_FIND_RESULTS
    } else {
        request.max_results
    };
    let filter = Arc::new(Filter {
        cancel: request.cancel.clone(),
        max_depth: None,
        include_hidden: request.include_hidden,
        respect_gitignore: request.respect_gitignore,
        globs: PathGlobs::default(),
    });
    let shared = Mutex::new(Bounded::new(cap));
    let make = || -> Box<dyn Visitor + '_> {
        Box::new(FindVisitor {
            kind: request.kind,
            query: query.clone(),
            found: Handover {
                local: Bounded::new(cap),
                shared: &shared,
            },
        })
    };
    ops.walk(&base, &filter, &make);
    let (ranked, truncated) = shared
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish();
    Ok(FindResult {
        matches: ranked
            .into_iter()
            .map(|(Reverse(score), _, path, kind)| FindMatch { path, kind, score })
            .collect(),
        truncated,
    })
}

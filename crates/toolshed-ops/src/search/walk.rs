//! What a search walk lets through, shared by every backend so that they agree.
//!
//! A backend lists entries below the search base (in parallel or not); this module decides
//! which of them exist for a search: the rules on hidden names, ignore files, exclusions,
//! the reserved directory and temporary files. Ignore files are read through the backend's
//! own jailed [`FileOps::read`], never by path, so a hostile `.gitignore` (a FIFO, a link
//! out, a huge file) can neither hang a search nor read outside the workspace.

use std::path::Path;
use std::sync::Arc;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::MAX_IGNORE_FILE_BYTES;
use super::grep::FileSink;
use super::pattern::PathGlobs;
use crate::TEMP_PREFIX;
use crate::error::OpsError;
use crate::file::{FileKind, FileOps, Follow};
use crate::path::RESERVED_DIR;

/// The ignore rules in force in one directory: its own and its ancestors', nearest first
/// (a nearer file overrides a farther one, as in git).
#[derive(Debug, Default)]
pub(crate) struct IgnoreChain {
    rules: Vec<Arc<Gitignore>>,
}

impl IgnoreChain {
    /// The chain of a child directory with `own` rules.
    pub(crate) fn child(self: &Arc<Self>, own: Option<Gitignore>) -> Arc<Self> {
        match own {
            None => Arc::clone(self),
            Some(rules) => {
                let mut chain = Vec::with_capacity(self.rules.len() + 1);
                chain.push(Arc::new(rules));
                chain.extend(self.rules.iter().cloned());
                Arc::new(Self { rules: chain })
            }
        }
    }

    fn matched(&self, rel: &str, is_dir: bool) -> Match<()> {
        for rules in &self.rules {
            match rules.matched(rel, is_dir) {
                Match::None => continue,
                Match::Ignore(_) => return Match::Ignore(()),
                Match::Whitelist(_) => return Match::Whitelist(()),
            }
        }
        Match::None
    }
}

/// The rules of one walk.
#[derive(Debug)]
pub(crate) struct Filter {
    /// Whether names starting with `.` pass.
    pub(crate) include_hidden: bool,
    /// Whether ignore files apply.
    pub(crate) respect_gitignore: bool,
    /// Include and exclude globs, relative to the base.
    pub(crate) globs: PathGlobs,
    /// Set when the caller stops the search: nothing more is admitted.
    pub(crate) cancel: super::Cancel,
    /// Entries deeper below the base than this are not admitted (so not descended into).
    pub(crate) max_depth: Option<usize>,
}

impl Filter {
    /// Whether an entry below the base is walked (a directory: descended into). `rel` is
    /// workspace-relative, `in_base` relative to the base, `chain` the parent's rules.
    pub(crate) fn admits(
        &self,
        chain: &IgnoreChain,
        rel: &str,
        in_base: &str,
        name: &str,
        is_dir: bool,
    ) -> bool {
        if self.cancel.is_set() {
            return false;
        }
        if self
            .max_depth
            .is_some_and(|d| in_base.split('/').count() > d)
        {
            return false;
        }
        if name.starts_with(TEMP_PREFIX) || rel.split('/').next() == Some(RESERVED_DIR) {
            return false;
        }
        let matched = if self.respect_gitignore {
            chain.matched(rel, is_dir)
        } else {
            Match::None
        };
        if matched.is_ignore() {
            return false;
        }
        // A whitelisting rule (`!.github`) makes a hidden name visible, as in ripgrep.
        if !self.include_hidden && !matched.is_whitelist() && name.starts_with('.') {
            return false;
        }
        !self.globs.excludes(in_base, is_dir)
    }
}

/// One entry a walk lets through.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    /// Workspace-relative, with `/`.
    pub(crate) rel: &'a str,
    /// Relative to the base.
    pub(crate) in_base: &'a str,
    /// Workspace-relative, as the file system spells it (for opening).
    pub(crate) fs_rel: &'a Path,
    /// `File` or `Dir`.
    pub(crate) kind: FileKind,
}

/// Receives the entries of a walk; one per walking thread. Visitors hand their results
/// over when dropped.
pub(crate) trait Visitor: Send {
    /// One admitted entry.
    fn visit(&mut self, entry: &Entry<'_>);
}

/// Makes one visitor per walking thread.
pub(crate) type MakeVisitor<'m, 'v> = &'m (dyn Fn() -> Box<dyn Visitor + 'v> + Sync);

/// Why a file could not be searched.
#[derive(Debug)]
pub(crate) struct Unreadable;

/// What a search backend provides beyond [`FileOps`]: a walk and a way to search one file.
pub(crate) trait Backend: FileOps + Sync {
    /// Calls visitors with every entry below the directory `base` (a resolved key) that
    /// `filter` admits, parents before their children. Unreadable directories are skipped.
    fn walk<'v>(&self, base: &str, filter: &Arc<Filter>, make: MakeVisitor<'_, 'v>);

    /// Searches the regular file at `fs_rel` (found by a walk or resolved from the base).
    fn search_file(
        &self,
        fs_rel: &Path,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut FileSink<'_>,
    ) -> Result<(), Unreadable>;

    /// The `fs_rel` of a resolved key (they differ where names are not UTF-8).
    fn fs_rel<'a>(&self, key: &'a str) -> std::borrow::Cow<'a, Path> {
        std::borrow::Cow::Borrowed(Path::new(key))
    }
}

/// Resolves the search base through the jail: its workspace-relative key and its kind.
pub(crate) fn resolve_base(ops: &dyn FileOps, base: &str) -> Result<(String, FileKind), OpsError> {
    let base = if base.trim().is_empty() { "." } else { base };
    let key = ops.realpath(base)?;
    let kind = ops.stat(&key, Follow::No)?.kind;
    Ok((key, kind))
}

/// Refuses a base that is not a directory.
pub(crate) fn require_dir(kind: FileKind, base: &str) -> Result<(), OpsError> {
    if kind == FileKind::Dir {
        Ok(())
    } else {
        Err(OpsError::NotADirectory {
            path: crate::path::shown(base),
        })
    }
}

/// The part of `rel` below `base`.
pub(crate) fn in_base<'a>(rel: &'a str, base: &str) -> &'a str {
    if base == "." {
        rel
    } else {
        rel.get(base.len() + 1..).unwrap_or(rel)
    }
}

/// The ignore rules of directory `dir` (a key, `.` for the root), read through `ops`.
pub(crate) fn load_rules(ops: &dyn FileOps, dir: &str) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    let mut found = false;
    // `.ignore` after `.gitignore`, so its lines win where both speak.
    for name in [".gitignore", ".ignore"] {
        let path = if dir == "." {
            name.to_string()
        } else {
            format!("{dir}/{name}")
        };
        let Ok(contents) = ops.read(&path, MAX_IGNORE_FILE_BYTES) else {
            continue;
        };
        if contents.truncated() {
            continue;
        }
        found = true;
        let text = String::from_utf8_lossy(&contents.bytes);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        for line in text.lines() {
            // A malformed line is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
    }
    if !found {
        return None;
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}

/// One step of a sequential walk (the in-memory and [`FileSearch`](super::FileSearch)
/// backends): the entry `key` (named `name`, of `kind`) whose parent's rules are `chain` is
/// visited when `filter` admits it; for an admitted directory, returns the rules its own
/// entries are judged by.
#[allow(clippy::too_many_arguments)]
pub(crate) fn step(
    ops: &dyn FileOps,
    filter: &Filter,
    chain: &Arc<IgnoreChain>,
    base: &str,
    key: &str,
    name: &str,
    kind: FileKind,
    visitor: &mut dyn Visitor,
) -> Option<Arc<IgnoreChain>> {
    if !matches!(kind, FileKind::File | FileKind::Dir) {
        return None;
    }
    let below = in_base(key, base);
    if !filter.admits(chain, key, below, name, kind == FileKind::Dir) {
        return None;
    }
    let child = (kind == FileKind::Dir).then(|| {
        let own = if filter.respect_gitignore {
            load_rules(ops, key)
        } else {
            None
        };
        chain.child(own)
    });
    visitor.visit(&Entry {
        rel: key,
        in_base: below,
        fs_rel: Path::new(key),
        kind,
    });
    child
}

/// The rules in force in `base`: those of the root and of every directory down to it.
pub(crate) fn base_chain(ops: &dyn FileOps, base: &str, filter: &Filter) -> Arc<IgnoreChain> {
    let mut chain = Arc::new(IgnoreChain::default());
    if !filter.respect_gitignore {
        return chain;
    }
    chain = chain.child(load_rules(ops, "."));
    if base != "." {
        let mut dir = String::new();
        for part in base.split('/') {
            if !dir.is_empty() {
                dir.push('/');
            }
            dir.push_str(part);
            chain = chain.child(load_rules(ops, &dir));
        }
    }
    chain
}

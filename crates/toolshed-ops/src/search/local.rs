//! Searching the real file system: ripgrep's parallel walker, with every one of its own
//! filters turned off and ours in their place.
//!
//! The walker is used only to list directories. It reads no ignore file itself — with
//! `require_git` off and parents on, it would read `.gitignore` files above the workspace,
//! and it opens them by path, where a FIFO blocks and a link leads anywhere. Our
//! [`Filter`] decides instead, from ignore files read through the jail; the decision is
//! made in `filter_entry`, before a directory is read, so an ignored `node_modules/` costs
//! nothing. File contents are opened with [`LocalOps::open_read`], never by path.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, RwLock};

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use ignore::{DirEntry, WalkBuilder, WalkState};

use super::grep::FileSink;
use super::walk::{
    Backend, Entry, Filter, IgnoreChain, MakeVisitor, Unreadable, base_chain, in_base, load_rules,
};
use super::{FindRequest, FindResult, GlobRequest, GlobResult, GrepRequest, GrepResult, SearchOps};
use crate::error::OpsError;
use crate::file::FileKind;
use crate::local::LocalOps;
use crate::path::{from_fs, to_fs};

/// The ignore rules of each directory admitted so far, by workspace-relative path bytes
/// (hashing bytes is much cheaper than hashing a `Path`, which goes by components).
struct Chains {
    respect: bool,
    by_dir: RwLock<HashMap<Vec<u8>, Arc<IgnoreChain>>>,
}

impl Chains {
    fn of(&self, dir: &[u8]) -> Option<Arc<IgnoreChain>> {
        if !self.respect {
            return Some(Arc::default());
        }
        let map = self.by_dir.read().unwrap_or_else(|p| p.into_inner());
        map.get(dir).cloned()
    }

    fn insert(&self, dir: &[u8], chain: Arc<IgnoreChain>) {
        if self.respect {
            let mut map = self.by_dir.write().unwrap_or_else(|p| p.into_inner());
            map.insert(dir.to_vec(), chain);
        }
    }
}

/// What both the entry filter and the visitors need.
struct Walk {
    /// The workspace root with a trailing `/`, as bytes.
    root: Vec<u8>,
    base: String,
    filter: Arc<Filter>,
    chains: Chains,
}

/// An entry as the search sees it.
struct Seen<'a> {
    /// Workspace-relative bytes.
    fs_rel: &'a [u8],
    rel: Cow<'a, str>,
    kind: FileKind,
}

impl Seen<'_> {
    /// The workspace-relative bytes of the parent directory (empty for the root).
    fn parent(&self) -> &[u8] {
        match self.fs_rel.iter().rposition(|b| *b == b'/') {
            Some(i) => &self.fs_rel[..i],
            None => b"",
        }
    }
}

impl Walk {
    /// The workspace-relative view of a walker entry, if it is a file or directory below
    /// the base. Links and special files are never part of a search.
    fn see<'a>(&self, dent: &'a DirEntry) -> Option<Seen<'a>> {
        if dent.depth() == 0 {
            return None;
        }
        let file_type = dent.file_type()?;
        let kind = if file_type.is_dir() {
            FileKind::Dir
        } else if file_type.is_file() {
            FileKind::File
        } else {
            return None;
        };
        let fs_rel = dent
            .path()
            .as_os_str()
            .as_bytes()
            .strip_prefix(self.root.as_slice())?;
        Some(Seen {
            fs_rel,
            rel: from_fs(fs_rel),
            kind,
        })
    }

    fn admits(&self, dent: &DirEntry) -> bool {
        let Some(seen) = self.see(dent) else {
            return false;
        };
        let Some(chain) = self.chains.of(seen.parent()) else {
            return false;
        };
        let name = from_fs(dent.file_name().as_bytes());
        self.filter.admits(
            &chain,
            &seen.rel,
            in_base(&seen.rel, &self.base),
            &name,
            seen.kind == FileKind::Dir,
        )
    }
}

impl Backend for LocalOps {
    fn walk<'v>(&self, base: &str, filter: &Arc<Filter>, make: MakeVisitor<'_, 'v>) {
        let fs_base = to_fs(base);
        let walk_root = if base == "." {
            self.root().to_path_buf()
        } else {
            self.root().join(&fs_base)
        };
        let mut root = self.root().as_os_str().as_bytes().to_vec();
        if !root.ends_with(b"/") {
            root.push(b'/');
        }
        let chains = Chains {
            respect: filter.respect_gitignore,
            by_dir: RwLock::new(HashMap::new()),
        };
        let base_key: &[u8] = if base == "." { b"" } else { fs_base.as_bytes() };
        chains.insert(base_key, base_chain(self, base, filter));
        let walk = Arc::new(Walk {
            root,
            base: base.to_string(),
            filter: Arc::clone(filter),
            chains,
        });
        let admit = Arc::clone(&walk);
        WalkBuilder::new(&walk_root)
            .standard_filters(false)
            .hidden(false)
            .parents(false)
            .ignore(false)
            .git_ignore(false)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |dent| admit.admits(dent))
            .build_parallel()
            .run(|| {
                let walk = Arc::clone(&walk);
                let mut visitor = make();
                Box::new(move |result| {
                    let Ok(dent) = result else {
                        return WalkState::Continue;
                    };
                    let Some(seen) = walk.see(&dent) else {
                        return WalkState::Continue;
                    };
                    if seen.kind == FileKind::Dir && walk.filter.respect_gitignore {
                        // Children are read only after this returns, so their filter finds
                        // this directory's rules in place.
                        let chain = walk.chains.of(seen.parent()).unwrap_or_default();
                        let own = load_rules(self, &seen.rel);
                        walk.chains.insert(seen.fs_rel, chain.child(own));
                    }
                    visitor.visit(&Entry {
                        rel: &seen.rel,
                        in_base: in_base(&seen.rel, &walk.base),
                        fs_rel: Path::new(OsStr::from_bytes(seen.fs_rel)),
                        kind: seen.kind,
                    });
                    WalkState::Continue
                })
            });
    }

    fn search_file(
        &self,
        fs_rel: &Path,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut FileSink<'_>,
    ) -> Result<(), Unreadable> {
        let file = self.open_read(fs_rel).map_err(|_| Unreadable)?;
        searcher
            .search_file(matcher, &file, sink)
            .map_err(|_| Unreadable)
    }

    fn fs_rel<'a>(&self, key: &'a str) -> Cow<'a, Path> {
        match to_fs(key) {
            Cow::Borrowed(name) => Cow::Borrowed(Path::new(name)),
            Cow::Owned(name) => Cow::Owned(name.into()),
        }
    }
}

impl SearchOps for LocalOps {
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "search.glob").entered();
        super::glob::glob(self, request)
    }

    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "search.find").entered();
        super::find::find(self, request)
    }

    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "search.grep").entered();
        super::grep::grep(self, request)
    }

    fn tree(&self, request: &super::TreeRequest) -> Result<super::TreeResult, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "search.tree").entered();
        super::tree::tree(self, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walked_paths_open_only_as_plain_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::create_dir_all(root.join(".toolshed")).unwrap();
        std::fs::write(root.join("real/f.txt"), "inside").unwrap();
        std::fs::write(root.join(".toolshed/db"), "secret").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "outside").unwrap();
        // A directory swapped for a link after the walk saw it, and a file for a link.
        std::os::unix::fs::symlink("real", root.join("d")).unwrap();
        std::os::unix::fs::symlink("../outside.txt", root.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(".toolshed", root.join("state")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let ops = LocalOps::new(&root).unwrap();
        let open = |p: &str| ops.open_read(Path::new(p));
        assert!(open("real/f.txt").is_ok());
        for link in ["d/f.txt", "out.txt", "state/db"] {
            assert!(
                matches!(open(link), Err(OpsError::Escape { .. })),
                "{link}: {:?}",
                open(link)
            );
        }
        assert!(matches!(
            open(".toolshed/db"),
            Err(OpsError::Reserved { .. })
        ));
        for bad in [
            "../outside.txt",
            "real/../real/f.txt",
            "./real/f.txt",
            "/etc/passwd",
            "",
        ] {
            assert!(
                matches!(open(bad), Err(OpsError::InvalidPath { .. })),
                "{bad}: {:?}",
                open(bad)
            );
        }
        assert!(matches!(open("pipe"), Err(OpsError::SpecialFile { .. })));
        assert!(matches!(open("real"), Err(OpsError::SpecialFile { .. })));
    }
}

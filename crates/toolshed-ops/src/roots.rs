//! A workspace of several roots (`--workspace A --workspace B`): one [`Ops`] per root,
//! each with its own boundary, put behind one [`Ops`] that sends every operation to the
//! root its path names.
//!
//! A path names a root by its name — `@lib/src/main.rs`, `@lib` for the root itself — or
//! by an absolute path inside it; any other path is in the first root, the primary one, as
//! with a single root. What comes back (a real path, a glob's or a search's paths) is
//! spelled the same way, so it can be handed back as it is. Nothing here widens a root's
//! boundary: each root's own operations check every path, and an operation that would
//! span roots (a rename, a commit) is refused.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::file::{
    Access, Change, DirListing, FileContents, FileOps, Follow, Metadata, Overwrite, Parents,
    Written,
};
use crate::process::{Process, ProcessOps, SpawnRequest};
use crate::search::{
    FindRequest, FindResult, GlobRequest, GlobResult, GrepRequest, GrepResult, SearchOps,
    TreeRequest, TreeResult,
};
use crate::{Ops, OpsError};

/// The most roots one workspace may have.
pub const MAX_ROOTS: usize = 16;

/// One root of a workspace.
#[derive(Clone)]
pub struct Root {
    /// Its name, as `@name/` paths spell it: letters, digits, `-`, `_` and `.`.
    pub name: String,
    /// The directory (canonical).
    pub path: PathBuf,
    /// Its operations, bounded to it.
    pub ops: Ops,
}

/// Whether `name` can name a root: 1 to 64 letters, digits, `-`, `_` or `.`, not only dots.
pub fn is_root_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.chars().all(|c| c == '.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The operations of a workspace of `roots`, the first the primary one. One root gives
/// back its own operations unchanged.
pub fn several(roots: Vec<Root>) -> Result<Ops, OpsError> {
    if roots.len() > MAX_ROOTS {
        return Err(OpsError::InvalidPath {
            path: format!("{} roots", roots.len()),
            reason: format!("a workspace has at most {MAX_ROOTS} roots"),
        });
    }
    for (i, root) in roots.iter().enumerate() {
        if !is_root_name(&root.name) {
            return Err(OpsError::InvalidPath {
                path: root.path.display().to_string(),
                reason: format!(
                    "`{}` cannot name a root: use letters, digits, `-`, `_` and `.`",
                    root.name
                ),
            });
        }
        if roots[..i].iter().any(|r| r.name == root.name) {
            return Err(OpsError::InvalidPath {
                path: root.path.display().to_string(),
                reason: format!("two roots are named `{}`: name one otherwise", root.name),
            });
        }
    }
    let mut roots = roots;
    if roots.len() == 1 {
        return Ok(roots.remove(0).ops);
    }
    let table = Arc::new(Table { roots });
    Ok(Ops {
        files: Arc::new(RootedFiles(table.clone())),
        search: Arc::new(RootedSearch(table.clone())),
        process: Arc::new(RootedProcess(table)),
    })
}

struct Table {
    roots: Vec<Root>,
}

impl Table {
    /// The root `path` names, and the path within it.
    fn route<'a>(&self, path: &'a str) -> (usize, Cow<'a, str>) {
        if let Some(named) = path.strip_prefix('@') {
            let (name, rest) = named.split_once('/').unwrap_or((named, ""));
            if let Some(i) = self.roots.iter().position(|r| r.name == name) {
                let rest = rest.trim_start_matches('/');
                return (i, Cow::Borrowed(if rest.is_empty() { "." } else { rest }));
            }
        }
        if path.starts_with('/') {
            // The root that holds it, the deepest first (a root may lie inside another).
            let mut best: Option<(usize, usize)> = None;
            for (i, root) in self.roots.iter().enumerate() {
                if Path::new(path).starts_with(&root.path) {
                    let depth = root.path.components().count();
                    if best.is_none_or(|(_, d)| depth > d) {
                        best = Some((i, depth));
                    }
                }
            }
            if let Some((i, _)) = best {
                return (i, Cow::Borrowed(path));
            }
        }
        (0, Cow::Borrowed(path))
    }

    /// `path`, relative to root `i`, as a path naming that root.
    fn label(&self, i: usize, path: &str) -> String {
        if i == 0 {
            return path.to_string();
        }
        let name = &self.roots[i].name;
        if path == "." || path.is_empty() {
            format!("@{name}")
        } else {
            format!("@{name}/{path}")
        }
    }

    fn files(&self, i: usize) -> &dyn FileOps {
        self.roots[i].ops.files.as_ref()
    }

    /// The one root every path of an operation is in, and the paths within it.
    fn same_root<'a>(&self, paths: &[&'a str]) -> Result<(usize, Vec<Cow<'a, str>>), OpsError> {
        let mut root: Option<usize> = None;
        let mut within = Vec::with_capacity(paths.len());
        for path in paths {
            let (i, inner) = self.route(path);
            if let Some(first) = root
                && first != i
            {
                return Err(OpsError::InvalidPath {
                    path: (*path).to_string(),
                    reason: format!(
                        "it is in root `{}`, and the others of this operation are in `{}`: one operation changes one root; make one per root",
                        self.roots[i].name, self.roots[first].name
                    ),
                });
            }
            root = Some(i);
            within.push(inner);
        }
        Ok((root.unwrap_or_default(), within))
    }
}

struct RootedFiles(Arc<Table>);

impl FileOps for RootedFiles {
    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        let (i, inner) = self.0.route(path);
        let mut contents = self.0.files(i).read(&inner, max_bytes)?;
        contents.real_path = contents.real_path.map(|p| self.0.label(i, &p));
        Ok(contents)
    }

    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).write(&inner, data, parents)
    }

    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError> {
        let mut paths = Vec::with_capacity(changes.len() + 1);
        for change in changes {
            match change {
                Change::Write { path, .. } | Change::Remove { path, .. } => paths.push(*path),
                Change::Move { from, to, .. } => paths.extend([*from, *to]),
            }
        }
        let (i, within) = self.0.same_root(&paths)?;
        let mut within = within.iter();
        let mut next = || within.next().map(|p| p.as_ref()).unwrap_or(".");
        let routed: Vec<Change<'_>> = changes
            .iter()
            .map(|change| match *change {
                Change::Write {
                    data,
                    expect,
                    parents,
                    ..
                } => Change::Write {
                    path: next(),
                    data,
                    expect,
                    parents,
                },
                Change::Remove { expect, .. } => Change::Remove {
                    path: next(),
                    expect,
                },
                Change::Move { data, expect, .. } => {
                    let from = next();
                    Change::Move {
                        from,
                        to: next(),
                        data,
                        expect,
                    }
                }
            })
            .collect();
        self.0.files(i).commit(&routed)
    }

    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).append(&inner, data)
    }

    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).stat(&inner, follow)
    }

    fn access(&self, path: &str) -> Result<Access, OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).access(&inner)
    }

    fn quick(&self) -> bool {
        self.0.roots.iter().all(|r| r.ops.files.quick())
    }

    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).read_dir(&inner)
    }

    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).mkdir(&inner, parents)
    }

    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).remove(&inner, recursive)
    }

    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        let (i, within) = self.0.same_root(&[from, to])?;
        self.0.files(i).rename(&within[0], &within[1], overwrite)
    }

    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        let (i, inner) = self.0.route(path);
        let real = self.0.files(i).realpath(&inner)?;
        Ok(self.0.label(i, &real))
    }

    fn root_display(&self) -> String {
        // The primary root: callers take it as the workspace's path.
        self.0.files(0).root_display()
    }

    fn further_roots(&self) -> Vec<(String, String)> {
        self.0.roots[1..]
            .iter()
            .map(|root| (root.name.clone(), root.path.display().to_string()))
            .collect()
    }

    fn resolve(&self, path: &str) -> Option<String> {
        let (i, inner) = self.0.route(path);
        self.0.files(i).resolve(&inner).map(|p| self.0.label(i, &p))
    }
}

struct RootedSearch(Arc<Table>);

impl RootedSearch {
    fn search(&self, base: &str) -> (usize, String, &dyn SearchOps) {
        let (i, inner) = self.0.route(base);
        (i, inner.into_owned(), self.0.roots[i].ops.search.as_ref())
    }
}

impl SearchOps for RootedSearch {
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError> {
        let (i, base, search) = self.search(&request.base);
        let mut result = search.glob(&GlobRequest {
            base,
            ..request.clone()
        })?;
        for path in &mut result.paths {
            *path = self.0.label(i, path);
        }
        Ok(result)
    }

    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError> {
        let (i, base, search) = self.search(&request.base);
        let mut result = search.find(&FindRequest {
            base,
            ..request.clone()
        })?;
        for found in &mut result.matches {
            found.path = self.0.label(i, &found.path);
        }
        Ok(result)
    }

    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError> {
        let (i, base, search) = self.search(&request.base);
        let mut result = search.grep(&GrepRequest {
            base,
            ..request.clone()
        })?;
        for file in &mut result.files {
            file.path = self.0.label(i, &file.path);
        }
        Ok(result)
    }

    fn tree(&self, request: &TreeRequest) -> Result<TreeResult, OpsError> {
        let (i, base, search) = self.search(&request.base);
        let mut result = search.tree(&TreeRequest {
            base,
            ..request.clone()
        })?;
        result.base = self.0.label(i, &result.base);
        for entry in &mut result.entries {
            entry.path = self.0.label(i, &entry.path);
        }
        Ok(result)
    }
}

struct RootedProcess(Arc<Table>);

impl ProcessOps for RootedProcess {
    fn spawn(&self, request: &SpawnRequest) -> Result<Process, OpsError> {
        let (i, workdir) = self.0.route(&request.workdir);
        let process = &self.0.roots[i].ops.process;
        if i == 0 && matches!(workdir, Cow::Borrowed(w) if w == request.workdir) {
            return process.spawn(request);
        }
        process.spawn(&SpawnRequest {
            workdir: workdir.into_owned(),
            ..request.clone()
        })
    }

    fn kill_all(&self) {
        for root in &self.0.roots {
            root.ops.process.kill_all();
        }
    }

    fn sandbox(
        &self,
        mode: Option<crate::sandbox::SandboxMode>,
    ) -> Result<Option<crate::sandbox::Enforcement>, OpsError> {
        self.0.roots[0].ops.process.sandbox(mode)
    }

    fn check_sandbox(&self) -> Option<Result<crate::sandbox::Enforcement, OpsError>> {
        self.0.roots[0].ops.process.check_sandbox()
    }

    fn shell(&self) -> &'static str {
        self.0.roots[0].ops.process.shell()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn memory_root(name: &str, path: &str) -> Root {
        let memory = Arc::new(crate::MemoryOps::new());
        Root {
            name: name.into(),
            path: PathBuf::from(path),
            ops: Ops {
                files: memory.clone(),
                search: memory.clone(),
                process: memory,
            },
        }
    }

    #[test]
    fn paths_name_their_root_by_name_or_by_place_and_answers_name_it_back() {
        let ops = several(vec![
            memory_root("app", "/w/app"),
            memory_root("lib", "/w/lib"),
        ])
        .unwrap();
        ops.files
            .write("a.txt", b"in app", Parents::Create)
            .unwrap();
        ops.files
            .write("@lib/b.txt", b"in lib", Parents::Create)
            .unwrap();
        assert_eq!(ops.files.read("@lib/b.txt", 100).unwrap().bytes, b"in lib");
        assert_eq!(ops.files.read("@app/a.txt", 100).unwrap().bytes, b"in app");
        assert!(
            ops.files.read("b.txt", 100).is_err(),
            "b.txt is in lib, not app"
        );
        assert_eq!(ops.files.realpath("@lib/b.txt").unwrap(), "@lib/b.txt");
        assert_eq!(ops.files.realpath("@lib").unwrap(), "@lib");
        // The workspace's path is the primary root's; the others are listed apart.
        assert_eq!(
            ops.files.root_display(),
            memory_root("x", "/").ops.files.root_display()
        );
        assert_eq!(
            ops.files.further_roots(),
            vec![("lib".to_string(), "/w/lib".to_string())]
        );
        let found = ops
            .search
            .glob(&GlobRequest {
                patterns: vec!["*.txt".into()],
                base: "@lib".into(),
                ..GlobRequest::default()
            })
            .unwrap();
        assert_eq!(found.paths, vec!["@lib/b.txt".to_string()]);
        // One operation changes one root.
        let err = ops
            .files
            .rename("a.txt", "@lib/a.txt", Overwrite::No)
            .unwrap_err();
        assert!(
            err.to_string().contains("one operation changes one root"),
            "{err}"
        );
        // An unknown name is an ordinary path of the primary root.
        assert!(ops.files.read("@nope/b.txt", 100).is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(is_root_name("lib") && is_root_name("my.lib-2_x"));
        assert!(!is_root_name("") && !is_root_name("..") && !is_root_name("a/b"));
        assert!(several(vec![memory_root("a", "/a"), memory_root("a", "/b")]).is_err());
        assert!(several(vec![memory_root("a", "/a"), memory_root("b c", "/b")]).is_err());
    }
}

//! `MemoryOps`: an in-memory workspace for tests.
//!
//! It resolves paths the way `openat2(RESOLVE_BENEATH)` does — `..` may not climb above the
//! root, absolute symbolic links and links pointing out are refused — and passes the same
//! contract suite (`contract`, with the `contract` feature) as
//! [`LocalOps`](crate::LocalOps), which is what makes tool tests on it trustworthy.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::error::OpsError;
use crate::file::{
    Change, DirEntry, DirListing, Expect, FileContents, FileKind, FileOps, Follow, MAX_DIR_ENTRIES,
    Metadata, Overwrite, Parents, Written,
};
use crate::path::{RESERVED_DIR, names_reserved, normalize, shown, split_parent};

/// The most symbolic links followed in one resolution, as on Linux.
const MAX_LINKS: usize = 40;

#[derive(Debug, Clone)]
enum Node {
    File {
        data: Vec<u8>,
        mode: u32,
        links: u64,
        modified: SystemTime,
    },
    Dir,
    Symlink(String),
    Special(&'static str),
}

/// An in-memory workspace.
#[derive(Debug)]
pub struct MemoryOps {
    nodes: Mutex<BTreeMap<String, Node>>,
}

impl Default for MemoryOps {
    fn default() -> Self {
        Self::new()
    }
}

fn join(parts: &[String]) -> String {
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

fn child_key(parent: &str, name: &str) -> String {
    if parent == "." {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

fn is_under(key: &str, dir: &str) -> bool {
    dir == "." || key.len() > dir.len() && key.starts_with(dir) && key.as_bytes()[dir.len()] == b'/'
}

impl MemoryOps {
    /// An empty workspace.
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(".".to_string(), Node::Dir);
        Self {
            nodes: Mutex::new(nodes),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Node>> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a symbolic link at `path` pointing to `target` (test fixtures).
    pub fn add_symlink(&self, path: &str, target: &str) {
        self.lock()
            .insert(path.to_string(), Node::Symlink(target.to_string()));
    }

    /// Adds a FIFO, socket or device at `path` (test fixtures).
    pub fn add_special(&self, path: &str, kind: &'static str) {
        self.lock().insert(path.to_string(), Node::Special(kind));
    }

    /// Sets the hard link count of the file at `path` (test fixtures).
    pub fn set_links(&self, path: &str, links: u64) {
        if let Some(Node::File { links: l, .. }) = self.lock().get_mut(path) {
            *l = links;
        }
    }

    /// Every entry strictly below the directory `dir` (a key), sorted by key, so that a
    /// directory comes before what it holds. For searches.
    pub(crate) fn entries_under(&self, dir: &str) -> Vec<(String, FileKind)> {
        let nodes = self.lock();
        nodes
            .iter()
            .filter(|(key, _)| key.as_str() != "." && is_under(key, dir))
            .map(|(key, _)| (key.clone(), Self::metadata(&nodes, key).kind))
            .collect()
    }

    /// The bytes of the regular file at `key`, for searches.
    pub(crate) fn file_bytes(&self, key: &str) -> Option<Vec<u8>> {
        match self.lock().get(key) {
            Some(Node::File { data, .. }) => Some(data.clone()),
            _ => None,
        }
    }

    fn rel(path: &str) -> Result<String, OpsError> {
        let rel = normalize(std::path::Path::new("/memory"), path)?;
        if names_reserved(&rel) {
            return Err(OpsError::Reserved { path: shown(path) });
        }
        Ok(rel)
    }

    /// Resolves `rel` beneath the root, following links (the final one only with
    /// `Follow::Yes`), and returns the key of what it names (which may not exist when it is
    /// the final component).
    fn resolve(
        nodes: &BTreeMap<String, Node>,
        rel: &str,
        follow: Follow,
        path: &str,
    ) -> Result<String, OpsError> {
        let escape = |detail: &str| OpsError::Escape {
            path: shown(path),
            detail: detail.into(),
        };
        let mut queue: Vec<String> = if rel == "." {
            Vec::new()
        } else {
            rel.split('/').rev().map(String::from).collect()
        };
        let mut stack: Vec<String> = Vec::new();
        let mut links = 0;
        while let Some(component) = queue.pop() {
            if component == ".." {
                if stack.pop().is_none() {
                    return Err(escape(
                        "it resolves outside the root (through `..`, an absolute path or a symbolic link)",
                    ));
                }
                continue;
            }
            stack.push(component);
            let key = join(&stack);
            let last = queue.is_empty();
            match nodes.get(&key) {
                Some(Node::Symlink(target)) if !last || follow == Follow::Yes => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(escape(
                            "too many levels of symbolic links, or a link where none may be",
                        ));
                    }
                    if target.starts_with('/') {
                        return Err(escape(
                            "it resolves outside the root (through `..`, an absolute path or a symbolic link)",
                        ));
                    }
                    stack.pop();
                    queue.extend(
                        target
                            .split('/')
                            .filter(|c| !c.is_empty() && *c != ".")
                            .rev()
                            .map(String::from),
                    );
                }
                Some(Node::Dir) => {}
                Some(_) if !last => return Err(OpsError::NotADirectory { path: shown(path) }),
                None if !last => return Err(OpsError::NotFound { path: shown(path) }),
                _ => {}
            }
        }
        let key = join(&stack);
        if names_reserved(&key) {
            return Err(OpsError::Reserved { path: shown(path) });
        }
        Ok(key)
    }

    /// The key of the parent directory of `rel` and the final name.
    fn parent_of(
        nodes: &BTreeMap<String, Node>,
        rel: &str,
        path: &str,
    ) -> Result<(String, String), OpsError> {
        let (parent, name) = split_parent(rel);
        if name == ".." || rel == "." {
            return Err(OpsError::InvalidPath {
                path: shown(path),
                reason: "the path must end in a file or directory name".into(),
            });
        }
        let dir = Self::resolve(nodes, parent, Follow::Yes, path)?;
        match nodes.get(&dir) {
            Some(Node::Dir) => {}
            Some(_) => return Err(OpsError::NotADirectory { path: shown(path) }),
            None => return Err(OpsError::NotFound { path: shown(path) }),
        }
        if dir == "." && name == RESERVED_DIR {
            return Err(OpsError::Reserved { path: shown(path) });
        }
        Ok((dir, name.to_string()))
    }

    fn metadata(nodes: &BTreeMap<String, Node>, key: &str) -> Metadata {
        let epoch = SystemTime::UNIX_EPOCH;
        match nodes.get(key) {
            Some(Node::File {
                data,
                mode,
                links,
                modified,
            }) => Metadata {
                kind: FileKind::File,
                size: data.len() as u64,
                mode: *mode,
                modified: *modified,
                links: *links,
                link_target: None,
            },
            Some(Node::Symlink(t)) => Metadata {
                kind: FileKind::Symlink,
                size: t.len() as u64,
                mode: 0o777,
                modified: epoch,
                links: 1,
                link_target: Some(t.clone()),
            },
            Some(Node::Special(_)) => Metadata {
                kind: FileKind::Other,
                size: 0,
                mode: 0o644,
                modified: epoch,
                links: 1,
                link_target: None,
            },
            _ => Metadata {
                kind: FileKind::Dir,
                size: 0,
                mode: 0o755,
                modified: epoch,
                links: 1,
                link_target: None,
            },
        }
    }
}

fn refuse_special(node: &Node, path: &str, action: &'static str) -> Result<(), OpsError> {
    match node {
        Node::File { .. } => Ok(()),
        Node::Dir => Err(OpsError::IsADirectory { path: shown(path) }),
        Node::Symlink(_) => Err(OpsError::SpecialFile {
            path: shown(path),
            kind: "symbolic link".into(),
            action: action.into(),
        }),
        Node::Special(kind) => Err(OpsError::SpecialFile {
            path: shown(path),
            kind: (*kind).into(),
            action: action.into(),
        }),
    }
}

impl FileOps for MemoryOps {
    fn quick(&self) -> bool {
        true
    }

    fn read(&self, path: &str, max_bytes: u64) -> Result<FileContents, OpsError> {
        let rel = Self::rel(path)?;
        let nodes = self.lock();
        let key = Self::resolve(&nodes, &rel, Follow::Yes, path)?;
        let node = nodes
            .get(&key)
            .ok_or_else(|| OpsError::NotFound { path: shown(path) })?;
        refuse_special(node, path, "read")?;
        let metadata = Self::metadata(&nodes, &key);
        let Node::File { data, .. } = node else {
            return Err(OpsError::NotFound { path: shown(path) });
        };
        let take = (data.len() as u64).min(max_bytes) as usize;
        Ok(FileContents {
            bytes: data[..take].to_vec(),
            size: data.len() as u64,
            metadata,
            real_path: Some(key),
        })
    }

    fn write(&self, path: &str, data: &[u8], parents: Parents) -> Result<Written, OpsError> {
        let rel = Self::rel(path)?;
        if parents == Parents::Create {
            let (parent, _) = split_parent(&rel);
            if parent != "." {
                self.mkdir(parent, Parents::Create)?;
            }
        }
        let mut nodes = self.lock();
        let (dir, name) = Self::parent_of(&nodes, &rel, path)?;
        let key = child_key(&dir, &name);
        let (mode, written) = match nodes.get(&key) {
            None => (0o644, Written::Created),
            Some(node) => {
                refuse_special(node, path, "written")?;
                match node {
                    Node::File { links, .. } if *links > 1 => {
                        return Err(OpsError::MultipleLinks {
                            path: shown(path),
                            links: *links,
                        });
                    }
                    Node::File { mode, .. } => (*mode, Written::Replaced),
                    _ => (0o644, Written::Replaced),
                }
            }
        };
        nodes.insert(
            key,
            Node::File {
                data: data.to_vec(),
                mode,
                links: 1,
                modified: SystemTime::now(),
            },
        );
        Ok(written)
    }

    fn commit(&self, changes: &[Change<'_>]) -> Result<(), OpsError> {
        // Parents first (as on disk, creating a directory is not part of the commit).
        for change in changes {
            let parent_of = |p: &str| -> Result<(), OpsError> {
                let rel = Self::rel(p)?;
                let (parent, _) = split_parent(&rel);
                if parent != "." {
                    self.mkdir(parent, Parents::Create)?;
                }
                Ok(())
            };
            match change {
                Change::Write {
                    path,
                    parents: Parents::Create,
                    ..
                } => parent_of(path)?,
                Change::Move { to, .. } => parent_of(to)?,
                _ => {}
            }
        }
        let mut nodes = self.lock();
        // Check everything, then change everything: nothing below can fail.
        let key_of = |nodes: &BTreeMap<String, Node>, path: &str| -> Result<String, OpsError> {
            let (dir, name) = Self::parent_of(nodes, &Self::rel(path)?, path)?;
            Ok(child_key(&dir, &name))
        };
        let check = |nodes: &BTreeMap<String, Node>,
                     key: &str,
                     path: &str,
                     expect: Expect<'_>,
                     writing: bool|
         -> Result<u32, OpsError> {
            let changed = |detail: &'static str| OpsError::Changed {
                path: shown(path),
                detail: detail.into(),
            };
            match (nodes.get(key), expect) {
                (None, Expect::Content(_)) => Err(changed("it no longer exists")),
                (None, _) => Ok(0o644),
                (Some(_), Expect::Missing) => Err(changed("it exists now")),
                (Some(node), expect) => {
                    if writing {
                        refuse_special(node, path, "written")?;
                    }
                    if let Node::File { links, mode, .. } = node
                        && writing
                    {
                        if *links > 1 {
                            return Err(OpsError::MultipleLinks {
                                path: shown(path),
                                links: *links,
                            });
                        }
                        if mode & 0o200 == 0 {
                            return Err(OpsError::ReadOnlyFile {
                                path: shown(path),
                                mode: *mode,
                            });
                        }
                    }
                    match (node, expect) {
                        (Node::File { data, .. }, Expect::Content(want)) if data != want => {
                            return Err(changed("its content differs from what you read"));
                        }
                        (Node::File { .. }, _) | (_, Expect::Anything) => {}
                        _ => return Err(changed("it is not a regular file")),
                    }
                    Ok(match node {
                        Node::File { mode, .. } => *mode,
                        _ => 0o644,
                    })
                }
            }
        };
        let mut puts: Vec<(String, Vec<u8>, u32)> = Vec::new();
        let mut dels: Vec<String> = Vec::new();
        for change in changes {
            match *change {
                Change::Write {
                    path, data, expect, ..
                } => {
                    let key = key_of(&nodes, path)?;
                    let mode = check(&nodes, &key, path, expect, true)?;
                    puts.push((key, data.to_vec(), mode));
                }
                Change::Remove { path, expect } => {
                    let key = key_of(&nodes, path)?;
                    match nodes.get(&key) {
                        None => return Err(OpsError::NotFound { path: shown(path) }),
                        Some(Node::Dir) => {
                            return Err(OpsError::IsADirectory { path: shown(path) });
                        }
                        _ => {}
                    }
                    check(&nodes, &key, path, expect, false)?;
                    dels.push(key);
                }
                Change::Move {
                    from,
                    to,
                    data,
                    expect,
                } => {
                    let src = key_of(&nodes, from)?;
                    if !nodes.contains_key(&src) {
                        return Err(OpsError::NotFound { path: shown(from) });
                    }
                    let mode = check(&nodes, &src, from, expect, true)?;
                    let dst = key_of(&nodes, to)?;
                    if nodes.contains_key(&dst) {
                        return Err(OpsError::AlreadyExists { path: shown(to) });
                    }
                    puts.push((dst, data.to_vec(), mode));
                    dels.push(src);
                }
            }
        }
        for (key, data, mode) in puts {
            nodes.insert(
                key,
                Node::File {
                    data,
                    mode,
                    links: 1,
                    modified: SystemTime::now(),
                },
            );
        }
        for key in dels {
            nodes.remove(&key);
        }
        Ok(())
    }

    fn append(&self, path: &str, data: &[u8]) -> Result<(), OpsError> {
        let rel = Self::rel(path)?;
        let mut nodes = self.lock();
        let (dir, name) = Self::parent_of(&nodes, &rel, path)?;
        let key = child_key(&dir, &name);
        match nodes.get_mut(&key) {
            None => {
                nodes.insert(
                    key,
                    Node::File {
                        data: data.to_vec(),
                        mode: 0o644,
                        links: 1,
                        modified: SystemTime::now(),
                    },
                );
                Ok(())
            }
            Some(Node::Symlink(_)) => Err(OpsError::Escape {
                path: shown(path),
                detail: "too many levels of symbolic links, or a link where none may be".into(),
            }),
            Some(Node::File { links, .. }) if *links > 1 => Err(OpsError::MultipleLinks {
                path: shown(path),
                links: *links,
            }),
            Some(Node::File {
                data: existing,
                modified,
                ..
            }) => {
                existing.extend_from_slice(data);
                *modified = SystemTime::now();
                Ok(())
            }
            Some(node) => refuse_special(node, path, "written"),
        }
    }

    fn stat(&self, path: &str, follow: Follow) -> Result<Metadata, OpsError> {
        let rel = Self::rel(path)?;
        let nodes = self.lock();
        let key = Self::resolve(&nodes, &rel, follow, path)?;
        if !nodes.contains_key(&key) {
            return Err(OpsError::NotFound { path: shown(path) });
        }
        Ok(Self::metadata(&nodes, &key))
    }

    fn read_dir(&self, path: &str) -> Result<DirListing, OpsError> {
        let rel = Self::rel(path)?;
        let nodes = self.lock();
        let key = Self::resolve(&nodes, &rel, Follow::Yes, path)?;
        match nodes.get(&key) {
            Some(Node::Dir) => {}
            Some(_) => return Err(OpsError::NotADirectory { path: shown(path) }),
            None => return Err(OpsError::NotFound { path: shown(path) }),
        }
        let mut listing = DirListing::default();
        for child in nodes.keys().filter(|k| is_under(k, &key) && *k != ".") {
            let rest = if key == "." {
                child.as_str()
            } else {
                &child[key.len() + 1..]
            };
            if rest.contains('/') || (key == "." && rest == RESERVED_DIR) {
                continue;
            }
            if listing.entries.len() >= MAX_DIR_ENTRIES {
                listing.truncated = true;
                break;
            }
            listing.entries.push(DirEntry {
                name: rest.to_string(),
                metadata: Self::metadata(&nodes, child),
            });
        }
        Ok(listing)
    }

    fn mkdir(&self, path: &str, parents: Parents) -> Result<(), OpsError> {
        let rel = Self::rel(path)?;
        if rel == "." {
            return Ok(());
        }
        let mut nodes = self.lock();
        let parts: Vec<&str> = rel.split('/').collect();
        let first = if parents == Parents::Create {
            1
        } else {
            parts.len()
        };
        for i in first..=parts.len() {
            let prefix = parts[..i].join("/");
            let (dir, name) = Self::parent_of(&nodes, &prefix, path)?;
            let key = child_key(&dir, &name);
            let existing = Self::resolve(&nodes, &prefix, Follow::Yes, path)?;
            match nodes.get(&existing) {
                Some(Node::Dir) => continue,
                Some(_) => return Err(OpsError::AlreadyExists { path: shown(path) }),
                None if matches!(nodes.get(&key), Some(Node::Symlink(_))) => {
                    return Err(OpsError::NotFound { path: shown(path) });
                }
                None => {
                    nodes.insert(key, Node::Dir);
                }
            }
        }
        Ok(())
    }

    fn remove(&self, path: &str, recursive: bool) -> Result<(), OpsError> {
        let rel = Self::rel(path)?;
        let mut nodes = self.lock();
        let (dir, name) = Self::parent_of(&nodes, &rel, path)?;
        let key = child_key(&dir, &name);
        match nodes.get(&key) {
            None => Err(OpsError::NotFound { path: shown(path) }),
            Some(Node::Dir) => {
                let children: Vec<String> = nodes
                    .keys()
                    .filter(|k| is_under(k, &key))
                    .cloned()
                    .collect();
                if !children.is_empty() && !recursive {
                    return Err(OpsError::NotEmpty { path: shown(path) });
                }
                for child in children {
                    nodes.remove(&child);
                }
                nodes.remove(&key);
                Ok(())
            }
            Some(_) => {
                nodes.remove(&key);
                Ok(())
            }
        }
    }

    fn rename(&self, from: &str, to: &str, overwrite: Overwrite) -> Result<(), OpsError> {
        let from_rel = Self::rel(from)?;
        let to_rel = Self::rel(to)?;
        let mut nodes = self.lock();
        let (from_dir, from_name) = Self::parent_of(&nodes, &from_rel, from)?;
        let (to_dir, to_name) = Self::parent_of(&nodes, &to_rel, to)?;
        let src = child_key(&from_dir, &from_name);
        let dst = child_key(&to_dir, &to_name);
        let node = nodes
            .get(&src)
            .cloned()
            .ok_or_else(|| OpsError::NotFound { path: shown(from) })?;
        if src == dst {
            return Ok(());
        }
        if is_under(&dst, &src) {
            return Err(OpsError::InvalidPath {
                path: shown(to),
                reason: format!("cannot move `{}` inside itself", shown(from)),
            });
        }
        if let Some(existing) = nodes.get(&dst) {
            let occupied_dir =
                matches!(existing, Node::Dir) && nodes.keys().any(|k| is_under(k, &dst));
            if overwrite == Overwrite::No || occupied_dir {
                return Err(OpsError::AlreadyExists { path: shown(to) });
            }
            match (existing, &node) {
                (Node::Dir, Node::Dir) => {}
                (Node::Dir, _) => return Err(OpsError::IsADirectory { path: shown(to) }),
                (_, Node::Dir) => return Err(OpsError::NotADirectory { path: shown(to) }),
                _ => {}
            }
        }
        let moved: Vec<(String, Node)> = nodes
            .iter()
            .filter(|(k, _)| is_under(k, &src))
            .map(|(k, v)| (format!("{dst}{}", &k[src.len()..]), v.clone()))
            .collect();
        nodes.retain(|k, _| k != &src && !is_under(k, &src));
        nodes.insert(dst, node);
        nodes.extend(moved);
        Ok(())
    }

    fn realpath(&self, path: &str) -> Result<String, OpsError> {
        let rel = Self::rel(path)?;
        let nodes = self.lock();
        let key = Self::resolve(&nodes, &rel, Follow::Yes, path)?;
        if !nodes.contains_key(&key) {
            return Err(OpsError::NotFound { path: shown(path) });
        }
        Ok(key)
    }

    fn root_display(&self) -> String {
        "/memory".into()
    }
}

#[cfg(feature = "contract")]
impl crate::contract::Fixture for MemoryOps {
    /// Names are kept as they are spelled (see [`crate::path`]).
    fn raw_file(&self, path: &[u8], data: &[u8]) {
        let path = crate::path::from_fs(path);
        let written = crate::FileOps::write(self, &path, data, Parents::Create);
        assert!(written.is_ok(), "{path}: {written:?}");
    }

    fn symlink(&self, path: &str, target: &str) {
        self.add_symlink(path, target);
    }

    fn hard_link(&self, path: &str, other: &str) {
        self.set_links(path, 2);
        let node = self.lock().get(path).cloned();
        if let Some(node) = node {
            self.lock().insert(other.to_string(), node);
        }
    }

    fn fifo(&self, path: &str) {
        self.add_special(path, "FIFO");
    }

    fn reserved_file(&self, name: &str, data: &[u8]) {
        let mut nodes = self.lock();
        nodes.insert(RESERVED_DIR.to_string(), Node::Dir);
        nodes.insert(
            format!("{RESERVED_DIR}/{name}"),
            Node::File {
                data: data.to_vec(),
                mode: 0o600,
                links: 1,
                modified: SystemTime::now(),
            },
        );
    }
}

impl crate::process::ProcessOps for MemoryOps {
    fn spawn(
        &self,
        request: &crate::process::SpawnRequest,
    ) -> Result<crate::process::Process, OpsError> {
        request.validate()?;
        Err(OpsError::ProcessUnavailable {
            reason: format!(
                "the in-memory workspace has no processes, so `{}` cannot run; use a local workspace",
                request.program
            ),
        })
    }
}

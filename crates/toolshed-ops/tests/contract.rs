//! The contract suite on both implementations, one test per case.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use support::Disk;
use toolshed_ops::contract::Fixture;
use toolshed_ops::{LocalOps, MemoryOps};

/// A workspace one level down a temporary directory, so "../.." escapes stay inside it,
/// with a secret in the reserved `.toolshed/`.
fn local() -> (LocalOps, (tempfile::TempDir, Disk)) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a/ws");
    std::fs::create_dir_all(root.join(".toolshed")).unwrap();
    std::fs::write(root.join(".toolshed/toolshed.db"), "secret").unwrap();
    let ops = LocalOps::new(&root).unwrap();
    (ops, (dir, Disk(root)))
}

fn on_disk<'a>(_ops: &'a LocalOps, keep: &'a (tempfile::TempDir, Disk)) -> &'a dyn Fixture {
    &keep.1
}

/// Nothing was written outside the workspace, and no temporary file is left.
fn nothing_outside(keep: &(tempfile::TempDir, Disk)) {
    let outside: Vec<_> = std::fs::read_dir(keep.0.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec!["ws"]);
    assert!(!keep.0.path().join("nowhere-toolshed-contract").exists());
}

fn memory() -> (MemoryOps, ()) {
    (MemoryOps::new(), ())
}

fn itself<'a>(ops: &'a MemoryOps, _: &'a ()) -> &'a dyn Fixture {
    ops
}

toolshed_ops::file_contract!(local_ops, local, on_disk, nothing_outside);
toolshed_ops::file_contract!(memory_ops, memory, itself);

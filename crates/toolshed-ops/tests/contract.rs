//! The contract suite on both implementations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use support::Disk;
use toolshed_ops::contract;
use toolshed_ops::{LocalOps, MemoryOps};

#[test]
fn local_ops_meet_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    // Make the workspace one level down, so "../.." escapes stay inside the temp dir.
    let root = dir.path().join("a/ws");
    std::fs::create_dir_all(root.join(".toolshed")).unwrap();
    std::fs::write(root.join(".toolshed/toolshed.db"), "secret").unwrap();
    let ops = LocalOps::new(&root).unwrap();
    contract::run(&ops, &Disk(root.clone()));
    // Nothing was written outside the workspace, and no temporary file is left.
    let outside: Vec<_> = std::fs::read_dir(dir.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec!["ws"]);
    assert!(!dir.path().join("nowhere-toolshed-contract").exists());
}

#[test]
fn memory_ops_meet_the_contract() {
    let ops = MemoryOps::new();
    contract::run(&ops, &ops);
}

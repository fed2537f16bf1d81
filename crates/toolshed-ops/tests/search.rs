//! Searching: the contract suite on both implementations, and what only a real file system
//! can show.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use support::Disk;
use toolshed_ops::contract::Fixture;
use toolshed_ops::search::FileSearch;
use toolshed_ops::{
    FileOps, GlobRequest, GrepRequest, LocalOps, MemoryOps, Ops, OpsError, Parents, SearchOps,
};

/// A workspace one level below a directory holding `outside.txt`, which links point to.
fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a/ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(dir.path().join("a/outside.txt"), "needle outside\n").unwrap();
    (dir, root)
}

fn local() -> (LocalOps, (tempfile::TempDir, Disk)) {
    let (dir, root) = workspace();
    (LocalOps::new(&root).unwrap(), (dir, Disk(root)))
}

fn on_disk<'a>(_ops: &'a LocalOps, keep: &'a (tempfile::TempDir, Disk)) -> &'a dyn Fixture {
    &keep.1
}

/// The links the suite made do lead out, so not following them is what kept them out.
fn links_lead_out(keep: &(tempfile::TempDir, Disk)) {
    let root = &keep.1.0;
    assert_eq!(
        std::fs::read_to_string(root.join("links/outside")).unwrap(),
        "needle outside\n"
    );
    assert!(root.join("links/outdir/ws").is_dir());
}

fn memory() -> (MemoryOps, ()) {
    (MemoryOps::new(), ())
}

fn itself<'a>(ops: &'a MemoryOps, _: &'a ()) -> &'a dyn Fixture {
    ops
}

toolshed_ops::search_contract!(local_search, local, on_disk, links_lead_out);
toolshed_ops::search_contract!(memory_search, memory, itself);

/// A backend outside this crate gets search from its files alone: `FileSearch` over the
/// in-memory files (whose own search is not used) meets the same contract.
fn over_files() -> (FileSearch<MemoryOps>, ()) {
    (FileSearch::new(MemoryOps::new()), ())
}

fn inner<'a>(ops: &'a FileSearch<MemoryOps>, _: &'a ()) -> &'a dyn Fixture {
    ops.files()
}

toolshed_ops::search_contract!(file_search, over_files, inner);

#[test]
fn ops_serve_files_and_search_from_one_backend() {
    let (_dir, root) = workspace();
    for ops in [Ops::local(&root).unwrap(), Ops::memory()] {
        ops.files
            .write("src/a.rs", b"fn a() {}\n", Parents::Create)
            .unwrap();
        let found = ops
            .search
            .glob(&GlobRequest {
                patterns: vec!["*.rs".into()],
                ..GlobRequest::default()
            })
            .unwrap();
        assert_eq!(found.paths, ["src/a.rs"]);
    }
}

#[test]
fn a_plain_directory_gitignore_applies_without_git() {
    let (_dir, root) = workspace();
    std::fs::write(root.join(".gitignore"), "*.tmp\n").unwrap();
    std::fs::write(root.join("a.txt"), "x").unwrap();
    std::fs::write(root.join("b.tmp"), "x").unwrap();
    assert!(!root.join(".git").exists());
    let ops = LocalOps::new(&root).unwrap();
    let found = ops.glob(&GlobRequest::default()).unwrap();
    assert_eq!(found.paths, ["a.txt"]);
}

#[test]
fn ignore_files_above_the_workspace_do_not_apply() {
    let (dir, root) = workspace();
    std::fs::write(dir.path().join("a/.gitignore"), "*\n").unwrap();
    std::fs::write(dir.path().join(".ignore"), "*\n").unwrap();
    std::fs::write(root.join("kept.txt"), "needle\n").unwrap();
    let ops = LocalOps::new(&root).unwrap();
    assert_eq!(
        ops.glob(&GlobRequest::default()).unwrap().paths,
        ["kept.txt"]
    );
}

#[test]
fn a_gitignore_linked_outside_is_not_read() {
    let (dir, root) = workspace();
    std::fs::write(dir.path().join("a/rules"), "*.txt\n").unwrap();
    std::os::unix::fs::symlink("../rules", root.join(".gitignore")).unwrap();
    std::fs::write(root.join("kept.txt"), "x").unwrap();
    let ops = LocalOps::new(&root).unwrap();
    assert_eq!(
        ops.glob(&GlobRequest::default()).unwrap().paths,
        ["kept.txt"]
    );
}

#[test]
fn results_are_deterministic_across_many_files() {
    let (_dir, root) = workspace();
    for d in 0..20 {
        let dir = root.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..30 {
            std::fs::write(
                dir.join(format!("f{f:02}.txt")),
                "one needle\ntwo\nneedle three\n",
            )
            .unwrap();
        }
    }
    let ops = LocalOps::new(&root).unwrap();
    let request = GrepRequest {
        pattern: "needle".into(),
        max_matches: 101,
        ..GrepRequest::default()
    };
    let first = ops.grep(&request).unwrap();
    assert_eq!(
        (first.total_matches, first.truncated, first.files_searched),
        (101, true, 600)
    );
    assert_eq!(first.files.len(), 51);
    assert_eq!(first.files[0].path, "d00/f00.txt");
    assert_eq!(first.files[50].path, "d01/f20.txt");
    assert_eq!(first.files[50].matches.len(), 1);
    for _ in 0..5 {
        assert_eq!(ops.grep(&request).unwrap(), first);
    }
    let memory = MemoryOps::new();
    for d in 0..20 {
        for f in 0..30 {
            memory
                .write(
                    &format!("d{d:02}/f{f:02}.txt"),
                    b"one needle\ntwo\nneedle three\n",
                    Parents::Create,
                )
                .unwrap();
        }
    }
    assert_eq!(memory.grep(&request).unwrap(), first);
    let all = ops
        .glob(&GlobRequest {
            max_results: 250,
            ..GlobRequest::default()
        })
        .unwrap();
    assert_eq!(
        all,
        memory
            .glob(&GlobRequest {
                max_results: 250,
                ..GlobRequest::default()
            })
            .unwrap()
    );
    assert!(all.truncated && all.paths.len() == 250 && all.paths[249] == "d08/f09.txt");
}

#[test]
fn links_to_directories_are_not_descended() {
    let (_dir, root) = workspace();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::write(root.join("real/f.txt"), "needle inside\n").unwrap();
    std::os::unix::fs::symlink("real", root.join("d")).unwrap();
    std::os::unix::fs::symlink("../..", root.join("up")).unwrap();
    let ops = LocalOps::new(&root).unwrap();
    let found = ops
        .grep(&GrepRequest {
            pattern: "needle".into(),
            ..GrepRequest::default()
        })
        .unwrap();
    assert_eq!(found.files.len(), 1);
    assert_eq!(found.files[0].path, "real/f.txt");
    assert_eq!(found.files_searched, 1);
    let request = GrepRequest {
        pattern: "needle".into(),
        base: "up".into(),
        ..GrepRequest::default()
    };
    assert!(matches!(ops.grep(&request), Err(OpsError::Escape { .. })));
}

#[test]
fn a_cancelled_search_stops_admitting_entries() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use toolshed_ops::{Cancel, FileOps, GlobRequest, GrepRequest, MemoryOps, Parents, SearchOps};
    let ops = MemoryOps::new();
    for i in 0..50 {
        ops.write(&format!("d/{i}.txt"), b"needle\n", Parents::Create)
            .unwrap();
    }
    let live = GrepRequest {
        pattern: "needle".into(),
        ..Default::default()
    };
    assert_eq!(ops.grep(&live).unwrap().files_searched, 50);
    let stopped = Cancel::new(Arc::new(AtomicBool::new(true)));
    let grep = GrepRequest {
        cancel: stopped.clone(),
        ..live
    };
    let result = ops.grep(&grep).unwrap();
    assert_eq!((result.files_searched, result.total_matches), (0, 0));
    let glob = GlobRequest {
        patterns: vec!["*.txt".into()],
        cancel: stopped,
        ..Default::default()
    };
    assert!(ops.glob(&glob).unwrap().paths.is_empty());
}

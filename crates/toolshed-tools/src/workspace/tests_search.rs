//! `workspace_tree`, `workspace_glob`, `workspace_find`, `workspace_grep` through the tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolshed_core::ErrorKind;

use super::test_support::Harness;

fn project(h: &Harness) {
    h.put(".gitignore", "target/\n*.log\n");
    h.put("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    h.put("src/domain/rules.rs", "pub fn rule() {}\n// hello again\n");
    h.put("target/debug/out.rs", "fn hello() {}\n");
    h.put("notes.log", "hello log\n");
    h.put(".hidden/secret.rs", "hello hidden\n");
    h.put("README.md", "# Hello\n");
}

#[tokio::test]
async fn tree_shows_levels_and_skips_ignored_and_hidden() {
    let h = Harness::memory();
    project(&h);
    let out = h.ok("workspace_tree", json!({})).await.text_joined();
    assert_eq!(
        out,
        "./\n  README.md\n  src/\n    domain/\n      rules.rs\n    main.rs\n"
    );
    let out = h
        .ok("workspace_tree", json!({"depth": 1}))
        .await
        .text_joined();
    assert_eq!(out, "./\n  README.md\n  src/\n");
    let out = h
        .ok(
            "workspace_tree",
            json!({"depth": 1, "include_hidden": true, "respect_gitignore": false}),
        )
        .await
        .text_joined();
    assert_eq!(
        out,
        "./\n  .gitignore\n  .hidden/\n  README.md\n  notes.log\n  src/\n  target/\n"
    );
    let out = h
        .ok("workspace_tree", json!({"max_entries": 2}))
        .await
        .text_joined();
    assert!(out.contains("[only the first 2 entries"), "{out}");
}

#[tokio::test]
async fn glob_and_find() {
    let h = Harness::memory();
    project(&h);
    let out = h
        .ok("workspace_glob", json!({"patterns": ["*.rs"]}))
        .await
        .text_joined();
    assert_eq!(out, "src/domain/rules.rs\nsrc/main.rs");
    let out = h
        .ok(
            "workspace_glob",
            json!({"patterns": ["*.rs", "!src/domain/**"]}),
        )
        .await
        .text_joined();
    assert_eq!(out, "src/main.rs");
    let out = h
        .ok("workspace_glob", json!({"patterns": ["*.nope"]}))
        .await
        .text_joined();
    assert!(out.starts_with("No files match"), "{out}");
    let err = h.err("workspace_glob", json!({"patterns": ["a[" ]})).await;
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);

    let out = h.ok("workspace_find", json!({"query": "mainrs"})).await;
    assert_eq!(out.text_joined().lines().next(), Some("src/main.rs"));
    let err = h.err("workspace_find", json!({"query": "  "})).await;
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn grep_formats_like_ripgrep_and_reports_limits() {
    let h = Harness::memory();
    project(&h);
    let out = h
        .ok("workspace_grep", json!({"pattern": "hello"}))
        .await
        .text_joined();
    assert_eq!(
        out,
        "README.md:1:# Hello\nsrc/domain/rules.rs:2:// hello again\nsrc/main.rs:2:    println!(\"Hello\");\n[3 matches in 3 files; 3 files searched]\n"
    );
    let out = h
        .ok(
            "workspace_grep",
            json!({"pattern": "hello", "case": "sensitive", "context": 1}),
        )
        .await
        .text_joined();
    assert_eq!(
        out,
        "src/domain/rules.rs-1-pub fn rule() {}\nsrc/domain/rules.rs:2:// hello again\n[1 match in 1 file; 3 files searched]\n"
    );
    let out = h
        .ok(
            "workspace_grep",
            json!({"pattern": "hello", "include": ["*.rs"], "max_matches": 1}),
        )
        .await
        .text_joined();
    assert!(out.contains("[results stop at max_matches"), "{out}");
    let out = h
        .ok(
            "workspace_grep",
            json!({"pattern": "println!(", "fixed_string": true, "path": "src"}),
        )
        .await
        .text_joined();
    assert!(out.starts_with("src/main.rs:2:"), "{out}");
    let err = h
        .err("workspace_grep", json!({"pattern": "(unclosed"}))
        .await;
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert!(err.to_string().contains("(unclosed"), "{err}");
    let err = h
        .err("workspace_grep", json!({"pattern": "x", "path": "../"}))
        .await;
    assert_eq!(err.kind(), ErrorKind::Denied);
    let out = h
        .ok("workspace_grep", json!({"pattern": "zzz"}))
        .await
        .text_joined();
    assert!(out.starts_with("No matches for `zzz`"), "{out}");
}

#[tokio::test]
async fn search_on_the_real_file_system_stays_inside() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(dir.path().join("outside.txt"), "needle outside\n").unwrap();
    std::fs::write(root.join("src/a.txt"), "needle inside\n").unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
    std::fs::create_dir_all(root.join(".toolshed")).unwrap();
    std::fs::write(root.join(".toolshed/state"), "needle reserved\n").unwrap();
    let h = Harness::over(toolshed_ops::Ops::local(&root).unwrap());
    let out = h
        .ok(
            "workspace_grep",
            json!({"pattern": "needle", "include_hidden": true}),
        )
        .await
        .text_joined();
    assert_eq!(
        out,
        "src/a.txt:1:needle inside\n[1 match in 1 file; 1 file searched]\n"
    );
    let out = h
        .ok("workspace_tree", json!({"include_hidden": true}))
        .await
        .text_joined();
    assert_eq!(out, "./\n  src/\n    a.txt\n");
}

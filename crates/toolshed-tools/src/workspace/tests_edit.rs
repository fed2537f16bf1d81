//! `workspace_edit` and `workspace_patch` through the tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use toolshed_core::ErrorKind;

use super::test_support::Harness;

#[tokio::test]
async fn edit_needs_a_read_then_returns_a_diff() {
    let h = Harness::memory();
    h.put("src/lib.rs", "fn a() {\n    old();\n}\n");
    let args = json!({"path": "src/lib.rs", "old_text": "old();", "new_text": "new();"});
    let err = h.err("workspace_edit", args.clone()).await;
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert_eq!(h.get("src/lib.rs"), "fn a() {\n    old();\n}\n");
    h.ok("workspace_read", json!({"path": "src/lib.rs"})).await;
    let out = h.ok("workspace_edit", args).await;
    assert_eq!(
        out.text_joined(),
        "Edited `src/lib.rs`: 1 replacement (+1 -1 lines)\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    old();\n+    new();\n }\n"
    );
    // The edit counts as knowing the new version: a second edit needs no new read.
    h.ok(
        "workspace_edit",
        json!({"path": "src/lib.rs", "old_text": "new();", "new_text": "newer();"}),
    )
    .await;
    assert_eq!(h.get("src/lib.rs"), "fn a() {\n    newer();\n}\n");
}

#[tokio::test]
async fn edit_reports_ambiguity_misses_and_fallbacks() {
    let h = Harness::memory();
    h.put("a.txt", "x = 1\ny = 2\nx = 1\nlast line   \n");
    h.ok("workspace_read", json!({"path": "a.txt"})).await;
    let err = h
        .err(
            "workspace_edit",
            json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 3"}),
        )
        .await;
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("1, 3"), "{err}");
    let err = h
        .err(
            "workspace_edit",
            json!({"path": "a.txt", "old_text": "y = 22", "new_text": "y = 3"}),
        )
        .await;
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(err.to_string().contains("line 2"), "{err}");
    let out = h
        .ok(
            "workspace_edit",
            json!({"path": "a.txt", "old_text": "y = 2   \nx = 1", "new_text": "y = 5\nx = 1"}),
        )
        .await;
    assert!(
        out.text_joined().contains("matched after"),
        "{}",
        out.text_joined()
    );
    let out = h
        .ok(
            "workspace_edit",
            json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 9", "replace_all": true}),
        )
        .await;
    assert_eq!(out.structured.unwrap()["replacements"], 2);
    let err = h
        .err(
            "workspace_edit",
            json!({"path": "a.txt", "old_text": "", "new_text": "z"}),
        )
        .await;
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
}

const TWO_FILES: &str = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: b.txt\n@@\n-no such line\n+x\n*** End Patch\n";

#[tokio::test]
async fn a_failing_second_hunk_leaves_every_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::over(toolshed_ops::Ops::local(dir.path()).unwrap());
    std::fs::write(dir.path().join("a.txt"), b"alpha\r\nbeta\r\n").unwrap();
    std::fs::write(dir.path().join("b.txt"), b"gamma").unwrap();
    h.ok("workspace_read", json!({"path": "a.txt"})).await;
    h.ok("workspace_read", json!({"path": "b.txt"})).await;
    let err = h.err("workspace_patch", json!({"patch": TWO_FILES})).await;
    assert_eq!(err.kind(), ErrorKind::Failed);
    let message = err.to_string();
    assert!(
        message.contains("b.txt") && message.contains("No file was changed"),
        "{message}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).unwrap(),
        b"alpha\r\nbeta\r\n"
    );
    assert_eq!(std::fs::read(dir.path().join("b.txt")).unwrap(), b"gamma");

    // The good half alone applies, and the CRLF file stays CRLF.
    let good = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** End Patch\n";
    let out = h.ok("workspace_patch", json!({"patch": good})).await;
    assert!(
        out.text_joined()
            .starts_with("Applied the patch to 1 file:\nM a.txt (+1 -1)"),
        "{}",
        out.text_joined()
    );
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).unwrap(),
        b"ALPHA\r\nbeta\r\n"
    );
}

#[tokio::test]
async fn patch_adds_deletes_moves_and_needs_reads_of_what_it_changes() {
    let h = Harness::memory();
    h.put("old.txt", "one\ntwo\n");
    h.put("gone.txt", "bye\n");
    let patch = "*** Begin Patch\n*** Add File: new/file.txt\n+hello\n*** Delete File: gone.txt\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n one\n-two\n+2\n*** End Patch\n";
    let err = h.err("workspace_patch", json!({"patch": patch})).await;
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert_eq!(h.get("old.txt"), "one\ntwo\n");
    h.ok("workspace_read", json!({"path": "old.txt"})).await;
    h.ok("workspace_read", json!({"path": "gone.txt"})).await;
    let out = h
        .ok("workspace_patch", json!({"patch": patch}))
        .await
        .text_joined();
    assert!(
        out.contains("A new/file.txt (+1 -0)\nD gone.txt (+0 -1)\nR old.txt -> moved.txt (+1 -1)"),
        "{out}"
    );
    assert_eq!(h.get("new/file.txt"), "hello\n");
    assert_eq!(h.get("moved.txt"), "one\n2\n");
    assert_eq!(
        h.err("workspace_stat", json!({"path": "gone.txt"}))
            .await
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        h.err("workspace_stat", json!({"path": "old.txt"}))
            .await
            .kind(),
        ErrorKind::NotFound
    );

    let unified = "--- a/moved.txt\n+++ b/moved.txt\n@@ -1,2 +1,2 @@\n one\n-2\n+two\n";
    h.ok("workspace_patch", json!({"patch": unified})).await;
    assert_eq!(h.get("moved.txt"), "one\ntwo\n");
    let err = h
        .err("workspace_patch", json!({"patch": "not a patch"}))
        .await;
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn a_write_failing_part_way_restores_what_was_written() {
    // The disk fills up while the second file is written: the first, already written, and
    // the moved one go back to what they were.
    let h = Harness::failing_writes_to("b.txt");
    h.put_memory("a.txt", "alpha\n");
    h.put_memory("b.txt", "beta\n");
    h.put_memory("m.txt", "moved\n");
    for f in ["a.txt", "b.txt", "m.txt"] {
        h.ok("workspace_read", json!({"path": f})).await;
    }
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: m.txt\n*** Move to: sub/m2.txt\n@@\n-moved\n+MOVED\n*** Update File: b.txt\n@@\n-beta\n+BETA\n*** Delete File: gone.txt\n*** End Patch\n";
    h.put_memory("gone.txt", "bye\n");
    h.ok("workspace_read", json!({"path": "gone.txt"})).await;
    let err = h.err("workspace_patch", json!({"patch": patch})).await;
    assert!(err.to_string().contains("`b.txt`"), "{err}");
    assert!(err.to_string().contains("No file was changed"), "{err}");
    let files = &memory(&h);
    let get = |p: &str| {
        String::from_utf8(toolshed_ops::FileOps::read(*files, p, 100).unwrap().bytes).unwrap()
    };
    assert_eq!(get("a.txt"), "alpha\n");
    assert_eq!(get("b.txt"), "beta\n");
    assert_eq!(get("m.txt"), "moved\n");
    assert_eq!(get("gone.txt"), "bye\n");
    assert!(toolshed_ops::FileOps::read(*files, "sub/m2.txt", 100).is_err());
}

#[tokio::test]
async fn a_target_a_write_would_refuse_stops_the_patch_before_anything_is_written() {
    let h = Harness::memory();
    h.put("a.txt", "alpha\n");
    h.put("linked.txt", "beta\n");
    h.ok("workspace_read", json!({"path": "a.txt"})).await;
    h.ok("workspace_read", json!({"path": "linked.txt"})).await;
    toolshed_ops::MemoryOps::set_links(memory(&h), "linked.txt", 2);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: linked.txt\n@@\n-beta\n+BETA\n*** End Patch\n";
    let err = h.err("workspace_patch", json!({"patch": patch})).await;
    assert!(
        err.to_string().contains("2 hard links") && err.to_string().contains("No file was changed"),
        "{err}"
    );
    assert_eq!(h.get("a.txt"), "alpha\n");
}

fn memory(h: &Harness) -> &toolshed_ops::MemoryOps {
    h.memory.as_deref().expect("a memory harness")
}

#[tokio::test]
async fn a_patch_naming_one_file_twice_is_refused_before_reading() {
    let h = Harness::memory();
    h.put("big.txt", "x\n");
    h.ok("workspace_read", json!({"path": "big.txt"})).await;
    let patch = "*** Begin Patch\n*** Update File: big.txt\n@@\n-x\n+y\n*** Update File: ./big.txt\n@@\n-x\n+z\n*** End Patch\n";
    let err = h.err("workspace_patch", json!({"patch": patch})).await;
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert!(
        err.to_string()
            .contains("`big.txt` and `./big.txt` name the same file"),
        "{err}"
    );
    let patch = "*** Begin Patch\n*** Add File: n/new.txt\n+a\n*** Add File: n/../n/new.txt\n+b\n*** End Patch\n";
    let err = h.err("workspace_patch", json!({"patch": patch})).await;
    assert!(err.to_string().contains("name the same file"), "{err}");
    assert_eq!(h.get("big.txt"), "x\n");
}

#[tokio::test]
async fn a_moved_file_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::over(toolshed_ops::Ops::local(dir.path()).unwrap());
    std::fs::write(dir.path().join("run.sh"), "echo one\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    h.ok("workspace_read", json!({"path": "run.sh"})).await;
    let patch = "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo one\n+echo two\n*** End Patch\n";
    h.ok("workspace_patch", json!({"patch": patch})).await;
    let moved = dir.path().join("bin/run.sh");
    assert_eq!(std::fs::read_to_string(&moved).unwrap(), "echo two\n");
    assert_eq!(
        std::fs::metadata(&moved).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(!dir.path().join("run.sh").exists());
}

#[tokio::test]
async fn edit_inserts_lines_after_a_line_number() {
    let h = Harness::memory();
    h.put("list.txt", "one\ntwo\nthree");
    h.ok("workspace_read", json!({"path": "list.txt"})).await;
    let out = h
        .ok(
            "workspace_edit",
            json!({"path": "list.txt", "insert_line": 1, "new_text": "one and a half"}),
        )
        .await;
    assert!(
        out.text_joined()
            .starts_with("Inserted 1 line into `list.txt` after line 1\n"),
        "{}",
        out.text_joined()
    );
    assert_eq!(h.get("list.txt"), "one\none and a half\ntwo\nthree");
    // At the top, and after the last line of a file without a final newline.
    h.ok(
        "workspace_edit",
        json!({"path": "list.txt", "insert_line": 0, "new_text": "zero\n"}),
    )
    .await;
    h.ok(
        "workspace_edit",
        json!({"path": "list.txt", "insert_line": 5, "new_text": "four\nfive\n"}),
    )
    .await;
    assert_eq!(
        h.get("list.txt"),
        "zero\none\none and a half\ntwo\nthree\nfour\nfive\n"
    );
    // Past the end, with old_text too, or nothing to insert: refused, the file unchanged.
    for (args, says) in [
        (
            json!({"path": "list.txt", "insert_line": 9, "new_text": "x"}),
            "0 to 7",
        ),
        (
            json!({"path": "list.txt", "insert_line": 1, "old_text": "two", "new_text": "x"}),
            "leave out old_text",
        ),
        (
            json!({"path": "list.txt", "insert_line": 1, "new_text": ""}),
            "nothing to insert",
        ),
    ] {
        let err = h.err("workspace_edit", args).await;
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert_eq!(
        h.get("list.txt"),
        "zero\none\none and a half\ntwo\nthree\nfour\nfive\n"
    );
}

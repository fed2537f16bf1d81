//! Standard unified diffs.

use super::{run, update};
use crate::workspace::engine::matching::MatchLevel;
use crate::workspace::engine::patch::{self, FileChange, PatchError, PatchFormat};

#[test]
fn git_diff_updates_by_content() {
    let text = "diff --git a/src/lib.rs b/src/lib.rs\n\
                index 83db48f..bf269f4 100644\n\
                --- a/src/lib.rs\n\
                +++ b/src/lib.rs\n\
                @@ -1,3 +1,3 @@\n \
                a\n\
                -b\n\
                +B\n \
                c\n";
    assert_eq!(
        patch::parse(text).map(|p| p.format),
        Ok(PatchFormat::UnifiedDiff)
    );
    // The hunk says line 1, but the lines are at 3: content wins.
    assert_eq!(
        run(text, &[("src/lib.rs", "0\n0\na\nb\nc\n")]),
        Ok(vec![update(
            "src/lib.rs",
            "0\n0\na\nB\nc\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn line_numbers_pick_the_nearest_of_several_matches() {
    let file = "x\nmid\nmid\nmid\nx\nend\n";
    let near_end = "--- a/f\n+++ b/f\n@@ -5,1 +5,1 @@\n-x\n+y\n";
    let near_start = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-x\n+y\n";
    assert_eq!(
        run(near_end, &[("f", file)]),
        Ok(vec![update(
            "f",
            "x\nmid\nmid\nmid\ny\nend\n",
            MatchLevel::Exact
        )])
    );
    assert_eq!(
        run(near_start, &[("f", file)]),
        Ok(vec![update(
            "f",
            "y\nmid\nmid\nmid\nx\nend\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn dev_null_adds_and_deletes() {
    let text = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\
                --- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    assert_eq!(
        run(text, &[("gone.txt", "bye\n")]),
        Ok(vec![
            FileChange::Add {
                path: "new.txt".into(),
                content: "one\ntwo\n".into()
            },
            FileChange::Delete {
                path: "gone.txt".into()
            },
        ])
    );
}

#[test]
fn git_rename_with_changes_and_pure_rename() {
    let text = "diff --git a/old.rs b/new.rs\n\
                similarity index 80%\n\
                rename from old.rs\n\
                rename to new.rs\n\
                --- a/old.rs\n\
                +++ b/new.rs\n\
                @@ -1 +1 @@\n\
                -a\n\
                +b\n\
                diff --git a/x b/y\n\
                similarity index 100%\n\
                rename from x\n\
                rename to y\n";
    assert_eq!(
        run(text, &[("old.rs", "a\n"), ("x", "same\n")]),
        Ok(vec![
            FileChange::Update {
                path: "old.rs".into(),
                new_content: "b\n".into(),
                move_to: Some("new.rs".into()),
                level: MatchLevel::Exact,
            },
            FileChange::Update {
                path: "x".into(),
                new_content: "same\n".into(),
                move_to: Some("y".into()),
                level: MatchLevel::Exact,
            },
        ])
    );
}

#[test]
fn no_newline_markers_change_the_final_newline_explicitly() {
    let remove_newline =
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n";
    let add_newline =
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
    assert_eq!(
        run(remove_newline, &[("f", "a\nb\n")]),
        Ok(vec![update("f", "a\nb", MatchLevel::Exact)])
    );
    assert_eq!(
        run(add_newline, &[("f", "a\nb")]),
        Ok(vec![update("f", "a\nb\n", MatchLevel::Exact)])
    );
}

#[test]
fn without_markers_a_missing_final_newline_is_kept() {
    let text = "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n";
    assert_eq!(
        run(text, &[("f", "a\nb")]),
        Ok(vec![update("f", "a\nb\nc", MatchLevel::Exact)])
    );
}

#[test]
fn pure_insertion_uses_the_header_position() {
    let text = "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+inserted\n";
    assert_eq!(
        run(text, &[("f", "1\n2\n3\n")]),
        Ok(vec![update("f", "1\n2\ninserted\n3\n", MatchLevel::Exact)])
    );
}

#[test]
fn wrong_counts_and_timestamps_are_tolerated() {
    // Counts too small for the first hunk, too large for the second; a blank separator line.
    let text = "--- f.orig\t2024-01-01 10:00:00\n+++ f\t2024-01-02 10:00:00\n\
                @@ -1,1 +1,1 @@\n a\n-b\n+B\n c\n\n\
                @@ -8,9 +8,9 @@\n-y\n+Y\n\n\
                --- a/g\n+++ b/g\n@@ -1 +1 @@\n-g\n+G\n";
    assert_eq!(
        run(text, &[("f", "a\nb\nc\nx\ny\n"), ("g", "g\n")]),
        Ok(vec![
            update("f", "a\nB\nc\nx\nY\n", MatchLevel::Exact),
            update("g", "G\n", MatchLevel::Exact),
        ])
    );
}

#[test]
fn crlf_file_keeps_crlf() {
    let text = "--- a/w\n+++ b/w\n@@ -1,2 +1,3 @@\n a\n-b\n+B\n+C\n";
    assert_eq!(
        run(text, &[("w", "a\r\nb\r\n")]),
        Ok(vec![update("w", "a\r\nB\r\nC\r\n", MatchLevel::Exact)])
    );
}

#[test]
fn bare_at_at_with_anchor_is_accepted() {
    let text = "--- a/f\n+++ b/f\n@@ [b]\n-k = 1\n+k = 2\n";
    assert_eq!(
        run(text, &[("f", "[a]\nk = 1\n[b]\nk = 1\n")]),
        Ok(vec![update(
            "f",
            "[a]\nk = 1\n[b]\nk = 2\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn quoted_git_paths_are_unquoted() {
    let text = "diff --git \"a/sp ace\\303\\244.txt\" \"b/sp ace\\303\\244.txt\"\n\
                new file mode 100644\n";
    assert_eq!(
        run(text, &[]),
        Ok(vec![FileChange::Add {
            path: "sp ace\u{e4}.txt".into(),
            content: String::new()
        }])
    );
}

#[test]
fn hunk_before_any_header_is_malformed() {
    let err = patch::parse("some text\n@@ -1 +1 @@\n-a\n+b\n").err();
    assert_eq!(
        err,
        Some(PatchError::Malformed {
            line: 2,
            message: "found a hunk (`@@`) before any file header; start each file with \
                      `--- a/<path>` and `+++ b/<path>` lines"
                .into()
        })
    );
}

#[test]
fn binary_patches_are_refused() {
    let text = "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n";
    assert_eq!(
        patch::parse(text).map_err(|e| e.to_string()),
        Err(
            "`img.png`: binary patches are not supported by this tool. Nothing was changed (a \
             patch applies completely or not at all). Remove that part from the patch and handle \
             the file another way."
                .into()
        )
    );
}

#[test]
fn unrecognised_text_names_the_formats() {
    assert_eq!(
        patch::parse("please change foo to bar").map_err(|e| e.to_string()),
        Err(
            "The patch is malformed at line 1: unrecognised patch format: expected `*** Begin \
             Patch`, or a unified diff with `--- a/<path>` and `+++ b/<path>` headers, found \
             `please change foo to bar`. Nothing was changed (a patch applies completely or not \
             at all)."
                .into()
        )
    );
}

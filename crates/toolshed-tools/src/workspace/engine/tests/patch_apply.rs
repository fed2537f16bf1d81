//! All-or-nothing application and the errors a model sees.

use super::run;
use crate::workspace::engine::patch::{
    self, MAX_PATCH_BYTES, MAX_PATCH_FILES, NumberedLine, PatchError,
};

fn message(result: Result<impl std::fmt::Debug, PatchError>) -> String {
    match result {
        Ok(v) => format!("unexpected success: {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn failing_second_hunk_returns_an_error_and_no_changes() {
    let text = "*** Begin Patch\n\
                *** Add File: first.txt\n\
                +made\n\
                *** Update File: f.rs\n\
                @@\n-a();\n+A();\n\
                @@ fn tail() {\n-    missing();\n+    found();\n\
                *** End Patch\n";
    let file = "a();\nfn tail() {\n    present();\n}\n";
    let err = run(text, &[("f.rs", file)]);
    assert_eq!(
        err,
        Err(PatchError::HunkNotFound {
            path: "f.rs".into(),
            hunk: 2,
            patch_line: 8,
            expected: vec!["    missing();".into()],
            from_line: 3,
            end_of_file: false,
            nearest: vec![NumberedLine {
                number: 3,
                text: "    present();".into()
            }],
        })
    );
    assert_eq!(
        message(err),
        "`f.rs`, hunk 2 (patch line 8): the hunk's context and removed lines were not found at \
         or after line 3, not even ignoring whitespace and Unicode punctuation. The hunk \
         expects:\n      missing();\nThe most similar lines in the file are:\n  3 |     \
         present();\nNothing was changed (a patch applies completely or not at all). Read the \
         file again and rewrite this hunk with context and `-` lines copied exactly from it."
    );
}

#[test]
fn missing_anchor_names_the_hunk_and_the_nearest_line() {
    let text = "*** Begin Patch\n*** Update File: f\n@@ fn mian() {\n-x\n+y\n*** End Patch\n";
    assert_eq!(
        message(run(text, &[("f", "use a;\nfn main() {\nx\n}\n")])),
        "`f`, hunk 1 (patch line 3): the `@@` anchor line `fn mian() {` was not found at or after \
         line 1, not even ignoring whitespace and Unicode punctuation. The most similar lines in \
         the file are:\n  2 | fn main() {\nNothing was changed (a patch applies completely or not \
         at all). Copy the anchor line exactly from the file, or drop it and give more context \
         lines."
    );
}

#[test]
fn file_existence_is_checked() {
    let add = "*** Begin Patch\n*** Add File: f\n+x\n*** End Patch\n";
    let update = "*** Begin Patch\n*** Update File: f\n@@\n-x\n+y\n*** End Patch\n";
    let delete = "*** Begin Patch\n*** Delete File: f\n*** End Patch\n";
    let moved = "*** Begin Patch\n*** Update File: f\n*** Move to: g\n*** End Patch\n";
    assert_eq!(
        run(add, &[("f", "x\n")]),
        Err(PatchError::AddExisting { path: "f".into() })
    );
    assert_eq!(
        message(run(update, &[])),
        "`f` does not exist, so it cannot be updated. Nothing was changed (a patch applies \
         completely or not at all). Check the path (list the directory to find it), or use \
         `*** Add File: f` to create it."
    );
    assert_eq!(
        run(delete, &[]),
        Err(PatchError::MissingFile {
            path: "f".into(),
            operation: "delete"
        })
    );
    assert_eq!(
        run(moved, &[("f", "x\n"), ("g", "y\n")]),
        Err(PatchError::MoveTargetExists {
            path: "f".into(),
            move_to: "g".into()
        })
    );
}

#[test]
fn two_operations_on_one_path_are_refused() {
    let text =
        "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Delete File: b\n*** End Patch\n";
    assert_eq!(
        message(patch::parse(text)),
        "`b` is touched twice, at patch lines 2 and 4. Nothing was changed (a patch applies \
         completely or not at all). Merge all changes to one file into a single section."
    );
}

#[test]
fn empty_patches_are_refused() {
    assert_eq!(patch::parse(" \n\n"), Err(PatchError::Empty));
    assert_eq!(
        patch::parse("*** Begin Patch\n*** End Patch\n"),
        Err(PatchError::Empty)
    );
}

#[test]
fn size_and_file_count_are_capped() {
    let huge = "x".repeat(MAX_PATCH_BYTES + 1);
    assert_eq!(
        patch::parse(&huge),
        Err(PatchError::TooLarge {
            bytes: MAX_PATCH_BYTES + 1
        })
    );
    let mut many = String::from("*** Begin Patch\n");
    for k in 0..=MAX_PATCH_FILES {
        many.push_str(&format!("*** Delete File: f{k}\n"));
    }
    many.push_str("*** End Patch\n");
    assert_eq!(
        patch::parse(&many),
        Err(PatchError::TooManyFiles {
            count: MAX_PATCH_FILES + 1
        })
    );
}

#[test]
fn malformed_patches_name_the_line_and_what_was_expected() {
    let cases = [
        (
            "*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n",
            PatchError::Malformed {
                line: 6,
                message: "the patch ends without `*** End Patch` (it may have been cut off); end \
                          it with a `*** End Patch` line"
                    .into(),
            },
        ),
        (
            "*** Begin Patch\n*** Update File: f\n@@\n-a\nb\n*** End Patch\n",
            PatchError::Malformed {
                line: 5,
                message: "expected a hunk line starting with ` ` (context), `-` (remove), `+` \
                          (add) or `@@`, found `b`; every context line needs a leading space"
                    .into(),
            },
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: f\n*** End Patch\n",
            PatchError::Malformed {
                line: 2,
                message: "expected `*** Add File: <path>`, `*** Delete File: <path>`, `*** \
                          Update File: <path>` or `*** End Patch`, found `*** Frobnicate File: f`"
                    .into(),
            },
        ),
        (
            "*** Begin Patch\n*** Update File: f\n*** End Patch\n",
            PatchError::Malformed {
                line: 2,
                message: "`*** Update File: f` has no hunks; follow it with `@@` and lines \
                          starting with ` `, `-` or `+`, or remove the section"
                    .into(),
            },
        ),
        (
            "*** Begin Patch\n*** Add File:\n*** End Patch\n",
            PatchError::Malformed {
                line: 2,
                message: "`*** Add File:` needs a path after it, as in `*** Add File: src/main.rs`"
                    .into(),
            },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(patch::parse(text), Err(expected), "{text}");
    }
}

#[test]
fn malformed_message_is_written_for_a_model() {
    assert_eq!(
        message(patch::parse("*** Begin Patch\n*** Delete File: f\n")),
        "The patch is malformed at line 3: the patch ends without `*** End Patch` (it may have \
         been cut off); end it with a `*** End Patch` line. Nothing was changed (a patch applies \
         completely or not at all)."
    );
}

#[test]
fn deleting_everything_leaves_an_empty_file() {
    let text = "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n";
    assert_eq!(
        run(text, &[("f", "a\nb\n")]),
        Ok(vec![super::update(
            "f",
            "",
            crate::workspace::engine::matching::MatchLevel::Exact
        )])
    );
}

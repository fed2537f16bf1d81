//! The `*** Begin Patch` format.

use super::{run, update};
use crate::workspace::engine::matching::MatchLevel;
use crate::workspace::engine::patch::{self, FileChange, FileOp, PatchFormat};

#[test]
fn add_delete_and_update_with_move() {
    let text = "*** Begin Patch\n\
                *** Add File: new.txt\n\
                +hello\n\
                +world\n\
                *** Delete File: old.txt\n\
                *** Update File: src/a.rs\n\
                *** Move to: src/b.rs\n\
                @@\n \
                fn a() {\n\
                -    one();\n\
                +    two();\n \
                }\n\
                *** End Patch\n";
    let got = run(
        text,
        &[
            ("old.txt", "bye\n"),
            ("src/a.rs", "fn a() {\n    one();\n}\n"),
        ],
    );
    assert_eq!(
        got,
        Ok(vec![
            FileChange::Add {
                path: "new.txt".into(),
                content: "hello\nworld\n".into()
            },
            FileChange::Delete {
                path: "old.txt".into()
            },
            FileChange::Update {
                path: "src/a.rs".into(),
                new_content: "fn a() {\n    two();\n}\n".into(),
                move_to: Some("src/b.rs".into()),
                level: MatchLevel::Exact,
            },
        ])
    );
}

#[test]
fn format_is_detected() {
    let parsed = patch::parse("\n*** Begin Patch\n*** Delete File: x\n*** End Patch");
    assert_eq!(parsed.map(|p| p.format), Ok(PatchFormat::BeginEndPatch));
}

#[test]
fn anchors_narrow_down_progressively() {
    let file = "impl A {\n    fn run() {\n        x();\n    }\n}\nimpl B {\n    fn run() {\n        x();\n    }\n}\n";
    let text = "*** Begin Patch\n*** Update File: f.rs\n@@ impl B {\n@@     fn run() {\n-        x();\n+        y();\n*** End Patch\n";
    assert_eq!(
        run(text, &[("f.rs", file)]),
        Ok(vec![update(
            "f.rs",
            "impl A {\n    fn run() {\n        x();\n    }\n}\nimpl B {\n    fn run() {\n        y();\n    }\n}\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn pure_addition_hunk_is_inserted_after_its_anchor() {
    let file = "[a]\nk = 1\n[b]\nk = 2\n";
    let text = "*** Begin Patch\n*** Update File: c.toml\n@@ [a]\n+new = true\n*** End Patch\n";
    assert_eq!(
        run(text, &[("c.toml", file)]),
        Ok(vec![update(
            "c.toml",
            "[a]\nnew = true\nk = 1\n[b]\nk = 2\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn pure_addition_without_anchor_appends() {
    let text = "*** Begin Patch\n*** Update File: f\n@@\n+z\n*** End Patch\n";
    assert_eq!(
        run(text, &[("f", "x\ny\n")]),
        Ok(vec![update("f", "x\ny\nz\n", MatchLevel::Exact)])
    );
}

#[test]
fn end_of_file_hunk_matches_at_the_end() {
    let file = "x\ny\nx\n";
    let plain = "*** Begin Patch\n*** Update File: f\n@@\n-x\n+z\n*** End Patch\n";
    let at_end =
        "*** Begin Patch\n*** Update File: f\n@@\n-x\n+z\n*** End of File\n*** End Patch\n";
    assert_eq!(
        run(plain, &[("f", file)]),
        Ok(vec![update("f", "z\ny\nx\n", MatchLevel::Exact)])
    );
    assert_eq!(
        run(at_end, &[("f", file)]),
        Ok(vec![update("f", "x\ny\nz\n", MatchLevel::Exact)])
    );
}

#[test]
fn end_of_file_hunk_that_only_matches_earlier_fails() {
    let text = "*** Begin Patch\n*** Update File: f\n@@\n-x\n+z\n*** End of File\n*** End Patch\n";
    let err = run(text, &[("f", "x\ny\n")]).err();
    assert_eq!(
        err.map(|e| e.to_string()).unwrap_or_default(),
        "`f`, hunk 1 (patch line 3): the hunk's context and removed lines were not found at the \
         end of the file (`*** End of File`), not even ignoring whitespace and Unicode \
         punctuation. The hunk expects:\n  x\nThe most similar lines in the file are:\n  1 | x\n\
         Nothing was changed (a patch applies completely or not at all). Read the file again and \
         rewrite this hunk with context and `-` lines copied exactly from it."
    );
}

#[test]
fn hunks_apply_in_order_each_after_the_previous() {
    let text = "*** Begin Patch\n*** Update File: f\n@@\n a\n-x\n+1\n@@\n-x\n+2\n*** End Patch\n";
    assert_eq!(
        run(text, &[("f", "x\na\nx\nb\nx\n")]),
        Ok(vec![update("f", "x\na\n1\nb\n2\n", MatchLevel::Exact)])
    );
}

#[test]
fn crlf_file_stays_crlf_including_added_lines() {
    let text = "*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+TWO\n+2.5\n three\n*** End Patch\n";
    assert_eq!(
        run(text, &[("w.txt", "one\r\ntwo\r\nthree\r\n")]),
        Ok(vec![update(
            "w.txt",
            "one\r\nTWO\r\n2.5\r\nthree\r\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn crlf_patch_text_applies_to_an_lf_file() {
    let text = "*** Begin Patch\r\n*** Update File: f\r\n@@\r\n-a\r\n+b\r\n*** End Patch\r\n";
    assert_eq!(
        run(text, &[("f", "a\n")]),
        Ok(vec![update("f", "b\n", MatchLevel::Exact)])
    );
}

#[test]
fn missing_final_newline_is_preserved() {
    let change_last = "*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+B\n*** End Patch\n";
    let append = "*** Begin Patch\n*** Update File: f\n@@\n+c\n*** End of File\n*** End Patch\n";
    assert_eq!(
        run(change_last, &[("f", "a\nb")]),
        Ok(vec![update("f", "a\nB", MatchLevel::Exact)])
    );
    assert_eq!(
        run(append, &[("f", "a\nb")]),
        Ok(vec![update("f", "a\nb\nc", MatchLevel::Exact)])
    );
}

#[test]
fn each_fuzz_level_is_reported() {
    let cases = [
        ("    call(x);   \n", MatchLevel::TrailingWhitespace),
        ("\tcall(x);\n", MatchLevel::SurroundingWhitespace),
        (
            "    call(\u{201C}x\u{201D} \u{2014} 1);\n",
            MatchLevel::UnicodePunctuation,
        ),
    ];
    for (line, level) in cases {
        let file = format!("start\n{line}end\n");
        let context = if level == MatchLevel::UnicodePunctuation {
            "    call(\"x\" - 1);"
        } else {
            "    call(x);"
        };
        let text = format!(
            "*** Begin Patch\n*** Update File: f\n@@\n start\n {context}\n-end\n+END\n*** End Patch\n"
        );
        // The fuzzily matched context line is kept as the file has it.
        assert_eq!(
            run(&text, &[("f", &file)]),
            Ok(vec![update("f", &format!("start\n{line}END\n"), level)]),
            "{level:?}"
        );
    }
}

#[test]
fn lenient_blank_lines_and_missing_space_on_empty_context() {
    let text = "\n*** Begin Patch\n\n*** Update File: f\n\n@@\n a\n\n-b\n+B\n\n*** End Patch\n\n";
    assert_eq!(
        run(text, &[("f", "a\n\nb\n")]),
        Ok(vec![update("f", "a\n\nB\n", MatchLevel::Exact)])
    );
}

#[test]
fn first_hunk_may_omit_its_at_at() {
    let text = "*** Begin Patch\n*** Update File: f\n-a\n+b\n*** End Patch";
    assert_eq!(
        run(text, &[("f", "a\n")]),
        Ok(vec![update("f", "b\n", MatchLevel::Exact)])
    );
}

#[test]
fn add_file_without_final_newline_marker() {
    let parsed = patch::parse(
        "*** Begin Patch\n*** Add File: f\n+a\n\n+b\n\\ No newline at end of file\n*** End Patch\n",
    );
    assert_eq!(
        parsed.map(|p| p.files.into_iter().map(|f| f.op).collect::<Vec<_>>()),
        Ok(vec![FileOp::Add {
            content: "a\n\nb".into()
        }])
    );
}

#[test]
fn context_line_that_looks_like_a_marker_is_context() {
    let text =
        "*** Begin Patch\n*** Update File: f\n@@\n *** Update File: g\n-x\n+y\n*** End Patch\n";
    assert_eq!(
        run(text, &[("f", "*** Update File: g\nx\n")]),
        Ok(vec![update(
            "f",
            "*** Update File: g\ny\n",
            MatchLevel::Exact
        )])
    );
}

#[test]
fn unified_range_after_at_at_is_a_hint_not_an_anchor() {
    let text = "*** Begin Patch\n*** Update File: f\n@@ -3,1 +3,1 @@\n-x\n+y\n*** End Patch\n";
    assert_eq!(
        run(text, &[("f", "x\na\nx\n")]),
        Ok(vec![update("f", "x\na\ny\n", MatchLevel::Exact)])
    );
}

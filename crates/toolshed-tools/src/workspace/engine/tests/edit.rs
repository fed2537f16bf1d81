use crate::workspace::engine::edit::{Candidate, EditError, EditOutcome, apply_edit};

fn outcome(content: &str, replacements: usize, fallback: Option<&str>) -> EditOutcome {
    EditOutcome {
        content: content.to_string(),
        replacements,
        fallback: fallback.map(str::to_string),
    }
}

#[test]
fn exact_single_match_is_replaced() {
    let got = apply_edit("fn a() {\n    one();\n}\n", "one();", "two();", false);
    assert_eq!(got, Ok(outcome("fn a() {\n    two();\n}\n", 1, None)));
}

#[test]
fn replace_all_replaces_every_occurrence_and_counts_them() {
    let got = apply_edit("x = 1\ny = x\nz = x\n", "x", "w", true);
    assert_eq!(got, Ok(outcome("w = 1\ny = w\nz = w\n", 3, None)));
}

#[test]
fn ambiguous_match_lists_the_lines_and_changes_nothing() {
    let err = apply_edit("a\nfoo()\nb\nfoo()\nc\nfoo()\n", "foo()", "bar()", false);
    let err = err.err();
    assert_eq!(
        err,
        Some(EditError::Ambiguous {
            count: 3,
            lines: vec![2, 4, 6],
            fallback: None,
        })
    );
    assert_eq!(
        err.map(|e| e.to_string()).unwrap_or_default(),
        "The text to replace occurs 3 times (at lines 2, 4, 6), so the edit is ambiguous and \
         nothing was changed. Include more surrounding lines so it matches exactly once, or set \
         replace_all to replace every occurrence."
    );
}

#[test]
fn ambiguous_match_list_is_capped_at_twenty() {
    let content = "x\n".repeat(25);
    let Err(EditError::Ambiguous { count, lines, .. }) = apply_edit(&content, "x", "y", false)
    else {
        panic!("expected an ambiguity");
    };
    assert_eq!(count, 25);
    assert_eq!(lines, (1..=20).collect::<Vec<_>>());
}

#[test]
fn not_found_reports_the_closest_region_with_its_line_numbers() {
    let content = "fn main() {\n    let a = 1;\n    let b = 2;\n    println!(\"{a}\");\n}\n";
    let err = apply_edit(content, "let b = 3;\nprintln!(\"{b}\");", "x", false).err();
    let Some(EditError::NotFound {
        closest: Some(candidate),
    }) = &err
    else {
        panic!("expected a closest candidate, got {err:?}");
    };
    assert_eq!(
        (
            candidate.start_line,
            candidate.end_line,
            candidate.text.as_str()
        ),
        (3, 4, "    let b = 2;\n    println!(\"{a}\");")
    );
    assert!(candidate.similarity > 0.7 && candidate.similarity < 1.0);
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.starts_with(
            "The text to replace was not found in the file, not even ignoring whitespace. \
             The closest match is at lines 3-4 ("
        ),
        "{message}"
    );
    assert!(
        message.ends_with(
            "% similar):\n  3 |     let b = 2;\n  4 |     println!(\"{a}\");\nNothing was \
             changed. Read those lines again and copy them exactly, including indentation, into \
             the text to replace."
        ),
        "{message}"
    );
}

#[test]
fn not_found_in_an_empty_file_has_no_candidate() {
    assert_eq!(
        apply_edit("", "x", "y", false),
        Err(EditError::NotFound { closest: None })
    );
}

#[test]
fn empty_old_and_identical_new_are_refused() {
    assert_eq!(apply_edit("a\n", "", "b", false), Err(EditError::EmptyOld));
    assert_eq!(
        apply_edit("a\n", "a", "a", false),
        Err(EditError::Unchanged)
    );
}

#[test]
fn trailing_whitespace_fallback_is_used_and_reported() {
    let content = "if x {   \n    go();\t\n}\n";
    let got = apply_edit(
        content,
        "if x {\n    go();\n",
        "if y {\n    stop();\n",
        false,
    );
    assert_eq!(
        got,
        Ok(outcome(
            "if y {\n    stop();\n}\n",
            1,
            Some("ignored trailing whitespace")
        ))
    );
}

#[test]
fn indentation_fallback_reindents_the_replacement() {
    let content = "impl A {\n        fn f() {\n            a();\n        }\n}\n";
    let got = apply_edit(
        content,
        "fn f() {\n    a();\n}",
        "fn f() {\n    b();\n    c();\n}",
        false,
    );
    assert_eq!(
        got,
        Ok(outcome(
            "impl A {\n        fn f() {\n            b();\n            c();\n        }\n}\n",
            1,
            Some("ignored leading and trailing whitespace")
        ))
    );
}

#[test]
fn indentation_fallback_can_remove_indentation() {
    let got = apply_edit("a\n  b\n", "    b", "    c\n    d", false);
    assert_eq!(
        got,
        Ok(outcome(
            "a\n  c\n  d\n",
            1,
            Some("ignored leading and trailing whitespace")
        ))
    );
}

#[test]
fn whitespace_fallback_is_refused_when_ambiguous() {
    let content = "  x = 1  \nother\nx = 1\t\n";
    let err = apply_edit(content, "\tx = 1", "x = 2", false).err();
    assert_eq!(
        err,
        Some(EditError::Ambiguous {
            count: 2,
            lines: vec![1, 3],
            fallback: Some("ignored leading and trailing whitespace".to_string()),
        })
    );
    assert_eq!(
        err.map(|e| e.to_string()).unwrap_or_default(),
        "The text to replace was not found exactly; compared loosely (ignored leading and \
         trailing whitespace) it matches 2 places (at lines 1, 3), which is too uncertain to \
         edit, so nothing was changed. Copy the text exactly from the file, including whitespace, \
         with enough surrounding lines to match once."
    );
    // replace_all does not make a loose match acceptable.
    assert!(matches!(
        apply_edit(content, "\tx = 1", "x = 2", true),
        Err(EditError::Ambiguous { count: 2, .. })
    ));
}

#[test]
fn crlf_file_matched_and_written_with_crlf() {
    let content = "one\r\ntwo\r\nthree\r\n";
    let got = apply_edit(content, "one\ntwo\n", "uno\ndos\nmas\n", false);
    assert_eq!(got, Ok(outcome("uno\r\ndos\r\nmas\r\nthree\r\n", 1, None)));
}

#[test]
fn crlf_file_single_line_old_with_multi_line_new() {
    let got = apply_edit("a\r\nb\r\n", "b", "b\nc", false);
    assert_eq!(got, Ok(outcome("a\r\nb\r\nc\r\n", 1, None)));
}

#[test]
fn lf_newline_cannot_match_half_of_a_crlf() {
    let got = apply_edit("a\r\nb", "\n", "\n\n", true);
    assert_eq!(got, Ok(outcome("a\r\n\r\nb", 1, None)));
}

#[test]
fn crlf_fallback_keeps_crlf_and_the_missing_final_newline() {
    let content = "keep\r\n  old  \r\nlast  ";
    let got = apply_edit(content, "old\nlast", "new\nend", false);
    assert_eq!(
        got,
        Ok(outcome(
            "keep\r\n  new\r\n  end",
            1,
            Some("ignored leading and trailing whitespace")
        ))
    );
}

#[test]
fn candidate_is_exposed_for_messages() {
    let err = apply_edit("alpha\nbeta\ngamma\n", "gamme", "x", false);
    assert_eq!(
        err.err().and_then(|e| match e {
            EditError::NotFound { closest } => closest,
            _ => None,
        }),
        Some(Candidate {
            start_line: 3,
            end_line: 3,
            text: "gamma".to_string(),
            similarity: 0.8,
        })
    );
}

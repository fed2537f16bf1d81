use crate::workspace::engine::diff::{stats, unified};

#[test]
fn unified_diff_has_headers_hunks_and_context() {
    let before = "a\nb\nc\nd\ne\nf\ng\n";
    let after = "a\nb\nc\nD\ne\nf\ng\nh\n";
    assert_eq!(
        unified("src/x.txt", before, after, 1),
        "--- a/src/x.txt\n+++ b/src/x.txt\n@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n@@ -7 +7,2 @@\n g\n+h\n"
    );
}

#[test]
fn unified_diff_marks_a_missing_final_newline() {
    assert_eq!(
        unified("f", "one\ntwo", "one\ntwo\n", 3),
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+two\n"
    );
    assert_eq!(
        unified("f", "one\n", "one\nend", 3),
        "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n one\n+end\n\\ No newline at end of file\n"
    );
}

#[test]
fn unified_diff_of_equal_texts_is_empty() {
    assert_eq!(unified("f", "same\n", "same\n", 3), "");
}

#[test]
fn stats_count_added_and_removed_lines() {
    assert_eq!(stats("a\nb\nc\n", "a\nB\nc\nd\ne\n"), (3, 1));
    assert_eq!(stats("", ""), (0, 0));
}

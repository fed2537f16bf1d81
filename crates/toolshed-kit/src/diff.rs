//! Unified diffs of a change, for the tool to show the model what it did.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

/// Past this, the line diff settles for an approximate (still correct, maybe longer) diff
/// instead of stalling on a huge, very different pair of files.
const DIFF_TIMEOUT: Duration = Duration::from_secs(5);

fn line_diff<'a>(before: &'a str, after: &'a str) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after)
}

/// A standard unified diff (`--- a/path`, `+++ b/path`, `@@ -l,c +l,c @@`) with `context`
/// lines around each change and `\ No newline at end of file` where a side lacks one.
/// Empty when the texts are equal.
pub fn unified(path: &str, before: &str, after: &str, context: usize) -> String {
    line_diff(before, after)
        .unified_diff()
        .context_radius(context)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// How many lines were `(added, removed)` between `before` and `after`.
pub fn stats(before: &str, after: &str) -> (usize, usize) {
    let diff = line_diff(before, after);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

//! Applying a parsed patch in memory, all-or-nothing.

use super::{FileChange, FileOp, Hunk, HunkLine, NumberedLine, Patch, PatchError};
use crate::workspace::engine::matching::{self, MatchLevel, Placement};
use crate::workspace::engine::text::{self, Line, dominant_eol, split_lines};

/// Computes every file's new state from `patch` and `read`, which returns a file's current
/// content (`None` when it does not exist).
///
/// Returns all changes, in patch order, or the first error and no change at all, so the
/// caller can refuse to write anything. A change with `move_to` is to be written at the new
/// path, and the old path removed.
pub fn apply(
    patch: &Patch,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FileChange>, PatchError> {
    let mut changes = Vec::with_capacity(patch.files.len());
    for file in &patch.files {
        let path = file.path.clone();
        let change = match &file.op {
            FileOp::Add { content } => {
                if read(&path).is_some() {
                    return Err(PatchError::AddExisting { path });
                }
                FileChange::Add {
                    path,
                    content: content.clone(),
                }
            }
            FileOp::Delete => {
                if read(&path).is_none() {
                    return Err(PatchError::MissingFile {
                        path,
                        operation: "delete",
                    });
                }
                FileChange::Delete { path }
            }
            FileOp::Update { move_to, hunks } => {
                let Some(content) = read(&path) else {
                    return Err(PatchError::MissingFile {
                        path,
                        operation: "update",
                    });
                };
                if let Some(to) = move_to
                    && read(to).is_some()
                {
                    return Err(PatchError::MoveTargetExists {
                        path,
                        move_to: to.clone(),
                    });
                }
                let (new_content, level) = apply_hunks(&path, &content, hunks)?;
                FileChange::Update {
                    path,
                    new_content,
                    move_to: move_to.clone(),
                    level,
                }
            }
        };
        changes.push(change);
    }
    Ok(changes)
}

/// Where one hunk goes: it replaces `len` lines from index `start`.
struct Placed<'h> {
    start: usize,
    len: usize,
    hunk: &'h Hunk,
}

/// Applies `hunks` to `content` in order, each searched after the previous one. Returns the
/// new content and the loosest match level needed.
fn apply_hunks(
    path: &str,
    content: &str,
    hunks: &[Hunk],
) -> Result<(String, MatchLevel), PatchError> {
    let lines = split_lines(content);
    let texts: Vec<&str> = lines.iter().map(|l| l.text).collect();
    let mut level = MatchLevel::Exact;
    let mut cursor = 0;
    let mut final_newline = content.is_empty() || content.ends_with('\n');
    let mut placed = Vec::with_capacity(hunks.len());

    for (k, hunk) in hunks.iter().enumerate() {
        let number = k + 1;
        for anchor in &hunk.anchors {
            match matching::seek(&texts, &[anchor.as_str()], cursor, Placement::First) {
                Some((at, found)) => {
                    cursor = at + 1;
                    level = level.max(found);
                }
                None => {
                    return Err(PatchError::AnchorNotFound {
                        path: path.to_string(),
                        hunk: number,
                        patch_line: hunk.line,
                        anchor: anchor.clone(),
                        from_line: cursor + 1,
                        nearest: nearest_lines(&texts, &[anchor.as_str()]),
                    });
                }
            }
        }
        let old = hunk.old_lines();
        let start = if old.is_empty() {
            insertion_point(hunk, cursor, texts.len())
        } else {
            let placement = if hunk.end_of_file {
                Placement::AtEnd
            } else if let Some(first) = hunk.old_start {
                Placement::Nearest(first.saturating_sub(1))
            } else {
                Placement::First
            };
            match matching::seek(&texts, &old, cursor, placement) {
                Some((at, found)) => {
                    level = level.max(found);
                    at
                }
                None => {
                    return Err(PatchError::HunkNotFound {
                        path: path.to_string(),
                        hunk: number,
                        patch_line: hunk.line,
                        expected: old.iter().map(|l| l.to_string()).collect(),
                        from_line: cursor + 1,
                        end_of_file: hunk.end_of_file,
                        nearest: nearest_lines(&texts, &old),
                    });
                }
            }
        };
        if start + old.len() == texts.len() {
            // Only a hunk that reaches the end of the file may change its final newline.
            if hunk.new_no_newline {
                final_newline = false;
            } else if hunk.old_no_newline {
                final_newline = true;
            }
        }
        placed.push(Placed {
            start,
            len: old.len(),
            hunk,
        });
        cursor = start + old.len();
    }

    let result = splice(&lines, &placed);
    Ok((join(&result, dominant_eol(&lines), final_newline), level))
}

/// Where a hunk without context or removed lines inserts its lines: after its anchor, at
/// the end of the file (`*** End of File`, or no position given), or where a unified diff's
/// header says (`-5,0` inserts after line 5), but never before the previous hunk.
fn insertion_point(hunk: &Hunk, cursor: usize, len: usize) -> usize {
    if hunk.end_of_file {
        len
    } else if !hunk.anchors.is_empty() {
        cursor
    } else if let Some(first) = hunk.old_start {
        let after = if hunk.old_count == Some(0) {
            first
        } else {
            first.saturating_sub(1)
        };
        after.clamp(cursor, len.max(cursor))
    } else {
        len.max(cursor)
    }
}

/// The file's lines with every placed hunk applied. Context lines keep the file's text (a
/// fuzzy match must not rewrite them); added lines get an empty terminator, filled in by
/// [`join`].
fn splice<'a>(lines: &[Line<'a>], placed: &'a [Placed<'a>]) -> Vec<Line<'a>> {
    let mut out = Vec::with_capacity(lines.len());
    let mut next = 0;
    for p in placed {
        out.extend_from_slice(lines.get(next..p.start).unwrap_or(&[]));
        let mut at = p.start;
        for hl in &p.hunk.lines {
            match hl {
                HunkLine::Context(_) => {
                    out.extend(lines.get(at).copied());
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(t) => out.push(Line { text: t, eol: "" }),
            }
        }
        next = p.start + p.len;
    }
    out.extend_from_slice(lines.get(next..).unwrap_or(&[]));
    out
}

/// Joins lines: each keeps its own terminator, lines without one get `eol`, and the last
/// line ends with a terminator only when `final_newline` is set.
fn join(lines: &[Line<'_>], eol: &str, final_newline: bool) -> String {
    let mut out = String::new();
    for (k, line) in lines.iter().enumerate() {
        out.push_str(line.text);
        let is_last = k + 1 == lines.len();
        if !is_last || final_newline {
            out.push_str(if line.eol.is_empty() { eol } else { line.eol });
        }
    }
    out
}

/// The file's lines most like `needle`, numbered, for an error message.
fn nearest_lines(texts: &[&str], needle: &[&str]) -> Vec<NumberedLine> {
    let Some(closest) = matching::closest_region(texts, needle) else {
        return Vec::new();
    };
    texts
        .iter()
        .enumerate()
        .skip(closest.start)
        .take(closest.len.min(text::MAX_SHOWN_LINES))
        .map(|(i, l)| NumberedLine {
            number: i + 1,
            text: l.to_string(),
        })
        .collect()
}

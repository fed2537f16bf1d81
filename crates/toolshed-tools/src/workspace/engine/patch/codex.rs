//! The `*** Begin Patch` / `*** End Patch` format of Codex's `apply_patch`.
//!
//! Leniency, because models write this format by hand: blank lines around markers are
//! skipped, markers may carry surrounding whitespace, an empty line inside a hunk is an
//! empty context line (the leading space got lost), and the first hunk of a file may omit
//! its `@@`, and a unified-diff `@@ -12,3 +12,4 @@` header counts as a position hint, not
//! an anchor. A missing `*** End Patch` is an error, though: it usually means the patch was
//! cut off, and applying a truncated patch would be worse than refusing it.

use super::unified::{HunkHeader, parse_hunk_header};
use super::{FileOp, FilePatch, Hunk, HunkLine, PatchError};

pub(super) const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

fn malformed(line: usize, message: impl Into<String>) -> PatchError {
    PatchError::Malformed {
        line,
        message: message.into(),
    }
}

/// The patch line for a message: shortened and quoted.
pub(super) fn quote(line: &str) -> String {
    format!("`{}`", super::super::text::shorten(line, 120))
}

/// Whether a line is one of the format's `***` markers (ignoring surrounding whitespace).
fn is_marker(line: &str) -> bool {
    let t = line.trim();
    t == END
        || t == END_OF_FILE
        || t == BEGIN
        || [ADD, DELETE, UPDATE, MOVE].iter().any(|m| t.starts_with(m))
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The path after a `*** X File:` marker.
fn header_path(rest: &str, line: usize, marker: &str) -> Result<String, PatchError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(malformed(
            line,
            format!("`{marker}` needs a path after it, as in `{marker} src/main.rs`"),
        ));
    }
    Ok(path.to_string())
}

/// Parses the file sections after `*** Begin Patch` (which is at index `i - 1`).
pub(super) fn parse(lines: &[&str], mut i: usize) -> Result<Vec<FilePatch>, PatchError> {
    let mut files = Vec::new();
    loop {
        while lines.get(i).is_some_and(|l| is_blank(l)) {
            i += 1;
        }
        let Some(raw) = lines.get(i) else {
            return Err(malformed(
                lines.len(),
                "the patch ends without `*** End Patch` (it may have been cut off); end it with \
                 a `*** End Patch` line",
            ));
        };
        let line = i + 1;
        let t = raw.trim();
        if t == END {
            let rest = lines.get(i + 1..).unwrap_or(&[]);
            if let Some(extra) = rest.iter().position(|l| !is_blank(l)) {
                return Err(malformed(
                    i + 2 + extra,
                    "unexpected text after `*** End Patch`; put everything before it, or send \
                     it separately",
                ));
            }
            return Ok(files);
        }
        if let Some(rest) = t.strip_prefix(ADD) {
            let path = header_path(rest, line, ADD)?;
            let (content, next) = parse_add_body(lines, i + 1);
            files.push(FilePatch {
                path,
                op: FileOp::Add { content },
                line,
            });
            i = next;
        } else if let Some(rest) = t.strip_prefix(DELETE) {
            let path = header_path(rest, line, DELETE)?;
            files.push(FilePatch {
                path,
                op: FileOp::Delete,
                line,
            });
            i += 1;
        } else if let Some(rest) = t.strip_prefix(UPDATE) {
            let path = header_path(rest, line, UPDATE)?;
            i += 1;
            let mut j = i;
            while lines.get(j).is_some_and(|l| is_blank(l)) {
                j += 1;
            }
            let mut move_to = None;
            if let Some(rest) = lines.get(j).and_then(|l| l.trim().strip_prefix(MOVE)) {
                let to = header_path(rest, j + 1, MOVE)?;
                if to != path {
                    move_to = Some(to);
                }
                i = j + 1;
            }
            let (hunks, next) = parse_hunks(lines, i)?;
            if hunks.is_empty() && move_to.is_none() {
                return Err(malformed(
                    line,
                    format!(
                        "`{UPDATE} {path}` has no hunks; follow it with `@@` and lines starting \
                         with ` `, `-` or `+`, or remove the section"
                    ),
                ));
            }
            files.push(FilePatch {
                path,
                op: FileOp::Update { move_to, hunks },
                line,
            });
            i = next;
        } else {
            return Err(malformed(
                line,
                format!(
                    "expected `{ADD} <path>`, `{DELETE} <path>`, `{UPDATE} <path>` or `{END}`, \
                     found {}",
                    quote(raw)
                ),
            ));
        }
    }
}

/// The content of an added file: its `+` lines. Returns it and the index after them.
fn parse_add_body(lines: &[&str], mut i: usize) -> (String, usize) {
    let mut body: Vec<&str> = Vec::new();
    let mut final_newline = true;
    while let Some(raw) = lines.get(i) {
        if let Some(text) = raw.strip_prefix('+') {
            body.push(text);
        } else if raw.starts_with('\\') && !body.is_empty() {
            final_newline = false;
        } else if is_blank(raw) && next_content_starts_with(lines, i, '+') {
            // A blank line between `+` lines is an empty line whose `+` was lost.
            body.push("");
        } else {
            break;
        }
        i += 1;
    }
    let mut content = body.join("\n");
    if final_newline && !body.is_empty() {
        content.push('\n');
    }
    (content, i)
}

/// Whether the next non-blank line after index `i` starts with `prefix`.
fn next_content_starts_with(lines: &[&str], i: usize, prefix: char) -> bool {
    lines
        .iter()
        .skip(i + 1)
        .find(|l| !is_blank(l))
        .is_some_and(|l| l.starts_with(prefix))
}

/// Whether the blank line at index `i` only precedes a marker, an `@@` or the end, so it
/// separates sections rather than being an empty context line.
fn is_separator(lines: &[&str], i: usize) -> bool {
    match lines.iter().skip(i + 1).find(|l| !is_blank(l)) {
        None => true,
        Some(next) => (next.starts_with("***") && is_marker(next)) || next.starts_with("@@"),
    }
}

/// Parses the hunks of an `Update File` section. Returns them and the index after them.
fn parse_hunks(lines: &[&str], mut i: usize) -> Result<(Vec<Hunk>, usize), PatchError> {
    let mut hunks = Vec::new();
    let mut current: Option<Hunk> = None;
    while let Some(raw) = lines.get(i) {
        let line = i + 1;
        // Inside a hunk a marker must start the line: ` *** x` is a context line.
        if raw.starts_with("***") && is_marker(raw) {
            if raw.trim() != END_OF_FILE {
                break;
            }
            match current.take() {
                Some(mut hunk) if !hunk.lines.is_empty() => {
                    hunk.end_of_file = true;
                    hunks.push(hunk);
                }
                _ => {
                    return Err(malformed(
                        line,
                        format!("`{END_OF_FILE}` must follow the lines of a hunk"),
                    ));
                }
            }
        } else if let Some(rest) = raw.strip_prefix("@@") {
            // `@@` starts a hunk; several in a row (before any line) narrow down anchors.
            if current.as_ref().is_some_and(|h| !h.lines.is_empty()) {
                hunks.extend(current.take());
            }
            let hunk = current.get_or_insert_with(|| Hunk {
                line,
                ..Hunk::default()
            });
            // Models sometimes write a unified-diff header here: use its numbers as a hint.
            match parse_hunk_header(raw, line) {
                Ok(HunkHeader::Numbered {
                    old_start,
                    old_count,
                    ..
                }) => {
                    hunk.old_start = Some(old_start);
                    hunk.old_count = Some(old_count);
                }
                _ => hunk.anchors.extend(anchor_text(rest)),
            }
        } else if raw.is_empty() && is_separator(lines, i) {
            // A blank line before a marker or `@@`: leniency, not context.
        } else {
            let hunk = current.get_or_insert_with(|| Hunk {
                line,
                ..Hunk::default()
            });
            push_body_line(hunk, raw, line)?;
        }
        i += 1;
    }
    if let Some(hunk) = current {
        if hunk.lines.is_empty() {
            return Err(malformed(
                hunk.line,
                "this `@@` has no lines after it; give context (` `), removed (`-`) and added \
                 (`+`) lines",
            ));
        }
        hunks.push(hunk);
    }
    Ok((hunks, i))
}

/// The anchor after `@@` (`rest`): one separating space dropped, indentation kept, a
/// closing `@@` ignored. `None` when there is none.
pub(super) fn anchor_text(rest: &str) -> Option<String> {
    let rest = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
    let anchor = rest.strip_suffix("@@").unwrap_or(rest).trim_end();
    (!anchor.trim().is_empty()).then(|| anchor.to_string())
}

/// Adds one body line (` `, `-`, `+`, `\`, or an empty line read as empty context) to `hunk`.
pub(super) fn push_body_line(hunk: &mut Hunk, raw: &str, line: usize) -> Result<(), PatchError> {
    if let Some(text) = raw.strip_prefix(' ') {
        hunk.lines.push(HunkLine::Context(text.to_string()));
    } else if let Some(text) = raw.strip_prefix('-') {
        hunk.lines.push(HunkLine::Remove(text.to_string()));
    } else if let Some(text) = raw.strip_prefix('+') {
        hunk.lines.push(HunkLine::Add(text.to_string()));
    } else if raw.is_empty() {
        hunk.lines.push(HunkLine::Context(String::new()));
    } else if raw.starts_with('\\') {
        match hunk.lines.last() {
            Some(HunkLine::Context(_)) => {
                hunk.old_no_newline = true;
                hunk.new_no_newline = true;
            }
            Some(HunkLine::Remove(_)) => hunk.old_no_newline = true,
            Some(HunkLine::Add(_)) => hunk.new_no_newline = true,
            None => {
                return Err(malformed(
                    line,
                    "`\\ No newline at end of file` must follow a hunk line",
                ));
            }
        }
    } else {
        return Err(malformed(
            line,
            format!(
                "expected a hunk line starting with ` ` (context), `-` (remove), `+` (add) or \
                 `@@`, found {}; every context line needs a leading space",
                quote(raw)
            ),
        ));
    }
    Ok(())
}

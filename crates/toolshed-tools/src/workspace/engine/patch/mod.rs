//! Multi-file patches: the engine of `workspace_patch`.
//!
//! [`parse`] reads either of the two formats models write, detected from the first
//! non-blank line:
//!
//! - the `*** Begin Patch` / `*** End Patch` envelope of Codex's `apply_patch`, with
//!   `*** Add File:`, `*** Delete File:`, `*** Update File:` (+ `*** Move to:`), hunks that
//!   start with `@@` and an optional anchor line, and `*** End of File`;
//! - a standard unified diff (`--- a/x` / `+++ b/x`, `@@ -l,c +l,c @@`, `diff --git` headers
//!   with renames, `/dev/null` for added and deleted files, `\ No newline at end of file`).
//!
//! [`apply`] then computes every change in memory against the caller's view of the files
//! and returns all of them or the first error, never a part: a patch whose third hunk does
//! not apply leaves the first two unapplied too, so the model can fix and resend the whole
//! patch without wondering what already happened.
//!
//! Hunks are placed by their content, not their line numbers: unified-diff line numbers only
//! say where to look first (the nearest match wins), because models rarely count right.
//! Context is compared strictly first and then more loosely, level by level
//! ([`MatchLevel`]); the loosest level a file needed is reported with its change.

mod apply;
mod codex;
mod error;
mod unified;

pub use apply::apply;
pub use error::{NumberedLine, PatchError};

use std::collections::HashMap;

use super::matching::MatchLevel;

/// The largest patch text [`parse`] accepts, in bytes.
pub const MAX_PATCH_BYTES: usize = 10 * 1024 * 1024;
/// The most file operations one patch may hold.
pub const MAX_PATCH_FILES: usize = 1000;

/// A parsed patch: what to do to which files, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    /// Which format the text was written in.
    pub format: PatchFormat,
    /// One entry per file, each path at most once.
    pub files: Vec<FilePatch>,
}

/// The two patch formats [`parse`] understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchFormat {
    /// `*** Begin Patch` ... `*** End Patch`, as Codex's `apply_patch` tool writes it.
    BeginEndPatch,
    /// A standard unified diff, as `diff -u` or `git diff` writes it.
    UnifiedDiff,
}

/// One file's part of a patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePatch {
    /// The file the operation applies to, as written in the patch.
    pub path: String,
    /// What to do to it.
    pub op: FileOp,
    /// 1-based line of the patch text where this file's part starts.
    pub line: usize,
}

/// What a patch does to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Create the file, which must not exist, with this content.
    Add {
        /// The complete content (LF line endings).
        content: String,
    },
    /// Remove the file, which must exist.
    Delete,
    /// Change the file, which must exist, and maybe rename it.
    Update {
        /// The new path, when the file is also renamed.
        move_to: Option<String>,
        /// The changes, in file order.
        hunks: Vec<Hunk>,
    },
}

/// One contiguous change inside a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hunk {
    /// Lines to find first, in order, each searched after the previous one (`@@ fn main() {`);
    /// the hunk is searched after the last.
    pub anchors: Vec<String>,
    /// The hunk's lines.
    pub lines: Vec<HunkLine>,
    /// The hunk must match at the end of the file (`*** End of File`).
    pub end_of_file: bool,
    /// 1-based line where a unified diff says the hunk starts in the old file.
    pub old_start: Option<usize>,
    /// How many old lines a unified diff says the hunk spans.
    pub old_count: Option<usize>,
    /// `\ No newline at end of file` follows the hunk's last old line.
    pub old_no_newline: bool,
    /// `\ No newline at end of file` follows the hunk's last new line.
    pub new_no_newline: bool,
    /// 1-based line of the patch text where the hunk starts.
    pub line: usize,
}

impl Hunk {
    /// The lines the hunk expects in the file: context and removed lines.
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }
}

/// One line of a hunk, without its prefix character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HunkLine {
    /// ` ` a line that stays.
    Context(String),
    /// `-` a line to remove.
    Remove(String),
    /// `+` a line to add.
    Add(String),
}

/// One file's result of [`apply`], for the caller to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileChange {
    /// Create `path` with `content`.
    Add {
        /// The file to create.
        path: String,
        /// Its content.
        content: String,
    },
    /// Remove `path`.
    Delete {
        /// The file to remove.
        path: String,
    },
    /// Replace the content of `path` with `new_content`; when `move_to` is set, write it
    /// there instead and remove `path`.
    Update {
        /// The file that was read.
        path: String,
        /// Its complete new content.
        new_content: String,
        /// Where the file goes, when it is renamed.
        move_to: Option<String>,
        /// The loosest comparison any of its hunks needed.
        level: MatchLevel,
    },
}

impl FileChange {
    /// The path the change reads or removes.
    pub fn path(&self) -> &str {
        match self {
            FileChange::Add { path, .. }
            | FileChange::Delete { path }
            | FileChange::Update { path, .. } => path,
        }
    }
}

/// Parses a patch in either format; see the module documentation.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    if text.len() > MAX_PATCH_BYTES {
        return Err(PatchError::TooLarge { bytes: text.len() });
    }
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return Err(PatchError::Empty);
    };
    let (format, files) = if lines.get(first).is_some_and(|l| l.trim() == codex::BEGIN) {
        (PatchFormat::BeginEndPatch, codex::parse(&lines, first + 1)?)
    } else {
        (PatchFormat::UnifiedDiff, unified::parse(&lines, first)?)
    };
    if files.is_empty() {
        return Err(PatchError::Empty);
    }
    if files.len() > MAX_PATCH_FILES {
        return Err(PatchError::TooManyFiles { count: files.len() });
    }
    check_paths(&files)?;
    Ok(Patch { format, files })
}

/// Refuses a patch that touches one path twice (including as a rename target): the result
/// would depend on an order the model may not have meant.
fn check_paths(files: &[FilePatch]) -> Result<(), PatchError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for file in files {
        let mut paths = vec![file.path.as_str()];
        if let FileOp::Update {
            move_to: Some(to), ..
        } = &file.op
        {
            paths.push(to.as_str());
        }
        for path in paths {
            if let Some(&first_line) = seen.get(path) {
                return Err(PatchError::DuplicatePath {
                    path: path.to_string(),
                    line: file.line,
                    first_line,
                });
            }
            seen.insert(path, file.line);
        }
    }
    Ok(())
}

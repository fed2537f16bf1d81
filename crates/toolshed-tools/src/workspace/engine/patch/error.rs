//! Why a patch was refused, written for the model that has to fix it.

use std::fmt;

use super::{MAX_PATCH_BYTES, MAX_PATCH_FILES};
use crate::workspace::engine::text;

/// A line of a file with its 1-based number, shown near a hunk that did not match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumberedLine {
    /// 1-based line number.
    pub number: usize,
    /// The line's text, without terminator.
    pub text: String,
}

/// Why a patch could not be parsed or applied. Nothing is to be written when this is
/// returned: [`super::apply`] is all-or-nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchError {
    /// The patch has no file operations.
    Empty,
    /// The patch text is larger than [`MAX_PATCH_BYTES`].
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// The patch touches more than [`MAX_PATCH_FILES`] files.
    TooManyFiles {
        /// How many it touches.
        count: usize,
    },
    /// The patch text breaks the format.
    Malformed {
        /// 1-based line of the patch text.
        line: usize,
        /// What was expected there, and what was found.
        message: String,
    },
    /// The patch asks for something the engine does not do (binary files, copies).
    Unsupported {
        /// The file concerned.
        path: String,
        /// What is not supported.
        what: String,
    },
    /// Two operations name the same path.
    DuplicatePath {
        /// The path.
        path: String,
        /// 1-based patch line of the second operation.
        line: usize,
        /// 1-based patch line of the first.
        first_line: usize,
    },
    /// `Add File` for a file that exists.
    AddExisting {
        /// The file.
        path: String,
    },
    /// `Update File` or `Delete File` for a file that does not exist.
    MissingFile {
        /// The file.
        path: String,
        /// `"update"` or `"delete"`.
        operation: &'static str,
    },
    /// `Move to` names a file that exists.
    MoveTargetExists {
        /// The file being moved.
        path: String,
        /// Where it was to go.
        move_to: String,
    },
    /// An `@@` anchor line was not found.
    AnchorNotFound {
        /// The file.
        path: String,
        /// 1-based hunk number within the file.
        hunk: usize,
        /// 1-based patch line of the hunk.
        patch_line: usize,
        /// The anchor text.
        anchor: String,
        /// 1-based file line the search started at.
        from_line: usize,
        /// The file's line most like the anchor.
        nearest: Vec<NumberedLine>,
    },
    /// A hunk's context and removed lines were not found.
    HunkNotFound {
        /// The file.
        path: String,
        /// 1-based hunk number within the file.
        hunk: usize,
        /// 1-based patch line of the hunk.
        patch_line: usize,
        /// The lines the hunk expected.
        expected: Vec<String>,
        /// 1-based file line the search started at.
        from_line: usize,
        /// The hunk had to match at the end of the file.
        end_of_file: bool,
        /// The file's lines most like the expected ones.
        nearest: Vec<NumberedLine>,
    },
}

const ALL_OR_NOTHING: &str = "Nothing was changed (a patch applies completely or not at all).";

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::Empty => write!(
                f,
                "The patch contains no file operations. Send `*** Begin Patch`, then \
                 `*** Add File: <path>`, `*** Delete File: <path>` or `*** Update File: <path>` \
                 sections, then `*** End Patch`; or a unified diff with `--- a/<path>` and \
                 `+++ b/<path>` headers."
            ),
            PatchError::TooLarge { bytes } => write!(
                f,
                "The patch is {bytes} bytes, over the limit of {MAX_PATCH_BYTES} bytes. Split it \
                 into several smaller patches, or write large new files directly."
            ),
            PatchError::TooManyFiles { count } => write!(
                f,
                "The patch touches {count} files, over the limit of {MAX_PATCH_FILES}. Split it \
                 into several patches."
            ),
            PatchError::Malformed { line, message } => write!(
                f,
                "The patch is malformed at line {line}: {message}. {ALL_OR_NOTHING}"
            ),
            PatchError::Unsupported { path, what } => write!(
                f,
                "`{path}`: {what} are not supported by this tool. {ALL_OR_NOTHING} Remove that \
                 part from the patch and handle the file another way."
            ),
            PatchError::DuplicatePath {
                path,
                line,
                first_line,
            } => write!(
                f,
                "`{path}` is touched twice, at patch lines {first_line} and {line}. {ALL_OR_NOTHING} \
                 Merge all changes to one file into a single section."
            ),
            PatchError::AddExisting { path } => write!(
                f,
                "`{path}` already exists, so it cannot be added. {ALL_OR_NOTHING} Use \
                 `*** Update File: {path}` to change it, or delete it first in a separate patch."
            ),
            PatchError::MissingFile { path, operation } => write!(
                f,
                "`{path}` does not exist, so it cannot be {}. {ALL_OR_NOTHING} Check the path \
                 (list the directory to find it), or use `*** Add File: {path}` to create it.",
                if *operation == "delete" {
                    "deleted"
                } else {
                    "updated"
                }
            ),
            PatchError::MoveTargetExists { path, move_to } => write!(
                f,
                "`{path}` cannot be moved to `{move_to}`: that file already exists. \
                 {ALL_OR_NOTHING} Choose another name, or delete `{move_to}` first in a \
                 separate patch."
            ),
            PatchError::AnchorNotFound {
                path,
                hunk,
                patch_line,
                anchor,
                from_line,
                nearest,
            } => {
                let mut out = String::new();
                write_nearest(&mut out, nearest);
                write!(
                    f,
                    "`{path}`, hunk {hunk} (patch line {patch_line}): the `@@` anchor line \
                     `{}` was not found at or after line {from_line}, not even ignoring \
                     whitespace and Unicode punctuation. {out}{ALL_OR_NOTHING} Copy the \
                     anchor line exactly from the file, or drop it and give more context lines.",
                    text::shorten(anchor, text::MAX_SHOWN_CHARS)
                )
            }
            PatchError::HunkNotFound {
                path,
                hunk,
                patch_line,
                expected,
                from_line,
                end_of_file,
                nearest,
            } => {
                let mut out = String::new();
                let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
                text::write_indented(&mut out, &expected);
                let place = if *end_of_file {
                    "at the end of the file (`*** End of File`)".to_string()
                } else {
                    format!("at or after line {from_line}")
                };
                write!(
                    f,
                    "`{path}`, hunk {hunk} (patch line {patch_line}): the hunk's context and \
                     removed lines were not found {place}, not even ignoring whitespace and \
                     Unicode punctuation. The hunk expects:\n{out}"
                )?;
                let mut near = String::new();
                write_nearest(&mut near, nearest);
                write!(
                    f,
                    "{near}{ALL_OR_NOTHING} Read the file again and rewrite this hunk with \
                     context and `-` lines copied exactly from it."
                )
            }
        }
    }
}

fn write_nearest(out: &mut String, nearest: &[NumberedLine]) {
    match nearest.first() {
        None => out.push_str("The file is empty. "),
        Some(first) => {
            out.push_str("The most similar lines in the file are:\n");
            let lines: Vec<&str> = nearest.iter().map(|l| l.text.as_str()).collect();
            text::write_numbered(out, first.number, &lines);
        }
    }
}

impl std::error::Error for PatchError {}

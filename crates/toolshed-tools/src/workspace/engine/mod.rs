//! The pure text engine behind `workspace_edit` and `workspace_patch`.
//!
//! ```
//! use toolshed_tools::workspace::engine::{diff, edit, patch};
//!
//! // A search-and-replace edit.
//! let outcome = edit::apply_edit("fn main() {\n    old();\n}\n", "old();", "new();", false)?;
//! assert_eq!(outcome.content, "fn main() {\n    new();\n}\n");
//!
//! // A multi-file patch, applied all-or-nothing against the caller's view of the files.
//! let parsed = patch::parse("*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n")?;
//! let changes = patch::apply(&parsed, &|path: &str| (path == "a.txt").then(|| "one\n".to_string()))?;
//! assert_eq!(changes.len(), 1);
//!
//! // A unified diff to show what changed.
//! assert_eq!(diff::stats("one\n", "two\n"), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! There is no I/O here on purpose: the tools read files through the workspace jail, hand the
//! text to this engine and write the results themselves. That keeps every rule about *what* a
//! change means (matching, fuzz, line endings, all-or-nothing) testable with plain strings,
//! and every rule about *where* a file may be written in one place, the jail.
//!
//! Both entry points preserve what the model did not ask to change: a CRLF file stays CRLF
//! (new lines included), a file without a final newline keeps lacking one, and lines that only
//! served as context are kept as they are in the file even when they matched fuzzily.

pub use toolshed_kit::diff;
pub mod edit;
pub mod matching;
pub mod patch;
mod text;

#[cfg(test)]
mod tests;

//! The `SearchOps` trait: finding files and text in one workspace, confined like
//! [`FileOps`](crate::FileOps).
//!
//! ```
//! use toolshed_ops::{FileOps, GlobRequest, GrepRequest, MemoryOps, Parents, SearchOps};
//! let ops = MemoryOps::new();
//! ops.write("src/main.rs", b"fn main() {}\n", Parents::Create).unwrap();
//! let found = ops.glob(&GlobRequest { patterns: vec!["**/*.rs".into()], ..Default::default() }).unwrap();
//! assert_eq!(found.paths, ["src/main.rs"]);
//! let hits = ops.grep(&GrepRequest { pattern: "fn main".into(), ..Default::default() }).unwrap();
//! assert_eq!(hits.files[0].matches[0].line_number, 1);
//! ```
//!
//! Three operations share one walk: [`glob`](SearchOps::glob) lists files by pattern,
//! [`find`](SearchOps::find) ranks paths against a fuzzy query, [`grep`](SearchOps::grep)
//! searches contents with ripgrep's own matcher and searcher. The walk is shaped by what a
//! model needs, not by what a shell user expects:
//!
//! - It never leaves the workspace: symbolic links are never followed (nor listed), the
//!   starting directory is resolved through the jail first, and file contents — ignore
//!   files included — are opened through the jail, never by path. A FIFO named
//!   `.gitignore` cannot hang a search, a `.gitignore` linked to `/dev/zero` cannot exhaust
//!   memory, and a link to `/etc/passwd` is not read.
//! - The reserved `.toolshed/` directory and toolshed's temporary files are never listed
//!   or searched, whatever the options.
//! - Results are deterministic: sorted by path (or by score, then path), and when a limit
//!   cuts them, what is kept is the first entries in that order, never whichever thread
//!   finished first.
//! - `.gitignore` and `.ignore` files are honoured whether or not the workspace is a git
//!   repository (from the workspace root down, never above it); hidden names (a leading
//!   `.`) are skipped unless asked for, or unless an ignore file whitelists them.
//!
//! ## Patterns
//!
//! Globs (in [`GlobRequest::patterns`] and [`GrepRequest::include`]/`exclude`) follow
//! `.gitignore` rules, as ripgrep's `--glob` does: a pattern without a `/` matches a name
//! at any depth (`*.rs`), a pattern with one matches the path relative to `base`
//! (`src/**/*.rs`), and a leading `/` anchors a name to `base` (`/Cargo.toml`). `*` does not
//! cross `/`; `**` does. A leading `!` excludes; an exclusion that matches a directory
//! skips everything below it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::OpsError;
use crate::file::FileKind;

#[cfg(feature = "contract")]
pub(crate) mod contract;
mod files;
mod find;
mod fuzzy;
pub use files::FileSearch;
mod glob;
mod grep;
mod local;
mod memory;
mod pattern;
mod tree;
mod walk;

/// Results returned by [`SearchOps::glob`] when the request says 0.
pub const DEFAULT_GLOB_RESULTS: usize = 1_000;
/// Results returned by [`SearchOps::find`] when the request says 0.
pub const DEFAULT_FIND_RESULTS: usize = 50;
/// Matching lines returned by [`SearchOps::grep`] when the request says 0.
pub const DEFAULT_GREP_MATCHES: usize = 500;
/// Bytes of a line kept by [`SearchOps::grep`] when the request says 0.
pub const DEFAULT_MAX_LINE_LEN: usize = 500;
/// The most context lines on either side of a match; larger requests are clamped.
pub const MAX_CONTEXT_LINES: usize = 100;
/// The longest line (or, in multiline mode, the largest file) grep holds in memory; a file
/// past it is skipped and counted in [`GrepResult::skipped_unreadable`].
pub const MAX_SEARCH_BUFFER: usize = 32 << 20;
/// The largest `.gitignore` or `.ignore` file read; a larger one is not applied.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// Listing files by glob pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GlobRequest {
    /// Set by the caller to stop early (not part of the wire format).
    #[serde(skip)]
    pub cancel: Cancel,
    /// Patterns relative to `base` (see the [module docs](crate::search#patterns) for the rules); a file is
    /// listed when it matches at least one plain pattern and no `!` pattern. With no plain
    /// pattern, every file matches.
    pub patterns: Vec<String>,
    /// The directory to search, relative to the workspace root (`.` for the root).
    pub base: String,
    /// Whether names starting with `.` are listed.
    pub include_hidden: bool,
    /// Whether `.gitignore` and `.ignore` files are honoured.
    pub respect_gitignore: bool,
    /// The most paths returned (0 for [`DEFAULT_GLOB_RESULTS`]).
    pub max_results: usize,
}

impl Default for GlobRequest {
    fn default() -> Self {
        Self {
            cancel: Cancel::default(),
            patterns: Vec::new(),
            base: ".".into(),
            include_hidden: false,
            respect_gitignore: true,
            max_results: 0,
        }
    }
}

/// The files a glob matched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobResult {
    /// Regular files, workspace-relative with `/`, sorted.
    pub paths: Vec<String>,
    /// Whether more files matched than were returned (the first ones in order are kept).
    pub truncated: bool,
}

/// What [`SearchOps::find`] returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FindKind {
    /// Regular files only.
    #[default]
    Files,
    /// Directories only.
    Dirs,
    /// Both.
    Both,
}

/// Fuzzy search over path names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FindRequest {
    /// Set by the caller to stop early (not part of the wire format).
    #[serde(skip)]
    pub cancel: Cancel,
    /// Characters to find in order, not necessarily adjacent, ignoring case and
    /// whitespace (`mainrs` finds `src/main.rs`).
    pub query: String,
    /// The directory to search (`.` for the root); the query is matched against paths
    /// relative to it.
    pub base: String,
    /// The most matches returned (0 for [`DEFAULT_FIND_RESULTS`]).
    pub max_results: usize,
    /// Whether names starting with `.` are considered.
    pub include_hidden: bool,
    /// Whether `.gitignore` and `.ignore` files are honoured.
    pub respect_gitignore: bool,
    /// Files, directories or both.
    pub kind: FindKind,
}

impl Default for FindRequest {
    fn default() -> Self {
        Self {
            cancel: Cancel::default(),
            query: String::new(),
            base: ".".into(),
            max_results: 0,
            include_hidden: false,
            respect_gitignore: true,
            kind: FindKind::Files,
        }
    }
}

/// One path that matched a fuzzy query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindMatch {
    /// Workspace-relative with `/`.
    pub path: String,
    /// File or directory.
    pub kind: FileKind,
    /// Higher is better; only comparable within one query.
    pub score: i64,
}

/// What a fuzzy search found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindResult {
    /// Best first; equal scores put the shorter path, then the smaller one, first.
    pub matches: Vec<FindMatch>,
    /// Whether more paths matched than were returned.
    pub truncated: bool,
}

/// How letters are compared in [`GrepRequest::pattern`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseMode {
    /// `a` matches only `a`.
    Sensitive,
    /// `a` matches `a` and `A`.
    Insensitive,
    /// Insensitive unless the pattern has an upper-case letter (ripgrep's `--smart-case`).
    #[default]
    Smart,
}

/// Searching file contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GrepRequest {
    /// Set by the caller to stop early (not part of the wire format).
    #[serde(skip)]
    pub cancel: Cancel,
    /// A regular expression (Rust `regex` syntax), or a literal with `fixed_string`.
    pub pattern: String,
    /// Whether `pattern` is matched literally.
    pub fixed_string: bool,
    /// How letters are compared.
    pub case: CaseMode,
    /// The directory (or single file) to search, relative to the workspace root.
    pub base: String,
    /// Globs a file must match (any of them) to be searched; empty for all files.
    pub include: Vec<String>,
    /// Globs of files and directories not searched.
    pub exclude: Vec<String>,
    /// Lines shown before each match (at most [`MAX_CONTEXT_LINES`]).
    pub context_before: usize,
    /// Lines shown after each match (at most [`MAX_CONTEXT_LINES`]).
    pub context_after: usize,
    /// The most matching lines returned (0 for [`DEFAULT_GREP_MATCHES`]).
    pub max_matches: usize,
    /// Bytes of a line kept (0 for [`DEFAULT_MAX_LINE_LEN`]); longer lines are cut.
    pub max_line_len: usize,
    /// Whether files and directories starting with `.` are searched.
    pub include_hidden: bool,
    /// Whether `.gitignore` and `.ignore` files are honoured.
    pub respect_gitignore: bool,
    /// Whether a match may span lines (`\n` in the pattern); each file is then read whole.
    pub multiline: bool,
}

impl Default for GrepRequest {
    fn default() -> Self {
        Self {
            cancel: Cancel::default(),
            pattern: String::new(),
            fixed_string: false,
            case: CaseMode::Smart,
            base: ".".into(),
            include: Vec::new(),
            exclude: Vec::new(),
            context_before: 0,
            context_after: 0,
            max_matches: 0,
            max_line_len: 0,
            include_hidden: false,
            respect_gitignore: true,
            multiline: false,
        }
    }
}

/// One line of grep output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineMatch {
    /// 1-based.
    pub line_number: u64,
    /// The line without its terminator (invalid UTF-8 replaced).
    pub text: String,
    /// Whether the line is context around a match rather than a match.
    pub is_context: bool,
    /// Whether the line was longer than `max_line_len`. `text` then holds that many
    /// bytes — around the first match on a matching line, else from the start — with `…`
    /// marking each side that was cut.
    pub truncated: bool,
}

/// The lines of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMatches {
    /// Workspace-relative with `/`.
    pub path: String,
    /// Matches and their context, by line number.
    pub matches: Vec<LineMatch>,
}

/// What grep found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepResult {
    /// Files with at least one match, sorted by path.
    pub files: Vec<FileMatches>,
    /// Matching lines returned (context lines not counted).
    pub total_matches: usize,
    /// Files that passed the filters. Once the match limit is reached, files that sort
    /// after the last one kept are counted but not read.
    pub files_searched: usize,
    /// Whether more lines matched than were returned: the first `max_matches` matching
    /// lines in path order are kept, and a file's context stops at its first line not kept.
    pub truncated: bool,
    /// Files not searched because they hold a NUL byte (binary data), among those read.
    pub skipped_binary: usize,
    /// Files that could not be read, or with a line over [`MAX_SEARCH_BUFFER`].
    pub skipped_unreadable: usize,
}

/// A flag a caller sets to stop a running search early: walking stops admitting entries,
/// and what was found so far is returned. Requests compare equal whatever their flags.
#[derive(Debug, Clone, Default)]
pub struct Cancel(pub Option<Arc<AtomicBool>>);

impl Cancel {
    /// A flag to set later.
    pub fn new(flag: Arc<AtomicBool>) -> Self {
        Self(Some(flag))
    }

    /// Whether the caller has asked to stop.
    pub fn is_set(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

impl PartialEq for Cancel {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Cancel {}

/// Entries a tree request returns when it names no limit.
pub const DEFAULT_TREE_ENTRIES: usize = 500;

/// The files and directories below a base, to a depth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TreeRequest {
    /// Set by the caller to stop early (not part of the wire format).
    #[serde(skip)]
    pub cancel: Cancel,
    /// The directory to start from, relative to the workspace root.
    pub base: String,
    /// How many levels below the base to show (at least 1).
    pub max_depth: usize,
    /// Whether names starting with `.` are shown.
    pub include_hidden: bool,
    /// Whether `.gitignore` and `.ignore` rules apply.
    pub respect_gitignore: bool,
    /// The most entries returned (0: [`DEFAULT_TREE_ENTRIES`]).
    pub max_entries: usize,
}

impl Default for TreeRequest {
    fn default() -> Self {
        Self {
            cancel: Cancel::default(),
            base: ".".into(),
            max_depth: 3,
            include_hidden: false,
            respect_gitignore: true,
            max_entries: 0,
        }
    }
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TreeEntry {
    /// Workspace-relative path.
    pub path: String,
    /// File or directory.
    pub kind: FileKind,
    /// Levels below the base (1 for the base's own entries).
    pub depth: usize,
}

/// What [`SearchOps::tree`] returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeResult {
    /// The base, workspace-relative.
    pub base: String,
    /// Entries sorted by path (so each directory comes just before its contents).
    pub entries: Vec<TreeEntry>,
    /// Whether entries past the limit were left out.
    pub truncated: bool,
}

/// Searching one workspace: listing files by glob, ranking paths against a fuzzy query, and
/// searching contents by regular expression. The same confinement as
/// [`FileOps`](crate::FileOps) holds — nothing outside the workspace root is listed or read,
/// and `.toolshed/` is invisible.
///
/// The methods are blocking and may use several threads: call them from `spawn_blocking`
/// on an async runtime. Implementations: [`LocalOps`](crate::LocalOps) walks the real file
/// system in parallel with ripgrep's crates; [`MemoryOps`](crate::MemoryOps) walks its map
/// with the same rules and the same searcher, and both pass the same
/// contract suite (`contract::run_search`, with the `contract` feature).
pub trait SearchOps: Send + Sync {
    /// Regular files under `base` matching the patterns, sorted.
    fn glob(&self, request: &GlobRequest) -> Result<GlobResult, OpsError>;

    /// Paths under `base` that contain the query's characters in order, best first.
    fn find(&self, request: &FindRequest) -> Result<FindResult, OpsError>;

    /// Lines of files under `base` matching the pattern, files sorted by path. Files with
    /// a NUL byte are skipped as binary.
    fn grep(&self, request: &GrepRequest) -> Result<GrepResult, OpsError>;

    /// Files and directories under `base` to a depth, sorted by path.
    fn tree(&self, request: &TreeRequest) -> Result<TreeResult, OpsError>;
}

//! The workspace tools as data.
//!
//! Each tool's arguments are a struct here; its input schema is generated from it
//! ([`crate::args::schema`]) and its handler parses a call into it ([`crate::args::parse`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};
use toolshed_ops::search::DEFAULT_TREE_ENTRIES;
use toolshed_ops::{
    CaseMode, DEFAULT_FIND_RESULTS, DEFAULT_GLOB_RESULTS, DEFAULT_GREP_MATCHES,
    DEFAULT_MAX_LINE_LEN, FindKind, MAX_CONTEXT_LINES,
};

use super::read::DEFAULT_LIMIT;

/// The group of every workspace tool.
pub(super) const GROUP: &str = "workspace";

const READ_ONLY: ToolAnnotations = ToolAnnotations::PURE;

const fn changes(destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations {
        read_only: false,
        destructive,
        idempotent,
        open_world: false,
    }
}

fn tool(
    name: &str,
    title: &str,
    description: &str,
    schema: Value,
    annotations: ToolAnnotations,
    danger: Danger,
) -> ToolSpec {
    let mut spec = ToolSpec::new(name, description)
        .title(title)
        .group(GROUP)
        .input_schema(schema)
        .annotations(annotations);
    spec.danger = danger;
    spec.mutates_state = !annotations.read_only;
    spec
}

/// `workspace_read`.
pub(super) fn read() -> ToolSpec {
    tool(
        "workspace_read",
        "Read a file",
        "Read a text file of the workspace with line numbers (`cat -n` style). Reads from line `offset` (1-based, default 1) at most `limit` lines (default 2000); long lines are cut at 2000 characters and output is capped at 256 KiB, and a final line says how to continue (`offset=N`). Images (PNG, JPEG, GIF, WebP up to 5 MiB) come back as images; other binary files are refused with their size and type. Reading a file is also what allows editing it: edits need a read of the current version.",
        crate::args::schema::<ReadArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_write`.
pub(super) fn write() -> ToolSpec {
    tool(
        "workspace_write",
        "Write a file",
        "Create a file or replace its whole content, atomically (a reader never sees a half-written file) and keeping its permissions. Overwriting an existing file requires having read its current version with workspace_read in this session. Use workspace_edit or workspace_patch to change part of a file. Parent directories are created when `create_parents` is true (default false).",
        crate::args::schema::<WriteArgs>(),
        changes(true, true),
        Danger::Medium,
    )
}

/// `workspace_stat`.
pub(super) fn stat() -> ToolSpec {
    tool(
        "workspace_stat",
        "File facts",
        "Facts about one path: kind (file, dir, symlink, other), size in bytes, permissions, modification time, hard link count and, for a symbolic link, its target.",
        crate::args::schema::<StatArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_list`.
pub(super) fn list() -> ToolSpec {
    tool(
        "workspace_list",
        "List a directory",
        "List one directory: each entry's name (directories end in `/`), size and modification time. Sort by `name` (default), `size` or `modified`; `reverse` flips the order. At most `max_entries` (default 1000) are shown.",
        crate::args::schema::<ListArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_mkdir`.
pub(super) fn mkdir() -> ToolSpec {
    tool(
        "workspace_mkdir",
        "Create a directory",
        "Create a directory, and its missing parents unless `parents` is false. An existing directory is not an error.",
        crate::args::schema::<MkdirArgs>(),
        changes(false, true),
        Danger::Low,
    )
}

/// `workspace_move`.
pub(super) fn move_() -> ToolSpec {
    tool(
        "workspace_move",
        "Move or rename",
        "Move or rename a file or directory inside the workspace. An existing destination is refused unless `overwrite` is true.",
        crate::args::schema::<MoveArgs>(),
        changes(true, false),
        Danger::Medium,
    )
}

/// `workspace_delete`.
pub(super) fn delete() -> ToolSpec {
    tool(
        "workspace_delete",
        "Delete a file or directory",
        "Delete a file or symbolic link (a link is removed, never its target). A directory is deleted only with `recursive: true`, together with everything in it.",
        crate::args::schema::<DeleteArgs>(),
        changes(true, true),
        Danger::High,
    )
}

/// `workspace_edit`.
pub(super) fn edit() -> ToolSpec {
    tool(
        "workspace_edit",
        "Edit a file",
        "Replace `old_text` with `new_text` in one file. `old_text` must match exactly once (include enough surrounding lines to make it unique) unless `replace_all` is true. If it is not found exactly, a whitespace-tolerant match is used only when it is unambiguous, and the result says so; otherwise the error shows the closest region with its line numbers. Requires a workspace_read of the file's current version first. Returns a unified diff of the change. Line endings and a missing final newline are preserved.",
        crate::args::schema::<EditArgs>(),
        changes(true, false),
        Danger::Medium,
    )
}

/// `workspace_patch`.
pub(super) fn patch() -> ToolSpec {
    tool(
        "workspace_patch",
        "Apply a multi-file patch",
        "Apply a patch to several files at once, all-or-nothing: if any hunk of any file does not apply, no file changes. Accepts the `*** Begin Patch` format (`*** Add File: path` with `+` lines, `*** Delete File: path`, `*** Update File: path` with optional `*** Move to: new/path`, hunks starting `@@` optionally followed by a line to anchor on, then ` ` context, `-` removed and `+` added lines, and `*** End of File`; finish with `*** End Patch`) and standard unified diffs (`--- a/x` / `+++ b/x` / `@@ -l,c +l,c @@`). Context matches exactly, then ignoring trailing whitespace, then surrounding whitespace, then Unicode punctuation look-alikes; the result says when a looser match was used. Files being changed or deleted must have been read with workspace_read first. CRLF line endings and final newlines are preserved.",
        crate::args::schema::<PatchArgs>(),
        changes(true, false),
        Danger::Medium,
    )
}

/// `workspace_tree`.
pub(super) fn tree() -> ToolSpec {
    tool(
        "workspace_tree",
        "Directory tree",
        "Show the files and directories below a path as an indented tree, `depth` levels deep (default 3), skipping what .gitignore excludes and hidden names unless asked. At most `max_entries` (default 500) entries, in path order; the result says when more exist.",
        crate::args::schema::<TreeArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_glob`.
pub(super) fn glob() -> ToolSpec {
    tool(
        "workspace_glob",
        "Find files by glob",
        "List the files matching glob patterns, sorted by path. Patterns follow .gitignore rules: `*.rs` matches at any depth, `src/**/*.ts` is relative to `path`, a leading `!` excludes (`!**/generated/**`). .gitignore'd and hidden files are skipped unless asked. At most `max_results` paths (default 1000).",
        crate::args::schema::<GlobArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_find`.
pub(super) fn find() -> ToolSpec {
    tool(
        "workspace_find",
        "Find files by name (fuzzy)",
        "Fuzzy-find files (or directories) whose path contains the query's characters in order, best match first: matches in the file name, at word boundaries and in runs rank higher (`mainrs` finds `src/main.rs`). At most `max_results` (default 50).",
        crate::args::schema::<FindArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_grep`.
pub(super) fn grep() -> ToolSpec {
    tool(
        "workspace_grep",
        "Search file contents",
        "Search file contents with a regex (Rust syntax) or fixed string, like ripgrep: `path:line:text` lines, context as `path-line-text`. Skips .gitignore'd, hidden and binary files; stops at `max_matches` and says so.",
        crate::args::schema::<GrepArgs>(),
        READ_ONLY,
        Danger::Low,
    )
}

/// The most lines, entries or results one call may ask for.
const MAX_ITEMS: usize = 100_000;

fn dot() -> String {
    ".".into()
}

fn yes() -> bool {
    true
}

fn one() -> usize {
    1
}

/// The arguments of `workspace_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadArgs {
    /// The file to read, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) path: String,
    /// The first line to return, 1-based
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub(super) offset: usize,
    /// The most lines to return. Without it, at most 2000 lines and 50 KB come back (the reply says how to read on); with it, up to 256 KB
    #[serde(default)]
    #[schemars(with = "usize", range(min = 1, max = MAX_ITEMS), extend("default" = DEFAULT_LIMIT))]
    pub(super) limit: Option<usize>,
}

/// The arguments of `workspace_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteArgs {
    /// The file to write, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) path: String,
    /// The complete new content of the file
    pub(super) content: String,
    /// Create missing parent directories
    #[serde(default)]
    pub(super) create_parents: bool,
}

/// The arguments of `workspace_stat`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StatArgs {
    /// The path to describe, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) path: String,
}

/// How `workspace_list` orders entries.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Sort {
    #[default]
    Name,
    Size,
    Modified,
}

fn default_list_entries() -> usize {
    1000
}

/// The arguments of `workspace_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListArgs {
    /// The directory, relative to the workspace root
    #[serde(default = "dot")]
    pub(super) path: String,
    /// Sort order
    #[serde(default)]
    pub(super) sort: Sort,
    /// Reverse the order
    #[serde(default)]
    pub(super) reverse: bool,
    /// The most entries to show
    #[serde(default = "default_list_entries")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_entries: usize,
}

/// The arguments of `workspace_mkdir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct MkdirArgs {
    /// The directory to create, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) path: String,
    /// Create missing parents too
    #[serde(default = "yes")]
    pub(super) parents: bool,
}

/// The arguments of `workspace_move`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct MoveArgs {
    /// What to move, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) from: String,
    /// The new path, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) to: String,
    /// Replace an existing destination
    #[serde(default)]
    pub(super) overwrite: bool,
}

/// The arguments of `workspace_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteArgs {
    /// What to delete, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) path: String,
    /// Required to delete a directory and its contents
    #[serde(default)]
    pub(super) recursive: bool,
}

/// The arguments of `workspace_edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EditArgs {
    /// The file to edit, relative to the workspace root (an absolute path inside the workspace also works)
    pub(super) path: String,
    /// The exact text to replace, including indentation
    pub(super) old_text: String,
    /// The text to put in its place
    pub(super) new_text: String,
    /// Replace every occurrence instead of requiring exactly one
    #[serde(default)]
    pub(super) replace_all: bool,
}

/// The arguments of `workspace_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PatchArgs {
    /// The patch text
    pub(super) patch: String,
}

fn three() -> usize {
    3
}

fn default_tree_entries() -> usize {
    DEFAULT_TREE_ENTRIES
}

/// The arguments of `workspace_tree`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TreeArgs {
    /// The directory to start from
    #[serde(default = "dot")]
    pub(super) path: String,
    /// How many levels to show
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 20))]
    pub(super) depth: usize,
    /// The most entries to show
    #[serde(default = "default_tree_entries")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_entries: usize,
    /// Include names starting with `.`
    #[serde(default)]
    pub(super) include_hidden: bool,
    /// Skip what .gitignore and .ignore files exclude
    #[serde(default = "yes")]
    pub(super) respect_gitignore: bool,
}

fn default_glob_results() -> usize {
    DEFAULT_GLOB_RESULTS
}

/// The arguments of `workspace_glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GlobArgs {
    /// Glob patterns; a leading `!` excludes
    #[schemars(length(min = 1, max = 100))]
    pub(super) patterns: Vec<String>,
    /// The directory to search under
    #[serde(default = "dot")]
    pub(super) path: String,
    /// The most paths to return
    #[serde(default = "default_glob_results")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_results: usize,
    /// Include names starting with `.`
    #[serde(default)]
    pub(super) include_hidden: bool,
    /// Skip what .gitignore and .ignore files exclude
    #[serde(default = "yes")]
    pub(super) respect_gitignore: bool,
}

/// What `workspace_find` looks for.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Kind {
    #[default]
    Files,
    Dirs,
    Both,
}

impl From<Kind> for FindKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Files => FindKind::Files,
            Kind::Dirs => FindKind::Dirs,
            Kind::Both => FindKind::Both,
        }
    }
}

fn default_find_results() -> usize {
    DEFAULT_FIND_RESULTS
}

/// The arguments of `workspace_find`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FindArgs {
    /// Characters of the name to look for
    pub(super) query: String,
    /// The directory to search under
    #[serde(default = "dot")]
    pub(super) path: String,
    /// What to look for
    #[serde(default)]
    pub(super) kind: Kind,
    /// The most matches to return
    #[serde(default = "default_find_results")]
    #[schemars(range(min = 1, max = 10_000))]
    pub(super) max_results: usize,
    /// Include names starting with `.`
    #[serde(default)]
    pub(super) include_hidden: bool,
    /// Skip what .gitignore and .ignore files exclude
    #[serde(default = "yes")]
    pub(super) respect_gitignore: bool,
}

/// How `workspace_grep` compares letters.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Case {
    #[default]
    Smart,
    Sensitive,
    Insensitive,
}

impl From<Case> for CaseMode {
    fn from(case: Case) -> Self {
        match case {
            Case::Smart => CaseMode::Smart,
            Case::Sensitive => CaseMode::Sensitive,
            Case::Insensitive => CaseMode::Insensitive,
        }
    }
}

fn default_max_matches() -> usize {
    DEFAULT_GREP_MATCHES
}

fn default_max_line_len() -> usize {
    DEFAULT_MAX_LINE_LEN
}

/// The arguments of `workspace_grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrepArgs {
    /// The regular expression, or the literal text with fixed_string
    pub(super) pattern: String,
    /// Treat the pattern as literal text
    #[serde(default)]
    pub(super) fixed_string: bool,
    /// smart: insensitive unless the pattern has a capital
    #[serde(default)]
    pub(super) case: Case,
    /// A directory or file to search
    #[serde(default = "dot")]
    pub(super) path: String,
    /// Only files matching these globs (e.g. `*.rs`)
    pub(super) include: Option<Vec<String>>,
    /// Skip files matching these globs
    pub(super) exclude: Option<Vec<String>>,
    /// Lines of context before and after each match
    #[schemars(range(max = MAX_CONTEXT_LINES))]
    pub(super) context: Option<usize>,
    /// Lines of context before each match
    #[schemars(range(max = MAX_CONTEXT_LINES))]
    pub(super) context_before: Option<usize>,
    /// Lines of context after each match
    #[schemars(range(max = MAX_CONTEXT_LINES))]
    pub(super) context_after: Option<usize>,
    /// The most matching lines to return
    #[serde(default = "default_max_matches")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_matches: usize,
    /// Cut longer lines around the match, in bytes
    #[serde(default = "default_max_line_len")]
    #[schemars(range(min = 20, max = MAX_ITEMS))]
    pub(super) max_line_len: usize,
    /// Let the pattern match across lines (`\n`)
    #[serde(default)]
    pub(super) multiline: bool,
    /// Include names starting with `.`
    #[serde(default)]
    pub(super) include_hidden: bool,
    /// Skip what .gitignore and .ignore files exclude
    #[serde(default = "yes")]
    pub(super) respect_gitignore: bool,
}

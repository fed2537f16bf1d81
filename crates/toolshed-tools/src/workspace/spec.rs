//! The workspace tools as data.
//!
//! Each tool's arguments are a struct here; its input schema is generated from it
//! ([`crate::args::schema`]) and its handler parses a call into it ([`crate::args::parse`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_core::{Danger, ToolAnnotations, ToolSpec, TouchKind};
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
        "Read a text file with line numbers; the last line says which `offset` reads on. Images come back as images.",
        crate::args::schema::<ReadArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
}

/// `workspace_write`.
pub(super) fn write() -> ToolSpec {
    tool(
        "workspace_write",
        "Write a file",
        "Create or overwrite a whole file, atomically (overwriting needs a workspace_read first).",
        crate::args::schema::<WriteArgs>(),
        changes(true, true),
        Danger::Medium,
    )
    .touch(TouchKind::Writes, "path")
}

/// `workspace_stat`.
pub(super) fn stat() -> ToolSpec {
    tool(
        "workspace_stat",
        "File facts",
        "Kind, size, permissions, modified time and link target of a path, and whether you may read and write it.",
        crate::args::schema::<StatArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
}

/// `workspace_list`.
pub(super) fn list() -> ToolSpec {
    tool(
        "workspace_list",
        "List a directory",
        "List a directory: name (directories end in `/`), size and modified time.",
        crate::args::schema::<ListArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
}

/// `workspace_mkdir`.
pub(super) fn mkdir() -> ToolSpec {
    tool(
        "workspace_mkdir",
        "Create a directory",
        "Create a directory; an existing one is fine.",
        crate::args::schema::<MkdirArgs>(),
        changes(false, true),
        Danger::Low,
    )
    .touch(TouchKind::Writes, "path")
}

/// `workspace_move`.
pub(super) fn move_() -> ToolSpec {
    tool(
        "workspace_move",
        "Move or rename",
        "Move or rename a file or directory.",
        crate::args::schema::<MoveArgs>(),
        changes(true, false),
        Danger::Medium,
    )
    .touch(TouchKind::Writes, "from")
    .touch(TouchKind::Writes, "to")
}

/// `workspace_delete`.
pub(super) fn delete() -> ToolSpec {
    tool(
        "workspace_delete",
        "Delete",
        "Delete a file or symlink (never its target), or a directory with `recursive`.",
        crate::args::schema::<DeleteArgs>(),
        changes(true, true),
        Danger::High,
    )
    .touch(TouchKind::Writes, "path")
}

/// `workspace_edit`.
pub(super) fn edit() -> ToolSpec {
    tool(
        "workspace_edit",
        "Edit a file",
        "Replace `old_text` with `new_text` in a file; returns a diff. `old_text` must match once unless `replace_all` (a unique whitespace-tolerant match counts). Or `insert_line` N: insert `new_text` after line N. Needs a workspace_read first.",
        crate::args::schema::<EditArgs>(),
        changes(true, false),
        Danger::Medium,
    )
    .touch(TouchKind::Writes, "path")
}

/// `workspace_patch`.
pub(super) fn patch() -> ToolSpec {
    tool(
        "workspace_patch",
        "Apply a patch",
        "Apply a multi-file patch, all-or-nothing: a unified diff, or `*** Begin Patch`, then `*** Add File: p` (`+` lines), `*** Delete File: p` or `*** Update File: p` (optional `*** Move to: q`; `@@` hunks of ` `, `-`, `+` lines), then `*** End Patch`. Changed files need a workspace_read first.",
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
        "Show a directory as an indented tree.",
        crate::args::schema::<TreeArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
}

/// `workspace_glob`.
pub(super) fn glob() -> ToolSpec {
    tool(
        "workspace_glob",
        "Find files by glob",
        "List files matching glob patterns (.gitignore syntax: `*.rs` at any depth, `src/**/*.ts`), sorted by path.",
        crate::args::schema::<GlobArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
}

/// `workspace_find`.
pub(super) fn find() -> ToolSpec {
    tool(
        "workspace_find",
        "Find files by name",
        "Fuzzy-find files by name, best match first (`mainrs` finds `src/main.rs`).",
        crate::args::schema::<FindArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
}

/// `workspace_grep`.
pub(super) fn grep() -> ToolSpec {
    tool(
        "workspace_grep",
        "Search file contents",
        "Search file contents by regex (Rust syntax) or literal text, like ripgrep: `path:line:text` lines.",
        crate::args::schema::<GrepArgs>(),
        READ_ONLY,
        Danger::Low,
    )
    .touch(TouchKind::Reads, "path")
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
    pub(super) path: String,
    /// First line, 1-based
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub(super) offset: usize,
    /// Most lines
    #[serde(default)]
    #[schemars(with = "usize", range(min = 1, max = MAX_ITEMS), extend("default" = DEFAULT_LIMIT))]
    pub(super) limit: Option<usize>,
}

/// The arguments of `workspace_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteArgs {
    pub(super) path: String,
    pub(super) content: String,
    #[serde(default)]
    pub(super) create_parents: bool,
}

/// The arguments of `workspace_stat`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StatArgs {
    pub(super) path: String,
}

// How `workspace_list` orders entries (a plain comment: a doc comment would become the argument's
// description in the schema).
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
    #[serde(default = "dot")]
    pub(super) path: String,
    #[serde(default)]
    pub(super) sort: Sort,
    #[serde(default)]
    pub(super) reverse: bool,
    #[serde(default = "default_list_entries")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_entries: usize,
}

/// The arguments of `workspace_mkdir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct MkdirArgs {
    pub(super) path: String,
    #[serde(default = "yes")]
    pub(super) parents: bool,
}

/// The arguments of `workspace_move`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct MoveArgs {
    /// Source path
    pub(super) from: String,
    /// Destination path
    pub(super) to: String,
    #[serde(default)]
    pub(super) overwrite: bool,
}

/// The arguments of `workspace_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteArgs {
    pub(super) path: String,
    #[serde(default)]
    pub(super) recursive: bool,
}

/// The arguments of `workspace_edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EditArgs {
    pub(super) path: String,
    /// Exact text, with indentation
    #[serde(default)]
    pub(super) old_text: String,
    /// Replacement
    pub(super) new_text: String,
    #[serde(default)]
    pub(super) replace_all: bool,
    /// Instead of old_text: insert after this line (0: first)
    #[serde(default)]
    pub(super) insert_line: Option<usize>,
}

/// The arguments of `workspace_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PatchArgs {
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
    #[serde(default = "dot")]
    pub(super) path: String,
    /// Levels
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 20))]
    pub(super) depth: usize,
    #[serde(default = "default_tree_entries")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_entries: usize,
    #[serde(default)]
    pub(super) include_hidden: bool,
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
    /// Globs; `!` excludes
    #[schemars(length(min = 1, max = 100))]
    pub(super) patterns: Vec<String>,
    #[serde(default = "dot")]
    pub(super) path: String,
    #[serde(default = "default_glob_results")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_results: usize,
    #[serde(default)]
    pub(super) include_hidden: bool,
    #[serde(default = "yes")]
    pub(super) respect_gitignore: bool,
}

// What `workspace_find` looks for (a plain comment: a doc comment would become the argument's
// description in the schema).
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
    /// Name characters
    pub(super) query: String,
    #[serde(default = "dot")]
    pub(super) path: String,
    #[serde(default)]
    pub(super) kind: Kind,
    #[serde(default = "default_find_results")]
    #[schemars(range(min = 1, max = 10_000))]
    pub(super) max_results: usize,
    #[serde(default)]
    pub(super) include_hidden: bool,
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
    /// Regex, or text with fixed_string
    pub(super) pattern: String,
    /// Literal pattern
    #[serde(default)]
    pub(super) fixed_string: bool,
    /// smart: insensitive without capitals
    #[serde(default)]
    pub(super) case: Case,
    #[serde(default = "dot")]
    pub(super) path: String,
    /// Only these globs
    pub(super) include: Option<Vec<String>>,
    /// Skip these globs
    pub(super) exclude: Option<Vec<String>>,
    /// Lines around
    #[schemars(range(max = MAX_CONTEXT_LINES))]
    pub(super) context: Option<usize>,
    /// Lines before
    #[schemars(range(max = MAX_CONTEXT_LINES))]
    pub(super) context_before: Option<usize>,
    /// Lines after
    #[schemars(range(max = MAX_CONTEXT_LINES))]
    pub(super) context_after: Option<usize>,
    #[serde(default = "default_max_matches")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub(super) max_matches: usize,
    /// Cut longer lines (bytes)
    #[serde(default = "default_max_line_len")]
    #[schemars(range(min = 20, max = MAX_ITEMS))]
    pub(super) max_line_len: usize,
    #[serde(default)]
    pub(super) multiline: bool,
    #[serde(default)]
    pub(super) include_hidden: bool,
    #[serde(default = "yes")]
    pub(super) respect_gitignore: bool,
}

//! The workspace tools as data.

use serde_json::{Value, json};
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};

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

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn path_prop(what: &str) -> Value {
    json!({"type": "string", "description": format!("{what}, relative to the workspace root (an absolute path inside the workspace also works)")})
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
        object(
            json!({
                "path": path_prop("The file to read"),
                "offset": {"type": "integer", "minimum": 1, "description": "The first line to return, 1-based (default 1)"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "The most lines to return (default 2000)"}
            }),
            &["path"],
        ),
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
        object(
            json!({
                "path": path_prop("The file to write"),
                "content": {"type": "string", "description": "The complete new content of the file"},
                "create_parents": {"type": "boolean", "description": "Create missing parent directories (default false)"}
            }),
            &["path", "content"],
        ),
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
        object(
            json!({"path": path_prop("The path to describe")}),
            &["path"],
        ),
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
        object(
            json!({
                "path": {"type": "string", "description": "The directory, relative to the workspace root (default: the root)"},
                "sort": {"type": "string", "enum": ["name", "size", "modified"], "description": "Sort order (default name)"},
                "reverse": {"type": "boolean", "description": "Reverse the order (default false)"},
                "max_entries": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "The most entries to show (default 1000)"}
            }),
            &[],
        ),
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
        object(
            json!({
                "path": path_prop("The directory to create"),
                "parents": {"type": "boolean", "description": "Create missing parents too (default true)"}
            }),
            &["path"],
        ),
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
        object(
            json!({
                "from": path_prop("What to move"),
                "to": path_prop("The new path"),
                "overwrite": {"type": "boolean", "description": "Replace an existing destination (default false)"}
            }),
            &["from", "to"],
        ),
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
        object(
            json!({
                "path": path_prop("What to delete"),
                "recursive": {"type": "boolean", "description": "Required to delete a directory and its contents (default false)"}
            }),
            &["path"],
        ),
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
        object(
            json!({
                "path": path_prop("The file to edit"),
                "old_text": {"type": "string", "description": "The exact text to replace, including indentation"},
                "new_text": {"type": "string", "description": "The text to put in its place"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one (default false)"}
            }),
            &["path", "old_text", "new_text"],
        ),
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
        object(
            json!({"patch": {"type": "string", "description": "The patch text"}}),
            &["patch"],
        ),
        changes(true, false),
        Danger::Medium,
    )
}

fn search_props(mut props: Value) -> Value {
    if let Some(map) = props.as_object_mut() {
        map.insert("include_hidden".into(), json!({"type": "boolean", "description": "Include names starting with `.` (default false)"}));
        map.insert("respect_gitignore".into(), json!({"type": "boolean", "description": "Skip what .gitignore and .ignore files exclude (default true)"}));
    }
    props
}

/// `workspace_tree`.
pub(super) fn tree() -> ToolSpec {
    tool(
        "workspace_tree",
        "Directory tree",
        "Show the files and directories below a path as an indented tree, `depth` levels deep (default 3), skipping what .gitignore excludes and hidden names unless asked. At most `max_entries` (default 500) entries, in path order; the result says when more exist.",
        object(
            search_props(json!({
                "path": {"type": "string", "description": "The directory to start from (default: the workspace root)"},
                "depth": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many levels to show (default 3)"},
                "max_entries": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "The most entries to show (default 500)"}
            })),
            &[],
        ),
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
        object(
            search_props(json!({
                "patterns": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100, "description": "Glob patterns; a leading `!` excludes"},
                "path": {"type": "string", "description": "The directory to search under (default: the workspace root)"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "The most paths to return (default 1000)"}
            })),
            &["patterns"],
        ),
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
        object(
            search_props(json!({
                "query": {"type": "string", "description": "Characters of the name to look for"},
                "path": {"type": "string", "description": "The directory to search under (default: the workspace root)"},
                "kind": {"type": "string", "enum": ["files", "dirs", "both"], "description": "What to look for (default files)"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "The most matches to return (default 50)"}
            })),
            &["query"],
        ),
        READ_ONLY,
        Danger::Low,
    )
}

/// `workspace_grep`.
pub(super) fn grep() -> ToolSpec {
    tool(
        "workspace_grep",
        "Search file contents",
        "Search file contents with a regular expression (Rust regex syntax) or a fixed string, like ripgrep: results as `path:line:text`, context lines as `path-line-text`, files in path order. Case: `smart` (default: insensitive unless the pattern has a capital), `sensitive` or `insensitive`. Filter files with `include`/`exclude` globs; .gitignore'd, hidden and binary files are skipped. Stops at `max_matches` (default 500) and says so; long lines are cut around the match.",
        object(
            search_props(json!({
                "pattern": {"type": "string", "description": "The regular expression, or the literal text with fixed_string"},
                "fixed_string": {"type": "boolean", "description": "Treat the pattern as literal text (default false)"},
                "case": {"type": "string", "enum": ["smart", "sensitive", "insensitive"], "description": "How letters compare (default smart)"},
                "path": {"type": "string", "description": "A directory or file to search (default: the workspace root)"},
                "include": {"type": "array", "items": {"type": "string"}, "description": "Only files matching these globs (e.g. `*.rs`)"},
                "exclude": {"type": "array", "items": {"type": "string"}, "description": "Skip files matching these globs"},
                "context": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Lines of context before and after each match"},
                "context_before": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Lines of context before each match"},
                "context_after": {"type": "integer", "minimum": 0, "maximum": 100, "description": "Lines of context after each match"},
                "max_matches": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "The most matching lines to return (default 500)"},
                "max_line_len": {"type": "integer", "minimum": 20, "maximum": 100000, "description": "Cut longer lines around the match (default 500 bytes)"},
                "multiline": {"type": "boolean", "description": "Let the pattern match across lines (`\\n`) (default false)"}
            })),
            &["pattern"],
        ),
        READ_ONLY,
        Danger::Low,
    )
}

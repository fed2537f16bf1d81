//! "Did you mean" suggestions for names.

pub use toolshed_core::suggest::closest;

/// The names other tool sets (the MCP reference servers, Claude Code, Codex, Cursor,
/// Goose) give their tools, and toolshed's tools for the same job, best first. Matched
/// without regard to case, `-` or `_`.
const EQUIVALENTS: &[(&str, &[&str])] = &[
    ("readfile", &["workspace_read"]),
    ("read", &["workspace_read"]),
    ("readmultiplefiles", &["workspace_read"]),
    ("readtextfile", &["workspace_read"]),
    ("view", &["workspace_read"]),
    ("cat", &["workspace_read"]),
    ("writefile", &["workspace_write"]),
    ("write", &["workspace_write"]),
    ("createfile", &["workspace_write"]),
    ("editfile", &["workspace_edit", "workspace_patch"]),
    ("edit", &["workspace_edit", "workspace_patch"]),
    ("multiedit", &["workspace_patch", "workspace_edit"]),
    ("strreplace", &["workspace_edit"]),
    ("strreplaceeditor", &["workspace_edit", "workspace_read"]),
    ("applypatch", &["workspace_patch"]),
    ("listdirectory", &["workspace_list", "workspace_tree"]),
    ("listdir", &["workspace_list", "workspace_tree"]),
    ("listfiles", &["workspace_list", "workspace_glob"]),
    ("ls", &["workspace_list"]),
    ("directorytree", &["workspace_tree"]),
    ("tree", &["workspace_tree"]),
    (
        "searchfiles",
        &["workspace_glob", "workspace_find", "workspace_grep"],
    ),
    ("findfiles", &["workspace_find", "workspace_glob"]),
    ("filesearch", &["workspace_find", "workspace_glob"]),
    ("glob", &["workspace_glob"]),
    ("grep", &["workspace_grep"]),
    ("grepsearch", &["workspace_grep"]),
    ("codebasesearch", &["workspace_grep"]),
    ("search", &["workspace_grep", "web_search"]),
    ("movefile", &["workspace_move"]),
    ("createdirectory", &["workspace_mkdir"]),
    ("mkdir", &["workspace_mkdir"]),
    ("getfileinfo", &["workspace_stat"]),
    ("deletefile", &["workspace_delete"]),
    ("bash", &["exec_command", "shell"]),
    ("shell", &["exec_command", "shell"]),
    ("runcommand", &["exec_command"]),
    ("runterminalcmd", &["exec_command"]),
    ("executecommand", &["exec_command"]),
    ("exec", &["exec_command"]),
    ("terminal", &["exec_command"]),
    ("fetch", &["web_fetch"]),
    ("webfetch", &["web_fetch"]),
    ("websearch", &["web_search"]),
];

/// toolshed's tools for the job another tool set calls `name` (`read_file`, `Bash`).
pub(crate) fn known_equivalents(name: &str) -> &'static [&'static str] {
    let key: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    EQUIVALENTS
        .iter()
        .find(|(other, _)| *other == key)
        .map_or(&[], |(_, ours)| ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_tool_sets_names_map_to_ours() {
        assert_eq!(known_equivalents("read_file"), ["workspace_read"]);
        assert_eq!(known_equivalents("Bash"), ["exec_command", "shell"]);
        assert_eq!(known_equivalents("list-directory")[0], "workspace_list");
        assert!(known_equivalents("calculator").is_empty());
    }
}

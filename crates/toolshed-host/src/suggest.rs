//! "Did you mean" suggestions for names.

/// Up to `max` names from `candidates` closest to `wanted`: within a small edit distance, or
/// containing it (or contained in it), nearest first.
pub fn closest<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<String> {
    let wanted_lower = wanted.to_lowercase();
    let limit = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let d = edit_distance(&wanted_lower, &lower);
            let related = wanted_lower.len() >= 3
                && (lower.contains(&wanted_lower) || wanted_lower.contains(&lower));
            (d <= limit || related).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(max)
        .map(|(_, c)| c.to_string())
        .collect()
}

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

/// Levenshtein distance over chars.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_and_containing_names() {
        let names = ["calculator", "datetime", "text", "json_ops", "crypto"];
        assert_eq!(closest("calculater", names, 3), vec!["calculator"]);
        assert_eq!(closest("json", names, 3), vec!["json_ops"]);
        assert_eq!(closest("date", names, 3), vec!["datetime"]);
        assert!(closest("zzzzzz", names, 3).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn other_tool_sets_names_map_to_ours() {
        assert_eq!(known_equivalents("read_file"), ["workspace_read"]);
        assert_eq!(known_equivalents("Bash"), ["exec_command", "shell"]);
        assert_eq!(known_equivalents("list-directory")[0], "workspace_list");
        assert!(known_equivalents("calculator").is_empty());
    }
}

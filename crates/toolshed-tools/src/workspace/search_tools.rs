//! `workspace_glob`, `workspace_find`, `workspace_grep`, `workspace_tree`: finding things in
//! the workspace through the confined `SearchOps`.

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput, counted};
use toolshed_ops::{FileKind, FindRequest, GlobRequest, GrepRequest, TreeRequest};

use super::Env;
use super::spec::{FindArgs, GlobArgs, GrepArgs, TreeArgs};

pub(super) fn glob(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: GlobArgs = crate::args::parse(args)?;
    let request = GlobRequest {
        cancel: env.cancel.clone(),
        patterns: args.patterns,
        base: args.path,
        include_hidden: args.include_hidden,
        respect_gitignore: args.respect_gitignore,
        max_results: args.max_results,
    };
    let result = env.search.glob(&request)?;
    let mut text = result.paths.join("\n");
    if result.paths.is_empty() {
        text = format!(
            "No files match {} under `{}`",
            request.patterns.join(", "),
            request.base
        );
    }
    if result.truncated {
        text.push_str(&format!(
            "\n[only the first {} paths (in path order) are shown; narrow the patterns or raise max_results]",
            result.paths.len()
        ));
    }
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"paths": result.paths, "truncated": result.truncated}),
    ))
}

pub(super) fn find(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: FindArgs = crate::args::parse(args)?;
    if args.query.trim().is_empty() {
        return Err(ToolError::invalid_at(
            "/query",
            "the query is empty; give some characters of the name to look for",
        ));
    }
    let request = FindRequest {
        cancel: env.cancel.clone(),
        query: args.query,
        base: args.path,
        max_results: args.max_results,
        include_hidden: args.include_hidden,
        respect_gitignore: args.respect_gitignore,
        kind: args.kind.into(),
    };
    let result = env.search.find(&request)?;
    let lines: Vec<String> = result
        .matches
        .iter()
        .map(|m| {
            if m.kind == FileKind::Dir {
                format!("{}/", m.path)
            } else {
                m.path.clone()
            }
        })
        .collect();
    let mut text = if lines.is_empty() {
        format!(
            "Nothing under `{}` matches `{}`",
            request.base, request.query
        )
    } else {
        lines.join("\n")
    };
    if result.truncated {
        text.push_str(&format!("\n[the best {} matches are shown]", lines.len()));
    }
    let matches: Vec<Value> = result
        .matches
        .iter()
        .map(|m| json!({"path": m.path, "score": m.score, "kind": m.kind}))
        .collect();
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"matches": matches, "truncated": result.truncated}),
    ))
}

pub(super) fn grep(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: GrepArgs = crate::args::parse(args)?;
    let request = GrepRequest {
        cancel: env.cancel.clone(),
        pattern: args.pattern,
        fixed_string: args.fixed_string,
        case: args.case.into(),
        base: args.path,
        include: args.include.unwrap_or_default(),
        exclude: args.exclude.unwrap_or_default(),
        context_before: args.context_before.or(args.context).unwrap_or(0),
        context_after: args.context_after.or(args.context).unwrap_or(0),
        max_matches: args.max_matches,
        max_line_len: args.max_line_len,
        include_hidden: args.include_hidden,
        respect_gitignore: args.respect_gitignore,
        multiline: args.multiline,
    };
    let result = env.search.grep(&request)?;
    let mut text = String::new();
    for file in &result.files {
        for m in &file.matches {
            let sep = if m.is_context { '-' } else { ':' };
            text.push_str(&format!(
                "{}{sep}{}{sep}{}\n",
                file.path, m.line_number, m.text
            ));
        }
    }
    let files_with_matches = result.files.len();
    if result.total_matches == 0 {
        text.push_str(&format!(
            "No matches for `{}` in {} searched\n",
            request.pattern,
            counted(result.files_searched, "file", "files")
        ));
    } else {
        text.push_str(&format!(
            "[{} in {}; {} searched]\n",
            counted(result.total_matches, "match", "matches"),
            counted(files_with_matches, "file", "files"),
            counted(result.files_searched, "file", "files")
        ));
    }
    if result.truncated {
        text.push_str(
            "[results stop at max_matches; narrow the pattern or path, or raise max_matches]\n",
        );
    }
    if result.skipped_binary > 0 {
        text.push_str(&format!(
            "[{} binary files skipped]\n",
            result.skipped_binary
        ));
    }
    // The lines themselves are in the text; the structured result summarizes, so a large
    // result is not carried twice.
    let files: Vec<Value> = result
        .files
        .iter()
        .map(|f| json!({"path": f.path, "matches": f.matches.iter().filter(|m| !m.is_context).count()}))
        .collect();
    Ok(ToolOutput::text_and_structured(
        text,
        json!({
            "total_matches": result.total_matches,
            "files_searched": result.files_searched,
            "truncated": result.truncated,
            "skipped_binary": result.skipped_binary,
            "skipped_unreadable": result.skipped_unreadable,
            "files": files,
        }),
    ))
}

pub(super) fn tree(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: TreeArgs = crate::args::parse(args)?;
    let request = TreeRequest {
        cancel: env.cancel.clone(),
        base: args.path,
        max_depth: args.depth,
        include_hidden: args.include_hidden,
        respect_gitignore: args.respect_gitignore,
        max_entries: args.max_entries,
    };
    let result = env.search.tree(&request)?;
    let mut text = format!(
        "{}/\n",
        if result.base == "." {
            "."
        } else {
            result.base.as_str()
        }
    );
    for e in &result.entries {
        let name = e.path.rsplit('/').next().unwrap_or(&e.path);
        let slash = if e.kind == FileKind::Dir { "/" } else { "" };
        text.push_str(&format!("{}{name}{slash}\n", "  ".repeat(e.depth)));
    }
    if result.truncated {
        text.push_str(&format!(
            "[only the first {} entries (in path order) are shown; give a deeper path or raise max_entries]\n",
            result.entries.len()
        ));
    }
    let structured =
        serde_json::to_value(&result).map_err(|e| ToolError::Internal(e.to_string()))?;
    Ok(ToolOutput::text_and_structured(text, structured))
}

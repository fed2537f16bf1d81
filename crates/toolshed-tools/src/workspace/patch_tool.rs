//! `workspace_patch`: a multi-file patch, applied all-or-nothing.
//!
//! Every file the patch touches is read first and the engine computes every new content in
//! memory; then one [`FileOps::commit`](toolshed_ops::FileOps::commit) makes every change
//! or none: each file must still hold what was read (a concurrent writer's change fails
//! the patch with a conflict instead of being overwritten), and on disk an intent journal
//! finishes a patch that a crash interrupted.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};
use toolshed_ops::{Change, Expect, FileKind, Follow, Parents};

use super::Env;
use super::edit_tool::{capped, read_text};
use super::engine::diff;
use super::engine::matching::MatchLevel;
use super::engine::patch::{self, FileChange, FileOp};
use super::spec::PatchArgs;
use super::write::check_seen;

/// The most bytes of existing files one patch may read.
pub(super) const MAX_PATCH_READ_BYTES: u64 = 64 * 1024 * 1024;

/// What makes two spellings of a path the same file: its real path when it exists, else
/// the path with `.` and `name/..` folded.
fn identity(env: &Env, path: &str) -> String {
    if let Ok(real) = env.files.realpath(path) {
        return real;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// What a file was before the patch, for reading and for restoring.
fn read_before(env: &Env, path: &str) -> Result<Option<String>, ToolError> {
    match read_text(env, path) {
        Ok(text) => Ok(Some(text)),
        Err(ToolError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Refuses, before anything is written, a change whose target a write would refuse: a
/// symbolic link, a special file, a file with several hard links.
fn preflight(env: &Env, change: &FileChange) -> Result<(), ToolError> {
    let FileChange::Update { path, .. } = change else {
        return Ok(());
    };
    let m = env.files.stat(path, Follow::No)?;
    if m.kind != FileKind::File {
        return Err(ToolError::failed(format!(
            "`{path}` is not a regular file (a symbolic link or special file); patch the file it points to. No file was changed."
        )));
    }
    if m.links > 1 {
        return Err(ToolError::failed(format!(
            "`{path}` has {} hard links; writing it would change the other names too. No file was changed.",
            m.links
        )));
    }
    Ok(())
}

pub(super) fn run(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: PatchArgs = crate::args::parse(args)?;
    let parsed = patch::parse(&args.patch).map_err(|e| ToolError::invalid(e.to_string()))?;
    // Read every path the patch names (each file once, however it is spelled, and within a
    // total), and check the caller has read what it changes.
    let mut before: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut identities: BTreeMap<String, String> = BTreeMap::new();
    let mut total: u64 = 0;
    for file in &parsed.files {
        let mut paths = vec![file.path.as_str()];
        if let FileOp::Update {
            move_to: Some(to), ..
        } = &file.op
        {
            paths.push(to.as_str());
        }
        for (k, path) in paths.into_iter().enumerate() {
            if let Some(first) = identities.insert(identity(env, path), path.to_string()) {
                return Err(ToolError::invalid(format!(
                    "`{first}` and `{path}` name the same file; a patch may touch each file once"
                )));
            }
            let content = read_before(env, path)?;
            total += content.as_ref().map_or(0, |c| c.len() as u64);
            if total > MAX_PATCH_READ_BYTES {
                return Err(ToolError::invalid(format!(
                    "the files this patch touches hold more than {MAX_PATCH_READ_BYTES} bytes; split it into smaller patches"
                )));
            }
            if k == 0
                && let Some(content) = &content
                && !matches!(file.op, FileOp::Add { .. })
            {
                check_seen(env, path, content.as_bytes())?;
            }
            before.insert(path.to_string(), content);
        }
    }
    let changes = patch::apply(&parsed, &|path: &str| before.get(path).cloned().flatten())
        .map_err(|e| ToolError::failed(format!("{e}\nNo file was changed.")))?;

    for change in &changes {
        preflight(env, change)?;
    }
    // Each change expects the file to hold what was read above.
    let expect = |path: &str| match before.get(path) {
        Some(Some(text)) => Expect::Content(text.as_bytes()),
        _ => Expect::Missing,
    };
    let commit: Vec<Change<'_>> = changes
        .iter()
        .map(|change| match change {
            FileChange::Add { path, content } => Change::Write {
                path,
                data: content.as_bytes(),
                expect: expect(path),
                parents: Parents::Create,
            },
            FileChange::Delete { path } => Change::Remove {
                path,
                expect: expect(path),
            },
            FileChange::Update {
                path,
                new_content,
                move_to: None,
                ..
            } => Change::Write {
                path,
                data: new_content.as_bytes(),
                expect: expect(path),
                parents: Parents::MustExist,
            },
            FileChange::Update {
                path,
                new_content,
                move_to: Some(to),
                ..
            } => Change::Move {
                from: path,
                to,
                data: new_content.as_bytes(),
                expect: expect(path),
            },
        })
        .collect();
    const NOTHING: &str = "No file was changed.";
    env.files
        .commit(&commit)
        .map_err(|e| match ToolError::from(e) {
            ToolError::Conflict(m) => ToolError::Conflict(format!("{m}\n{NOTHING}")),
            ToolError::NotFound(m) => ToolError::NotFound(format!("{m}\n{NOTHING}")),
            ToolError::Denied { rule, message } => ToolError::Denied {
                rule,
                message: format!("{message}\n{NOTHING}"),
            },
            other => ToolError::failed(format!("{other}\n{NOTHING}")),
        })?;

    let mut summary = Vec::new();
    let mut diffs = String::new();
    let mut files = Vec::new();
    for change in &changes {
        let (line, path, after, level) = match change {
            FileChange::Add { path, content } => (
                format!("A {path}"),
                path.clone(),
                Some(content.as_str()),
                None,
            ),
            FileChange::Delete { path } => (format!("D {path}"), path.clone(), None, None),
            FileChange::Update {
                path,
                new_content,
                move_to,
                level,
            } => {
                let shown = match move_to {
                    Some(to) => format!("R {path} -> {to}"),
                    None => format!("M {path}"),
                };
                (
                    shown,
                    move_to.clone().unwrap_or_else(|| path.clone()),
                    Some(new_content.as_str()),
                    Some(*level),
                )
            }
        };
        let old = before
            .get(change.path())
            .cloned()
            .flatten()
            .unwrap_or_default();
        let new = after.unwrap_or("");
        let (added, removed) = diff::stats(&old, new);
        let mut line = format!("{line} (+{added} -{removed})");
        if let Some(level) = level.filter(|l| *l != MatchLevel::Exact) {
            line.push_str(&format!(" — context matched {}", level.describe()));
        }
        summary.push(line);
        diffs.push_str(&diff::unified(&path, &old, new, 3));
        if let Some(content) = after
            && let Ok(real) = env.files.realpath(&path)
        {
            super::ledger::record(env.ledger.as_ref(), &env.owner, &real, content.as_bytes());
        }
        files.push(json!({"path": path, "added": added, "removed": removed}));
    }
    let text = format!(
        "Applied the patch to {} file{}:\n{}\n{}",
        changes.len(),
        if changes.len() == 1 { "" } else { "s" },
        summary.join("\n"),
        capped(diffs)
    );
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"files": files}),
    ))
}

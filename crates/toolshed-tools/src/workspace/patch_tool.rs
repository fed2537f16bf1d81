//! `workspace_patch`: a multi-file patch, applied all-or-nothing.
//!
//! Every file the patch touches is read first, the engine computes every new content in
//! memory, and only if all of it succeeds are the files written. Should a write fail part
//! way (a full disk, a permission), the files already written are restored from what was
//! read, so the workspace is as it was.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};
use toolshed_ops::{FileKind, Follow, OpsError, Overwrite, Parents};

use super::Env;
use super::edit_tool::{capped, read_text};
use super::engine::diff;
use super::engine::matching::MatchLevel;
use super::engine::patch::{self, FileChange, FileOp};
use super::spec::PatchArgs;
use super::write::check_read;

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

fn apply_change(env: &Env, change: &FileChange) -> Result<(), OpsError> {
    match change {
        FileChange::Add { path, content } => env
            .files
            .write(path, content.as_bytes(), Parents::Create)
            .map(|_| ()),
        FileChange::Delete { path } => env.files.remove(path, false),
        FileChange::Update {
            path,
            new_content,
            move_to: None,
            ..
        } => env
            .files
            .write(path, new_content.as_bytes(), Parents::MustExist)
            .map(|_| ()),
        FileChange::Update {
            path,
            new_content,
            move_to: Some(to),
            ..
        } => {
            // Renamed first, then rewritten: the file keeps its permissions.
            if let Some((parent, _)) = to.rsplit_once('/') {
                env.files.mkdir(parent, Parents::Create)?;
            }
            env.files.rename(path, to, Overwrite::No)?;
            env.files
                .write(to, new_content.as_bytes(), Parents::MustExist)
                .map(|_| ())
        }
    }
}

/// The order changes are written in: updates and moves, then new files, deletions last,
/// so a failure part way has destroyed nothing that a rewrite cannot bring back.
fn phase(change: &FileChange) -> u8 {
    match change {
        FileChange::Update { .. } => 0,
        FileChange::Add { .. } => 1,
        FileChange::Delete { .. } => 2,
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

/// Puts back every path that no longer holds what it held before the patch; returns the
/// paths that could not be restored. Paths still as they were are left alone.
fn restore(env: &Env, before: &BTreeMap<String, Option<String>>) -> Vec<String> {
    let mut failed = Vec::new();
    for (path, content) in before {
        match read_before(env, path) {
            Ok(current) if current == *content => continue,
            _ => {}
        }
        let result = match content {
            Some(text) => env
                .files
                .write(path, text.as_bytes(), Parents::Create)
                .map(|_| ()),
            None => match env.files.remove(path, false) {
                Err(OpsError::NotFound { .. }) => Ok(()),
                other => other,
            },
        };
        if result.is_err() {
            failed.push(path.clone());
        }
    }
    failed
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
            if k == 0 && content.is_some() && !matches!(file.op, FileOp::Add { .. }) {
                check_read(env, path)?;
            }
            before.insert(path.to_string(), content);
        }
    }
    let changes = patch::apply(&parsed, &|path: &str| before.get(path).cloned().flatten())
        .map_err(|e| ToolError::failed(format!("{e}\nNo file was changed.")))?;

    for change in &changes {
        preflight(env, change)?;
    }
    let mut ordered: Vec<&FileChange> = changes.iter().collect();
    ordered.sort_by_key(|c| phase(c));
    let mut moved: Vec<(&str, &str)> = Vec::new();
    for (i, change) in ordered.iter().enumerate() {
        if let Err(e) = apply_change(env, change) {
            // Moves go back first, so the content restore finds every file where it was.
            for (from, to) in moved.iter().rev() {
                let _ = env.files.rename(to, from, Overwrite::No);
            }
            if let FileChange::Update {
                path,
                move_to: Some(to),
                ..
            } = change
            {
                let _ = env.files.rename(to, path, Overwrite::No);
            }
            let unrestored = restore(env, &before);
            let state = if unrestored.is_empty() {
                "every file was restored to what it was before the patch".to_string()
            } else {
                format!(
                    "these files could not be restored: {}",
                    unrestored.join(", ")
                )
            };
            return Err(ToolError::failed(format!(
                "writing change {} of {} (`{}`) failed: {e}; {state}",
                i + 1,
                changes.len(),
                change.path()
            )));
        }
        if let FileChange::Update {
            path,
            move_to: Some(to),
            ..
        } = change
        {
            moved.push((path.as_str(), to.as_str()));
        }
    }

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

//! `workspace_edit`: replace text in one file, after a read of its current version.

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};
use toolshed_ops::{Change, Expect, Parents};

use super::Env;
use super::engine::{diff, edit};
use super::read::{MAX_TEXT_BYTES, is_text};
use super::spec::EditArgs;
use super::write::check_seen;

/// The most bytes of diff shown in a result.
pub(super) const MAX_DIFF_BYTES: usize = 64 * 1024;

/// Reads a text file for changing it: refuses binaries and files over the limit.
pub(super) fn read_text(env: &Env, path: &str) -> Result<String, ToolError> {
    let contents = env.files.read(path, MAX_TEXT_BYTES + 1)?;
    if contents.size > MAX_TEXT_BYTES {
        return Err(ToolError::failed(format!(
            "`{path}` is {} bytes; files over {MAX_TEXT_BYTES} bytes cannot be edited here",
            contents.size
        )));
    }
    if !is_text(&contents.bytes) {
        return Err(ToolError::failed(format!(
            "`{path}` is a binary file; only text files can be edited"
        )));
    }
    String::from_utf8(contents.bytes).map_err(|e| ToolError::Internal(e.to_string()))
}

/// `diff` cut to [`MAX_DIFF_BYTES`] on a line boundary, saying so.
pub(super) fn capped(diff: String) -> String {
    if diff.len() <= MAX_DIFF_BYTES {
        return diff;
    }
    let cut = diff[..MAX_DIFF_BYTES].rfind('\n').map_or(0, |i| i + 1);
    format!(
        "{}[diff cut at {MAX_DIFF_BYTES} bytes; read the file to see the rest]\n",
        &diff[..cut]
    )
}

/// `text` with `insert` placed after line `after` (0: before the first), as whole lines.
fn insert_lines(path: &str, text: &str, after: usize, insert: &str) -> Result<String, ToolError> {
    let lines = text.split_inclusive('\n').count();
    if after > lines {
        return Err(ToolError::invalid(format!(
            "`{path}` has {lines} line{}; insert_line must be 0 to {lines}",
            if lines == 1 { "" } else { "s" }
        )));
    }
    let at: usize = text.split_inclusive('\n').take(after).map(str::len).sum();
    let mut out = String::with_capacity(text.len() + insert.len() + 2);
    out.push_str(&text[..at]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(insert);
    if !insert.ends_with('\n') && at < text.len() {
        out.push('\n');
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// `workspace_edit` with `insert_line`: new lines after a line, nothing replaced.
fn insert(env: &Env, args: &EditArgs, after: usize) -> Result<ToolOutput, ToolError> {
    if !args.old_text.is_empty() || args.replace_all {
        return Err(ToolError::invalid(
            "insert_line inserts new_text and replaces nothing: leave out old_text and \
             replace_all, or leave out insert_line to replace old_text",
        ));
    }
    if args.new_text.is_empty() {
        return Err(ToolError::invalid("new_text is empty: nothing to insert"));
    }
    let before = read_text(env, &args.path)?;
    check_seen(env, &args.path, before.as_bytes())?;
    let after_text = insert_lines(&args.path, &before, after, &args.new_text)?;
    env.files.commit(&[Change::Write {
        path: &args.path,
        data: after_text.as_bytes(),
        expect: Expect::Content(before.as_bytes()),
        parents: Parents::MustExist,
    }])?;
    let real = env.files.realpath(&args.path)?;
    super::ledger::record(
        env.ledger.as_ref(),
        &env.owner,
        &real,
        after_text.as_bytes(),
    );
    let (added, removed) = diff::stats(&before, &after_text);
    let mut text = format!(
        "Inserted {added} line{} into `{}` after line {after}\n",
        if added == 1 { "" } else { "s" },
        args.path
    );
    text.push_str(&capped(diff::unified(&args.path, &before, &after_text, 3)));
    Ok(ToolOutput::text_and_structured(
        text,
        json!({
            "path": args.path,
            "inserted_after": after,
            "added": added,
            "removed": removed,
        }),
    ))
}

pub(super) fn run(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: EditArgs = crate::args::parse(args)?;
    if let Some(after) = args.insert_line {
        return insert(env, &args, after);
    }
    let before = read_text(env, &args.path)?;
    check_seen(env, &args.path, before.as_bytes())?;
    let outcome = edit::apply_edit(&before, &args.old_text, &args.new_text, args.replace_all)
        .map_err(|e| match e {
            edit::EditError::EmptyOld | edit::EditError::Unchanged => {
                ToolError::invalid(format!("`{}`: {e}", args.path))
            }
            edit::EditError::Ambiguous { .. } => {
                ToolError::Conflict(format!("`{}`: {e}", args.path))
            }
            edit::EditError::NotFound { .. } => ToolError::failed(format!("`{}`: {e}", args.path)),
        })?;
    // Only over what was read: a concurrent writer's change fails this edit instead of
    // being silently undone.
    env.files.commit(&[Change::Write {
        path: &args.path,
        data: outcome.content.as_bytes(),
        expect: Expect::Content(before.as_bytes()),
        parents: Parents::MustExist,
    }])?;
    let real = env.files.realpath(&args.path)?;
    super::ledger::record(
        env.ledger.as_ref(),
        &env.owner,
        &real,
        outcome.content.as_bytes(),
    );
    let (added, removed) = diff::stats(&before, &outcome.content);
    let mut text = format!(
        "Edited `{}`: {} replacement{} (+{added} -{removed} lines)",
        args.path,
        outcome.replacements,
        if outcome.replacements == 1 { "" } else { "s" }
    );
    if let Some(fallback) = &outcome.fallback {
        text.push_str(&format!(
            "; the exact text was not found, so it matched after {fallback}"
        ));
    }
    text.push('\n');
    text.push_str(&capped(diff::unified(
        &args.path,
        &before,
        &outcome.content,
        3,
    )));
    Ok(ToolOutput::text_and_structured(
        text,
        json!({
            "path": args.path,
            "replacements": outcome.replacements,
            "fallback": outcome.fallback,
            "added": added,
            "removed": removed,
        }),
    ))
}

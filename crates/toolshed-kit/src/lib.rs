//! What toolshed's built-in tool families share, below all of them: arguments read into a
//! typed struct whose schema is generated from it ([`args`]), HTML parsed and rendered for a
//! model ([`html`]), the read-before-edit ledger ([`ledger`]), unified diffs ([`diff`]), a
//! page of text ([`window`]), finding a program ([`find_program`]), file operations off
//! the async threads ([`on_files`]), a feature's own section of the configuration
//! ([`section`]) and the TypeScript declarations of tools for code mode
//! ([`declarations`]).
//!
//! A tool family (`toolshed-tools`, `toolshed-browser`, `toolshed-lsp`, ...) depends on
//! this crate and never on another family: what two families need is here.

use std::sync::Arc;

use toolshed_core::ToolError;

pub mod args;
pub mod declarations;
pub mod diff;
pub mod html;
pub mod ledger;
pub mod section;

/// Runs a file operation off the async threads (downloads, mail attachments).
pub async fn on_files<T: Send + 'static>(
    files: &Arc<dyn toolshed_ops::FileOps>,
    op: impl FnOnce(&dyn toolshed_ops::FileOps) -> Result<T, toolshed_ops::OpsError> + Send + 'static,
) -> Result<T, toolshed_core::ToolError> {
    let files = files.clone();
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(|| op(files.as_ref())))
        .await
        .map_err(|e| toolshed_core::ToolError::Internal(e.to_string()))?
        .map_err(toolshed_core::ToolError::from)
}

/// The executable `name` names: a path with a `/`, checked, or a name looked up on `PATH`.
pub fn find_program(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = std::path::PathBuf::from(name);
        return executable(&path).then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| executable(p))
    })
}

/// The part of `content` from character `start`, at most `max` characters, as it follows a
/// page's header: a `Showing:` line when it is not all, a blank line, the characters, and
/// the call that reads on (the argument named `start_arg`) when more is left.
pub fn window(content: &str, start: u64, max: u64, start_arg: &str) -> Result<String, ToolError> {
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    let total = content.chars().count();
    if start > 0 && start >= total {
        return Err(ToolError::invalid_at(
            format!("/{start_arg}"),
            format!(
                "`{start_arg}` {start} is past the end of the content, which is {total} characters long; use a smaller {start_arg} (0 for the beginning)"
            ),
        ));
    }
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let slice: String = content.chars().skip(start).take(max).collect();
    let end = start + slice.chars().count();
    let mut out = String::new();
    if start > 0 || end < total {
        out.push_str(&format!("Showing: characters {start}-{end} of {total}\n"));
    }
    out.push('\n');
    out.push_str(&slice);
    if end < total {
        out.push_str(&format!(
            "\n\ncontent truncated — call again with {start_arg}={end}"
        ));
    }
    Ok(out)
}

//! Fenix's workspace layout: `memory/`, `agent_program_versions/` (with a first version,
//! `CURRENT` naming it), `conversations/` and `.env.agent`, each seeded with a short
//! README or template. Made by `toolshed workspace init`, or when a host opens a workspace
//! with `[workspace] bootstrap = true`. What exists already is never overwritten.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The layout: (path, content); a path ending in `/` is a directory.
pub const LAYOUT: &[(&str, &str)] = &[
    ("memory/", ""),
    (
        "memory/README.md",
        "# Memory\n\nNotes the agent keeps between sessions, one Markdown file a subject. toolshed's\nmemory tools keep theirs in its state store; `toolshed memory export` writes them here.\n",
    ),
    ("agent_program_versions/", ""),
    (
        "agent_program_versions/README.md",
        "# Agent program versions\n\nEach folder is one version of the agent's program: its instructions (`program.md`)\nand its variables (`.env`). `CURRENT` names the version in use; its `.env` is layered\nover the workspace's `.env` and `.env.agent` for the commands toolshed runs.\n",
    ),
    ("agent_program_versions/CURRENT", "v1\n"),
    ("agent_program_versions/v1/", ""),
    (
        "agent_program_versions/v1/program.md",
        "# The agent's program, version 1\n\nWhat the agent is for, how it works, and what it must not do.\n",
    ),
    (
        "agent_program_versions/v1/.env",
        "# Variables of this program version (KEY=value), over .env and .env.agent.\n",
    ),
    ("conversations/", ""),
    (
        "conversations/README.md",
        "# Conversations\n\nTranscripts and summaries of the agent's conversations, one file each.\n",
    ),
    (
        ".env.agent",
        "# Variables for the agent's commands (KEY=value), over .env.\n",
    ),
];

/// What [`init`] did: the layout's paths it made, and those it found and kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Made {
    /// Paths made, as in [`LAYOUT`].
    pub created: Vec<String>,
    /// Paths that were there already, left as they were.
    pub kept: Vec<String>,
}

/// A part of the layout that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot create {}: {source}", path.display())]
pub struct LayoutError {
    /// The path.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// Makes the layout in `workspace`, keeping whatever is there (a file is created only
/// where nothing is, never written over).
pub fn init(workspace: &Path) -> Result<Made, LayoutError> {
    let mut made = Made::default();
    for (path, content) in LAYOUT {
        let target = workspace.join(path.trim_end_matches('/'));
        let fail = |source| LayoutError {
            path: target.clone(),
            source,
        };
        let created = if path.ends_with('/') {
            match std::fs::create_dir(&target) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
                Err(e) => return Err(fail(e)),
            }
        } else {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
            {
                Ok(mut file) => {
                    file.write_all(content.as_bytes()).map_err(fail)?;
                    true
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
                Err(e) => return Err(fail(e)),
            }
        };
        if created {
            made.created.push((*path).to_string())
        } else {
            made.kept.push((*path).to_string())
        }
    }
    Ok(made)
}

/// The automatic bootstrap (`[workspace] bootstrap = true`): on the first use of a
/// workspace without the layout (no `agent_program_versions/`), makes it. A workspace that
/// has it, even in part, is left alone: removing a part of it is a choice to respect.
pub fn bootstrap(workspace: &Path) -> Option<Made> {
    if workspace
        .join(crate::env_overlay::PROGRAM_VERSIONS)
        .symlink_metadata()
        .is_ok()
    {
        return None;
    }
    match init(workspace) {
        Ok(made) => {
            tracing::info!(created = ?made.created, "made the workspace layout ([workspace] bootstrap)");
            Some(made)
        }
        Err(e) => {
            tracing::warn!("the workspace layout ([workspace] bootstrap): {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_keeps_what_is_there_and_bootstrap_runs_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env.agent"), "MINE=1\n").unwrap();
        let made = bootstrap(dir.path()).expect("a bare workspace is bootstrapped");
        assert!(made.kept == vec![".env.agent".to_string()], "{made:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".env.agent")).unwrap(),
            "MINE=1\n"
        );
        std::fs::remove_dir_all(dir.path().join("memory")).unwrap();
        assert!(bootstrap(dir.path()).is_none(), "the layout is there");
        assert!(
            !dir.path().join("memory").exists(),
            "a removed part stays removed"
        );
        let again = init(dir.path()).unwrap();
        assert_eq!(again.created, vec!["memory/", "memory/README.md"]);
    }
}

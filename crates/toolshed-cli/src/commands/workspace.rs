//! `toolshed workspace init`: Fenix's workspace layout made in the workspace — `memory/`,
//! `agent_program_versions/` (with a first version, `CURRENT` naming it), `conversations/`
//! and `.env.agent` — each seeded with a short README or template. What exists already is
//! never overwritten.

use std::io::Write as _;
use std::path::Path;

use clap::Subcommand;

use crate::Failure;
use crate::render::print_json;

/// `toolshed workspace …`.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkspaceCommand {
    /// Make Fenix's workspace layout (memory/, agent_program_versions/, conversations/,
    /// .env.agent), keeping whatever is there
    Init {
        /// Print exact JSON
        #[arg(long)]
        json: bool,
    },
}

/// The layout: (path, content); a path ending in `/` is a directory.
const LAYOUT: &[(&str, &str)] = &[
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

/// Runs `toolshed workspace …` in `workspace`.
pub(crate) fn run(workspace: &Path, command: WorkspaceCommand) -> Result<(), Failure> {
    let WorkspaceCommand::Init { json } = command;
    if !workspace.is_dir() {
        return Err(Failure::Usage(format!(
            "the workspace {} is not a directory; create it first or pass --workspace DIR",
            workspace.display()
        )));
    }
    let mut created = Vec::new();
    let mut kept = Vec::new();
    for (path, content) in LAYOUT {
        let target = workspace.join(path.trim_end_matches('/'));
        let fail = |e: std::io::Error| {
            Failure::Runtime(format!("cannot create {}: {e}", target.display()))
        };
        let made = if path.ends_with('/') {
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
        if made { &mut created } else { &mut kept }.push((*path).to_string());
    }
    if json {
        return print_json(&serde_json::json!({"created": created, "kept": kept}));
    }
    for path in &created {
        outln!("created {path}");
    }
    for path in &kept {
        outln!("kept    {path} (already there)");
    }
    Ok(())
}

//! `toolshed workspace init`: Fenix's workspace layout
//! ([`toolshed_host::workspace_layout`]) made in the workspace, keeping what is there.

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

/// Runs `toolshed workspace …` in `workspace`.
pub(crate) fn run(workspace: &Path, command: WorkspaceCommand) -> Result<(), Failure> {
    let WorkspaceCommand::Init { json } = command;
    if !workspace.is_dir() {
        return Err(Failure::Usage(format!(
            "the workspace {} is not a directory; create it first or pass --workspace DIR",
            workspace.display()
        )));
    }
    let made = toolshed_host::workspace_layout::init(workspace)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let (created, kept) = (made.created, made.kept);
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

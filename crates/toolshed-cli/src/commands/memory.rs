//! `toolshed memory export|import`: the Markdown files view of an owner's memories
//! (docs/memory.md).

use serde_json::json;
use toolshed_host::Host;
use toolshed_host::memory::MemoryError;

use crate::Failure;
use crate::cli::MemoryCommand;
use crate::render::print_json;

fn failure(e: MemoryError) -> Failure {
    match e {
        MemoryError::Invalid(m) | MemoryError::NotFound(m) => Failure::Usage(m),
        MemoryError::Conflict(m) | MemoryError::Unwritten(m) => Failure::Runtime(m),
        MemoryError::Store(e) => Failure::Runtime(e.to_string()),
    }
}

/// Runs one memory command.
pub(crate) async fn run(host: &Host, command: MemoryCommand) -> Result<(), Failure> {
    let memories = host.memories();
    let files = host.services().ops.files.clone();
    let workspace = host.workspace().to_path_buf();
    tokio::task::spawn_blocking(move || match command {
        MemoryCommand::Export { dir, owner } => {
            // Into the workspace, through the same file boundary as every tool: read-only
            // mode and `[sandbox] deny` hold for an export too.
            let inside = std::path::absolute(&dir)
                .ok()
                .map(|d| fold(&d))
                .and_then(|d| d.strip_prefix(&workspace).ok().map(std::path::Path::to_path_buf));
            let report = match inside {
                None => memories.export_markdown(&owner, &dir),
                Some(rel) => memories.export_markdown_with(&owner, &rel, &mut |path, text| {
                    let path = path.to_string_lossy();
                    files
                        .write(&path, text.as_bytes(), toolshed_ops::Parents::Create)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }),
            }
            .map_err(failure)?;
            outln!(
                "exported {} memories of `{}` to {}",
                report.files,
                toolshed_host::memory::scope_of(&owner),
                dir.display()
            );
            Ok(())
        }
        MemoryCommand::Import { dir, owner, json } => {
            let report = memories.import_markdown(&owner, &dir).map_err(failure)?;
            if json {
                let failed: Vec<_> = report
                    .failed
                    .iter()
                    .map(|(path, why)| json!({"file": path, "error": why}))
                    .collect();
                print_json(&json!({
                    "created": report.created,
                    "updated": report.updated,
                    "unchanged": report.unchanged,
                    "failed": failed,
                }))?;
            } else {
                outln!(
                    "imported into the memories of `{}`: {} new, {} updated, {} unchanged, {} failed",
                    toolshed_host::memory::scope_of(&owner),
                    report.created,
                    report.updated,
                    report.unchanged,
                    report.failed.len()
                );
                for (path, why) in &report.failed {
                    outln!("  {}: {why}", path.display());
                }
            }
            if report.failed.is_empty() {
                Ok(())
            } else {
                Err(Failure::Runtime(String::new()))
            }
        }
    })
    .await
    .map_err(|e| Failure::Runtime(format!("the memory command failed: {e}")))?
}

/// `path` (absolute) with `.` and `..` folded away by name, so that `/x/../ws/notes` is
/// seen to be inside `/ws`.
fn fold(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut folded = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                folded.pop();
            }
            other => folded.push(other),
        }
    }
    folded
}

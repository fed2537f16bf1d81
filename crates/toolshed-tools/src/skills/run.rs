//! `skill_run`: a skill's script run confined to what it was given. The script reads its
//! own folder (wherever the skill lives, `.toolshed/skills` and the user's skills
//! included) and the workspace folders the call grants it read-only; nothing else of the
//! workspace, nothing of toolshed's, none of the secrets every command is kept from, and no
//! network. Its private `/tmp` is writable; what it has to say it prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolshed_core::{CallContext, ToolError, ToolOutput};
use toolshed_ops::process::{ExitStatus, OutputLimits, Stop, Stream};
use toolshed_ops::sandbox::SandboxMode;
use toolshed_ops::{ProcessOps, SpawnRequest};

use super::Skill;

/// What a skill's scripts run on: the host's processes, over its (local) workspace.
#[derive(Clone)]
pub struct ScriptRunner {
    /// Where commands start.
    pub process: Arc<dyn ProcessOps>,
    /// The workspace root, absolute (granted folders are inside it).
    pub workspace: PathBuf,
    /// The workspace's further roots by name, absolute: a folder of one is granted as
    /// `@name/folder` (`toolshed_ops::roots`).
    pub roots: Vec<(String, PathBuf)>,
}

/// The most workspace folders one run may be granted.
const MAX_GRANTS: usize = 16;
/// The most arguments.
const MAX_ARGS: usize = 64;
/// The default and longest time a script may run.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// The most output kept of each stream (the start and the end).
const KEPT_BYTES: usize = 32 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RunArgs {
    /// The skill's name
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// The script, in the skill's folder (e.g. scripts/count.sh)
    #[schemars(length(min = 1, max = 512))]
    pub script: String,
    /// Its arguments
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub args: Vec<String>,
    /// Workspace folders it may read (read-only); nothing else of the workspace
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub read: Vec<String>,
    /// Milliseconds it may run
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1, max = 600000))]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// The program that runs `script`: its interpreter by extension, else the file itself
/// when it is executable.
fn program_for(script: &Path) -> Result<(String, bool), ToolError> {
    let by_extension = match script.extension().and_then(|e| e.to_str()) {
        Some("sh") => Some("sh"),
        Some("bash") => Some("bash"),
        Some("py") => Some("python3"),
        Some("js" | "mjs" | "cjs") => Some("node"),
        Some("rb") => Some("ruby"),
        Some("pl") => Some("perl"),
        _ => None,
    };
    if let Some(interpreter) = by_extension {
        return Ok((interpreter.into(), true));
    }
    use std::os::unix::fs::PermissionsExt as _;
    let executable = std::fs::metadata(script).is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if executable {
        Ok((script.display().to_string(), false))
    } else {
        Err(ToolError::invalid(format!(
            "`{}` is neither a script toolshed knows how to run (.sh, .bash, .py, .js, .rb, .pl) nor executable; make it executable or give it one of those extensions",
            script.display()
        )))
    }
}

/// A workspace folder granted to the script, absolute, with no link on the way (the
/// sandbox refuses one with a link too, so a link swapped in later leads nowhere).
fn granted(workspace: &Path, rel: &str) -> Result<PathBuf, ToolError> {
    let bad = |why: &str| ToolError::invalid(format!("`read` entry `{rel}`: {why}"));
    let normal =
        toolshed_ops::path::normalize_lexically(rel.trim_end_matches('/')).map_err(|e| {
            bad(&format!(
                "{e}; give a folder inside the workspace, such as `data`"
            ))
        })?;
    if normal == "." {
        return Err(bad(
            "the whole workspace cannot be granted; name the folders the script needs",
        ));
    }
    if normal == ".toolshed" || normal.starts_with(".toolshed/") {
        return Err(bad("`.toolshed/` is toolshed's own and is never granted"));
    }
    let mut at = workspace.to_path_buf();
    for part in normal.split('/') {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(bad(
                    "goes through a symbolic link; grant the folder it points to",
                ));
            }
            Ok(_) => {}
            Err(_) => return Err(bad("does not exist")),
        }
    }
    if !at.is_dir() {
        return Err(bad("is a file; grant the folder that holds it"));
    }
    Ok(at)
}

/// Runs `args.script` of `skill` confined (see the module docs).
pub(super) async fn run(
    runner: &ScriptRunner,
    skill: &Skill,
    args: RunArgs,
    ctx: &CallContext,
) -> Result<ToolOutput, ToolError> {
    if args.args.len() > MAX_ARGS || args.read.len() > MAX_GRANTS {
        return Err(ToolError::invalid(format!(
            "at most {MAX_ARGS} arguments and {MAX_GRANTS} `read` folders"
        )));
    }
    let timeout = Duration::from_millis(args.timeout_ms.clamp(1, MAX_TIMEOUT_MS));
    // The skill's folder as the kernel names it, and the script a regular file inside it.
    #[allow(clippy::disallowed_methods)]
    let dir = std::fs::canonicalize(&skill.dir).map_err(|e| {
        ToolError::Failed(format!("the skill's folder {}: {e}", skill.dir.display()))
    })?;
    let rel = args.script.trim_start_matches("./");
    toolshed_ops::open_beneath(&dir, Path::new(rel)).map_err(|e| {
        ToolError::NotFound(format!(
            "skill `{}` has no script `{}` ({e}); skill_load lists its files",
            skill.name, args.script
        ))
    })?;
    let script = dir.join(rel);
    let (program, with_interpreter) = program_for(&script)?;
    let mut revealed = vec![dir.clone()];
    for rel in &args.read {
        // `@name/folder`: a folder of a further root.
        let (base, rel) = rel
            .strip_prefix('@')
            .and_then(|named| named.split_once('/'))
            .and_then(|(name, rest)| {
                runner
                    .roots
                    .iter()
                    .find(|(root, _)| root == name)
                    .map(|(_, path)| (path, rest))
            })
            .unwrap_or((&runner.workspace, rel.as_str()));
        revealed.push(granted(base, rel)?);
    }
    let mut request = SpawnRequest::new(program).limits(OutputLimits {
        head_bytes: KEPT_BYTES,
        tail_bytes: KEPT_BYTES,
        kill_after_bytes: Some(16 << 20),
    });
    if with_interpreter {
        request = request.arg(script.display().to_string());
    }
    for arg in &args.args {
        request = request.arg(arg.clone());
    }
    request = request.env("SKILL_DIR", dir.display().to_string());
    request.visible = vec![dir.clone()];
    request.revealed = revealed;
    request.confined = true;
    request.sandbox = Some(SandboxMode::ReadOnly);
    request.network_hosts = Some(Vec::new());
    let process = runner.process.spawn(&request).map_err(ToolError::from)?;
    let exit = tokio::select! {
        exit = process.wait(timeout) => exit,
        () = ctx.cancel.cancelled() => {
            process.terminate(Stop::Forced).await;
            return Err(ToolError::Cancelled);
        }
    };
    let Some(exit) = exit else {
        process.terminate(Stop::Forced).await;
        return Err(ToolError::Timeout(timeout));
    };
    let (stdout, stderr) = (
        process.snapshot(Stream::Stdout).text(),
        process.snapshot(Stream::Stderr).text(),
    );
    let code = match exit.status {
        ExitStatus::Code(code) => json!(code),
        ExitStatus::Signal(_) => serde_json::Value::Null,
    };
    let mut said = stdout.clone();
    if !stderr.is_empty() {
        said.push_str(&format!("\n[stderr]\n{stderr}"));
    }
    said.push_str(&format!(
        "\n[{} · skill {} · {}]",
        match exit.status {
            ExitStatus::Code(code) => format!("exit code {code}"),
            ExitStatus::Signal(signal) => format!("ended by signal {signal}"),
        },
        skill.name,
        args.script
    ));
    let output = ToolOutput::text_and_structured(
        said,
        json!({"exit_code": code, "stdout": stdout, "stderr": stderr, "skill": skill.name, "script": args.script}),
    );
    Ok(if exit.status.success() {
        output
    } else {
        output.into_error()
    })
}

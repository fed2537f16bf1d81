//! `shell`: one persistent shell per owner. `cd`, exported variables and functions carry
//! over from call to call.
//!
//! The shell is `bash --noprofile --norc` (or `sh`) on pipes, with its stderr joined to its
//! stdout so output keeps its order. Each command is sent base64-encoded and run as `if eval "$(… | base64 -d)" </dev/null`,
//! followed by a line that prints a marker with a random nonce and the exit status; the
//! reply is everything up to the marker. A syntax error or an unclosed quote in the command
//! is an error of that command, not of the protocol. Commands never read the shell's
//! own input (that is where the next command comes from). A command that outlives its
//! timeout takes the shell down with it: the tree is killed and the next call starts a
//! fresh shell, and the reply says so.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolshed_core::{CallContext, ToolError, ToolOutput};
use toolshed_ops::ProcessOps;
use toolshed_ops::process::{Process, SpawnRequest, Stdin, Stop, Stream};

use super::spec::{SHELL_MAX_TIMEOUT_MS, ShellArgs};
use super::{clamp_wait, millis, render_to};

const OUTPUT_BUDGET: usize = 32 * 1024;
/// The most shells kept at once (one per owner).
const MAX_SHELLS: usize = 64;

struct Shell {
    process: Process,
    marker: String,
    /// One command at a time.
    busy: tokio::sync::Mutex<()>,
    /// When a command last started, for evicting idle shells.
    last_used: Mutex<Instant>,
}

/// The shells of a host, one per owner.
pub(crate) struct ShellTable {
    shells: Mutex<HashMap<String, Arc<Shell>>>,
    process: Arc<dyn ProcessOps>,
}

impl ShellTable {
    /// No shells yet; they start through `process`.
    pub(crate) fn new(process: Arc<dyn ProcessOps>) -> Self {
        Self {
            shells: Mutex::new(HashMap::new()),
            process,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Shell>>> {
        self.shells.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many shells run.
    pub(crate) fn running(&self) -> usize {
        self.lock()
            .values()
            .filter(|s| s.process.exit().is_none())
            .count()
    }

    fn forget(&self, owner: &str, shell: &Arc<Shell>) {
        let mut shells = self.lock();
        if shells.get(owner).is_some_and(|s| Arc::ptr_eq(s, shell)) {
            shells.remove(owner);
        }
    }

    fn get_or_start(&self, ctx: &CallContext) -> Result<(Arc<Shell>, bool), ToolError> {
        let owner = shell_key(ctx);
        let mut shells = self.lock();
        if let Some(shell) = shells.get(&owner)
            && shell.process.exit().is_none()
        {
            return Ok((shell.clone(), false));
        }
        shells.retain(|_, s| s.process.exit().is_none());
        if shells.len() >= MAX_SHELLS {
            // Make room by stopping the shell idle the longest (callers come and go: each
            // MCP connection is an owner of its own).
            let idle = shells
                .iter()
                .filter(|(_, s)| s.busy.try_lock().is_ok())
                .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(|p| p.into_inner()))
                .map(|(o, _)| o.clone());
            match idle.and_then(|o| shells.remove(&o)) {
                Some(evicted) => evicted.process.start_stop(Stop::graceful()),
                None => {
                    return Err(ToolError::Conflict(format!(
                        "{MAX_SHELLS} shells are running commands, the most this host keeps; use exec_command instead"
                    )));
                }
            }
        }
        let program = self.process.shell();
        let mut request = SpawnRequest::new(program).stdin(Stdin::Piped);
        if program == "bash" {
            request = request.arg("--noprofile").arg("--norc");
        }
        request.write_scope = ctx.write_scope.clone();
        super::add_command_env(&mut request, ctx);
        request.sandbox = super::effective_mode(None, ctx);
        let process = self.process.spawn(&request).map_err(ToolError::from)?;
        process.write(b"exec 2>&1\n").map_err(ToolError::from)?;
        let shell = Arc::new(Shell {
            process,
            marker: format!("__toolshed_done_{:016x}__", rand::random::<u64>()),
            busy: tokio::sync::Mutex::new(()),
            last_used: Mutex::new(Instant::now()),
        });
        shells.insert(owner, shell.clone());
        Ok((shell, true))
    }

    /// Runs one `shell` call.
    pub(crate) async fn run(
        &self,
        ctx: &CallContext,
        args: ShellArgs,
    ) -> Result<ToolOutput, ToolError> {
        let command = args.command.as_str();
        if command.trim().is_empty() {
            return Err(ToolError::invalid(
                "command is empty: give a command line to run",
            ));
        }
        if command.contains('\0') {
            return Err(ToolError::invalid(
                "command contains a NUL byte, which no shell can take",
            ));
        }
        let timeout = millis("timeout_ms", args.timeout_ms, 1, SHELL_MAX_TIMEOUT_MS)?;
        let window = clamp_wait(ctx, timeout);
        let (shell, fresh) = self.get_or_start(ctx)?;
        let started = Instant::now();
        let _turn = tokio::select! {
            turn = shell.busy.lock() => turn,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        *shell.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        let start = shell.process.output_len(Stream::Stdout);
        // The command travels as data: a syntax error, an unclosed quote or a heredoc in
        // it cannot eat the marker line (eval reports a syntax error as status 2), and
        // inside `if` a `set -e` cannot end the shell.
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(command.as_bytes());
        let script = format!(
            "if eval \"$(printf %s '{encoded}' | base64 -d)\" </dev/null; then __toolshed_rc=0; else __toolshed_rc=$?; fi\nprintf '\\n%s:%s\\n' '{}' \"$__toolshed_rc\"\n",
            shell.marker
        );
        if let Err(e) = shell.process.write(script.as_bytes()) {
            self.forget(&shell_key(ctx), &shell);
            return Err(ToolError::Failed(format!(
                "the shell stopped taking commands ({e}); the next call starts a fresh one"
            )));
        }
        let needle = format!("\n{}:", shell.marker);
        let mut scanned = start;
        let mut carry: Vec<u8> = Vec::new();
        let found = loop {
            let left = window.saturating_sub(started.elapsed());
            let chunk = tokio::select! {
                chunk = shell.process.read_wait(Stream::Stdout, scanned, 64 * 1024, left) => chunk,
                () = ctx.cancel.cancelled() => {
                    self.forget(&shell_key(ctx), &shell);
                    shell.process.start_stop(Stop::Graceful { grace: Duration::from_secs(1) });
                    return Err(ToolError::Cancelled);
                }
            };
            let base = chunk.start - carry.len() as u64;
            carry.extend_from_slice(&chunk.bytes);
            scanned = chunk.next;
            if let Some(at) = find(&carry, needle.as_bytes()) {
                let after = &carry[at + needle.len()..];
                if let Some(end) = after.iter().position(|b| *b == b'\n') {
                    let code = std::str::from_utf8(&after[..end])
                        .ok()
                        .and_then(|s| s.trim().parse::<i32>().ok());
                    break Some((base + at as u64, code));
                }
                // The status line is not complete yet: keep the marker in the carry and
                // fall through to the exit and timeout checks.
                carry.drain(..at);
            } else {
                let keep = needle.len() + 16;
                if carry.len() > keep {
                    carry.drain(..carry.len() - keep);
                }
            }
            if shell.process.exit().is_some() && chunk.bytes.is_empty() {
                break None;
            }
            if started.elapsed() >= window {
                break None;
            }
        };
        let owner = shell_key(ctx);
        match found {
            Some((end, code)) => {
                let out = render_to(&shell.process, Stream::Stdout, start, end, OUTPUT_BUDGET);
                let code = code.unwrap_or(-1);
                let mut footer = format!("[exit code {code}");
                if fresh {
                    footer.push_str(" · a new shell was started in the workspace root");
                }
                footer.push(']');
                let text = if out.text.is_empty() {
                    footer
                } else if out.text.ends_with('\n') {
                    format!("{}{footer}", out.text)
                } else {
                    format!("{}\n{footer}", out.text)
                };
                let result = ToolOutput::text_and_structured(
                    text,
                    json!({"exit_code": code, "output": out.text, "omitted_bytes": out.omitted, "new_shell": fresh}),
                );
                Ok(if code == 0 {
                    result
                } else {
                    result.into_error()
                })
            }
            None => {
                self.forget(&owner, &shell);
                let exited = shell.process.exit().is_some();
                if !exited {
                    shell.process.terminate(Stop::graceful()).await;
                }
                let end = shell.process.output_len(Stream::Stdout);
                let out = render_to(&shell.process, Stream::Stdout, start, end, OUTPUT_BUDGET);
                let why = if exited {
                    "the shell exited".to_string()
                } else {
                    format!(
                        "timed out after {} ms: the shell and everything it started were killed",
                        window.as_millis()
                    )
                };
                let footer = format!(
                    "[{why}; the next call starts a fresh shell in the workspace root (working directory, variables and functions are reset)]"
                );
                let text = if out.text.is_empty() {
                    footer
                } else {
                    format!("{}\n{footer}", out.text.trim_end_matches('\n'))
                };
                Ok(ToolOutput::text_and_structured(
                    text,
                    json!({"exit_code": null, "output": out.text, "timed_out": !exited, "shell_reset": true}),
                )
                .into_error())
            }
        }
    }

    /// Stops the shells of `owner` (and its sub-owners).
    pub(crate) async fn stop_owner(&self, owner: &toolshed_core::OwnerId) {
        let gone: Vec<Arc<Shell>> = {
            let mut shells = self.lock();
            let keys: Vec<String> = shells.keys().filter(|k| owner.covers(k)).cloned().collect();
            keys.iter().filter_map(|k| shells.remove(k)).collect()
        };
        for shell in gone {
            shell.process.terminate(Stop::graceful()).await;
        }
    }

    /// Stops every shell.
    pub(crate) async fn stop_all(&self) {
        let all: Vec<Arc<Shell>> = self.lock().drain().map(|(_, s)| s).collect();
        for shell in all {
            shell.process.terminate(Stop::graceful()).await;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The key of a caller's shell: its owner, and the narrower sandbox mode it runs in, so a
/// caller narrowed to read-only never reuses a shell started without that narrowing (nor
/// the other way round). `owner/#mode` keeps `stop_owner` of the owner covering it.
fn shell_key(ctx: &CallContext) -> String {
    match &ctx.sandbox {
        Some(mode) => format!("{}/#{mode}", ctx.owner.0),
        None => ctx.owner.0.clone(),
    }
}

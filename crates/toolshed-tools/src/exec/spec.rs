//! The command tools as data: the spec of every tool of `system.exec_command` and
//! `system.process`, and the typed arguments each one's input schema is generated from.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};
use toolshed_ops::sandbox::SandboxMode;

use super::GROUP;

/// How long `exec_command` waits for a command to finish before returning a session.
const DEFAULT_YIELD_MS: u64 = 10_000;
/// How long `write_stdin` waits for output.
const DEFAULT_WRITE_YIELD_MS: u64 = 1_000;
/// The longest any yield or wait of the session tools may last.
pub(super) const MAX_YIELD_MS: u64 = 600_000;
/// How long `command_run_wait` waits.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// The whole life of an `exec_command` command.
const DEFAULT_TIMEOUT_MS: u64 = 1_800_000;
pub(super) const MAX_TIMEOUT_MS: u64 = 86_400_000;
/// The most output bytes in one reply of the session tools.
pub(super) const DEFAULT_OUTPUT_BYTES: u64 = 32 * 1024;
pub(super) const MIN_OUTPUT_BYTES: u64 = 64;
pub(super) const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;
/// The longest one `shell` command may run.
const SHELL_DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub(super) const SHELL_MAX_TIMEOUT_MS: u64 = 3_600_000;
/// How many of the last lines `process_read_output` returns.
const DEFAULT_TAIL_LINES: u64 = 100;
pub(super) const MAX_TAIL_LINES: u64 = 10_000;

/// Runs commands: may change anything the command can.
const RUNS: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Looks at sessions or processes only.
const LOOKS: ToolAnnotations = ToolAnnotations::PURE;

/// Stops a process tree (stopping twice is stopping once).
const STOPS: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};

/// A command tool whose arguments are `T`.
fn tool<T: JsonSchema>(
    name: &str,
    title: &str,
    description: &str,
    annotations: ToolAnnotations,
) -> ToolSpec {
    let mut spec = ToolSpec::new(name, description)
        .title(title)
        .group(GROUP)
        .input_schema(crate::args::schema::<T>())
        .annotations(annotations);
    spec.mutates_state = !annotations.read_only;
    spec.danger = if annotations.read_only {
        Danger::Low
    } else {
        Danger::High
    };
    spec
}

fn default_yield_ms() -> u64 {
    DEFAULT_YIELD_MS
}

fn default_write_yield_ms() -> u64 {
    DEFAULT_WRITE_YIELD_MS
}

fn default_wait_ms() -> u64 {
    DEFAULT_WAIT_MS
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_output_bytes() -> u64 {
    DEFAULT_OUTPUT_BYTES
}

fn shell_default_timeout_ms() -> u64 {
    SHELL_DEFAULT_TIMEOUT_MS
}

fn default_tail_lines() -> u64 {
    DEFAULT_TAIL_LINES
}

/// The arguments of a tool that takes none (the listings).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NoArgs {}

// ---- system.exec_command ----

/// The `exec_command` tool.
pub(super) fn exec_command() -> ToolSpec {
    let mut spec = tool::<ExecArgs>(
        "exec_command",
        "Run a command",
        "Run a shell command (bash -c) in the workspace and return its exit code and output (stdout and stderr merged, the middle cut past `max_output_bytes`). Still running after `yield_ms`: the output so far and a `session_id` for write_stdin, command_run_read_output, command_run_wait or command_run_terminate. `tty` for programs that need a terminal. The whole process tree is killed at `timeout_ms`; variables that look secret are not passed on.",
        RUNS,
    );
    spec.streaming = true;
    spec.default_timeout_ms = Some(MAX_YIELD_MS + 60_000);
    spec.sandbox_argument = true;
    spec
}

/// The arguments of `exec_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExecArgs {
    /// The command line, run by bash -c (sh -c where bash is missing)
    #[schemars(length(min = 1))]
    pub(super) cmd: String,
    /// The working directory, relative to the workspace root (omitted: the root)
    pub(super) workdir: Option<String>,
    /// Run it in a pseudo-terminal (80x24); stdout and stderr arrive together
    #[serde(default)]
    pub(super) tty: bool,
    /// Without tty: open a pipe for write_stdin instead of closing stdin
    #[serde(default)]
    pub(super) stdin: bool,
    /// Kill the process tree after this long
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub(super) timeout_ms: u64,
    /// Wait this long for it to finish before returning a session (capped by the call's deadline)
    #[serde(default = "default_yield_ms")]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) yield_ms: u64,
    /// The most output bytes in this reply
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
    /// Extra environment variables
    pub(super) env: Option<BTreeMap<String, String>>,
    /// Run it in this sandbox mode instead of the host's: narrower runs, wider needs approval
    pub(super) sandbox: Option<SandboxArg>,
}

/// A sandbox mode asked for by a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(super) enum SandboxArg {
    ReadOnly,
    WorkspaceWrite,
    FullAccess,
}

impl From<SandboxArg> for SandboxMode {
    fn from(arg: SandboxArg) -> Self {
        match arg {
            SandboxArg::ReadOnly => SandboxMode::ReadOnly,
            SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxArg::FullAccess => SandboxMode::FullAccess,
        }
    }
}

/// The `write_stdin` tool.
pub(super) fn write_stdin() -> ToolSpec {
    tool::<WriteStdinArgs>(
        "write_stdin",
        "Write to a session",
        "Write characters to a command session's terminal (tty=true) or stdin pipe (stdin=true), then return the output that follows: the reply comes when the output goes quiet, the command exits, or `yield_ms` (default 1000) passes. An empty `chars` only polls for new output. Control characters work in a terminal: \\u0003 is Ctrl-C, \\u0004 Ctrl-D (end of input).",
        RUNS,
    )
}

/// The arguments of `write_stdin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteStdinArgs {
    /// The session id exec_command returned
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    /// What to type; include \n to press Enter
    pub(super) chars: String,
    /// The longest wait for output
    #[serde(default = "default_write_yield_ms")]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) yield_ms: u64,
    /// The most output bytes in this reply
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
}

/// The `command_run_list` tool.
pub(super) fn command_run_list() -> ToolSpec {
    tool::<NoArgs>(
        "command_run_list",
        "List command sessions",
        "List your command sessions: id, command, whether it runs, exit code, age and output size.",
        LOOKS,
    )
}

/// The `command_run_read_output` tool.
pub(super) fn command_run_read_output() -> ToolSpec {
    tool::<ReadOutputArgs>(
        "command_run_read_output",
        "Read a session's output",
        "Return a command session's output since the last reply (or since byte offset `since`), waiting up to `wait_ms` (default 0) for some to arrive. The reply's `next_offset` continues from there.",
        LOOKS,
    )
}

/// The arguments of `command_run_read_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadOutputArgs {
    /// The session id exec_command returned
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    /// A byte offset into the output (omitted: where the last reply ended)
    pub(super) since: Option<u64>,
    /// Wait this long for output when there is none yet
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) wait_ms: u64,
    /// The most output bytes in this reply
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
}

/// The `command_run_wait` tool.
pub(super) fn command_run_wait() -> ToolSpec {
    tool::<WaitArgs>(
        "command_run_wait",
        "Wait for a session",
        "Wait up to `timeout_ms` (default 30000; capped by the call's deadline) for a command session to finish; return its exit code when it did, and the output since the last reply either way.",
        LOOKS,
    )
}

/// The arguments of `command_run_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitArgs {
    /// The session id exec_command returned
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    /// How long to wait
    #[serde(default = "default_wait_ms")]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) timeout_ms: u64,
    /// The most output bytes in this reply
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
}

/// The `command_run_terminate` tool.
pub(super) fn command_run_terminate() -> ToolSpec {
    tool::<TerminateArgs>(
        "command_run_terminate",
        "Stop a session",
        "Stop a command session's whole process tree: SIGTERM, 2 s of grace, then SIGKILL (or SIGKILL at once with force=true). Returns how it ended and its last output.",
        STOPS,
    )
}

/// The arguments of `command_run_terminate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TerminateArgs {
    /// The session id exec_command returned
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    /// Kill at once instead of asking first
    #[serde(default)]
    pub(super) force: bool,
}

/// The `shell` tool.
pub(super) fn shell() -> ToolSpec {
    let mut spec = tool::<ShellArgs>(
        "shell",
        "Persistent shell",
        "Run a command in your own persistent shell (bash): the working directory, exported variables, aliases and functions carry over to your next call. Returns the output (stdout and stderr together, terminal escapes removed, at most 32 KiB with the middle left out) and the exit status. Commands get no input (stdin is /dev/null); use exec_command with tty=true for interactive programs. If a command runs longer than `timeout_ms` (default 120000), the shell and everything it started are killed, and the next call starts a fresh shell in the workspace root.",
        RUNS,
    );
    spec.default_timeout_ms = Some(SHELL_MAX_TIMEOUT_MS + 60_000);
    spec
}

/// The arguments of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ShellArgs {
    /// The command line
    #[schemars(length(min = 1))]
    pub(super) command: String,
    /// The longest it may run (capped by the call's deadline)
    #[serde(default = "shell_default_timeout_ms")]
    #[schemars(range(min = 1, max = SHELL_MAX_TIMEOUT_MS))]
    pub(super) timeout_ms: u64,
}

// ---- system.process ----

/// The `process_exec` tool.
pub(super) fn process_exec() -> ToolSpec {
    let mut spec = tool::<ProcessExecArgs>(
        "process_exec",
        "Start a background process",
        "Start a long-running command (bash -c) in the background — a dev server, a watcher — and return at once with its id. It keeps running after this call; its stdout and stderr are kept in ring buffers (process_read_output) and its exit status after it ends (process_list). If it listens on a port on 127.0.0.1, give `port`: process_proxy_info then tells the URL under `toolshed serve` that forwards to it. Stop it with process_stop; all are stopped when toolshed exits.",
        RUNS,
    );
    spec.sandbox_argument = true;
    spec
}

/// The arguments of `process_exec`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessExecArgs {
    /// The command line
    #[schemars(length(min = 1))]
    pub(super) cmd: String,
    /// The working directory, relative to the workspace root (omitted: the root)
    pub(super) workdir: Option<String>,
    /// A label to recognise it by
    #[schemars(length(max = 100))]
    pub(super) name: Option<String>,
    /// The 127.0.0.1 port it will listen on, for the proxy
    #[schemars(range(min = 1, max = 65535))]
    pub(super) port: Option<u64>,
    /// Extra environment variables
    pub(super) env: Option<BTreeMap<String, String>>,
    /// Run it in this sandbox mode instead of the host's: narrower runs, wider needs approval
    pub(super) sandbox: Option<SandboxArg>,
}

/// The `process_list` tool.
pub(super) fn process_list() -> ToolSpec {
    tool::<NoArgs>(
        "process_list",
        "List background processes",
        "List your background processes: id, name, command, pid, port, whether it runs, exit status, age and output sizes.",
        LOOKS,
    )
}

/// The `process_read_output` tool.
pub(super) fn process_read_output() -> ToolSpec {
    tool::<ProcessReadArgs>(
        "process_read_output",
        "Read a background process's output",
        "Return a background process's output: the last `tail_lines` lines (default 100), or everything since byte offset `since` (at most 32 KiB; `next_offset` continues). `stream` picks stdout, stderr or both in arrival order (combined, the default).",
        LOOKS,
    )
}

/// Which output of a background process to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Output {
    Combined,
    Stdout,
    Stderr,
}

fn combined() -> Output {
    Output::Combined
}

/// The arguments of `process_read_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessReadArgs {
    /// The process id process_exec returned (p1, p2, ...)
    #[schemars(length(min = 1, max = 32))]
    pub(super) id: String,
    /// Which output
    #[serde(default = "combined")]
    pub(super) stream: Output,
    /// How many of the last lines
    #[serde(default = "default_tail_lines")]
    #[schemars(range(min = 1, max = MAX_TAIL_LINES))]
    pub(super) tail_lines: u64,
    /// A byte offset to read on from (instead of tail_lines)
    pub(super) since: Option<u64>,
}

/// The `process_stop` tool.
pub(super) fn process_stop() -> ToolSpec {
    tool::<ProcessStopArgs>(
        "process_stop",
        "Stop a background process",
        "Stop a background process and everything it started: graceful (SIGTERM, 2 s of grace, then SIGKILL; the default) or forced (SIGKILL at once). Returns how it ended.",
        STOPS,
    )
}

/// How `process_stop` stops a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum StopMode {
    Graceful,
    Forced,
}

fn graceful() -> StopMode {
    StopMode::Graceful
}

/// The arguments of `process_stop`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessStopArgs {
    /// The process id process_exec returned (p1, p2, ...)
    #[schemars(length(min = 1, max = 32))]
    pub(super) id: String,
    /// How to stop it
    #[serde(default = "graceful")]
    pub(super) mode: StopMode,
}

/// The `process_proxy_info` tool.
pub(super) fn process_proxy_info() -> ToolSpec {
    tool::<ProcessIdArgs>(
        "process_proxy_info",
        "Proxy URL of a background process",
        "Tell where a background process started with `port` can be reached: the URL under `toolshed serve` (/proxy/<id>/...) that forwards HTTP and WebSocket requests to its 127.0.0.1 port (send the same bearer token), the direct address, and whether something listens there now.",
        LOOKS,
    )
}

/// The arguments of `process_proxy_info`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessIdArgs {
    /// The process id process_exec returned (p1, p2, ...)
    #[schemars(length(min = 1, max = 32))]
    pub(super) id: String,
}

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
/// Under the host's default per-call ceiling (100,000 bytes), so a reply keeps the command's
/// own word on what was cut (the middle) and where the rest is (`next_offset`).
pub(super) const MAX_OUTPUT_BYTES: u64 = 96 * 1024;
/// The longest one `shell` command may run.
const SHELL_DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub(super) const SHELL_MAX_TIMEOUT_MS: u64 = 3_600_000;
/// Last lines `process_read_output` returns.
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
        "Run a shell command (bash -c); returns its exit code and output. Still running after `yield_ms`: returns a `session_id` for write_stdin and command_run_*.",
        RUNS,
    );
    spec.streaming = true;
    spec.default_timeout_ms = Some(MAX_YIELD_MS + 60_000);
    spec.sandbox_argument = true;
    spec.touch(toolshed_core::TouchKind::Commands, "cmd")
}

/// The arguments of `exec_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExecArgs {
    #[schemars(length(min = 1))]
    pub(super) cmd: String,
    pub(super) workdir: Option<String>,
    /// Use a terminal (80x24)
    #[serde(default)]
    pub(super) tty: bool,
    /// Keep stdin open for write_stdin
    #[serde(default)]
    pub(super) stdin: bool,
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub(super) timeout_ms: u64,
    /// Return a session after this long
    #[serde(default = "default_yield_ms")]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) yield_ms: u64,
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
    pub(super) env: Option<BTreeMap<String, String>>,
    /// Sandbox mode (wider needs approval)
    pub(super) sandbox: Option<SandboxArg>,
    /// Shell that runs cmd
    pub(super) shell: Option<ShellArg>,
}

/// The shell a call asks to run its command line with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// (No doc comments on the variants: they would make the schema a `oneOf`.)
pub(super) enum ShellArg {
    // The backend's own (`bash`, else `sh`), as when none is named.
    Bash,
    // POSIX `sh`.
    Sh,
    // PowerShell 7, when `pwsh` is installed where commands run.
    Pwsh,
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
        "Type into a command session and return the output that follows; \\u0003 is Ctrl-C.",
        RUNS,
    )
    // What is typed into a shell is a command line.
    .touch(toolshed_core::TouchKind::Commands, "chars")
}

/// The arguments of `write_stdin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteStdinArgs {
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    /// Text to type; \n is Enter
    pub(super) chars: String,
    /// Longest wait
    #[serde(default = "default_write_yield_ms")]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) yield_ms: u64,
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
}

/// The `command_run_list` tool.
pub(super) fn command_run_list() -> ToolSpec {
    tool::<NoArgs>(
        "command_run_list",
        "List command sessions",
        "List your command sessions and their state.",
        LOOKS,
    )
}

/// The `command_run_read_output` tool.
pub(super) fn command_run_read_output() -> ToolSpec {
    tool::<ReadOutputArgs>(
        "command_run_read_output",
        "Read session output",
        "Read a command session's new output (or from byte `since`); `next_offset` continues.",
        LOOKS,
    )
}

/// The arguments of `command_run_read_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadOutputArgs {
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    /// Byte offset
    pub(super) since: Option<u64>,
    /// Wait for output
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) wait_ms: u64,
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
}

/// The `command_run_wait` tool.
pub(super) fn command_run_wait() -> ToolSpec {
    tool::<WaitArgs>(
        "command_run_wait",
        "Wait for a session",
        "Wait for a command session to end; returns its exit code and new output.",
        LOOKS,
    )
}

/// The arguments of `command_run_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitArgs {
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    #[serde(default = "default_wait_ms")]
    #[schemars(range(min = 0, max = MAX_YIELD_MS))]
    pub(super) timeout_ms: u64,
    #[serde(default = "default_output_bytes")]
    #[schemars(range(min = MIN_OUTPUT_BYTES, max = MAX_OUTPUT_BYTES))]
    pub(super) max_output_bytes: u64,
}

/// The `command_run_terminate` tool.
pub(super) fn command_run_terminate() -> ToolSpec {
    tool::<TerminateArgs>(
        "command_run_terminate",
        "Stop a session",
        "Kill a command session's process tree (SIGTERM, then SIGKILL after 2 s).",
        STOPS,
    )
}

/// The arguments of `command_run_terminate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TerminateArgs {
    #[schemars(range(min = 1))]
    pub(super) session_id: u64,
    #[serde(default)]
    pub(super) force: bool,
}

/// The `shell` tool.
pub(super) fn shell() -> ToolSpec {
    let mut spec = tool::<ShellArgs>(
        "shell",
        "Persistent shell",
        "Run a command in your persistent bash shell: the directory and variables carry over.",
        RUNS,
    );
    spec.default_timeout_ms = Some(SHELL_MAX_TIMEOUT_MS + 60_000);
    spec.touch(toolshed_core::TouchKind::Commands, "command")
}

/// The arguments of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ShellArgs {
    #[schemars(length(min = 1))]
    pub(super) command: String,
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
        "Start a long-running command (a dev server) in the background; returns its id.",
        RUNS,
    );
    spec.sandbox_argument = true;
    spec.touch(toolshed_core::TouchKind::Commands, "cmd")
}

/// The arguments of `process_exec`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessExecArgs {
    #[schemars(length(min = 1))]
    pub(super) cmd: String,
    pub(super) workdir: Option<String>,
    /// Label
    #[schemars(length(max = 100))]
    pub(super) name: Option<String>,
    /// 127.0.0.1 port it listens on, for process_proxy_info
    #[schemars(range(min = 1, max = 65535))]
    pub(super) port: Option<u64>,
    pub(super) env: Option<BTreeMap<String, String>>,
    /// Sandbox mode (wider needs approval)
    pub(super) sandbox: Option<SandboxArg>,
}

/// The `process_list` tool.
pub(super) fn process_list() -> ToolSpec {
    tool::<NoArgs>(
        "process_list",
        "List background processes",
        "List your background processes and their state.",
        LOOKS,
    )
}

/// The `process_read_output` tool.
pub(super) fn process_read_output() -> ToolSpec {
    tool::<ProcessReadArgs>(
        "process_read_output",
        "Read process output",
        "Read a background process's output: the last `tail_lines`, or from byte `since`.",
        LOOKS,
    )
}

// Which stream of a background process to read (a plain comment: a doc comment would become the
// argument's description in the schema).
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
    #[schemars(length(min = 1, max = 32))]
    pub(super) id: String,
    #[serde(default = "combined")]
    pub(super) stream: Output,
    /// Last lines
    #[serde(default = "default_tail_lines")]
    #[schemars(range(min = 1, max = MAX_TAIL_LINES))]
    pub(super) tail_lines: u64,
    /// Byte offset, instead of tail_lines
    pub(super) since: Option<u64>,
}

/// The `process_stop` tool.
pub(super) fn process_stop() -> ToolSpec {
    tool::<ProcessStopArgs>(
        "process_stop",
        "Stop a background process",
        "Stop a background process and its children.",
        STOPS,
    )
}

// How `process_stop` stops a process (a plain comment: a doc comment would become the argument's
// description in the schema).
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
    #[schemars(length(min = 1, max = 32))]
    pub(super) id: String,
    #[serde(default = "graceful")]
    pub(super) mode: StopMode,
}

/// The `process_proxy_info` tool.
pub(super) fn process_proxy_info() -> ToolSpec {
    tool::<ProcessIdArgs>(
        "process_proxy_info",
        "Process proxy URL",
        "The URL under `toolshed serve` that reaches a background process's `port`.",
        LOOKS,
    )
}

/// The arguments of `process_proxy_info`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessIdArgs {
    #[schemars(length(min = 1, max = 32))]
    pub(super) id: String,
}

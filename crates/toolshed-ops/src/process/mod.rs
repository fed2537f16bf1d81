//! `ProcessOps`: starting and controlling child processes.
//!
//! The command-execution tools — one-shot commands with a yield window, PTY sessions, a
//! persistent shell, background processes — run every child through this trait, so that a
//! sandboxed backend can stand in for the local one exactly as it does for files.
//!
//! ```no_run
//! # async fn demo(ops: &toolshed_ops::Ops) -> Result<(), toolshed_ops::OpsError> {
//! use std::time::Duration;
//! use toolshed_ops::process::{SpawnRequest, Stop, Stream};
//!
//! let p = ops.process.spawn(&SpawnRequest::new("sh").arg("-c").arg("make test"))?;
//! match p.wait(Duration::from_secs(10)).await {
//!     // Finished inside the yield window: exit code and the capped output.
//!     Some(exit) => println!("{:?}: {:?}", exit.status, p.snapshot(Stream::Combined)),
//!     // Still running: show what came so far and keep `p` (an `Arc` of it) as a session.
//!     None => {
//!         let chunk = p.read(Stream::Combined, 0, 64 * 1024);
//!         println!("{} bytes so far", chunk.bytes.len());
//!         p.terminate(Stop::graceful()).await; // or keep it and come back later
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # The contract every backend keeps
//!
//! - Each child runs in its own session and process group, with a clean environment
//!   ([`clean_env`]: names containing `TOKEN`, `KEY`, `SECRET` or `PASSWORD` dropped unless
//!   allowed; `NO_COLOR=1`, `TERM=dumb` or `xterm-256color` in a terminal, `PAGER=cat`,
//!   `GIT_TERMINAL_PROMPT=0`, `DEBIAN_FRONTEND=noninteractive`) and its working directory
//!   resolved inside the workspace through the same jail as files.
//! - Stdin is `/dev/null` unless the child is interactive (a terminal, or [`Stdin::Piped`]).
//! - Output is read into bounded buffers by the backend, whether or not anyone reads it:
//!   nothing a child prints can grow memory without limit (see [`OutputLimits`]).
//! - Stopping means the whole tree — grandchildren that called `setsid` included: TERM, a
//!   grace period, then KILL. Dropping the last [`Process`] stops the tree the same way, so a
//!   cancelled call never leaves a process running.
//! - After the child exits, descendants that still hold its output open (`sleep 30 &`) are
//!   drained for a bounded time (about 2 s), then the output is closed and the process
//!   counts as finished; the descendants run on until the tree is stopped or dropped.
//!
//! # Why the handle is a concrete type
//!
//! Every backend produces the same [`Process`]: shared bounded buffers and an exit slot,
//! filled by the backend's own supervisor (a thread per child in [`LocalOps`]'s backend).
//! Its methods never block the caller: writes are queued, reads copy from the buffers, and
//! the waiting methods are `async` with a timeout. A tool therefore needs no
//! `spawn_blocking` and cannot hang on a child that neither reads nor exits. A backend
//! outside this crate builds the handle with [`Process::from_backend`] and fills it through
//! a [`ProcessFeed`].
//!
//! [`LocalOps`]: crate::LocalOps

mod env;
mod feed;
mod handle;
mod output;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::OpsError;

pub use env::{DEFAULT_PATH, FIXED_ENV, SECRET_MARKERS, clean_env, is_secret_name};
pub use feed::{Input, ProcessControl, ProcessFeed, ProcessStart};
pub use handle::{MAX_STDIN_QUEUE, Process, StreamStdio};
pub(crate) use handle::{ResizeHook, Shared, State, StdinState};
pub(crate) use output::OutputBuffer;
pub use output::{OutputChunk, OutputSnapshot};

/// Whether the child gets a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tty {
    /// Pipes for stdout and stderr.
    No,
    /// A pseudo-terminal of this size; stdout and stderr are merged into it, and it is
    /// always writable (control characters such as Ctrl-C, `\u{3}`, reach the foreground job).
    Yes {
        /// Rows.
        rows: u16,
        /// Columns.
        cols: u16,
    },
}

impl Tty {
    /// A terminal of 24 rows and 80 columns.
    pub const DEFAULT: Tty = Tty::Yes { rows: 24, cols: 80 };
}

/// What the child's standard input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// `/dev/null`: reads see end of file at once.
    Closed,
    /// A pipe the caller writes to with [`Process::write`] and closes with
    /// [`Process::close_stdin`].
    Piped,
    /// Standard input and output are pipes handed to the caller whole
    /// ([`Process::take_stdio`]) rather than written and buffered by the backend: for a
    /// protocol spoken over them (an MCP server). Standard error is kept as usual. A
    /// backend that cannot hand pipes over refuses it.
    Stream,
}

/// How much output is kept per stream.
///
/// Each stream keeps its first `head_bytes` and its last `tail_bytes`; what falls between is
/// counted, not kept. Offsets into a stream only grow, so a reader can ask for everything
/// "since N" and learn how much it missed ([`OutputChunk::skipped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Bytes kept from the start of each stream.
    pub head_bytes: usize,
    /// Bytes kept from the end of each stream (a ring buffer).
    pub tail_bytes: usize,
    /// When the child has printed more than this in total (all streams), its tree is killed
    /// ([`StopReason::OutputLimit`]). `None`: never.
    pub kill_after_bytes: Option<u64>,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            head_bytes: 32 * 1024,
            tail_bytes: 256 * 1024,
            kill_after_bytes: None,
        }
    }
}

/// The most a single stream buffer may hold (head plus tail); larger limits are refused.
pub const MAX_BUFFER_BYTES: usize = 64 * 1024 * 1024;

/// A process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The program: a path with a `/` (relative ones to the working directory), or a name
    /// looked up on the child's `PATH`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory, relative to the workspace root (`.` is the root).
    pub workdir: String,
    /// Variables added to (or replacing those of) the clean environment. Set explicitly,
    /// they are kept even when their names look secret.
    pub env: BTreeMap<String, String>,
    /// Terminal or pipes.
    pub tty: Tty,
    /// Standard input (ignored with a terminal, which is always writable).
    pub stdin: Stdin,
    /// How much output is kept.
    pub limits: OutputLimits,
    /// The sandbox mode to run in, when narrower than the backend's (`None`: the backend's).
    /// A wider mode is refused ([`OpsError::SandboxEscalation`]) unless a person approved
    /// it (`escalation_approved`).
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// Whether a person approved this command's wider `sandbox` mode.
    pub escalation_approved: bool,
    /// Absolute directories it may write besides the workspace, in `workspace-write` mode (a
    /// mounted MCP server's package cache). Ignored without a sandbox.
    pub writable: Vec<std::path::PathBuf>,
    /// When set, its network is its own, and its only way out is a proxy reaching these
    /// hosts (`host` or `host:port`, whatever their addresses: a person named them); with
    /// none listed, it has no network. Ignored without a sandbox (full access).
    pub network_hosts: Option<Vec<String>>,
    /// When set (and `network_hosts` is not), its network is its own whatever the
    /// backend's network mode, and its only way out is a proxy under the web tools' rules
    /// (public hosts, and what `[web] allow` opens): for the browser. Ignored without a
    /// sandbox.
    pub web_network: bool,
    /// Absolute paths the command needs to see (read-only) wherever they live: a mounted
    /// server's or language server's program and the files its configured arguments name,
    /// or the program environments a command line names
    /// ([`crate::sandbox::named_programs`]: never an arbitrary path a caller writes). Under the sandbox's private `/tmp`, `/dev/shm` or
    /// `/run` they are brought back read-only (see [`crate::sandbox::visible_root`]).
    pub visible: Vec<std::path::PathBuf>,
    /// Directories inside the paths hidden from commands (toolshed's data dir) that this
    /// one may read: a plugin's own directory, for the plugin's runtime process. Set by
    /// the host only, never from a caller's input; ignored without a sandbox.
    pub revealed: Vec<std::path::PathBuf>,
    /// What the command may write inside the workspace, from policy rules on `writes`:
    /// paths its sandbox keeps read-only, or the only ones it leaves writable. Ignored
    /// without a sandbox (full access).
    pub write_scope: toolshed_core::WriteScope,
    /// Confined to what it is shown: the workspace and the home directory are hidden but
    /// for the `revealed` directories (a skill's script sees its own folder and what was
    /// granted, nothing else of the user's), and it has no network. Refused where no
    /// sandbox runs (full access, a remote workspace): never run unconfined.
    pub confined: bool,
}

impl SpawnRequest {
    /// Runs `program` in the workspace root, with pipes, stdin closed and default limits.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            workdir: ".".into(),
            env: BTreeMap::new(),
            tty: Tty::No,
            stdin: Stdin::Closed,
            limits: OutputLimits::default(),
            sandbox: None,
            escalation_approved: false,
            writable: Vec::new(),
            network_hosts: None,
            web_network: false,
            visible: Vec::new(),
            revealed: Vec::new(),
            write_scope: toolshed_core::WriteScope::default(),
            confined: false,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the working directory (workspace-relative).
    pub fn workdir(mut self, workdir: impl Into<String>) -> Self {
        self.workdir = workdir.into();
        self
    }

    /// Sets one environment variable.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Gives the child a terminal.
    pub fn tty(mut self, tty: Tty) -> Self {
        self.tty = tty;
        self
    }

    /// Chooses what stdin is.
    pub fn stdin(mut self, stdin: Stdin) -> Self {
        self.stdin = stdin;
        self
    }

    /// Sets the output limits.
    pub fn limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Refuses what cannot be passed to a process: an empty program, NUL bytes, `=` in a
    /// variable name, limits over [`MAX_BUFFER_BYTES`]. Every backend calls this first.
    pub fn validate(&self) -> Result<(), OpsError> {
        let bad = |what: String, reason: &str| OpsError::InvalidCommand {
            what,
            reason: reason.into(),
        };
        if self.program.is_empty() {
            return Err(bad("the program".into(), "is empty"));
        }
        if self.program.contains('\0') {
            return Err(bad(
                format!("the program `{}`", self.program.escape_debug()),
                "contains a NUL byte",
            ));
        }
        for (i, arg) in self.args.iter().enumerate() {
            if arg.contains('\0') {
                return Err(bad(format!("argument {}", i + 1), "contains a NUL byte"));
            }
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(bad(
                    format!("environment variable name `{}`", name.escape_debug()),
                    "must be non-empty, without `=` or NUL bytes",
                ));
            }
            if value.contains('\0') {
                return Err(bad(
                    format!("the value of environment variable `{name}`"),
                    "contains a NUL byte",
                ));
            }
        }
        if self.workdir.contains('\0') {
            return Err(bad("the working directory".into(), "contains a NUL byte"));
        }
        for dir in &self.writable {
            if !dir.is_absolute() {
                return Err(bad(
                    format!("the writable directory `{}`", dir.display()),
                    "is not an absolute path",
                ));
            }
        }
        if self
            .limits
            .head_bytes
            .saturating_add(self.limits.tail_bytes)
            > MAX_BUFFER_BYTES
        {
            return Err(bad(
                "the output limits".into(),
                "keep more than 64 MiB per stream; ask for less",
            ));
        }
        if let Tty::Yes { rows, cols } = self.tty
            && (rows == 0 || cols == 0)
        {
            return Err(bad(
                "the terminal size".into(),
                "needs at least one row and one column",
            ));
        }
        Ok(())
    }
}

/// Which output a read is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output (with a terminal: everything the terminal shows).
    Stdout,
    /// Standard error (with a terminal: always empty).
    Stderr,
    /// Stdout and stderr interleaved in the order they were read (with a terminal: the
    /// same as [`Stream::Stdout`]).
    Combined,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl ExitStatus {
    /// True for exit code 0.
    pub fn success(self) -> bool {
        self == ExitStatus::Code(0)
    }
}

/// For people: `exit code 7`, `killed by signal 9 (SIGKILL)`.
impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ExitStatus::Code(code) => write!(f, "exit code {code}"),
            ExitStatus::Signal(signal) => {
                let name = match signal {
                    1 => " (SIGHUP)",
                    2 => " (SIGINT)",
                    3 => " (SIGQUIT)",
                    6 => " (SIGABRT)",
                    9 => " (SIGKILL)",
                    11 => " (SIGSEGV)",
                    13 => " (SIGPIPE)",
                    15 => " (SIGTERM)",
                    _ => "",
                };
                write!(f, "killed by signal {signal}{name}")
            }
        }
    }
}

/// Whether all output was read after the child exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// Every output stream reached end of file.
    Complete,
    /// Descendants still held the output open when the drain limit passed; reading stopped
    /// there (what they print later is lost), and they keep running until the tree is
    /// stopped or the [`Process`] dropped.
    Abandoned {
        /// How long the backend drained after the child exited.
        after: Duration,
    },
}

/// Why toolshed stopped a process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A caller asked ([`Process::terminate`]) or the last handle was dropped.
    Requested(Stop),
    /// The output passed [`OutputLimits::kill_after_bytes`].
    OutputLimit,
}

/// How to stop a process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM to every process of the tree (and SIGHUP with a terminal), up to `grace` for
    /// them to exit, then SIGKILL to whatever is left.
    Graceful {
        /// How long to wait before killing.
        grace: Duration,
    },
    /// SIGKILL to the whole tree at once.
    Forced,
}

impl Stop {
    /// The default grace period of a graceful stop.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

    /// A graceful stop with the default grace period.
    pub fn graceful() -> Self {
        Stop::Graceful {
            grace: Self::DEFAULT_GRACE,
        }
    }
}

/// The end of a process: published once the child has exited and its output was drained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// How the child (the process toolshed started) ended.
    pub status: ExitStatus,
    /// From the start to the child's exit.
    pub duration: Duration,
    /// Whether all its output was read.
    pub drain: Drain,
    /// Set when toolshed signalled the tree before the child exited.
    pub stopped: Option<StopReason>,
    /// Set when the tree ran into a resource limit (a process killed for memory, a fork
    /// refused).
    pub limit: Option<LimitHit>,
    /// What a sandboxed command left in its private `/tmp` and `/dev/shm` — writes that
    /// looked as if they succeeded but never reached the host (a path outside the
    /// workspace that lies under `/tmp`), discarded when the command ended: `path (N
    /// bytes)`, at most [`crate::sandbox::MAX_DIVERTED`].
    pub diverted: Vec<String>,
}

/// A resource limit a process tree ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    /// Its memory limit: the kernel killed a process of the tree.
    Memory,
    /// Its process limit: a `fork` was refused.
    Processes,
}

/// [`ProcessOps::sandbox`] of a backend without a sandbox: full access, narrower modes
/// refused.
pub(crate) fn unsandboxed(
    mode: Option<crate::sandbox::SandboxMode>,
) -> Result<Option<crate::sandbox::Enforcement>, OpsError> {
    match mode {
        None | Some(crate::sandbox::SandboxMode::FullAccess) => Ok(None),
        Some(mode) => Err(OpsError::ProcessUnavailable {
            reason: format!(
                "commands run without a sandbox here (no sandbox helper), so none can be \
                 confined to {} mode",
                mode.as_str()
            ),
        }),
    }
}

/// Starting processes inside the workspace.
pub trait ProcessOps: Send + Sync {
    /// Starts a child as described and returns its handle, the child already running.
    ///
    /// Synchronous but short (it returns once the program was executed or failed to be):
    /// like `tokio::process::Command::spawn`, fine to call on the async runtime.
    fn spawn(&self, request: &SpawnRequest) -> Result<Process, OpsError>;

    /// Kills every process tree this backend started and still has a handle for, and waits
    /// (a few seconds at most) until they are gone. For host shutdown: dropping handles
    /// stops trees too, but in the background, which an exiting process may not wait for.
    fn kill_all(&self) {}

    /// What a command that started in sandbox `mode` (`None`: this backend's own) runs
    /// under: `None` with full access; an error when the mode cannot be enforced here.
    /// Reported with every command's result (a wider mode only starts once approved, so it
    /// is reported as it ran).
    ///
    /// A backend without a sandbox runs everything with full access and refuses narrower
    /// modes rather than pretend to enforce them.
    fn sandbox(
        &self,
        mode: Option<crate::sandbox::SandboxMode>,
    ) -> Result<Option<crate::sandbox::Enforcement>, OpsError> {
        unsandboxed(mode)
    }

    /// Checks that the sandbox can be built here (by running `true` inside it, once) and
    /// says what it enforces; `None` when commands run with full access.
    fn check_sandbox(&self) -> Option<Result<crate::sandbox::Enforcement, OpsError>> {
        None
    }

    /// The shell command lines run in, on the machine this backend starts processes on:
    /// `bash` where that machine has it, else `sh`.
    fn shell(&self) -> &'static str {
        local_shell()
    }
}

/// The shell for command lines on this machine: `bash` when it is on the `PATH` (else the
/// default one), else `sh`. Looked up once.
pub fn local_shell() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        let path = std::env::var_os("PATH")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| DEFAULT_PATH.into());
        let found = std::env::split_paths(&path).any(|dir| dir.join("bash").is_file());
        if found { "bash" } else { "sh" }
    })
}

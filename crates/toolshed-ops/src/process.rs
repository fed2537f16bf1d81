//! `ProcessOps`: starting and controlling child processes — the interface.
//!
//! The command-execution tools (one-shot commands, PTY sessions, a persistent shell,
//! background processes) will run every child through this trait, so that a sandboxed
//! backend and an in-memory double can stand in for the local one exactly as they do for
//! files. The local implementation arrives with those tools; what is fixed here is the
//! contract every backend keeps:
//!
//! - each child runs in its own session and process group, with a clean environment
//!   (secrets such as `*_TOKEN`, `*_KEY`, `*SECRET*` dropped unless allowed) and its
//!   working directory resolved inside the workspace through the same jail as files;
//! - stdin is closed unless the child is interactive (a PTY, or `Stdin::Piped`);
//! - output is read into bounded buffers; nothing a child prints can grow memory without
//!   limit;
//! - killing means the whole tree: TERM to the group, a grace period, then KILL — also when
//!   the handle is dropped, so a cancelled call never leaves a process running.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::OpsError;

/// Whether the child gets a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tty {
    /// Pipes for stdout and stderr.
    No,
    /// A pseudo-terminal of this size (rows, columns); stdout and stderr are merged.
    Yes {
        /// Rows.
        rows: u16,
        /// Columns.
        cols: u16,
    },
}

/// What the child's standard input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// Closed (reads see end of file).
    Closed,
    /// A pipe the caller writes to.
    Piped,
}

/// A process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The program, looked up on the child's `PATH` when it has no `/`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory, relative to the workspace root.
    pub workdir: String,
    /// Variables added to (or replacing those of) the clean environment.
    pub env: BTreeMap<String, String>,
    /// Terminal or pipes.
    pub tty: Tty,
    /// Standard input (ignored with a terminal, which is always writable).
    pub stdin: Stdin,
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output (or the terminal).
    Stdout,
    /// Standard error.
    Stderr,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

/// A running child.
pub trait ProcessHandle: Send {
    /// The child's process id (also its process group id).
    fn pid(&self) -> u32;

    /// Writes to the child's stdin or terminal.
    fn write_stdin(&mut self, data: &[u8]) -> Result<(), OpsError>;

    /// Waits up to `wait` for output and returns what arrived (at most `max_bytes`, in
    /// order, with its stream); empty when nothing came.
    fn read_output(
        &mut self,
        max_bytes: usize,
        wait: Duration,
    ) -> Result<Vec<(Stream, Vec<u8>)>, OpsError>;

    /// The exit status, if the child has ended.
    fn try_wait(&mut self) -> Result<Option<ExitStatus>, OpsError>;

    /// Kills the whole process tree: TERM, up to `grace`, then KILL.
    fn kill_tree(&mut self, grace: Duration) -> Result<ExitStatus, OpsError>;
}

/// Starting processes inside the workspace.
pub trait ProcessOps: Send + Sync {
    /// Starts a child as described.
    fn spawn(&self, request: &SpawnRequest) -> Result<Box<dyn ProcessHandle>, OpsError>;
}

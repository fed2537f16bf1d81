//! How an operation fails.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use toolshed_core::ToolError;

/// An operation that failed. Every variant names the path, program or value as the caller
/// gave it, so the message can be shown to a model as it is.
/// It crosses a worker's wire as JSON, tagged by `error` (the variant's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error")]
pub enum OpsError {
    /// The path is malformed: empty, a NUL byte, too long.
    #[error("invalid path `{path}`: {reason}")]
    InvalidPath {
        /// The path as given (shortened if long).
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The path leads outside the workspace.
    #[error("`{path}` is outside the workspace ({detail}); use a path inside the workspace root")]
    Escape {
        /// The path as given.
        path: String,
        /// How it leaves (e.g. through a symbolic link).
        detail: String,
    },
    /// The path is inside `.toolshed/`, which is reserved for toolshed itself.
    #[error(
        "`{path}` is inside .toolshed/, which is reserved for toolshed's own state; workspace tools cannot read or write it"
    )]
    Reserved {
        /// The path as given.
        path: String,
    },
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// Something exists where a new entry was to be created.
    #[error("`{path}` already exists")]
    AlreadyExists {
        /// The path as given.
        path: String,
    },
    /// A directory was found where a file was expected.
    #[error("`{path}` is a directory, not a file")]
    IsADirectory {
        /// The path as given.
        path: String,
    },
    /// A file was found where a directory was expected.
    #[error("`{path}` (or one of its parents) is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// A directory to remove is not empty.
    #[error("directory `{path}` is not empty; remove it with recursive: true")]
    NotEmpty {
        /// The path as given.
        path: String,
    },
    /// The target is not a regular file: a FIFO, socket, device or symbolic link.
    #[error("`{path}` is a {kind}; only regular files can be {action}")]
    SpecialFile {
        /// The path as given.
        path: String,
        /// What it is.
        kind: String,
        /// What was refused: `read`, `written`.
        action: Cow<'static, str>,
    },
    /// The file has more than one hard link; writing it would change other paths too.
    #[error(
        "`{path}` has {links} hard links; writing it would also change the other names, so it is refused"
    )]
    MultipleLinks {
        /// The path as given.
        path: String,
        /// The link count.
        links: u64,
    },
    /// The operating system refused access.
    #[error("permission denied for `{path}`")]
    PermissionDenied {
        /// The path as given.
        path: String,
    },
    /// The file's owner took away its write permission: it is not replaced.
    #[error(
        "`{path}` is read-only (mode {mode:04o}): its owner protected it, so it is not \
         replaced; make it writable first (chmod u+w) if it should change"
    )]
    ReadOnlyFile {
        /// The path as given.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The directory's owner took away its write permission: nothing is created, replaced,
    /// moved or removed in it.
    #[error(
        "the directory holding `{path}` is read-only (mode {mode:04o}): its owner protected it, \
         so nothing is created, replaced, moved or removed in it; make it writable first \
         (chmod u+w) if it should change"
    )]
    ReadOnlyDirectory {
        /// The path as given.
        path: String,
        /// The directory's permission bits.
        mode: u32,
    },
    /// The file is not what the caller read: someone else changed, created or removed it
    /// since. Nothing was written.
    #[error(
        "`{path}` has changed since you read it ({detail}); nothing was written — read it \
         again, then retry"
    )]
    Changed {
        /// The path as given.
        path: String,
        /// What is there now.
        detail: Cow<'static, str>,
    },
    /// Another writer held the file's lock for too long.
    #[error("`{path}` is busy: another writer has held its lock for {secs} s; retry in a moment")]
    Busy {
        /// The path as given.
        path: String,
        /// How long this writer waited.
        secs: u64,
    },
    /// A glob, regular expression or query cannot be used.
    #[error("invalid pattern `{pattern}`: {reason}")]
    InvalidPattern {
        /// The pattern as given (shortened if long).
        pattern: String,
        /// What is wrong with it, and what to do instead.
        reason: String,
    },
    /// A command cannot be started as given: a NUL byte, an empty program, a bad variable
    /// name, limits too large.
    #[error("invalid command: {what} {reason}")]
    InvalidCommand {
        /// What is wrong (`argument 2`, `the program`).
        what: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The program to run does not exist.
    #[error(
        "`{program}` was not found: no such file{where_}; check the name, give a path, or install it"
    )]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// Where it was looked for (`, nor on PATH (/usr/bin:/bin)`), or empty.
        where_: String,
    },
    /// Starting the program failed for another reason (not executable, a bad interpreter
    /// line, the kernel refused).
    #[error("cannot start `{program}`: {message}")]
    Spawn {
        /// The program as given.
        program: String,
        /// The system's message.
        message: String,
    },
    /// This backend does not run processes.
    #[error("processes cannot be started here: {reason}")]
    ProcessUnavailable {
        /// Why, and what to use instead.
        reason: String,
    },
    /// A command asked for a wider sandbox mode than this backend runs commands in.
    #[error(
        "the command asks for sandbox mode {asked}, wider than the {allowed} this host runs \
         commands in; leave the mode out (or narrow it), or run toolshed with [sandbox] mode = \
         \"{asked}\""
    )]
    SandboxEscalation {
        /// The mode asked for.
        asked: Cow<'static, str>,
        /// The widest mode allowed.
        allowed: Cow<'static, str>,
    },
    /// The sandbox's rules refuse this file operation to every tool (read-only mode, a
    /// hidden path).
    #[error("`{path}` is refused by the sandbox: {reason}")]
    SandboxRefused {
        /// The path as given.
        path: String,
        /// Which rule, and what a person can do about it.
        reason: String,
    },
    /// Input was written to a process whose stdin is closed.
    #[error("stdin is closed for this process: {reason}")]
    StdinClosed {
        /// Why it is closed and what to do.
        reason: String,
    },
    /// The process does not read its input, and too much is waiting.
    #[error(
        "the process is not reading its input: {pending} bytes are still waiting to be written; wait for it to read, or stop it"
    )]
    StdinFull {
        /// Bytes queued.
        pending: usize,
    },
    /// Any other I/O failure.
    #[error("cannot {action} `{path}`: {message}")]
    Io {
        /// What was being done.
        action: Cow<'static, str>,
        /// The path as given.
        path: String,
        /// The system's message.
        message: String,
    },
}

impl From<OpsError> for ToolError {
    fn from(e: OpsError) -> Self {
        match e {
            OpsError::InvalidPath { .. }
            | OpsError::InvalidPattern { .. }
            | OpsError::InvalidCommand { .. } => ToolError::invalid(e.to_string()),
            OpsError::Escape { .. } | OpsError::Reserved { .. } => ToolError::Denied {
                rule: "workspace jail".into(),
                message: e.to_string(),
            },
            OpsError::ReadOnlyFile { .. } | OpsError::ReadOnlyDirectory { .. } => {
                ToolError::Denied {
                    rule: "file permissions".into(),
                    message: e.to_string(),
                }
            }
            OpsError::SandboxEscalation { .. } | OpsError::SandboxRefused { .. } => {
                ToolError::Denied {
                    rule: "sandbox".into(),
                    message: e.to_string(),
                }
            }
            OpsError::NotFound { .. } | OpsError::ProgramNotFound { .. } => {
                ToolError::NotFound(e.to_string())
            }
            OpsError::AlreadyExists { .. }
            | OpsError::NotEmpty { .. }
            | OpsError::MultipleLinks { .. }
            | OpsError::Changed { .. }
            | OpsError::Busy { .. }
            | OpsError::StdinClosed { .. }
            | OpsError::StdinFull { .. } => ToolError::Conflict(e.to_string()),
            _ => ToolError::Failed(e.to_string()),
        }
    }
}

//! [`Process`]: the handle of a running (or finished) child.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use super::{Exit, OutputBuffer, OutputChunk, OutputSnapshot, Stop, StopReason, Stream, Tty};
use crate::error::OpsError;

/// The most input queued for a child that does not read it; writes beyond are refused.
pub const MAX_STDIN_QUEUE: usize = 1024 * 1024;

/// How long the waiting in [`Process::terminate`] may last beyond the grace period (the
/// backend gives up on a tree that survives SIGKILL well before that).
const STOP_SLACK: Duration = Duration::from_secs(15);

/// The child's standard input, as the handle sees it.
#[derive(Debug)]
pub(crate) enum StdinState {
    /// Never open: the child's stdin is `/dev/null`.
    Never,
    /// Open; `queue` waits to be written; `closing` closes it once the queue is written.
    Open { queue: VecDeque<u8>, closing: bool },
    /// Closed by the caller.
    Closed,
    /// The child has exited (or stopped reading for good).
    Gone,
}

/// What the backend's supervisor and the handle share.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) stdout: OutputBuffer,
    pub(crate) stderr: OutputBuffer,
    /// `None` with a terminal, where `stdout` already is everything.
    pub(crate) combined: Option<OutputBuffer>,
    pub(crate) stdin: StdinState,
    /// A stop asked for and not yet taken up by the supervisor.
    pub(crate) stop_request: Option<StopReason>,
    /// The last stop asked for has finished: the tree is gone.
    pub(crate) stop_done: bool,
    /// Set when the child has exited and its output was drained.
    pub(crate) exit: Option<Exit>,
    /// The last handle was dropped: stop the tree, clean up, end the supervisor.
    pub(crate) dropped: bool,
    /// The supervisor has ended: the child was reaped and its tree cleaned up, and nothing
    /// takes stop requests any more.
    pub(crate) finished: bool,
}

impl State {
    pub(crate) fn new(tty: bool, limits: super::OutputLimits, stdin: StdinState) -> Self {
        let buffer = || OutputBuffer::new(limits.head_bytes, limits.tail_bytes);
        Self {
            stdout: buffer(),
            stderr: buffer(),
            combined: (!tty).then(buffer),
            stdin,
            stop_request: None,
            stop_done: false,
            exit: None,
            dropped: false,
            finished: false,
        }
    }

    fn buffer(&self, stream: Stream) -> &OutputBuffer {
        match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
            Stream::Combined => self.combined.as_ref().unwrap_or(&self.stdout),
        }
    }

    /// Bytes read from the child so far, all streams.
    pub(crate) fn total_output(&self) -> u64 {
        self.stdout.total() + self.stderr.total()
    }
}

/// A callback from the handle into its backend.
pub(crate) type Hook = Box<dyn Fn() + Send + Sync>;
/// Resizing a terminal.
pub(crate) type ResizeHook = Box<dyn Fn(u16, u16) -> Result<(), OpsError> + Send + Sync>;

/// The state of one child, shared by its [`Process`] and the backend that supervises it.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Bumped on every change of `state` the handle may wait for.
    pub(crate) version: watch::Sender<u64>,
    /// Wakes the supervisor after the handle changed `state`.
    pub(crate) wake: Hook,
    /// Resizes the terminal, when there is one.
    pub(crate) resize: Option<ResizeHook>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(state: State, wake: Hook, resize: Option<ResizeHook>) -> Self {
        Self {
            state: Mutex::new(state),
            version: watch::channel(0).0,
            wake,
            resize,
        }
    }

    /// The state; a panic elsewhere while it was held leaves it usable (every update
    /// keeps it consistent), so a poisoned lock is taken over.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells waiting handles that `state` changed.
    pub(crate) fn notify(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }
}

/// A child process and everything it printed, kept in bounded buffers.
///
/// Cheap methods ([`read`](Self::read), [`write`](Self::write), [`exit`](Self::exit)) never
/// block; the waiting ones are `async`, take a timeout, and need a tokio runtime. Share it
/// between calls with an `Arc`; when the last handle is dropped, the whole process tree is
/// stopped (TERM, a short grace, KILL) in the background.
#[derive(Debug)]
pub struct Process {
    shared: std::sync::Arc<Shared>,
    pid: u32,
    tty: Tty,
    program: String,
    started: SystemTime,
    inbound: Option<std::path::PathBuf>,
    stdio: Mutex<Option<StreamStdio>>,
}

/// The child's standard output and input as pipes, for [`Stdin::Stream`](super::Stdin):
/// both in non-blocking mode, closed on exec.
#[derive(Debug)]
pub struct StreamStdio {
    /// Read the child's standard output here.
    pub stdout: std::os::fd::OwnedFd,
    /// Write the child's standard input here; dropping it is end of input.
    pub stdin: std::os::fd::OwnedFd,
}

impl StreamStdio {
    /// The two as tokio pipes: what to read the child's output from, what to write its
    /// input to. Must be called within a tokio runtime.
    pub fn into_pipes(
        self,
    ) -> std::io::Result<(
        tokio::net::unix::pipe::Receiver,
        tokio::net::unix::pipe::Sender,
    )> {
        Ok((
            tokio::net::unix::pipe::Receiver::from_owned_fd(self.stdout)?,
            tokio::net::unix::pipe::Sender::from_owned_fd(self.stdin)?,
        ))
    }
}

impl Process {
    pub(crate) fn new(shared: std::sync::Arc<Shared>, pid: u32, tty: Tty, program: String) -> Self {
        Self {
            shared,
            pid,
            tty,
            program,
            started: SystemTime::now(),
            inbound: None,
            stdio: Mutex::new(None),
        }
    }

    /// The handle holding the child's streamed stdio (see [`take_stdio`](Self::take_stdio)).
    pub(crate) fn with_stdio(self, stdio: Option<StreamStdio>) -> Self {
        *self.stdio.lock().unwrap_or_else(|e| e.into_inner()) = stdio;
        self
    }

    /// The child's standard output and input pipes, once, when it was started with
    /// [`Stdin::Stream`](super::Stdin); `None` otherwise or when already taken.
    pub fn take_stdio(&self) -> Option<StreamStdio> {
        self.stdio.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The handle with `inbound`: see [`inbound`](Self::inbound).
    pub(crate) fn with_inbound(mut self, inbound: Option<std::path::PathBuf>) -> Self {
        self.inbound = inbound;
        self
    }

    /// A UNIX socket reaching the child's own loopback, when it runs in a network
    /// namespace of its own: write the port and a newline, then talk to what listens
    /// there. `None`: it shares the host's network (dial `127.0.0.1` directly).
    pub fn inbound(&self) -> Option<&std::path::Path> {
        self.inbound.as_deref()
    }

    /// The child's process id (also its session and process group id). Informational:
    /// signal it through [`terminate`](Self::terminate), never by number.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it has a terminal.
    pub fn tty(&self) -> Tty {
        self.tty
    }

    /// The program as requested.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// When it was started.
    pub fn started_at(&self) -> SystemTime {
        self.started
    }

    /// How it ended, once it has exited and its output was drained.
    pub fn exit(&self) -> Option<Exit> {
        self.shared.lock().exit.clone()
    }

    /// Still running, or exited with its output still being drained.
    pub fn is_running(&self) -> bool {
        self.exit().is_none()
    }

    /// The current end offset of a stream: bytes produced so far.
    pub fn output_len(&self, stream: Stream) -> u64 {
        self.shared.lock().buffer(stream).total()
    }

    /// Up to `max_bytes` of a stream from offset `since` on (0 is the start). When the
    /// bytes at `since` were dropped, the chunk starts at the oldest kept byte after it and
    /// says how many were skipped; read on from [`OutputChunk::next`].
    pub fn read(&self, stream: Stream, since: u64, max_bytes: usize) -> OutputChunk {
        self.shared.lock().buffer(stream).read(since, max_bytes)
    }

    /// A stream as kept: its head, its tail and what was dropped between.
    pub fn snapshot(&self, stream: Stream) -> OutputSnapshot {
        self.shared.lock().buffer(stream).snapshot()
    }

    /// A receiver that changes whenever the state does (output, exit, stops): for a
    /// backend relaying the process elsewhere.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    /// Waits up to `timeout` for the child to exit and its output to be drained.
    /// `None`: still running when the timeout passed (a yield window ended; call again, or
    /// [`terminate`](Self::terminate)).
    pub async fn wait(&self, timeout: Duration) -> Option<Exit> {
        self.wait_until(timeout, |s| s.exit.is_some()).await;
        self.exit()
    }

    /// Waits up to `wait` for output past `since` on `stream` (or for the end), then reads
    /// like [`read`](Self::read). An empty chunk means nothing came in time.
    pub async fn read_wait(
        &self,
        stream: Stream,
        since: u64,
        max_bytes: usize,
        wait: Duration,
    ) -> OutputChunk {
        self.wait_until(wait, |s| {
            s.exit.is_some() || s.buffer(stream).total() > since
        })
        .await;
        self.read(stream, since, max_bytes)
    }

    /// Queues bytes for the child's stdin or terminal and returns at once; the backend
    /// writes them as the child reads. Control characters go to a terminal as typed: `\u{3}`
    /// (Ctrl-C) interrupts its foreground job, `\u{4}` (Ctrl-D) ends a line-mode read.
    ///
    /// Refused when stdin is closed (no terminal and not [`Stdin::Piped`](super::Stdin),
    /// closed by [`close_stdin`](Self::close_stdin), or the child has exited) and when more
    /// than [`MAX_STDIN_QUEUE`] bytes would wait because the child is not reading.
    pub fn write(&self, data: &[u8]) -> Result<(), OpsError> {
        {
            let mut st = self.shared.lock();
            match &mut st.stdin {
                StdinState::Open {
                    queue,
                    closing: false,
                } => {
                    if queue.len() + data.len() > MAX_STDIN_QUEUE {
                        return Err(OpsError::StdinFull {
                            pending: queue.len(),
                        });
                    }
                    queue.extend(data);
                }
                StdinState::Open { closing: true, .. } | StdinState::Closed => {
                    return Err(OpsError::StdinClosed {
                        reason: "stdin was closed by an earlier call".into(),
                    });
                }
                StdinState::Gone => {
                    return Err(OpsError::StdinClosed {
                        reason: "the process has exited".into(),
                    });
                }
                StdinState::Never => {
                    return Err(OpsError::StdinClosed {
                        reason: "it was started without a terminal or piped stdin; start it \
                                 again with a tty (or stdin piped) to write to it"
                            .into(),
                    });
                }
            }
        }
        (self.shared.wake)();
        Ok(())
    }

    /// Closes the child's stdin once the queued input is written: end of file for a pipe.
    /// With a terminal it only refuses further writes (the terminal stays open for the
    /// output); write `\u{4}` (Ctrl-D) to end a terminal read instead.
    pub fn close_stdin(&self) {
        {
            let mut st = self.shared.lock();
            if let StdinState::Open { closing, .. } = &mut st.stdin {
                *closing = true;
            }
        }
        (self.shared.wake)();
    }

    /// Changes the terminal size (the foreground job gets SIGWINCH).
    pub fn resize(&self, rows: u16, cols: u16) -> Result<(), OpsError> {
        match &self.shared.resize {
            Some(resize) if rows > 0 && cols > 0 => resize(rows, cols),
            Some(_) => Err(OpsError::InvalidCommand {
                what: "the terminal size".into(),
                reason: "needs at least one row and one column".into(),
            }),
            None => Err(OpsError::InvalidCommand {
                what: "resize".into(),
                reason: "this process has no terminal".into(),
            }),
        }
    }

    /// Asks for the tree to be stopped and returns at once; see [`terminate`](Self::terminate).
    pub fn start_stop(&self, stop: Stop) {
        {
            let mut st = self.shared.lock();
            st.stop_request = Some(StopReason::Requested(stop));
            st.stop_done = false;
        }
        (self.shared.wake)();
    }

    /// Stops the whole process tree — grandchildren in their own sessions too — and waits
    /// until it is gone: [`Stop::Graceful`] sends SIGTERM, waits up to the grace period,
    /// then SIGKILLs what is left; [`Stop::Forced`] SIGKILLs at once. Returns how the child
    /// ended (`None` only if the tree could not be confirmed gone in time, which takes a
    /// process stuck in the kernel). Safe to call on a finished process: it stops what
    /// the child left running.
    pub async fn terminate(&self, stop: Stop) -> Option<Exit> {
        self.start_stop(stop);
        let grace = match stop {
            Stop::Graceful { grace } => grace,
            Stop::Forced => Duration::ZERO,
        };
        self.wait_until(grace.saturating_add(STOP_SLACK), |s| {
            s.exit.is_some() && s.stop_done
        })
        .await;
        self.exit()
    }

    /// Waits until `done` holds or `timeout` passes; whether it holds.
    async fn wait_until(&self, timeout: Duration, done: impl Fn(&State) -> bool) -> bool {
        let mut changes = self.shared.version.subscribe();
        let now = tokio::time::Instant::now();
        // A huge timeout means "for as long as it takes"; a year stands in for it.
        let deadline = now
            .checked_add(timeout)
            .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600));
        loop {
            if done(&self.shared.lock()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return done(&self.shared.lock()),
            }
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.shared.lock().dropped = true;
        (self.shared.wake)();
    }
}

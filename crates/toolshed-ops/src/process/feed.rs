//! [`ProcessFeed`]: how an operations backend outside this crate fills a [`Process`].
//!
//! Every backend hands tools the same [`Process`] handle. The local backend feeds it from a
//! supervisor thread inside this crate; a backend elsewhere (a remote host over SSH, a
//! microVM) builds the handle with [`Process::from_backend`] and feeds it through the
//! [`ProcessFeed`] it gets back: output as it arrives, input as the child takes it, stops
//! as they are asked for, and the exit once. The handle's side — bounded buffers, queued
//! writes, waits with timeouts, stop on drop — stays the same, so tools cannot tell the
//! backends apart.
//!
//! The backend's loop, in outline:
//!
//! ```text
//! loop {
//!     woken by control.wake() or by the remote side
//!     feed.output(stream, bytes)         for what the child printed
//!     feed.take_input(n)                 bytes for its stdin (and whether to close it)
//!     feed.take_stop()                   a stop asked for: stop the whole tree, then feed.stop_done()
//!     feed.is_abandoned()                every handle dropped: stop the tree, clean up, end
//!     feed.exited(exit)                  once, when it has exited and its output was read
//! }
//! ```

use std::collections::VecDeque;
use std::sync::Arc;

use super::{
    Exit, OutputLimits, Process, Shared, State, Stdin, StdinState, StopReason, Stream, Tty,
};
use crate::error::OpsError;

/// What a [`Process`] asks of the backend that feeds it.
pub trait ProcessControl: Send + Sync {
    /// Something the backend acts on changed: input was queued or stdin closed, a stop
    /// was asked for, or the last handle was dropped. Must return at once (wake the
    /// backend's own loop; do the work there).
    fn wake(&self);

    /// Resizes the child's terminal. Only called for a process started with a terminal.
    fn resize(&self, rows: u16, cols: u16) -> Result<(), OpsError> {
        let _ = (rows, cols);
        Err(OpsError::InvalidCommand {
            what: "resize".into(),
            reason: "this backend cannot resize a terminal".into(),
        })
    }
}

/// What a backend tells the handle about a child it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessStart {
    /// Its process id where it runs (informational).
    pub pid: u32,
    /// Whether it has a terminal (stdout then is everything; stderr stays empty).
    pub tty: Tty,
    /// The program as requested.
    pub program: String,
    /// How much output is kept, and when the tree is stopped for printing too much.
    pub limits: OutputLimits,
    /// Whether the caller may write to its stdin (always, with a terminal).
    pub stdin: Stdin,
}

/// Input the child should get now: see [`ProcessFeed::take_input`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    /// Bytes to write to the child's stdin, in order.
    pub bytes: Vec<u8>,
    /// Close the child's stdin after writing `bytes` (end of file for a pipe).
    pub close: bool,
}

/// The backend's side of a [`Process`]; see the [module docs](self). Cheap to clone; every
/// method returns at once.
#[derive(Debug, Clone)]
pub struct ProcessFeed {
    shared: Arc<Shared>,
    kill_after: Option<u64>,
}

impl Process {
    /// A handle for a child started by a backend outside this crate, and the feed through
    /// which that backend fills it. `control` is how the handle reaches the backend.
    pub fn from_backend(
        start: ProcessStart,
        control: Arc<dyn ProcessControl>,
    ) -> (Self, ProcessFeed) {
        let tty = matches!(start.tty, Tty::Yes { .. });
        let stdin = if tty || start.stdin == Stdin::Piped {
            StdinState::Open {
                queue: VecDeque::new(),
                closing: false,
            }
        } else {
            StdinState::Never
        };
        let waker = Arc::clone(&control);
        let resize: Option<super::ResizeHook> =
            tty.then(|| Box::new(move |rows, cols| control.resize(rows, cols)) as _);
        let shared = Arc::new(Shared::new(
            State::new(tty, start.limits, stdin),
            Box::new(move || waker.wake()),
            resize,
        ));
        let feed = ProcessFeed {
            shared: Arc::clone(&shared),
            kill_after: start.limits.kill_after_bytes,
        };
        (
            Process::new(shared, start.pid, start.tty, start.program),
            feed,
        )
    }
}

impl ProcessFeed {
    /// Output the child printed on `stream` (`Stdout` or `Stderr`; with a terminal, all of
    /// it is `Stdout`). Past [`OutputLimits::kill_after_bytes`] in total, a stop
    /// ([`StopReason::OutputLimit`]) is asked for: see [`take_stop`](Self::take_stop).
    pub fn output(&self, stream: Stream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let over = {
            let mut st = self.shared.lock();
            match stream {
                Stream::Stderr => st.stderr.push(bytes),
                Stream::Stdout | Stream::Combined => st.stdout.push(bytes),
            }
            if let Some(combined) = st.combined.as_mut() {
                combined.push(bytes);
            }
            let over = self
                .kill_after
                .is_some_and(|max| st.total_output() > max && st.exit.is_none());
            if over && st.stop_request.is_none() && !st.stop_done {
                st.stop_request = Some(StopReason::OutputLimit);
                true
            } else {
                false
            }
        };
        self.shared.notify();
        if over {
            (self.shared.wake)();
        }
    }

    /// `n` bytes of `stream` that the backend's own source dropped before they reached it
    /// (it kept only a head and a tail): counted in the totals, so offsets and the
    /// `dropped` count stay those of the child's real output.
    pub fn skipped(&self, stream: Stream, n: u64) {
        if n == 0 {
            return;
        }
        {
            let mut st = self.shared.lock();
            match stream {
                Stream::Stderr => st.stderr.skip(n),
                Stream::Stdout | Stream::Combined => st.stdout.skip(n),
            }
            if let Some(combined) = st.combined.as_mut() {
                combined.skip(n);
            }
        }
        self.shared.notify();
    }

    /// Up to `max_bytes` of the input queued by [`Process::write`], taken off the queue,
    /// and whether stdin should be closed after them. Empty when nothing waits.
    pub fn take_input(&self, max_bytes: usize) -> Input {
        let mut st = self.shared.lock();
        let StdinState::Open { queue, closing } = &mut st.stdin else {
            return Input::default();
        };
        let n = queue.len().min(max_bytes);
        let bytes: Vec<u8> = queue.drain(..n).collect();
        let close = queue.is_empty() && *closing;
        if close {
            st.stdin = StdinState::Closed;
        }
        Input { bytes, close }
    }

    /// The child stopped reading its stdin for good (it closed it, or the pipe broke):
    /// further writes are refused.
    pub fn input_gone(&self) {
        let mut st = self.shared.lock();
        if let StdinState::Open { .. } = st.stdin {
            st.stdin = StdinState::Gone;
        }
    }

    /// A stop asked for since the last call, if any: stop the whole tree as it says, then
    /// call [`stop_done`](Self::stop_done).
    pub fn take_stop(&self) -> Option<StopReason> {
        self.shared.lock().stop_request.take()
    }

    /// The tree of the last stop taken is gone ([`Process::terminate`] returns then).
    pub fn stop_done(&self) {
        {
            let mut st = self.shared.lock();
            // A stop asked for since is taken on the next turn and reports then.
            if st.stop_request.is_none() {
                st.stop_done = true;
            }
        }
        self.shared.notify();
    }

    /// Whether [`exited`](Self::exited) was called.
    pub fn has_exited(&self) -> bool {
        self.shared.lock().exit.is_some()
    }

    /// Every handle was dropped: stop the tree (gracefully), clean up and end.
    pub fn is_abandoned(&self) -> bool {
        self.shared.lock().dropped
    }

    /// The child exited and its output was read: publish how it ended. Only the first
    /// call counts.
    pub fn exited(&self, exit: Exit) {
        {
            let mut st = self.shared.lock();
            if st.exit.is_some() {
                return;
            }
            if let StdinState::Open { .. } = st.stdin {
                st.stdin = StdinState::Gone;
            }
            st.exit = Some(exit);
        }
        self.shared.notify();
    }
}

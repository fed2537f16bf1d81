//! The thread that watches one child: reads its output, writes its input, notices its exit,
//! drains, and stops its tree.
//!
//! One `poll(2)` loop over the output descriptors, the stdin descriptor (when input waits),
//! the child's pidfd (readable once it exits) and an eventfd the handle uses to wake it.
//! The child's exit is observed with `waitid(…, WNOWAIT)`: the child stays a zombie until
//! the supervisor ends, so its pid — which is also its session and group id — cannot be
//! reused while anything of its tree may still be signalled.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use rustix::process::{Signal, WaitId, WaitIdOptions};

use super::limits::Groups;
use super::tree::Tracker;
use crate::process::{
    Drain, Exit, ExitStatus, OutputLimits, Shared, StdinState, Stop, StopReason, Stream,
};

/// How often a stopping tree is checked for survivors.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// How long after SIGKILL the tree may take to disappear before the stop is reported done
/// anyway (only a process stuck in the kernel takes that long).
const KILL_WAIT: Duration = Duration::from_secs(5);
/// Bytes read or written per system call.
const CHUNK: usize = 64 * 1024;

pub(super) struct Supervisor {
    pub(super) shared: Arc<Shared>,
    pub(super) wake: Arc<OwnedFd>,
    pub(super) pidfd: OwnedFd,
    pub(super) tracker: Tracker,
    pub(super) stdout: Option<OwnedFd>,
    pub(super) stderr: Option<OwnedFd>,
    pub(super) stdin: Option<OwnedFd>,
    pub(super) tty: bool,
    pub(super) limits: OutputLimits,
    pub(super) drain: Duration,
    pub(super) drop_grace: Duration,
    pub(super) started: Instant,
    /// The child's resource-limit groups (empty without limits).
    pub(super) groups: Groups,
    /// Its inbound socket (a sandbox with a network of its own), removed at the end.
    pub(super) socket: Option<std::path::PathBuf>,
    /// Its own egress proxy (a command limited to named hosts), stopped at the end.
    pub(super) _egress: Option<crate::sandbox::EgressProxy>,
    /// Where the sandbox helper reports what the command left in its private temporary
    /// directories (read once the command has ended).
    pub(super) report: Option<OwnedFd>,
}

/// A stop under way.
struct Stopping {
    deadline: Instant,
    killed: bool,
    next_check: Instant,
}

impl Supervisor {
    pub(super) fn run(mut self) {
        let mut exited: Option<(ExitStatus, Instant)> = None;
        let mut stopping: Option<Stopping> = None;
        let mut first_stop: Option<StopReason> = None;
        let mut published = false;
        let mut drop_seen = false;
        let mut limit_hit = false;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let now = Instant::now();
            let (request, dropped, want_write) = {
                let mut st = self.shared.lock();
                let want_write = match &st.stdin {
                    StdinState::Open { queue, closing } => !queue.is_empty() || *closing,
                    _ => false,
                };
                (st.stop_request.take(), st.dropped, want_write)
            };
            let mut requests = Vec::new();
            if let Some(r) = request {
                requests.push(r);
            }
            if dropped && !drop_seen {
                drop_seen = true;
                requests.push(StopReason::Requested(Stop::Graceful {
                    grace: self.drop_grace,
                }));
            }
            if !limit_hit
                && let Some(max) = self.limits.kill_after_bytes
                && self.shared.lock().total_output() > max
            {
                limit_hit = true;
                requests.push(StopReason::OutputLimit);
            }
            for reason in requests {
                if exited.is_none() && first_stop.is_none() {
                    first_stop = Some(reason);
                }
                self.begin_stop(reason, &mut stopping, now);
            }

            if let Some(s) = &mut stopping
                && now >= s.next_check
            {
                s.next_check = now + STOP_CHECK;
                if exited.is_some() && self.tracker.is_empty() {
                    stopping = None;
                    self.finish_stop();
                } else if now >= s.deadline {
                    if s.killed {
                        stopping = None;
                        self.finish_stop();
                    } else {
                        self.tracker.kill();
                        s.killed = true;
                        s.deadline = now + KILL_WAIT;
                    }
                }
            }

            if let Some((status, at)) = exited
                && !published
            {
                let all_read = self.stdout.is_none() && self.stderr.is_none();
                if all_read || now >= at + self.drain {
                    self.stdout = None;
                    self.stderr = None;
                    self.stdin = None;
                    let drain = if all_read {
                        Drain::Complete
                    } else {
                        Drain::Abandoned {
                            after: now.saturating_duration_since(at),
                        }
                    };
                    {
                        let mut st = self.shared.lock();
                        if let StdinState::Open { .. } = st.stdin {
                            st.stdin = StdinState::Gone;
                        }
                        st.exit = Some(Exit {
                            status,
                            duration: at.saturating_duration_since(self.started),
                            drain,
                            stopped: first_stop,
                            limit: self.groups.hit(),
                            diverted: self
                                .report
                                .as_ref()
                                .map(crate::sandbox::read_report)
                                .unwrap_or_default(),
                        });
                    }
                    published = true;
                    self.shared.notify();
                }
            }

            if dropped && published && stopping.is_none() {
                break;
            }

            // Wait for something to happen.
            let mut timeout: Option<Duration> = None;
            let mut sooner = |d: Duration| {
                timeout = Some(timeout.map_or(d, |t: Duration| t.min(d)));
            };
            if let Some((_, at)) = exited
                && !published
            {
                sooner((at + self.drain).saturating_duration_since(now));
            }
            if let Some(s) = &stopping {
                sooner(s.next_check.min(s.deadline).saturating_duration_since(now));
            }
            let events = self.poll(exited.is_none(), want_write, timeout);
            let Some([wake, pid, out, err, input]) = events else {
                continue;
            };
            if wake {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(self.wake.as_fd(), &mut b);
            }
            if pid && exited.is_none() {
                exited = self.exit_status().map(|s| (s, Instant::now()));
            }
            if out {
                self.read_from(Stream::Stdout, &mut buf);
            }
            if err {
                self.read_from(Stream::Stderr, &mut buf);
            }
            if input || want_write {
                self.write_input();
            }
        }
        self.tracker.clean_up();
        self.groups.remove();
        if let Some(socket) = &self.socket {
            let _ = std::fs::remove_file(socket);
        }
        // Reap the child; it has exited (the exit was published).
        let _ = rustix::process::waitid(
            WaitId::PidFd(self.pidfd.as_fd()),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
        );
        self.shared.lock().finished = true;
        self.shared.notify();
    }

    /// Polls; `None` when interrupted. The flags: wake, child exited, stdout, stderr, stdin.
    fn poll(
        &self,
        watch_exit: bool,
        want_write: bool,
        timeout: Option<Duration>,
    ) -> Option<[bool; 5]> {
        let candidates: [(Option<&OwnedFd>, PollFlags); 5] = [
            (Some(&*self.wake), PollFlags::IN),
            (watch_exit.then_some(&self.pidfd), PollFlags::IN),
            (self.stdout.as_ref(), PollFlags::IN),
            (self.stderr.as_ref(), PollFlags::IN),
            (self.stdin.as_ref().filter(|_| want_write), PollFlags::OUT),
        ];
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(5);
        let mut slots = [usize::MAX; 5];
        for (i, (fd, flags)) in candidates.into_iter().enumerate() {
            if let Some(fd) = fd {
                slots[i] = fds.len();
                fds.push(PollFd::new(fd, flags));
            }
        }
        let timeout = timeout.map(|t| rustix::event::Timespec {
            tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(Errno::INTR) => return None,
            Err(_) => {
                // Nothing sensible is left to wait on; avoid spinning.
                std::thread::sleep(Duration::from_millis(10));
                return None;
            }
        }
        let mut out = [false; 5];
        for (i, slot) in slots.iter().enumerate() {
            if let Some(fd) = fds.get(*slot) {
                out[i] = !fd.revents().is_empty();
            }
        }
        Some(out)
    }

    /// How the child ended, without reaping it.
    fn exit_status(&self) -> Option<ExitStatus> {
        let status = rustix::process::waitid(
            WaitId::PidFd(self.pidfd.as_fd()),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        )
        .ok()??;
        if let Some(code) = status.exit_status() {
            Some(ExitStatus::Code(code))
        } else {
            status.terminating_signal().map(ExitStatus::Signal)
        }
    }

    fn read_from(&mut self, stream: Stream, buf: &mut [u8]) {
        let slot = match stream {
            Stream::Stderr => &mut self.stderr,
            _ => &mut self.stdout,
        };
        let Some(fd) = slot.as_ref() else {
            return;
        };
        match rustix::io::read(fd, &mut *buf) {
            Ok(0) => *slot = None,
            Ok(n) => {
                {
                    let mut st = self.shared.lock();
                    match stream {
                        Stream::Stderr => st.stderr.push(&buf[..n]),
                        _ => st.stdout.push(&buf[..n]),
                    }
                    if let Some(c) = st.combined.as_mut() {
                        c.push(&buf[..n]);
                    }
                }
                self.shared.notify();
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            // EIO: the terminal's last other end closed. Anything else: nothing more
            // can be read either.
            Err(_) => *slot = None,
        }
    }

    fn write_input(&mut self) {
        let Some(fd) = self.stdin.as_ref() else {
            return;
        };
        let mut st = self.shared.lock();
        let StdinState::Open { queue, closing } = &mut st.stdin else {
            return;
        };
        while !queue.is_empty() {
            let (front, _) = queue.as_slices();
            let n = front.len().min(CHUNK);
            match rustix::io::write(fd, &front[..n]) {
                Ok(written) => {
                    queue.drain(..written);
                }
                Err(Errno::AGAIN | Errno::INTR) => return,
                Err(_) => {
                    // EPIPE: the child closed its stdin; nothing more can be written.
                    st.stdin = StdinState::Gone;
                    drop(st);
                    self.stdin = None;
                    return;
                }
            }
        }
        if *closing {
            st.stdin = StdinState::Closed;
            drop(st);
            self.stdin = None;
        }
    }

    fn begin_stop(&mut self, reason: StopReason, stopping: &mut Option<Stopping>, now: Instant) {
        let forced = !matches!(reason, StopReason::Requested(Stop::Graceful { .. }));
        match (stopping.as_mut(), reason) {
            (Some(s), _) if s.killed => {}
            (Some(s), StopReason::Requested(Stop::Graceful { grace })) => {
                s.deadline = s.deadline.min(now + grace);
            }
            _ if forced => {
                self.tracker.kill();
                *stopping = Some(Stopping {
                    deadline: now + KILL_WAIT,
                    killed: true,
                    next_check: now,
                });
            }
            (_, StopReason::Requested(Stop::Graceful { grace })) => {
                self.tracker.signal(Signal::TERM);
                if self.tty {
                    // An interactive shell ignores SIGTERM but ends on hangup.
                    self.tracker.signal(Signal::HUP);
                }
                *stopping = Some(Stopping {
                    deadline: now + grace,
                    killed: false,
                    next_check: now,
                });
            }
            _ => {}
        }
    }

    fn finish_stop(&self) {
        {
            let mut st = self.shared.lock();
            // A stop asked for since is handled on the next turn and reports then.
            if st.stop_request.is_none() {
                st.stop_done = true;
            }
        }
        self.shared.notify();
    }
}

//! Starting a child: the one module with `unsafe`.
//!
//! `CommandExt::pre_exec` is `unsafe` because its closure runs in the forked child of a
//! multi-threaded process, where only async-signal-safe calls are allowed. The closure here
//! makes plain system calls through rustix and nothing else — no allocation, no locks:
//!
//! 1. `setsid()`: a new session and process group, led by the child. (std's
//!    `CommandExt::process_group` cannot be used with it: a group leader may not call
//!    `setsid`, and a session is what detaches the child from toolshed's terminal.)
//! 2. `prctl(PR_SET_PDEATHSIG, SIGKILL)`, then a check that the parent is still the
//!    expected one, so the child dies with toolshed even if toolshed died during the fork.
//! 3. joining the child's cgroup (writing `0` to its `cgroup.procs`), when cgroups are the
//!    tree-kill method, so every descendant is born inside it;
//!    Then its resource-limit groups the same way, or its rlimits (`setrlimit`);
//! 4. `TIOCSCTTY` on the terminal, which makes it the session's controlling terminal and
//!    the child's group its foreground job (so Ctrl-C written to it interrupts the job);
//! 5. `fchdir` to the working directory the jail opened;
//! 6. clearing close-on-exec on the descriptors the sandbox helper takes over: the sandbox
//!    network's namespaces it joins and the command's environment;
//! 7. `SIGINT` and `SIGQUIT` back to their default action: toolshed started as a shell's
//!    background job has them ignored, and a child would inherit that (Ctrl-C written to
//!    its terminal would then do nothing).
//!
//! The parent-death signal belongs to the *thread* that forked: when that thread ends, the
//! kernel signals the child as if its parent had died. Every child is therefore forked on
//! one dedicated thread that lives as long as the process.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};

use rustix::io::Errno;
use rustix::process::{Pid, Signal};

/// What the child does between fork and exec.
pub(super) struct ChildSetup {
    /// The working directory, opened beneath the workspace root.
    pub(super) workdir: Arc<OwnedFd>,
    /// The child's `cgroup.procs`, opened for writing.
    pub(super) cgroup_procs: Option<Arc<OwnedFd>>,
    /// The terminal to make the controlling terminal.
    pub(super) tty: Option<Arc<OwnedFd>>,
    /// Its resource-limit groups to join, or rlimits to set.
    pub(super) limits: super::limits::Join,
    /// toolshed's process id.
    pub(super) parent: Option<Pid>,
    /// The descriptor limit toolshed started with, when it raised its own.
    pub(super) nofile: Option<rustix::process::Rlimit>,
    /// Descriptors the child keeps across exec (the sandbox network's namespaces, the
    /// command's environment for the helper), held open by the backend for longer than
    /// the spawn.
    pub(super) inherit: Vec<i32>,
}

impl ChildSetup {
    /// Runs in the child; async-signal-safe (system calls only).
    fn run(&self) -> io::Result<()> {
        rustix::process::setsid()?;
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        if rustix::process::getppid() != self.parent {
            // toolshed died between the fork and the prctl: the signal will never come.
            return Err(io::Error::from(Errno::SRCH));
        }
        if let Some(procs) = &self.cgroup_procs {
            rustix::io::write(procs.as_ref(), b"0")?;
        }
        for procs in &self.limits.procs {
            rustix::io::write(procs.as_ref(), b"0")?;
        }
        if let Some((processes, memory)) = self.limits.rlimits {
            let limit = |n: u64| rustix::process::Rlimit {
                current: Some(n),
                maximum: Some(n),
            };
            if let Some(n) = processes {
                rustix::process::setrlimit(rustix::process::Resource::Nproc, limit(n))?;
            }
            if let Some(n) = memory {
                rustix::process::setrlimit(rustix::process::Resource::As, limit(n))?;
            }
        }
        if let Some(limit) = &self.nofile {
            rustix::process::setrlimit(rustix::process::Resource::Nofile, *limit)?;
        }
        if let Some(tty) = &self.tty {
            rustix::process::ioctl_tiocsctty(tty.as_ref())?;
        }
        rustix::process::fchdir(self.workdir.as_ref())?;
        for fd in &self.inherit {
            crate::sandbox::inherit_fd(*fd)?;
        }
        for signal in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: sigaction is async-signal-safe; the action is a plain value that
            // lives for the call.
            let done = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &raw const action, std::ptr::null_mut())
            };
            if done != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Spawns `command` with `setup` run in the child, on the spawner thread.
pub(super) fn spawn(mut command: Command, setup: ChildSetup) -> io::Result<Child> {
    // SAFETY: `ChildSetup::run` makes only async-signal-safe system calls (see the module
    // documentation) and touches no memory shared with other threads but the descriptors
    // it owns through `Arc`s, which outlive the fork.
    unsafe {
        command.pre_exec(move || setup.run());
    }
    on_spawner_thread(move || command.spawn())?
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on the spawner thread and returns its result.
fn on_spawner_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> io::Result<T> {
    static SPAWNER: OnceLock<Result<mpsc::Sender<Job>, String>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("toolshed-spawner".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map(|_| tx)
            .map_err(|e| e.to_string())
    });
    let sender = spawner
        .as_ref()
        .map_err(|e| io::Error::other(format!("cannot start the spawner thread: {e}")))?;
    let (reply_tx, reply_rx) = mpsc::sync_channel(1);
    sender
        .send(Box::new(move || {
            let _ = reply_tx.send(f());
        }))
        .map_err(|_| io::Error::other("the spawner thread has ended"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the spawner thread dropped a request"))
}

//! Starting a child: the one module with `unsafe`.
//!
//! A child is started the way `posix_spawn` starts one: `clone(CLONE_VM | CLONE_VFORK)`
//! on a small stack of its own, so the kernel copies none of toolshed's address space (a
//! `fork` of a server holding tens of megabytes costs a few hundred microseconds in page
//! tables copied and torn down again at `execve`; bench/sandbox_stages.py). The child
//! shares toolshed's memory until it executes, and toolshed's thread waits for that, so
//! the child writes nothing but its own stack and the failure it reports; it makes plain
//! system calls and nothing else — no allocation, no locks. Everything it uses (paths,
//! arguments, the environment, descriptors) is prepared beforehand. In order:
//!
//! 1. every signal handler back to the default (a handler of toolshed's must never run on
//!    the child's stack over shared memory), `SIGINT`, `SIGQUIT` and `SIGPIPE` included:
//!    toolshed started as a shell's background job has the first two ignored, and Rust
//!    ignores the third, and a child would inherit that;
//! 2. its standard input, output and error;
//! 3. `setsid()`: a new session and process group, led by the child (a session is what
//!    detaches it from toolshed's terminal);
//! 4. `prctl(PR_SET_PDEATHSIG, SIGKILL)`, then a check that the parent is still the
//!    expected one, so the child dies with toolshed even if toolshed died meanwhile;
//! 5. joining the child's cgroup (writing `0` to its `cgroup.procs`), when cgroups are the
//!    tree-kill method, so every descendant is born inside it; then its resource-limit
//!    groups the same way, or its rlimits (`setrlimit`);
//! 6. `TIOCSCTTY` on the terminal, which makes it the session's controlling terminal and
//!    the child's group its foreground job (so Ctrl-C written to it interrupts the job);
//! 7. `fchdir` to the working directory the jail opened;
//! 8. clearing close-on-exec on the descriptors the sandbox helper takes over: the sandbox
//!    network's namespaces it joins and the command's environment;
//! 9. an empty signal mask, and `execve` (through each `PATH` entry for a bare name, as
//!    `execvp` does, with `/bin/sh` for a file without an interpreter line).
//!
//! The parent-death signal belongs to the *thread* that started the child: when that
//! thread ends, the kernel signals the child as if its parent had died. Every child is
//! therefore started on one dedicated thread that lives as long as the process.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};
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
        Ok(())
    }
}

/// How one of the child's standard streams is connected.
pub(super) enum Io {
    /// `/dev/null`.
    Null,
    /// A new pipe; toolshed keeps the other end.
    Piped,
    /// This descriptor (a terminal's slave side).
    Fd(Arc<OwnedFd>),
}

/// What to run: the program, its arguments and its whole environment.
pub(super) struct Launch {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    /// `NAME=VALUE` entries; nothing else of toolshed's environment is passed.
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) stdin: Io,
    pub(super) stdout: Io,
    pub(super) stderr: Io,
}

/// A started child: its pid and toolshed's ends of its pipes.
pub(super) struct Launched {
    pub(super) pid: u32,
    pub(super) stdin: Option<OwnedFd>,
    pub(super) stdout: Option<OwnedFd>,
    pub(super) stderr: Option<OwnedFd>,
}

/// Everything the child reads, prepared before it exists, and where it reports a failure.
struct Prepared {
    setup: ChildSetup,
    /// The programs to try in turn (a bare name: one per `PATH` entry).
    candidates: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    /// `/bin/sh`, the candidate, the arguments: for a file the kernel cannot execute.
    sh_argv: Vec<Vec<*const libc::c_char>>,
    envp: Vec<*const libc::c_char>,
    /// The descriptors to become 0, 1 and 2.
    stdio: [RawFd; 3],
    /// The first failure's errno, written by the child before it exits.
    error: AtomicI32,
}

const SH: &std::ffi::CStr = c"/bin/sh";
const STACK_BYTES: usize = 128 * 1024;

/// The child: runs on its own stack in toolshed's memory until `execve`.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Prepared` the parent keeps alive and untouched until the
    // child has executed or exited (CLONE_VFORK).
    let prepared = unsafe { &*arg.cast::<Prepared>() };
    let error = match child_setup(prepared) {
        Ok(()) => exec(prepared),
        Err(e) => e.raw_os_error().unwrap_or(libc::EINVAL),
    };
    prepared.error.store(error.max(1), Ordering::SeqCst);
    // SAFETY: ends the child without running anything of toolshed's.
    unsafe { libc::_exit(127) }
}

/// Steps 1 to 8 of the module's list.
fn child_setup(prepared: &Prepared) -> io::Result<()> {
    // SAFETY: sigaction with plain values that live for the call; NSIG bounds the loop.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..=libc::SIGRTMAX() {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut old) != 0 {
                continue;
            }
            let forced = [libc::SIGINT, libc::SIGQUIT, libc::SIGPIPE].contains(&signal);
            if old.sa_sigaction != libc::SIG_IGN || forced {
                libc::sigaction(signal, &raw const default, std::ptr::null_mut());
            }
        }
    }
    for (target, source) in prepared.stdio.iter().enumerate() {
        // SAFETY: dup2 and fcntl on descriptors the parent keeps open.
        unsafe {
            let target = target as RawFd;
            if *source == target {
                if libc::fcntl(target, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(*source, target) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    prepared.setup.run()
}

/// Step 9: returns the errno when no candidate could be executed.
fn exec(prepared: &Prepared) -> libc::c_int {
    // SAFETY: an empty mask; every pointer array is NULL-terminated and its strings live in
    // `prepared`, which outlives the call.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
        let mut last = libc::ENOENT;
        let mut denied = false;
        for (program, sh_argv) in prepared.candidates.iter().zip(&prepared.sh_argv) {
            libc::execve(
                program.as_ptr(),
                prepared.argv.as_ptr(),
                prepared.envp.as_ptr(),
            );
            last = *libc::__errno_location();
            match last {
                libc::ENOEXEC => {
                    libc::execve(SH.as_ptr(), sh_argv.as_ptr(), prepared.envp.as_ptr());
                    return *libc::__errno_location();
                }
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR => {}
                other => return other,
            }
        }
        if denied { libc::EACCES } else { last }
    }
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in the program, an argument or the environment",
        )
    })
}

/// The programs to try: the path itself, or for a bare name each `PATH` entry (the
/// current directory for an empty one), as `execvp` searches.
fn candidates(program: &OsStr, path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    let bytes = program.as_bytes();
    if bytes.is_empty() {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    if bytes.contains(&b'/') {
        return Ok(vec![c_string(bytes)?]);
    }
    let path = path.map_or(&b"/bin:/usr/bin"[..], OsStr::as_bytes);
    path.split(|b| *b == b':')
        .map(|dir| {
            let mut full = if dir.is_empty() {
                b".".to_vec()
            } else {
                dir.to_vec()
            };
            full.push(b'/');
            full.extend_from_slice(bytes);
            c_string(&full)
        })
        .collect()
}

/// A pipe: (the child's end, toolshed's end), both close-on-exec.
fn pipe(child_reads: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    Ok(if child_reads {
        (read, write)
    } else {
        (write, read)
    })
}

/// A descriptor numbered above the standard three (so that putting one stream in place
/// never overwrites the source of another), close-on-exec.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

/// The child's ends of its three streams (numbered above 2, close-on-exec) and toolshed's
/// ends of the pipes among them.
pub(super) type Streams = ([OwnedFd; 3], [Option<OwnedFd>; 3]);

/// Opens what `io` asks for each stream.
pub(super) fn streams(io: [Io; 3]) -> io::Result<Streams> {
    let mut theirs: Vec<OwnedFd> = Vec::with_capacity(3);
    let mut ours: [Option<OwnedFd>; 3] = [None, None, None];
    for (n, io) in io.into_iter().enumerate() {
        let fd = match io {
            Io::Null => rustix::fs::open(
                "/dev/null",
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?,
            Io::Piped => {
                let (child, mine) = pipe(n == 0)?;
                ours[n] = Some(mine);
                child
            }
            Io::Fd(fd) => fd.try_clone()?,
        };
        theirs.push(above_stdio(fd)?);
    }
    let theirs: [OwnedFd; 3] = theirs
        .try_into()
        .map_err(|_| io::Error::other("three streams"))?;
    Ok((theirs, ours))
}

/// Starts the child on the spawner thread.
pub(super) fn spawn(launch: Launch, setup: ChildSetup) -> io::Result<Launched> {
    let path = launch
        .env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone());
    let candidates = candidates(&launch.program, path.as_deref())?;
    let mut strings: Vec<CString> = Vec::with_capacity(launch.args.len() + 1);
    strings.push(c_string(launch.program.as_bytes())?);
    for arg in &launch.args {
        strings.push(c_string(arg.as_bytes())?);
    }
    let mut env: Vec<CString> = Vec::with_capacity(launch.env.len());
    for (name, value) in &launch.env {
        let mut entry = name.as_bytes().to_vec();
        entry.push(b'=');
        entry.extend_from_slice(value.as_bytes());
        env.push(c_string(&entry)?);
    }
    let (keep, ours) = streams([launch.stdin, launch.stdout, launch.stderr])?;
    let stdio = [
        keep[0].as_raw_fd(),
        keep[1].as_raw_fd(),
        keep[2].as_raw_fd(),
    ];
    let [stdin, stdout, stderr] = ours;
    let job = move || -> io::Result<u32> {
        let pointers = |all: &[CString]| -> Vec<*const libc::c_char> {
            all.iter()
                .map(|c| c.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        let sh_argv = candidates
            .iter()
            .map(|candidate| {
                std::iter::once(SH.as_ptr())
                    .chain(std::iter::once(candidate.as_ptr()))
                    .chain(strings[1..].iter().map(|c| c.as_ptr()))
                    .chain(std::iter::once(std::ptr::null()))
                    .collect()
            })
            .collect();
        let prepared = Prepared {
            argv: pointers(&strings),
            envp: pointers(&env),
            sh_argv,
            candidates,
            setup,
            stdio,
            error: AtomicI32::new(0),
        };
        let pid = start(&prepared)?;
        drop(keep);
        Ok(pid)
    };
    let pid = on_spawner_thread(job)??;
    Ok(Launched {
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// `clone(CLONE_VM | CLONE_VFORK)` into [`child_main`]; returns once the child has
/// executed (its pid) or failed (its error, the child reaped).
fn start(prepared: &Prepared) -> io::Result<u32> {
    // SAFETY: a fresh private mapping for the child's stack, unmapped below once the child
    // no longer runs on it (CLONE_VFORK returns after its execve or exit). Every signal is
    // blocked around the clone, so no handler of toolshed's runs in the child before it
    // has reset them all; the old mask is restored after.
    unsafe {
        let stack = libc::mmap(
            std::ptr::null_mut(),
            STACK_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        let top = stack.cast::<u8>().add(STACK_BYTES).cast::<libc::c_void>();
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(prepared).cast_mut().cast(),
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut());
        libc::munmap(stack, STACK_BYTES);
        if pid < 0 {
            return Err(clone_error);
        }
        let error = prepared.error.load(Ordering::SeqCst);
        if error != 0 {
            let mut status = 0;
            libc::waitpid(pid, &raw mut status, 0);
            return Err(io::Error::from_raw_os_error(error));
        }
        Ok(pid.unsigned_abs())
    }
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

//! Spare sandbox helpers: after a sandboxed command starts, the backend starts the helper
//! for the next one (`sandbox-spare`), which waits on a socket. The next command is then
//! handed to it — its arguments and descriptors in one message — instead of starting a
//! helper while the caller waits: the `execve` and the dynamic loader are paid ahead
//! (bench/sandbox_stages.py; docs/sandbox.md).
//!
//! A spare is a child of toolshed started like any other (its own session, the
//! parent-death signal); it takes over the rest of the child setup — cgroups, limits, the
//! streams, the terminal, the working directory — from the message. At most one waits; it
//! is killed and reaped when the backend goes. A spare that died, or a command whose
//! message would not fit, starts a helper of its own as before.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::process::{Pid, PidfdFlags, WaitId, WaitIdOptions};

use super::child::{self, ChildSetup, Io, Launch, Launched};
use crate::sandbox::{HELPER_COMMAND, SPARE_COMMAND, SPARE_MAX_FDS, SPARE_MAX_MESSAGE};

/// One spare helper, waiting.
struct Spare {
    pid: u32,
    /// `None` once handed a command: it is then that command's process.
    pidfd: Option<OwnedFd>,
    socket: OwnedFd,
    helper: PathBuf,
}

impl Drop for Spare {
    fn drop(&mut self) {
        // Not handed a command: it has nothing to finish.
        if let Some(pidfd) = self.pidfd.take() {
            let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            let _ = rustix::process::waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED);
        }
    }
}

/// The backend's spare: none, one waiting, or one being started.
#[derive(Default)]
pub(super) struct Spares {
    slot: Arc<Mutex<Slot>>,
}

#[derive(Default)]
struct Slot {
    spare: Option<Spare>,
    starting: bool,
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spares")
    }
}

impl Spares {
    /// Starts the child `launch` describes: a sandboxed command through the waiting spare
    /// when there is one for its helper, else as any child; then starts the next spare.
    pub(super) fn spawn(&self, launch: Launch, setup: ChildSetup) -> io::Result<Launched> {
        let sandboxed = launch
            .args
            .first()
            .is_some_and(|a| a.as_os_str() == HELPER_COMMAND);
        if !sandboxed || !enabled() {
            return child::spawn(launch, setup);
        }
        let helper = PathBuf::from(&launch.program);
        let waiting = self.lock().spare.take();
        let launched = match waiting.filter(|s| s.helper == helper && alive(s)) {
            Some(spare) => match hand_over(spare, launch, &setup) {
                Ok(launched) => Ok(launched),
                Err(launch) => child::spawn(*launch, setup),
            },
            None => child::spawn(launch, setup),
        };
        if launched.is_ok() {
            self.refill(helper);
        }
        launched
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts the next spare on a thread of its own, unless one waits or is on its way.
    fn refill(&self, helper: PathBuf) {
        {
            let mut slot = self.lock();
            if slot.spare.is_some() || slot.starting {
                return;
            }
            slot.starting = true;
        }
        let slot = Arc::clone(&self.slot);
        let started = std::thread::Builder::new()
            .name("toolshed-spare".into())
            .spawn(move || {
                let spare = start(&helper);
                let mut slot = slot
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                slot.starting = false;
                match spare {
                    Ok(spare) => slot.spare = Some(spare),
                    Err(e) => tracing::debug!(error = %e, "no spare sandbox helper"),
                }
            });
        if started.is_err() {
            self.lock().starting = false;
        }
    }
}

/// Spares are used unless `TOOLSHED_SANDBOX_SPARE=0` (read once): every sandboxed command
/// then starts a helper of its own.
fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("TOOLSHED_SANDBOX_SPARE").is_none_or(|v| v != "0"))
}

/// Whether the spare still waits (it may have been killed from outside).
fn alive(spare: &Spare) -> bool {
    let Some(pidfd) = &spare.pidfd else {
        return false;
    };
    let mut fds = [rustix::event::PollFd::new(
        pidfd,
        rustix::event::PollFlags::IN,
    )];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(rustix::event::poll(&mut fds, Some(&zero)), Ok(0))
}

/// Starts a spare for `helper`.
fn start(helper: &Path) -> io::Result<Spare> {
    let (ours, theirs) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?;
    let root = rustix::fs::open(
        "/",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let launch = Launch {
        program: helper.into(),
        args: vec![
            SPARE_COMMAND.into(),
            "--socket-fd".into(),
            theirs.as_raw_fd().to_string().into(),
        ],
        env: Vec::new(),
        stdin: Io::Null,
        stdout: Io::Null,
        stderr: Io::Null,
    };
    let setup = ChildSetup {
        workdir: Arc::new(root),
        cgroup_procs: None,
        tty: None,
        limits: super::limits::Join::default(),
        parent: Pid::from_raw(i32::try_from(std::process::id()).unwrap_or(0)),
        nofile: super::nofile::for_children(),
        inherit: vec![theirs.as_raw_fd()],
    };
    let launched = child::spawn(launch, setup)?;
    drop(theirs);
    let pid = Pid::from_raw(i32::try_from(launched.pid).unwrap_or(0))
        .ok_or_else(|| io::Error::other("bad process id"))?;
    let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty())?;
    Ok(Spare {
        pid: launched.pid,
        pidfd: Some(pidfd),
        socket: ours,
        helper: helper.to_path_buf(),
    })
}

/// Hands `launch` to `spare`; gives `launch` back when it cannot (the spare is then gone).
fn hand_over(
    mut spare: Spare,
    launch: Launch,
    setup: &ChildSetup,
) -> Result<Launched, Box<Launch>> {
    let mut words: Vec<u8> = Vec::new();
    let mut word = |w: &[u8]| {
        words.extend_from_slice(w);
        words.push(0);
    };
    let limit = |n: Option<u64>| n.map_or_else(|| "-".to_string(), |n| n.to_string());
    let (nproc, address_space) = setup.limits.rlimits.unwrap_or((None, None));
    let mut procs: Vec<&OwnedFd> = setup.cgroup_procs.iter().map(AsRef::as_ref).collect();
    procs.extend(setup.limits.procs.iter().map(AsRef::as_ref));
    let inherit: Vec<String> = setup.inherit.iter().map(ToString::to_string).collect();
    word(format!("tty={}", u8::from(setup.tty.is_some())).as_bytes());
    word(format!("nproc={}", limit(nproc)).as_bytes());
    word(format!("as={}", limit(address_space)).as_bytes());
    word(format!("procs={}", procs.len()).as_bytes());
    word(format!("inherit={}", inherit.join(",")).as_bytes());
    word(b"--");
    for arg in &launch.args[1..] {
        word(arg.as_bytes());
    }
    let count = 4 + setup.inherit.len() + procs.len();
    if words.len() > SPARE_MAX_MESSAGE
        || count > SPARE_MAX_FDS
        || launch.args.iter().any(|a| a.as_bytes().contains(&0))
    {
        return Err(Box::new(launch));
    }
    let Launch {
        program,
        args,
        env,
        stdin,
        stdout,
        stderr,
    } = launch;
    let give_back = |stdin, stdout, stderr| {
        Box::new(Launch {
            program: program.clone(),
            args: args.clone(),
            env: env.clone(),
            stdin,
            stdout,
            stderr,
        })
    };
    // Each stream as asked; a `Fd` stream is shared (`Arc`), so a copy can be given back.
    let copy = |io: &Io| match io {
        Io::Null => Io::Null,
        Io::Piped => Io::Piped,
        Io::Fd(fd) => Io::Fd(Arc::clone(fd)),
    };
    let (kept, ours) = match child::streams([copy(&stdin), copy(&stdout), copy(&stderr)]) {
        Ok(streams) => streams,
        Err(_) => return Err(give_back(stdin, stdout, stderr)),
    };
    let mut fds: Vec<i32> = kept.iter().map(AsRawFd::as_raw_fd).collect();
    fds.push(setup.workdir.as_raw_fd());
    fds.extend(&setup.inherit);
    fds.extend(procs.iter().map(|fd| fd.as_raw_fd()));
    if send(&spare.socket, &words, &fds).is_err() {
        return Err(give_back(stdin, stdout, stderr));
    }
    drop(kept);
    // Handed over: from here it is the command's process, owned by its supervisor.
    spare.pidfd = None;
    let pid = spare.pid;
    let [stdin, stdout, stderr] = ours;
    Ok(Launched {
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// One message with `fds` attached.
fn send(socket: &OwnedFd, payload: &[u8], fds: &[i32]) -> io::Result<()> {
    let bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE is a size computation.
    let space = unsafe { libc::CMSG_SPACE(u32::try_from(bytes).unwrap_or(u32::MAX)) };
    let mut control = vec![0u8; space as usize];
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr().cast_mut().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: msghdr is plain data; the buffers it points to outlive the call, and the
    // control buffer has room for one header and `fds` (CMSG_SPACE).
    unsafe {
        let mut header: libc::msghdr = std::mem::zeroed();
        header.msg_iov = &raw mut iov;
        header.msg_iovlen = 1;
        header.msg_control = control.as_mut_ptr().cast();
        header.msg_controllen = control.len();
        let cmsg = libc::CMSG_FIRSTHDR(&raw const header);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(u32::try_from(bytes).unwrap_or(u32::MAX)) as usize;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        let sent = libc::sendmsg(socket.as_raw_fd(), &raw const header, libc::MSG_NOSIGNAL);
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        if usize::try_from(sent).unwrap_or(0) != payload.len() {
            return Err(io::Error::other("the message to the spare was cut short"));
        }
    }
    Ok(())
}

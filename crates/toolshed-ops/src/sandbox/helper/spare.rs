//! The spare helper: `toolshed-sandbox sandbox-spare --socket-fd N`, started by the host
//! ahead of its next sandboxed command, waits for that command on a socket. Starting the
//! helper (an `execve`, the dynamic loader) is then done before the command is asked
//! for, not while the caller waits (bench/sandbox_stages.py, docs/sandbox.md).
//!
//! The host sends one message: a header, the helper's arguments, and the command's
//! descriptors. The spare takes them as the host's child setup would have given them
//! (standard streams, working directory, cgroups, limits, controlling terminal, the
//! descriptors the arguments name, at the numbers they name) and goes on as
//! `sandbox-exec` with those arguments. End of file instead: the host needs no spare any
//! more, and it exits.
//!
//! The message: NUL-separated words, `tty=0|1`, `nproc=N|-`, `as=N|-`, `procs=N`,
//! `inherit=FD,FD,…` (the host's numbers of the descriptors the arguments name), `--`, then
//! the arguments after `sandbox-exec`. The descriptors: stdin, stdout, stderr, the working
//! directory, the inherited ones in that order, then `procs` files (`cgroup.procs` to
//! join).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// The largest message a spare takes (the arguments are paths; the host runs a command
/// with more through a helper of its own).
pub(crate) const MAX_MESSAGE: usize = 128 * 1024;
/// The most descriptors in one message.
pub(crate) const MAX_FDS: usize = 64;
/// Where received descriptors are moved first, above any number the arguments name.
const HIGH: libc::c_int = 1000;

/// Why a spare could not take its command.
#[derive(Debug, thiserror::Error)]
pub(super) enum SpareError {
    /// Started without `--socket-fd N`.
    #[error("usage: sandbox-spare --socket-fd N")]
    Usage,
    /// The message is not what the host writes.
    #[error("the spare's message: {0}")]
    Message(String),
    /// A system call failed.
    #[error("{what}: {error}")]
    Os {
        /// What it was for.
        what: &'static str,
        /// The error.
        error: std::io::Error,
    },
}

/// The last OS error, for `what`.
fn os(what: &'static str) -> SpareError {
    SpareError::Os {
        what,
        error: std::io::Error::last_os_error(),
    }
}

/// What the header says.
#[derive(Default)]
struct Header {
    tty: bool,
    nproc: Option<u64>,
    address_space: Option<u64>,
    procs: usize,
    inherit: Vec<libc::c_int>,
}

/// Waits for the command on the socket named by `--socket-fd N`, sets up as the host's
/// child setup would, and returns the helper's arguments (after `sandbox-exec`). Exits
/// quietly when the host closes the socket.
pub(super) fn wait(args: &[OsString]) -> Result<Vec<OsString>, SpareError> {
    let socket: libc::c_int = match args {
        [flag, fd] if flag == "--socket-fd" => fd
            .to_str()
            .and_then(|fd| fd.parse().ok())
            .filter(|fd| *fd > 2)
            .ok_or(SpareError::Usage)?,
        _ => return Err(SpareError::Usage),
    };
    let socket = move_high(socket)?;
    let (payload, fds) = receive(socket)?;
    // SAFETY: the socket is ours; nothing else comes through it.
    unsafe { libc::close(socket) };
    if payload.is_empty() && fds.is_empty() {
        std::process::exit(0);
    }
    let words: Vec<&[u8]> = payload
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .collect();
    let split = words
        .iter()
        .position(|w| *w == b"--")
        .ok_or_else(|| SpareError::Message("no --".into()))?;
    let header = header(&words[..split])?;
    let helper_args: Vec<OsString> = words[split + 1..]
        .iter()
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect();
    let needed = 4 + header.inherit.len() + header.procs;
    if fds.len() != needed {
        return Err(SpareError::Message(format!(
            "{} descriptors where its header names {needed}",
            fds.len()
        )));
    }
    set_up(&header, &fds)?;
    Ok(helper_args)
}

fn header(words: &[&[u8]]) -> Result<Header, SpareError> {
    let bad = |what: String| SpareError::Message(what);
    let mut header = Header::default();
    let limit = |value: &str| -> Result<Option<u64>, SpareError> {
        if value == "-" {
            Ok(None)
        } else {
            value
                .parse()
                .map(Some)
                .map_err(|_| bad(format!("the limit {value} is not a number")))
        }
    };
    for word in words {
        let word =
            std::str::from_utf8(word).map_err(|_| bad("a header that is not text".into()))?;
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| bad(format!("the header word {word} has no =")))?;
        match key {
            "tty" => header.tty = value == "1",
            "nproc" => header.nproc = limit(value)?,
            "as" => header.address_space = limit(value)?,
            "procs" => {
                header.procs = value
                    .parse()
                    .map_err(|_| bad(format!("procs={value} is not a count")))?;
            }
            "inherit" => {
                header.inherit = value
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(|v| v.parse().ok().filter(|fd| *fd > 2 && *fd < HIGH))
                    .collect::<Option<_>>()
                    .ok_or_else(|| bad(format!("inherit={value} is not a list of descriptors")))?;
            }
            _ => return Err(bad(format!("an unknown header word {key}"))),
        }
    }
    Ok(header)
}

/// The host's child setup, for the command the spare became: cgroups and limits first
/// (before anything is started that they must hold), then the streams, the terminal, the
/// working directory and the inherited descriptors at their numbers.
fn set_up(header: &Header, fds: &[libc::c_int]) -> Result<(), SpareError> {
    let (stdio, rest) = fds.split_at(3);
    let (cwd, rest) = (rest[0], &rest[1..]);
    let (inherited, procs) = rest.split_at(header.inherit.len());
    // SAFETY: plain system calls on descriptors received for this, and on 0 to 2.
    unsafe {
        for fd in procs {
            if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(os("joining the command's cgroup"));
            }
        }
        for (resource, value) in [
            (libc::RLIMIT_NPROC, header.nproc),
            (libc::RLIMIT_AS, header.address_space),
        ] {
            if let Some(n) = value {
                let limit = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(resource, &raw const limit) != 0 {
                    return Err(os("a resource limit"));
                }
            }
        }
        for (target, source) in stdio.iter().enumerate() {
            if libc::dup2(*source, target as libc::c_int) < 0 {
                return Err(os("the standard streams"));
            }
        }
        if header.tty && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
            return Err(os("the controlling terminal"));
        }
        if libc::fchdir(cwd) != 0 {
            return Err(os("the working directory"));
        }
        for (target, source) in header.inherit.iter().zip(inherited) {
            if libc::dup2(*source, *target) < 0 {
                return Err(os("an inherited descriptor"));
            }
        }
        for fd in fds {
            libc::close(*fd);
        }
    }
    Ok(())
}

/// `fd` moved above the numbers the arguments may name, close-on-exec.
fn move_high(fd: libc::c_int) -> Result<libc::c_int, SpareError> {
    // SAFETY: fcntl and close on a descriptor this process owns.
    unsafe {
        let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, HIGH);
        if high < 0 {
            return Err(os("moving a descriptor"));
        }
        libc::close(fd);
        Ok(high)
    }
}

/// One message and its descriptors (each moved above [`HIGH`]); empty on end of file.
fn receive(socket: libc::c_int) -> Result<(Vec<u8>, Vec<libc::c_int>), SpareError> {
    let mut payload = vec![0u8; MAX_MESSAGE];
    // SAFETY: CMSG_SPACE is a size computation.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * size_of::<libc::c_int>()) as u32) };
    let mut control = vec![0u8; space as usize];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: msghdr is plain data; the buffers it points to outlive the call.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &raw mut iov;
    header.msg_iovlen = 1;
    header.msg_control = control.as_mut_ptr().cast();
    header.msg_controllen = control.len();
    let n = loop {
        // SAFETY: `header` describes buffers owned here.
        let n = unsafe { libc::recvmsg(socket, &raw mut header, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break n;
        }
    };
    if n < 0 {
        return Err(os("the spare's socket"));
    }
    let mut fds = Vec::new();
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // msg_controllen.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&raw const header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / size_of::<libc::c_int>();
                for i in 0..count {
                    fds.push(data.add(i).read_unaligned());
                }
            }
            cmsg = libc::CMSG_NXTHDR(&raw const header, cmsg);
        }
    }
    if header.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
        return Err(SpareError::Message("cut short".into()));
    }
    let fds = fds.into_iter().map(move_high).collect::<Result<_, _>>()?;
    payload.truncate(usize::try_from(n).unwrap_or(0));
    Ok((payload, fds))
}

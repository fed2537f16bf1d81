//! The sandbox helper: the toolshed binary run as `toolshed sandbox-exec <policy> -- <cmd…>`.
//!
//! Three processes, each single-threaded:
//!
//! - the **outer** process (the host's child) enters the namespaces, builds the mounts, and
//!   waits; it ends as the command ended (same exit code, or the same signal raised), so
//!   the host cannot tell it from the command;
//! - the namespace's **first process** (pid 1 inside) mounts a fresh `/proc`, brings up the
//!   loopback of a private network unless it joined the keeper's, reaps orphans and, once the command has ended, reports
//!   its status to the outer process through a pipe and exits — which ends everything left
//!   in the namespace;
//! - the **command** drops its capabilities, restricts itself (Landlock, then seccomp) and
//!   executes the program.
//!
//! The outer and first processes block the signals they might get and wait for them with
//! `sigwaitinfo`, so nothing runs in a signal handler; the command unblocks them before it
//! executes. A setup failure prints `toolshed sandbox: <what>` on stderr and exits with
//! [`SETUP_FAILED`].

#![allow(unsafe_code)]

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{NetworkMode, SETUP_FAILED, SandboxMode, rules};

mod handover;
mod mounts;
mod network;
pub(crate) mod spare;

use handover::{
    check_own_environment, close_other_descriptors, left_behind, read_environment, write_report,
};
use mounts::{mount, remount_read_only, scope_writes, writable};
use network::{join_network, keeper, loopback_up};

/// Set when `TOOLSHED_SANDBOX_TIMINGS` is in the helper's own environment: each stage of the
/// setup then writes `toolshed sandbox: at STAGE NS` (CLOCK_MONOTONIC) to stderr, for
/// `bench/sandbox_stages.py`'s breakdown of what a sandboxed spawn costs.
static TIMINGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes one stage mark when timings were asked for: one `write`, safe after a fork.
fn mark(stage: &str) {
    if !TIMINGS.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    // SAFETY: `now` is a valid out pointer; the line's bytes go to stderr.
    unsafe {
        let mut now: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut now);
        let nanos = i128::from(now.tv_sec) * 1_000_000_000 + i128::from(now.tv_nsec);
        let line = format!("toolshed sandbox: at {stage} {nanos}\n");
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}

/// Where the egress proxy's socket appears inside a filtered sandbox.
const EGRESS_SOCKET: &str = "/run/toolshed/egress.sock";

/// The policy as the helper's arguments carry it.
#[derive(Debug, Default)]
struct Args {
    mode: SandboxMode,
    network: NetworkMode,
    workspace: PathBuf,
    writable: Vec<PathBuf>,
    denied: Vec<PathBuf>,
    /// Brought back read-only under the private mounts.
    visible: Vec<PathBuf>,
    /// Directories inside the hidden paths shown read-only (a plugin's own directory in
    /// toolshed's data dir).
    revealed: Vec<PathBuf>,
    /// Inside the workspace, kept read-only (policy rules on writes).
    read_only: Vec<PathBuf>,
    /// Inside the workspace, the only paths left writable (policy rules on writes).
    write_only: Vec<PathBuf>,
    tmp_bytes: u64,
    min_landlock_abi: u32,
    egress: Option<PathBuf>,
    inbound: Option<PathBuf>,
    /// The user and network namespaces of the host's network keeper, as inherited
    /// descriptors: joined instead of creating a network per command.
    join: Option<(libc::c_int, libc::c_int)>,
    /// An inherited descriptor holding the command's environment (`NAME=VALUE` entries
    /// ended by NULs): given to the command at its `execve`, never the helper's own.
    env_fd: Option<libc::c_int>,
    /// The command's environment, read from `env_fd` (else the helper's own).
    env: Option<Vec<CString>>,
    /// An inherited descriptor to write the report to: what the command left in its
    /// private temporary directories.
    report_fd: Option<libc::c_int>,
    command: Vec<OsString>,
}

/// When this process was started as the sandbox helper (`<exe> sandbox-exec …`), runs the
/// command inside the sandbox and exits as it did; otherwise returns at once. Call it first
/// thing in `main`, before any thread is started.
pub fn run_if_asked() {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == super::NETWORK_COMMAND) {
        if let Err(e) = check_own_environment() {
            fail(&e);
        }
        match keeper(&args[2..]) {
            Ok(()) => std::process::exit(0),
            Err(e) => fail(&e),
        }
    }
    let spare = args.get(1).is_some_and(|a| a == super::SPARE_COMMAND);
    if !spare && !super::asks_for_helper(&args) {
        return;
    }
    if let Err(e) = check_own_environment() {
        fail(&e);
    }
    let helper_args = if spare {
        match spare::wait(&args[2..]) {
            Ok(args) => args,
            Err(e) => fail(&e.to_string()),
        }
    } else {
        args[2..].to_vec()
    };
    if std::env::var_os("TOOLSHED_SANDBOX_TIMINGS").is_some() {
        TIMINGS.store(true, std::sync::atomic::Ordering::Relaxed);
        mark("start");
    }
    let mut parsed = match parse(&helper_args) {
        Ok(parsed) => parsed,
        Err(e) => fail(&e),
    };
    if let Some(fd) = parsed.env_fd.take() {
        match read_environment(fd) {
            Ok(env) => parsed.env = Some(env),
            Err(e) => fail(&e),
        }
    }
    let mut keep: Vec<libc::c_int> = parsed.join.map(|(u, n)| vec![u, n]).unwrap_or_default();
    keep.extend(parsed.report_fd);
    close_other_descriptors(&keep);
    mark("parsed");
    match outer(parsed) {
        Ok(never) => match never {},
        Err(e) => fail(&e),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("toolshed sandbox: {message}");
    std::process::exit(SETUP_FAILED)
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        if flag == "--" {
            parsed.command = rest.cloned().collect();
            break;
        }
        let value = rest
            .next()
            .ok_or_else(|| format!("{} needs a value", flag.to_string_lossy()))?;
        let text = || value.to_string_lossy().into_owned();
        match flag.to_str() {
            Some("--mode") => {
                parsed.mode = SandboxMode::parse(&text()).map_err(|e| e.to_string())?
            }
            Some("--network") => {
                parsed.network = NetworkMode::parse(&text()).map_err(|e| e.to_string())?
            }
            Some("--workspace") => parsed.workspace = PathBuf::from(value),
            Some("--write") => parsed.writable.push(PathBuf::from(value)),
            Some("--deny") => parsed.denied.push(PathBuf::from(value)),
            Some("--show") => parsed.visible.push(PathBuf::from(value)),
            Some("--reveal") => parsed.revealed.push(PathBuf::from(value)),
            Some("--read-only") => parsed.read_only.push(PathBuf::from(value)),
            Some("--write-only") => parsed.write_only.push(PathBuf::from(value)),
            Some("--egress") => parsed.egress = Some(PathBuf::from(value)),
            Some("--join") => {
                let fds: Vec<libc::c_int> = text()
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|_| format!("--join {} is not USER_FD,NET_FD", text()))?;
                match fds[..] {
                    [user, net] if user > 2 && net > 2 => parsed.join = Some((user, net)),
                    _ => return Err(format!("--join {} is not USER_FD,NET_FD", text())),
                }
            }
            Some("--inbound") => parsed.inbound = Some(PathBuf::from(value)),
            Some(name @ ("--report-fd" | "--env-fd")) => {
                let fd = text()
                    .parse()
                    .ok()
                    .filter(|fd| *fd > 2)
                    .ok_or_else(|| format!("{name} {} is not a descriptor", text()))?;
                if name == "--env-fd" {
                    parsed.env_fd = Some(fd);
                } else {
                    parsed.report_fd = Some(fd);
                }
            }
            Some("--min-landlock-abi") => {
                parsed.min_landlock_abi = text()
                    .parse()
                    .map_err(|_| format!("--min-landlock-abi {} is not a number", text()))?;
            }
            Some("--tmp-bytes") => {
                parsed.tmp_bytes = text()
                    .parse()
                    .map_err(|_| format!("--tmp-bytes {} is not a size", text()))?;
            }
            _ => return Err(format!("unknown option {}", flag.to_string_lossy())),
        }
    }
    if parsed.command.is_empty() {
        return Err("no command after --".into());
    }
    if parsed.mode == SandboxMode::FullAccess {
        return Err("full-access runs commands without the helper".into());
    }
    if !parsed.workspace.is_absolute() {
        return Err("--workspace must be an absolute path".into());
    }
    if parsed.join.is_some() {
        if parsed.network == NetworkMode::On || parsed.egress.is_some() {
            return Err("--join goes with --network off or filtered, without --egress".into());
        }
    } else if (parsed.network == NetworkMode::Filtered) != parsed.egress.is_some() {
        return Err("--egress goes with --network filtered, and only with it".into());
    }
    Ok(parsed)
}

/// The last OS error, as text.
fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn cstring(bytes: &[u8]) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| "a NUL byte in an argument or path".to_string())
}

fn c_path(path: &Path) -> Result<CString, String> {
    cstring(path.as_os_str().as_bytes())
}

fn threads() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// A signal set of every signal the helper processes wait for instead of handling.
fn waited_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for signal in [
            libc::SIGCHLD,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGTSTP,
            libc::SIGTTIN,
            libc::SIGTTOU,
            libc::SIGPIPE,
            libc::SIGUSR1,
            libc::SIGUSR2,
            libc::SIGALRM,
            libc::SIGWINCH,
        ] {
            libc::sigaddset(&raw mut set, signal);
        }
        set
    }
}

/// Waits for one of `set` (blocked); returns its number.
fn wait_signal(set: &libc::sigset_t) -> libc::c_int {
    loop {
        // SAFETY: `set` is an initialised signal set; no siginfo is asked for.
        let signal = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
        if signal > 0 {
            return signal;
        }
    }
}

fn write_file(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

/// The outer process: namespaces, mounts, then waits for the namespace to end.
fn outer(args: Args) -> Result<std::convert::Infallible, String> {
    if threads() != Some(1) {
        return Err("the helper must start single-threaded".into());
    }
    // SAFETY: plain system calls without pointers.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut pipe = [0 as libc::c_int; 2];
    // SAFETY: `pipe` has room for the two descriptors.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", os_error()));
    }
    let (status_read, status_write) = (pipe[0], pipe[1]);

    // The socket through which the host reaches the command's own loopback (its network
    // namespace has no other way in), bound here, where the host sees the path.
    let inbound = match (&args.inbound, args.network) {
        (Some(path), NetworkMode::Off | NetworkMode::Filtered) => Some(
            std::os::unix::net::UnixListener::bind(path)
                .map_err(|e| format!("the inbound socket {}: {e}", path.display()))?,
        ),
        _ => None,
    };
    // The working directory the host chose, by path: after the mounts it is entered again,
    // so that relative paths go through them (the old directory sits under /tmp's cover).
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    let mut flags =
        libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if let Some((user, net)) = args.join {
        join_network(user, net)?;
    } else {
        flags |= libc::CLONE_NEWUSER;
        if args.network != NetworkMode::On {
            flags |= libc::CLONE_NEWNET;
        }
    }
    // SAFETY: no pointers; the process is single-threaded (checked above).
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!(
            "cannot create the namespaces ({}): unprivileged user namespaces may be disabled \
             (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone or \
             kernel.apparmor_restrict_unprivileged_userns)",
            os_error()
        ));
    }
    if args.join.is_none() {
        write_file("/proc/self/setgroups", "deny")?;
        write_file("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
        write_file("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
    }
    mark("namespaces");

    let none = "none";
    mount(
        none,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    // What stays visible under the private mounts: the workspace and the writable roots
    // (opened in the new mount namespace: a bind mount cannot cross namespaces).
    let mut keep: Vec<(PathBuf, OwnedFd)> = Vec::new();
    for path in std::iter::once(&args.workspace).chain(&args.writable) {
        let fd = rustix::fs::open(
            path,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        keep.push((path.clone(), fd));
    }
    // What the command needs that lives under the private mounts (its program's
    // environment, a configured server's files), opened now to be brought back
    // read-only; parents before what is inside them. One that cannot be opened is left
    // out: the command then fails as it would on a host without it.
    let mut visible: Vec<(PathBuf, OwnedFd)> = Vec::new();
    let mut shown = args.visible.clone();
    shown.sort_by_key(|p| p.components().count());
    for path in shown {
        if !path.is_absolute() {
            continue;
        }
        if let Ok(fd) = rustix::fs::open(
            &path,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) {
            visible.push((path, fd));
        }
    }
    // Directories inside the hidden paths the command may read, opened now: once the
    // hidden paths are covered they are brought back, alone, read-only.
    let revealed = mounts::open_revealed(&args);
    // The egress proxy's socket, brought in at a fixed place under the private /run.
    let egress = match &args.egress {
        Some(path) => Some(
            rustix::fs::open(
                path,
                rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(|e| format!("the egress proxy's socket {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let size = args.tmp_bytes.max(1 << 20);
    for (dir, mode, size) in [
        ("/tmp", "1777", size),
        ("/dev/shm", "1777", size),
        ("/run", "755", 1 << 20),
    ] {
        if Path::new(dir).is_dir() {
            mount(
                "tmpfs",
                Path::new(dir),
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(&format!("mode={mode},size={size}")),
            )?;
        }
    }
    // Bring back, read-only, what the command needs from under the private mounts; the
    // workspace and writable roots come after, so they stay writable inside these.
    for (path, fd) in &visible {
        let seen = rustix::fs::stat(path).ok();
        let kept = rustix::fs::fstat(fd).map_err(|e| format!("{}: {e}", path.display()))?;
        if seen.is_some_and(|s| s.st_dev == kept.st_dev && s.st_ino == kept.st_ino) {
            continue;
        }
        let is_dir = kept.st_mode & libc::S_IFMT == libc::S_IFDIR;
        if is_dir {
            std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
        } else {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(path, b"").map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(&source, path, None, libc::MS_BIND | libc::MS_REC, None)?;
        remount_read_only(path)?;
    }
    drop(visible);
    // Bring back what the private mounts covered (a workspace under /tmp, say).
    for (path, fd) in &keep {
        let seen = rustix::fs::stat(path).ok();
        let kept = rustix::fs::fstat(fd).map_err(|e| format!("{}: {e}", path.display()))?;
        if seen.is_some_and(|s| s.st_dev == kept.st_dev && s.st_ino == kept.st_ino) {
            continue;
        }
        std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(&source, path, None, libc::MS_BIND | libc::MS_REC, None)?;
        // Under the writable private /tmp, Landlock's write rule for /tmp would cover it:
        // outside workspace-write the mount itself must refuse writes.
        if args.mode != SandboxMode::WorkspaceWrite {
            remount_read_only(path)?;
        }
    }
    drop(keep);
    if args.mode == SandboxMode::WorkspaceWrite {
        scope_writes(&args)?;
    }
    if let Some(fd) = &egress {
        let inside = Path::new(EGRESS_SOCKET);
        std::fs::create_dir_all("/run/toolshed").map_err(|e| format!("/run/toolshed: {e}"))?;
        std::fs::write(inside, b"").map_err(|e| format!("{EGRESS_SOCKET}: {e}"))?;
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(&source, inside, None, libc::MS_BIND, None)?;
    }
    drop(egress);
    // Hide what must stay out of reach, whatever the mode.
    for path in &args.denied {
        // A mount target: the mount itself covers whatever is there now.
        #[allow(clippy::disallowed_methods)]
        let Ok(path) = path.canonicalize() else {
            continue; // missing: nothing to hide
        };
        if path.is_dir() {
            let inside: Vec<&(PathBuf, OwnedFd)> = revealed
                .iter()
                .filter(|(shown, _)| shown.starts_with(&path) && shown != &path)
                .collect();
            if inside.is_empty() {
                mount(
                    "tmpfs",
                    &path,
                    Some("tmpfs"),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    Some("mode=000,size=4k"),
                )?;
            } else {
                mounts::hide_but(&path, &inside)?;
            }
        } else {
            mount("/dev/null", &path, None, libc::MS_BIND, None)?;
            remount_read_only(&path)?;
        }
    }

    // Revealed directories no hidden path covered (under the private /tmp, say) are
    // brought back the same way.
    for (path, fd) in &revealed {
        mounts::bring_back(path, fd)?;
    }
    drop(revealed);
    std::env::set_current_dir(&cwd)
        .map_err(|e| format!("the working directory {}: {e}", cwd.display()))?;

    mark("mounts");
    let set = waited_signals();
    // SAFETY: blocks the waited signals; the command unblocks them before it executes.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut()) };
    // SAFETY: single-threaded, so the child may run any code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", os_error()));
    }
    if pid == 0 {
        // SAFETY: the child's copy of the write end only.
        unsafe { libc::close(status_read) };
        match first_process(&args, status_write, &set, inbound) {
            Ok(never) => match never {},
            Err(e) => fail(&e),
        }
    }
    // SAFETY: the outer process keeps only the read end.
    unsafe { libc::close(status_write) };
    // The first process writes the command's status as soon as the command has ended; the
    // outer process ends with it at once, without waiting for the namespace to be torn
    // down (what is left in it dies with the first process). End of file instead: the
    // first process died without reporting (killed): end as it ended.
    let mut reported = [0u8; 4];
    let n = loop {
        // SAFETY: reads at most 4 bytes into `reported`.
        let n = unsafe { libc::read(status_read, reported.as_mut_ptr().cast(), 4) };
        if n >= 0 || os_error().kind() != std::io::ErrorKind::Interrupted {
            break n;
        }
    };
    mark("status");
    if n == 4 {
        end_as(i32::from_ne_bytes(reported));
    }
    let mut status = 0;
    // SAFETY: `status` is a valid out pointer; the first process is our child.
    unsafe { libc::waitpid(pid, &raw mut status, 0) };
    end_as(status)
}

/// Ends this process the way a wait status says: the same exit code, or the same signal.
fn end_as(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status));
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: resets one signal to its default action, unblocks it and raises it; no
        // core file is written for it (the command's own would have been, inside).
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &raw const none);
            libc::signal(signal, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut only);
            libc::sigaddset(&raw mut only, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &raw const only, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        std::process::exit(128 + signal);
    }
    std::process::exit(SETUP_FAILED)
}

/// The namespace's first process: `/proc`, loopback, the command, then reaping.
fn first_process(
    args: &Args,
    status_write: libc::c_int,
    set: &libc::sigset_t,
    inbound: Option<std::os::unix::net::UnixListener>,
) -> Result<std::convert::Infallible, String> {
    // SAFETY: plain prctl without pointers.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    mount(
        "proc",
        Path::new("/proc"),
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )?;
    // A joined network is up already, its bridge run by the keeper.
    if args.network != NetworkMode::On && args.join.is_none() {
        loopback_up()?;
    }
    mark("proc");
    // The proxy's address inside, listening before the command starts.
    let bridge = match args.network {
        NetworkMode::Filtered if args.join.is_none() => Some(
            std::net::TcpListener::bind(("127.0.0.1", super::PROXY_PORT)).map_err(|e| {
                format!("the egress bridge on 127.0.0.1:{}: {e}", super::PROXY_PORT)
            })?,
        ),
        _ => None,
    };
    let ruleset = rules::landlock(&writable(args), args.min_landlock_abi)?;
    mark("landlock");
    let filters = rules::seccomp()?;
    mark("seccomp");
    let argv: Vec<CString> = args
        .command
        .iter()
        .map(|a| cstring(a.as_bytes()))
        .collect::<Result<_, _>>()?;

    // SAFETY: single-threaded, so the child may run any code.
    let command = unsafe { libc::fork() };
    if command < 0 {
        return Err(format!("fork: {}", os_error()));
    }
    if command == 0 {
        // SAFETY: the command does not report its own status, nor write the report.
        unsafe {
            libc::close(status_write);
            if let Some(fd) = args.report_fd {
                libc::close(fd);
            }
        }
        mark("forked");
        drop(bridge);
        drop(inbound);
        let proxied = args.network == NetworkMode::Filtered;
        let error = run_command(ruleset, &filters, &argv, args.env.as_deref(), proxied);
        eprintln!("toolshed sandbox: {error}");
        // SAFETY: ends the forked child without running the parent's exit handlers.
        unsafe { libc::_exit(SETUP_FAILED) };
    }
    // Threads from here on: the command was forked while this process had one.
    if let Some(listener) = bridge {
        std::thread::spawn(move || super::egress::bridge(listener, EGRESS_SOCKET.into()));
    }
    if let Some(listener) = inbound {
        std::thread::spawn(move || super::egress::inbound(listener));
    }
    loop {
        if wait_signal(set) != libc::SIGCHLD {
            continue;
        }
        loop {
            let mut status = 0;
            // SAFETY: `status` is a valid out pointer.
            let reaped = unsafe { libc::waitpid(-1, &raw mut status, libc::WNOHANG) };
            if reaped <= 0 {
                break;
            }
            if reaped == command {
                mark("reaped");
                if let Some(fd) = args.report_fd {
                    write_report(fd, &left_behind(args));
                }
                let bytes = status.to_ne_bytes();
                // SAFETY: writes 4 bytes from `bytes` and ends the namespace.
                unsafe {
                    libc::write(status_write, bytes.as_ptr().cast(), 4);
                    libc::_exit(0);
                }
            }
        }
    }
}

/// The command's process: capabilities, Landlock, seccomp, exec. Returns only on failure.
fn run_command(
    ruleset: landlock::RulesetCreated,
    filters: &[seccompiler::BpfProgram],
    argv: &[CString],
    env: Option<&[CString]>,
    proxied: bool,
) -> String {
    // Capabilities: none, and none regained by executing a program (the bounding set is
    // empty, so even uid 0 inside gets nothing).
    for cap in 0..=63 {
        // SAFETY: plain prctl; capabilities the kernel does not know fail harmlessly.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap) };
    }
    // SAFETY: plain prctl.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    mark("caps");
    if let Err(e) = rules::restrict(ruleset) {
        return e;
    }
    mark("landlocked");
    if let Err(e) = rules::apply_seccomp(filters) {
        return e;
    }
    // SAFETY: single-threaded; the variables are set before the program starts.
    unsafe {
        // The command's own environment, now that the sandbox is in place.
        if let Some(env) = env {
            let own: Vec<OsString> = std::env::vars_os().map(|(name, _)| name).collect();
            for name in own {
                std::env::remove_var(name);
            }
            for entry in env {
                let bytes = entry.as_bytes();
                if let Some(at) = bytes.iter().position(|b| *b == b'=').filter(|at| *at > 0) {
                    std::env::set_var(
                        std::ffi::OsStr::from_bytes(&bytes[..at]),
                        std::ffi::OsStr::from_bytes(&bytes[at + 1..]),
                    );
                }
            }
        }
        std::env::set_var("TMPDIR", "/tmp");
        if proxied {
            let proxy = format!("http://127.0.0.1:{}", super::PROXY_PORT);
            for name in [
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "http_proxy",
                "https_proxy",
                "ALL_PROXY",
                "all_proxy",
            ] {
                std::env::set_var(name, &proxy);
            }
            for name in ["NO_PROXY", "no_proxy"] {
                std::env::remove_var(name);
            }
        }
    }
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    mark("restricted");
    // SAFETY: SIGPIPE back to its default action (the host starts the helper with it
    // there, and Rust's runtime, when it ran, ignored it: the command would inherit that);
    // an empty mask unblocks everything the helper blocked; `pointers` is a NULL-terminated
    // array of strings that outlive the call.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
        libc::execvp(pointers[0], pointers.as_ptr());
    }
    let error = os_error();
    let program = argv[0].to_string_lossy();
    let code = if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    // Exit codes like a shell's for a program it cannot run.
    eprintln!("toolshed sandbox: cannot run `{program}`: {error}");
    // SAFETY: ends the forked child without running exit handlers.
    unsafe { libc::_exit(code) }
}

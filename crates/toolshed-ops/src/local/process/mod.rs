//! `LocalProcessOps`: children of the toolshed process itself.
//!
//! A child is started on a dedicated thread without copying toolshed's memory ([`child`]), put in its own session, tied to
//! toolshed with a parent-death signal, placed in its own cgroup when the kernel allows
//! ([`tree`]), and given its working directory as a descriptor the workspace jail opened.
//! A supervisor thread per child ([`supervisor`]) then owns its descriptors: it reads
//! output into the bounded buffers of the [`Process`], writes queued input, notices the
//! exit through a pidfd, drains, and carries out stops. The handle talks to it through
//! shared state and an eventfd, so nothing the caller does can block on the child.

mod child;
mod limits;
mod nofile;
mod owner;
mod pty;
mod spare;
mod supervisor;
mod tree;
mod view;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use rustix::event::EventfdFlags;
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags};

pub use limits::ResourceLimits;
pub use nofile::{DescriptorLimit, descriptor_limit, raise_descriptor_limit};
pub use tree::{TreeKillMethod, release_cgroups};

use super::LocalOps;
use crate::error::OpsError;
use crate::process::{
    Process, ProcessOps, Shared, SpawnRequest, State, Stdin, StdinState, Stop, StopReason, Tty,
    clean_env,
};
use crate::sandbox::{
    EgressProxy, Enforcement, NetworkKeeper, NetworkMode, Sandbox, SandboxMode, SandboxSetting,
};
use child::ChildSetup;
use child::{Io, Launch};
use supervisor::Supervisor;
use tree::{ProcessTree, Tracker};
use view::{scoped_paths, visible_roots};

/// How the local backend runs children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessConfig {
    /// Variables kept from toolshed's environment although their names look secret
    /// (exact names).
    pub env_allow: Vec<String>,
    /// The environment children start from before cleaning; `None`: toolshed's own, as it
    /// is when the backend is created.
    pub base_env: Option<Vec<(String, String)>>,
    /// How long output is still read after the child exits, while descendants hold it open.
    pub drain: Duration,
    /// The grace period when the last handle of a running process is dropped.
    pub drop_grace: Duration,
    /// The tree-kill method; `None` picks the best the system allows. Asking for
    /// [`TreeKillMethod::Cgroup`] where it is unavailable is an error, never a silent
    /// fallback.
    pub tree_kill: Option<TreeKillMethod>,
    /// The sandbox every command runs in; `None`: none (full access).
    pub sandbox: Option<SandboxSetting>,
    /// What each child's tree may use.
    pub limits: ResourceLimits,
}

impl Default for ProcessConfig {
    fn default() -> Self {
        Self {
            env_allow: Vec::new(),
            base_env: None,
            drain: Duration::from_secs(2),
            drop_grace: Duration::from_millis(500),
            tree_kill: None,
            sandbox: None,
            limits: ResourceLimits::default(),
        }
    }
}

/// Runs children on this machine, in the workspace of a [`LocalOps`].
pub struct LocalProcessOps {
    files: Arc<LocalOps>,
    config: ProcessConfig,
    base_env: Vec<(String, String)>,
    method: TreeKillMethod,
    fallback_reason: Option<String>,
    /// Every child with a live handle, for [`ProcessOps::kill_all`].
    live: Mutex<Vec<Weak<Shared>>>,
    /// The sandbox as it runs here (with its egress proxy, when filtered), checked once at
    /// the first command.
    sandbox_probe: OnceLock<Result<Ready, OpsError>>,
    /// Where the inbound sockets of sandboxed children with a network of their own go.
    sockets: OnceLock<Result<SocketDir, String>>,
    /// The sandbox helper started ahead for the next sandboxed command.
    spares: spare::Spares,
}

/// A private directory for sockets, removed with the backend.
#[derive(Debug)]
struct SocketDir {
    dir: PathBuf,
    next: std::sync::atomic::AtomicU64,
}

impl SocketDir {
    fn create() -> Result<Self, String> {
        let dir = crate::sandbox::private_dir("toolshed-sockets")
            .map_err(|e| format!("a private directory for sockets: {e}"))?;
        Ok(Self {
            dir,
            next: std::sync::atomic::AtomicU64::new(0),
        })
    }

    fn next(&self) -> PathBuf {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.dir.join(format!("in-{n}.sock"))
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A sandbox seen to work here.
#[derive(Debug)]
struct Ready {
    sandbox: Sandbox,
    enforcement: Enforcement,
    /// The private network commands join (network = "off" or "filtered"); dropped before
    /// the egress proxy it bridges to.
    _keeper: Option<NetworkKeeper>,
    /// Running while the backend lives (network = "filtered").
    _egress: Option<EgressProxy>,
}

impl std::fmt::Debug for LocalProcessOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProcessOps")
            .field("root", &self.files.root())
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl LocalProcessOps {
    /// Where a command asking for sandbox `mode` (`None`: the configured one) runs: `None`
    /// with full access, else the working sandbox and the mode to confine it to.
    fn plan(
        &self,
        mode: Option<SandboxMode>,
        approved: bool,
    ) -> Result<Option<(&Ready, SandboxMode)>, OpsError> {
        let setting = match &self.config.sandbox {
            None => return crate::process::unsandboxed(mode).map(|_| None),
            Some(setting) => setting,
        };
        let sandbox = match setting {
            SandboxSetting::Missing(reason) => {
                return Err(OpsError::ProcessUnavailable {
                    reason: format!(
                        "{reason}. Commands are refused rather than run unconfined; choose \
                         [sandbox] mode = \"full-access\" to run them without a sandbox"
                    ),
                });
            }
            SandboxSetting::Sandbox(sandbox) => sandbox,
        };
        let allowed = sandbox.policy.mode;
        let mode = mode.unwrap_or(allowed);
        if mode > allowed && !approved {
            return Err(OpsError::SandboxEscalation {
                asked: mode.as_str().into(),
                allowed: allowed.as_str().into(),
            });
        }
        if mode == SandboxMode::FullAccess {
            return Ok(None);
        }
        Ok(Some((self.sandbox_ready(sandbox)?, mode)))
    }

    /// `sandbox` once it was seen to work here (probed once, in workspace-write mode when it
    /// is configured for full access and only narrowed per command); otherwise why not.
    fn sandbox_ready(&self, sandbox: &Sandbox) -> Result<&Ready, OpsError> {
        self.sandbox_probe
            .get_or_init(|| {
                let mut sandbox =
                    sandbox.with_mode(sandbox.policy.mode.min(SandboxMode::WorkspaceWrite));
                let egress = match sandbox.policy.network {
                    NetworkMode::Filtered => {
                        let proxy = EgressProxy::start(sandbox.policy.egress_allow.clone())
                            .map_err(|e| OpsError::ProcessUnavailable {
                                reason: format!(
                                    "the sandbox's egress proxy cannot start: {e}; choose \
                                     [sandbox] network = \"off\" or \"on\""
                                ),
                            })?;
                        sandbox.policy.egress_socket = Some(proxy.socket().to_path_buf());
                        Some(proxy)
                    }
                    _ => None,
                };
                let keeper = match sandbox.policy.network {
                    NetworkMode::On => None,
                    network => {
                        let keeper = NetworkKeeper::start(
                            &sandbox.helper,
                            network,
                            egress.as_ref().map(EgressProxy::socket),
                        )
                        .map_err(|reason| OpsError::ProcessUnavailable { reason })?;
                        sandbox.policy.joined_network = Some(keeper.fds());
                        Some(keeper)
                    }
                };
                let enforcement = sandbox.probe()?;
                Ok(Ready {
                    sandbox,
                    enforcement,
                    _keeper: keeper,
                    _egress: egress,
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A backend for the workspace of `files`. The environment children start from is
    /// toolshed's own at this moment, cleaned by [`clean_env`].
    pub fn new(files: Arc<LocalOps>, config: ProcessConfig) -> Result<Self, OpsError> {
        let (method, fallback_reason) = match (config.tree_kill, tree::cgroup_base()) {
            (None | Some(TreeKillMethod::Cgroup), Ok(_)) => (TreeKillMethod::Cgroup, None),
            (Some(TreeKillMethod::Cgroup), Err(reason)) => {
                return Err(OpsError::ProcessUnavailable {
                    reason: format!("the cgroup tree-kill method was asked for: {reason}"),
                });
            }
            (None, Err(reason)) => (TreeKillMethod::ProcessTree, Some(reason)),
            (Some(TreeKillMethod::ProcessTree), _) => (
                TreeKillMethod::ProcessTree,
                Some("chosen by configuration".into()),
            ),
        };
        let base_env = config.base_env.clone().unwrap_or_else(|| {
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect()
        });
        Ok(Self {
            files,
            config,
            base_env,
            method,
            fallback_reason,
            live: Mutex::new(Vec::new()),
            sandbox_probe: OnceLock::new(),
            sockets: OnceLock::new(),
            spares: spare::Spares::default(),
        })
    }

    /// The tree-kill method in use.
    pub fn tree_kill_method(&self) -> TreeKillMethod {
        self.method
    }

    /// Why the cgroup method is not in use, when it is not.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Where `program` would be found, or the error saying it is not.
    fn check_program(
        &self,
        program: &str,
        workdir: &OwnedFd,
        path: Option<&String>,
    ) -> Result<(), OpsError> {
        if program.contains('/') {
            let exists = if program.starts_with('/') {
                Path::new(program).exists()
            } else {
                rustix::fs::statat(workdir, program, rustix::fs::AtFlags::empty()).is_ok()
            };
            return if exists {
                Ok(())
            } else {
                Err(OpsError::ProgramNotFound {
                    program: program.into(),
                    where_: String::new(),
                })
            };
        }
        let path = path.map(String::as_str).unwrap_or("");
        let found = path
            .split(':')
            .filter(|d| !d.is_empty())
            .any(|dir| Path::new(dir).join(program).is_file());
        if found {
            Ok(())
        } else {
            Err(OpsError::ProgramNotFound {
                program: program.into(),
                where_: format!(", nor on PATH ({path})"),
            })
        }
    }
}

fn io_error(program: &str, action: &str, e: impl std::fmt::Display) -> OpsError {
    OpsError::Spawn {
        program: program.into(),
        message: format!("{action}: {e}"),
    }
}

fn nonblocking(fd: &OwnedFd) -> Result<(), Errno> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)
}

impl ProcessOps for LocalProcessOps {
    fn sandbox(&self, mode: Option<SandboxMode>) -> Result<Option<Enforcement>, OpsError> {
        Ok(self.plan(mode, true)?.map(|(ready, mode)| {
            let mut enforcement = ready.enforcement.clone();
            enforcement.mode = mode;
            if self.config.limits.any() {
                enforcement.enforced.push(limits::limiter().name().into());
            }
            enforcement
        }))
    }

    fn check_sandbox(&self) -> Option<Result<Enforcement, OpsError>> {
        self.sandbox(None).transpose()
    }

    fn kill_all(&self) {
        let live: Vec<Arc<Shared>> = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for shared in &live {
            {
                let mut st = shared.lock();
                // One whose supervisor has ended is gone already (a dropped handle's, whose
                // supervisor was finishing when this looked): asking would wait for nobody.
                if st.finished {
                    continue;
                }
                st.stop_request = Some(StopReason::Requested(Stop::Forced));
                st.stop_done = false;
            }
            (shared.wake)();
        }
        // Synchronous on purpose: the caller is shutting down and has no runtime to wait on.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline
            && live.iter().any(|s| {
                let st = s.lock();
                !(st.finished || (st.stop_done && st.exit.is_some()))
            })
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn spawn(&self, request: &SpawnRequest) -> Result<Process, OpsError> {
        let _span = tracing::info_span!(target: toolshed_core::TRACE, "process.spawn").entered();
        request.validate()?;
        let program = request.program.as_str();
        let workdir = Arc::new(self.files.open_workdir(&request.workdir)?);
        let is_tty = matches!(request.tty, Tty::Yes { .. });
        let env = clean_env(
            self.base_env.iter().cloned(),
            &self.config.env_allow,
            is_tty,
            &request.env,
        );
        self.check_program(program, &workdir, env.get("PATH"))?;
        let fail = |action: &str, e: &dyn std::fmt::Display| io_error(program, action, e);

        let (cgroup, procs) = match self.method {
            TreeKillMethod::Cgroup => {
                let base = tree::cgroup_base().map_err(|e| fail("no cgroup for the child", &e))?;
                let (tree, procs) = base
                    .create()
                    .map_err(|e| fail("cannot create the child's cgroup", &e))?;
                (Some(tree), Some(Arc::new(procs)))
            }
            TreeKillMethod::ProcessTree => (None, None),
        };
        let remove_cgroup = |cgroup: &Option<tree::CgroupTree>| {
            if let Some(c) = cgroup {
                let _ = std::fs::remove_dir(&c.dir);
            }
        };

        let mut inbound_path: Option<PathBuf> = None;
        let mut inherit: Vec<i32> = Vec::new();
        let mut env_memfd: Option<OwnedFd> = None;
        let mut report_memfd: Option<OwnedFd> = None;
        let mut own_egress = None;
        let plan = self
            .plan(request.sandbox, request.escalation_approved)
            .inspect_err(|_| remove_cgroup(&cgroup))?;
        if plan.is_none() && request.confined {
            remove_cgroup(&cgroup);
            return Err(OpsError::Spawn {
                program: program.into(),
                message: "this command must run confined to the folders it was given (a \
                          skill's script), and commands run without a sandbox here \
                          (full-access); choose [sandbox] mode = \"workspace-write\" or \
                          \"read-only\" to run it"
                    .into(),
            });
        }
        if plan.is_none() && !request.write_scope.is_empty() {
            remove_cgroup(&cgroup);
            return Err(OpsError::Spawn {
                program: program.into(),
                message: "policy rules keep some workspace paths from this command, and it \
                          would run without a sandbox (full-access), where they cannot be \
                          enforced; it is not run"
                    .into(),
            });
        }
        let mut launch = match plan {
            None => Launch {
                program: program.into(),
                args: request.args.iter().map(Into::into).collect(),
                env: Vec::new(),
                stdin: Io::Null,
                stdout: Io::Piped,
                stderr: Io::Piped,
            },
            Some((ready, mode)) => {
                let mut sandbox = ready.sandbox.with_mode(mode);
                // A writable directory never uncovers a hidden one (toolshed's data dir).
                let (kept, hidden): (Vec<&PathBuf>, Vec<&PathBuf>) = request
                    .writable
                    .iter()
                    .partition(|dir| !sandbox.policy.denied.iter().any(|d| dir.starts_with(d)));
                for dir in hidden {
                    tracing::debug!(dir = %dir.display(), "a directory asked to be writable is hidden from commands; left out");
                }
                sandbox.policy.writable.extend(kept.into_iter().cloned());
                sandbox.policy.visible = visible_roots(program, request, &sandbox.policy);
                sandbox.policy.revealed.clone_from(&request.revealed);
                let scoped = scoped_paths(&request.write_scope, &sandbox.policy.workspace)
                    .map_err(|e| {
                        remove_cgroup(&cgroup);
                        OpsError::Spawn {
                            program: program.into(),
                            message: e,
                        }
                    })?;
                sandbox.policy.read_only = scoped.read_only;
                sandbox.policy.write_only = scoped.write_only;
                sandbox.policy.denied.extend(scoped.hidden);
                if request.confined {
                    // Last, so that it covers what was hidden inside it; the revealed
                    // directories are brought back into it.
                    sandbox.policy.denied.push(sandbox.policy.workspace.clone());
                    let others = sandbox.policy.other_roots.clone();
                    sandbox.policy.denied.extend(others);
                }
                if let Some(hosts) = &request.network_hosts {
                    // A network of its own: not the one every command joins.
                    sandbox.policy.joined_network = None;
                    sandbox.policy.egress_socket = None;
                    sandbox.policy.network = NetworkMode::Off;
                    if !hosts.is_empty() {
                        let proxy =
                            EgressProxy::within(hosts.clone(), sandbox.policy.egress_allow.clone())
                                .map_err(|e| {
                                    remove_cgroup(&cgroup);
                                    fail("cannot start its egress proxy", &e)
                                })?;
                        sandbox.policy.network = NetworkMode::Filtered;
                        sandbox.policy.egress_socket = Some(proxy.socket().to_path_buf());
                        own_egress = Some(proxy);
                    }
                } else if request.web_network {
                    let proxy =
                        EgressProxy::start(sandbox.policy.egress_allow.clone()).map_err(|e| {
                            remove_cgroup(&cgroup);
                            fail("cannot start its egress proxy", &e)
                        })?;
                    sandbox.policy.joined_network = None;
                    sandbox.policy.network = NetworkMode::Filtered;
                    sandbox.policy.egress_socket = Some(proxy.socket().to_path_buf());
                    own_egress = Some(proxy);
                }
                if let Some((user, net)) = sandbox.policy.joined_network {
                    inherit.extend([user, net]);
                }
                let inbound = match sandbox.policy.network {
                    NetworkMode::On => None,
                    NetworkMode::Off | NetworkMode::Filtered => {
                        let dir = self
                            .sockets
                            .get_or_init(SocketDir::create)
                            .as_ref()
                            .map_err(|e| {
                                remove_cgroup(&cgroup);
                                fail("cannot make the sockets directory", e)
                            })?;
                        Some(dir.next())
                    }
                };
                inbound_path.clone_from(&inbound);
                // The command's environment reaches the helper as data, never as its own
                // environment: the dynamic loader and the C library act on variables such
                // as `LD_PRELOAD` before the helper's first line runs, which is before the
                // sandbox exists. The helper starts with an empty environment and hands
                // this one to the command at its final `execve`.
                let env_fd = crate::sandbox::environment_memfd(&env).map_err(|e| {
                    remove_cgroup(&cgroup);
                    fail("cannot hand over its environment", &e)
                })?;
                inherit.push(env_fd.as_raw_fd());
                // Where the helper says what the command left in its private temporary
                // directories.
                let report = crate::sandbox::report_memfd().map_err(|e| {
                    remove_cgroup(&cgroup);
                    fail("cannot make its sandbox report", &e)
                })?;
                inherit.push(report.as_raw_fd());
                sandbox.policy.report_fd = Some(report.as_raw_fd());
                report_memfd = Some(report);
                let (helper, args) = sandbox.wrap(
                    program,
                    &request.args,
                    inbound.as_deref(),
                    Some(env_fd.as_raw_fd()),
                );
                env_memfd = Some(env_fd);
                Launch {
                    program: helper.into(),
                    args,
                    env: Vec::new(),
                    stdin: Io::Null,
                    stdout: Io::Piped,
                    stderr: Io::Piped,
                }
            }
        };
        if env_memfd.is_none() {
            launch.env = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        }
        let mut master = None;
        let mut slave = None;
        match request.tty {
            Tty::Yes { rows, cols } => {
                let pair = pty::open(rows, cols).map_err(|e| {
                    remove_cgroup(&cgroup);
                    fail("cannot open a terminal", &e)
                })?;
                let terminal = Arc::new(pair.slave);
                launch.stdin = Io::Fd(terminal.clone());
                launch.stdout = Io::Fd(terminal.clone());
                launch.stderr = Io::Fd(terminal.clone());
                master = Some(pair.master);
                slave = Some(terminal);
            }
            Tty::No => {
                if !matches!(request.stdin, Stdin::Closed) {
                    launch.stdin = Io::Piped;
                }
            }
        }
        let (groups, join) = if self.config.limits.any() {
            limits::limiter().create(&self.config.limits).map_err(|e| {
                remove_cgroup(&cgroup);
                fail("cannot set up the resource limits", &e)
            })?
        } else {
            Default::default()
        };
        let setup = ChildSetup {
            workdir,
            cgroup_procs: procs,
            limits: join,
            tty: slave.clone(),
            parent: Pid::from_raw(i32::try_from(std::process::id()).unwrap_or(0)),
            nofile: nofile::for_children(),
            inherit,
        };
        let started = Instant::now();
        let child = self.spares.spawn(launch, setup).map_err(|e| {
            remove_cgroup(&cgroup);
            groups.remove();
            if e.kind() == std::io::ErrorKind::NotFound {
                OpsError::Spawn {
                    program: program.into(),
                    message: "the kernel could not execute it (no such file: a script's \
                              interpreter line may name a missing program)"
                        .into(),
                }
            } else {
                fail("exec failed", &e)
            }
        })?;
        drop(slave);
        let pid_raw = child.pid;
        let (stdout, stderr, stdin) = (child.stdout, child.stderr, child.stdin);

        let pid = Pid::from_raw(i32::try_from(pid_raw).unwrap_or(0))
            .ok_or_else(|| fail("bad process id", &pid_raw))?;
        // The child is not reaped until its supervisor ends, so the pid is still its own.
        let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty()).map_err(|e| {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            fail("pidfd_open", &e)
        })?;
        let tracker = match cgroup {
            Some(c) => Tracker::Cgroup(c),
            None => Tracker::Tree(ProcessTree {
                leader: pid.as_raw_nonzero().get(),
                leader_start: tree::start_time(pid_raw).unwrap_or(0),
            }),
        };
        let abandon = |tracker: &Tracker, what: &str, e: &dyn std::fmt::Display| {
            tracker.kill();
            tracker.clean_up();
            let _ = rustix::process::waitid(
                rustix::process::WaitId::PidFd(pidfd.as_fd()),
                rustix::process::WaitIdOptions::EXITED,
            );
            fail(what, e)
        };

        // Streamed stdio goes to the caller; the supervisor keeps only stderr.
        let (stdout, stdin, streamed) = match (request.stdin, &request.tty) {
            (Stdin::Stream, Tty::No) => match (stdout, stdin) {
                (Some(out), Some(input)) => {
                    for fd in [&out, &input] {
                        nonblocking(fd).map_err(|e| abandon(&tracker, "fcntl", &e))?;
                    }
                    (
                        None,
                        None,
                        Some(crate::process::StreamStdio {
                            stdout: out,
                            stdin: input,
                        }),
                    )
                }
                _ => return Err(abandon(&tracker, "pipes", &"the child has no stdio pipes")),
            },
            _ => (stdout, stdin, None),
        };
        let (out, err, input) = match master {
            Some(master) => {
                let reader = master.try_clone();
                let writer = master.try_clone();
                match (reader, writer) {
                    (Ok(r), Ok(w)) => (Some(r), None, Some(w)),
                    (Err(e), _) | (_, Err(e)) => {
                        return Err(abandon(&tracker, "cannot share the terminal", &e));
                    }
                }
            }
            None => (stdout, stderr, stdin),
        };
        for fd in [&out, &err, &input].into_iter().flatten() {
            nonblocking(fd).map_err(|e| abandon(&tracker, "fcntl", &e))?;
        }
        let wake = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(|e| abandon(&tracker, "eventfd", &e))?;
        let wake = Arc::new(wake);
        let wake_hook = {
            let wake = wake.clone();
            Box::new(move || {
                let _ = rustix::io::write(wake.as_fd(), &1u64.to_ne_bytes());
            })
        };
        let resize_hook = match (&request.tty, &input) {
            (Tty::Yes { .. }, Some(fd)) => {
                let fd = fd
                    .try_clone()
                    .map_err(|e| abandon(&tracker, "cannot share the terminal", &e))?;
                let hook: crate::process::ResizeHook = Box::new(move |rows, cols| {
                    pty::set_size(&fd, rows, cols).map_err(|e| OpsError::Io {
                        action: "resize the terminal of".into(),
                        path: "the process".into(),
                        message: e.to_string(),
                    })
                });
                Some(hook)
            }
            _ => None,
        };
        let stdin_state = if input.is_some() {
            StdinState::Open {
                queue: Default::default(),
                closing: false,
            }
        } else {
            StdinState::Never
        };
        let shared = Arc::new(Shared::new(
            State::new(is_tty, request.limits, stdin_state),
            wake_hook,
            resize_hook,
        ));
        let supervisor = Supervisor {
            shared: shared.clone(),
            wake,
            pidfd,
            tracker,
            stdout: out,
            stderr: err,
            stdin: input,
            tty: is_tty,
            limits: request.limits,
            drain: self.config.drain,
            drop_grace: self.config.drop_grace,
            started,
            groups,
            socket: inbound_path.clone(),
            _egress: own_egress,
            report: report_memfd,
        };
        // If the thread cannot start, the supervisor is dropped with it: kill the tree here.
        let kill_on_failure = (pid, self.method);
        std::thread::Builder::new()
            .name(format!("toolshed-child-{pid_raw}"))
            .spawn(move || supervisor.run())
            .map_err(|e| {
                let _ = rustix::process::kill_process_group(
                    kill_on_failure.0,
                    rustix::process::Signal::KILL,
                );
                fail("cannot start the supervisor thread", &e)
            })?;
        {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&shared));
        }
        Ok(
            Process::new(shared, pid_raw, request.tty, request.program.clone())
                .with_inbound(inbound_path)
                .with_stdio(streamed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child whose supervisor ended while `kill_all` held it (its handle dropped as the
    /// host shut down) takes no stop request any more: `kill_all` waited its whole five
    /// seconds for it, and a first start of a mounted MCP server then took 10 s to exit.
    #[test]
    fn kill_all_does_not_wait_for_a_child_whose_supervisor_has_ended() {
        let dir = tempfile::tempdir().unwrap();
        let files = Arc::new(LocalOps::new(dir.path()).unwrap());
        let ops = LocalProcessOps::new(files, ProcessConfig::default()).unwrap();
        let mut state = State::new(false, Default::default(), StdinState::Never);
        state.finished = true;
        let ended = Arc::new(Shared::new(state, Box::new(|| {}), None));
        ops.live.lock().unwrap().push(Arc::downgrade(&ended));
        let started = Instant::now();
        ops.kill_all();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "kill_all waited {:?} for a child no one supervises",
            started.elapsed()
        );
        assert!(
            ended.lock().stop_request.is_none(),
            "nothing was asked of it"
        );
    }
}

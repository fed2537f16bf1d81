//! The command sandbox: one boundary for files and commands, enforced by the kernel.
//!
//! Every command the local backend starts can run inside a sandbox that enforces the same
//! policy as the file tools. The sandbox is applied by a helper — the toolshed binary
//! re-executed as `toolshed sandbox-exec <policy> -- <command…>` — never between fork and
//! exec in the host, so nothing allocates or locks in a forked copy of a threaded process.
//! The helper, a fresh single-threaded process:
//!
//! 1. enters new user, mount, PID, IPC and UTS namespaces — or, when the host runs a network
//!    keeper (network off or filtered), joins the keeper's user and network namespaces and
//!    enters new mount, PID, IPC and UTS ones (see `keeper`);
//! 2. hides what must stay out of reach — toolshed's data dir, the workspace's
//!    `.toolshed/`, the user config dir and the deny list (`~/.ssh`, `~/.aws`, …) — under
//!    empty read-only mounts, and gives the command private `/tmp`, `/dev/shm` and `/run`
//!    (which also hides the host's UNIX sockets there);
//! 3. forks the namespace's first process, which mounts a fresh `/proc` (the host's
//!    processes, and their environments, are not visible) and reaps orphans;
//! 4. forks the command's process, which drops every capability, restricts itself with
//!    Landlock (read everywhere, write only the workspace and the private temp; signals
//!    and abstract UNIX sockets scoped to the sandbox), sets `no_new_privs`, installs a
//!    seccomp filter (no `ptrace`, `mount`, `bpf`, `kexec`, namespaces, `io_uring`,
//!    `TIOCSTI`, or socket families other than UNIX and IP), and executes the command.
//!
//! What cannot be enforced is refused, never dropped: a host that cannot build the
//! sandbox it was asked for refuses to start commands, with the reason and what to
//! choose instead ([`Sandbox::probe`]).

mod egress;
mod helper;
mod keeper;
mod rules;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub(crate) use egress::EgressProxy;
pub use egress::PROXY_PORT;
pub use helper::run_if_asked;
pub(crate) use helper::spare::{MAX_FDS as SPARE_MAX_FDS, MAX_MESSAGE as SPARE_MAX_MESSAGE};
pub(crate) use keeper::NetworkKeeper;

use crate::error::OpsError;

/// The command-line word that makes the toolshed binary act as the sandbox helper.
pub const HELPER_COMMAND: &str = "sandbox-exec";

/// The command-line word that makes the toolshed binary act as the sandbox's network
/// keeper: one private network the sandboxed commands of a host share.
pub const NETWORK_COMMAND: &str = "sandbox-net";

/// The command-line word that starts a spare helper: one that waits on a socket for the
/// host's next sandboxed command (`helper/spare.rs`).
pub const SPARE_COMMAND: &str = "sandbox-spare";

/// The exit code of a command the sandbox could not be set up for (its reason is on stderr).
pub const SETUP_FAILED: i32 = 125;

/// What a sandboxed command may change. Ordered from the narrowest to the widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum SandboxMode {
    /// Read what is permitted; write only the private temp.
    ReadOnly,
    /// Read what is permitted; write the workspace, the private temp and the extra
    /// writable roots.
    #[default]
    WorkspaceWrite,
    /// No sandbox: the command runs with the user's full authority. Chosen explicitly.
    FullAccess,
}

impl SandboxMode {
    /// Its name in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }

    /// The mode named `name`, or an error listing the names.
    pub fn parse(name: &str) -> Result<Self, UnknownName> {
        match name {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "full-access" => Ok(SandboxMode::FullAccess),
            other => Err(UnknownName {
                given: other.to_string(),
                what: "sandbox mode",
                choices: "read-only, workspace-write or full-access",
            }),
        }
    }
}

/// What network a sandboxed command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkMode {
    /// A network namespace of its own with only its own loopback: no host, no internet.
    #[default]
    Off,
    /// A network namespace of its own whose only way out is toolshed's egress proxy,
    /// which applies the web tools' rules (`HTTP_PROXY`/`HTTPS_PROXY` point to it).
    Filtered,
    /// The host's network (sockets limited to UNIX and IP families).
    On,
}

impl NetworkMode {
    /// Its name in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Off => "off",
            NetworkMode::Filtered => "filtered",
            NetworkMode::On => "on",
        }
    }

    /// The network mode named `name`, or an error listing the names.
    pub fn parse(name: &str) -> Result<Self, UnknownName> {
        match name {
            "off" => Ok(NetworkMode::Off),
            "filtered" => Ok(NetworkMode::Filtered),
            "on" => Ok(NetworkMode::On),
            other => Err(UnknownName {
                given: other.to_string(),
                what: "network mode",
                choices: "off, filtered or on",
            }),
        }
    }
}

/// A name that is not one of those a setting takes (a sandbox or network mode).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a {what}; use {choices}")]
pub struct UnknownName {
    /// The name given.
    pub given: String,
    /// What it should name (`sandbox mode`).
    pub what: &'static str,
    /// The names it may be.
    pub choices: &'static str,
}

/// What a sandboxed command may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxPolicy {
    /// What it may change.
    pub mode: SandboxMode,
    /// What network it gets.
    pub network: NetworkMode,
    /// The workspace root (writable in [`SandboxMode::WorkspaceWrite`]).
    pub workspace: PathBuf,
    /// More directories it may write (workspace-write only).
    pub writable: Vec<PathBuf>,
    /// Paths hidden whatever the mode: toolshed's data dir, the workspace's `.toolshed/`,
    /// the user config dir, the deny list. Missing paths are skipped.
    pub denied: Vec<PathBuf>,
    /// The size of the private `/tmp`, in bytes.
    pub tmp_bytes: u64,
    /// The oldest Landlock ABI accepted (0: any); an older kernel refuses commands. ABI 9
    /// also confines connecting to UNIX sockets by path.
    pub min_landlock_abi: u32,
    /// With [`NetworkMode::Filtered`], what the egress proxy opens besides public hosts
    /// (`[web] allow`).
    pub egress_allow: Vec<crate::net::AllowRule>,
    /// The egress proxy's socket, set by the backend once the proxy runs.
    pub egress_socket: Option<PathBuf>,
    /// The user and network namespaces of the backend's network keeper (descriptors the
    /// helper inherits), set once the keeper runs: commands join its network instead of
    /// each creating one.
    pub joined_network: Option<(i32, i32)>,
    /// Directories under the private mounts (`/tmp`, `/dev/shm`, `/run`) brought back
    /// read-only: what a command needs to run that lives there ([`visible_root`]).
    pub visible: Vec<PathBuf>,
    /// Directories inside [`denied`](Self::denied) paths shown read-only, alone: a
    /// plugin's own directory in toolshed's data dir, for the plugin's process.
    pub revealed: Vec<PathBuf>,
    /// Paths inside the workspace kept read-only (policy rules on `writes`).
    pub read_only: Vec<PathBuf>,
    /// When not empty, the only paths inside the workspace left writable (policy rules
    /// on `writes` with `not_glob`); the rest of the workspace is read-only.
    pub write_only: Vec<PathBuf>,
    /// An inherited descriptor the helper writes its report to (what the command left in
    /// its private temporary directories), set by the backend per command.
    pub report_fd: Option<i32>,
    /// The workspace's other roots (a workspace of several, [`crate::roots`]): writable
    /// as the workspace is (the host lists them in [`writable`](Self::writable) too), and
    /// hidden with it from a confined command.
    pub other_roots: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The helper's arguments for this policy, up to and including `--`.
    fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            HELPER_COMMAND.into(),
            "--mode".into(),
            self.mode.as_str().into(),
            "--network".into(),
            self.network.as_str().into(),
            "--workspace".into(),
            self.workspace.clone().into(),
            "--tmp-bytes".into(),
            self.tmp_bytes.to_string().into(),
            "--min-landlock-abi".into(),
            self.min_landlock_abi.to_string().into(),
        ];
        if let Some((user, net)) = self.joined_network {
            args.push("--join".into());
            args.push(format!("{user},{net}").into());
        } else if let Some(socket) = &self.egress_socket {
            args.push("--egress".into());
            args.push(socket.clone().into());
        }
        for path in &self.writable {
            args.push("--write".into());
            args.push(path.clone().into());
        }
        for path in &self.visible {
            args.push("--show".into());
            args.push(path.clone().into());
        }
        for path in &self.revealed {
            args.push("--reveal".into());
            args.push(path.clone().into());
        }
        if let Some(fd) = self.report_fd {
            args.push("--report-fd".into());
            args.push(fd.to_string().into());
        }
        for path in &self.read_only {
            args.push("--read-only".into());
            args.push(path.clone().into());
        }
        for path in &self.write_only {
            args.push("--write-only".into());
            args.push(path.clone().into());
        }
        for path in &self.denied {
            args.push("--deny".into());
            args.push(path.clone().into());
        }
        args.push("--".into());
        args
    }
}

/// A sandbox the local backend wraps every command in: the helper to run and the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The toolshed binary, run as `<helper> sandbox-exec …`.
    pub helper: PathBuf,
    /// What commands may reach.
    pub policy: SandboxPolicy,
}

/// What the local backend does about the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
// Made once per host and read from there: the size of the variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum SandboxSetting {
    /// Every command runs inside this sandbox.
    Sandbox(Sandbox),
    /// A sandbox was asked for but cannot be built (the reason): every command is refused.
    Missing(String),
}

/// What a working sandbox enforces on this machine, for reports (`sandbox check`, each
/// exec result's `sandbox` block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// The mode.
    pub mode: SandboxMode,
    /// The network mode.
    pub network: NetworkMode,
    /// The layers in force, e.g. `landlock-abi-7`, `seccomp`, `pid-namespace`.
    pub enforced: Vec<String>,
}

impl Sandbox {
    /// The program and arguments that run `program args…` inside this sandbox.
    /// `env_fd`: an inherited descriptor holding the command's environment
    /// ([`environment_memfd`]); without one the command gets the helper's own.
    pub(crate) fn wrap(
        &self,
        program: &str,
        args: &[String],
        inbound: Option<&Path>,
        env_fd: Option<i32>,
    ) -> (PathBuf, Vec<OsString>) {
        let mut all = self.policy.to_args();
        // Before `--`, with the policy.
        all.pop();
        if let Some(path) = inbound {
            all.push("--inbound".into());
            all.push(path.into());
        }
        if let Some(fd) = env_fd {
            all.push("--env-fd".into());
            all.push(fd.to_string().into());
        }
        all.push("--".into());
        all.push(program.into());
        all.extend(args.iter().map(OsString::from));
        (self.helper.clone(), all)
    }

    /// Checks that this sandbox can be built here by running `true` inside it, and says
    /// what it enforces. An error says which layer is missing and what to choose instead.
    pub fn probe(&self) -> Result<Enforcement, OpsError> {
        let (program, args) = self.wrap("true", &[], None, None);
        let mut command = std::process::Command::new(&program);
        if let Some((user, net)) = self.policy.joined_network {
            #[allow(unsafe_code)]
            // SAFETY: the closure makes two fcntl calls (async-signal-safe) on descriptors
            // the network keeper's owner keeps open while this runs.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                    inherit_fd(user)?;
                    inherit_fd(net)
                });
            }
        }
        let output = command
            .args(&args)
            .env_clear()
            .env("PATH", crate::process::DEFAULT_PATH)
            .current_dir(&self.policy.workspace)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                unavailable(format!("cannot run the helper {}: {e}", program.display()))
            })?;
        if !output.status.success() {
            let said = String::from_utf8_lossy(&output.stderr);
            let said = said.trim();
            return Err(unavailable(if said.is_empty() {
                format!("the helper failed ({})", output.status)
            } else {
                said.trim_start_matches("toolshed sandbox: ").to_string()
            }));
        }
        Ok(self.enforcement())
    }

    /// This sandbox with commands confined to `mode` instead of its policy's.
    pub fn with_mode(&self, mode: SandboxMode) -> Sandbox {
        let mut sandbox = self.clone();
        sandbox.policy.mode = mode;
        sandbox
    }

    /// What this sandbox enforces when it runs (see [`probe`](Self::probe) for whether it does).
    pub fn enforcement(&self) -> Enforcement {
        let mut enforced = vec![
            "user-namespace".to_string(),
            "mount-namespace".into(),
            "pid-namespace".into(),
            "private-tmp".into(),
            "hidden-paths".into(),
        ];
        match self.policy.network {
            NetworkMode::Off => enforced.push("network-namespace".into()),
            NetworkMode::Filtered => {
                enforced.extend(["network-namespace".to_string(), "egress-filter".into()]);
            }
            NetworkMode::On => {}
        }
        if let Some(abi) = rules::landlock_abi() {
            enforced.push(format!("landlock-abi-{abi}"));
            if abi >= 6 {
                enforced.push("landlock-scopes".into());
            }
        }
        enforced.extend([
            "seccomp".to_string(),
            "no-new-privs".into(),
            "no-capabilities".into(),
        ]);
        Enforcement {
            mode: self.policy.mode,
            network: self.policy.network,
            enforced,
        }
    }
}

/// One layer the sandbox is built from, as this machine offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// Its name: `landlock`, `seccomp`, `user namespaces`.
    pub name: &'static str,
    /// Whether the kernel offers it.
    pub available: bool,
    /// What was found (a version, a limit, why not).
    pub detail: String,
}

/// The layers this machine offers, whatever the configuration (for `sandbox check` and
/// `doctor`). Whether a sandbox can actually be built is [`Sandbox::probe`]'s answer.
pub fn machine() -> Vec<Layer> {
    let landlock = rules::landlock_abi();
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .ok()
        .is_some_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
    let userns = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    vec![
        Layer {
            name: "landlock",
            available: landlock.is_some(),
            detail: match landlock {
                Some(abi) => format!(
                    "ABI {abi}{}",
                    if abi >= 6 {
                        " (with signal and abstract-socket scopes)"
                    } else {
                        ""
                    }
                ),
                None => "not available (Linux 5.13+ with Landlock enabled at boot)".into(),
            },
        },
        Layer {
            name: "seccomp",
            available: seccomp,
            detail: if seccomp {
                "filters available".into()
            } else {
                "not available".into()
            },
        },
        Layer {
            name: "user namespaces",
            available: userns.is_some_and(|n| n > 0),
            detail: match userns {
                Some(0) => "disabled (user.max_user_namespaces = 0)".into(),
                Some(n) => format!("up to {n}"),
                None => "not available".into(),
            },
        },
    ]
}

fn unavailable(reason: String) -> OpsError {
    OpsError::ProcessUnavailable {
        reason: format!(
            "the command sandbox cannot be enforced on this machine: {reason}. Commands are \
             refused rather than run unconfined; fix the cause, or choose [sandbox] mode = \
             \"full-access\" to run commands without a sandbox"
        ),
    }
}

/// `path` with a leading `~/` expanded against `home`.
pub fn expand_home(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => Some(home.join(rest)),
        (Some(_), None) => None,
        (None, _) if path == "~" => home.map(Path::to_path_buf),
        (None, _) => Some(PathBuf::from(path)),
    }
}

/// The user's home directory: `$HOME` when absolute, else the password database's entry
/// for this user.
pub fn home_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
    {
        return Some(home);
    }
    // SAFETY: getuid has no preconditions.
    #[allow(unsafe_code)]
    let uid = unsafe { libc::getuid() }.to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 7 && fields[2] == uid && fields[5].starts_with('/'))
            .then(|| PathBuf::from(fields[5]))
    })
}

/// A new directory only this user may enter, named `<prefix>-<pid>-<nanos>`, under
/// `$XDG_RUNTIME_DIR` (else the temporary directory): where the host keeps the sockets a
/// sandbox reaches it through.
pub(crate) fn private_dir(prefix: &str) -> std::io::Result<PathBuf> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = base.join(format!("{prefix}-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir)?;
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    Ok(dir)
}

/// Lets a child inherit `fd` across exec (clears its close-on-exec flag). For the forked
/// child between fork and exec: one `fcntl`, async-signal-safe.
#[allow(unsafe_code)]
pub(crate) fn inherit_fd(fd: i32) -> std::io::Result<()> {
    // SAFETY: `fd` is open (its owner outlives the spawn) and only borrowed for the call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    Ok(())
}

/// The directories the sandbox replaces with private, empty ones.
pub const PRIVATE_MOUNTS: [&str; 3] = ["/tmp", "/dev/shm", "/run"];

/// What must stay visible for the program (or file) at `path` to run, when it lives under
/// one of the [`PRIVATE_MOUNTS`]: `None` elsewhere (everything else is readable already).
///
/// Judged on the path as written and on where its links lead (a virtualenv's
/// `bin/python` is a link to an interpreter elsewhere, and the command still names the
/// link). A path inside `node_modules` brings the outermost `node_modules` (a package
/// finds its dependencies beside it); a program in a `bin` directory brings its
/// environment (the directory holding `bin`: a virtualenv, an install prefix); anything
/// else its own directory (a file's directory, or the directory itself). Never a private
/// mount itself: `/tmp/bin/x` brings `/tmp/bin`, not all of `/tmp` — the host's other
/// temporary files (another user's files and sockets) stay out of reach.
pub fn visible_root(path: &Path) -> Option<PathBuf> {
    visible_roots_of(path).into_iter().next()
}

/// [`visible_root`] for the path as written and for where its links lead: both, when
/// both are under a private mount.
// Decides which directories the sandbox mounts (the helper opens them by descriptor).
#[allow(clippy::disallowed_methods)]
pub fn visible_roots_of(path: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    if !path.is_absolute() || !path.exists() {
        return Vec::new();
    }
    // Never a socket, and never the user's runtime directory (or what holds it): its
    // sockets (the session bus, systemd's, toolshed's own) stay connectable read-only.
    if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        return Vec::new();
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let mut roots = Vec::new();
    for candidate in std::iter::once(path.to_path_buf()).chain(path.canonicalize().ok()) {
        if let Some(root) = root_under_mount(&candidate)
            && !roots.contains(&root)
            && !runtime.as_ref().is_some_and(|r| r.starts_with(&root))
        {
            roots.push(root);
        }
    }
    roots
}

/// The directory to bring back for `path` (see [`visible_root`]), if it is under a
/// private mount.
fn root_under_mount(path: &Path) -> Option<PathBuf> {
    if path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    let mount = PRIVATE_MOUNTS
        .iter()
        .map(Path::new)
        .find(|m| path.starts_with(m) && path != *m)?;
    // A package under node_modules: the outermost node_modules.
    let mut prefix = PathBuf::new();
    for part in path.components() {
        prefix.push(part);
        if part.as_os_str() == "node_modules" && prefix.starts_with(mount) && prefix != mount {
            return Some(prefix);
        }
    }
    let dir = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent()?.to_path_buf()
    };
    let root = match dir.file_name().and_then(OsStr::to_str) {
        Some("bin" | ".bin") => dir.parent().map(Path::to_path_buf).unwrap_or(dir.clone()),
        _ => dir.clone(),
    };
    if root.starts_with(mount) && root != mount {
        Some(root)
    } else if dir != mount {
        Some(dir)
    } else {
        // A file straight under the mount: only that file.
        Some(path.to_path_buf())
    }
}

/// The program environments a command line names: every absolute path in it that is an
/// executable file in a `bin` directory (its environment comes back) or lies inside a
/// `node_modules` directory. Nothing else a caller writes in a command is brought back —
/// not a socket, not a plain directory.
pub fn named_programs(command: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    command
        .split(|c: char| {
            c.is_whitespace() || matches!(c, '\'' | '"' | ';' | '&' | '|' | '(' | ')' | '`' | '=')
        })
        .filter(|t| t.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| {
            let in_bin = p
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "bin" || n == ".bin");
            let executable = std::fs::metadata(p)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
            (in_bin && executable) || p.components().any(|c| c.as_os_str() == "node_modules")
        })
        .take(16)
        .collect()
}

/// The most diverted writes a report names.
pub const MAX_DIVERTED: usize = 20;

/// A new anonymous file the helper writes its report into (close-on-exec; the spawn
/// clears that for the helper).
pub(crate) fn report_memfd() -> std::io::Result<std::os::fd::OwnedFd> {
    Ok(rustix::fs::memfd_create(
        "toolshed-report",
        rustix::fs::MemfdFlags::CLOEXEC,
    )?)
}

/// The report in `fd`: one line per diverted write, at most [`MAX_DIVERTED`] lines of
/// at most 4 KiB each.
pub(crate) fn read_report(fd: &std::os::fd::OwnedFd) -> Vec<String> {
    let mut bytes = vec![0u8; 64 * 1024];
    let n = rustix::io::pread(fd, &mut bytes, 0).unwrap_or(0);
    bytes.truncate(n);
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.is_empty())
        .take(MAX_DIVERTED + 1)
        .map(|l| l.chars().take(4096).collect())
        .collect()
}

/// A new anonymous file holding `env` as `NAME=VALUE` entries each ended by a NUL, sealed
/// against change, close-on-exec (the spawn clears that for the helper): how a command's
/// environment reaches the sandbox helper without being the helper's own.
pub(crate) fn environment_memfd(
    env: &std::collections::BTreeMap<String, String>,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let mut bytes = Vec::with_capacity(env.iter().map(|(k, v)| k.len() + v.len() + 2).sum());
    for (name, value) in env {
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(b'=');
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    let fd = rustix::fs::memfd_create(
        "toolshed-env",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut written = 0;
    while written < bytes.len() {
        written += rustix::io::write(&fd, &bytes[written..])?;
    }
    rustix::fs::fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )?;
    Ok(fd)
}

/// Whether the process arguments ask for the helper (`<exe> sandbox-exec …`).
fn asks_for_helper(args: &[OsString]) -> bool {
    args.get(1).map(OsString::as_os_str) == Some(OsStr::new(HELPER_COMMAND))
}

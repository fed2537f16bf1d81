//! The host side of the network keeper: one private network that a backend's sandboxed
//! commands join instead of each creating its own.
//!
//! Creating a network namespace costs the kernel about a millisecond, a fifth of what the
//! whole sandbox costs a command. The keeper (`<helper> sandbox-net …`) makes one — its own
//! loopback, and with `filtered` the bridge from `127.0.0.1:PROXY_PORT` to the egress
//! proxy — and this side holds its user and network namespaces open as descriptors, which
//! each helper inherits and joins. Commands still get their own mount, PID, IPC and UTS
//! namespaces, Landlock domain and seccomp filter; what they share is the network: like
//! processes on one machine, they can reach each other's listeners on the sandbox's
//! loopback, never the host's.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use super::{NETWORK_COMMAND, NetworkMode};

/// A running keeper; dropping it ends it (its namespaces live on while commands use them).
#[derive(Debug)]
pub(crate) struct NetworkKeeper {
    child: Child,
    /// Held open: the keeper reads it until it closes.
    stdin: Option<ChildStdin>,
    user: OwnedFd,
    net: OwnedFd,
}

impl NetworkKeeper {
    /// Starts `helper sandbox-net` for `network` (off, or filtered through `egress`), and
    /// waits until its network is up.
    pub(crate) fn start(
        helper: &Path,
        network: NetworkMode,
        egress: Option<&Path>,
    ) -> Result<Self, String> {
        let mut command = Command::new(helper);
        command
            .arg(NETWORK_COMMAND)
            .args(["--network", network.as_str()]);
        if let Some(socket) = egress {
            command.arg("--egress").arg(socket);
        }
        let mut child = command
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {} {NETWORK_COMMAND}: {e}", helper.display()))?;
        let stdin = child.stdin.take();
        let mut first = String::new();
        let ready = child.stdout.take().map(BufReader::new).map(|mut out| {
            let _ = out.read_line(&mut first);
        });
        if ready.is_none() || first.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            let mut said = String::new();
            if let Some(err) = child.stderr.take() {
                let _ = err.take(4096).read_to_string(&mut said);
            }
            let said = said.trim().trim_start_matches("toolshed sandbox: ");
            return Err(format!("the sandbox's network cannot be made: {said}"));
        }
        let open = |kind: &str| -> Result<OwnedFd, String> {
            let path = format!("/proc/{}/ns/{kind}", child.id());
            std::fs::File::open(&path)
                .map(OwnedFd::from)
                .map_err(|e| format!("{path}: {e}"))
        };
        let (user, net) = match (open("user"), open("net")) {
            (Ok(user), Ok(net)) => (user, net),
            (Err(e), _) | (_, Err(e)) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the sandbox's network: {e}"));
            }
        };
        Ok(Self {
            child,
            stdin,
            user,
            net,
        })
    }

    /// The descriptors of its user and network namespaces, for
    /// [`SandboxPolicy::joined_network`](super::SandboxPolicy::joined_network).
    pub(crate) fn fds(&self) -> (i32, i32) {
        (self.user.as_raw_fd(), self.net.as_raw_fd())
    }
}

impl Drop for NetworkKeeper {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

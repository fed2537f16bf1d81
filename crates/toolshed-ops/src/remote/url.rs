//! Where a remote workspace is: `ssh://[user@]host[:port]/path`, `docker://CONTAINER/path`
//! or `podman://CONTAINER/path`, and the command that reaches its worker.
//!
//! SSH goes through the system's `ssh`: the user's agent, keys and `~/.ssh/config`
//! (`ProxyJump`, aliases) apply; host keys are checked strictly against toolshed's own
//! `known_hosts` and the user's (`toolshed ssh trust` adds to toolshed's); a master
//! connection is shared (`ControlMaster`) so reconnecting is fast.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{RemoteError, Target};
use crate::sandbox::SandboxMode;

/// A remote workspace's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteUrl {
    /// A machine reached over SSH.
    Ssh {
        /// The login name, when given.
        user: Option<String>,
        /// The host name or address.
        host: String,
        /// The port, when given.
        port: Option<u16>,
        /// The workspace's absolute path there.
        path: String,
    },
    /// A running container, entered with `docker exec` or `podman exec`.
    Container {
        /// `docker` or `podman`.
        runtime: String,
        /// The container's name or id.
        container: String,
        /// The workspace's absolute path inside it.
        path: String,
    },
}

/// Whether `text` names a remote workspace (rather than a local directory).
pub fn is_remote(text: &str) -> bool {
    ["ssh://", "docker://", "podman://"]
        .iter()
        .any(|scheme| text.starts_with(scheme))
}

impl RemoteUrl {
    /// Parses a workspace URL; the error says what is wrong and what is expected.
    pub fn parse(text: &str) -> Result<Self, RemoteError> {
        let bad = |why: &str| {
            RemoteError::Url(format!(
                "workspace `{text}`: {why}; expected ssh://[user@]host[:port]/absolute/path, \
                 docker://CONTAINER/absolute/path or podman://CONTAINER/absolute/path"
            ))
        };
        if text.chars().any(|c| c.is_control() || c == ' ') {
            return Err(bad("it holds spaces or control characters"));
        }
        let (scheme, rest) = text.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => return Err(bad("no path after the host")),
        };
        if path.split('/').any(|part| part == "..") {
            return Err(bad("the path holds `..`"));
        }
        let path = path.trim_end_matches('/');
        let path = if path.is_empty() { "/" } else { path }.to_string();
        if authority.is_empty() {
            return Err(bad("no host or container"));
        }
        let name_ok = |s: &str| {
            !s.is_empty()
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-:[]".contains(c))
        };
        match scheme {
            "ssh" => {
                let (user, hostport) = match authority.rsplit_once('@') {
                    Some((u, h)) => (Some(u.to_string()), h),
                    None => (None, authority),
                };
                if let Some(u) = &user
                    && !name_ok(u)
                {
                    return Err(bad("the user name is not valid"));
                }
                let (host, port) = split_port(hostport).map_err(bad)?;
                if !name_ok(&host) {
                    return Err(bad("the host name is not valid"));
                }
                Ok(RemoteUrl::Ssh {
                    user,
                    host,
                    port,
                    path,
                })
            }
            "docker" | "podman" => {
                if !name_ok(authority) || authority.contains(':') {
                    return Err(bad("the container name is not valid"));
                }
                Ok(RemoteUrl::Container {
                    runtime: scheme.to_string(),
                    container: authority.to_string(),
                    path,
                })
            }
            other => Err(bad(&format!("unknown scheme `{other}`"))),
        }
    }

    /// The workspace's path on the remote side.
    pub fn path(&self) -> &str {
        match self {
            RemoteUrl::Ssh { path, .. } | RemoteUrl::Container { path, .. } => path,
        }
    }

    /// `[user@]host[:port]`, or the container.
    pub fn place(&self) -> String {
        match self {
            RemoteUrl::Ssh {
                user, host, port, ..
            } => {
                let mut s = user.as_ref().map(|u| format!("{u}@")).unwrap_or_default();
                s.push_str(host);
                if let Some(p) = port {
                    s.push_str(&format!(":{p}"));
                }
                s
            }
            RemoteUrl::Container {
                runtime, container, ..
            } => format!("{runtime}://{container}"),
        }
    }

    /// The URL again, normalized.
    pub fn display(&self) -> String {
        match self {
            RemoteUrl::Ssh { path, .. } => format!("ssh://{}{path}", self.place()),
            RemoteUrl::Container { path, .. } => format!("{}{path}", self.place()),
        }
    }

    /// The command that starts the worker for this workspace.
    pub fn target(&self, options: &RemoteOptions) -> Target {
        let mut worker = vec![
            options.worker.clone(),
            "worker".into(),
            "--root".into(),
            self.path().to_string(),
            "--sandbox".into(),
            options.sandbox.as_str().into(),
        ];
        let command = match self {
            RemoteUrl::Ssh {
                user, host, port, ..
            } => {
                let mut c = ssh_base(options);
                if let Some(p) = port {
                    c.extend(["-p".into(), p.to_string()]);
                }
                c.extend(options.ssh_options.iter().cloned());
                c.push(match user {
                    Some(u) => format!("{u}@{host}"),
                    None => host.clone(),
                });
                c.push("--".into());
                // The remote side runs it through a shell: every word quoted.
                worker = worker.iter().map(|w| shell_quote(w)).collect();
                c.extend(worker);
                c
            }
            RemoteUrl::Container {
                runtime, container, ..
            } => {
                let program = options.runtime.clone().unwrap_or_else(|| runtime.clone());
                let mut c = vec![program, "exec".into(), "-i".into(), container.clone()];
                c.extend(worker);
                c
            }
        };
        Target {
            command,
            display: self.display(),
            timeout: options.timeout,
            explain: Some(explain),
        }
    }
}

fn split_port(hostport: &str) -> Result<(String, Option<u16>), &'static str> {
    // `[::1]:2222` or `host:2222` or `host`.
    if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("an unclosed `[`")?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(
                p.parse()
                    .map_err(|_| "the port is not a number from 1 to 65535")?,
            ),
            None if after.is_empty() => None,
            None => return Err("text after `]`"),
        };
        return Ok((host.to_string(), port));
    }
    match hostport.rsplit_once(':') {
        Some((host, p)) => {
            let port: u16 = p
                .parse()
                .map_err(|_| "the port is not a number from 1 to 65535")?;
            if port == 0 {
                return Err("the port is not a number from 1 to 65535");
            }
            Ok((host.to_string(), Some(port)))
        }
        None => Ok((hostport.to_string(), None)),
    }
}

/// How remote workspaces are reached, from `[workspace]`.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The toolshed program on the remote side.
    pub worker: String,
    /// The sandbox mode the worker runs commands in.
    pub sandbox: SandboxMode,
    /// Where toolshed keeps its `known_hosts` and master-connection sockets.
    pub ssh_dir: PathBuf,
    /// A key file to log in with (else the agent's and ssh's defaults).
    pub identity: Option<PathBuf>,
    /// More arguments for `ssh` (`-o Name=value` pairs), before the host.
    pub ssh_options: Vec<String>,
    /// The container runtime's program, instead of the scheme's name.
    pub runtime: Option<String>,
    /// How long a call and a connection wait.
    pub timeout: Duration,
}

/// A message for [`RemoteError::Trust`].
type Error = std::borrow::Cow<'static, str>;

/// toolshed's own `known_hosts` under `ssh_dir`.
pub fn known_hosts(ssh_dir: &Path) -> PathBuf {
    ssh_dir.join("known_hosts")
}

fn quoted(path: &Path) -> String {
    format!("\"{}\"", path.display())
}

fn ssh_base(options: &RemoteOptions) -> Vec<String> {
    let mut files = vec![quoted(&known_hosts(&options.ssh_dir))];
    if let Some(home) = crate::sandbox::home_dir() {
        files.push(quoted(&home.join(".ssh/known_hosts")));
    }
    let mut c: Vec<String> = vec![
        "ssh".into(),
        "-T".into(),
        "-e".into(),
        "none".into(),
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        "StrictHostKeyChecking=yes".into(),
        "-o".into(),
        format!("UserKnownHostsFile={}", files.join(" ")),
        "-o".into(),
        "ServerAliveInterval=15".into(),
        "-o".into(),
        "ServerAliveCountMax=3".into(),
        "-o".into(),
        format!("ConnectTimeout={}", options.timeout.as_secs().clamp(1, 60)),
    ];
    // A socket path longer than the kernel's 108 bytes cannot be bound: without a short
    // enough directory, every connection is its own.
    let control = options.ssh_dir.join("cm-%C");
    if control.as_os_str().len() + 40 < 104 {
        c.extend([
            "-o".into(),
            "ControlMaster=auto".into(),
            "-o".into(),
            format!("ControlPath={}", quoted(&control)),
            "-o".into(),
            "ControlPersist=60".into(),
        ]);
    }
    if let Some(key) = &options.identity {
        c.extend([
            "-i".into(),
            key.display().to_string(),
            "-o".into(),
            "IdentitiesOnly=yes".into(),
        ]);
    }
    c
}

/// `word` quoted for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// What went wrong, from what `ssh` (or the runtime) printed, with what to do.
fn explain(target: &Target, said: &str) -> Option<String> {
    let place = target.display.as_str();
    if said.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        let offered = fingerprint_in(said).unwrap_or_else(|| "a different key".into());
        return Some(format!(
            "the host key of {place} has changed: the server now offers {offered}, which is \
             not the key toolshed trusts, so the connection was refused. Someone may be \
             intercepting it, or the server was reinstalled. If you know the key changed, \
             check {offered} with the server's administrator, then run `toolshed ssh trust \
             {place} --replace`"
        ));
    }
    if said.contains("Host key verification failed") || said.contains("host key is known") {
        return Some(format!(
            "the host key of {place} is not known, and toolshed does not trust a host on first \
             sight. Check the server's key fingerprint, then run `toolshed ssh trust {place}` \
             (it shows the fingerprints it adds)"
        ));
    }
    if said.contains("Permission denied (") {
        return Some(format!(
            "{place} refused every key offered ({}); add your key to the SSH agent (ssh-add) \
             or name one with [workspace] identity = \"~/.ssh/id_ed25519\"",
            said.lines().last().unwrap_or(said).trim()
        ));
    }
    if said.contains("command not found") || said.contains("not found") && said.contains("worker") {
        return Some(format!(
            "toolshed is not installed on {place} (or not on the PATH of a non-interactive \
             login): install it there, or name it with [workspace] worker = \
             \"/path/to/toolshed\" ({})",
            said.trim()
        ));
    }
    None
}

fn fingerprint_in(text: &str) -> Option<String> {
    let start = text.find("SHA256:")?;
    let rest = &text[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '.')
        .unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Fetches `url`'s host keys with `ssh-keyscan` and adds them to toolshed's
/// `known_hosts` (replacing those it had for the host with `replace`); the fingerprints
/// added. Refuses a host already trusted with other keys unless `replace`.
pub fn trust(url: &RemoteUrl, ssh_dir: &Path, replace: bool) -> Result<Vec<String>, RemoteError> {
    trust_inner(url, ssh_dir, replace).map_err(|e| RemoteError::Trust(e.into_owned()))
}

fn trust_inner(url: &RemoteUrl, ssh_dir: &Path, replace: bool) -> Result<Vec<String>, Error> {
    let RemoteUrl::Ssh { host, port, .. } = url else {
        return Err(format!(
            "{} is a container: it has no host key to trust",
            url.display()
        )
        .into());
    };
    let mut scan = Command::new("ssh-keyscan");
    scan.args(["-T", "10"]);
    if let Some(p) = port {
        scan.args(["-p", &p.to_string()]);
    }
    let out = scan
        .arg(host)
        .output()
        .map_err(|e| format!("cannot run ssh-keyscan (is openssh-client installed?): {e}"))?;
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && l.split_whitespace().count() >= 3)
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        return Err(format!(
            "{host} offered no host key ({}); is an SSH server listening there?",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    std::fs::create_dir_all(ssh_dir)
        .map_err(|e| format!("cannot create {}: {e}", ssh_dir.display()))?;
    let file = known_hosts(ssh_dir);
    let name = match port {
        Some(p) if *p != 22 => format!("[{host}]:{p}"),
        _ => host.clone(),
    };
    let existing = std::fs::read_to_string(&file).unwrap_or_default();
    let known: Vec<&str> = existing
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(name.as_str()))
        .collect();
    fn key(line: &str) -> Vec<&str> {
        line.split_whitespace().skip(1).take(2).collect()
    }
    let same = |line: &str| known.iter().any(|k| key(k) == key(line));
    if !known.is_empty() && !replace && !lines.iter().all(|l| same(l)) {
        return Err(format!(
            "{name} is already trusted with other keys than it offers now; if the server's \
             key really changed, run again with --replace"
        )
        .into());
    }
    let mut kept: Vec<String> = existing
        .lines()
        .filter(|l| l.split_whitespace().next() != Some(name.as_str()))
        .map(str::to_string)
        .collect();
    kept.extend(lines.iter().cloned());
    let body = kept.join("\n") + "\n";
    write_private(&file, body.as_bytes())?;
    fingerprints(&lines.join("\n"))
}

fn write_private(file: &Path, body: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = file.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    f.write_all(body)
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("cannot write {}: {e}", file.display()).into())
}

/// `ssh-keygen -lf` of known_hosts lines: `256 SHA256:… host (ED25519)` each.
fn fingerprints(lines: &str) -> Result<Vec<String>, Error> {
    use std::io::Write;
    let mut child = Command::new("ssh-keygen")
        .args(["-l", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ssh-keygen: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(lines.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("ssh-keygen failed: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_bad_ones_say_why() {
        assert_eq!(
            RemoteUrl::parse("ssh://ci@build.example:2222/srv/app/").unwrap(),
            RemoteUrl::Ssh {
                user: Some("ci".into()),
                host: "build.example".into(),
                port: Some(2222),
                path: "/srv/app".into()
            }
        );
        assert_eq!(
            RemoteUrl::parse("ssh://[::1]:22/w").unwrap().place(),
            "::1:22"
        );
        assert_eq!(
            RemoteUrl::parse("docker://box/work").unwrap(),
            RemoteUrl::Container {
                runtime: "docker".into(),
                container: "box".into(),
                path: "/work".into()
            }
        );
        for (bad, says) in [
            ("ssh://host", "no path"),
            ("ssh://host:99999/w", "port"),
            ("ssh://-oProxyCommand=x/w", "host name"),
            ("ssh://host/a/../b", "`..`"),
            ("ftp://host/w", "unknown scheme"),
            ("docker://-it/w", "container"),
            ("ssh://host/a b", "spaces"),
        ] {
            let e = RemoteUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(e.contains("expected ssh://"), "{e}");
        }
    }

    #[test]
    fn the_remote_command_is_quoted_word_by_word() {
        assert_eq!(shell_quote("/srv/my app"), "'/srv/my app'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("plain/path-1"), "plain/path-1");
        let url = RemoteUrl::parse("ssh://u@h:2200/srv/w").unwrap();
        let t = url.target(&RemoteOptions {
            worker: "/opt/tool shed/toolshed".into(),
            sandbox: SandboxMode::WorkspaceWrite,
            ssh_dir: "/d/ssh".into(),
            identity: None,
            ssh_options: vec![],
            runtime: None,
            timeout: Duration::from_secs(30),
        });
        let tail = t
            .command
            .iter()
            .skip_while(|w| *w != "--")
            .collect::<Vec<_>>();
        assert_eq!(tail[1], "'/opt/tool shed/toolshed'");
        assert!(t.command.contains(&"StrictHostKeyChecking=yes".to_string()));
        assert!(t.command.contains(&"2200".to_string()));
        assert_eq!(t.display, "ssh://u@h:2200/srv/w");
    }

    #[test]
    fn a_changed_host_key_names_the_offered_fingerprint() {
        let t = Target {
            command: vec![],
            display: "ssh://h/w".into(),
            timeout: Duration::from_secs(1),
            explain: None,
        };
        let said = "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nThe fingerprint for \
                    the ED25519 key sent by the remote host is\nSHA256:abcDEF123+/x.\nHost key \
                    verification failed.";
        let e = explain(&t, said).unwrap();
        assert!(e.contains("SHA256:abcDEF123+/x"), "{e}");
        assert!(e.contains("--replace"), "{e}");
    }
}

//! Finding Chromium and starting it: inside the command sandbox, headless, its profile in
//! the sandbox's private `/tmp`, in a network of its own whose one way out is an egress
//! proxy under the web tools' rules, driven over a pipe.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolshed_ops::process::{OutputLimits, Process, ProcessOps, SpawnRequest, Stdin, Stop, Stream};
use toolshed_ops::sandbox::{PROXY_PORT, SandboxMode};

use super::cdp::Cdp;
use super::{PageState, Settings};

/// Where Chromium is looked for when `[browser] executable` is not set: Debian's binary
/// first (its `/usr/bin/chromium` is a shell wrapper), then names on `PATH`.
const CANDIDATES: &[&str] = &[
    "/usr/lib/chromium/chromium",
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
];

/// How long a cold Chromium may take to answer its first command.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The profile directory, in the sandbox's private `/tmp` (gone with the sandbox).
const PROFILE: &str = "/tmp/toolshed-browser";

/// The Chromium binary to run: the configured one, else the first candidate found.
pub(super) fn find(configured: Option<&str>) -> Result<PathBuf, NoChromium> {
    if let Some(path) = configured {
        return crate::find_program(path).ok_or_else(|| NoChromium::NotExecutable(path.into()));
    }
    CANDIDATES
        .iter()
        .find_map(|c| crate::find_program(c))
        .ok_or(NoChromium::NotFound)
}

/// Which Chromium the machine has, for `doctor`: its path and version, or why none.
pub fn detect(executable: Option<&str>) -> Result<(String, String), NoChromium> {
    let path = find(executable)?;
    let output = std::process::Command::new(&path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|source| NoChromium::CannotRun {
            path: path.display().to_string(),
            source,
        })?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
    Ok((path.display().to_string(), version))
}

/// Why no Chromium can be used; the message says what to install or fix.
#[derive(Debug, thiserror::Error)]
pub enum NoChromium {
    /// `[browser] executable` names what is not an executable file.
    #[error(
        "`[browser] executable` is `{0}`, which is not an executable file; install Chromium \
         (Debian: `apt-get install chromium`) or fix the path"
    )]
    NotExecutable(String),
    /// None of the usual names is installed.
    #[error(
        "no Chromium found (looked for /usr/lib/chromium/chromium, chromium, chromium-browser, \
         google-chrome on PATH); install it (Debian: `apt-get install chromium`) or set \
         `[browser] executable`"
    )]
    NotFound,
    /// It was found and does not start.
    #[error("{path} cannot run: {source}")]
    CannotRun {
        /// The executable.
        path: String,
        /// Why it did not start.
        source: std::io::Error,
    },
}

/// Whether Chromium's own sandbox can run here: not as root (it refuses to). `doctor` says
/// which way it runs.
pub fn own_sandbox_works() -> bool {
    use std::os::unix::fs::MetadataExt;
    // `/proc/self` belongs to the process's effective user.
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() != 0)
}

/// Why the browser cannot start on this backend, or `None` when it can: it runs only inside
/// the command sandbox, in a network of its own whose one way out is a proxy under the web
/// tools' rules — that is where those rules hold for every connection it makes.
pub(super) fn refusal(processes: &dyn ProcessOps) -> Option<String> {
    match processes.sandbox(Some(SandboxMode::ReadOnly)) {
        Ok(Some(_)) => None,
        Ok(None) => Some(
            "the browser runs only inside the command sandbox, where every request it makes goes through toolshed's network rules; this process backend has no sandbox".into(),
        ),
        Err(e) => Some(format!(
            "the browser runs inside the command sandbox, which cannot start here: {e}"
        )),
    }
}

/// A running Chromium.
pub(crate) struct Browser {
    pub process: Arc<Process>,
    pub cdp: Arc<Cdp>,
    /// Counts the browsers this host started: sessions of an earlier one are lost.
    pub generation: u64,
    /// E.g. `Chrome/156.0.8078.114`.
    pub version: String,
    /// Its pages by DevTools session, kept up to date from its events.
    pub pages: Arc<Mutex<HashMap<String, Arc<PageState>>>>,
}

impl Browser {
    /// Starts Chromium and waits for its first answer.
    pub(super) async fn launch(
        processes: &dyn ProcessOps,
        settings: &Settings,
        generation: u64,
    ) -> Result<Self, String> {
        if let Some(why) = refusal(processes) {
            return Err(why);
        }
        let executable = find(settings.executable.as_deref()).map_err(|e| e.to_string())?;
        let mut flags = vec![
            "--headless".to_string(),
            "--remote-debugging-pipe".into(),
            format!("--user-data-dir={PROFILE}"),
            "--no-first-run".into(),
            "--no-default-browser-check".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-extensions".into(),
            "--disable-default-apps".into(),
            "--disable-breakpad".into(),
            "--mute-audio".into(),
            "--hide-scrollbars".into(),
            // Every connection, loopback too, through its sandbox's egress proxy; WebRTC
            // may not go around it over UDP.
            format!("--proxy-server=http://127.0.0.1:{PROXY_PORT}"),
            "--proxy-bypass-list=<-loopback>".into(),
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
            format!("--window-size={},{}", settings.width, settings.height),
        ];
        if !own_sandbox_works() {
            flags.push("--no-sandbox".into());
        }
        flags.push("about:blank".into());
        // The pipe protocol reads commands on fd 3 and writes on fd 4; the process backend
        // hands over stdin and stdout, so a shell moves them there (and its stdout to
        // stderr, which is kept for the reason of a failed start).
        let mut request = SpawnRequest::new("/bin/sh")
            .args(
                [
                    "-c".to_string(),
                    "exec \"$0\" \"$@\" 3<&0 4>&1 </dev/null 1>&2".into(),
                    executable.display().to_string(),
                ]
                .into_iter()
                .chain(flags),
            )
            .stdin(Stdin::Stream)
            .env("HOME", PROFILE)
            .env("XDG_CONFIG_HOME", format!("{PROFILE}/config"))
            .env("XDG_CACHE_HOME", format!("{PROFILE}/cache"))
            .limits(OutputLimits {
                head_bytes: 4 * 1024,
                tail_bytes: 16 * 1024,
                kill_after_bytes: None,
            });
        request.sandbox = Some(SandboxMode::ReadOnly);
        request.web_network = true;
        let process = Arc::new(
            processes
                .spawn(&request)
                .map_err(|e| format!("cannot start Chromium ({}): {e}", executable.display()))?,
        );
        let stdio = process
            .take_stdio()
            .ok_or("this process backend cannot hand over a child's pipes")?;
        let pipes = stdio
            .into_pipes()
            .map_err(|e| format!("cannot use Chromium's pipes: {e}"))?;
        let cdp = Cdp::start(pipes.0, pipes.1);
        let version = match cdp
            .call("Browser.getVersion", json!({}), None, START_TIMEOUT)
            .await
        {
            Ok(v) => v["product"].as_str().unwrap_or("Chromium").to_string(),
            Err(e) => {
                process.wait(Duration::from_millis(300)).await;
                process.terminate(Stop::graceful()).await;
                return Err(format!(
                    "Chromium ({}) did not start: {e}{}",
                    executable.display(),
                    stderr_tail(&process)
                ));
            }
        };
        tracing::info!(%version, pid = process.pid(), "browser started");
        Ok(Self {
            process,
            cdp,
            generation,
            version,
            pages: Arc::default(),
        })
    }

    /// Whether it still runs and answers.
    pub(super) fn alive(&self) -> bool {
        !self.cdp.is_closed() && self.process.is_running()
    }

    /// Asks it to close, then stops its process tree.
    pub(super) async fn stop(&self) {
        let _ = self
            .cdp
            .call("Browser.close", json!({}), None, Duration::from_secs(2))
            .await;
        self.process.terminate(Stop::graceful()).await;
    }

    /// The memory its processes use, in bytes (proportional set size: shared pages
    /// counted once across them), or `None` where that cannot be read.
    pub(super) fn memory(&self) -> Option<u64> {
        tree_pss(self.process.pid())
    }
}

/// The end of what Chromium wrote on stderr, for a failed start.
fn stderr_tail(process: &Process) -> String {
    let all = process.snapshot(Stream::Stderr).joined(|_| b"\n".to_vec());
    let text = String::from_utf8_lossy(&all);
    // Chromium writes noise (D-Bus, GPU) before the line that matters: the last lines.
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(5)..].join("\n");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; it said:\n{tail}")
    }
}

/// The summed PSS of `root` and its descendants, from `/proc`.
fn tree_pss(root: u32) -> Option<u64> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent is the second field after the command name, which may hold spaces.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        children.entry(ppid).or_default().push(pid);
    }
    let (mut total, mut stack) = (0u64, vec![root]);
    while let Some(pid) = stack.pop() {
        if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
            total += rollup
                .lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .unwrap_or(0)
                * 1024;
        }
        stack.extend(children.get(&pid).into_iter().flatten());
    }
    Some(total)
}

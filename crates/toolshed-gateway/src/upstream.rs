//! One mounted server: its process, the MCP session with it, and starting it again.
//!
//! The server starts when a call first needs it (or at `init`, to list its tools), runs in
//! the command sandbox like every command, and speaks MCP over its stdin and stdout. When
//! it exits or stops answering, the next call starts it again; repeated failures back off
//! (1 s, 2 s, 4 s, … up to a minute) and each failure's message carries the tail of what
//! the server wrote to stderr. A server unused for its idle timeout is stopped.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolshed_ops::ProcessOps;
use toolshed_ops::process::{OutputLimits, Process, SpawnRequest, Stdin, Stream};
use toolshed_ops::sandbox::SandboxMode;

use crate::client::{Client, Era};
use crate::http::HttpTarget;

/// How long a server may take to start and answer the handshake, unless its manifest says.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait between attempts to start a failing server.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long stopping a server waits for the last of its stderr to reach its log.
const FOLLOWER_GRACE: Duration = Duration::from_secs(5);
/// The most of a server's stderr quoted in a failure.
const STDERR_TAIL: usize = 2000;

/// How to start the server.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub workdir: String,
    pub sandbox: Option<SandboxMode>,
    pub start_timeout: Option<Duration>,
    /// Set for a server reached over HTTP: then nothing is spawned.
    pub http: Option<HttpTarget>,
    /// The protocol era to greet it in.
    pub era: Era,
    /// It may ask the calling client's (or toolshed's) model: declared and granted (`llm`).
    pub sampling: bool,
    /// The hosts a sandboxed server may reach (`None`: the sandbox's own network rules, for a
    /// plugin granted `*`).
    pub network_hosts: Option<Vec<String>>,
    /// A directory of its own it may write (package caches), outside the workspace.
    pub cache: Option<std::path::PathBuf>,
}

struct Connection {
    client: Arc<Client>,
    /// The server's process, for a server toolshed runs.
    process: Option<Arc<Process>>,
}

/// Why starting failed, and when to try again.
struct Failures {
    count: u32,
    retry_at: Instant,
    message: String,
}

/// One mounted server.
pub(crate) struct Upstream {
    pub(crate) name: String,
    launch: Launch,
    processes: Arc<dyn ProcessOps>,
    /// Told when the server says its tools changed.
    pub(crate) tools_changed: Arc<tokio::sync::Notify>,
    /// Who watches which of its resources.
    pub(crate) watchers: Arc<crate::watch::Watchers>,
    connection: tokio::sync::Mutex<Option<Connection>>,
    failures: Mutex<Option<Failures>>,
    /// Milliseconds since `epoch` of the last call's start.
    last_used: AtomicU64,
    in_flight: AtomicUsize,
    epoch: Instant,
    /// Where its stderr and its starts and ends are logged.
    log: Option<std::path::PathBuf>,
    /// Set once the server ended the session when asked `server/discover`: it is greeted
    /// with `initialize` from then on.
    legacy_only: std::sync::atomic::AtomicBool,
    /// The tasks copying each started process's stderr into the log: waited for when the
    /// server stops, so nothing writes into its plugin's directory after that (an
    /// uninstall removes it next).
    followers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// A call in flight: keeps an idle server from being stopped under it.
pub(crate) struct InFlight<'a>(&'a Upstream);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Upstream {
    /// Whether the server may ask for completions (its manifest declares `llm`, granted).
    pub(crate) fn may_sample(&self) -> bool {
        self.launch.sampling
    }

    pub(crate) fn new(
        name: String,
        launch: Launch,
        processes: Arc<dyn ProcessOps>,
        log: Option<std::path::PathBuf>,
    ) -> Self {
        Self {
            log,
            legacy_only: std::sync::atomic::AtomicBool::new(false),
            followers: Mutex::default(),
            name,
            launch,
            processes,
            tools_changed: Arc::default(),
            watchers: Arc::default(),
            connection: tokio::sync::Mutex::new(None),
            failures: Mutex::new(None),
            last_used: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            epoch: Instant::now(),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_used.store(now, Ordering::Relaxed);
    }

    /// Marks a call in flight until the guard is dropped.
    pub(crate) fn begin(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.touch();
        InFlight(self)
    }

    /// The session with the server if it runs now; never starts it.
    pub(crate) async fn current(&self) -> Option<Arc<Client>> {
        let connection = self.connection.lock().await;
        let c = connection.as_ref()?;
        (c.process.as_ref().is_none_or(|p| p.is_running()) && !c.client.is_closed())
            .then(|| c.client.clone())
    }

    /// The session with the running server, starting it when it is not running.
    pub(crate) async fn peer(&self) -> Result<Arc<Client>, String> {
        let mut connection = self.connection.lock().await;
        if let Some(c) = connection.as_ref() {
            if c.process.as_ref().is_none_or(|p| p.is_running()) && !c.client.is_closed() {
                return Ok(c.client.clone());
            }
            let why = c
                .process
                .as_ref()
                .map_or_else(|| "ended the session".to_string(), |p| exited(p));
            tracing::warn!(server = %self.name, "MCP server {why}; starting it again");
        }
        *connection = None;
        if let Some(f) = self.failures().as_ref()
            && Instant::now() < f.retry_at
        {
            let wait = f.retry_at.saturating_duration_since(Instant::now());
            return Err(format!(
                "{} (the next attempt to start it is in {} s)",
                f.message,
                wait.as_secs().max(1)
            ));
        }
        let mut outcome = self.start().await;
        if let Err((message, true)) = &outcome {
            // A server of the legacy era that ended the session on `server/discover`:
            // started again and greeted the old way, now and from now on.
            self.note(message);
            self.legacy_only.store(true, Ordering::Relaxed);
            outcome = self.start().await;
        }
        match outcome.map_err(|(message, _)| message) {
            Ok(started) => {
                *self.failures() = None;
                let client = started.client.clone();
                *connection = Some(started);
                // A server started again is asked again for the resources still watched
                // (the old session's listen streams are gone with it).
                self.watchers.forget_listens();
                // What is watched now; one watched first after this is asked by its watcher.
                let watched = self.watchers.uris();
                if !watched.is_empty() {
                    let again = client.clone();
                    let watchers = self.watchers.clone();
                    tokio::spawn(async move {
                        let _asking = watchers.asking.lock().await;
                        for uri in watched {
                            // Gone meanwhile, or asked on this session by a new first
                            // watcher already.
                            if !watchers.is_watched(&uri) || watchers.listens_on(&uri, &again) {
                                continue;
                            }
                            let asked =
                                tokio::time::timeout(crate::watch::ASK_LIMIT, again.watch(&uri))
                                    .await;
                            match asked.unwrap_or_else(|_| {
                                Err(crate::client::RpcError::Closed(
                                    "no answer within 10 s".into(),
                                ))
                            }) {
                                Ok(listen) => watchers.listening(&uri, &again, listen),
                                Err(e) => {
                                    tracing::debug!(error = ?e, "a restarted MCP server refused to watch a resource")
                                }
                            }
                        }
                    });
                }
                Ok(client)
            }
            Err(message) => {
                self.note(&message);
                let mut failures = self.failures();
                let count = failures.as_ref().map_or(0, |f| f.count) + 1;
                let backoff = Duration::from_secs(1 << (count - 1).min(6)).min(MAX_BACKOFF);
                *failures = Some(Failures {
                    count,
                    retry_at: Instant::now() + backoff,
                    message: message.clone(),
                });
                Err(message)
            }
        }
    }

    /// Where the era an `auto` server turned out to speak is kept: a legacy one is greeted
    /// with `initialize` at once from then on, without waiting on `server/discover`.
    fn era_file(&self) -> Option<std::path::PathBuf> {
        Some(self.log.as_ref()?.with_file_name("protocol"))
    }

    /// Keeps the era a server greeted in `auto` mode speaks.
    fn remember_era(&self, client: &Client) {
        if self.launch.era != Era::Auto {
            return;
        }
        let Some(file) = self.era_file() else {
            return;
        };
        let kept = if client.is_modern() {
            std::fs::remove_file(&file).or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            })
        } else {
            std::fs::write(&file, "legacy\n")
        };
        if let Err(e) = kept {
            tracing::debug!(server = %self.name, error = %e, "cannot keep the server's protocol era");
        }
    }

    /// Adds a line to the server's log.
    pub(crate) fn note(&self, text: &str) {
        if let Some(path) = &self.log {
            crate::log::note(path, text);
        }
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, Option<Failures>> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the server cannot be used now, if its last start failed.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failures().as_ref().map(|f| f.message.clone())
    }

    /// Starts the server (or connects to it) and greets it; on failure, why, and whether
    /// greeting it the legacy way may work.
    async fn start(&self) -> Result<Connection, (String, bool)> {
        let launch = &self.launch;
        let timeout = launch.start_timeout.unwrap_or(START_TIMEOUT);
        let remembered = self
            .era_file()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .is_some_and(|t| t.trim() == "legacy");
        let era = if self.legacy_only.load(Ordering::Relaxed)
            || (launch.era == Era::Auto && remembered)
        {
            Era::Legacy
        } else {
            launch.era
        };
        if let Some(target) = &launch.http {
            let client = Client::connect_http(
                target.clone(),
                timeout,
                self.tools_changed.clone(),
                self.watchers.clone(),
                era,
                launch.sampling,
            )
            .await
            .map_err(|e| {
                (
                    format!(
                        "MCP server `{}` failed the handshake ({})",
                        self.name, e.message
                    ),
                    e.try_legacy,
                )
            })?;
            tracing::info!(server = %self.name, "MCP server connected over HTTP");
            self.remember_era(&client);
            self.note(&format!(
                "connected to {}, speaking MCP {}",
                target.url,
                client.protocol()
            ));
            return Ok(Connection {
                client: Arc::new(client),
                process: None,
            });
        }
        self.spawn(era, timeout).await
    }

    async fn spawn(&self, era: Era, timeout: Duration) -> Result<Connection, (String, bool)> {
        let launch = &self.launch;
        let mut request = SpawnRequest::new(&launch.program)
            .args(launch.args.iter().cloned())
            .workdir(&launch.workdir)
            .stdin(Stdin::Stream)
            .limits(OutputLimits {
                head_bytes: 8 * 1024,
                tail_bytes: 64 * 1024,
                kill_after_bytes: None,
            });
        if let Some(cache) = &launch.cache {
            match std::fs::create_dir_all(cache) {
                Ok(()) => {
                    // Package runners (`npx -y`, `uvx`) keep what they fetch here rather
                    // than in a home the sandbox does not let them write.
                    for (name, sub) in [
                        ("npm_config_cache", "npm"),
                        ("UV_CACHE_DIR", "uv"),
                        ("XDG_CACHE_HOME", "xdg"),
                    ] {
                        request = request.env(name, cache.join(sub).display().to_string());
                    }
                    request.writable.push(cache.clone());
                }
                Err(e) => {
                    tracing::warn!(server = %self.name, cache = %cache.display(), error = %e, "cannot create the MCP server's cache directory")
                }
            }
        }
        for (name, value) in &launch.env {
            request = request.env(name, value);
        }
        request.sandbox = launch.sandbox;
        request.network_hosts.clone_from(&launch.network_hosts);
        // What the configured command names stays visible to it wherever it lives (a
        // server installed in a virtualenv or node_modules under /tmp, say).
        request.visible = std::iter::once(&launch.program)
            .chain(&launch.args)
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
            .collect();
        let process = self.processes.spawn(&request).map_err(|e| {
            (
                format!("MCP server `{}` cannot start: {e}", self.name),
                false,
            )
        })?;
        let process = Arc::new(process);
        if let Some(path) = &self.log {
            crate::log::note(
                path,
                &format!("started `{}` (pid {})", launch.program, process.pid()),
            );
            let follower = crate::log::follow(process.clone(), path.clone());
            let mut followers = self.followers.lock().unwrap_or_else(|e| e.into_inner());
            followers.retain(|f| !f.is_finished());
            followers.push(follower);
        }
        let stdio = process.take_stdio().ok_or_else(|| {
            (
                format!(
                    "MCP server `{}` cannot start: this process backend cannot hand over a \
                     child's stdin and stdout",
                    self.name
                ),
                false,
            )
        })?;
        let pipes = stdio.into_pipes().map_err(|e| {
            (
                format!("MCP server `{}`: cannot use its pipes: {e}", self.name),
                false,
            )
        })?;
        let connected = Client::connect(
            pipes.0,
            pipes.1,
            timeout,
            self.tools_changed.clone(),
            self.watchers.clone(),
            era,
            launch.sampling,
        )
        .await;
        let client = match connected {
            Ok(client) => Arc::new(client),
            Err(e) => {
                // Give its last words a moment to arrive, then stop what is left of it:
                // a server that failed its handshake is not used.
                process.wait(Duration::from_millis(200)).await;
                process
                    .terminate(toolshed_ops::process::Stop::graceful())
                    .await;
                return Err((
                    format!(
                        "MCP server `{}` failed the handshake ({}){}",
                        self.name,
                        e.message,
                        stderr_tail(&process)
                    ),
                    e.try_legacy,
                ));
            }
        };
        tracing::info!(server = %self.name, pid = process.pid(), "MCP server started");
        self.remember_era(&client);
        self.note(&format!("speaking MCP {}", client.protocol()));
        Ok(Connection {
            client,
            process: Some(process),
        })
    }

    /// The error for a call whose session broke: what became of the server.
    pub(crate) async fn broken(&self, error: &str) -> String {
        let connection = self.connection.lock().await;
        match connection.as_ref().and_then(|c| c.process.as_ref()) {
            Some(process) if !process.is_running() => {
                format!(
                    "MCP server `{}` {}{}",
                    self.name,
                    exited(process),
                    stderr_tail(process)
                )
            }
            _ => format!("MCP server `{}`: {error}", self.name),
        }
    }

    /// The server's `initialize` result, once it has started.
    pub(crate) async fn info(&self) -> Option<serde_json::Value> {
        let connection = self.connection.lock().await;
        Some(connection.as_ref()?.client.info.clone())
    }

    /// Stops the server if nothing used it for `idle`; whether it did.
    pub(crate) async fn stop_if_idle(&self, idle: Duration) -> bool {
        // A server whose resources are watched is in use: stopped, it would tell of no
        // more changes.
        if self.in_flight.load(Ordering::Relaxed) > 0 || self.watchers.any() {
            return false;
        }
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let since =
            Duration::from_millis(now.saturating_sub(self.last_used.load(Ordering::Relaxed)));
        if since < idle {
            return false;
        }
        let mut connection = self.connection.lock().await;
        if connection.is_none() {
            return false;
        }
        tracing::info!(server = %self.name, "stopping the idle MCP server");
        if let Some(c) = connection.take() {
            shut(c).await;
        }
        true
    }

    /// Stops the server, and returns once its log is complete: nothing it ran writes
    /// into the plugin's directory afterwards.
    pub(crate) async fn stop(&self) {
        if let Some(c) = self.connection.lock().await.take() {
            shut(c).await;
        }
        let followers =
            std::mem::take(&mut *self.followers.lock().unwrap_or_else(|e| e.into_inner()));
        for mut follower in followers {
            // Its process has ended (stopped above, or failed to start and was stopped
            // then): what remains is copying its last output. A follower stuck on a full
            // disk is not waited for without end.
            if tokio::time::timeout(FOLLOWER_GRACE, &mut follower)
                .await
                .is_err()
            {
                follower.abort();
                let _ = follower.await;
            }
        }
    }
}

async fn shut(connection: Connection) {
    let Connection { client, process } = connection;
    // Closing its stdin is how a stdio server learns to exit; then its tree is stopped.
    // An HTTP session is ended with a `DELETE` as the client goes.
    drop(client);
    if let Some(process) = process {
        process
            .terminate(toolshed_ops::process::Stop::graceful())
            .await;
    }
}

pub(crate) fn exited(process: &Process) -> String {
    use toolshed_ops::process::ExitStatus;
    match process.exit().map(|e| e.status) {
        Some(ExitStatus::Code(code)) => format!("exited with code {code}"),
        Some(ExitStatus::Signal(signal)) => format!("was killed by signal {signal}"),
        None => "stopped answering".into(),
    }
}

/// `": <the end of its stderr>"`, or nothing when it wrote nothing there.
fn stderr_tail(process: &Process) -> String {
    let all = process
        .snapshot(Stream::Stderr)
        .joined(|n| format!("\n[{n} bytes]\n").into_bytes());
    let text = String::from_utf8_lossy(&all);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let start = text.len().saturating_sub(STDERR_TAIL);
    let start = (start..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    format!("; its stderr ends: {}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server whose handshake fails while it is still running: once `stop` returns, its
    /// log holds how it ended and nothing writes to it any more, so an uninstall can
    /// remove the plugin's directory (it once failed with "Directory not empty").
    #[tokio::test]
    async fn stopping_a_server_that_failed_to_start_waits_for_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let ops = Arc::new(toolshed_ops::LocalOps::new(dir.path()).unwrap());
        let processes: Arc<dyn ProcessOps> = Arc::new(
            toolshed_ops::LocalProcessOps::new(ops, toolshed_ops::ProcessConfig::default())
                .unwrap(),
        );
        std::fs::create_dir(dir.path().join("plugin")).unwrap();
        let log = crate::log::log_path(&dir.path().join("plugin"));
        let launch = Launch {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "echo no key >&2; exec 1>&-; sleep 2; echo late >&2".into(),
            ],
            env: Vec::new(),
            workdir: dir.path().display().to_string(),
            sandbox: None,
            start_timeout: Some(Duration::from_secs(10)),
            http: None,
            era: Era::Legacy,
            sampling: false,
            network_hosts: None,
            cache: None,
        };
        let upstream = Upstream::new("broken".into(), launch, processes, Some(log.clone()));
        let Err(err) = upstream.peer().await else {
            panic!("a server that closed its stdout was greeted");
        };
        assert!(err.contains("no key"), "{err}");
        upstream.stop().await;
        let written = std::fs::read_to_string(&log).unwrap();
        assert!(
            written.contains("the server was killed by signal")
                || written.contains("the server exited"),
            "{written}"
        );
        assert!(!written.contains("late"), "{written}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(std::fs::read_to_string(&log).unwrap(), written);
    }
}

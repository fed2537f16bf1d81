//! Workspaces on other machines: `toolshed worker` (the far side), `toolshed ssh trust`,
//! and opening a host whose workspace is an `ssh://`, `docker://` or `podman://` URL.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolshed_host::config::{Config, RemoteWorkspaceConfig};
use toolshed_ops::Ops;
use toolshed_ops::remote::url::{RemoteOptions, RemoteUrl, is_remote};
use toolshed_ops::remote::wire::{Hello, PROTOCOL, WireEnforcement};
use toolshed_ops::remote::{RemoteOps, serve};
use toolshed_ops::sandbox::SandboxMode;

use crate::Failure;
use crate::cli::GlobalArgs;

/// `toolshed worker --root DIR`: serves the workspace's operations on stdin and stdout
/// until stdin ends. Nothing else is ever written to stdout.
pub(crate) async fn worker(
    global: &GlobalArgs,
    root: &Path,
    sandbox: Option<&str>,
) -> Result<(), Failure> {
    if !root.is_dir() {
        return Err(Failure::Usage(format!(
            "--root {} is not a directory; name the workspace directory on this machine",
            root.display()
        )));
    }
    let mut loaded = crate::builtins::config_sources(root, global.config.clone())
        .load()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(mode) = sandbox {
        SandboxMode::parse(mode).map_err(|e| Failure::Usage(format!("--sandbox: {e}")))?;
        loaded.config.sandbox.mode = mode.to_string();
    }
    let mode = loaded
        .config
        .sandbox
        .mode()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let data_dir = crate::context::data_dir(global)?;
    let helper = crate::context::sandbox_helper()?;
    let ops = toolshed_host::HostBuilder::new(root, data_dir)
        .config(loaded)
        .sandbox_helper(helper)
        .worker_ops()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let (enforcement, sandbox_error) = if mode == SandboxMode::FullAccess {
        (None, None)
    } else {
        let process = ops.process.clone();
        match tokio::task::spawn_blocking(move || process.check_sandbox()).await {
            Ok(Some(Ok(e))) => (Some(WireEnforcement::from(&e)), None),
            Ok(Some(Err(e))) => (None, Some(e.to_string())),
            Ok(None) => (None, None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    if let Some(why) = &sandbox_error {
        tracing::warn!(
            "the sandbox cannot be built here, so commands are refused: {why}; run the \
             workspace with [sandbox] mode = \"full-access\" to run them unconfined"
        );
    }
    #[allow(clippy::disallowed_methods)]
    let shown = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let hello = Hello {
        protocol: PROTOCOL,
        version: env!("CARGO_PKG_VERSION").into(),
        root: shown.display().to_string(),
        mode: mode.as_str().into(),
        enforcement,
        sandbox_error,
        shell: Some(toolshed_ops::process::local_shell().into()),
    };
    serve(ops, hello, tokio::io::stdin(), tokio::io::stdout())
        .await
        .map_err(|e| Failure::Runtime(format!("worker: {e}")))
}

/// `toolshed ssh trust URL`: adds the host's keys to toolshed's `known_hosts`, printing
/// their fingerprints.
pub(crate) fn trust(global: &GlobalArgs, target: &str, replace: bool) -> Result<(), Failure> {
    let text = if target.starts_with("ssh://") {
        target.to_string()
    } else {
        format!("ssh://{target}/")
    };
    let url = RemoteUrl::parse(&text).map_err(|e| Failure::Usage(e.to_string()))?;
    let dir = ssh_dir(&crate::context::data_dir(global)?);
    let added = toolshed_ops::remote::url::trust(&url, &dir, replace)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    outln!(
        "trusted {} with these host keys (compare them with the server's own, e.g. \
         `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` there):",
        url.place()
    );
    for line in added {
        outln!("  {line}");
    }
    Ok(())
}

/// Where toolshed keeps `known_hosts` and master-connection sockets.
fn ssh_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("ssh")
}

/// The remote workspace named by the flags or the configuration, if one is.
pub(crate) fn chosen(global: &GlobalArgs, config_url: Option<&str>) -> Option<String> {
    match global.workspace() {
        Some(dir) => dir.to_str().filter(|t| is_remote(t)).map(str::to_string),
        None => config_url.map(str::to_string),
    }
}

/// The local directory that stands for a remote workspace in this host (its own state,
/// configuration and plugins): one per URL, under the data dir.
pub(crate) fn anchor(data_dir: &Path, url: &RemoteUrl) -> Result<PathBuf, Failure> {
    let name: String = url
        .display()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = data_dir.join("remote").join(name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Connects to the remote workspace's worker: the operations its tools run on, and the
/// workspace's path on its machine.
pub(crate) async fn connect(
    url: &RemoteUrl,
    config: &Config,
    data_dir: &Path,
) -> Result<(Ops, PathBuf), Failure> {
    let settings: &RemoteWorkspaceConfig = &config.workspace;
    let sandbox = config
        .sandbox
        .mode()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let dir = ssh_dir(data_dir);
    let _ = std::fs::create_dir_all(&dir);
    let home = toolshed_ops::sandbox::home_dir();
    let options = RemoteOptions {
        worker: settings.worker.clone(),
        sandbox,
        ssh_dir: dir,
        identity: settings
            .identity
            .as_deref()
            .map(|p| match (p.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(p),
            }),
        ssh_options: settings.ssh_options.clone(),
        runtime: settings.runtime.clone(),
        timeout: Duration::from_secs(settings.timeout_secs.max(1)),
    };
    let target = url.target(&options);
    let remote = tokio::task::spawn_blocking(move || RemoteOps::connect(target))
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let hello = remote
        .hello()
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    if let Some(why) = &hello.sandbox_error {
        eprintln!(
            "warning: on {}, commands are refused: the sandbox cannot be built there ({why}). \
             Run that workspace with [sandbox] mode = \"full-access\" to run commands there \
             unconfined.",
            url.display()
        );
    }
    let remote = Arc::new(remote);
    let ops = Ops {
        files: remote.clone(),
        search: remote.clone(),
        process: remote,
    };
    Ok((ops, PathBuf::from(hello.root)))
}

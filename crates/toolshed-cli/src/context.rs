//! Opening the host from the command line's global flags.

use std::path::PathBuf;
use std::sync::Arc;

use toolshed_host::config::default_data_dir;
use toolshed_host::{Host, HostBuilder, HostError};

use crate::Failure;
use crate::cli::GlobalArgs;

/// The workspace the global flags choose: `--workspace` (or `TOOLSHED_WORKSPACE`), else
/// the current directory — unless that is too broad to hand to an agent (see
/// [`too_broad`]), which is refused rather than served silently.
pub(crate) fn chosen_workspace(global: &GlobalArgs) -> Result<PathBuf, Failure> {
    if let Some(dir) = global.workspace() {
        return Ok(dir.clone());
    }
    if let Some(url) = configured_remote(global) {
        return Ok(url);
    }
    let cwd = std::env::current_dir().map_err(|e| {
        Failure::Usage(format!(
            "cannot read the current directory ({e}); pass --workspace DIR"
        ))
    })?;
    if let Some(what) = too_broad(&cwd) {
        return Err(Failure::Usage(format!(
            "no workspace was given, and the current directory {} is {what}: every tool \
             could read and change everything below it. Start toolshed in your project's \
             directory or pass --workspace DIR (or set TOOLSHED_WORKSPACE); to serve {} \
             anyway, say so with --workspace {}",
            cwd.display(),
            cwd.display(),
            cwd.display()
        )));
    }
    Ok(cwd)
}

/// `[workspace] url` of the user's (or `--config`'s) configuration: a remote workspace
/// used when the flags name none.
pub(crate) fn configured_remote(global: &GlobalArgs) -> Option<PathBuf> {
    if global.workspace().is_some() {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let loaded = crate::builtins::config_sources(&cwd, global.config.clone())
        .load()
        .ok()?;
    crate::commands::remote::chosen(global, loaded.config.workspace.url.as_deref())
        .map(PathBuf::from)
}

/// Why `dir` is too broad to be a workspace nobody chose: the root, the home directory or
/// one of its parents, or a top-level directory (`/usr`, `/tmp`, `/home`).
// Compares names; nothing is opened by them.
#[allow(clippy::disallowed_methods)]
pub(crate) fn too_broad(dir: &std::path::Path) -> Option<&'static str> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .map(|h| h.canonicalize().unwrap_or(h));
    if dir.parent().is_none() {
        return Some("the root of the file system");
    }
    if let Some(home) = &home {
        if *home == dir {
            return Some("your home directory");
        }
        if home.starts_with(&dir) {
            return Some("a parent of your home directory");
        }
    }
    (dir.components().count() <= 2).then_some("a top-level system directory")
}

/// Loads the configuration, sets up logging and opens the host on the workspace the global
/// flags choose.
pub(crate) async fn open_host(global: &GlobalArgs) -> Result<Host, Failure> {
    open_host_as(global, None).await
}

/// [`open_host`] for a caller using `profile`: the workspace its token or profile is
/// pinned to ([`pinned_workspace`]) when one is, else the one the flags choose.
pub(crate) async fn open_host_as(
    global: &GlobalArgs,
    profile: Option<&str>,
) -> Result<Host, Failure> {
    let workspace = match pinned_workspace(global, profile).await? {
        Some(pinned) => PathBuf::from(pinned),
        None => chosen_workspace(global)?,
    };
    open_host_in(global, workspace).await
}

/// The workspace the caller is pinned to: its agent token's `workspace:` scope, or the
/// `workspace` of the profile it uses. Pins that disagree, with each other or with an
/// explicit `--workspace`, are refused, naming both.
pub(crate) async fn pinned_workspace(
    global: &GlobalArgs,
    profile: Option<&str>,
) -> Result<Option<String>, Failure> {
    let token = global
        .token
        .as_deref()
        .map(str::trim)
        .filter(|t| t.starts_with(toolshed_host::identity::TOKEN_PREFIX));
    if token.is_none() && profile.is_none() {
        return Ok(None);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let config = crate::builtins::config_sources(&cwd, global.config.clone())
        .load()
        .map_err(|e| Failure::Usage(e.to_string()))?
        .config;
    let mut pins: Vec<(String, String)> = Vec::new();
    if let Some(place) = profile
        .and_then(|name| config.profiles.get(name))
        .and_then(|rules| rules.workspace.as_deref())
    {
        let pinned = toolshed_host::identity::workspace_pin(place).map_err(|e| {
            Failure::Usage(format!(
                "profiles.{}.workspace: {e}",
                profile.unwrap_or_default()
            ))
        })?;
        pins.push((pinned, format!("profile `{}`", profile.unwrap_or_default())));
    }
    if let Some(token) = token {
        let path = data_dir(global)?.join(toolshed_host::DB_FILE);
        let (store, token) = (config.store.clone(), token.to_string());
        let record = tokio::task::spawn_blocking(move || {
            toolshed_host::StateStore::open_with(&path, &store)?.authenticate(&token)
        })
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?
        .map_err(|e| Failure::Runtime(e.to_string()))?;
        // A token that does not authenticate is refused once the host is open.
        if let Some(pinned) = record.as_ref().and_then(|r| r.workspace()) {
            pins.push((pinned.to_string(), "the token".into()));
        }
    }
    let Some((pinned, by)) = pins.first().cloned() else {
        return Ok(None);
    };
    if let Some((other, other_by)) = pins.iter().find(|(p, _)| *p != pinned) {
        return Err(Failure::Usage(format!(
            "{by} works in workspace {pinned}, but {other_by} works in {other}; use a token \
             and a profile for the same workspace"
        )));
    }
    if let Some(given) = global.workspace() {
        let given = match given.to_str() {
            Some(url) if toolshed_ops::remote::url::is_remote(url) => url.to_string(),
            _ => cwd.join(given).to_string_lossy().into_owned(),
        };
        if toolshed_host::identity::workspace_pin(&given)
            .ok()
            .as_deref()
            != Some(&pinned)
        {
            return Err(Failure::Usage(format!(
                "{by} works only in workspace {pinned}, not in --workspace {given}; drop \
                 --workspace (or TOOLSHED_WORKSPACE) to work in {pinned}"
            )));
        }
    }
    Ok(Some(pinned))
}

/// Loads the configuration, sets up logging and opens the host on `workspace`.
pub(crate) async fn open_host_in(global: &GlobalArgs, workspace: PathBuf) -> Result<Host, Failure> {
    // Further `--workspace` roots belong to the workspace given first, not to another one
    // a pinned token opens.
    let roots: Vec<PathBuf> = if global.workspace() == Some(&workspace) {
        global.workspaces[1..].to_vec()
    } else {
        Vec::new()
    };
    let remote = match workspace
        .to_str()
        .filter(|t| toolshed_ops::remote::url::is_remote(t))
    {
        Some(text) => Some(
            toolshed_ops::remote::url::RemoteUrl::parse(text)
                .map_err(|e| Failure::Usage(e.to_string()))?,
        ),
        None => None,
    };
    let workspace = match &remote {
        // The host's own state for a remote workspace lives in a local directory.
        Some(url) => crate::commands::remote::anchor(&data_dir(global)?, url)?,
        None => workspace,
    };
    if !workspace.is_dir() {
        return Err(Failure::Usage(format!(
            "workspace {} is not a directory; pass an existing directory with --workspace",
            workspace.display()
        )));
    }
    let data_dir = data_dir(global)?;
    let loaded = crate::builtins::config_sources(&workspace, global.config.clone())
        .load()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    init_logging(&loaded.config.log.level, &loaded.config.telemetry)?;
    for unknown in &loaded.unknown_keys {
        eprintln!(
            "warning: unknown config key `{}` in {}; it is ignored (see docs/cli.md for the keys)",
            unknown.key, unknown.source
        );
    }
    for ignored in &loaded.workspace_ignored {
        eprintln!(
            "warning: `{}` in {} is ignored: it {}, and a workspace's toolshed.toml may only \
             narrow what tools do. To apply it, trust this workspace in your own config \
             (~/.config/toolshed/config.toml): trusted_workspaces = [\"{}\"]",
            ignored.key,
            ignored.source,
            ignored.why,
            workspace.display()
        );
    }
    let remote = match &remote {
        Some(url) => Some(crate::commands::remote::connect(url, &loaded.config, &data_dir).await?),
        None => None,
    };
    let (builder, plugins) = crate::builtins::register(
        HostBuilder::new(workspace.clone(), data_dir.clone()),
        &loaded.config,
        &workspace,
        &data_dir,
        remote.as_ref().map(|(_, root)| root.as_path()),
        &roots,
    );
    let builder = match remote {
        Some((ops, _)) => builder.remote_ops(ops),
        None => builder,
    };
    let mut builder = builder
        .roots(roots)
        .config(loaded)
        .sandbox_helper(sandbox_helper()?)
        .loader(|services| Arc::new(toolshed_js::JsLoader::new(services)))
        .loader(|services| Arc::new(toolshed_gateway::McpLoader::new(services.clone())));
    for dir in curated_dirs() {
        builder = builder.curated_dir(dir);
    }
    let host = builder.open().await.map_err(|e| match e {
        HostError::Workspace { .. } | HostError::Rules(_) | HostError::Config(_) => {
            Failure::Usage(e.to_string())
        }
        other => Failure::Runtime(other.to_string()),
    })?;
    let _ = plugins.set(host.plugins().downgrade());
    #[cfg(feature = "otel")]
    crate::telemetry::watch(&host);
    Ok(host)
}

/// The binary commands run through inside the sandbox: `toolshed-sandbox` next to this
/// binary (small, so it starts fast), else this binary itself (`toolshed sandbox-exec`).
pub(crate) fn sandbox_helper() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe().map_err(|e| {
        Failure::Runtime(format!(
            "cannot find the toolshed binary for the sandbox: {e}"
        ))
    })?;
    let small = exe.with_file_name("toolshed-sandbox");
    Ok(if small.is_file() { small } else { exe })
}

/// The data dir the global flags and the environment name.
pub(crate) fn data_dir(global: &GlobalArgs) -> Result<PathBuf, Failure> {
    default_data_dir(global.data_dir.clone()).ok_or_else(|| {
        Failure::Usage("cannot tell where to keep state: HOME is not set; pass --data-dir DIR or set TOOLSHED_HOME".into())
    })
}

/// Logs go to stderr, coloured only when it is a terminal: a pipe or a client's log file
/// gets plain text. With `[telemetry] otlp_endpoint` set, call spans are exported too
/// (docs/telemetry.md).
fn init_logging(
    level: &str,
    telemetry: &toolshed_host::config::TelemetryConfig,
) -> Result<(), Failure> {
    use std::io::IsTerminal as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_new(log_directives(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let Some(export) = telemetry_layer(telemetry)? else {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .try_init();
        return Ok(());
    };
    // Each its own filter: the log level does not decide which spans are exported.
    let logs = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(export)
        .with(logs)
        .try_init();
    Ok(())
}

type ExportLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

#[cfg(feature = "otel")]
fn telemetry_layer(
    telemetry: &toolshed_host::config::TelemetryConfig,
) -> Result<Option<ExportLayer>, Failure> {
    crate::telemetry::start(telemetry).map_err(Failure::Usage)
}

#[cfg(not(feature = "otel"))]
fn telemetry_layer(
    telemetry: &toolshed_host::config::TelemetryConfig,
) -> Result<Option<ExportLayer>, Failure> {
    match &telemetry.otlp_endpoint {
        None => Ok(None),
        Some(_) => Err(Failure::Usage(
            "[telemetry] otlp_endpoint is set, but this toolshed was built without OpenTelemetry \
             export (the `otel` cargo feature); rebuild with it or remove the setting"
                .into(),
        )),
    }
}

/// The filter for `[log] level`. The MCP library logs every error reply it sends at WARN
/// (an unknown tool name, a bad cursor: the client's mistakes, answered) and a client that
/// hangs up with replies in flight at ERROR; both are normal and would fill a client's log
/// on every call, so its request loop is quiet unless the level asks for debug output or
/// names the library itself.
fn log_directives(level: &str) -> String {
    let verbose = ["debug", "trace"].iter().any(|v| level.contains(v));
    if verbose || level.contains("rmcp") {
        level.to_string()
    } else {
        format!("{level},rmcp::service=off")
    }
}

/// Where the curated plugins shipped with toolshed are: `$TOOLSHED_CURATED_DIR`, else
/// `<prefix>/share/toolshed/plugins` beside an installed `<prefix>/bin/toolshed`, else the
/// `plugins/` of the checkout a binary was built in (`<checkout>/target/<profile>/toolshed`).
/// Both are found from where the running binary is, never from a path compiled into it.
// Where the binary really is (a link in ~/.cargo/bin), to find the shipped plugins.
#[allow(clippy::disallowed_methods)]
fn curated_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLSHED_CURATED_DIR") {
        return vec![PathBuf::from(dir)];
    }
    let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.canonicalize().ok())
        .and_then(|exe| exe.parent().map(PathBuf::from))
    else {
        return Vec::new();
    };
    let installed = exe_dir.join("../share/toolshed/plugins");
    if installed.is_dir() {
        return vec![installed];
    }
    // Curated plugins are trusted, so the checkout is recognised strictly: the binary sits
    // in `target/<profile>/` of a directory with a Cargo.toml and a plugins/ folder.
    let checkout = exe_dir
        .parent()
        .filter(|target| target.file_name().is_some_and(|n| n == "target"));
    checkout
        .and_then(|target| target.parent())
        .filter(|root| root.join("Cargo.toml").is_file())
        .map(|root| root.join("plugins"))
        .filter(|plugins| plugins.is_dir())
        .into_iter()
        .collect()
}

/// The caller `--token` (or `TOOLSHED_TOKEN`) authenticates: `None` without one (the local
/// user, trusted); the admin for the server's own token; else the agent token's caller. A
/// token that is not valid is refused rather than ignored.
pub(crate) fn caller(
    host: &Host,
    global: &GlobalArgs,
) -> Result<Option<toolshed_host::identity::Caller>, Failure> {
    let Some(token) = global.token.as_deref().map(str::trim) else {
        return Ok(None);
    };
    if !token.starts_with(toolshed_host::identity::TOKEN_PREFIX) {
        // The admin token (clients' configs often export it as TOOLSHED_TOKEN): the local
        // user, trusted as without one.
        let admin = toolshed_server::BearerToken::load_or_create(&data_dir(global)?)
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        if admin.matches(token.as_bytes()) {
            return Ok(None);
        }
    }
    match host.tokens().authenticate(token) {
        Ok(Some(record)) => Ok(Some(record.caller())),
        Ok(None) => Err(Failure::Usage(
            "--token (or TOOLSHED_TOKEN) is not a live agent token: it was revoked, expired, \
             or never made here; `toolshed token list` shows the tokens"
                .into(),
        )),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::log_directives;

    #[test]
    fn the_mcp_request_loop_is_quiet_unless_asked() {
        assert_eq!(log_directives("warn"), "warn,rmcp::service=off");
        assert_eq!(log_directives("info"), "info,rmcp::service=off");
        assert_eq!(log_directives("debug"), "debug");
        assert_eq!(log_directives("warn,rmcp=info"), "warn,rmcp=info");
    }
}

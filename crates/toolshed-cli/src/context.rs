//! Opening the host from the command line's global flags.

use std::path::PathBuf;
use std::sync::Arc;

use toolshed_host::config::{ConfigSources, default_data_dir};
use toolshed_host::{Host, HostBuilder, HostError};

use crate::Failure;
use crate::cli::GlobalArgs;

/// Loads the configuration, sets up logging and opens the host.
pub async fn open_host(global: &GlobalArgs) -> Result<Host, Failure> {
    let workspace = match &global.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| {
            Failure::Usage(format!(
                "cannot read the current directory ({e}); pass --workspace DIR"
            ))
        })?,
    };
    if !workspace.is_dir() {
        return Err(Failure::Usage(format!(
            "workspace {} is not a directory; pass an existing directory with --workspace",
            workspace.display()
        )));
    }
    let data_dir = data_dir(global)?;
    let loaded = ConfigSources::standard(&workspace, global.config.clone())
        .load()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    init_logging(&loaded.config.log.level);
    for unknown in &loaded.unknown_keys {
        eprintln!(
            "warning: unknown config key `{}` in {}; it is ignored (see docs/cli.md for the keys)",
            unknown.key, unknown.source
        );
    }
    let mut builder = HostBuilder::new(workspace, data_dir)
        .config(loaded)
        .sandbox_helper(sandbox_helper()?)
        .plugins(toolshed_tools::system_plugins)
        .loader(|services| Arc::new(toolshed_js::JsLoader::new(services)));
    for dir in curated_dirs() {
        builder = builder.curated_dir(dir);
    }
    builder.open().await.map_err(|e| match e {
        HostError::Workspace { .. } | HostError::Rules(_) | HostError::Config(_) => {
            Failure::Usage(e.to_string())
        }
        other => Failure::Runtime(other.to_string()),
    })
}

/// The binary commands run through inside the sandbox: `toolshed-sandbox` next to this
/// binary (small, so it starts fast), else this binary itself (`toolshed sandbox-exec`).
fn sandbox_helper() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe().map_err(|e| {
        Failure::Runtime(format!(
            "cannot find the toolshed binary for the sandbox: {e}"
        ))
    })?;
    let small = exe.with_file_name("toolshed-sandbox");
    Ok(if small.is_file() { small } else { exe })
}

/// The data dir the global flags and the environment name.
pub fn data_dir(global: &GlobalArgs) -> Result<PathBuf, Failure> {
    default_data_dir(global.data_dir.clone()).ok_or_else(|| {
        Failure::Usage("cannot tell where to keep state: HOME is not set; pass --data-dir DIR or set TOOLSHED_HOME".into())
    })
}

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Where the curated plugins shipped with toolshed are: `$TOOLSHED_CURATED_DIR`, else
/// `<prefix>/share/toolshed/plugins` beside an installed `<prefix>/bin/toolshed`, else the
/// `plugins/` of the checkout a binary was built in (`<checkout>/target/<profile>/toolshed`).
/// Both are found from where the running binary is, never from a path compiled into it.
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
pub fn caller(
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
    match host.store().authenticate(token) {
        Ok(Some(record)) => Ok(Some(record.caller())),
        Ok(None) => Err(Failure::Usage(
            "--token (or TOOLSHED_TOKEN) is not a live agent token: it was revoked, expired, \
             or never made here; `toolshed token list` shows the tokens"
                .into(),
        )),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}

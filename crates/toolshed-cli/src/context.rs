//! Opening the host from the command line's global flags.

use std::path::PathBuf;

use toolshed_host::config::{ConfigSources, default_data_dir};
use toolshed_host::{Host, HostError, HostOptions};

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
    let process = toolshed_ops::ProcessConfig {
        env_allow: loaded.config.exec.env_allow.clone(),
        ..Default::default()
    };
    let ops = toolshed_ops::Ops::local_with(&workspace, process)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let mut extensions = toolshed_core::Extensions::new();
    extensions.insert(std::sync::Arc::new(ops));
    extensions.insert(std::sync::Arc::new(toolshed_core::PortDirectory::new()));
    // The one HTTP client: sandboxed plugins reach their granted hosts through it, the web
    // tools public hosts and what `[web] allow` opens. It is in the extensions twice: as
    // the trait every caller knows, and as itself for the tools that follow redirects.
    let allow = loaded
        .config
        .web
        .allow_rules()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let net = std::sync::Arc::new(toolshed_ops::NetClient::with_config(
        toolshed_ops::NetConfig {
            allow,
            ..Default::default()
        },
    ));
    extensions.insert(std::sync::Arc::new(toolshed_core::HttpClientHandle(
        net.clone(),
    )));
    extensions.insert(net);
    let gauges = std::sync::Arc::new(toolshed_core::Gauges::new());
    extensions.insert(gauges.clone());
    let options = HostOptions {
        workspace,
        data_dir,
        config: loaded,
        system_plugins: toolshed_tools::system_plugins_with(&gauges),
        curated_dirs: curated_dirs(),
        loaders: vec![std::sync::Arc::new(toolshed_js::JsLoader::default())],
        policy: None,
        hooks: Default::default(),
        extensions,
    };
    Host::open(options).await.map_err(|e| match e {
        HostError::Workspace { .. } | HostError::Rules(_) => Failure::Usage(e.to_string()),
        other => Failure::Runtime(other.to_string()),
    })
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
/// `<prefix>/share/toolshed/plugins` beside the installed binary, else the source tree's
/// `plugins/` for a binary built from a checkout.
fn curated_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLSHED_CURATED_DIR") {
        return vec![PathBuf::from(dir)];
    }
    let installed = std::env::current_exe().ok().and_then(|exe| {
        exe.parent()
            .and_then(|bin| bin.parent())
            .map(|p| p.join("share/toolshed/plugins"))
    });
    let source_tree = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins"));
    installed
        .into_iter()
        .chain([source_tree])
        .filter(|p| p.is_dir())
        .take(1)
        .collect()
}

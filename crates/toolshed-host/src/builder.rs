//! [`HostBuilder`]: how a host is put together — by the CLI, by tests and by embedders
//! alike.
//!
//! The builder opens the state store, builds the one [`Services`] value of the host (the
//! operations backend, the HTTP client, the read log, the port directory, the gauges) from
//! the configuration, hands it to the plugin and loader factories it was given, and starts
//! the pipeline. A plugin that needs a service takes `&Services` in its constructor, so a
//! service that is not wired is a compile error here, never an error at the first call.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolshed_host::HostError> {
//! use toolshed_host::HostBuilder;
//! let host = HostBuilder::new("/path/to/workspace", "/path/to/data-dir")
//!     // .plugins(|services| toolshed_tools::system_plugins(services))
//!     .open()
//!     .await?;
//! println!("{} tools", host.registry().tools().len());
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolshed_core::{Gauges, Plugin, PluginLoader, PortDirectory};
use toolshed_ops::sandbox::{Sandbox, SandboxMode, SandboxPolicy, SandboxSetting, expand_home};
use toolshed_ops::{
    BoundedFiles, BoundedSearch, FileBoundary, NetClient, NetConfig, Ops, ProcessConfig, Services,
};

use crate::config::LoadedConfig;
use crate::hooks::Hooks;
use crate::host::{Host, HostError};
use crate::policy::Policy;

type PluginFactory = Box<dyn FnOnce(&Services) -> Vec<Arc<dyn Plugin>> + Send>;
type LoaderFactory = Box<dyn FnOnce(&Services) -> Arc<dyn PluginLoader> + Send>;

/// The system plugins and the loaders of a host, built over its services.
pub(crate) struct Built {
    pub plugins: Vec<Arc<dyn Plugin>>,
    pub loaders: Vec<Arc<dyn PluginLoader>>,
}

/// Puts a [`Host`] together. Everything but the workspace and the data dir has a default:
/// the embedded configuration, no plugins, the local operations backend, allow-all policy,
/// no hooks.
pub struct HostBuilder {
    pub(crate) workspace: PathBuf,
    pub(crate) data_dir: PathBuf,
    pub(crate) config: LoadedConfig,
    plugins: Vec<PluginFactory>,
    loaders: Vec<LoaderFactory>,
    pub(crate) curated_dirs: Vec<PathBuf>,
    pub(crate) policy: Option<Arc<dyn Policy>>,
    pub(crate) hooks: Hooks,
    ops: Option<Ops>,
    /// The ops are a remote workspace's: its worker keeps the file boundary there.
    pub(crate) remote: bool,
    sandbox_helper: Option<PathBuf>,
    pub(crate) memory: bool,
    pub(crate) agents: bool,
    /// The workspace's further roots, as given (`--workspace A --workspace B`).
    roots: Vec<PathBuf>,
    /// Every root of the workspace, canonical, the primary first, once known (empty for
    /// a workspace of one root).
    root_paths: Vec<PathBuf>,
}

impl HostBuilder {
    /// A host over `workspace` keeping its state in `data_dir` (created, private, if
    /// missing).
    pub fn new(workspace: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            data_dir: data_dir.into(),
            config: LoadedConfig::default(),
            plugins: Vec::new(),
            loaders: Vec::new(),
            curated_dirs: Vec::new(),
            policy: None,
            hooks: Hooks::default(),
            ops: None,
            remote: false,
            sandbox_helper: None,
            memory: false,
            agents: false,
            roots: Vec::new(),
            root_paths: Vec::new(),
        }
    }

    /// Further roots of the workspace (`--workspace A --workspace B`), besides the one
    /// given to [`HostBuilder::new`]: tools reach a file in one as `@name/path` (its
    /// directory's name) or by its absolute path, and commands may write each as they may
    /// write the workspace (see [`toolshed_ops::roots`]). Local workspaces only.
    pub fn roots(mut self, roots: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        self.roots = roots.into_iter().map(Into::into).collect();
        self
    }

    /// Adds `system.memory`, the memory tools over the host's state store, configured by
    /// `[memory]` (docs/memory.md).
    pub fn memory(mut self) -> Self {
        self.memory = true;
        self
    }

    /// Adds `system.agents`, the agent orchestration tools (`agent_run`, todo lists, plan
    /// mode, schedules, workflows), limited by `[orchestration]` (docs/agents.md). Their
    /// schedules run while [`crate::Host::run_schedules`] runs.
    pub fn agents(mut self) -> Self {
        self.agents = true;
        self
    }

    /// Uses this configuration instead of the embedded defaults.
    pub fn config(mut self, config: LoadedConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds the plugins `build` makes over the host's services, in the system root (the
    /// most trusted). Called once, when the host opens.
    pub fn plugins(
        mut self,
        build: impl FnOnce(&Services) -> Vec<Arc<dyn Plugin>> + Send + 'static,
    ) -> Self {
        self.plugins.push(Box::new(build));
        self
    }

    /// Adds one ready-made plugin in the system root (one that needs no host service).
    pub fn plugin(self, plugin: Arc<dyn Plugin>) -> Self {
        self.plugins(move |_| vec![plugin])
    }

    /// Adds the loader `build` makes over the host's services: it builds plugins of its
    /// kind from their directories.
    pub fn loader(
        mut self,
        build: impl FnOnce(&Services) -> Arc<dyn PluginLoader> + Send + 'static,
    ) -> Self {
        self.loaders.push(Box::new(build));
        self
    }

    /// Adds a directory of curated plugins.
    pub fn curated_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.curated_dirs.push(dir.into());
        self
    }

    /// Decides whether reviewed, validated calls may run (allow-all by default).
    pub fn policy(mut self, policy: Arc<dyn Policy>) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Runs these hooks around calls.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Uses this operations backend instead of the local one over the workspace (an
    /// in-memory workspace in tests, a sandboxed or remote backend).
    pub fn ops(mut self, ops: Ops) -> Self {
        self.ops = Some(ops);
        self
    }

    /// Uses a remote workspace's operations ([`toolshed_ops::remote::RemoteOps`]): its
    /// worker applies the sandbox and the file boundary on its own machine, so this host
    /// adds neither; the workspace directory given to [`HostBuilder::new`] is then a local
    /// one for the host's own state.
    pub fn remote_ops(mut self, ops: Ops) -> Self {
        self.ops = Some(ops);
        self.remote = true;
        self
    }

    /// The operations a worker serves (`toolshed worker`): the local backend over the
    /// workspace, with the configured sandbox, file boundary and `.env` files, exactly as
    /// a host on this machine would use them.
    pub fn worker_ops(mut self) -> Result<Ops, HostError> {
        #[allow(clippy::disallowed_methods)]
        let workspace =
            std::fs::canonicalize(&self.workspace).map_err(|e| HostError::Workspace {
                path: self.workspace.clone(),
                reason: e.to_string(),
            })?;
        let env = crate::env_overlay::EnvOverlay::load(&workspace, self.config.workspace_trusted);
        let services = self.services(
            &workspace,
            Arc::new(toolshed_ops::MemoryReadLog::default()),
            &env,
        )?;
        Ok(services.ops)
    }

    /// The binary that runs commands inside the sandbox (`<helper> sandbox-exec …`): the
    /// toolshed binary, or an embedder's own that calls
    /// [`toolshed_ops::sandbox::run_if_asked`] first thing in `main`. Without one, a
    /// sandboxed mode refuses to start commands (choose `[sandbox] mode = "full-access"`
    /// to run them unconfined).
    pub fn sandbox_helper(mut self, helper: impl Into<PathBuf>) -> Self {
        self.sandbox_helper = Some(helper.into());
        self
    }

    /// Opens the host: the state store, the services, plugin discovery and the pipeline.
    pub async fn open(self) -> Result<Host, HostError> {
        Host::open(self).await
    }

    /// The services of a host over `workspace`, from the configuration; the read log is
    /// given by the host (it lives in the state store).
    pub(crate) fn services(
        &mut self,
        workspace: &std::path::Path,
        read_log: Arc<dyn toolshed_ops::ReadLog>,
        env: &crate::env_overlay::EnvOverlay,
    ) -> Result<Services, HostError> {
        let ops = if self.roots.is_empty() {
            let given = self.ops.take();
            self.root_ops(workspace, given, env)?
        } else {
            self.several_roots(workspace, env)?
        };
        let config = &self.config.config;
        let allow = config
            .web
            .allow_rules()
            .map_err(|e| HostError::Config(e.to_string()))?;
        Ok(Services {
            ops,
            net: Arc::new(NetClient::with_config(NetConfig {
                allow,
                ..NetConfig::default()
            })),
            ports: Arc::new(PortDirectory::new()),
            read_log,
            gauges: Arc::new(Gauges::new()),
            catalog: Default::default(),
            notices: Default::default(),
            env_files: Arc::new(env.vars()),
            // Replicas share a database: ids of what lives in one process name it.
            replica: config
                .store
                .url
                .is_some()
                .then(|| Arc::from(config.server.replica_name())),
        })
    }

    /// The operations on one root: `given`, else the local backend with the configured
    /// sandbox, behind the file boundary (but for a remote workspace, whose worker keeps
    /// it).
    fn root_ops(
        &self,
        root: &Path,
        given: Option<Ops>,
        env: &crate::env_overlay::EnvOverlay,
    ) -> Result<Ops, HostError> {
        let config = &self.config.config;
        let sandbox = self.sandbox(root)?;
        let mut ops = match given {
            Some(ops) => ops,
            None => {
                let process = ProcessConfig {
                    env_allow: config.exec.env_allow.clone(),
                    sandbox: sandbox.clone(),
                    limits: config.sandbox.limits(),
                    // The workspace's .env files under the process environment.
                    base_env: (!env.is_empty()).then(|| env.base_env()),
                    ..ProcessConfig::default()
                };
                Ops::local_with(root, process).map_err(|e| HostError::Workspace {
                    path: root.to_path_buf(),
                    reason: e.to_string(),
                })?
            }
        };
        // File tools meet the sandbox's rules where commands meet the kernel's: one
        // boundary for every tool that reads or writes files (see toolshed_ops::boundary).
        if self.remote {
            // The worker keeps the boundary where the files are.
        } else if let Some(boundary) = self.file_boundary(root, sandbox.as_ref())? {
            // The search tools read files too: the same hidden paths stay out of them.
            ops.search = Arc::new(BoundedSearch::new(
                ops.search,
                ops.files.clone(),
                boundary.clone(),
            ));
            ops.files = Arc::new(BoundedFiles::new(ops.files, boundary));
        }
        Ok(ops)
    }

    /// The operations of a workspace of several roots (`workspace` and [`Self::roots`]):
    /// each root's own, each sandbox writing every root, behind one that routes `@name/`
    /// paths.
    fn several_roots(
        &mut self,
        workspace: &Path,
        env: &crate::env_overlay::EnvOverlay,
    ) -> Result<Ops, HostError> {
        if self.remote || self.ops.is_some() {
            return Err(HostError::Config(
                "several workspace roots (--workspace given more than once) need a local workspace; give one --workspace for a remote or embedded one".into(),
            ));
        }
        let named = crate::workspace_roots::named(workspace, &self.roots)?;
        self.root_paths = named.iter().map(|(_, path)| path.clone()).collect();
        let mut roots = Vec::with_capacity(named.len());
        for (name, path) in named {
            let ops = self.root_ops(&path, None, env)?;
            roots.push(toolshed_ops::roots::Root { name, path, ops });
        }
        toolshed_ops::roots::several(roots).map_err(|e| HostError::Config(e.to_string()))
    }

    /// `[sandbox] mode`.
    fn sandbox_mode(&self) -> Result<SandboxMode, HostError> {
        self.config
            .config
            .sandbox
            .mode()
            .map_err(|e| HostError::Config(e.to_string()))
    }

    /// The rules file tools meet: the sandbox's mode and hidden paths (`None` in
    /// full-access mode: the jail alone).
    fn file_boundary(
        &self,
        workspace: &Path,
        sandbox: Option<&SandboxSetting>,
    ) -> Result<Option<FileBoundary>, HostError> {
        let mode = self.sandbox_mode()?;
        if mode == SandboxMode::FullAccess {
            return Ok(None);
        }
        let denied = match sandbox {
            Some(SandboxSetting::Sandbox(s)) => s.policy.denied.clone(),
            _ => self.sandbox_policy(workspace)?.denied,
        };
        Ok(Some(FileBoundary::new(mode, workspace, &denied)))
    }

    /// The sandbox commands run in, from `[sandbox]`; `None` in full-access mode without a
    /// helper (with one, the sandbox is kept so that a call can narrow its mode).
    fn sandbox(&self, workspace: &Path) -> Result<Option<SandboxSetting>, HostError> {
        let mode = self.sandbox_mode()?;
        if mode == SandboxMode::FullAccess && self.sandbox_helper.is_none() {
            return Ok(None);
        }
        let policy = self.sandbox_policy(workspace)?;
        Ok(Some(match &self.sandbox_helper {
            Some(helper) => SandboxSetting::Sandbox(Sandbox {
                helper: helper.clone(),
                policy,
            }),
            None => SandboxSetting::Missing(format!(
                "sandbox mode {} needs the sandbox helper, and this host was built without \
                 one (HostBuilder::sandbox_helper)",
                mode.as_str()
            )),
        }))
    }

    /// The sandbox's policy from `[sandbox]`: its mode, network, writable roots and the
    /// paths it hides.
    fn sandbox_policy(&self, workspace: &Path) -> Result<SandboxPolicy, HostError> {
        let config = &self.config.config.sandbox;
        let invalid = |e: crate::config::ConfigError| HostError::Config(e.to_string());
        let mode = config.mode().map_err(invalid)?;
        let network = config.network().map_err(invalid)?;
        let home = toolshed_ops::sandbox::home_dir();
        let expand = |list: &[String], key: &str| -> Result<Vec<PathBuf>, HostError> {
            list.iter()
                .map(|p| {
                    expand_home(p, home.as_deref())
                        .filter(|p| p.is_absolute())
                        .ok_or_else(|| {
                            HostError::Config(format!(
                                "sandbox.{key}: `{p}` is not an absolute path (or `~/…` with \
                                 HOME set)"
                            ))
                        })
                })
                .collect()
        };
        // The sandbox's mount targets: the helper opens them by descriptor.
        #[allow(clippy::disallowed_methods)]
        let workspace = workspace.canonicalize().map_err(|e| HostError::Workspace {
            path: workspace.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut denied = vec![self.data_dir.clone(), workspace.join(".toolshed")];
        // Every root's own reserved directory stays hidden; the other roots are written as
        // this one is, and hidden with it from a confined command.
        let other_roots: Vec<PathBuf> = self
            .root_paths
            .iter()
            .filter(|root| **root != workspace)
            .cloned()
            .collect();
        denied.extend(other_roots.iter().map(|root| root.join(".toolshed")));
        denied.extend(crate::config::user_config_dir());
        // A `~/` entry without a home to expand against has nothing to hide.
        let deny: Vec<String> = config
            .deny
            .iter()
            .filter(|p| !(p.starts_with("~/") && home.is_none()))
            .cloned()
            .collect();
        denied.extend(expand(&deny, "deny")?);
        let policy = SandboxPolicy {
            mode,
            network,
            workspace,
            writable: [expand(&config.writable, "writable")?, other_roots.clone()].concat(),
            denied,
            tmp_bytes: config.tmp_size_mb.saturating_mul(1 << 20),
            min_landlock_abi: config.min_landlock_abi,
            egress_allow: self
                .config
                .config
                .web
                .allow_rules()
                .map_err(|e| HostError::Config(e.to_string()))?,
            egress_socket: None,
            joined_network: None,
            visible: Vec::new(),
            revealed: Vec::new(),
            read_only: Vec::new(),
            write_only: Vec::new(),
            report_fd: None,
            other_roots,
        };
        Ok(policy)
    }

    /// Runs the plugin and loader factories over `services`.
    pub(crate) fn build_plugins(&mut self, services: &Services) -> Built {
        let plugins = std::mem::take(&mut self.plugins)
            .into_iter()
            .flat_map(|build| build(services))
            .collect();
        let loaders = std::mem::take(&mut self.loaders)
            .into_iter()
            .map(|build| build(services))
            .collect();
        Built { plugins, loaders }
    }
}

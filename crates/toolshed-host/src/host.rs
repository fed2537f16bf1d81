//! The host: configuration, state, the registry and the pipeline, put together once and
//! shared by every door.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolshed_ops::{Digest, ReadLog, Services};

use crate::builder::HostBuilder;
use crate::config::LoadedConfig;
use crate::dispatcher::{CallRequest, CallResult, Dispatcher, DispatcherParts};
use crate::events::EventBus;
use crate::hooks::CommandHook;
use crate::policy::{PolicyRules, RulePolicy};
use crate::quotas::Quotas;
use crate::registry::{DiscoveryRoots, Registry};
use crate::review::{Review, RuleError};
use crate::store::{StateStore, StoreError};

/// The state database's file name inside the data dir.
pub const DB_FILE: &str = "toolshed.db";

pub use crate::install::PLUGINS_DIR;

/// Why a host could not open.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The workspace is not a directory.
    #[error(
        "workspace {path} is not a directory ({reason}); pass an existing directory with --workspace"
    )]
    Workspace {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The data dir cannot be created.
    #[error(
        "cannot create the data dir {path}: {reason}; pass a writable directory with --data-dir or TOOLSHED_HOME"
    )]
    DataDir {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The state store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A review rule is invalid.
    #[error(transparent)]
    Rules(#[from] RuleError),
    /// A configuration value cannot be used.
    #[error("{0}")]
    Config(String),
}

/// A running host.
pub struct Host {
    workspace: PathBuf,
    /// The workspace as tokens and profiles pin it: a remote one's URL, else `workspace`.
    workspace_name: String,
    data_dir: PathBuf,
    config: LoadedConfig,
    store: Arc<StateStore>,
    registry: Arc<Registry>,
    events: EventBus,
    dispatcher: Arc<Dispatcher>,
    services: Services,
    env: Arc<crate::env_overlay::EnvOverlay>,
    /// Calls that outlive their request (REST jobs, MCP tasks), made at first use.
    jobs: std::sync::OnceLock<Arc<crate::jobs::Jobs>>,
}

impl Host {
    /// A builder for a host over `workspace` keeping its state in `data_dir`.
    pub fn builder(workspace: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> HostBuilder {
        HostBuilder::new(workspace, data_dir)
    }

    /// Opens the state store, builds the services, discovers and starts plugins and builds
    /// the pipeline.
    pub(crate) async fn open(mut options: HostBuilder) -> Result<Self, HostError> {
        // The workspace root, resolved once; the jail opens everything beneath it.
        #[allow(clippy::disallowed_methods)]
        let workspace =
            std::fs::canonicalize(&options.workspace).map_err(|e| HostError::Workspace {
                path: options.workspace.clone(),
                reason: e.to_string(),
            })?;
        if !workspace.is_dir() {
            return Err(HostError::Workspace {
                path: workspace,
                reason: "not a directory".into(),
            });
        }
        let data_dir = options.data_dir.clone();
        create_private_dir(&data_dir).map_err(|e| HostError::DataDir {
            path: data_dir.clone(),
            reason: e.to_string(),
        })?;
        let config = &options.config.config;
        // The MCP door's lists are checked here too, so that a bad rule stops the start, not
        // only the MCP door.
        let review = Review::compile(
            &config.review,
            &config.profiles,
            &[
                ("mcp.core", &config.mcp.core),
                ("mcp.on_demand", &config.mcp.on_demand),
            ],
        )?;
        let store = {
            let path = data_dir.join(DB_FILE);
            let shared = options.config.config.store.clone();
            Arc::new(
                tokio::task::spawn_blocking(move || StateStore::open_with(&path, &shared))
                    .await
                    .map_err(|e| StoreError::Open {
                        path: PathBuf::from(DB_FILE),
                        message: e.to_string(),
                    })??,
            )
        };
        if config.workspace.bootstrap && !options.remote {
            crate::workspace_layout::bootstrap(&workspace);
        }
        let env = {
            let workspace = workspace.clone();
            let trusted = options.config.workspace_trusted;
            Arc::new(
                tokio::task::spawn_blocking(move || {
                    crate::env_overlay::EnvOverlay::load(&workspace, trusted)
                })
                .await
                .unwrap_or_default(),
            )
        };
        for problem in &env.problems {
            tracing::warn!("{problem}");
        }
        let services =
            options.services(&workspace, Arc::new(StoreReadLog::new(store.clone())), &env)?;
        let workspace_name = if options.remote {
            services.ops.files.root_display()
        } else {
            workspace.to_string_lossy().into_owned()
        };
        let mut built = options.build_plugins(&services);
        if options.memory {
            let memories = crate::memory::Memories::new(
                store.clone(),
                options
                    .config
                    .config
                    .memory
                    .clone()
                    .within_reply(options.config.config.limits.max_output_bytes),
            );
            built.plugins.push(crate::memory::plugin(memories));
        }
        if options.agents {
            let config = &options.config.config;
            built.plugins.push(crate::agents::plugin(
                config.orchestration.clone(),
                config.agents.clone(),
                store.clone(),
                workspace.clone(),
            ));
        }
        let plugin_root = data_dir.join(PLUGINS_DIR);
        // Installs a killed process left half done: invisible to discovery, removed here.
        match tokio::task::spawn_blocking(move || crate::install::clean_stale_staging(&plugin_root))
            .await
        {
            Ok(removed) if !removed.is_empty() => {
                tracing::info!(
                    ?removed,
                    "removed the staging of interrupted plugin installs"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "cleaning stale plugin staging failed"),
        }
        let events = EventBus::default();
        let roots = DiscoveryRoots {
            system: built.plugins,
            curated: std::mem::take(&mut options.curated_dirs),
            user: vec![
                data_dir.join(PLUGINS_DIR),
                workspace.join(".toolshed").join("plugins"),
            ],
            loaders: built.loaders,
            env: env.clone(),
        };
        let registry = Arc::new(Registry::discover(roots, store.clone(), events.clone()).await);
        let config = &options.config.config;
        let dispatcher = Dispatcher::new_shared(DispatcherParts {
            registry: registry.clone(),
            store: store.clone(),
            events: events.clone(),
            review,
            limits: config.limits.clone(),
            audit_max_rows: config.audit.max_rows,
            policy: match options.policy.take() {
                Some(policy) => policy,
                None => Arc::new(RulePolicy::new(
                    PolicyRules::compile(&config.policy)
                        .map_err(|e| HostError::Config(e.to_string()))?,
                    config
                        .sandbox
                        .mode()
                        .map_err(|e| HostError::Config(e.to_string()))?,
                )),
            },
            hooks: {
                let mut hooks = std::mem::take(&mut options.hooks);
                let configured = CommandHook::from_config(
                    &config.hooks,
                    &services.ops.process,
                    &(services.net.clone() as Arc<dyn toolshed_core::HttpClient>),
                    &workspace,
                )
                .map_err(|e| HostError::Config(e.to_string()))?;
                for hook in configured.into_iter().filter(CommandHook::on_tools) {
                    hooks.push(Arc::new(hook));
                }
                hooks
            },
            approvals: config.approvals.clone(),
            quotas: Quotas::compile(&config.quotas)
                .map_err(|e| HostError::Config(e.to_string()))?,
            llm: config
                .llm
                .sampler(services.net.clone() as Arc<dyn toolshed_core::HttpClient>),
            trace_arguments: config.telemetry.record_arguments
                && config.telemetry.otlp_endpoint.is_some(),
            files: Some(services.ops.files.clone()),
            sandbox_mode: config.sandbox.mode().ok(),
            workspace_name: workspace_name.clone(),
            notices: Some(services.notices.clone()),
            command_env: Arc::new(crate::command_env::CommandEnvLayers::new(registry.clone())),
        });
        Ok(Self {
            workspace,
            workspace_name,
            data_dir,
            config: options.config,
            store,
            registry,
            events,
            dispatcher,
            services,
            env,
            jobs: std::sync::OnceLock::new(),
        })
    }

    /// The jobs, if any call has needed them yet.
    pub fn jobs_if_started(&self) -> Option<&Arc<crate::jobs::Jobs>> {
        self.jobs.get()
    }

    /// The jobs of this host: calls that outlive their request (a REST `execute` with
    /// `async`, an MCP `tools/call` that became a task), kept in the state store per
    /// `[jobs]`. Made at first use, which also fails the jobs that a stopped toolshed on
    /// the same data dir left running.
    pub fn jobs(&self) -> &Arc<crate::jobs::Jobs> {
        self.jobs.get_or_init(|| {
            let config = &self.config.config.jobs;
            Arc::new(
                crate::jobs::Jobs::new(
                    self,
                    std::time::Duration::from_secs(config.retention_secs),
                    config.max_jobs,
                )
                .with_max_per_owner(config.max_running_per_owner),
            )
        })
    }

    /// The workspace's `.env` files, layered under the process environment.
    pub fn env_overlay(&self) -> &crate::env_overlay::EnvOverlay {
        &self.env
    }

    /// What plugins and session layers add to commands, over the `.env` layers.
    pub fn command_env(&self) -> &crate::command_env::CommandEnvLayers {
        self.dispatcher.command_env()
    }

    /// The services this host's tools were built with.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Runs one call through the pipeline.
    pub async fn call(&self, request: CallRequest) -> CallResult {
        self.dispatcher.call(request).await
    }

    /// The workspace root (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The workspace as a `workspace:` scope or a profile's `workspace` names it: a remote
    /// workspace's URL, else the root's real path ([`crate::identity::workspace_pin`]).
    pub fn workspace_name(&self) -> &str {
        &self.workspace_name
    }

    /// The data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// An install of `source` into this host's plugin root, refusing the ids of built-in
    /// and curated plugins (an installed copy would be shadowed by them).
    pub fn install_request(
        &self,
        source: String,
        expected_id: Option<String>,
        sha256: Option<String>,
        force: bool,
    ) -> crate::install::InstallRequest {
        let mut request = crate::install::InstallRequest::new(source);
        request.expected_id = expected_id;
        request.sha256 = sha256;
        request.overwrite = if force {
            crate::install::Overwrite::Replace
        } else {
            crate::install::Overwrite::Refuse
        };
        request.reserved_ids = self
            .registry
            .plugins()
            .into_iter()
            .filter(|p| p.root != crate::registry::Root::User)
            .map(|p| p.id)
            .collect();
        request
    }

    /// Installs a plugin (see [`crate::install::download::install_from`]) with the
    /// configured download hosts; progress lines go to `progress`.
    pub async fn install_plugin(
        &self,
        request: crate::install::InstallRequest,
        progress: Arc<dyn Fn(String) + Send + Sync>,
    ) -> Result<crate::install::Installed, crate::install::InstallError> {
        // A path is recorded as an absolute one: the same words typed elsewhere name
        // another place.
        // Recorded as words (provenance); the install reads the source through its own
        // checks.
        #[allow(clippy::disallowed_methods)]
        let source = if crate::install::download::is_url(&request.source) {
            request.source.clone()
        } else {
            std::fs::canonicalize(&request.source)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| request.source.clone())
        };
        self.install_recorded(request, progress, source).await
    }

    /// The plugins the configured stores (`[[plugins.stores]]`) offer: per store, its
    /// entries (names in the language of `TOOLSHED_LANG`/`LANG` where the store translates
    /// them), or why it could not be read.
    pub async fn store_offers(
        &self,
    ) -> Vec<(
        String,
        Result<Vec<crate::install::store::StoreEntry>, crate::install::store::PluginStoreError>,
    )> {
        let client = crate::install::download::NetClient::new();
        let language = ["TOOLSHED_LANG", "LANG"]
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .map(|v| {
                v.chars()
                    .take_while(char::is_ascii_alphabetic)
                    .collect::<String>()
            })
            .find(|l| l.len() >= 2 && l != "C")
            .unwrap_or_else(|| "en".into())
            .to_ascii_lowercase();
        let hosts = &self.config.config.plugins.download_hosts;
        let mut out = Vec::new();
        for store in &self.config.config.plugins.stores {
            let listed = crate::install::store::index(&client, &store.url, &language, hosts).await;
            out.push((store.url.clone(), listed));
        }
        out
    }

    /// Installs plugin `id` from the first configured store that offers it (replacing an
    /// installed copy with `force`): fetched through the SSRF-guarded client, checked
    /// against the index's md5, then installed as any plugin, its source recorded as the
    /// store's URL for it.
    pub async fn install_from_store(
        &self,
        id: &str,
        force: bool,
        progress: Arc<dyn Fn(String) + Send + Sync>,
    ) -> Result<crate::install::Installed, crate::install::InstallError> {
        let entry = self.store_entry(id).await?;
        self.install_entry(entry, force, progress).await
    }

    /// Installs the plugin whose files are under the directory URL `url` (loose files, as
    /// Agent Spaces serves them: its manifest, then the files it names), checked against
    /// `md5`, Agent Spaces' folder digest. Over `https` to public hosts, or the hosts of
    /// `[plugins] download_hosts`.
    pub async fn install_from_directory_url(
        &self,
        url: &str,
        md5: &str,
        force: bool,
        progress: Arc<dyn Fn(String) + Send + Sync>,
    ) -> Result<crate::install::Installed, crate::install::InstallError> {
        let md5 = md5.trim().to_ascii_lowercase();
        if md5.len() != 32 || !md5.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(crate::install::InstallError::Md5Syntax { given: md5 });
        }
        let entry = crate::install::store::StoreEntry {
            source: url.trim_end_matches('/').to_string(),
            md5: Some(md5),
            store: url.to_string(),
            ..Default::default()
        };
        self.install_entry(entry, force, progress).await
    }

    async fn install_entry(
        &self,
        entry: crate::install::store::StoreEntry,
        force: bool,
        progress: Arc<dyn Fn(String) + Send + Sync>,
    ) -> Result<crate::install::Installed, crate::install::InstallError> {
        use crate::install::InstallError;
        let id = entry.id.clone();
        if entry.md5.is_none() {
            progress(format!(
                "warning: the store's index gives no md5 for `{id}`: its files are not checked"
            ));
        }
        let root = self.user_plugin_root();
        std::fs::create_dir_all(&root).map_err(|e| InstallError::Source {
            path: root.clone(),
            reason: e.to_string(),
        })?;
        let client = crate::install::download::NetClient::new();
        let hosts = &self.config.config.plugins.download_hosts;
        let fetched = crate::install::store::fetch(&client, &entry, hosts, &root, &*progress)
            .await
            .map_err(|e| InstallError::Download {
                url: crate::install::download::redact(&entry.source),
                reason: e.to_string(),
            })?;
        let path = match &fetched {
            crate::install::store::Fetched::Archive(file) => file.to_path_buf(),
            crate::install::store::Fetched::Files(dir) => dir.path().to_path_buf(),
        };
        let mut request = self.install_request(
            path.display().to_string(),
            (!id.is_empty()).then(|| id.clone()),
            None,
            force,
        );
        request.expected_md5 = entry.md5.clone();
        let installed = self
            .install_recorded(request, progress, entry.source.clone())
            .await;
        drop(fetched);
        installed
    }

    /// Installs plugin `id` from its store again when the store's version is newer than
    /// the installed one; `None` when it is up to date.
    pub async fn update_from_store(
        &self,
        id: &str,
        progress: Arc<dyn Fn(String) + Send + Sync>,
    ) -> Result<Option<crate::install::Installed>, crate::install::InstallError> {
        let entry = self.store_entry(id).await?;
        // Only a plugin this store put there: one installed from a path or another place
        // is not replaced by an update.
        if let Ok(Some(provenance)) = self.store.provenance(id)
            && provenance.source != entry.source
        {
            return Err(crate::install::InstallError::NotInStore {
                id: id.to_string(),
                why: format!(
                    "it was installed from {}, not from the store; `toolshed plugins install {id} --force` replaces it with the store's",
                    provenance.source
                ),
            });
        }
        let installed = self.registry.manifest(id).map(|m| m.version);
        let newer = match (&installed, semver::Version::parse(&entry.version)) {
            (Some(have), Ok(offered)) => {
                semver::Version::parse(have).map_or(true, |have| offered > have)
            }
            (None, _) => true,
            (Some(have), Err(_)) => have != &entry.version,
        };
        if !newer {
            return Ok(None);
        }
        self.install_from_store(id, true, progress).await.map(Some)
    }

    async fn store_entry(
        &self,
        id: &str,
    ) -> Result<crate::install::store::StoreEntry, crate::install::InstallError> {
        let offers = self.store_offers().await;
        if offers.is_empty() {
            return Err(crate::install::InstallError::NotInStore {
                id: id.to_string(),
                why: "no plugin store is configured; add one as `[[plugins.stores]] url = \"https://…/plugins/\"`".into(),
            });
        }
        let mut problems = Vec::new();
        for (store, listed) in offers {
            match listed {
                Ok(entries) => {
                    if let Some(entry) = entries.into_iter().find(|e| e.id == id) {
                        return Ok(entry);
                    }
                }
                Err(why) => problems.push(format!("{store}: {why}")),
            }
        }
        Err(crate::install::InstallError::NotInStore {
            id: id.to_string(),
            why: if problems.is_empty() {
                "no configured store offers it (`toolshed plugins search` lists what they offer)"
                    .into()
            } else {
                format!(
                    "no store that could be read offers it ({})",
                    problems.join("; ")
                )
            },
        })
    }

    async fn install_recorded(
        &self,
        request: crate::install::InstallRequest,
        progress: Arc<dyn Fn(String) + Send + Sync>,
        source: String,
    ) -> Result<crate::install::Installed, crate::install::InstallError> {
        let client = crate::install::download::NetClient::new();
        let sha256 = request.sha256.clone();
        let mut request = request;
        if request.prepare.is_none() {
            let processes = self.services.ops.process.clone();
            let report = progress.clone();
            let settings = &self.config.config.plugins;
            let limits = crate::install::npm::NpmLimits {
                timeout: std::time::Duration::from_secs(settings.npm_timeout_secs.max(1)),
                max_bytes: settings.npm_max_mb.max(1).saturating_mul(1024 * 1024),
                ..crate::install::npm::NpmLimits::default()
            };
            request.prepare = Some(crate::install::Prepare(Arc::new(
                move |dir: &std::path::Path| {
                    crate::install::npm::install_dependencies(&processes, dir, limits, &*report)
                },
            )));
        }
        let installed = crate::install::download::install_from(
            &self.user_plugin_root(),
            request,
            &client,
            &self.config.config.plugins.download_hosts,
            progress,
        )
        .await?;
        // What was put in place, for `plugins verify`. A record that cannot be made is
        // logged: the plugin is installed either way.
        let dependencies = installed.dependencies.clone();
        let (dir, store, id) = (
            installed.dir.clone(),
            self.store.clone(),
            installed.id.clone(),
        );
        let recorded = tokio::task::spawn_blocking(move || {
            let files = crate::install::provenance::hash_tree(&dir)
                .map_err(|e| format!("cannot hash the installed files: {e}"))?;
            let provenance = crate::install::provenance::Provenance {
                source,
                sha256: sha256.map(|s| s.to_ascii_lowercase()),
                tree_sha256: crate::install::provenance::tree_digest(&files),
                installed_ms: crate::store::now_ms(),
                files,
                dependencies,
            };
            store
                .set_provenance(&id, &provenance)
                .map_err(|e| e.to_string())?;
            // The other toolsheds on a shared database put it in place too.
            store.share_install(&id, &dir).map_err(|e| e.to_string())
        })
        .await;
        match recorded {
            Ok(Ok(())) => {}
            Ok(Err(why)) => {
                tracing::warn!(plugin = %installed.id, %why, "the install's provenance was not recorded")
            }
            Err(e) => {
                tracing::warn!(plugin = %installed.id, error = %e, "the install's provenance was not recorded")
            }
        }
        Ok(installed)
    }

    /// Hashes the files of the installed plugin `id` again and says how they differ from
    /// what its install recorded.
    pub async fn verify_plugin(
        &self,
        id: &str,
    ) -> Result<
        (
            crate::install::provenance::Provenance,
            crate::install::provenance::Drift,
        ),
        String,
    > {
        let (store, id) = (self.store.clone(), id.to_string());
        let dir = self.user_plugin_root().join(&id);
        tokio::task::spawn_blocking(move || {
            let provenance = store.provenance(&id).map_err(|e| e.to_string())?.ok_or_else(|| {
                format!("toolshed has no record of installing `{id}` (built-in, curated and workspace plugins, and plugins installed before records were kept, cannot be verified); `toolshed plugins install` records one")
            })?;
            let now = crate::install::provenance::hash_tree(&dir)
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let drift = crate::install::provenance::drift(&provenance.files, &now);
            Ok((provenance, drift))
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Where installed plugins live: `<data dir>/plugins`.
    pub fn user_plugin_root(&self) -> PathBuf {
        self.data_dir.join(PLUGINS_DIR)
    }

    /// The configuration in force.
    pub fn config(&self) -> &LoadedConfig {
        &self.config
    }

    /// The state store: for the host's own crates and tests. Doors use the services made
    /// for them: [`Host::tokens`], [`Host::approvals`], [`Host::plugins`],
    /// [`Host::memories`], [`Host::state_info`], [`Host::audit`], [`Host::event_journal`].
    pub fn store(&self) -> &Arc<StateStore> {
        &self.store
    }

    /// The plugin registry: for the host's own crates and tests. Doors use the services
    /// made for them: [`Host::catalog`] and [`Host::plugins`].
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The event bus.
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// The pipeline.
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// Keeps this host's plugin states in step with choices other processes record in the
    /// state store (`toolshed plugins disable ID` while a server runs) and with the user
    /// plugin directories (installed, changed, removed), by file-system notifications: an
    /// idle host does no periodic work ([`Registry::watch`]). Each change is published as a
    /// `PluginStateChanged` event, which the MCP door turns into
    /// `notifications/tools/list_changed`. So are changes plugins report themselves (a
    /// mounted MCP server's new tools). Returns once the watches are in place; the tasks
    /// end when the host is dropped.
    pub async fn watch_store(&self) -> tokio::task::JoinHandle<()> {
        self.registry
            .follow_catalog_signals(self.services.catalog.clone());
        self.registry.start_eager();
        self.registry.watch().await
    }

    /// Stops every plugin, then every process tree the operations backend still holds
    /// (commands and background processes tools started), waiting until they are gone;
    /// then waits until every call's audit row is in the database.
    pub async fn shutdown(&self) {
        // Running jobs (an MCP task of `toolshed mcp`, whose client left) end as cancelled
        // by the shutdown, recorded, before their processes are killed.
        if let Some(jobs) = self.jobs.get() {
            jobs.drain(std::time::Duration::from_secs(5)).await;
        }
        self.registry.shutdown().await;
        let process = self.services.ops.process.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || process.kill_all()).await {
            tracing::warn!(error = %e, "stopping child processes failed");
        }
        let store = self.store.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || store.flush_audit()).await {
            tracing::warn!(error = %e, "cannot flush the audit log");
        }
    }
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if path.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// The read log kept in the state store, so it outlives one process. A bounded in-memory
/// copy of recent entries spares the database a write when an owner reads a file again
/// unchanged, which is most reads.
struct StoreReadLog {
    store: Arc<StateStore>,
    recent: std::sync::Mutex<std::collections::HashMap<(String, String), Digest>>,
}

/// The most entries [`StoreReadLog`] keeps in memory before starting afresh.
const RECENT_READS: usize = 10_000;

impl StoreReadLog {
    fn new(store: Arc<StateStore>) -> Self {
        Self {
            store,
            recent: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    fn remember(&self, owner: &str, real_path: &str, digest: Digest) {
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() >= RECENT_READS {
            recent.clear();
        }
        recent.insert((owner.to_string(), real_path.to_string()), digest);
    }

    fn cached(&self, owner: &str, real_path: &str) -> Option<Digest> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent
            .get(&(owner.to_string(), real_path.to_string()))
            .copied()
    }
}

impl ReadLog for StoreReadLog {
    fn seen(&self, owner: &str, real_path: &str) -> Option<Digest> {
        if let Some(digest) = self.cached(owner, real_path) {
            return Some(digest);
        }
        let found = self
            .store
            .read_log_get(owner, real_path)
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read the read log");
                None
            });
        if let Some(digest) = found {
            self.remember(owner, real_path, digest);
        }
        found
    }

    fn known(&self, owner: &str, real_path: &str, digest: &Digest) -> bool {
        self.cached(owner, real_path).as_ref() == Some(digest)
    }

    fn record(&self, owner: &str, real_path: &str, digest: Digest) {
        if self.known(owner, real_path, &digest) {
            return;
        }
        match self.store.read_log_put(owner, real_path, &digest) {
            Ok(()) => self.remember(owner, real_path, digest),
            Err(e) => tracing::warn!(error = %e, "cannot write the read log"),
        }
    }
}

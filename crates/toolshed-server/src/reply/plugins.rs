//! The replies about plugins: as listed, one with its manifest's asks and its provenance,
//! its health, its files checked, installed and uninstalled, and its grants.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_core::PluginManifest;

use super::read;
use crate::error::ApiError;

/// A plugin's lifecycle state.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PluginState {
    /// Present, not yet enabled.
    Installed,
    /// Enabled, not yet started.
    Enabled,
    /// Started; its tools are callable.
    Running,
    /// Turned off by a person; its tools are not callable.
    Disabled,
    /// Running, but a required variable or binary is missing: its tools answer
    /// `unconfigured`.
    Degraded,
    /// Loaded and running, its calls refused until a person resumes it
    /// (`POST /plugins/{id}/resume`).
    Paused,
    /// Could not start; `reason` says why.
    Error,
    /// Removed (only ever seen in the `plugin.state_changed` event of an uninstall).
    Uninstalled,
}

impl From<toolshed_host::PluginState> for PluginState {
    fn from(state: toolshed_host::PluginState) -> Self {
        use toolshed_host::PluginState as S;
        match state {
            S::Installed => Self::Installed,
            S::Enabled => Self::Enabled,
            S::Running => Self::Running,
            S::Disabled => Self::Disabled,
            S::Degraded => Self::Degraded,
            S::Paused => Self::Paused,
            S::Error => Self::Error,
            S::Uninstalled => Self::Uninstalled,
        }
    }
}

/// How a plugin's tools are implemented.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PluginKind {
    /// Rust, compiled into toolshed.
    Builtin,
    /// JavaScript, run in a sandbox.
    Js,
    /// An external MCP server whose tools are mounted.
    Mcp,
}

impl From<toolshed_core::PluginKind> for PluginKind {
    fn from(kind: toolshed_core::PluginKind) -> Self {
        use toolshed_core::PluginKind as K;
        match kind {
            K::Builtin => Self::Builtin,
            K::Js => Self::Js,
            K::Mcp => Self::Mcp,
        }
    }
}

/// Where a plugin was found, most trusted first.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Root {
    /// Compiled into toolshed.
    System,
    /// Shipped with toolshed.
    Curated,
    /// Installed by the user, or brought by the workspace.
    User,
}

impl From<toolshed_host::Root> for Root {
    fn from(root: toolshed_host::Root) -> Self {
        use toolshed_host::Root as R;
        match root {
            R::System => Self::System,
            R::Curated => Self::Curated,
            R::User => Self::User,
        }
    }
}

/// A plugin as the registry knows it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PluginInfo {
    /// Its id, e.g. `system.calculator`.
    pub id: String,
    /// Its display name (in the language asked for, where the plugin translates it).
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it offers (in the language asked for, where the plugin translates it).
    pub description: String,
    /// How it is implemented.
    pub kind: PluginKind,
    /// Where it was found.
    pub root: Root,
    /// Its directory, for a plugin found on disk.
    pub dir: Option<PathBuf>,
    /// Its manifest file, for a plugin found on disk.
    pub manifest_path: Option<PathBuf>,
    /// Its state.
    pub state: PluginState,
    /// Why it is not running, or what it lacks.
    pub reason: Option<String>,
    /// The names of its tools, as its manifest lists them.
    pub tools: Vec<String>,
}

impl From<toolshed_host::PluginInfo> for PluginInfo {
    fn from(info: toolshed_host::PluginInfo) -> Self {
        let toolshed_host::PluginInfo {
            id,
            name,
            version,
            description,
            kind,
            root,
            dir,
            manifest_path,
            state,
            reason,
            tools,
        } = info;
        Self {
            id,
            name,
            version,
            description,
            kind: kind.into(),
            root: root.into(),
            dir,
            manifest_path,
            state: state.into(),
            reason,
            tools,
        }
    }
}

impl PluginInfo {
    /// Its name and description in `locale` where its manifest translates them: the exact
    /// tag first, then its language (`zh-CN`, then `zh`).
    pub(crate) fn localize(&mut self, manifest: &PluginManifest, locale: &str) {
        let Some(translation) = manifest.translation(locale) else {
            return;
        };
        if let Some(name) = &translation.name {
            self.name.clone_from(name);
        }
        if let Some(description) = &translation.description {
            self.description.clone_from(description);
        }
    }
}

/// What a plugin's manifest adds to it in a listing.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Listing {
    /// Its tags (in the language asked for, where the manifest translates them).
    pub tags: Vec<String>,
    /// Who wrote it (shown, never acted on).
    pub author: Option<String>,
    /// Other plugins it needs, by id, each with a semver requirement.
    pub dependencies: BTreeMap<String, String>,
    /// The format its manifest was written in, when another system's (`agent-spaces`,
    /// `fenix`, `cyrene`, `npm`).
    pub dialect: Option<String>,
    /// Its home page.
    pub homepage: Option<String>,
    /// Its icon, as the manifest names it (`GET /plugins/{id}/icon` serves a file).
    pub icon: Option<String>,
    /// Parts made for another host's window, not served by a headless host.
    pub not_served: Vec<String>,
    /// For a JavaScript plugin, what runs it: `quickjs`, or `node (why)` when it needs
    /// Node.js (a Node built-in module, npm dependencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

impl Listing {
    /// The listing fields of `manifest` (`locale`'s tags where it has them).
    pub(crate) fn of(
        manifest: &PluginManifest,
        locale: Option<&str>,
        dir: Option<&std::path::Path>,
    ) -> Result<Self, ApiError> {
        read(
            serde_json::Value::Object(manifest.listing_fields(locale, dir)),
            "a plugin's listing",
        )
    }
}

/// A plugin as `GET /plugins` lists it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Plugin {
    /// The plugin.
    #[serde(flatten)]
    pub info: PluginInfo,
    /// What its manifest adds.
    #[serde(flatten)]
    pub listing: Option<Listing>,
    /// Running, but its tools cannot work until a person sets it up: why (a required
    /// config value or secret missing, a network grant not given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_setup: Option<String>,
}

/// Every plugin.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct PluginList {
    /// The plugins.
    pub plugins: Vec<Plugin>,
}

/// What a plugin may touch, as its manifest asks.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Capabilities {
    /// Paths it may read, relative to the workspace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fs_read: Vec<String>,
    /// Paths it may write, relative to the workspace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fs_write: Vec<String>,
    /// Hosts it may reach.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// Whether it may spawn processes.
    pub process: bool,
    /// Environment variables it may read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Tools it may call through the pipeline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Whether it keeps memories.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub memory: bool,
    /// Whether it publishes events.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub events: bool,
    /// Whether it asks a model.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub llm: bool,
    /// Whether it changes its own config.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub config_write: bool,
    /// The variables it adds to commands once granted `shell-env` (names; values stay in
    /// its manifest).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shell_env: Vec<String>,
}

impl From<&toolshed_core::Capabilities> for Capabilities {
    fn from(asked: &toolshed_core::Capabilities) -> Self {
        let toolshed_core::Capabilities {
            fs_read,
            fs_write,
            network,
            process,
            env,
            tools,
            memory,
            events,
            llm,
            config_write,
            shell_env,
        } = asked.clone();
        Self {
            fs_read,
            fs_write,
            network,
            process,
            env,
            tools,
            memory,
            events,
            llm,
            config_write,
            shell_env: shell_env.into_keys().collect(),
        }
    }
}

/// One environment variable of a plugin's env contract.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EnvVar {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the plugin is degraded without it.
    pub required: bool,
    /// Whether its value is a secret.
    pub secret: bool,
}

impl From<&toolshed_core::EnvVar> for EnvVar {
    fn from(var: &toolshed_core::EnvVar) -> Self {
        let toolshed_core::EnvVar {
            name,
            description,
            required,
            secret,
        } = var.clone();
        Self {
            name,
            description,
            required,
            secret,
        }
    }
}

/// What one plugin's manifest asks for, beside its listing.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ManifestFields {
    /// What it may touch.
    pub capabilities: Capabilities,
    /// Its env contract.
    pub env: Vec<EnvVar>,
    /// What its manifest adds to a listing.
    #[serde(flatten)]
    pub listing: Listing,
}

impl ManifestFields {
    /// The fields of `manifest`, of a plugin in `dir`.
    pub(crate) fn of(
        manifest: &PluginManifest,
        dir: Option<&std::path::Path>,
    ) -> Result<Self, ApiError> {
        Ok(Self {
            capabilities: (&manifest.capabilities).into(),
            env: manifest.env.iter().map(EnvVar::from).collect(),
            listing: Listing::of(manifest, None, dir)?,
        })
    }
}

/// Where an installed plugin came from.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Provenance {
    /// The path or URL it was installed from.
    pub source: String,
    /// The archive's SHA-256, when the install checked one.
    pub sha256: Option<String>,
    /// One SHA-256 over every installed file's path and hash.
    pub tree_sha256: String,
    /// When, in milliseconds since the Unix epoch.
    pub installed_ms: i64,
    /// The dependencies installed with it (npm's packages), when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<NpmDependencies>,
}

impl From<toolshed_host::install::provenance::Provenance> for Provenance {
    fn from(recorded: toolshed_host::install::provenance::Provenance) -> Self {
        let toolshed_host::install::provenance::Provenance {
            source,
            sha256,
            tree_sha256,
            installed_ms,
            files: _,
            dependencies,
        } = recorded;
        Self {
            source,
            sha256,
            tree_sha256,
            installed_ms,
            // Field by field: the host's type is its own (`install::npm` is private).
            dependencies: dependencies.map(|installed| NpmDependencies {
                manager: installed.manager,
                packages: installed.packages,
                bytes: installed.bytes,
                millis: installed.millis,
            }),
        }
    }
}

/// What a dependency install put in place.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct NpmDependencies {
    /// The package manager: `npm`.
    pub manager: String,
    /// The packages in `node_modules`.
    pub packages: u64,
    /// Their size in bytes.
    pub bytes: u64,
    /// How long the install took, in milliseconds.
    pub millis: u64,
}

/// One plugin: as listed, with what its manifest asks for and where it came from.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PluginDetail {
    /// The plugin.
    #[serde(flatten)]
    pub info: PluginInfo,
    /// What its manifest asks for.
    #[serde(flatten)]
    pub manifest: Option<ManifestFields>,
    /// Where it came from; `null` for a plugin toolshed did not install.
    pub provenance: Option<Provenance>,
}

/// How a plugin's files differ from what was installed.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Drift {
    /// Files whose content changed.
    pub changed: Vec<String>,
    /// Files that were not installed.
    pub added: Vec<String>,
    /// Installed files that are gone.
    pub removed: Vec<String>,
}

/// An installed plugin's files checked against what its install recorded.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Verified {
    /// The plugin.
    pub id: String,
    /// Whether its files are exactly those installed.
    pub clean: bool,
    /// What changed since the install.
    pub drift: Drift,
    /// What the install recorded.
    pub provenance: Provenance,
}

impl Verified {
    /// Plugin `id`'s check.
    pub(crate) fn new(
        id: String,
        provenance: toolshed_host::install::provenance::Provenance,
        drift: toolshed_host::install::provenance::Drift,
    ) -> Self {
        let clean = drift.is_clean();
        let toolshed_host::install::provenance::Drift {
            changed,
            added,
            removed,
        } = drift;
        Self {
            id,
            clean,
            drift: Drift {
                changed,
                added,
                removed,
            },
            provenance: provenance.into(),
        }
    }
}

/// How a plugin is now, in a word.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HealthWord {
    /// Working.
    Ok,
    /// Working with less; the message says what is missing.
    Degraded,
    /// Not working; the message says why.
    Failed,
}

/// How a plugin is now.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct PluginHealth {
    /// The plugin.
    pub id: String,
    /// Its state.
    pub state: PluginState,
    /// How it is.
    pub health: HealthWord,
    /// What is missing or wrong; empty when it is well.
    pub message: String,
}

impl PluginHealth {
    /// Plugin `info`'s `health`.
    pub(crate) fn new(info: toolshed_host::PluginInfo, health: toolshed_core::Health) -> Self {
        use toolshed_core::Health as H;
        let (health, message) = match health {
            H::Ok => (HealthWord::Ok, String::new()),
            H::Degraded(why) => (HealthWord::Degraded, why),
            H::Failed(why) => (HealthWord::Failed, why),
        };
        Self {
            id: info.id,
            state: info.state.into(),
            health,
            message,
        }
    }
}

/// What an uninstall removed.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Uninstalled {
    /// The plugin, as it was.
    pub uninstalled: PluginInfo,
}

/// What an install put in place.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Installed {
    /// The plugin's id.
    pub id: String,
    /// Its version.
    pub version: String,
    /// Whether an installed copy was replaced (`force`).
    pub replaced: bool,
    /// The plugin as loaded; `null` when it could not be read back.
    pub plugin: Option<PluginInfo>,
}

/// What a plugin's manifest asks for and what it was granted.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PluginGrants {
    /// The plugin.
    pub plugin_id: String,
    /// Its grants.
    pub grants: GrantsInfo,
}

/// A plugin's asks and grants.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GrantsInfo {
    /// The grants its manifest asks for by name (`http:api.example.com`, ...).
    pub declared: Vec<String>,
    /// The capabilities its manifest declares as `*`: whatever a person grants (`http`,
    /// `fs-read`, `fs-write`, `tool`).
    pub wildcards: Vec<String>,
    /// What was granted.
    pub granted: Vec<String>,
}

impl PluginGrants {
    /// Plugin `plugin_id`'s grants.
    pub(crate) fn new(plugin_id: String, info: toolshed_host::registry::GrantsInfo) -> Self {
        let toolshed_host::registry::GrantsInfo {
            declared,
            wildcards,
            granted,
        } = info;
        Self {
            plugin_id,
            grants: GrantsInfo {
                declared,
                wildcards,
                granted,
            },
        }
    }
}

//! What the registry knows of one plugin: where it came from and what it is doing.
//!
//! A plugin's lifecycle is one value, [`Phase`], rather than a set of optional fields that
//! must agree: a running plugin always has an instance (and only a running one holds a
//! loader-built instance), a failed one always has a reason, and what a loader built it
//! with lives beside the instance it describes. [`PluginState`] is the public view of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use toolshed_core::{Grants, Plugin, PluginKind, PluginManifest, ToolSpec};

use super::catalog::LazyValidator;
use super::discovery::Root;

/// A plugin's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginState {
    /// Present, not yet enabled.
    Installed,
    /// Enabled, not yet started.
    Enabled,
    /// Started; its tools are callable.
    Running,
    /// Turned off by a person; its tools are not callable.
    Disabled,
    /// Running, but a required variable or binary is missing: its tools answer Unconfigured.
    Degraded,
    /// Loaded and running, its calls refused until a person resumes it
    /// (`toolshed plugins resume`): what it holds (processes, sessions) is kept.
    Paused,
    /// Could not start; the reason says why.
    Error,
    /// Removed (only ever seen in the `plugin.state_changed` event of an uninstall).
    Uninstalled,
}

impl PluginState {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Installed => "installed",
            Self::Enabled => "enabled",
            Self::Running => "running",
            Self::Disabled => "disabled",
            Self::Degraded => "degraded",
            Self::Paused => "paused",
            Self::Error => "error",
            Self::Uninstalled => "uninstalled",
        }
    }
}

/// A plugin as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginInfo {
    /// The id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The version.
    pub version: String,
    /// What it offers.
    pub description: String,
    /// How it is implemented.
    pub kind: PluginKind,
    /// Where it was found.
    pub root: Root,
    /// Its directory, for plugins found on disk.
    pub dir: Option<PathBuf>,
    /// Its manifest file, for plugins found on disk.
    pub manifest_path: Option<PathBuf>,
    /// Its state.
    pub state: PluginState,
    /// Why it is not running, or what it lacks.
    pub reason: Option<String>,
    /// The names of its tools, as its manifest lists them.
    pub tools: Vec<String>,
}

/// Where a plugin's code comes from.
pub(super) enum Origin {
    /// Compiled into toolshed: one instance for the life of the process, started and
    /// stopped in place.
    Compiled(Arc<dyn Plugin>),
    /// A directory with a manifest: a loader builds a fresh instance each time it starts.
    Dir(PluginDir),
}

impl Origin {
    /// The directory, for a plugin found on disk.
    pub(super) fn dir(&self) -> Option<&PluginDir> {
        match self {
            Self::Compiled(_) => None,
            Self::Dir(dir) => Some(dir),
        }
    }
}

/// A plugin directory and its manifest.
pub(super) struct PluginDir {
    /// The directory.
    pub dir: PathBuf,
    /// The manifest file in it.
    pub manifest_path: PathBuf,
    /// For plugins of a user root: what the files looked like when last loaded, so the
    /// watcher can tell a change.
    pub fingerprint: Option<u64>,
}

/// What a plugin is doing.
pub(super) enum Phase {
    /// Found and not started yet, or between being stopped and started again.
    Installed,
    /// Started: its tools are in the catalog.
    Running(Running),
    /// Turned off by a person.
    Disabled,
    /// Could not be loaded or started.
    Failed {
        /// Why, for the person reading `toolshed plugins list`.
        reason: String,
    },
}

/// A started plugin.
#[derive(Clone)]
pub(super) struct Running {
    /// The instance serving its tools.
    pub plugin: Arc<dyn Plugin>,
    /// For an instance a loader built: what it was built with.
    pub loaded: Option<Loaded>,
    /// Set when it is degraded: what its env contract or requirements lack.
    pub unmet: Option<Unmet>,
    /// Input schemas of its tools, by tool name: each compiled the first time a call needs
    /// it, and kept as long as this instance runs.
    pub validators: BTreeMap<String, Arc<LazyValidator>>,
    /// Paused by a person: loaded, its calls refused until it is resumed.
    pub paused: bool,
}

/// What a loader built an instance with.
#[derive(Clone)]
pub(super) struct Loaded {
    /// The grants it holds (boxed: a running slot stays small).
    pub grants: Box<Grants>,
    /// The key of what it was built from ([`crate::lazy::load_key`]).
    pub key: String,
}

/// What a degraded plugin lacks.
#[derive(Clone)]
pub(super) struct Unmet {
    /// The reason, naming what to set or install.
    pub reason: String,
    /// The environment variables to set.
    pub missing_env: Vec<String>,
    /// Whether its tools cannot work until it is fixed (an unmet env contract), rather
    /// than the plugin working with less (it withholds some tools, say).
    pub blocks_tools: bool,
}

/// One plugin.
pub(super) struct Slot {
    pub manifest: PluginManifest,
    pub root: Root,
    pub origin: Origin,
    pub phase: Phase,
    /// The tool names the plugin served when it last ran (a sandboxed plugin's tools are
    /// known only once its code ran).
    pub last_tools: Vec<String>,
    /// For sandboxed plugins: the tools recorded when their code last ran, and the key of
    /// what it was loaded from ([`crate::lazy`]).
    pub recorded: Option<(String, Vec<ToolSpec>)>,
}

impl Slot {
    /// A plugin just found, not started.
    pub(super) fn new(manifest: PluginManifest, root: Root, origin: Origin) -> Self {
        Self {
            manifest,
            root,
            origin,
            phase: Phase::Installed,
            last_tools: Vec::new(),
            recorded: None,
        }
    }

    /// The id.
    pub(super) fn id(&self) -> &str {
        &self.manifest.id
    }

    /// Whether it runs while no person has enabled or disabled it.
    pub(super) fn enabled_by_default(&self) -> bool {
        match &self.origin {
            Origin::Compiled(plugin) => plugin.enabled_by_default(),
            Origin::Dir(_) => true,
        }
    }

    /// The plugin's directory, for plugins found on disk.
    pub(super) fn dir(&self) -> Option<&Path> {
        self.origin.dir().map(|d| d.dir.as_path())
    }

    /// The public state.
    pub(super) fn state(&self) -> PluginState {
        match &self.phase {
            Phase::Installed => PluginState::Installed,
            Phase::Running(Running { paused: true, .. }) => PluginState::Paused,
            Phase::Running(Running { unmet: None, .. }) => PluginState::Running,
            Phase::Running(Running { unmet: Some(_), .. }) => PluginState::Degraded,
            Phase::Disabled => PluginState::Disabled,
            Phase::Failed { .. } => PluginState::Error,
        }
    }

    /// Why it is not running, or what it lacks.
    pub(super) fn reason(&self) -> Option<String> {
        match &self.phase {
            Phase::Running(Running { paused: true, .. }) => Some(format!(
                "paused by a person; its calls are refused until `toolshed plugins resume {}`",
                self.manifest.id
            )),
            Phase::Installed | Phase::Running(Running { unmet: None, .. }) => None,
            Phase::Running(Running {
                unmet: Some(unmet), ..
            }) => Some(unmet.reason.clone()),
            Phase::Disabled => Some(format!(
                "disabled; enable it with `toolshed plugins enable {}`",
                self.manifest.id
            )),
            Phase::Failed { reason } => Some(reason.clone()),
        }
    }

    /// The running instance, if it runs.
    pub(super) fn running(&self) -> Option<&Running> {
        match &self.phase {
            Phase::Running(running) => Some(running),
            _ => None,
        }
    }

    /// Whether a loader built the running instance.
    pub(super) fn runs_loaded(&self) -> bool {
        self.running().is_some_and(|r| r.loaded.is_some())
    }

    /// The tool names it lists: those it served when it last ran, else its manifest's.
    pub(super) fn listed_tools(&self) -> Vec<String> {
        if self.last_tools.is_empty() {
            self.manifest.tools.iter().map(|t| t.name.clone()).collect()
        } else {
            self.last_tools.clone()
        }
    }

    /// The plugin as listed.
    pub(super) fn info(&self) -> PluginInfo {
        let dir = self.origin.dir();
        PluginInfo {
            id: self.manifest.id.clone(),
            name: self.manifest.name.clone(),
            version: self.manifest.version.clone(),
            description: self.manifest.description.clone(),
            kind: self.manifest.kind,
            root: self.root,
            dir: dir.map(|d| d.dir.clone()),
            manifest_path: dir.map(|d| d.manifest_path.clone()),
            state: self.state(),
            reason: self.reason(),
            tools: self.listed_tools(),
        }
    }
}

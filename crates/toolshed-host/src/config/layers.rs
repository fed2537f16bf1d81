//! How the layers of configuration are read, merged and narrowed: the workspace's file,
//! the user's, an explicit one and the environment, with the settings that widen access
//! ignored in a workspace's file that is not trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::*;

impl LoadedConfig {
    /// Every leaf setting in force, in the config's order, with the layer that set it.
    pub fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        if let Ok(mut value) = serde_json::to_value(&self.config) {
            if let Some(map) = value.as_object_mut() {
                for (name, section) in &self.config.sections {
                    map.insert(name.clone(), section.clone());
                }
            }
            self.flatten(&value, "", &mut out);
        }
        out
    }

    fn flatten(&self, value: &serde_json::Value, prefix: &str, out: &mut Vec<Setting>) {
        match value {
            serde_json::Value::Object(map) if !map.is_empty() => {
                for (key, inner) in map {
                    let dotted = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    self.flatten(inner, &dotted, out);
                }
            }
            serde_json::Value::Null => {}
            _ => out.push(Setting {
                key: prefix.to_string(),
                value: if secret_setting(prefix) {
                    serde_json::Value::String("(set; not shown)".into())
                } else {
                    value.clone()
                },
                source: self.source_of(prefix),
            }),
        }
    }

    /// The layer that set `key` or the nearest table holding it (`default` if none did).
    ///
    /// (Values of [`secret_setting`] keys are never shown.)
    fn source_of(&self, key: &str) -> String {
        let mut key = key;
        loop {
            if let Some(source) = self.sources.get(key) {
                return source.clone();
            }
            match key.rsplit_once('.') {
                Some((parent, _)) => key = parent,
                None => return "default".into(),
            }
        }
    }
}

/// The user's toolshed config dir: `$XDG_CONFIG_HOME/toolshed` (else `~/.config/toolshed`).
pub fn user_config_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|dir| dir.join("toolshed"))
}

impl ConfigSources {
    /// The usual sources: the workspace file, `$XDG_CONFIG_HOME/toolshed/config.toml` (else
    /// `~/.config/toolshed/config.toml`), an explicit file and the process environment.
    pub fn standard(workspace: &Path, explicit_file: Option<PathBuf>) -> Self {
        let user_file = user_config_dir().map(|dir| dir.join("config.toml"));
        let explicit_file =
            explicit_file.or_else(|| std::env::var_os("TOOLSHED_CONFIG").map(PathBuf::from));
        Self {
            workspace: workspace.to_path_buf(),
            user_file,
            explicit_file,
            env: std::env::vars()
                .filter(|(k, _)| k.starts_with("TOOLSHED_"))
                .collect(),
            sections: Vec::new(),
        }
    }

    /// Reads every layer, reports unknown keys and merges.
    pub fn load(&self) -> Result<LoadedConfig, ConfigError> {
        let mut merged = toml::Table::new();
        let mut loaded = LoadedConfig::default();
        let mut files = vec![(self.workspace.join("toolshed.toml"), false)];
        if let Some(user) = &self.user_file {
            files.push((user.clone(), false));
        }
        if let Some(explicit) = &self.explicit_file {
            files.push((explicit.clone(), true));
        }
        // Every layer first, in order, with whether it is the workspace's own file: whether
        // that file is trusted depends on the layers after it.
        let mut layers: Vec<(String, toml::Table, bool)> = Vec::new();
        for (index, (path, must_exist)) in files.into_iter().enumerate() {
            let Some(table) = read_table(&path, must_exist)? else {
                continue;
            };
            let name = path.display().to_string();
            check_layer(&table, &name, &self.sections, &mut loaded.unknown_keys)?;
            layers.push((name, table, index == 0));
        }
        let mut env: Vec<_> = self.env.clone();
        env.sort();
        for (name, raw) in env {
            if RESERVED_ENV.contains(&name.as_str()) {
                continue;
            }
            let source = format!("environment ({name})");
            let Some(table) = env_table(&name, &raw) else {
                loaded.unknown_keys.push(UnknownKey { source, key: name });
                continue;
            };
            check_layer(&table, &source, &self.sections, &mut loaded.unknown_keys)?;
            layers.push((source, table, false));
        }
        let own: Vec<toml::Table> = layers
            .iter()
            .filter(|(_, _, workspace)| !workspace)
            .map(|(_, table, _)| table.clone())
            .collect();
        loaded.workspace_trusted = trusts(&own, &self.workspace);
        for (name, mut table, workspace) in layers {
            if workspace {
                // The workspace's file comes with the code (a cloned repository): it may
                // narrow what tools do, never widen it, unless the user trusts it. Whether
                // trusted or not, the trust keys themselves count only in the user's layers.
                if loaded.workspace_trusted {
                    take_key(&mut table, "trust_workspace_config");
                    take_key(&mut table, "trusted_workspaces");
                } else {
                    loaded.workspace_ignored.extend(narrow_workspace_table(
                        &mut table,
                        &name,
                        &self.sections,
                    ));
                }
            }
            for (key, why) in widening_in(&table, &self.sections) {
                loaded.widening.retain(|w| w.key != key);
                loaded.widening.push(WideningSetting {
                    key,
                    source: name.clone(),
                    why,
                });
            }
            record_sources(&table, "", &name, &mut loaded.sources);
            merge(&mut merged, table);
            loaded.layers.push(name);
        }
        let mut sections = BTreeMap::new();
        for spec in &self.sections {
            let value = spec.resolve(merged.remove(spec.name()))?;
            sections.insert(spec.name().to_string(), value);
        }
        loaded.config =
            Config::deserialize(toml::Value::Table(merged)).map_err(|e| ConfigError::Invalid {
                source_name: "merged layers".into(),
                message: e.to_string(),
            })?;
        loaded.config.sections = sections;
        validate(&loaded.config)?;
        Ok(loaded)
    }
}

/// The host's settings that widen what tools, commands, plugins or clients may do, with
/// why. In a workspace's `toolshed.toml` they are ignored unless the user's own config
/// trusts it; `toolshed doctor` reports each one set anywhere, with where. A registered
/// section adds its own ([`crate::section::Section::WIDENING`]).
pub const WIDENING: &[(&str, &str)] = &[
    (
        "web.allow",
        "opens private and local addresses to the web tools",
    ),
    (
        "exec.env_allow",
        "passes more of your environment to commands",
    ),
    ("server.bind", "could expose the server beyond this machine"),
    (
        "workspace",
        "would run the tools on another machine, through a command it names",
    ),
    ("store.url", "keeps toolshed's state in another database"),
    (
        "telemetry.otlp_endpoint",
        "sends a record of every call to another machine",
    ),
    (
        "telemetry.headers",
        "changes what is sent to the telemetry collector",
    ),
    (
        "telemetry.record_arguments",
        "puts call arguments into the exported traces",
    ),
    (
        "telemetry.propagate_http",
        "tells the hosts the tools reach which calls belong together",
    ),
    (
        "telemetry.logs",
        "sends more of toolshed's own log records to the telemetry collector",
    ),
    ("server.allowed_hosts", "accepts more Host names"),
    (
        "server.allowed_origins",
        "lets web pages of other origins call the server",
    ),
    ("server.oauth", "accepts tokens from another issuer"),
    ("server.max_auth_failures", "allows more password guessing"),
    (
        "plugins.download_hosts",
        "allows plugin downloads from more hosts",
    ),
    (
        "policy",
        "could replace your policy rules (a list replaces the one before it)",
    ),
    ("hooks", "would run its commands at every tool call"),
    (
        "approvals.self_approval",
        "could let agents approve their own calls",
    ),
    (
        "approvals.max_pending_per_owner",
        "could let one owner fill more of the approval queue",
    ),
    ("approvals.max_pending", "could let more calls wait at once"),
    (
        "mcp.max_sessions_per_owner",
        "could let one client hold more of the MCP sessions",
    ),
    (
        "mcp.max_sessions",
        "could let more MCP sessions be open at once",
    ),
    (
        "memory.shared_namespaces",
        "lets every owner read and write memories of these namespaces",
    ),
    (
        "llm.base_url",
        "sends plugins' model requests, with your key, to another endpoint",
    ),
    (
        "llm.api_key_env",
        "sends another environment variable to the model endpoint",
    ),
    ("quotas", "could replace your quotas"),
    (
        "orchestration.max_running_per_owner",
        "could let one owner run more subagents at once",
    ),
    (
        "orchestration.max_depth",
        "could let subagents start subagents deeper",
    ),
    (
        "orchestration.max_steps",
        "could let a subagent take more model turns",
    ),
    (
        "orchestration.max_schedules_per_owner",
        "could let one owner keep more schedules",
    ),
    (
        "orchestration.min_schedule_interval_secs",
        "could let schedules fire more often",
    ),
    ("audit", "could shorten what the audit log keeps"),
    (
        "trust_workspace_config",
        "is honoured only in your own config",
    ),
    ("trusted_workspaces", "is honoured only in your own config"),
];

/// A setting a layer made that was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IgnoredKey {
    /// The layer (a file path).
    pub source: String,
    /// The dotted key: `web.allow`, `sandbox.mode`.
    pub key: String,
    /// Why it matters.
    pub why: String,
}

/// A widening setting that was applied, and the layer that set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WideningSetting {
    /// The dotted key.
    pub key: String,
    /// The layer that set it (the last one wins).
    pub source: String,
    /// What it widens.
    pub why: String,
}

/// Notes `source` as the layer that set each leaf key of `table` (a later layer replaces an
/// earlier one's note, as its value does).
fn record_sources(
    table: &toml::Table,
    prefix: &str,
    source: &str,
    sources: &mut BTreeMap<String, String>,
) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            // An empty table sets nothing (a starter config's `[log]` with every key
            // commented out).
            toml::Value::Table(inner) => {
                record_sources(inner, &dotted, source, sources);
            }
            _ => {
                sources.insert(dotted, source.to_string());
            }
        }
    }
}

/// Removes `dotted` (`a.b`) from `table`; whether it was there.
fn take_key(table: &mut toml::Table, dotted: &str) -> bool {
    match dotted.split_once('.') {
        None => table.remove(dotted).is_some(),
        Some((head, rest)) => match table.get_mut(head) {
            Some(toml::Value::Table(inner)) => take_key(inner, rest),
            _ => false,
        },
    }
}

fn has_key(table: &toml::Table, dotted: &str) -> bool {
    match dotted.split_once('.') {
        None => table.contains_key(dotted),
        Some((head, rest)) => match table.get(head) {
            Some(toml::Value::Table(inner)) => has_key(inner, rest),
            _ => false,
        },
    }
}

/// The sandbox settings of `sandbox` that widen it: `full-access`, the host's network,
/// extra writable roots, a deny list without the default entries, no process or memory
/// limit.
fn widening_sandbox(sandbox: &toml::Table) -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    if sandbox.get("mode").and_then(toml::Value::as_str) == Some("full-access") {
        found.push(("mode", "runs commands without a sandbox".to_string()));
    }
    if sandbox.get("network").and_then(toml::Value::as_str) == Some("on") {
        found.push(("network", "gives commands the host's network".into()));
    }
    if sandbox
        .get("writable")
        .and_then(toml::Value::as_array)
        .is_some_and(|w| !w.is_empty())
    {
        found.push((
            "writable",
            "lets commands write outside the workspace".into(),
        ));
    }
    if let Some(deny) = sandbox.get("deny").and_then(toml::Value::as_array) {
        let listed: Vec<&str> = deny.iter().filter_map(toml::Value::as_str).collect();
        let missing: Vec<String> = SandboxConfig::default()
            .deny
            .into_iter()
            .filter(|d| !listed.contains(&d.as_str()))
            .collect();
        if !missing.is_empty() {
            found.push((
                "deny",
                format!(
                    "unhides {} (a list replaces the default one)",
                    missing.join(", ")
                ),
            ));
        }
    }
    for key in ["max_processes", "max_memory_mb"] {
        if sandbox.get(key).and_then(toml::Value::as_integer) == Some(0) {
            found.push((key, "lifts a limit on commands".into()));
        }
    }
    found
}

/// Every widening setting `table` makes, as (dotted key, why).
fn widening_in(table: &toml::Table, sections: &[SectionSpec]) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = WIDENING
        .iter()
        .chain(sections.iter().flat_map(SectionSpec::widening))
        .filter(|(key, _)| has_key(table, key))
        .map(|(key, why)| ((*key).to_string(), (*why).to_string()))
        .collect();
    if let Some(toml::Value::Table(sandbox)) = table.get("sandbox") {
        found.extend(
            widening_sandbox(sandbox)
                .into_iter()
                .map(|(key, why)| (format!("sandbox.{key}"), why)),
        );
    }
    // A profile's workspace, like `[workspace] url`, could send its callers' tools to
    // another machine or directory.
    if let Some(toml::Value::Table(profiles)) = table.get("profiles") {
        found.extend(
            profiles
                .iter()
                .filter(|(_, p)| p.as_table().is_some_and(|p| p.contains_key("workspace")))
                .map(|(name, _)| {
                    (
                        format!("profiles.{name}.workspace"),
                        "would run its callers' tools in another workspace".to_string(),
                    )
                }),
        );
    }
    found
}

/// Removes from a workspace's table every setting that widens access; what was removed.
fn narrow_workspace_table(
    table: &mut toml::Table,
    source: &str,
    sections: &[SectionSpec],
) -> Vec<IgnoredKey> {
    let found = widening_in(table, sections);
    for (key, _) in &found {
        take_key(table, key);
    }
    found
        .into_iter()
        .map(|(key, why)| IgnoredKey {
            source: source.to_string(),
            key,
            why,
        })
        .collect()
}

/// Whether the user's own layers trust `workspace`'s file: `trust_workspace_config = true`,
/// or the workspace in `trusted_workspaces` (compared after resolving links; `~/` expands).
// Compares names (a trusted workspace by its real path); nothing is opened by it.
#[allow(clippy::disallowed_methods)]
fn trusts(layers: &[toml::Table], workspace: &Path) -> bool {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let workspace = canonical(workspace);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    layers.iter().any(|table| {
        table
            .get("trust_workspace_config")
            .and_then(toml::Value::as_bool)
            == Some(true)
            || table
                .get("trusted_workspaces")
                .and_then(toml::Value::as_array)
                .is_some_and(|list| {
                    list.iter().filter_map(toml::Value::as_str).any(|entry| {
                        let path = match (entry.strip_prefix("~/"), &home) {
                            (Some(rest), Some(home)) => home.join(rest),
                            _ => PathBuf::from(entry),
                        };
                        canonical(&path) == workspace
                    })
                })
    })
}

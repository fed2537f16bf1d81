//! Configuration: layered files, environment variables and flags.
//!
//! Layers, later wins: `toolshed.toml` in the workspace, `~/.config/toolshed/config.toml`,
//! the file named by `--config` (or `TOOLSHED_CONFIG`), then `TOOLSHED_*` environment
//! variables. The user's own file comes after the workspace's on purpose: a repository you
//! cloned must not be able to loosen the rules you set for yourself. Nor may it widen what
//! you left at the defaults: settings that widen access ([`WIDENING`]) are ignored in the
//! workspace's file, with a warning naming each, unless your own config trusts it
//! (`trust_workspace_config = true`, or the workspace listed in `trusted_workspaces`).
//!
//! Environment variables map onto keys with `__` between levels:
//! `TOOLSHED_LIMITS__DEFAULT_TIMEOUT_MS=5000` sets `limits.default_timeout_ms`. A value that
//! parses as a TOML value (`5000`, `true`, `["a*"]`) is taken as that; anything else is a
//! string. Unknown keys in any layer are reported (by `toolshed doctor` and as warnings),
//! never silently ignored; a value of the wrong type is an error naming the file and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::agents::{AgentPreset, OrchestrationConfig};
pub use crate::dispatcher::{Limits, MIN_OUTPUT_CEILING};
pub use crate::hooks::{HookEntry, HookEvent, HooksConfig, MAX_HOOK_TIMEOUT_MS};
pub use crate::llm::LlmConfig;
pub use crate::quotas::QuotaConfig;
pub use crate::review::ReviewRules;
pub use crate::section::{Section, SectionError};
pub use crate::store::StoreConfig;

mod layers;
mod registered;
mod sections;
#[cfg(test)]
mod tests;

pub use layers::{IgnoredKey, WIDENING, WideningSetting, user_config_dir};
pub use registered::SectionSpec;
pub use sections::*;

/// Environment variables that are not config keys: they choose where things are, the
/// language plugins speak (`TOOLSHED_LANG`), how a release binary is linked, or how the
/// command sandbox's helper runs (docs/sandbox.md).
pub const RESERVED_ENV: &[&str] = &[
    "TOOLSHED_HOME",
    "TOOLSHED_CONFIG",
    "TOOLSHED_WORKSPACE",
    "TOOLSHED_CURATED_DIR",
    "TOOLSHED_TOKEN",
    "TOOLSHED_LANG",
    "TOOLSHED_TEXT_ORDER",
    "TOOLSHED_SANDBOX_SPARE",
    "TOOLSHED_SANDBOX_TIMINGS",
];

/// The largest config file read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Apply the settings of every workspace's `toolshed.toml` that widen access (honoured
    /// only in your own config, never in a workspace's).
    pub trust_workspace_config: bool,
    /// Workspaces whose `toolshed.toml` may widen access (`~/` expands; honoured only in
    /// your own config).
    pub trusted_workspaces: Vec<String>,
    /// Logging.
    pub log: LogConfig,
    /// Deadlines.
    pub limits: Limits,
    /// Which tools every caller may see and call.
    pub review: ReviewRules,
    /// Named tool selections a caller can ask for.
    pub profiles: BTreeMap<String, ReviewRules>,
    /// The audit log.
    pub audit: AuditConfig,
    /// `toolshed serve`: where it listens.
    pub server: ServerConfig,
    /// The MCP door.
    pub mcp: McpConfig,
    /// Child processes.
    pub exec: ExecConfig,
    /// A workspace on another machine: over SSH or in a container (docs/backends.md).
    pub workspace: RemoteWorkspaceConfig,
    /// Asynchronous jobs of the REST API.
    pub jobs: JobsConfig,
    /// Installing plugins.
    pub plugins: PluginsConfig,
    /// The web tools and the HTTP client behind them.
    pub web: WebConfig,
    /// The command sandbox.
    pub sandbox: SandboxConfig,
    /// Policy rules: which calls run, need approval, or are refused.
    pub policy: crate::policy::PolicyConfig,
    /// How long a call waits for a person's approval.
    pub approvals: crate::approvals::ApprovalsConfig,
    /// Command hooks before and after tools.
    pub hooks: crate::hooks::HooksConfig,
    /// Calls per minute and at once, per owner and tool kind.
    pub quotas: Vec<crate::quotas::QuotaConfig>,
    /// The memory tools (`memory_store`, `memory_search`, ...).
    pub memory: crate::memory::MemoryConfig,
    /// The model endpoint plugins' `ctx.llm.complete` falls back to (docs/plugins.md).
    pub llm: crate::llm::LlmConfig,
    /// Traces and metrics exported over OpenTelemetry (docs/telemetry.md).
    pub telemetry: TelemetryConfig,
    /// The limits of the agent tools: subagents, todo lists, schedules, workflows
    /// (docs/agents.md).
    pub orchestration: crate::agents::OrchestrationConfig,
    /// Named kinds of subagent `agent_run {preset}` starts (`[[agents]]`, docs/agents.md).
    pub agents: Vec<crate::agents::AgentPreset>,
    /// Where the state lives: the embedded SQLite file, or Postgres (docs/deploy.md).
    pub store: StoreConfig,
    /// The sections of features above the host that the sources registered (`[browser]`,
    /// `[lsp]`), by name, with their defaults filled in: read one with [`Config::section`].
    #[serde(skip)]
    pub sections: BTreeMap<String, serde_json::Value>,
}

/// Settings whose values hold credentials: listed as set, never shown (`toolshed config
/// show`): the Postgres URL (its password) and the telemetry headers (an API key).
pub fn secret_setting(key: &str) -> bool {
    key == "store.url" || key.starts_with("telemetry.headers.")
}

/// A configuration problem that stops toolshed from starting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is larger than toolshed reads.
    #[error("config file {path} is {size} bytes; the limit is {MAX_CONFIG_BYTES} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// A file is not valid TOML, or a value has the wrong type.
    #[error("config {source_name}: {message}")]
    Invalid {
        /// The file or `environment`.
        source_name: String,
        /// What is wrong, with the key.
        message: String,
    },
}

impl From<SectionError> for ConfigError {
    fn from(e: SectionError) -> Self {
        ConfigError::Invalid {
            source_name: e.section.into(),
            message: e.message,
        }
    }
}

/// A key that no part of toolshed reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownKey {
    /// The file, or `environment (NAME)`.
    pub source: String,
    /// The dotted key.
    pub key: String,
}

/// Where configuration may come from.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// The workspace root (its `toolshed.toml` is read if present).
    pub workspace: PathBuf,
    /// The user's config file, read if present.
    pub user_file: Option<PathBuf>,
    /// An explicit file (`--config`); it must exist.
    pub explicit_file: Option<PathBuf>,
    /// Environment variables (name, value).
    pub env: Vec<(String, String)>,
    /// The sections of features above the host this binary reads
    /// ([`ConfigSources::with_section`]).
    pub sections: Vec<SectionSpec>,
}

/// The configuration in force and how it was put together.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    /// The merged configuration.
    pub config: Config,
    /// The layers read, in order.
    pub layers: Vec<String>,
    /// Keys nothing reads.
    pub unknown_keys: Vec<UnknownKey>,
    /// Settings of the workspace's `toolshed.toml` not applied because they widen access
    /// and the user's config does not trust the workspace.
    pub workspace_ignored: Vec<IgnoredKey>,
    /// Whether the user's config trusts the workspace's `toolshed.toml`.
    pub workspace_trusted: bool,
    /// The widening settings applied, each with the layer that set it.
    pub widening: Vec<WideningSetting>,
    /// The layer that set each leaf key (dotted), for `toolshed config show`.
    pub sources: BTreeMap<String, String>,
}

/// The commented starter config `toolshed config init` writes: every setting commented
/// out at its default.
pub const STARTER: &str = include_str!("config_starter.toml");

/// One setting in force, for `toolshed config show`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    /// The dotted key: `limits.default_timeout_ms`.
    pub key: String,
    /// Its value.
    pub value: serde_json::Value,
    /// The layer that set it (a file path or `environment (NAME)`), or `default`.
    pub source: String,
}

fn validate(config: &Config) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        source_name: "limits".into(),
        message,
    };
    if config.limits.default_timeout_ms == 0 || config.limits.max_timeout_ms == 0 {
        return Err(invalid("timeouts must be at least 1 ms".into()));
    }
    if config.limits.default_timeout_ms > config.limits.max_timeout_ms {
        return Err(invalid(format!(
            "default_timeout_ms ({}) is larger than max_timeout_ms ({}); lower the first or raise the second",
            config.limits.default_timeout_ms, config.limits.max_timeout_ms
        )));
    }
    if config.limits.max_output_bytes < MIN_OUTPUT_CEILING {
        return Err(invalid(format!(
            "max_output_bytes ({}) is below {MIN_OUTPUT_CEILING}: a reply that small cannot say what was cut; give {MIN_OUTPUT_CEILING} or more (the default is 100000)",
            config.limits.max_output_bytes
        )));
    }
    config.memory.check()?;
    config.llm.check()?;
    config.orchestration.check()?;
    crate::agents::check_presets(&config.agents, config.orchestration.max_steps)?;
    if !matches!(config.web.search.fallback.as_str(), "duckduckgo" | "off") {
        return Err(ConfigError::Invalid {
            source_name: "web".into(),
            message: format!(
                "[web.search] fallback = `{}` is not one of `duckduckgo`, `off`",
                config.web.search.fallback
            ),
        });
    }
    if !(1..=MAX_PAGE_SIZE).contains(&config.mcp.page_size) {
        return Err(ConfigError::Invalid {
            source_name: "mcp".into(),
            message: format!(
                "page_size = {} is out of range; use 1 to {MAX_PAGE_SIZE}",
                config.mcp.page_size
            ),
        });
    }
    config.web.allow_rules()?;
    config.sandbox.mode()?;
    config.sandbox.network()?;
    if let Some(oauth) = &config.server.oauth {
        oauth.check().map_err(|e| ConfigError::Invalid {
            source_name: "server.oauth".into(),
            message: e.to_string(),
        })?;
    }
    // Policy rules, quotas and hooks are compiled (and so checked) once, when the host
    // opens: compiling their patterns twice would cost every start.
    Ok(())
}

/// The largest `mcp.page_size` accepted.
pub const MAX_PAGE_SIZE: usize = 1000;

fn read_table(path: &Path, must_exist: bool) -> Result<Option<toml::Table>, ConfigError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map(Some)
        .map_err(|e| ConfigError::Invalid {
            source_name: path.display().to_string(),
            message: e.to_string(),
        })
}

/// Deserializes one layer alone, so that unknown keys and type errors name their source:
/// each registered section's table by its own type, the rest as the host's [`Config`].
fn check_layer(
    table: &toml::Table,
    source: &str,
    sections: &[SectionSpec],
    unknown: &mut Vec<UnknownKey>,
) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        source_name: source.to_string(),
        message,
    };
    let mut rest = table.clone();
    let mut found = Vec::new();
    for spec in sections {
        if let Some(value) = rest.remove(spec.name()) {
            if !value.is_table() {
                return Err(invalid(format!(
                    "`{}` must be a table ([{}]), not a {}",
                    spec.name(),
                    spec.name(),
                    value.type_str()
                )));
            }
            found.extend(spec.read_layer(value, source)?);
        }
    }
    serde_ignored::deserialize(toml::Value::Table(rest), |path| {
        found.push(path.to_string());
    })
    .map(|_: Config| ())
    .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
    unknown.extend(found.into_iter().map(|key| UnknownKey {
        source: source.to_string(),
        key,
    }));
    Ok(())
}

/// `TOOLSHED_A__B=v` as the table `{a = {b = v}}`; `None` when the name has an empty part.
fn env_table(name: &str, raw: &str) -> Option<toml::Table> {
    let rest = name.strip_prefix("TOOLSHED_")?;
    let parts: Vec<String> = rest.split("__").map(|p| p.to_ascii_lowercase()).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()));
    let mut value = value;
    for part in parts.iter().rev() {
        let mut table = toml::Table::new();
        table.insert(part.clone(), value);
        value = toml::Value::Table(table);
    }
    match value {
        toml::Value::Table(t) => Some(t),
        _ => None,
    }
}

/// Deep-merges `upper` into `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, upper: toml::Table) {
    for (key, value) in upper {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(u)) => merge(b, u),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The data directory: `explicit`, else `$TOOLSHED_HOME`, else `$XDG_DATA_HOME/toolshed`,
/// else `~/.local/share/toolshed`.
pub fn default_data_dir(explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit
        .or_else(|| std::env::var_os("TOOLSHED_HOME").map(PathBuf::from))
        .or_else(|| {
            std::env::var_os("XDG_DATA_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|p| p.join("toolshed"))
        })
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/toolshed"))
        })
}

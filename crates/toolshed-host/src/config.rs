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

/// Environment variables that are not config keys: they choose where things are, the
/// language plugins speak (`TOOLSHED_LANG`), or how a release binary is linked.
pub const RESERVED_ENV: &[&str] = &[
    "TOOLSHED_HOME",
    "TOOLSHED_CONFIG",
    "TOOLSHED_WORKSPACE",
    "TOOLSHED_CURATED_DIR",
    "TOOLSHED_TOKEN",
    "TOOLSHED_LANG",
    "TOOLSHED_TEXT_ORDER",
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
    /// The browser tools (`browser_open`, ...; docs/browser.md).
    pub browser: BrowserConfig,
    /// The model endpoint plugins' `ctx.llm.complete` falls back to (docs/plugins.md).
    pub llm: crate::llm::LlmConfig,
    /// The language servers behind the code-intelligence tools (docs/lsp.md).
    pub lsp: LspConfig,
    /// Traces and metrics exported over OpenTelemetry (docs/telemetry.md).
    pub telemetry: TelemetryConfig,
    /// Where the state lives: the embedded SQLite file, or Postgres (docs/deploy.md).
    pub store: StoreConfig,
}

/// Settings whose values hold credentials: listed as set, never shown (`toolshed config
/// show`): the Postgres URL (its password) and the telemetry headers (an API key).
pub fn secret_setting(key: &str) -> bool {
    key == "store.url" || key.starts_with("telemetry.headers.")
}

/// `[store]`: where toolshed keeps its state (docs/deploy.md).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoreConfig {
    /// A `postgres://user:password@host:port/database` URL: plugin state and config,
    /// tokens, approvals, jobs, audit and events go there, shared by every toolshed that
    /// names it. Unset: all of it is in `toolshed.db` in the data dir.
    pub url: Option<String>,
    /// The most connections to Postgres one toolshed opens.
    pub max_connections: usize,
}

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig")
            .field("url", &self.url.as_ref().map(|_| "(set)"))
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: None,
            max_connections: 8,
        }
    }
}

/// `[telemetry]`: OpenTelemetry export (docs/telemetry.md). Off until `otlp_endpoint` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`): traces go to
    /// `<url>/v1/traces`, metrics to `<url>/v1/metrics`, as protobuf.
    pub otlp_endpoint: Option<String>,
    /// Headers sent with every export (an API key a hosted collector wants).
    pub headers: BTreeMap<String, String>,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Finished spans are sent in batches at most this many milliseconds apart.
    pub traces_interval_ms: u64,
    /// Metrics are sent this many milliseconds apart.
    pub metrics_interval_ms: u64,
    /// How long one export may take before it is given up.
    pub timeout_ms: u64,
    /// Put each call's arguments (as JSON, at most 4 KiB) on its span. Off: spans carry the
    /// tool, the call id, the owner and the outcome, never argument values.
    pub record_arguments: bool,
    /// Send the W3C `traceparent` (and `tracestate`) of the call's span with the HTTP
    /// requests tools and plugins make (`web_fetch`, `http_request`, downloads, `ctx.http`),
    /// so that a traced service joins the call's trace. Off: they carry none (a trace id
    /// tells the far side which calls belong together). Mounted MCP servers always get it
    /// in `_meta`.
    pub propagate_http: bool,
    /// toolshed's own log records at this level and above (`error`, `warn`, `info`,
    /// `debug`) go to `<url>/v1/logs` as well; `off`: none.
    pub logs: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            headers: BTreeMap::new(),
            service_name: "toolshed".into(),
            traces_interval_ms: 5_000,
            metrics_interval_ms: 60_000,
            timeout_ms: 10_000,
            record_arguments: false,
            propagate_http: false,
            logs: "warn".into(),
        }
    }
}

/// `[lsp]`: the language servers of `system.lsp` (docs/lsp.md). Each `[lsp.NAME]` table
/// changes a built-in language (`rust`, `python`, `typescript`, `go`, `c`) or adds one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LspConfig {
    /// A server unused this long is stopped.
    pub idle_timeout_secs: u64,
    /// The longest one request to a server may take (a cold server indexes first).
    pub request_timeout_secs: u64,
    /// The most servers running at once.
    pub max_servers: u64,
    /// The languages, by name.
    #[serde(flatten)]
    pub servers: std::collections::BTreeMap<String, LspServerConfig>,
}

impl Default for LspConfig {
    fn default() -> Self {
        Self {
            idle_timeout_secs: 600,
            request_timeout_secs: 60,
            max_servers: 8,
            servers: std::collections::BTreeMap::new(),
        }
    }
}

/// `[lsp.NAME]`: one language's server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspServerConfig {
    /// The server's command line (`[]` turns the language off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The file extensions it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Files that mark a project's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markers: Option<Vec<String>>,
    /// The server's settings, answered to its `workspace/configuration` requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// Sent with `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization_options: Option<serde_json::Value>,
}

impl LspConfig {
    /// Refuses settings that cannot work, naming them.
    fn check(&self) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            source_name: "lsp".into(),
            message,
        };
        for (name, value) in [
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("request_timeout_secs", self.request_timeout_secs),
            ("max_servers", self.max_servers),
        ] {
            if value == 0 {
                return Err(invalid(format!("[lsp] {name} must be at least 1")));
            }
        }
        for (name, server) in &self.servers {
            if let Some(command) = &server.command
                && command.first().is_some_and(|p| p.trim().is_empty())
            {
                return Err(invalid(format!(
                    "[lsp.{name}] command starts with an empty program name; name the server's binary (or give `[]` to turn {name} off)"
                )));
            }
        }
        Ok(())
    }
}

/// `[browser]`: the headless Chromium behind the browser tools (docs/browser.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserConfig {
    /// The Chromium binary (left out: found on the machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// `session` (each session its own cookies and storage) or `owner` (an owner's
    /// sessions share them).
    pub profile: String,
    /// The most sessions one owner may have open.
    pub max_sessions_per_owner: u64,
    /// The most sessions open at once, all owners together.
    pub max_sessions: u64,
    /// No new session while the browser's processes use more than this (MiB).
    pub max_memory_mb: u64,
    /// A session unused this long is closed; the browser stops when none is left.
    pub idle_timeout_secs: u64,
    /// The viewport's width in CSS pixels.
    pub width: u32,
    /// The viewport's height in CSS pixels.
    pub height: u32,
    /// Allow `browser_evaluate` (any JavaScript in a page).
    pub evaluate: bool,
    /// The largest screenshot returned, in bytes of PNG.
    pub max_screenshot_bytes: u64,
    /// How long a navigation may take before its result is returned anyway.
    pub navigation_timeout_ms: u64,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            executable: None,
            profile: "session".into(),
            max_sessions_per_owner: 4,
            max_sessions: 20,
            max_memory_mb: 2048,
            idle_timeout_secs: 600,
            width: 1280,
            height: 800,
            evaluate: false,
            max_screenshot_bytes: 4 * 1024 * 1024,
            navigation_timeout_ms: 30_000,
        }
    }
}

impl BrowserConfig {
    /// Refuses settings that cannot work, naming them.
    fn check(&self) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            source_name: "browser".into(),
            message,
        };
        if !matches!(self.profile.as_str(), "session" | "owner") {
            return Err(invalid(format!(
                "[browser] profile = `{}` is not one of `session`, `owner`",
                self.profile
            )));
        }
        for (name, value) in [
            ("max_sessions_per_owner", self.max_sessions_per_owner),
            ("max_sessions", self.max_sessions),
            ("max_memory_mb", self.max_memory_mb),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("max_screenshot_bytes", self.max_screenshot_bytes),
            ("navigation_timeout_ms", self.navigation_timeout_ms),
        ] {
            if value == 0 {
                return Err(invalid(format!("[browser] {name} must be at least 1")));
            }
        }
        if !(100..=8192).contains(&self.width) || !(100..=8192).contains(&self.height) {
            return Err(invalid(format!(
                "[browser] width and height must be 100 to 8192 pixels (they are {} and {})",
                self.width, self.height
            )));
        }
        Ok(())
    }
}

/// The command sandbox: what every command (`exec_command`, `shell`, `process_exec`) may
/// reach. See docs/sandbox.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// `read-only`, `workspace-write` or `full-access` (no sandbox, chosen explicitly).
    pub mode: String,
    /// `filtered` (the default: out only through toolshed's egress proxy, under the web
    /// tools' rules and `[web] allow`), `off` (a network of its own with only its own
    /// loopback) or `on` (the host's).
    pub network: String,
    /// More directories commands may write in workspace-write mode (`~/` expands).
    pub writable: Vec<String>,
    /// Paths hidden from commands whatever the mode (`~/` expands), besides toolshed's
    /// data dir, the workspace's `.toolshed/` and the user config dir, always hidden.
    pub deny: Vec<String>,
    /// The size of a command's private `/tmp`, in MiB.
    pub tmp_size_mb: u64,
    /// The oldest Landlock ABI accepted (0: any the kernel has); on an older kernel
    /// commands are refused. 9 also confines connecting to UNIX sockets by path.
    pub min_landlock_abi: u32,
    /// The most processes one command's tree may have at once (0: no limit).
    pub max_processes: u64,
    /// The most memory one command's tree may use, in MiB (0: no limit; left out: half of
    /// the machine's memory).
    pub max_memory_mb: Option<u64>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: "workspace-write".into(),
            network: "filtered".into(),
            writable: Vec::new(),
            deny: [
                "~/.ssh",
                "~/.aws",
                "~/.azure",
                "~/.config/gcloud",
                "~/.kube",
                "~/.docker",
                "~/.gnupg",
                "~/.netrc",
                "~/.git-credentials",
                "~/.npmrc",
                "~/.pypirc",
            ]
            .map(String::from)
            .to_vec(),
            tmp_size_mb: 1024,
            min_landlock_abi: 0,
            max_processes: 4096,
            max_memory_mb: None,
        }
    }
}

impl SandboxConfig {
    /// The resource limits of each command's tree.
    pub fn limits(&self) -> toolshed_ops::ResourceLimits {
        let memory_mb = match self.max_memory_mb {
            Some(mb) => mb,
            None => half_of_memory_mb(),
        };
        toolshed_ops::ResourceLimits {
            max_processes: (self.max_processes > 0).then_some(self.max_processes),
            max_memory_bytes: (memory_mb > 0).then(|| memory_mb.saturating_mul(1 << 20)),
        }
    }

    /// The sandbox mode, parsed; a bad name is an error naming it.
    pub fn mode(&self) -> Result<toolshed_ops::sandbox::SandboxMode, ConfigError> {
        toolshed_ops::sandbox::SandboxMode::parse(&self.mode).map_err(|message| {
            ConfigError::Invalid {
                source_name: "sandbox.mode".into(),
                message,
            }
        })
    }

    /// The network mode, parsed; a bad name is an error naming it.
    pub fn network(&self) -> Result<toolshed_ops::sandbox::NetworkMode, ConfigError> {
        toolshed_ops::sandbox::NetworkMode::parse(&self.network).map_err(|message| {
            ConfigError::Invalid {
                source_name: "sandbox.network".into(),
                message,
            }
        })
    }
}

/// The web tools (`http_request`, `web_fetch`, ...) and the HTTP client they share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebConfig {
    /// Destinations the web tools may reach although they are not public: `docs.internal`,
    /// `docs.internal:8443`, `192.168.1.7`, `[fd00::1]`, `10.0.0.0/8`, `fd00::/8`. Everything
    /// else must be a public address.
    pub allow: Vec<String>,
    /// `[web.search]`: how `web_search` picks a provider.
    pub search: WebSearchConfig,
}

/// `[web.search]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebSearchConfig {
    /// `duckduckgo` (default): with no keyed provider configured, `web_search` reads
    /// DuckDuckGo's HTML results page (keyless, best effort); `off`: it answers
    /// `unconfigured` instead.
    pub fallback: String,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            fallback: "duckduckgo".into(),
        }
    }
}

impl WebConfig {
    /// Whether `web_search` may fall back to DuckDuckGo.
    pub fn keyless_fallback(&self) -> bool {
        self.search.fallback == "duckduckgo"
    }

    /// `allow`, parsed; an entry that does not parse is an error naming it.
    pub fn allow_rules(&self) -> Result<Vec<toolshed_ops::net::AllowRule>, ConfigError> {
        toolshed_ops::net::parse_allowlist(&self.allow).map_err(|e| ConfigError::Invalid {
            source_name: "web".into(),
            message: format!(
                "{e} (in `allow`; entries look like `docs.internal`, `docs.internal:8443`, `192.168.1.7`, `[fd00::1]`, `10.0.0.0/8`)"
            ),
        })
    }
}

/// Installing plugins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginsConfig {
    /// Hosts (`host` or `host:port`) plugin archives may also be downloaded from besides
    /// public HTTPS servers: an internal mirror, say. Plain `http` is allowed for these
    /// only, and their private addresses are not refused.
    pub download_hosts: Vec<String>,
    /// The longest installing one plugin's npm dependencies may take, in seconds.
    pub npm_timeout_secs: u64,
    /// The most one plugin's npm packages may take, in MiB.
    pub npm_max_mb: u64,
    /// Plugin stores in Agent Spaces' index format (`[[plugins.stores]] url = …`), for
    /// `toolshed plugins search` and `toolshed plugins install ID`.
    pub stores: Vec<StoreSource>,
}

/// One plugin store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSource {
    /// Where its `index.json` is: the store's directory URL, or the index file's URL.
    pub url: String,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            download_hosts: Vec::new(),
            npm_timeout_secs: 300,
            npm_max_mb: 256,
            stores: Vec::new(),
        }
    }
}

/// How long finished jobs are kept, and how many jobs at most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobsConfig {
    /// Seconds a finished job stays listed.
    pub retention_secs: u64,
    /// The most jobs kept at once (running ones are never evicted).
    pub max_jobs: usize,
    /// The most jobs one owner may have running at once (its sub-owners counted as it).
    pub max_running_per_owner: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            retention_secs: 3600,
            max_jobs: 1000,
            max_running_per_owner: 100,
        }
    }
}

/// How child processes start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecConfig {
    /// Variables passed to children although their names look secret (contain TOKEN, KEY,
    /// SECRET or PASSWORD); exact names.
    pub env_allow: Vec<String>,
}

/// Where `toolshed serve` listens (its flags override these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerConfig {
    /// The TCP port; 0 picks a free one.
    pub port: u16,
    /// The address to bind. Anything but loopback also needs `--allow-remote`.
    pub bind: std::net::IpAddr,
    /// Failed authentications one address may make per minute before it gets `429`.
    pub max_auth_failures: u32,
    /// `Host` values accepted besides loopback names (`name:port`).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides loopback origins (`https://dash.example:8443`).
    pub allowed_origins: Vec<String>,
    /// Bearer JWTs from this issuer are accepted too (docs/security.md).
    pub oauth: Option<crate::oauth::OAuthConfig>,
    /// The longest a connection may take to send a request head, counted from when the
    /// server starts waiting for it: slow senders and idle keep-alive connections close.
    pub header_timeout_secs: u64,
    /// The longest a client may take to send a request body.
    pub body_timeout_secs: u64,
    /// The most connections open at once; more wait until one closes.
    pub max_connections: usize,
    /// The most request-body bytes being received and parsed at once, across all
    /// requests; a request that would go over waits for room.
    pub max_inflight_body_bytes: usize,
    /// The most event streams (`/api/v1/events`, SSE or WebSocket) open at once.
    pub max_event_streams: usize,
    /// The most event streams one owner keeps open (an agent token's owner, its
    /// sub-owners counted as it; or the admin token and the dashboard together).
    pub max_event_streams_per_owner: usize,
    /// On SIGTERM, how long calls already running may take to finish before they are
    /// cancelled; new requests are refused meanwhile (`503`), and `/api/v1/health` says
    /// `draining` so a load balancer stops sending any.
    pub shutdown_grace_secs: u64,
    /// This server's name among replicas sharing a database: it begins every MCP session
    /// id (`<replica>.<id>`), so a load balancer can keep a session on its replica and a
    /// request that reaches another one is refused with a message that says so. Letters,
    /// digits, `-` and `_`; the host name (a pod's name) when left out.
    pub replica: Option<String>,
}

impl ServerConfig {
    /// [`ServerConfig::replica`], or the host name, with anything but letters, digits, `-`
    /// and `_` replaced by `-` (at most 63 characters).
    pub fn replica_name(&self) -> String {
        let name = self.replica.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default()
        });
        let name: String = name
            .chars()
            .take(63)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        if name.is_empty() {
            "toolshed".into()
        } else {
            name
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            port: 7070,
            bind: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            max_auth_failures: 10,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            oauth: None,
            header_timeout_secs: 60,
            body_timeout_secs: 60,
            max_connections: 512,
            max_inflight_body_bytes: 32 << 20,
            max_event_streams: 256,
            max_event_streams_per_owner: 16,
            shutdown_grace_secs: 10,
            replica: None,
        }
    }
}

/// MCP door settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpConfig {
    /// List tools that cannot work yet (a missing key, setting or grant) in `tools/list`;
    /// by default they are left out, and a call answers `unconfigured`.
    pub list_unconfigured: bool,
    /// The most tools one `tools/list` page holds; a `nextCursor` leads to the rest.
    pub page_size: usize,
    /// An MCP-over-HTTP session with no message for this long is closed; what its own
    /// owner kept running (command sessions, shells, background processes) ends with it,
    /// as when the client deletes the session. Sessions of an agent token's owner leave
    /// their work to that owner.
    pub session_idle_secs: u64,
    /// The most MCP-over-HTTP sessions open at once, all clients together; a new one past
    /// it is refused (`429`) until one ends.
    pub max_sessions: usize,
    /// The most MCP-over-HTTP sessions one owner keeps open at once — an agent token's
    /// owner (its sub-owners counted as it), or the admin token — so that one client's
    /// abandoned sessions cannot take every other client's room.
    pub max_sessions_per_owner: usize,
    /// In discovery mode (`--catalog discover`), the tools `tools/list` holds besides
    /// `tool_search` and `tool_call`: rules as in `[review]` (`workspace_read`,
    /// `group:workspace`). Empty: none.
    pub core: Vec<String>,
    /// In the standard catalog (the default), the tools `tools/list` leaves out, found and
    /// called through `tool_search` and `tool_call` instead: rarely used families, so that
    /// a model does not pay for them on every turn. Rules as in `[review]`. Empty: every
    /// tool is listed.
    pub on_demand: Vec<String>,
    /// A `tools/call` of a client that declared the Tasks extension and still runs after
    /// this many milliseconds becomes a task: the client gets its id at once and fetches
    /// the result with `tasks/get`, also after reconnecting (docs/mcp.md#tasks-long-calls-to-come-back-to). 0: never.
    pub task_after_ms: u64,
}

/// The tools `[mcp] on_demand` leaves out of the default `tools/list`: the utilities
/// (text, dates, random, hashes, JSON, Markdown, arithmetic, summaries and translations),
/// downloads, background processes (a command still running after `exec_command`'s
/// `yield_ms` goes on as a session, which is what most agents need), and the memory
/// journal and its compaction.
pub const DEFAULT_ON_DEMAND: &[&str] = &[
    "group:util",
    "group:download",
    "plugin:system.process",
    "memory_append_daily",
    "memory_compact_summary",
];

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            page_size: 100,
            session_idle_secs: 1800,
            max_sessions: 256,
            max_sessions_per_owner: 32,
            list_unconfigured: false,
            core: Vec::new(),
            on_demand: DEFAULT_ON_DEMAND.iter().map(|r| (*r).to_string()).collect(),
            task_after_ms: 1000,
        }
    }
}

/// Logging settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogConfig {
    /// A `tracing` filter, e.g. `warn` or `toolshed_host=debug`.
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "warn".into(),
        }
    }
}

/// Deadlines and reply sizes of calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Deadline of a call whose tool and caller name none.
    pub default_timeout_ms: u64,
    /// The largest deadline a caller may ask for.
    pub max_timeout_ms: u64,
    /// The most bytes of text (and structured JSON) one call's reply may hold, whatever
    /// its tool and arguments: past it the pipeline cuts the reply and says so. About 25k
    /// tokens by default. Images are not counted (a model pays for them by their pixels).
    pub max_output_bytes: u64,
}

/// The smallest `[limits] max_output_bytes` taken.
pub const MIN_OUTPUT_CEILING: u64 = 4096;

impl Default for Limits {
    fn default() -> Self {
        Self {
            default_timeout_ms: 60_000,
            max_timeout_ms: 3_600_000,
            max_output_bytes: 100_000,
        }
    }
}

/// Allow and deny lists of tool-name globs (`workspace_*`, `calculator`). Deny wins; an
/// empty allow list allows everything not denied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReviewRules {
    /// Globs of tools that may be called; empty means all.
    pub allow: Vec<String>,
    /// Globs of tools that may never be called.
    pub deny: Vec<String>,
    /// In a profile: the catalog its MCP clients get unless `--catalog` says otherwise —
    /// `standard` (the default: every tool but `[mcp] on_demand`, plus `tool_search` and
    /// `tool_call`), `full` (every tool listed) or `discover` (the `[mcp] core` tools plus
    /// the two). Not allowed in `[review]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
    /// In a profile: the sandbox mode its callers' calls run in (`read-only`,
    /// `workspace-write`), never wider than the host's `[sandbox] mode`. Not allowed in
    /// `[review]` (that is `[sandbox] mode`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// Audit log settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditConfig {
    /// The most audit rows kept; older rows are removed.
    pub max_rows: u64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { max_rows: 100_000 }
    }
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

impl LoadedConfig {
    /// Every leaf setting in force, in the config's order, with the layer that set it.
    pub fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        if let Ok(value) = serde_json::to_value(&self.config) {
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

/// Half of the machine's memory in MiB (0 when it cannot be read: no limit).
fn half_of_memory_mb() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024 / 2)
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
            check_layer(&table, &name, &mut loaded.unknown_keys)?;
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
            check_layer(&table, &source, &mut loaded.unknown_keys)?;
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
                    loaded
                        .workspace_ignored
                        .extend(narrow_workspace_table(&mut table, &name));
                }
            }
            for (key, why) in widening_in(&table) {
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
        loaded.config =
            Config::deserialize(toml::Value::Table(merged)).map_err(|e| ConfigError::Invalid {
                source_name: "merged layers".into(),
                message: e.to_string(),
            })?;
        validate(&loaded.config)?;
        Ok(loaded)
    }
}

/// Settings that widen what tools, commands, plugins or clients may do, with why. In a
/// workspace's `toolshed.toml` they are ignored unless the user's own config trusts it;
/// `toolshed doctor` reports each one set anywhere, with where.
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
        "browser.evaluate",
        "lets agents run any JavaScript in browser pages",
    ),
    (
        "browser.executable",
        "chooses the program run as the browser",
    ),
    ("lsp", "chooses the programs run as language servers"),
    (
        "llm.base_url",
        "sends plugins' model requests, with your key, to another endpoint",
    ),
    (
        "llm.api_key_env",
        "sends another environment variable to the model endpoint",
    ),
    ("quotas", "could replace your quotas"),
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
fn widening_in(table: &toml::Table) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = WIDENING
        .iter()
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
    found
}

/// Removes from a workspace's table every setting that widens access; what was removed.
fn narrow_workspace_table(table: &mut toml::Table, source: &str) -> Vec<IgnoredKey> {
    let found = widening_in(table);
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
    config.browser.check()?;
    config.lsp.check()?;
    config.llm.check()?;
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
        oauth.check().map_err(|message| ConfigError::Invalid {
            source_name: "server.oauth".into(),
            message,
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

/// Deserializes one layer alone, so that unknown keys and type errors name their source.
fn check_layer(
    table: &toml::Table,
    source: &str,
    unknown: &mut Vec<UnknownKey>,
) -> Result<(), ConfigError> {
    let value = toml::Value::Table(table.clone());
    let mut found = Vec::new();
    serde_ignored::deserialize(value, |path| found.push(path.to_string()))
        .map(|_: Config| ())
        .map_err(|e: toml::de::Error| ConfigError::Invalid {
            source_name: source.to_string(),
            message: e.to_string(),
        })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path, env: &[(&str, &str)]) -> ConfigSources {
        ConfigSources {
            workspace: dir.to_path_buf(),
            user_file: Some(dir.join("user.toml")),
            explicit_file: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// Every setting line of the starter, uncommented, is a known key with a valid value.
    #[test]
    fn the_starter_config_names_only_real_settings() {
        let dir = tempfile::tempdir().unwrap();
        let uncommented: String = STARTER
            .lines()
            .map(|line| match line.strip_prefix('#') {
                Some(rest)
                    if rest.starts_with('[')
                        || rest.split_once(" = ").is_some_and(|(k, _)| {
                            !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        }) =>
                {
                    rest
                }
                _ => line,
            })
            .map(|line| format!("{line}\n"))
            .collect();
        assert!(uncommented.contains("\n[[policy.rule]]\n"), "{uncommented}");
        std::fs::write(dir.path().join("user.toml"), &uncommented).unwrap();
        let loaded = sources(dir.path(), &[]).load().unwrap();
        assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);
        assert_eq!(loaded.config.policy.rule.len(), 1);
        assert_eq!(loaded.config.quotas.len(), 1);
        assert_eq!(loaded.config.hooks.pre_tool_use.len(), 1);
        // As written (all commented out) it changes nothing.
        std::fs::write(dir.path().join("user.toml"), STARTER).unwrap();
        let loaded = sources(dir.path(), &[]).load().unwrap();
        assert_eq!(loaded.config, Config::default());
        assert!(loaded.widening.is_empty(), "{:?}", loaded.widening);
    }

    #[test]
    fn the_store_url_and_telemetry_headers_are_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("user.toml"),
            "[store]\nurl = \"postgres://t:s3cret@db/t\"\n[telemetry]\nheaders = { x-key = \"k3y\" }\n",
        )
        .unwrap();
        let loaded = sources(dir.path(), &[]).load().unwrap();
        let shown = format!("{:?} {:?}", loaded.settings(), loaded.config.store);
        assert!(
            !shown.contains("s3cret") && !shown.contains("k3y"),
            "{shown}"
        );
        assert!(
            loaded
                .settings()
                .iter()
                .any(|s| s.key == "store.url" && s.value == "(set; not shown)")
        );
    }

    #[test]
    fn later_layers_win_and_env_maps_nested_keys() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("toolshed.toml"),
            "[limits]\ndefault_timeout_ms = 1000\n[review]\ndeny = [\"a*\"]\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("user.toml"),
            "[limits]\ndefault_timeout_ms = 2000\n",
        )
        .unwrap();
        let env = [
            ("TOOLSHED_REVIEW__ALLOW", "[\"calc*\"]"),
            ("TOOLSHED_LOG__LEVEL", "info"),
        ];
        let loaded = sources(dir.path(), &env).load().unwrap();
        assert_eq!(loaded.config.limits.default_timeout_ms, 2000);
        assert_eq!(loaded.config.review.deny, vec!["a*"]);
        // `toolshed config show`: each setting with the layer that set it.
        let settings = loaded.settings();
        let find = |key: &str| settings.iter().find(|s| s.key == key).unwrap().clone();
        let timeout = find("limits.default_timeout_ms");
        assert_eq!(timeout.value, serde_json::json!(2000));
        assert!(timeout.source.ends_with("user.toml"), "{timeout:?}");
        assert!(find("review.deny").source.ends_with("toolshed.toml"));
        let level = find("log.level").source;
        assert_eq!(level, "environment (TOOLSHED_LOG__LEVEL)");
        assert_eq!(find("limits.max_timeout_ms").source, "default");
        assert_eq!(find("server.bind").value, serde_json::json!("127.0.0.1"));
        assert_eq!(loaded.config.review.allow, vec!["calc*"]);
        assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);

        let loaded = sources(
            dir.path(),
            &[("TOOLSHED_LIMITS__DEFAULT_TIMEOUT_MS", "3000")],
        )
        .load()
        .unwrap();
        assert_eq!(loaded.config.limits.default_timeout_ms, 3000);
    }

    #[test]
    fn unknown_keys_are_reported_with_their_source() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("toolshed.toml"),
            "[limits]\ndefault_timeout = 5\n",
        )
        .unwrap();
        let loaded = sources(
            dir.path(),
            &[("TOOLSHED_NOPE", "1"), ("TOOLSHED_HOME", "/x")],
        )
        .load()
        .unwrap();
        let keys: Vec<_> = loaded.unknown_keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, vec!["limits.default_timeout", "nope"]);
        assert!(loaded.unknown_keys[0].source.ends_with("toolshed.toml"));
        assert_eq!(loaded.unknown_keys[1].source, "environment (TOOLSHED_NOPE)");
    }

    #[test]
    fn wrong_types_and_bad_limits_name_the_source() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("user.toml"),
            "[limits]\ndefault_timeout_ms = \"x\"\n",
        )
        .unwrap();
        let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
        assert!(
            err.contains("user.toml") && err.contains("default_timeout_ms"),
            "{err}"
        );

        std::fs::write(
            dir.path().join("user.toml"),
            "[limits]\ndefault_timeout_ms = 0\n",
        )
        .unwrap();
        let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
        assert!(err.contains("at least 1 ms"), "{err}");
    }

    #[test]
    fn memory_limits_that_cannot_work_are_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        for (toml, expected) in [
            ("[memory]\nmax_bytes = 0\n", "max_bytes"),
            ("[memory]\ntime_zone = \"Mars/Olympus\"\n", "IANA"),
        ] {
            std::fs::write(dir.path().join("user.toml"), toml).unwrap();
            let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
            assert!(
                err.contains("[memory]") && err.contains(expected),
                "{toml}: {err}"
            );
        }
        std::fs::write(
            dir.path().join("user.toml"),
            "[memory]\ncompact_bytes = 200000\ntime_zone = \"Europe/Paris\"\n[limits]\nmax_output_bytes = 5000\n",
        )
        .unwrap();
        sources(dir.path(), &[]).load().unwrap();
    }

    #[test]
    fn browser_settings_that_cannot_work_are_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        for (toml, expected) in [
            ("[browser]\nprofile = \"tab\"\n", "`session`, `owner`"),
            (
                "[browser]\nmax_sessions = 0\n",
                "max_sessions must be at least 1",
            ),
            ("[browser]\nidle_timeout_secs = 0\n", "idle_timeout_secs"),
            ("[browser]\nwidth = 20\n", "100 to 8192"),
        ] {
            std::fs::write(dir.path().join("user.toml"), toml).unwrap();
            let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
            assert!(err.contains(expected), "{toml}: {err}");
        }
        std::fs::write(
            dir.path().join("user.toml"),
            "[browser]\nprofile = \"owner\"\nmax_sessions_per_owner = 2\nevaluate = true\n",
        )
        .unwrap();
        let loaded = sources(dir.path(), &[]).load().unwrap();
        assert_eq!(loaded.config.browser.profile, "owner");
        assert!(loaded.config.browser.evaluate);
    }

    #[test]
    fn web_allow_entries_are_parsed_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("user.toml"),
            "[web]\nallow = [\"docs.internal\", \"docs.internal:8443\", \"10.0.0.0/8\", \"192.168.1.7\", \"[fd00::1]\", \"fd00::/8\"]\n",
        )
        .unwrap();
        let loaded = sources(dir.path(), &[]).load().unwrap();
        assert!(loaded.unknown_keys.is_empty(), "{:?}", loaded.unknown_keys);
        let rules = loaded.config.web.allow_rules().unwrap();
        let shown: Vec<String> = rules.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "docs.internal",
                "docs.internal:8443",
                "10.0.0.0/8",
                "192.168.1.7",
                "[fd00::1]",
                "fd00::/8"
            ]
        );

        std::fs::write(
            dir.path().join("user.toml"),
            "[web]\nallow = [\"docs.internal\", \"10.0.0.1/8\"]\nproxy = \"x\"\n",
        )
        .unwrap();
        let err = sources(dir.path(), &[]).load().unwrap_err().to_string();
        assert!(err.contains("`10.0.0.1/8`"), "{err}");
        assert!(err.contains("10.0.0.0/8"), "{err}");
        assert!(err.contains("web"), "{err}");

        std::fs::write(dir.path().join("user.toml"), "[web]\nproxy = \"x\"\n").unwrap();
        let loaded = sources(dir.path(), &[]).load().unwrap();
        let keys: Vec<_> = loaded.unknown_keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["web.proxy"]);
    }

    #[test]
    fn explicit_file_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sources(dir.path(), &[]);
        s.explicit_file = Some(dir.path().join("missing.toml"));
        let err = s.load().unwrap_err().to_string();
        assert!(err.contains("missing.toml"), "{err}");
    }
}

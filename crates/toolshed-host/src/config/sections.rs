//! The sections of the configuration that the host itself reads, besides those of its
//! subsystems (`[policy]`, `[memory]`, ... in their modules): `[server]` and `[mcp]`, whose
//! values the host's catalog and replica name use as well as the doors; `[web]`,
//! `[sandbox]` and `[exec]`, which the host's operations backend is built from;
//! `[telemetry]`, which decides whether calls' arguments are traced. Sections only a
//! feature above the host reads (`[browser]`, `[lsp]`) are that feature's own
//! ([`crate::section::Section`]), registered by the binary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::*;

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
        toolshed_ops::sandbox::SandboxMode::parse(&self.mode).map_err(|e| ConfigError::Invalid {
            source_name: "sandbox.mode".into(),
            message: e.to_string(),
        })
    }

    /// The network mode, parsed; a bad name is an error naming it.
    pub fn network(&self) -> Result<toolshed_ops::sandbox::NetworkMode, ConfigError> {
        toolshed_ops::sandbox::NetworkMode::parse(&self.network).map_err(|e| ConfigError::Invalid {
            source_name: "sandbox.network".into(),
            message: e.to_string(),
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

/// A workspace on another machine (`[workspace]`, docs/backends.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RemoteWorkspaceConfig {
    /// `ssh://[user@]host[:port]/path`, `docker://CONTAINER/path` or `podman://…`: the
    /// workspace when `--workspace` (and `TOOLSHED_WORKSPACE`) name none.
    pub url: Option<String>,
    /// The toolshed program on the other machine (on its `PATH`, or a path).
    pub worker: String,
    /// A private key file to log in with (`~/` expands); else the SSH agent's keys and
    /// ssh's defaults.
    pub identity: Option<String>,
    /// More `ssh` arguments, before the host (`["-o", "ProxyJump=bastion"]`).
    pub ssh_options: Vec<String>,
    /// The container runtime's program, instead of the URL's scheme (`docker`, `podman`).
    pub runtime: Option<String>,
    /// Seconds a call waits for the other machine's answer, and a connection for its
    /// worker to start.
    pub timeout_secs: u64,
    /// Make Fenix's workspace layout (`memory/`, `agent_program_versions/`,
    /// `conversations/`, `.env.agent`) when a host opens a local workspace without it;
    /// nothing is overwritten. Off by default (`toolshed workspace init` makes it by hand).
    pub bootstrap: bool,
}

impl Default for RemoteWorkspaceConfig {
    fn default() -> Self {
        Self {
            url: None,
            worker: "toolshed".into(),
            identity: None,
            ssh_options: Vec::new(),
            runtime: None,
            timeout_secs: 120,
            bootstrap: false,
        }
    }
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
    /// Also serve the gRPC door (docs/grpc.md) on this port of `bind`, with the same
    /// token; 0 picks a free one. Left out: no gRPC door. Builds without the `grpc`
    /// feature refuse it.
    pub grpc_port: Option<u16>,
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
            grpc_port: None,
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
/// journal and its compaction, and the agent orchestration tools (subagents, todo lists,
/// plan mode, schedules, workflows: docs/agents.md).
pub const DEFAULT_ON_DEMAND: &[&str] = &[
    "group:util",
    "group:download",
    "plugin:system.process",
    "memory_append_daily",
    "memory_compact_summary",
    "group:agents",
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

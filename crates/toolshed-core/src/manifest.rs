//! Plugin manifests: a plugin described as data.
//!
//! The types here are what a manifest file deserializes into; reading files and checking
//! the rules that serde cannot express (id syntax, semver, unique tool names) is the
//! registry's job, so that every problem is reported with the file it came from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::spec::{Plane, ToolSpec};

/// How a plugin's tools are implemented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginKind {
    /// Rust, compiled into toolshed.
    Builtin,
    /// JavaScript, run in a QuickJS sandbox.
    Js,
    /// An external MCP server whose tools are mounted.
    Mcp,
}

impl PluginKind {
    /// The manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Js => "js",
            Self::Mcp => "mcp",
        }
    }
}

/// A plugin's name and description in another language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Translation {
    /// Translated name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Translated description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Translated tags, for search in that language.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// The type of a configuration field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigFieldType {
    /// Text.
    String,
    /// A number.
    Number,
    /// true or false.
    Boolean,
    /// One of `options`.
    Select,
    /// A JSON object.
    Object,
}

/// One configuration field a plugin accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigField {
    /// The key, unique within the plugin.
    pub key: String,
    /// A label for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The value's type.
    #[serde(rename = "type")]
    pub field_type: ConfigFieldType,
    /// What the field does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The value used when none is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// The allowed values of a `select` field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<Value>,
    /// Whether the value is a secret: stored, never listed, printed or logged.
    #[serde(default)]
    pub secret: bool,
    /// Whether the plugin cannot work without it.
    #[serde(default)]
    pub required: bool,
    /// Whether the plugin may change it itself (`ctx.config.set`, with the `config-write`
    /// grant); never for a secret.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub writable: bool,
}

/// One environment variable of the plugin's env contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// The variable's name.
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the plugin is degraded without it.
    #[serde(default)]
    pub required: bool,
    /// Whether the value is a secret.
    #[serde(default)]
    pub secret: bool,
}

/// Something outside toolshed the plugin needs, such as a binary on `PATH`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// A binary looked up on `PATH`.
    pub binary: String,
    /// What it is for and how to install it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the plugin works (with less) without it.
    #[serde(default)]
    pub optional: bool,
}

/// What a plugin may touch. Built-in plugins are trusted; for sandboxed kinds the host
/// grants exactly these.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Capabilities {
    /// Paths the plugin may read, relative to the workspace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fs_read: Vec<String>,
    /// Paths the plugin may write, relative to the workspace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fs_write: Vec<String>,
    /// Hosts the plugin may reach.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// Whether the plugin may spawn processes.
    pub process: bool,
    /// Environment variables the plugin may read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Tools the plugin may call through the pipeline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Whether the plugin keeps memories (`ctx.memory`): the calling owner's, in a
    /// namespace of the plugin's own.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub memory: bool,
    /// Whether the plugin publishes events (`ctx.events.publish`), as
    /// `plugin.<id>.<type>` on every event stream.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub events: bool,
    /// Whether the plugin asks a model (`ctx.llm.complete`): the calling client's through
    /// MCP sampling, else the endpoint configured under `[llm]`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub llm: bool,
    /// Whether the plugin changes its own config (`ctx.config.set`), for the fields its
    /// manifest marks `writable` (never secrets).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub config_write: bool,
    /// Variables the plugin contributes to the commands toolshed runs (`NAME = "value"`,
    /// `${plugin_dir}` standing for its directory), once a person grants it `shell-env`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub shell_env: std::collections::BTreeMap<String, String>,
}

/// A plugin described as data, as read from `plugin.toml` and its siblings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginManifest {
    /// Namespaced id: `[a-z0-9][a-z0-9._-]*`, at most 64 characters.
    pub id: String,
    /// Semantic version.
    pub version: String,
    /// Display name.
    pub name: String,
    /// What the plugin offers.
    #[serde(default)]
    pub description: String,
    /// Name and description in other languages, keyed by language tag.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub translations: BTreeMap<String, Translation>,
    /// How the tools are implemented.
    pub kind: PluginKind,
    /// The entry point: a file for `js`, a command or URL for `mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Free-form tags for search.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The groups of its tools described: label and description by group name (Fenix's
    /// `GROUP_METADATA`), shown beside the tools and offered to a model searching them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, crate::groups::GroupText>,
    /// An icon: a file of the plugin (plugin-relative), an `https` URL, or a name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Default plane of the plugin's tools.
    #[serde(default)]
    pub plane: Plane,
    /// The tool catalog.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Configuration fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<ConfigField>,
    /// The env contract.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Binaries and other things the plugin needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<Requirement>,
    /// What the plugin may touch.
    #[serde(default)]
    pub capabilities: Capabilities,
    /// For kind `mcp`: the MCP server whose tools are mounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpServer>,
    /// Who wrote the plugin (shown, never acted on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Other plugins this one needs, by id, each with a semver requirement (`*`: any
    /// version); checked when the plugin is enabled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dependencies: BTreeMap<String, String>,
    /// The format the manifest was written in, when it is another system's (set as it is
    /// read: `agent-spaces`, `fenix`, `cyrene`, `npm`): decides, once for the plugin, the
    /// conventions its code follows — an `agent-spaces` plugin's actions run as
    /// `run(ctx, args)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// Parts of the plugin made for another host's window (Agent Spaces' `client` and
    /// `view` entries), as `part: file or URL`: shown as not served by a headless host,
    /// never run, never failing the rest of the plugin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client: Vec<String>,
    /// Its home page (shown, never fetched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Subagent presets it offers (`[[agents]]`), listed by `agent_presets_list`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentPreset>,
}

/// A named kind of subagent `agent_run {preset}` starts: an `[[agents]]` entry of the
/// configuration, or of a plugin's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentPreset {
    /// What `agent_run` names it by: lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// What it is for, shown to the model choosing one.
    pub description: String,
    /// Its instructions (the system prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The tools it may use: rules as in `[review]` (`workspace_*`, `group:web`);
    /// empty: every tool its caller may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// A profile narrowing it further (`readonly`, `[profiles.NAME]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The model asked for, where the model's side lets one choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The steps it takes unless the call says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Where it comes from: `config`, or `plugin ID` (set by the host, not read).
    #[serde(skip)]
    pub source: String,
}

/// An external MCP server mounted as a plugin (`[mcp]` in a manifest of kind `mcp`).
///
/// Values of `args` and `env` may name the plugin's config values as `${config.KEY}`
/// (secrets included), so credentials live in toolshed's secret store, not in the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServer {
    /// The command that runs the server over stdio: a program on the `PATH` or a path.
    /// Empty for a server reached at `url`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// The URL of a server reached over streamable HTTP, instead of a `command`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request to `url` (values may name `${config.KEY}`, a secret
    /// such as a bearer token).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it, on top of the clean environment every command gets.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Its working directory, relative to the workspace (default: the workspace root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The prefix of its tools' names (`<prefix>__<tool>`); default: the part of the
    /// plugin id after `mcp.` (or the whole id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Stop the server after this many seconds without a call (0: keep it running); the
    /// next call starts it again.
    pub idle_timeout_secs: u64,
    /// The sandbox mode it runs in (`read-only`, `workspace-write`, `full-access`); default:
    /// the host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The longest the server may take to start and answer the handshake, in milliseconds
    /// (0: 30 seconds).
    pub start_timeout_ms: u64,
    /// What happens when a tool's definition (name, description, schemas, annotations)
    /// differs from the one pinned when it was first mounted: `strict` (the default)
    /// withholds the tool until a person accepts the change (`toolshed mcp pin NAME
    /// --accept TOOL`), `warn` mounts it and says so, `off` does not pin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// Start the server as soon as a long-running toolshed (`toolshed mcp`, `toolshed
    /// serve`) opens, rather than at the first call that needs it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub eager: bool,
    /// The protocol era to greet it in: `auto` (the default: `server/discover`, then
    /// `initialize` if the server does not know it), `legacy` (`initialize` only) or
    /// `2026-07-28` (`server/discover` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

impl McpServer {
    /// Whether its process may write the workspace where toolshed cannot hold it: any
    /// server not started in a `read-only` sandbox — a server reached at a `url` runs
    /// outside toolshed's sandbox, perhaps on this machine. Such a server's tools are
    /// refused to a narrowed caller, unless the server marks a tool read-only.
    pub fn writes_files(&self) -> bool {
        self.url.is_some() || self.sandbox.as_deref() != Some("read-only")
    }
}

impl PluginManifest {
    /// This manifest with its tools' schemas left out ([`ToolSpec::without_schemas`]),
    /// copied without copying them: what a registry keeps of a plugin that holds its
    /// whole specs itself.
    pub fn without_tool_schemas(&self) -> Self {
        Self {
            id: self.id.clone(),
            version: self.version.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            translations: self.translations.clone(),
            kind: self.kind,
            entry: self.entry.clone(),
            tags: self.tags.clone(),
            groups: self.groups.clone(),
            icon: self.icon.clone(),
            plane: self.plane,
            tools: self.tools.iter().map(ToolSpec::without_schemas).collect(),
            config: self.config.clone(),
            env: self.env.clone(),
            requirements: self.requirements.clone(),
            capabilities: self.capabilities.clone(),
            mcp: self.mcp.clone(),
            author: self.author.clone(),
            dependencies: self.dependencies.clone(),
            dialect: self.dialect.clone(),
            client: self.client.clone(),
            homepage: self.homepage.clone(),
            agents: self.agents.clone(),
        }
    }

    /// A manifest with an id, version, name and kind, and nothing else yet: no tools,
    /// config, env contract, requirements or capabilities.
    pub fn new(
        id: impl Into<String>,
        version: impl Into<String>,
        name: impl Into<String>,
        kind: PluginKind,
    ) -> Self {
        Self {
            id: id.into(),
            version: version.into(),
            name: name.into(),
            description: String::new(),
            translations: BTreeMap::new(),
            kind,
            entry: None,
            tags: Vec::new(),
            groups: BTreeMap::new(),
            icon: None,
            plane: Plane::Execution,
            tools: Vec::new(),
            config: Vec::new(),
            env: Vec::new(),
            requirements: Vec::new(),
            capabilities: Capabilities::default(),
            mcp: None,
            author: None,
            dependencies: BTreeMap::new(),
            dialect: None,
            client: Vec::new(),
            homepage: None,
            agents: Vec::new(),
        }
    }
}

impl PluginManifest {
    /// The translation for `locale` (`zh`, `zh-CN`, `zh_CN.UTF-8`): the exact tag, else its
    /// language; `None` when the manifest has neither.
    pub fn translation(&self, locale: &str) -> Option<&Translation> {
        let wanted = locale
            .split('.')
            .next()
            .unwrap_or_default()
            .replace('_', "-")
            .to_ascii_lowercase();
        let language = wanted.split('-').next().unwrap_or_default().to_string();
        let find = |tag: &str| {
            self.translations
                .iter()
                .find(|(k, _)| k.replace('_', "-").eq_ignore_ascii_case(tag))
                .map(|(_, t)| t)
        };
        find(&wanted).or_else(|| find(&language))
    }

    /// What a store or a list shows beside the name: the tags (in `locale` where the
    /// manifest translates them), the author, the dependencies and the dialect.
    ///
    /// With the plugin's directory, a JavaScript plugin's `runtime` too (`quickjs`, or
    /// `node (why)`).
    pub fn listing_fields(
        &self,
        locale: Option<&str>,
        dir: Option<&std::path::Path>,
    ) -> serde_json::Map<String, Value> {
        let tags = locale
            .and_then(|l| self.translation(l))
            .map(|t| &t.tags)
            .filter(|t| !t.is_empty())
            .unwrap_or(&self.tags);
        let mut out = serde_json::Map::new();
        out.insert("tags".into(), serde_json::json!(tags));
        out.insert("author".into(), serde_json::json!(self.author));
        out.insert("dependencies".into(), serde_json::json!(self.dependencies));
        out.insert("dialect".into(), serde_json::json!(self.dialect));
        out.insert("homepage".into(), serde_json::json!(self.homepage));
        out.insert("icon".into(), serde_json::json!(self.icon));
        out.insert(
            "not_served".into(),
            serde_json::json!(
                self.client
                    .iter()
                    .map(|part| format!("{part}: not served by a headless host"))
                    .collect::<Vec<_>>()
            ),
        );
        if self.kind == PluginKind::Js
            && let Some(dir) = dir
        {
            out.insert("runtime".into(), crate::runtime::describe(dir).into());
        }
        out
    }

    /// Whether `tag` is one of its tags, in any language (case folded).
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags
            .iter()
            .chain(self.translations.values().flat_map(|t| t.tags.iter()))
            .any(|t| {
                t.eq_ignore_ascii_case(tag.trim()) || t.to_lowercase() == tag.trim().to_lowercase()
            })
    }

    /// For kind `mcp`: its server, from the `[mcp]` table, else from `entry` read as a
    /// command line (`entry = "npx -y @modelcontextprotocol/server-memory"`, split at
    /// whitespace).
    pub fn mcp_server(&self) -> Option<McpServer> {
        if let Some(server) = &self.mcp {
            return Some(server.clone());
        }
        let mut words = self.entry.as_deref()?.split_whitespace().map(String::from);
        let command = words.next()?;
        Some(McpServer {
            command,
            args: words.collect(),
            ..McpServer::default()
        })
    }
}

/// Whether `id` follows the plugin id rules: `[a-z0-9][a-z0-9._-]*`, 1 to 64 characters.
pub fn is_valid_plugin_id(id: &str) -> bool {
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    id.len() <= 64
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_copy_keeps_everything_but_the_schemas() {
        let mut manifest = PluginManifest::new("acme.x", "1.0.0", "X", PluginKind::Js);
        manifest.description = "Does x.".into();
        let mut spec = ToolSpec::new("x_do", "Does it.").input_schema(serde_json::json!({
            "type": "object", "properties": {"q": {"type": "string"}}
        }));
        spec.output_schema = Some(serde_json::json!({"type": "object"}));
        spec.group = "x".into();
        spec.mutates_state = true;
        manifest.tools = vec![spec.clone()];
        let listed = manifest.without_tool_schemas();
        let tool = &listed.tools[0];
        assert!(
            tool.input_schema
                .get("properties")
                .unwrap()
                .as_object()
                .unwrap()
                .is_empty()
        );
        assert!(tool.output_schema.is_none());
        let mut again = tool.clone();
        again.input_schema = spec.input_schema.clone();
        again.output_schema = spec.output_schema.clone();
        assert_eq!(again, spec, "everything else is kept");
        let mut whole = listed.clone();
        whole.tools = manifest.tools.clone();
        assert_eq!(whole, manifest);
    }

    #[test]
    fn plugin_id_rules() {
        for ok in ["a", "system.workspace", "0x", "a-b_c.d", &"a".repeat(64)] {
            assert!(is_valid_plugin_id(ok), "{ok}");
        }
        for bad in ["", "A", ".a", "-a", "a b", "a/b", "é", &"a".repeat(65)] {
            assert!(!is_valid_plugin_id(bad), "{bad}");
        }
    }
}

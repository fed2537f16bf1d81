//! What a plugin may reach: the intersection of what its manifest declares
//! (`capabilities`) and what a person granted ([`Grants`]).
//!
//! The checks here are lexical and run on the plugin's thread before any host service is
//! asked; the services enforce again on their side (the HTTP client with a
//! [`NetPolicy::PublicWithin`](toolshed_core::NetPolicy) list — the granted hosts, and only
//! where the web rules go: a grant never opens a private address `[web] allow` does not —
//! the operations backend with the workspace jail), so a bug here cannot widen access past
//! the workspace, the granted hosts or the web rules.

use toolshed_core::{Capabilities, Grants};
use toolshed_ops::net::HostPattern;
pub(crate) use toolshed_ops::path::{is_within, normalize_lexically as normalize_path};

/// The wildcard a manifest uses for "whatever the user grants".
const ANY: &str = "*";

/// One host a plugin may reach: the one host pattern every network rule uses.
type HostRule = HostPattern;

/// The parts of an `http`/`https` URL the grant check needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlTarget {
    /// The host as written in the URL, lowercase (IPv6 in brackets).
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

/// Where an absolute `http` or `https` URL goes, parsed as the HTTP client parses it.
pub(crate) fn parse_url(url: &str) -> Result<UrlTarget, String> {
    let to = toolshed_ops::net::destination(url).map_err(|e| {
        format!(
            "`{}` is not a usable URL: {e}",
            toolshed_ops::net::redact_url(url)
        )
    })?;
    Ok(UrlTarget {
        host: to.host.to_string(),
        port: to.port,
    })
}

/// What one plugin may reach, already intersected. Built once per load.
#[derive(Debug, Clone)]
pub(crate) struct Reach {
    plugin_id: String,
    declared: Capabilities,
    hosts: Vec<HostRule>,
    read_roots: Vec<String>,
    write_roots: Vec<String>,
    tools: Vec<String>,
    /// Every tool may be called (the pipeline still reviews each call): `run_code`'s.
    all_tools: bool,
    /// Memories may be kept (`ctx.memory`): declared and granted.
    memory: bool,
    /// Events may be published (`ctx.events.publish`): declared and granted.
    events: bool,
    /// A model may be asked (`ctx.llm.complete`): declared and granted.
    llm: bool,
    /// Writable config fields may be changed (`ctx.config.set`): declared and granted.
    config_write: bool,
}

impl Reach {
    /// No host, no path, and every tool: what `run_code`'s snippets reach. Each call still
    /// goes through the pipeline, which decides what the caller may use.
    pub(crate) fn all_tools(plugin_id: &str) -> Self {
        Self {
            plugin_id: plugin_id.to_string(),
            declared: Capabilities::default(),
            hosts: Vec::new(),
            read_roots: Vec::new(),
            write_roots: Vec::new(),
            tools: Vec::new(),
            all_tools: true,
            memory: false,
            events: false,
            llm: false,
            config_write: false,
        }
    }

    /// The intersection of `declared` and `grants` for plugin `plugin_id`.
    pub(crate) fn new(plugin_id: &str, declared: &Capabilities, grants: &Grants) -> Self {
        let hosts = effective_hosts(&declared.network, &grants.http);
        let declared_read: Vec<String> = declared
            .fs_read
            .iter()
            .chain(&declared.fs_write)
            .cloned()
            .collect();
        let granted_read: Vec<String> = grants
            .fs_read
            .iter()
            .chain(&grants.fs_write)
            .cloned()
            .collect();
        let read_roots = effective_roots(&declared_read, &granted_read);
        let write_roots = effective_roots(&declared.fs_write, &grants.fs_write);
        let tools = if declared.tools.iter().any(|t| t == ANY) {
            dedup(grants.tools.clone())
        } else {
            dedup(
                grants
                    .tools
                    .iter()
                    .filter(|t| declared.tools.contains(t))
                    .cloned()
                    .collect(),
            )
        };
        Self {
            plugin_id: plugin_id.to_string(),
            declared: declared.clone(),
            hosts,
            read_roots,
            write_roots,
            tools,
            all_tools: false,
            memory: declared.memory && grants.memory,
            events: declared.events && grants.events,
            llm: declared.llm && grants.llm,
            config_write: declared.config_write && grants.config_write,
        }
    }

    /// Whether any host is reachable (`ctx.http` exists).
    pub(crate) fn has_http(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// Whether any path is readable or writable (`ctx.fs` exists).
    pub(crate) fn has_fs(&self) -> bool {
        !self.read_roots.is_empty() || !self.write_roots.is_empty()
    }

    /// Whether some path may be written.
    pub(crate) fn has_fs_write(&self) -> bool {
        !self.write_roots.is_empty()
    }

    /// Whether any tool may be called (`ctx.tools` exists).
    pub(crate) fn has_tools(&self) -> bool {
        self.all_tools || !self.tools.is_empty()
    }

    /// The reachable hosts as the HTTP client's policy spells them.
    pub(crate) fn host_list(&self) -> Vec<String> {
        self.hosts.iter().map(ToString::to_string).collect()
    }

    /// Checks that `url` goes to a reachable host.
    pub(crate) fn check_url(&self, url: &str) -> Result<UrlTarget, String> {
        let target = parse_url(url)?;
        if self
            .hosts
            .iter()
            .any(|rule| rule.matches_str(&target.host, target.port))
        {
            return Ok(target);
        }
        let id = &self.plugin_id;
        let host = &target.host;
        let mut msg = format!(
            "host `{host}` is not granted to plugin `{id}`; to allow it, run `toolshed plugins grant {id} http:{host}`"
        );
        let declared = self.declared.network.iter().any(|d| {
            d == ANY
                || HostRule::parse(d).is_ok_and(|rule| rule.matches_str(&target.host, target.port))
        });
        if !declared {
            msg.push_str(&format!(
                " (the plugin's manifest must also declare it in capabilities.network, which lists: {})",
                list_or_nothing(&self.declared.network)
            ));
        }
        Err(msg)
    }

    /// Checks that `path` may be read and returns it normalized.
    pub(crate) fn check_read(&self, path: &str) -> Result<String, String> {
        let normalized = normalize_path(path).map_err(|e| e.to_string())?;
        if self.read_allows(&normalized) {
            return Ok(normalized);
        }
        Err(self.fs_refusal(&normalized, "read", "fs-read", &self.read_roots))
    }

    /// Checks that `path` may be written and returns it normalized.
    pub(crate) fn check_write(&self, path: &str) -> Result<String, String> {
        let normalized = normalize_path(path).map_err(|e| e.to_string())?;
        if self.write_allows(&normalized) {
            return Ok(normalized);
        }
        Err(self.fs_refusal(&normalized, "write", "fs-write", &self.write_roots))
    }

    /// Whether the normalized path lies in a readable root.
    pub(crate) fn read_allows(&self, normalized: &str) -> bool {
        self.read_roots.iter().any(|r| is_within(r, normalized))
    }

    /// Whether the normalized path lies in a writable root.
    pub(crate) fn write_allows(&self, normalized: &str) -> bool {
        self.write_roots.iter().any(|r| is_within(r, normalized))
    }

    fn fs_refusal(&self, path: &str, verb: &str, grant: &str, roots: &[String]) -> String {
        let id = &self.plugin_id;
        format!(
            "plugin `{id}` may not {verb} `{path}` (granted: {}); to allow it, run `toolshed plugins grant {id} {grant}:{path}`",
            list_or_nothing(roots)
        )
    }

    /// Checks that the tool `name` may be called.
    pub(crate) fn check_tool(&self, name: &str) -> Result<(), String> {
        if self.all_tools || self.tools.iter().any(|t| t == name) {
            return Ok(());
        }
        let id = &self.plugin_id;
        let mut msg = format!(
            "tool `{name}` is not granted to plugin `{id}`; to allow it, run `toolshed plugins grant {id} tool:{name}`"
        );
        if !self.declared.tools.iter().any(|t| t == ANY || t == name) {
            msg.push_str(&format!(
                " (the plugin's manifest must also declare it in capabilities.tools, which lists: {})",
                list_or_nothing(&self.declared.tools)
            ));
        }
        Err(msg)
    }

    /// Checks that memories may be kept (`ctx.memory`).
    pub(crate) fn check_memory(&self) -> Result<(), String> {
        self.check_flag(self.memory, self.declared.memory, "memory", "memory")
    }

    /// Checks that events may be published (`ctx.events.publish`).
    pub(crate) fn check_events(&self) -> Result<(), String> {
        self.check_flag(self.events, self.declared.events, "events", "events")
    }

    /// Checks that a model may be asked (`ctx.llm.complete`).
    pub(crate) fn check_llm(&self) -> Result<(), String> {
        self.check_flag(self.llm, self.declared.llm, "llm", "llm")
    }

    /// Checks that writable config fields may be changed (`ctx.config.set`).
    pub(crate) fn check_config_write(&self) -> Result<(), String> {
        self.check_flag(
            self.config_write,
            self.declared.config_write,
            "config-write",
            "config_write",
        )
    }

    fn check_flag(
        &self,
        granted: bool,
        declared: bool,
        grant: &str,
        key: &str,
    ) -> Result<(), String> {
        if granted {
            return Ok(());
        }
        let id = &self.plugin_id;
        let mut msg = format!(
            "plugin `{id}` is not granted {grant}; to allow it, run `toolshed plugins grant {id} {grant}`"
        );
        if !declared {
            msg.push_str(&format!(
                " (the plugin's manifest must also ask for it: `{key} = true` under [capabilities])"
            ));
        }
        Err(msg)
    }
}

fn list_or_nothing(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".into()
    } else {
        items.join(", ")
    }
}

fn dedup(mut items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items.retain(|i| seen.insert(i.clone()));
    items
}

fn effective_hosts(declared: &[String], granted: &[String]) -> Vec<HostRule> {
    let mut out: Vec<HostRule> = Vec::new();
    if declared.is_empty() {
        return out;
    }
    let wildcard = declared.iter().any(|d| d == ANY);
    let declared_rules: Vec<HostRule> = declared
        .iter()
        .filter_map(|d| HostRule::parse(d).ok())
        .collect();
    for g in granted {
        let Ok(grant) = HostRule::parse(g) else {
            tracing::warn!(grant = %g, "ignoring a malformed http grant");
            continue;
        };
        let allowed: Vec<HostRule> = if wildcard {
            vec![grant]
        } else {
            declared_rules
                .iter()
                .filter_map(|d| grant.intersect(d))
                .collect()
        };
        for rule in allowed {
            if !out.contains(&rule) {
                out.push(rule);
            }
        }
    }
    out
}

fn effective_roots(declared: &[String], granted: &[String]) -> Vec<String> {
    let wildcard = declared.iter().any(|d| d == ANY);
    let declared: Vec<String> = declared
        .iter()
        .filter(|d| *d != ANY)
        .filter_map(|d| normalize_path(d).ok())
        .collect();
    let mut out = Vec::new();
    for g in granted {
        let Ok(grant) = normalize_path(g) else {
            tracing::warn!(grant = %g, "ignoring a malformed file system grant");
            continue;
        };
        if wildcard {
            out.push(grant);
            continue;
        }
        for d in &declared {
            if is_within(d, &grant) {
                out.push(grant.clone());
            } else if is_within(&grant, d) {
                out.push(d.clone());
            }
        }
    }
    dedup(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(network: &[&str], read: &[&str], write: &[&str], tools: &[&str]) -> Capabilities {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Capabilities {
            network: v(network),
            fs_read: v(read),
            fs_write: v(write),
            tools: v(tools),
            ..Capabilities::default()
        }
    }

    fn grants(http: &[&str], read: &[&str], write: &[&str], tools: &[&str]) -> Grants {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        Grants {
            http: v(http),
            fs_read: v(read),
            fs_write: v(write),
            tools: v(tools),
            ..Grants::default()
        }
    }

    #[test]
    fn memory_must_be_declared_and_granted() {
        let asked = Capabilities {
            memory: true,
            ..Capabilities::default()
        };
        let granted = Grants {
            memory: true,
            ..Grants::default()
        };
        assert!(
            Reach::new("acme.n", &asked, &granted)
                .check_memory()
                .is_ok()
        );
        let err = Reach::new("acme.n", &asked, &Grants::default())
            .check_memory()
            .unwrap_err();
        assert!(
            err.contains("toolshed plugins grant acme.n memory"),
            "{err}"
        );
        assert!(!err.contains("manifest"), "{err}");
        let err = Reach::new("acme.n", &Capabilities::default(), &granted)
            .check_memory()
            .unwrap_err();
        assert!(
            err.contains("`memory = true` under [capabilities]"),
            "{err}"
        );
    }

    #[test]
    fn a_host_must_be_declared_and_granted() {
        let reach = Reach::new(
            "acme.x",
            &caps(&["api.example.test", "other.test:8443"], &[], &[], &[]),
            &grants(
                &["API.example.test", "other.test", "evil.test"],
                &[],
                &[],
                &[],
            ),
        );
        assert_eq!(reach.host_list(), ["api.example.test", "other.test:8443"]);
        assert!(reach.check_url("https://api.example.test/v1?q=1").is_ok());
        assert!(reach.check_url("http://api.example.test:9000/").is_ok());
        assert!(reach.check_url("https://other.test:8443/").is_ok());
        let err = reach.check_url("https://other.test/").unwrap_err();
        assert!(err.contains("http:other.test"), "{err}");
        let err = reach.check_url("http://evil.test/").unwrap_err();
        assert!(
            err.contains("`evil.test`")
                && err.contains("toolshed plugins grant acme.x http:evil.test")
                && err.contains("capabilities.network"),
            "{err}"
        );
        assert!(reach.check_url("ftp://api.example.test/").is_err());
        assert!(reach.check_url("http://u:p@api.example.test/").is_err());
    }

    #[test]
    fn nothing_declared_means_nothing_reachable_and_star_means_what_is_granted() {
        let none = Reach::new(
            "p",
            &caps(&[], &[], &[], &[]),
            &grants(&["a.test"], &[], &[], &[]),
        );
        assert!(!none.has_http());
        let star = Reach::new(
            "p",
            &caps(&["*"], &[], &[], &["*"]),
            &grants(&["a.test:81", "127.0.0.1"], &[], &[], &["util_echo"]),
        );
        assert_eq!(star.host_list(), ["a.test:81", "127.0.0.1"]);
        assert!(star.check_url("http://127.0.0.1:5555/x").is_ok());
        assert!(star.check_tool("util_echo").is_ok());
        let err = star.check_tool("exec_command").unwrap_err();
        assert!(err.contains("tool:exec_command"), "{err}");
        assert!(!err.contains("manifest must also"), "{err}");
    }

    #[test]
    fn paths_must_lie_in_a_root_both_sides_allow() {
        let reach = Reach::new(
            "p",
            &caps(&[], &["data"], &["out"], &[]),
            &grants(&[], &["data/sub", "elsewhere"], &["out"], &[]),
        );
        assert!(reach.check_read("data/sub/a.txt").is_ok());
        assert!(reach.check_read("./data/sub/../sub/b").is_ok());
        assert!(reach.check_read("data/other").is_err());
        assert!(reach.check_read("out/x").is_ok(), "writing implies reading");
        assert!(reach.check_write("out/x").is_ok());
        let err = reach.check_write("data/sub/a.txt").unwrap_err();
        assert!(err.contains("fs-write:data/sub/a.txt"), "{err}");
        let err = reach.check_read("data/sub/../../secret").unwrap_err();
        assert!(err.contains("fs-read:secret"), "{err}");
        let err = reach.check_read("../outside").unwrap_err();
        assert!(err.contains("climbs out"), "{err}");
        assert!(reach.check_read("/etc/passwd").is_err());
    }

    #[test]
    fn normalizes_and_compares_paths_on_their_words() {
        assert_eq!(normalize_path("./a//b/./c/").unwrap(), "a/b/c");
        assert_eq!(normalize_path("a/..").unwrap(), ".");
        assert!(is_within(".", "anything"));
        assert!(is_within("a/b", "a/b/c"));
        assert!(!is_within("a/b", "a/bc"));
        assert!(is_within("a/b", "a/b"));
    }

    #[test]
    fn parses_hosts_and_urls() {
        assert_eq!(
            parse_url("http://[::1]:8080/x").unwrap(),
            UrlTarget {
                host: "[::1]".into(),
                port: 8080
            }
        );
        assert_eq!(parse_url("HTTPS://Example.TEST").unwrap().port, 443);
        assert!(HostRule::parse("a b").is_err());
        assert!(HostRule::parse("host:notaport").is_err());
    }
}

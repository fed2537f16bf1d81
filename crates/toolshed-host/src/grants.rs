//! Capability grants: what a person allowed a sandboxed plugin to touch.
//!
//! A plugin's manifest declares what it asks for (`capabilities`: `network` hosts,
//! `fs_read` and `fs_write` roots, `tools` it calls); a person grants some of it with
//! `toolshed plugins grant ID GRANT...`. Only what is both declared and granted reaches the
//! plugin. A grant is written `http:HOST[:PORT]`, `fs-read:PATH`, `fs-write:PATH`,
//! `tool:NAME`, `memory` (the calling owner's memories, in the plugin's own namespace),
//! `events` (publishing `plugin.<id>.*` events), `llm` (asking a model), `config-write`
//! (changing its own writable config fields) or `shell-env` (its `shell_env` variables
//! added to the commands toolshed runs). A manifest entry `*` in `network` (or in `fs_read`, `fs_write`, `tools`)
//! declares "whatever the person grants": for plugins whose hosts come from their config,
//! such as a webhook notifier.

use toolshed_core::{Grants, PluginManifest};
use toolshed_ops::net::HostPattern;

use crate::manifest::is_valid_tool_name;

/// The grant of `ctx.memory`.
const MEMORY: &str = "memory";

/// Grants that are one word, each of one capability flag: (grant, manifest key).
const FLAGS: [(Flag, &str, &str); 5] = [
    (Flag::Memory, MEMORY, "memory"),
    (Flag::Events, "events", "events"),
    (Flag::Llm, "llm", "llm"),
    (Flag::ConfigWrite, "config-write", "config_write"),
    (Flag::ShellEnv, "shell-env", "shell_env"),
];

/// A capability that is on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flag {
    /// `ctx.memory`.
    Memory,
    /// `ctx.events.publish`.
    Events,
    /// `ctx.llm.complete`.
    Llm,
    /// `ctx.config.set`.
    ConfigWrite,
    /// The manifest's `shell_env`, added to commands.
    ShellEnv,
}

impl Flag {
    fn text(self) -> &'static str {
        FLAGS.iter().find(|f| f.0 == self).map_or("", |f| f.1)
    }
    fn manifest_key(self) -> &'static str {
        FLAGS.iter().find(|f| f.0 == self).map_or("", |f| f.2)
    }
    fn declared(self, caps: &toolshed_core::Capabilities) -> bool {
        match self {
            Self::Memory => caps.memory,
            Self::Events => caps.events,
            Self::Llm => caps.llm,
            Self::ConfigWrite => caps.config_write,
            Self::ShellEnv => !caps.shell_env.is_empty(),
        }
    }
    fn grant(self, grants: &mut Grants) {
        match self {
            Self::Memory => grants.memory = true,
            Self::Events => grants.events = true,
            Self::Llm => grants.llm = true,
            Self::ConfigWrite => grants.config_write = true,
            Self::ShellEnv => grants.shell_env = true,
        }
    }
}

/// The most grants one plugin keeps.
pub const MAX_GRANTS: usize = 64;

/// One grant, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grant {
    /// HTTP to a host, any port or one port.
    Http(String),
    /// Reading under a workspace path.
    FsRead(String),
    /// Writing (and reading) under a workspace path.
    FsWrite(String),
    /// Calling a tool.
    Tool(String),
    /// A variable of the plugin's env contract it may read.
    Env(String),
    /// A capability that is on or off: `memory`, `events`, `llm`, `config-write`.
    Flag(Flag),
}

impl Grant {
    /// Parses `http:HOST[:PORT]`, `fs-read:PATH`, `fs-write:PATH`, `tool:NAME` or `memory`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let usage = "write a grant as http:HOST[:PORT], fs-read:PATH, fs-write:PATH, tool:NAME, env:NAME, memory, events, llm, config-write or shell-env";
        if let Some(flag) = FLAGS.iter().find(|f| f.1 == text) {
            return Ok(Self::Flag(flag.0));
        }
        let Some((kind, value)) = text.split_once(':') else {
            return Err(format!("`{text}` is not a grant; {usage}"));
        };
        match kind {
            "http" => parse_host(value).map(Self::Http),
            "fs-read" => parse_path(value).map(Self::FsRead),
            "fs-write" => parse_path(value).map(Self::FsWrite),
            "tool" if is_valid_tool_name(value) => Ok(Self::Tool(value.to_string())),
            "tool" => Err(format!(
                "`{value}` is not a tool name: use 1 to 64 of A-Z, a-z, 0-9, `_`, `-`"
            )),
            "env"
                if !value.is_empty()
                    && value.len() <= 128
                    && value
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') =>
            {
                Ok(Self::Env(value.to_string()))
            }
            "env" => Err(format!(
                "`{value}` is not a variable name: use A-Z, 0-9 and `_`"
            )),
            other => Err(format!("`{other}` is not a kind of grant; {usage}")),
        }
    }

    /// The stored spelling.
    pub(crate) fn to_text(&self) -> String {
        match self {
            Self::Http(v) => format!("http:{v}"),
            Self::FsRead(v) => format!("fs-read:{v}"),
            Self::FsWrite(v) => format!("fs-write:{v}"),
            Self::Tool(v) => format!("tool:{v}"),
            Self::Env(v) => format!("env:{v}"),
            Self::Flag(flag) => flag.text().into(),
        }
    }

    /// Checks that the plugin's manifest asks for this; the error says what it declares.
    pub(crate) fn check_declared(&self, manifest: &PluginManifest) -> Result<(), String> {
        let caps = &manifest.capabilities;
        if let Self::Env(name) = self {
            let named = manifest.env.iter().any(|v| &v.name == name)
                || caps.env.iter().any(|v| v == name || v == "*");
            return if named {
                Ok(())
            } else {
                Err(format!(
                    "plugin `{}` does not name `{name}` in its env contract, so it cannot be granted `env:{name}`",
                    manifest.id
                ))
            };
        }
        let (declared, what, value): (&[String], &str, &str) = match self {
            Self::Http(host) => (&caps.network, "network access (`network`)", host),
            Self::FsRead(path) => (&caps.fs_read, "file reads (`fs_read`)", path),
            Self::FsWrite(path) => (&caps.fs_write, "file writes (`fs_write`)", path),
            Self::Tool(name) => (&caps.tools, "tool calls (`tools`)", name),
            Self::Env(_) => return Ok(()),
            Self::Flag(flag) if flag.declared(caps) => return Ok(()),
            Self::Flag(flag) => {
                let how = if *flag == Flag::ShellEnv {
                    "a `[capabilities.shell_env]` table of variables".to_string()
                } else {
                    format!("`{} = true` under [capabilities]", flag.manifest_key())
                };
                return Err(format!(
                    "plugin `{}` does not ask for {} in its manifest ({how}), so it cannot be granted `{}`",
                    manifest.id,
                    flag.text(),
                    flag.text()
                ));
            }
        };
        if declared.is_empty() {
            return Err(format!(
                "plugin `{}` does not ask for {what} in its manifest, so it cannot be granted `{}`",
                manifest.id,
                self.to_text()
            ));
        }
        let fits = declared.iter().any(|d| match self {
            Self::Http(_) => d == "*" || host_matches(d, value) || host_matches(value, d),
            Self::FsRead(_) | Self::FsWrite(_) => d == "*" || path_within(value, d),
            Self::Tool(_) => d == "*" || d == value,
            Self::Env(_) | Self::Flag(_) => false,
        });
        if fits {
            Ok(())
        } else {
            Err(format!(
                "plugin `{}` asks for {what} to {} only, not `{value}`; a plugin can be granted only what its manifest asks for",
                manifest.id,
                declared.join(", ")
            ))
        }
    }
}

/// Whether a host grant (`host` or `host:port`) covers `target` (`host:port` or `host`):
/// the one host pattern every network rule uses ([`HostPattern`]).
pub(crate) fn host_matches(grant: &str, target: &str) -> bool {
    match (HostPattern::parse(grant), HostPattern::parse(target)) {
        (Ok(grant), Ok(target)) => grant.covers(&target),
        _ => false,
    }
}

fn parse_host(value: &str) -> Result<String, String> {
    if value == "*" {
        return Err(format!(
            "`{value}` is not a host to grant (a grant names one host; `*` belongs in a manifest only)"
        ));
    }
    HostPattern::parse(value)
        .map(|pattern| pattern.to_string())
        .map_err(|why| format!("`{value}` is not a host to grant: {why}"))
}

fn parse_path(value: &str) -> Result<String, String> {
    let trimmed = value.trim_end_matches('/');
    let trimmed = if trimmed.is_empty() && !value.is_empty() {
        "."
    } else {
        trimmed
    };
    if trimmed.is_empty() {
        return Err("an empty path cannot be granted; use `.` for the whole workspace".into());
    }
    if trimmed.starts_with('/') {
        return Err(format!(
            "`{value}` is absolute; grants are paths relative to the workspace, such as `notes` or `.`"
        ));
    }
    if trimmed.split('/').any(|part| part == "..") {
        return Err(format!(
            "`{value}` leaves the workspace with `..`; grant a path inside it"
        ));
    }
    Ok(trimmed.to_string())
}

/// Whether workspace path `path` is `root` or inside it (both relative, lexical), with
/// the one containment check ([`toolshed_ops::path::is_within`]). A path that climbs out of
/// the workspace is within nothing.
pub(crate) fn path_within(path: &str, root: &str) -> bool {
    use toolshed_ops::path::{is_within, normalize_lexically};
    match (normalize_lexically(path), normalize_lexically(root)) {
        (Ok(path), Ok(root)) => is_within(&root, &path),
        _ => false,
    }
}

/// The grants a manifest asks for by name (wildcards left out): what `grant ID` with no
/// values grants.
pub(crate) fn declared(manifest: &PluginManifest) -> Vec<String> {
    let caps = &manifest.capabilities;
    let named = |list: &[String], kind: &str| -> Vec<String> {
        list.iter()
            .filter(|v| v.as_str() != "*")
            .map(|v| format!("{kind}:{v}"))
            .collect()
    };
    let mut out = named(&caps.network, "http");
    out.extend(named(&caps.fs_read, "fs-read"));
    out.extend(named(&caps.fs_write, "fs-write"));
    out.extend(named(&caps.tools, "tool"));
    let mut env: Vec<String> = manifest.env.iter().map(|v| v.name.clone()).collect();
    env.extend(caps.env.iter().filter(|v| v.as_str() != "*").cloned());
    env.dedup();
    out.extend(named(&env, "env"));
    for (flag, text, _) in FLAGS {
        if flag.declared(caps) {
            out.push(text.into());
        }
    }
    out
}

/// Stored grant strings as [`Grants`]; unparsable rows (an older toolshed's) are skipped.
pub(crate) fn to_grants(stored: &[String]) -> Grants {
    let mut grants = Grants::default();
    for text in stored {
        match Grant::parse(text) {
            Ok(Grant::Http(v)) => grants.http.push(v),
            Ok(Grant::FsRead(v)) => grants.fs_read.push(v),
            Ok(Grant::FsWrite(v)) => grants.fs_write.push(v),
            Ok(Grant::Tool(v)) => grants.tools.push(v),
            Ok(Grant::Env(v)) => grants.env.push(v),
            Ok(Grant::Flag(flag)) => flag.grant(&mut grants),
            Err(e) => tracing::warn!(grant = %text, error = %e, "ignoring a stored grant"),
        }
    }
    grants
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolshed_core::PluginKind;

    fn manifest() -> PluginManifest {
        let mut m = PluginManifest::new("acme.hooks", "1.0.0", "Hooks", PluginKind::Js);
        m.capabilities.network = vec!["api.example.com".into()];
        m.capabilities.fs_read = vec!["notes".into()];
        m
    }

    #[test]
    fn parses_and_prints_each_kind() {
        for text in [
            "http:api.example.com",
            "http:127.0.0.1:8080",
            "http:[::1]:80",
            "fs-read:notes",
            "fs-write:.",
            "tool:workspace_read",
        ] {
            assert_eq!(Grant::parse(text).unwrap().to_text(), text);
        }
        assert_eq!(
            Grant::parse("http:API.Example.com").unwrap(),
            Grant::Http("api.example.com".into())
        );
        assert_eq!(
            Grant::parse("fs-read:notes/").unwrap(),
            Grant::FsRead("notes".into())
        );
        for bad in [
            "api.example.com",
            "http:https://x",
            "http:a/b",
            "http:*",
            "http:a:99999",
            "fs-read:/etc",
            "fs-read:../x",
            "fs-write:a/../../b",
            "tool:a b",
            "net:x",
            "http:::1",
            "http:[::1]x",
            "http:[evil.com]",
            "http:[::1]:",
        ] {
            let e = Grant::parse(bad).unwrap_err();
            assert!(e.contains('`'), "{bad}: {e}");
        }
    }

    #[test]
    fn only_declared_capabilities_can_be_granted() {
        let m = manifest();
        Grant::parse("http:api.example.com")
            .unwrap()
            .check_declared(&m)
            .unwrap();
        Grant::parse("http:api.example.com:443")
            .unwrap()
            .check_declared(&m)
            .unwrap();
        Grant::parse("fs-read:notes/2026")
            .unwrap()
            .check_declared(&m)
            .unwrap();
        let e = Grant::parse("http:evil.test")
            .unwrap()
            .check_declared(&m)
            .unwrap_err();
        assert!(
            e.contains("api.example.com") && e.contains("evil.test"),
            "{e}"
        );
        let e = Grant::parse("tool:calculator")
            .unwrap()
            .check_declared(&m)
            .unwrap_err();
        assert!(e.contains("does not ask for tool calls"), "{e}");
        let e = Grant::parse("fs-read:secrets")
            .unwrap()
            .check_declared(&m)
            .unwrap_err();
        assert!(e.contains("notes"), "{e}");

        let mut any = m.clone();
        any.capabilities.network = vec!["*".into()];
        Grant::parse("http:127.0.0.1:9000")
            .unwrap()
            .check_declared(&any)
            .unwrap();
        assert_eq!(declared(&any), vec!["fs-read:notes".to_string()]);
        assert_eq!(
            declared(&m),
            vec!["http:api.example.com".to_string(), "fs-read:notes".into()]
        );
    }

    #[test]
    fn host_and_path_matching() {
        assert!(host_matches("example.com", "example.com:443"));
        assert!(host_matches("Example.com", "example.com"));
        assert!(host_matches("127.0.0.1:80", "127.0.0.1:80"));
        assert!(!host_matches("127.0.0.1:80", "127.0.0.1:81"));
        assert!(!host_matches("example.com", "example.com.evil"));
        assert!(host_matches("[::1]", "[::1]:8080"));
        assert!(path_within("notes/a.md", "notes"));
        assert!(path_within("notes", "./notes/"));
        assert!(path_within("anything", "."));
        assert!(!path_within("notes2/a", "notes"));
        assert!(!path_within("no", "notes"));
    }

    #[test]
    fn memory_is_granted_only_to_a_plugin_that_asks_for_it() {
        let grant = Grant::parse("memory").unwrap();
        assert_eq!(grant, Grant::Flag(Flag::Memory));
        assert_eq!(grant.to_text(), "memory");
        let mut m = manifest();
        let err = grant.check_declared(&m).unwrap_err();
        assert!(err.contains("`memory = true`"), "{err}");
        assert!(!declared(&m).contains(&"memory".to_string()));
        m.capabilities.memory = true;
        assert!(grant.check_declared(&m).is_ok());
        assert!(declared(&m).contains(&"memory".to_string()));
        assert!(to_grants(&["memory".into()]).memory);
        assert!(Grant::parse("memory:x").is_err());
    }
}

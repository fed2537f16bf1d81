//! Review: is this tool visible to this caller?
//!
//! Rules are allow and deny lists, compiled once. The host-wide rules (`[review]`) apply to
//! every call; a caller may also name a profile (`[profiles.NAME]`), whose rules apply on
//! top, and a door may narrow further (`toolshed mcp --tools`). Deny wins over allow; an
//! empty allow list allows all.
//!
//! A rule matches what a tool *is*, not only what it is called, so that naming cannot
//! dodge it: `deny = ["exec_*"]` would leave `shell` and `process_start` callable, while
//! `deny = ["group:exec"]` covers every tool that starts a process. The forms:
//!
//! | rule | matches |
//! |---|---|
//! | `workspace_*`, `name:calc*` | the tool's name (a glob) |
//! | `group:exec` | the tool's operator group (a glob) |
//! | `plugin:system.web` | the id of the plugin that provides the tool (a glob) |
//! | `danger:high`, `danger:medium+` | the tool's danger level, exactly or at least |
//! | `destructive`, `open_world`, `read_only`, `idempotent` | a tool whose annotation is true |
//! | `mutates_state` | a tool whose calls change state a later call can observe |
//!
//! ```
//! use toolshed_core::{Danger, ToolSpec};
//! use toolshed_host::config::ReviewRules;
//! use toolshed_host::{CompiledRules, Subject};
//! let rules = ReviewRules { deny: vec!["group:exec".into(), "danger:high".into()], ..Default::default() };
//! let rules = CompiledRules::compile("review", &rules).unwrap();
//! let shell = ToolSpec::new("shell", "Run a command.").group("exec");
//! assert!(rules.refuse(&Subject::new(&shell, "system.exec")).is_some());
//! let calc = ToolSpec::new("calculator", "Add numbers.").group("util");
//! assert!(rules.refuse(&Subject::new(&calc, "system.util")).is_none());
//! ```

use std::collections::BTreeMap;

use crate::name_glob::NameGlob;
use toolshed_core::{Danger, ToolSpec};

use serde::{Deserialize, Serialize};

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
    /// In a profile: the workspace its callers work in (an absolute directory, or an
    /// `ssh://`, `docker://` or `podman://` URL); a door started with the profile opens it.
    /// Not allowed in `[review]`, nor in a workspace's own `toolshed.toml` unless trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// In a profile: how its MCP clients are given the tools — `native` (each tool listed,
    /// no `run_code`), `code` (only `run_code` listed: every tool is called from a snippet)
    /// or `both` (the default). Not allowed in `[review]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presentation: Option<String>,
}

/// What a rule is matched against: a tool's spec and the plugin that provides it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The tool as data: name, group, danger, annotations.
    pub spec: &'a ToolSpec,
    /// The id of the plugin that provides it.
    pub plugin_id: &'a str,
    /// What the call touches, when a call is judged (policy rules on `reads`, `writes`,
    /// `hosts`, `commands`); `None`: what the spec declares, from the arguments.
    pub touches: Option<&'a toolshed_core::Touches>,
}

impl<'a> Subject<'a> {
    /// The tool `spec` of plugin `plugin_id`.
    pub fn new(spec: &'a ToolSpec, plugin_id: &'a str) -> Self {
        Self {
            spec,
            plugin_id,
            touches: None,
        }
    }

    /// This subject with what the call touches, as the tool says.
    pub fn with_touches(mut self, touches: &'a toolshed_core::Touches) -> Self {
        self.touches = Some(touches);
        self
    }
}

/// The annotation words a bare rule may name.
const FLAGS: &[&str] = &[
    "destructive",
    "open_world",
    "read_only",
    "idempotent",
    "mutates_state",
];

/// One compiled rule.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    Name(NameGlob),
    Group(NameGlob),
    Plugin(NameGlob),
    Danger { level: Danger, or_above: bool },
    Flag(&'static str),
}

impl Matcher {
    pub(crate) fn parse(pattern: &str) -> Result<Self, String> {
        let glob = |text: &str| {
            NameGlob::new(text).map_err(|e| format!("`{text}` is not a valid glob: {}", e.kind()))
        };
        if let Some(flag) = FLAGS.iter().find(|f| **f == pattern) {
            return Ok(Self::Flag(flag));
        }
        let Some((kind, value)) = pattern.split_once(':') else {
            return glob(pattern).map(Self::Name);
        };
        match kind {
            "name" => glob(value).map(Self::Name),
            "group" => glob(value).map(Self::Group),
            "plugin" => glob(value).map(Self::Plugin),
            "danger" => {
                let (level, or_above) = match value.strip_suffix('+') {
                    Some(level) => (level, true),
                    None => (value, false),
                };
                let level = match level {
                    "low" => Danger::Low,
                    "medium" => Danger::Medium,
                    "high" => Danger::High,
                    other => {
                        return Err(format!(
                            "danger level `{other}` is not one of low, medium, high (add `+` for \"or above\": danger:medium+)"
                        ));
                    }
                };
                Ok(Self::Danger { level, or_above })
            }
            "annotation" => FLAGS
                .iter()
                .find(|f| **f == value)
                .map(|f| Self::Flag(f))
                .ok_or_else(|| format!("annotation `{value}` is not one of {}", FLAGS.join(", "))),
            other => Err(format!(
                "`{other}:` is not a rule kind; use a name glob, name:, group:, plugin:, danger:, or one of {}",
                FLAGS.join(", ")
            )),
        }
    }

    pub(crate) fn matches(&self, subject: &Subject<'_>) -> bool {
        let spec = subject.spec;
        match self {
            Self::Name(glob) => glob.is_match(&spec.name),
            Self::Group(glob) => glob.is_match(&spec.group),
            Self::Plugin(glob) => glob.is_match(subject.plugin_id),
            Self::Danger { level, or_above } => {
                rank(spec.danger) == rank(*level) || (*or_above && rank(spec.danger) > rank(*level))
            }
            Self::Flag(flag) => match *flag {
                "destructive" => spec.annotations.destructive,
                "open_world" => spec.annotations.open_world,
                "read_only" => spec.annotations.read_only,
                "idempotent" => spec.annotations.idempotent,
                "mutates_state" => spec.mutates_state,
                _ => false,
            },
        }
    }
}

fn rank(danger: Danger) -> u8 {
    match danger {
        Danger::Low => 0,
        Danger::Medium => 1,
        Danger::High => 2,
    }
}

/// A rule set compiled for matching.
#[derive(Debug, Clone)]
pub struct CompiledRules {
    /// Where the rules came from, e.g. `review` or `profiles.ci`.
    pub source: String,
    allow: Vec<(String, Matcher)>,
    deny: Vec<(String, Matcher)>,
    /// The narrower sandbox mode the caller's calls run in (a profile's `sandbox`, a
    /// token's `sandbox:MODE` scope): commands run in it and, in `read-only`, no tool
    /// writes files. Never wider than the host's mode.
    pub sandbox: Option<toolshed_ops::sandbox::SandboxMode>,
    /// The one workspace the caller may work in (a token's `workspace:` scope, as
    /// [`crate::identity::workspace_pin`] spells it): a host serving another refuses.
    pub workspace: Option<String>,
}

/// A rule that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("config {source_name}: rule `{pattern}` is not valid: {message}")]
pub struct RuleError {
    /// Where the rule is.
    pub source_name: String,
    /// The rule.
    pub pattern: String,
    /// Why, and what to write instead.
    pub message: String,
}

fn build(
    source: &str,
    list: &str,
    patterns: &[String],
) -> Result<Vec<(String, Matcher)>, RuleError> {
    patterns
        .iter()
        .map(|pattern| {
            Matcher::parse(pattern)
                .map(|m| (pattern.clone(), m))
                .map_err(|message| RuleError {
                    source_name: format!("{source}.{list}"),
                    pattern: pattern.clone(),
                    message,
                })
        })
        .collect()
}

impl CompiledRules {
    /// Compiles `rules`; `source` names them in errors and denials.
    pub fn compile(source: &str, rules: &ReviewRules) -> Result<Self, RuleError> {
        let sandbox = rules
            .sandbox
            .as_deref()
            .map(toolshed_ops::sandbox::SandboxMode::parse)
            .transpose()
            .map_err(|e| RuleError {
                source_name: format!("{source}.sandbox"),
                pattern: rules.sandbox.clone().unwrap_or_default(),
                message: e.to_string(),
            })?;
        Ok(Self {
            source: source.to_string(),
            allow: build(source, "allow", &rules.allow)?,
            deny: build(source, "deny", &rules.deny)?,
            sandbox,
            workspace: rules.workspace.clone(),
        })
    }

    /// Rules allowing only what one of `patterns` matches; `None` when there is none.
    pub fn allow_only(source: &str, patterns: Vec<String>) -> Result<Option<Self>, RuleError> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let rules = ReviewRules {
            allow: patterns,
            ..ReviewRules::default()
        };
        Self::compile(source, &rules).map(Some)
    }

    /// The rules these were compiled from, to keep and compile again (a schedule keeps
    /// its maker's narrowing for its later runs).
    pub(crate) fn rules(&self) -> ReviewRules {
        let patterns = |list: &[(String, Matcher)]| list.iter().map(|(p, _)| p.clone()).collect();
        ReviewRules {
            allow: patterns(&self.allow),
            deny: patterns(&self.deny),
            sandbox: self.sandbox.map(|m| m.as_str().to_string()),
            workspace: self.workspace.clone(),
            ..ReviewRules::default()
        }
    }

    /// `None` if `subject` passes; otherwise the rule that refused it.
    pub fn refuse(&self, subject: &Subject<'_>) -> Option<String> {
        if let Some((pattern, _)) = self.deny.iter().find(|(_, m)| m.matches(subject)) {
            return Some(format!("{}.deny rule `{pattern}`", self.source));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|(_, m)| m.matches(subject)) {
            let patterns: Vec<&str> = self.allow.iter().map(|(p, _)| p.as_str()).collect();
            return Some(format!(
                "{}.allow (the tool matches none of: {})",
                self.source,
                patterns.join(", ")
            ));
        }
        None
    }
}

/// The host-wide rules and every profile, compiled.
#[derive(Debug, Clone)]
pub struct Review {
    global: CompiledRules,
    profiles: BTreeMap<String, CompiledRules>,
    /// The catalog mode each profile that names one gives its clients (`catalog =
    /// "discover"`).
    catalogs: BTreeMap<String, String>,
}

/// The profiles toolshed ships, each a set of allow rules: `--profile NAME` works without
/// a `[profiles.NAME]` table, and a table of that name in the configuration replaces it.
pub const BUILTIN_PROFILES: &[(&str, &[&str])] = &[
    // Everything the host rules leave visible.
    ("all", &[]),
    // Editing and running code: the workspace, commands and their sessions (a dev server
    // runs as a session too), reading the web. The background processes with their port
    // proxy (`plugin:system.process`) are left out: a coding agent at a terminal does not
    // need them, and every tool listed costs its model tokens on every turn.
    (
        "coding",
        &["group:workspace", "plugin:system.exec_command", "web_fetch"],
    ),
    // Only tools that change nothing.
    ("readonly", &["read_only"]),
    // Every tool listed, but only read-only ones run until a person approves the plan
    // the model submits with `plan_submit` (docs/agents.md#plan-mode).
    ("plan", &[]),
    // Reading and calling the web.
    ("web", &["group:web", "group:http"]),
];

impl Review {
    /// Compiles the host's rules (`[review]`) and its profiles (`[profiles.NAME]`), with
    /// the built-in profiles they do not replace. `lists` are other rule lists to check on
    /// the way, each with the key it came from (`mcp.core`), so that a bad rule anywhere
    /// stops the start and the first one is named.
    pub fn compile(
        review: &ReviewRules,
        configured: &BTreeMap<String, ReviewRules>,
        lists: &[(&str, &[String])],
    ) -> Result<Self, RuleError> {
        let global = CompiledRules::compile("review", review)?;
        let mut profiles = BTreeMap::new();
        for (name, allow) in BUILTIN_PROFILES {
            let rules = ReviewRules {
                allow: allow.iter().map(|r| (*r).to_string()).collect(),
                ..ReviewRules::default()
            };
            profiles.insert(
                (*name).to_string(),
                CompiledRules::compile(&format!("profiles.{name}"), &rules)?,
            );
        }
        if let Some(sandbox) = &review.sandbox {
            return Err(RuleError {
                source_name: "review.sandbox".into(),
                pattern: sandbox.clone(),
                message: "`sandbox` belongs to a profile ([profiles.NAME]); the host's mode is \
                          [sandbox] mode"
                    .into(),
            });
        }
        if let Some(workspace) = &review.workspace {
            return Err(RuleError {
                source_name: "review.workspace".into(),
                pattern: workspace.clone(),
                message: "`workspace` belongs to a profile ([profiles.NAME]); the host's own is \
                          --workspace or [workspace] url"
                    .into(),
            });
        }
        if let Some(catalog) = &review.catalog {
            return Err(RuleError {
                source_name: "review.catalog".into(),
                pattern: catalog.clone(),
                message: "`catalog` belongs to a profile ([profiles.NAME]), not to [review]".into(),
            });
        }
        if let Some(presentation) = &review.presentation {
            return Err(RuleError {
                source_name: "review.presentation".into(),
                pattern: presentation.clone(),
                message: "`presentation` belongs to a profile ([profiles.NAME]), not to [review]"
                    .into(),
            });
        }
        for (source, patterns) in lists {
            CompiledRules::allow_only(source, patterns.to_vec())?;
        }
        let mut catalogs = BTreeMap::new();
        for (name, rules) in configured {
            // A profile's workspace is where its doors open, not a rule its calls meet.
            let narrowing = ReviewRules {
                workspace: None,
                presentation: None,
                ..rules.clone()
            };
            profiles.insert(
                name.clone(),
                CompiledRules::compile(&format!("profiles.{name}"), &narrowing)?,
            );
            if let Some(place) = &rules.workspace {
                crate::identity::check_workspace_pin(place).map_err(|e| RuleError {
                    source_name: format!("profiles.{name}.workspace"),
                    pattern: place.clone(),
                    message: e.to_string(),
                })?;
            }
            if let Some(other) = rules
                .presentation
                .as_deref()
                .filter(|p| !matches!(*p, "native" | "code" | "both"))
            {
                return Err(RuleError {
                    source_name: format!("profiles.{name}.presentation"),
                    pattern: other.to_string(),
                    message: "is not a presentation: use native, code or both".into(),
                });
            }
            match rules.catalog.as_deref() {
                None => {}
                Some(mode @ ("full" | "standard" | "discover")) => {
                    catalogs.insert(name.clone(), mode.to_string());
                }
                Some(other) => {
                    return Err(RuleError {
                        source_name: format!("profiles.{name}.catalog"),
                        pattern: other.to_string(),
                        message: "is not a catalog mode: use full, standard or discover".into(),
                    });
                }
            }
        }
        Ok(Self {
            global,
            profiles,
            catalogs,
        })
    }

    /// The catalog mode (`full`, `standard`, `discover`) clients using profile `name` get
    /// unless they ask otherwise; `None`: the profile names none.
    pub fn profile_catalog(&self, name: &str) -> Option<&str> {
        self.catalogs.get(name).map(String::as_str)
    }

    /// A profile's rules.
    pub fn profile(&self, name: &str) -> Option<&CompiledRules> {
        self.profiles.get(name)
    }

    /// Profile names.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }

    /// `None` if `subject` is visible under the host rules and `profile`; else the rule.
    pub fn refuse(&self, subject: &Subject<'_>, profile: Option<&CompiledRules>) -> Option<String> {
        self.global
            .refuse(subject)
            .or_else(|| profile.and_then(|p| p.refuse(subject)))
    }
}

#[cfg(test)]
mod tests {
    use toolshed_core::ToolAnnotations;

    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> CompiledRules {
        let rules = ReviewRules {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            ..ReviewRules::default()
        };
        CompiledRules::compile("review", &rules).unwrap()
    }

    fn spec(name: &str, group: &str, danger: Danger) -> ToolSpec {
        let mut spec = ToolSpec::new(name, "d").group(group);
        spec.danger = danger;
        spec
    }

    fn refuse(rules: &CompiledRules, spec: &ToolSpec) -> Option<String> {
        rules.refuse(&Subject::new(spec, "system.test"))
    }

    #[test]
    fn deny_wins_and_empty_allow_allows_all() {
        let c = rules(&[], &["workspace_*"]);
        assert_eq!(refuse(&c, &spec("calculator", "util", Danger::Low)), None);
        assert_eq!(
            refuse(&c, &spec("workspace_write", "workspace", Danger::Low)).unwrap(),
            "review.deny rule `workspace_*`"
        );

        let c = rules(&["calc*", "text"], &["text"]);
        assert_eq!(refuse(&c, &spec("calculator", "util", Danger::Low)), None);
        assert!(
            refuse(&c, &spec("text", "util", Danger::Low))
                .unwrap()
                .contains("deny")
        );
        assert!(
            refuse(&c, &spec("crypto", "util", Danger::Low))
                .unwrap()
                .contains("review.allow")
        );
    }

    #[test]
    fn groups_plugins_and_danger_match_whatever_the_name() {
        let c = rules(&[], &["group:exec"]);
        assert!(refuse(&c, &spec("shell", "exec", Danger::High)).is_some());
        assert!(refuse(&c, &spec("write_stdin", "exec", Danger::High)).is_some());
        assert!(refuse(&c, &spec("exec_note", "util", Danger::Low)).is_none());

        let c = rules(&[], &["danger:high"]);
        assert!(refuse(&c, &spec("a", "x", Danger::High)).is_some());
        assert!(refuse(&c, &spec("a", "x", Danger::Medium)).is_none());
        let c = rules(&[], &["danger:medium+"]);
        assert!(refuse(&c, &spec("a", "x", Danger::High)).is_some());
        assert!(refuse(&c, &spec("a", "x", Danger::Medium)).is_some());
        assert!(refuse(&c, &spec("a", "x", Danger::Low)).is_none());

        let c = rules(&[], &["plugin:system.t*"]);
        assert!(refuse(&c, &spec("a", "x", Danger::Low)).is_some());
        let c = rules(&["group:util"], &[]);
        assert!(refuse(&c, &spec("a", "util", Danger::Low)).is_none());
        assert!(
            refuse(&c, &spec("a", "web", Danger::Low))
                .unwrap()
                .contains("allow")
        );
    }

    #[test]
    fn annotations_match_by_their_word() {
        let mut net = spec("fetch", "web", Danger::Medium);
        net.annotations = ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
        };
        let pure = {
            let mut s = spec("calc", "util", Danger::Low);
            s.annotations = ToolAnnotations::PURE;
            s
        };
        for word in ["open_world", "annotation:open_world"] {
            let c = rules(&[], &[word]);
            assert!(refuse(&c, &net).is_some(), "{word}");
            assert!(refuse(&c, &pure).is_none(), "{word}");
        }
        let c = rules(&[], &["destructive"]);
        assert!(refuse(&c, &net).is_none());
        let c = rules(&["read_only"], &[]);
        assert!(refuse(&c, &pure).is_none());
        assert!(refuse(&c, &spec("w", "workspace", Danger::Medium)).is_some());
    }

    #[test]
    fn bad_rules_are_named_with_what_to_write() {
        for (rule, hint) in [
            ("a[", "not a valid glob"),
            ("grup:exec", "`grup:` is not a rule kind"),
            ("danger:severe", "not one of low, medium, high"),
            ("annotation:loud", "is not one of destructive"),
            ("group:[", "not a valid glob"),
        ] {
            let err = CompiledRules::compile(
                "review",
                &ReviewRules {
                    allow: vec![rule.into()],
                    ..ReviewRules::default()
                },
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("review.allow")
                    && err.contains(&format!("`{rule}`"))
                    && err.contains(hint),
                "{err}"
            );
        }
    }
}

//! Policy rules (`[[policy.rule]]`): which calls run, which need a person's approval, which
//! are refused — by what the tool is, who calls it and with which arguments.
//!
//! Rules are evaluated in order and the first that matches decides; when none matches, the
//! default for the tool's danger level does (`[policy.default]`, `allow` unless set).
//!
//! ```toml
//! [[policy.rule]]
//! name = "read-only git"
//! tools = ["group:exec"]
//! when = { cmd = "^git (status|diff|log)( |$)" }
//! decision = "allow"
//!
//! [[policy.rule]]
//! tools = ["group:exec"]
//! when = { cmd = { not_matches = "^git " } }
//! decision = "ask"
//! message = "commands other than git need a person's yes"
//!
//! [policy.default]
//! high = "ask"
//! ```
//!
//! A rule matches when every part it has matches: `tools` (any of the review-rule forms —
//! name globs, `group:`, `plugin:`, `danger:`, annotation words), `owners` (globs on the
//! caller's owner id), and every `when` condition on an argument (or on what the call
//! touches: `writes`, `reads`, `hosts`, `commands`, see [`toolshed_core::Touches`]; rules
//! that refuse writes also bind commands through their sandbox, [`PolicyRules::write_scope`]).
//! An argument is named by
//! its key, or a dotted path into objects (`env.PATH`). A condition is a regular expression
//! (a string), or a table of tests that must all hold: `matches` / `not_matches` (regular
//! expressions on a string), `glob` / `not_glob` (on a path string), `min` / `max` (on a
//! number), `present` (whether the argument was given). A test other than `present = false`
//! needs the argument: a rule about `cmd` does not match a tool that takes none.

use std::collections::BTreeMap;

use crate::name_glob::NameGlob;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_core::{Danger, OwnerId, TouchKind, Touches};

use crate::review::{Matcher, RuleError, Subject};

/// What a policy rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    #[default]
    Allow,
    /// Ask a person first.
    Ask,
    /// Refuse it.
    Deny,
}

impl Decision {
    /// Its name in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// `[policy]`: the rules and the defaults.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyConfig {
    /// The decision when no rule matches, by the tool's danger level.
    pub default: DangerDefaults,
    /// The rules, first match wins.
    pub rule: Vec<PolicyRule>,
}

/// `[policy.default]`: the decision for a tool no rule matched, by its danger level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DangerDefaults {
    /// Tools of low danger.
    pub low: Decision,
    /// Tools of medium danger.
    pub medium: Decision,
    /// Tools of high danger (commands, deletions).
    pub high: Decision,
}

/// One `[[policy.rule]]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyRule {
    /// A name for messages, audit and `toolshed policy test` (else `policy.rule[N]`).
    pub name: Option<String>,
    /// Which tools (review-rule forms); empty: every tool.
    pub tools: Vec<String>,
    /// Which owners (globs on the owner id, e.g. `alice`, `alice/*`); empty: everyone.
    pub owners: Vec<String>,
    /// Conditions on argument values, all of which must hold.
    pub when: BTreeMap<String, Condition>,
    /// What happens to a matching call (`allow` when not given). A rule gives a decision
    /// or a `sandbox`, not both.
    pub decision: Option<Decision>,
    /// Said to the caller with `ask` and `deny`.
    pub message: Option<String>,
    /// A narrower sandbox mode for the calls it matches (`read-only`, `workspace-write`).
    /// A rule with `sandbox` narrows and does not decide: evaluation goes on to the next.
    pub sandbox: Option<String>,
}

/// A condition on one argument: a regular expression, or a table of tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Condition {
    /// The argument is a string matching this regular expression.
    Matches(String),
    /// Every test given holds.
    Tests(ConditionTests),
}

impl Default for Condition {
    fn default() -> Self {
        Condition::Tests(ConditionTests::default())
    }
}

/// The tests of a condition given as a table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConditionTests {
    /// A string matching this regular expression.
    pub matches: Option<String>,
    /// A string not matching this regular expression.
    pub not_matches: Option<String>,
    /// A path string matching this glob.
    pub glob: Option<String>,
    /// A path string not matching this glob.
    pub not_glob: Option<String>,
    /// A number at least this.
    pub min: Option<f64>,
    /// A number at most this.
    pub max: Option<f64>,
    /// Whether the argument is given at all.
    pub present: Option<bool>,
}

/// One compiled test.
#[derive(Debug, Clone)]
enum Test {
    Matches(Regex),
    NotMatches(Regex),
    Glob(NameGlob, String),
    NotGlob(NameGlob, String),
    Min(f64),
    Max(f64),
    Present(bool),
}

impl Test {
    fn holds(&self, value: Option<&Value>) -> bool {
        match (self, value) {
            (Test::Present(wanted), v) => v.is_some() == *wanted,
            (_, None) => false,
            (Test::Matches(re), Some(v)) => v.as_str().is_some_and(|s| re.is_match(s)),
            (Test::NotMatches(re), Some(v)) => v.as_str().is_some_and(|s| !re.is_match(s)),
            (Test::Glob(g, _), Some(v)) => v.as_str().is_some_and(|s| g.is_match(s)),
            (Test::NotGlob(g, _), Some(v)) => v.as_str().is_some_and(|s| !g.is_match(s)),
            (Test::Min(min), Some(v)) => v.as_f64().is_some_and(|n| n >= *min),
            (Test::Max(max), Some(v)) => v.as_f64().is_some_and(|n| n <= *max),
        }
    }
}

#[derive(Debug, Clone)]
struct Compiled {
    label: String,
    tools: Vec<Matcher>,
    owners: Vec<NameGlob>,
    when: Vec<(Vec<String>, Test)>,
    /// Conditions on what the call touches (`writes`, `reads`, `hosts`, `commands`).
    touches: Vec<(TouchKind, Test)>,
    decision: Decision,
    message: Option<String>,
    /// Set on a narrowing rule (which does not decide).
    sandbox: Option<toolshed_ops::sandbox::SandboxMode>,
}

/// Whether a rule's `owners` cover `owner`: empty covers everyone; otherwise a glob
/// matches the owner or an owner above it (`alice` covers `alice/agent-3`), so that a rule
/// about a caller holds for the subagents and sub-owners acting for it.
fn owner_matches(globs: &[NameGlob], owner: &str) -> bool {
    globs.is_empty()
        || std::iter::successors(Some(owner), |at| at.rfind('/').map(|i| &at[..i]))
            .any(|at| globs.iter().any(|g| g.is_match(at)))
}

impl Compiled {
    fn matches(&self, subject: &Subject<'_>, owner: &OwnerId, arguments: &Value) -> bool {
        (self.tools.is_empty() || self.tools.iter().any(|m| m.matches(subject)))
            && owner_matches(&self.owners, &owner.0)
            && self
                .when
                .iter()
                .all(|(path, test)| test.holds(lookup(arguments, path)))
            && (self.touches.is_empty() || self.touches_match(subject, arguments))
    }

    /// Every touch condition holds: for each, some touched item of its kind passes the
    /// test (`present` asks whether there is any).
    fn touches_match(&self, subject: &Subject<'_>, arguments: &Value) -> bool {
        let declared;
        let touches = match subject.touches {
            Some(t) => t,
            None => {
                declared = Touches::from_declared(&subject.spec.touches, arguments);
                &declared
            }
        };
        // A rule that refuses, asks or narrows matches when any touched item passes (one
        // file under `secrets/` is enough); a rule that allows, only when every one does (a
        // patch writing `src/a` and `secrets/b` is not allowed by a rule on `src/**`).
        let every = self.decision == Decision::Allow && self.sandbox.is_none();
        self.touches.iter().all(|(kind, test)| {
            let items = touch_items(*kind, touches.of(*kind));
            // Writing a directory that holds what the glob names (deleting or moving
            // `secrets`, or `config` for `config/secrets/**`) writes it too — for a rule
            // that refuses; a rule that allows does not allow more than it names.
            let prefix = match test {
                Test::Glob(_, text) if *kind == TouchKind::Writes && !every => literal_prefix(text),
                _ => None,
            };
            let passes = |item: &String| {
                test.holds(Some(&Value::String(item.clone())))
                    || prefix
                        .as_deref()
                        .is_some_and(|p| toolshed_ops::path::is_within(item, p))
            };
            match test {
                Test::Present(wanted) => items.is_empty() != *wanted,
                _ if every => !items.is_empty() && items.iter().all(passes),
                _ => items.iter().any(passes),
            }
        })
    }
}

/// The directory (or file) a glob names before its first wildcard: `secrets` for
/// `secrets/**`, `a/b` for `a/b/*.txt`, `x.pem` for `x.pem`; `None` when it starts with one.
fn literal_prefix(glob: &str) -> Option<String> {
    let mut parts = Vec::new();
    for part in glob.trim_start_matches("./").split('/') {
        if part.is_empty() || part.contains(['*', '?', '[', '{']) {
            break;
        }
        parts.push(part);
    }
    let joined = parts.join("/");
    toolshed_ops::path::normalize_lexically(&joined)
        .ok()
        .filter(|p| p != ".")
}

/// The items a touch condition is tested on: paths folded on their words (`./a/../b` is
/// `b`; the spelling a path arrives in does not dodge a glob), hosts from URLs, command
/// lines as they are.
fn touch_items(kind: TouchKind, raw: &[String]) -> Vec<String> {
    raw.iter()
        .map(|item| match kind {
            TouchKind::Reads | TouchKind::Writes => {
                let trimmed = item.trim_start_matches('/');
                toolshed_ops::path::normalize_lexically(trimmed).unwrap_or_else(|_| item.clone())
            }
            TouchKind::Hosts => url::Url::parse(item)
                .ok()
                .and_then(|u| u.host_str().map(|h| h.trim_end_matches('.').to_string()))
                .unwrap_or_else(|| item.to_ascii_lowercase()),
            TouchKind::Commands => item.clone(),
        })
        .collect()
}

/// The argument at `path` (keys into nested objects).
fn lookup<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(arguments, |value, key| value.get(key))
        .filter(|v| !v.is_null())
}

/// The policy rules, compiled.
#[derive(Debug, Clone, Default)]
pub struct PolicyRules {
    rules: Vec<Compiled>,
    defaults: DangerDefaults,
}

/// The decision for one call and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What happens.
    pub decision: Decision,
    /// The rule that decided (`name`, else `policy.rule[N]`), or `policy.default.<level>`.
    pub rule: String,
    /// The rule's message, if it has one.
    pub message: Option<String>,
}

impl PolicyRules {
    /// Compiles `config`; an error names the rule and what is wrong.
    pub fn compile(config: &PolicyConfig) -> Result<Self, RuleError> {
        let rules = config
            .rule
            .iter()
            .enumerate()
            .map(|(i, rule)| compile_rule(i, rule))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            rules,
            defaults: config.default,
        })
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// What commands `subject` runs for `owner` may write and read (see
    /// [`toolshed_core::WriteScope`]): every rule that refuses or asks (a command cannot stop
    /// to ask about one file), applies to this tool and owner, and tests only `writes` or
    /// only `reads` — on writes, `glob` keeps its directory read-only, `not_glob` makes its
    /// directory the only writable one; on reads, `glob` hides its directory. A glob whose first part is already a wildcard (`**/*.pem`) names no
    /// directory and cannot bind a command; it still binds the file tools.
    pub fn write_scope(&self, subject: &Subject<'_>, owner: &OwnerId) -> toolshed_core::WriteScope {
        let mut scope = toolshed_core::WriteScope::default();
        for rule in &self.rules {
            if rule.decision == Decision::Allow
                || rule.sandbox.is_some()
                || !rule.when.is_empty()
                || rule.touches.is_empty()
                || rule
                    .touches
                    .iter()
                    .any(|(k, _)| !matches!(k, TouchKind::Writes | TouchKind::Reads))
                || rule.touches.iter().any(|(k, _)| *k != rule.touches[0].0)
                || !(rule.tools.is_empty() || rule.tools.iter().any(|m| m.matches(subject)))
                || !owner_matches(&rule.owners, &owner.0)
            {
                continue;
            }
            for (kind, test) in &rule.touches {
                match test {
                    // What a command may not read, its sandbox hides; a rule that only
                    // allows reading somewhere (`not_glob`) would hide the whole workspace
                    // and binds the file tools alone.
                    Test::Glob(_, text) if *kind == TouchKind::Reads => {
                        scope.hidden.extend(literal_prefix(text));
                    }
                    _ if *kind == TouchKind::Reads => {}
                    Test::Glob(_, text) => {
                        if let Some(dir) = literal_prefix(text) {
                            // A trailing `/`: the glob goes on below it, so it is a
                            // directory (made if missing, to be kept read-only).
                            let is_dir = text.trim_start_matches("./").len() > dir.len();
                            scope
                                .read_only
                                .push(if is_dir { format!("{dir}/") } else { dir });
                        }
                    }
                    Test::NotGlob(_, text) => {
                        if let Some(dir) = literal_prefix(text) {
                            scope.only.get_or_insert_with(Vec::new).push(dir);
                        }
                    }
                    _ => {}
                }
            }
        }
        scope
    }

    /// The narrowest sandbox mode the narrowing rules (`sandbox = …`) that match this call
    /// give; `None` when none does.
    pub fn sandbox_for(
        &self,
        subject: &Subject<'_>,
        owner: &OwnerId,
        arguments: &Value,
    ) -> Option<toolshed_ops::sandbox::SandboxMode> {
        self.rules
            .iter()
            .filter_map(|r| r.sandbox.filter(|_| r.matches(subject, owner, arguments)))
            .min()
    }

    /// Whether any rule tests what a call touches.
    pub fn tests_touches(&self) -> bool {
        self.rules.iter().any(|r| !r.touches.is_empty())
    }

    /// The decision for `subject` called by `owner` with `arguments`.
    pub fn evaluate(&self, subject: &Subject<'_>, owner: &OwnerId, arguments: &Value) -> Verdict {
        self.verdict(subject, owner, Some(arguments))
    }

    /// The decision for what a running call found to touch (in `subject`'s touches): as
    /// [`evaluate`](Self::evaluate), leaving out the rules that test argument values (the
    /// call's arguments were judged before it ran).
    pub fn evaluate_found(&self, subject: &Subject<'_>, owner: &OwnerId) -> Verdict {
        self.verdict(subject, owner, None)
    }

    /// The narrowest mode the narrowing rules give what a running call found to touch.
    pub fn sandbox_for_found(
        &self,
        subject: &Subject<'_>,
        owner: &OwnerId,
    ) -> Option<toolshed_ops::sandbox::SandboxMode> {
        self.rules
            .iter()
            .filter(|r| r.when.is_empty() && !r.touches.is_empty())
            .filter_map(|r| {
                r.sandbox
                    .filter(|_| r.matches(subject, owner, &Value::Null))
            })
            .min()
    }

    fn verdict(
        &self,
        subject: &Subject<'_>,
        owner: &OwnerId,
        arguments: Option<&Value>,
    ) -> Verdict {
        if let Some(rule) = self
            .rules
            .iter()
            .filter(|r| r.sandbox.is_none() && (arguments.is_some() || r.when.is_empty()))
            .find(|r| r.matches(subject, owner, arguments.unwrap_or(&Value::Null)))
        {
            return Verdict {
                decision: rule.decision,
                rule: rule.label.clone(),
                message: rule.message.clone(),
            };
        }
        let (level, decision) = match subject.spec.danger {
            Danger::Low => ("low", self.defaults.low),
            Danger::Medium => ("medium", self.defaults.medium),
            Danger::High => ("high", self.defaults.high),
        };
        Verdict {
            decision,
            rule: format!("policy.default.{level}"),
            message: None,
        }
    }
}

fn compile_rule(index: usize, rule: &PolicyRule) -> Result<Compiled, RuleError> {
    let source = format!("policy.rule[{index}]");
    let label = rule.name.clone().unwrap_or_else(|| source.clone());
    let error = |pattern: &str, message: String| RuleError {
        source_name: source.clone(),
        pattern: pattern.to_string(),
        message,
    };
    let glob = |pattern: &str| {
        NameGlob::new(pattern)
            .map_err(|e| error(pattern, format!("not a valid glob: {}", e.kind())))
    };
    let regex = |pattern: &str| {
        Regex::new(pattern)
            .map_err(|e| error(pattern, format!("not a valid regular expression: {e}")))
    };
    let tools = rule
        .tools
        .iter()
        .map(|p| Matcher::parse(p).map_err(|m| error(p, m)))
        .collect::<Result<_, _>>()?;
    let owners = rule
        .owners
        .iter()
        .map(|p| glob(p))
        .collect::<Result<_, _>>()?;
    if let (Some(decision), Some(mode)) = (rule.decision, &rule.sandbox) {
        return Err(error(
            mode,
            format!(
                "a rule narrows the sandbox or decides, not both: this one says sandbox = \"{mode}\" \
                 and decision = \"{}\"; split it into two rules with the same tools, owners \
                 and conditions",
                decision.as_str()
            ),
        ));
    }
    let mut when = Vec::new();
    let mut touches = Vec::new();
    for (key, condition) in &rule.when {
        let path: Vec<String> = key.split('.').map(str::to_string).collect();
        if path.iter().any(String::is_empty) {
            return Err(error(key, "an argument name has an empty part".into()));
        }
        let tests = match condition {
            Condition::Matches(pattern) => vec![Test::Matches(regex(pattern)?)],
            Condition::Tests(t) => {
                let mut tests = Vec::new();
                if let Some(p) = &t.matches {
                    tests.push(Test::Matches(regex(p)?));
                }
                if let Some(p) = &t.not_matches {
                    tests.push(Test::NotMatches(regex(p)?));
                }
                if let Some(p) = &t.glob {
                    tests.push(Test::Glob(glob(p)?, p.clone()));
                }
                if let Some(p) = &t.not_glob {
                    tests.push(Test::NotGlob(glob(p)?, p.clone()));
                }
                tests.extend(t.min.map(Test::Min));
                tests.extend(t.max.map(Test::Max));
                tests.extend(t.present.map(Test::Present));
                if tests.is_empty() {
                    return Err(error(
                        key,
                        "the condition tests nothing; give a regular expression or one of \
                         matches, not_matches, glob, not_glob, min, max, present"
                            .into(),
                    ));
                }
                tests
            }
        };
        match TouchKind::parse(key) {
            Some(kind) => {
                if tests
                    .iter()
                    .any(|t| matches!(t, Test::Min(_) | Test::Max(_)))
                {
                    return Err(error(
                        key,
                        format!(
                            "`{key}` is what the call touches (paths, hosts or command lines); \
                             test it with glob, not_glob, matches, not_matches or present"
                        ),
                    ));
                }
                touches.extend(tests.into_iter().map(|t| (kind, t)));
            }
            None => when.extend(tests.into_iter().map(|t| (path.clone(), t))),
        }
    }
    Ok(Compiled {
        label,
        tools,
        owners,
        when,
        touches,
        decision: rule.decision.unwrap_or_default(),
        message: rule.message.clone(),
        sandbox: rule
            .sandbox
            .as_deref()
            .map(|m| match toolshed_ops::sandbox::SandboxMode::parse(m) {
                Ok(toolshed_ops::sandbox::SandboxMode::FullAccess) => Err(error(
                    m,
                    "a rule can only narrow the sandbox: use read-only or workspace-write".into(),
                )),
                Ok(mode) => Ok(mode),
                Err(e) => Err(error(m, e.to_string())),
            })
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolshed_core::{Danger, ToolSpec};

    use super::*;

    fn rules(toml_text: &str) -> PolicyRules {
        #[derive(Deserialize)]
        struct Wrapper {
            policy: PolicyConfig,
        }
        let w: Wrapper = toml::from_str(toml_text).unwrap();
        PolicyRules::compile(&w.policy).unwrap()
    }

    /// Failed before: `alice/agent-3` (her subagent) slipped past a rule on `alice`.
    #[test]
    fn a_rule_on_an_owner_holds_for_its_sub_owners() {
        let rules = rules(
            "[[policy.rule]]\nowners = [\"alice\"]\ntools = [\"group:exec\"]\ndecision = \"deny\"\n\
             [[policy.rule]]\nowners = [\"bob/*\"]\ndecision = \"ask\"\n",
        );
        let exec = ToolSpec::new("exec_command", "x").group("exec");
        let decide = |owner: &str| {
            let v = rules.evaluate(
                &Subject::new(&exec, "p"),
                &OwnerId(owner.into()),
                &json!({}),
            );
            v.decision
        };
        assert_eq!(decide("alice"), Decision::Deny);
        assert_eq!(decide("alice/agent-3/agent-9"), Decision::Deny);
        assert_eq!(decide("alicex"), Decision::Allow);
        assert_eq!(decide("bob"), Decision::Allow);
        assert_eq!(decide("bob/agent-1"), Decision::Ask);
    }

    #[test]
    fn the_first_matching_rule_decides_and_the_danger_default_catches_the_rest() {
        let rules = rules(
            r#"
            [[policy.rule]]
            name = "git"
            tools = ["group:exec"]
            when = { cmd = "^git (status|diff)" }
            decision = "allow"
            [[policy.rule]]
            tools = ["group:exec"]
            when = { cmd = { not_matches = "^git " } }
            decision = "ask"
            message = "ask first"
            [[policy.rule]]
            owners = ["bob/*"]
            tools = ["workspace_write"]
            when = { path = { glob = "secrets/**" } }
            decision = "deny"
            [policy.default]
            high = "deny"
            "#,
        );
        let mut exec = ToolSpec::new("exec_command", "x").group("exec");
        exec.danger = Danger::High;
        let write = ToolSpec::new("workspace_write", "x").group("workspace");
        let (alice, bob) = (OwnerId("alice".into()), OwnerId("bob/task-1".into()));
        let on = |spec: &ToolSpec, owner: &OwnerId, args: Value| {
            let v = rules.evaluate(&Subject::new(spec, "p"), owner, &args);
            (v.decision, v.rule)
        };
        assert_eq!(
            on(&exec, &alice, json!({"cmd": "git status"})),
            (Decision::Allow, "git".into())
        );
        assert_eq!(
            on(&exec, &alice, json!({"cmd": "rm -rf /"})),
            (Decision::Ask, "policy.rule[1]".into())
        );
        // `git push` is neither: the danger default.
        assert_eq!(
            on(&exec, &alice, json!({"cmd": "git push"})),
            (Decision::Deny, "policy.default.high".into())
        );
        assert_eq!(
            on(&write, &bob, json!({"path": "secrets/a/key"})),
            (Decision::Deny, "policy.rule[2]".into())
        );
        assert_eq!(
            on(&write, &alice, json!({"path": "secrets/a/key"})),
            (Decision::Allow, "policy.default.low".into())
        );
    }

    #[test]
    fn numeric_bounds_presence_and_nested_arguments() {
        let rules = rules(
            r#"
            [[policy.rule]]
            when = { timeout_ms = { min = 60000 }, "env.LD_PRELOAD" = { present = true } }
            decision = "deny"
            [[policy.rule]]
            when = { tty = { present = false }, timeout_ms = { max = 10 } }
            decision = "ask"
            "#,
        );
        let spec = ToolSpec::new("exec_command", "x");
        let owner = OwnerId("a".into());
        let decide = |args: Value| {
            rules
                .evaluate(&Subject::new(&spec, "p"), &owner, &args)
                .decision
        };
        assert_eq!(
            decide(json!({"timeout_ms": 90000, "env": {"LD_PRELOAD": "x.so"}})),
            Decision::Deny
        );
        assert_eq!(
            decide(json!({"timeout_ms": 90000, "env": {}})),
            Decision::Allow
        );
        assert_eq!(decide(json!({"timeout_ms": 5})), Decision::Ask);
        assert_eq!(
            decide(json!({"timeout_ms": 5, "tty": true})),
            Decision::Allow
        );
        // A test on a missing argument does not hold.
        assert_eq!(decide(json!({})), Decision::Allow);
    }

    #[test]
    fn a_bad_rule_is_named_with_what_is_wrong() {
        for (text, said) in [
            ("when = { cmd = \"(\" }", "not a valid regular expression"),
            ("tools = [\"danger:extreme\"]", "danger level `extreme`"),
            ("when = { cmd = {} }", "tests nothing"),
            ("owners = [\"[\"]", "not a valid glob"),
        ] {
            #[derive(Deserialize)]
            struct Wrapper {
                policy: PolicyConfig,
            }
            let w: Wrapper =
                toml::from_str(&format!("[[policy.rule]]\n{text}\ndecision = \"deny\"\n")).unwrap();
            let err = PolicyRules::compile(&w.policy).unwrap_err().to_string();
            assert!(
                err.contains("policy.rule[0]") && err.contains(said),
                "{err}"
            );
        }
    }

    #[test]
    fn a_rule_that_both_narrows_and_decides_is_refused_not_half_read() {
        #[derive(Deserialize)]
        struct Wrapper {
            policy: PolicyConfig,
        }
        let w: Wrapper = toml::from_str(
            "[[policy.rule]]\ntools = [\"exec_command\"]\nsandbox = \"read-only\"\ndecision = \"deny\"\n",
        )
        .unwrap();
        let err = PolicyRules::compile(&w.policy).unwrap_err().to_string();
        assert!(
            err.contains("policy.rule[0]") && err.contains("not both") && err.contains("deny"),
            "{err}"
        );
        // Either alone compiles; no decision at all is `allow`.
        let narrowing = rules("[[policy.rule]]\nsandbox = \"read-only\"\n");
        assert_eq!(narrowing.len(), 1);
        let plain = rules("[[policy.rule]]\ntools = [\"a\"]\n");
        assert_eq!(plain.rules[0].decision, Decision::Allow);
    }

    #[test]
    fn an_allowing_rule_on_touches_needs_every_item_and_a_refusing_one_any() {
        // Failed before: the allow on `src/**` matched a patch that also writes
        // `secrets/b`, because one of its files passed.
        let rules = rules(
            r#"
            [[policy.rule]]
            name = "src is free"
            when = { writes = { glob = "src/**" } }
            decision = "allow"
            [[policy.rule]]
            name = "no secrets"
            when = { writes = { glob = "secrets/**" } }
            decision = "deny"
            "#,
        );
        let spec = ToolSpec::new("workspace_patch", "x");
        let owner = OwnerId("a".into());
        let decide = |writes: &[&str]| {
            let touches = Touches {
                writes: writes.iter().map(|w| w.to_string()).collect(),
                ..Touches::default()
            };
            let subject = Subject::new(&spec, "p").with_touches(&touches);
            rules.evaluate(&subject, &owner, &json!({})).rule
        };
        assert_eq!(decide(&["src/a.rs", "src/b.rs"]), "src is free");
        assert_eq!(decide(&["src/a.rs", "secrets/b"]), "no secrets");
        assert_eq!(decide(&["secrets/b"]), "no secrets");
        // Deleting a directory that holds secrets/ is refused; allowing src/** does not
        // allow a write of the directory holding it.
        assert_eq!(decide(&["."]), "no secrets");
        assert_eq!(decide(&["src"]), "policy.default.low");
    }
}

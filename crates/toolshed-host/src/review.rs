//! Review: is this tool visible to this caller?
//!
//! Rules are allow and deny lists of tool-name globs, compiled once. The host-wide rules
//! (`[review]`) apply to every call; a caller may also name a profile (`[profiles.NAME]`),
//! whose rules apply on top. Deny wins over allow; an empty allow list allows all.

use std::collections::BTreeMap;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::config::{Config, ReviewRules};

/// A rule set compiled for matching.
#[derive(Debug, Clone)]
pub struct CompiledRules {
    /// Where the rules came from, e.g. `review` or `profiles.ci`.
    pub source: String,
    allow: Vec<String>,
    allow_set: GlobSet,
    deny: Vec<String>,
    deny_set: GlobSet,
}

/// A glob that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("config {source_name}: pattern `{pattern}` is not a valid glob: {message}")]
pub struct RuleError {
    /// Where the pattern is.
    pub source_name: String,
    /// The pattern.
    pub pattern: String,
    /// Why.
    pub message: String,
}

fn build(source: &str, list: &str, patterns: &[String]) -> Result<GlobSet, RuleError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| RuleError {
            source_name: format!("{source}.{list}"),
            pattern: pattern.clone(),
            message: e.kind().to_string(),
        })?;
        builder.add(glob);
    }
    builder.build().map_err(|e| RuleError {
        source_name: format!("{source}.{list}"),
        pattern: patterns.join(", "),
        message: e.to_string(),
    })
}

impl CompiledRules {
    /// Compiles `rules`; `source` names them in errors and denials.
    pub fn compile(source: &str, rules: &ReviewRules) -> Result<Self, RuleError> {
        Ok(Self {
            source: source.to_string(),
            allow_set: build(source, "allow", &rules.allow)?,
            allow: rules.allow.clone(),
            deny_set: build(source, "deny", &rules.deny)?,
            deny: rules.deny.clone(),
        })
    }

    /// `None` if `tool` passes; otherwise the rule that refused it.
    pub fn refuse(&self, tool: &str) -> Option<String> {
        if let Some(i) = self.deny_set.matches(tool).first() {
            return Some(format!("{}.deny pattern `{}`", self.source, self.deny[*i]));
        }
        if !self.allow.is_empty() && !self.allow_set.is_match(tool) {
            return Some(format!(
                "{}.allow (the tool matches none of: {})",
                self.source,
                self.allow.join(", ")
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
}

impl Review {
    /// Compiles the review rules of `config`.
    pub fn from_config(config: &Config) -> Result<Self, RuleError> {
        let global = CompiledRules::compile("review", &config.review)?;
        let mut profiles = BTreeMap::new();
        for (name, rules) in &config.profiles {
            profiles.insert(
                name.clone(),
                CompiledRules::compile(&format!("profiles.{name}"), rules)?,
            );
        }
        Ok(Self { global, profiles })
    }

    /// A profile's rules.
    pub fn profile(&self, name: &str) -> Option<&CompiledRules> {
        self.profiles.get(name)
    }

    /// Profile names.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }

    /// `None` if `tool` is visible under the host rules and `profile`; else the rule.
    pub fn refuse(&self, tool: &str, profile: Option<&CompiledRules>) -> Option<String> {
        self.global
            .refuse(tool)
            .or_else(|| profile.and_then(|p| p.refuse(tool)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_wins_and_empty_allow_allows_all() {
        let rules = ReviewRules {
            allow: vec![],
            deny: vec!["workspace_*".into()],
        };
        let c = CompiledRules::compile("review", &rules).unwrap();
        assert_eq!(c.refuse("calculator"), None);
        assert_eq!(
            c.refuse("workspace_write").unwrap(),
            "review.deny pattern `workspace_*`"
        );

        let rules = ReviewRules {
            allow: vec!["calc*".into(), "text".into()],
            deny: vec!["text".into()],
        };
        let c = CompiledRules::compile("profiles.p", &rules).unwrap();
        assert_eq!(c.refuse("calculator"), None);
        assert!(c.refuse("text").unwrap().contains("deny"));
        assert!(c.refuse("crypto").unwrap().contains("profiles.p.allow"));
    }

    #[test]
    fn bad_glob_is_named() {
        let rules = ReviewRules {
            allow: vec!["a[".into()],
            deny: vec![],
        };
        let err = CompiledRules::compile("review", &rules)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("review.allow") && err.contains("`a[`"),
            "{err}"
        );
    }
}

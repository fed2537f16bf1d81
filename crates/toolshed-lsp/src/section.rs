//! `[lsp]` in the config: the plugin's own section ([`LspConfig`]), declared once, here,
//! and read by the host's config loader as a registered [`Section`]; and the [`Settings`]
//! the plugin works with, made from it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolshed_kit::section::{Section, SectionError};

use crate::languages::{LanguageOverride, Settings, languages_with};

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
    pub servers: BTreeMap<String, LanguageOverride>,
}

impl Default for LspConfig {
    fn default() -> Self {
        let defaults = Settings::new(PathBuf::new());
        Self {
            idle_timeout_secs: defaults.idle_timeout.as_secs(),
            request_timeout_secs: defaults.request_timeout.as_secs(),
            max_servers: defaults.max_servers as u64,
            servers: BTreeMap::new(),
        }
    }
}

impl Section for LspConfig {
    const NAME: &'static str = "lsp";
    const WIDENING: &'static [(&'static str, &'static str)] =
        &[("lsp", "chooses the programs run as language servers")];

    fn check(&self) -> Result<(), SectionError> {
        let invalid = |message: String| SectionError::new("lsp", message);
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

impl Settings {
    /// The settings `[lsp]` gives for `workspace` (its values checked at load).
    pub fn from_config(workspace: PathBuf, config: &LspConfig) -> Self {
        Self {
            workspace,
            languages: languages_with(&config.servers),
            idle_timeout: Duration::from_secs(config.idle_timeout_secs),
            request_timeout: Duration::from_secs(config.request_timeout_secs),
            max_servers: usize::try_from(config.max_servers).unwrap_or(usize::MAX),
            remote: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty `[lsp]` gives the plugin's defaults.
    #[test]
    fn an_empty_section_gives_the_defaults() {
        let workspace = PathBuf::from("/ws");
        assert_eq!(
            Settings::from_config(workspace.clone(), &LspConfig::default()),
            Settings::new(workspace)
        );
    }

    #[test]
    fn settings_that_cannot_work_are_named() {
        let zero = LspConfig {
            max_servers: 0,
            ..LspConfig::default()
        };
        assert!(zero.check().unwrap_err().message.contains("max_servers"));
        let mut empty = LspConfig::default();
        empty.servers.insert(
            "zig".into(),
            LanguageOverride {
                command: Some(vec![" ".into()]),
                ..LanguageOverride::default()
            },
        );
        assert!(empty.check().unwrap_err().message.contains("[lsp.zig]"));
        assert!(LspConfig::default().check().is_ok());
    }
}

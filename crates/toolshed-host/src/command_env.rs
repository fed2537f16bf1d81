//! The variables toolshed adds to the commands it runs, over the workspace's `.env`
//! layers ([`crate::env_overlay`]) and under a call's own `env`, later winning:
//!
//! 1. what plugins contribute: a manifest's `[capabilities.shell_env]`, once a person
//!    grants the plugin `shell-env`, while it runs and is not paused (a more trusted
//!    plugin's variable wins over a less trusted one's of the same name);
//! 2. the caller's session layer: variables an owner sets for its own commands through
//!    `PUT /env`, kept in memory until it clears them or the server stops.
//!
//! Neither is read unless a command starts ([`toolshed_core::CommandEnv`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use toolshed_core::{CommandEnvSource, OwnerId};

use crate::registry::Registry;

/// The most variables a plugin contributes, or an owner's session layer holds.
pub const MAX_VARS: usize = 64;

/// The longest value of a contributed or session variable, in characters.
pub const MAX_VALUE_CHARS: usize = 2048;

/// The most owners with a session layer at once.
pub const MAX_SESSIONS: usize = 4096;

/// Names a plugin may not contribute: they change how every program is loaded or how the
/// shell starts, or toolshed sets them itself. (An owner's session layer may set them: it
/// is the owner's own commands, as with `exec_command`'s `env`.)
const RESERVED: [&str; 17] = [
    "PATH",
    "HOME",
    "SHELL",
    "USER",
    "TERM",
    "IFS",
    "ENV",
    "BASH_ENV",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "NODE_OPTIONS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PERL5OPT",
    "RUBYOPT",
];

/// A variable a layer cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvLayerError {
    /// More variables than a layer holds.
    #[error("{0} variables were given; a layer holds at most {MAX_VARS}")]
    TooMany(usize),
    /// Not a variable name.
    #[error("`{0}` is not a variable name: use A-Z, a-z, 0-9 and `_`, not starting with a digit")]
    BadName(String),
    /// A name a plugin may not contribute.
    #[error(
        "`{0}` cannot be contributed: it changes how programs load or the shell starts, or \
         toolshed sets it; use a name of the plugin's own (e.g. `DSH_{0}`)"
    )]
    Reserved(String),
    /// A value too long, or with a NUL.
    #[error("the value of `{0}` is longer than {MAX_VALUE_CHARS} characters or holds a NUL")]
    BadValue(String),
    /// Too many owners hold a session layer.
    #[error("{MAX_SESSIONS} owners hold a session layer already; clear one (DELETE /env) first")]
    Full,
}

/// Checks the names and values of a layer.
fn check_vars(vars: &BTreeMap<String, String>) -> Result<(), EnvLayerError> {
    if vars.len() > MAX_VARS {
        return Err(EnvLayerError::TooMany(vars.len()));
    }
    for (name, value) in vars {
        if !is_name(name) {
            return Err(EnvLayerError::BadName(name.clone()));
        }
        if value.chars().count() > MAX_VALUE_CHARS || value.contains('\0') {
            return Err(EnvLayerError::BadValue(name.clone()));
        }
    }
    Ok(())
}

/// Whether `name` is a variable name ([`crate::env_overlay::is_variable_name`]) of at
/// most 128 bytes.
fn is_name(name: &str) -> bool {
    name.len() <= 128 && crate::env_overlay::is_variable_name(name)
}

/// Checks a manifest's `shell_env`; the error names the variable and the rule.
pub fn check_contributed(vars: &BTreeMap<String, String>) -> Result<(), EnvLayerError> {
    check_vars(vars)?;
    for name in vars.keys() {
        let upper = name.to_ascii_uppercase();
        if RESERVED.contains(&upper.as_str())
            || ["LD_", "DYLD_", "BASH_FUNC_"]
                .iter()
                .any(|p| upper.starts_with(p))
            || toolshed_ops::process::FIXED_ENV
                .iter()
                .any(|(n, _)| *n == upper)
        {
            return Err(EnvLayerError::Reserved(name.clone()));
        }
    }
    Ok(())
}

/// A variable a plugin contributes, as `doctor` and `GET /env` show it (no value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contributed {
    /// The variable.
    pub name: String,
    /// The plugin contributing it.
    pub plugin: String,
    /// Its value, `${plugin_dir}` expanded (never shown).
    #[serde(skip)]
    pub value: String,
}

/// The layers toolshed adds to commands: plugins' contributions and session layers.
pub struct CommandEnvLayers {
    registry: Arc<Registry>,
    sessions: Mutex<HashMap<String, BTreeMap<String, String>>>,
}

impl CommandEnvLayers {
    /// The layers over `registry`'s plugins, with no session layer yet.
    pub fn new(registry: Arc<Registry>) -> Self {
        Self {
            registry,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// What running plugins granted `shell-env` contribute now, in trust order.
    pub fn contributed(&self) -> Vec<Contributed> {
        self.registry.contributed_env()
    }

    /// Replaces `owner`'s session layer with `vars` (empty: clears it). Refused, naming
    /// the variable, for a bad name or a value too long, or when too many owners hold one.
    pub fn set_session(
        &self,
        owner: &OwnerId,
        vars: BTreeMap<String, String>,
    ) -> Result<(), EnvLayerError> {
        check_vars(&vars)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if vars.is_empty() {
            sessions.remove(&owner.0);
            return Ok(());
        }
        if !sessions.contains_key(&owner.0) && sessions.len() >= MAX_SESSIONS {
            return Err(EnvLayerError::Full);
        }
        sessions.insert(owner.0.clone(), vars);
        Ok(())
    }

    /// The names in `owner`'s session layer.
    pub fn session_names(&self, owner: &OwnerId) -> Vec<String> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions
            .get(&owner.0)
            .map(|vars| vars.keys().cloned().collect())
            .unwrap_or_default()
    }
}

impl CommandEnvSource for CommandEnvLayers {
    fn vars(&self, owner: &OwnerId) -> Vec<(String, String)> {
        let mut vars: Vec<(String, String)> = self
            .contributed()
            .into_iter()
            .map(|c| (c.name, c.value))
            .collect();
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(session) = sessions.get(&owner.0) {
            vars.extend(session.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contributions_keep_off_the_names_that_change_every_program() {
        let ok: BTreeMap<String, String> = [("DSH_NOTES_DIR".into(), "${plugin_dir}/n".into())]
            .into_iter()
            .collect();
        assert!(check_contributed(&ok).is_ok());
        for bad in ["PATH", "ld_preload", "BASH_ENV", "NO_COLOR", "1X", "A-B"] {
            let vars: BTreeMap<String, String> =
                [(bad.to_string(), "x".to_string())].into_iter().collect();
            assert!(check_contributed(&vars).is_err(), "{bad}");
        }
    }
}

//! [`JsLoader`]: builds JavaScript plugins from their directories.

use std::path::{Component, Path};
use std::sync::Arc;

use toolshed_core::{HttpClient, LoadRequest, Plugin, PluginError, PluginKind, PluginLoader};
use toolshed_ops::Services;

use crate::action::tool_prefix;
use crate::engine::HostAccess;
use crate::grants::Reach;
use crate::i18n::{language_from_env, language_of};
use crate::limits::JsLimits;
use crate::plugin::JsPlugin;
use crate::worker::{WorkerConfig, check_entry};

/// The entry file used when the manifest names none.
pub const DEFAULT_ENTRY: &str = "main.js";

/// Builds [`PluginKind::Js`] plugins. Loading only checks the entry file; the script runs
/// when the host calls the plugin's `init`.
///
/// A loader is built over the host's [`Services`]: what plugins are granted (`fs`, `http`)
/// goes through the services' files and HTTP client, nothing else.
///
/// ```
/// use toolshed_core::{PluginKind, PluginLoader};
/// use toolshed_js::{JsLimits, JsLoader};
/// use toolshed_ops::{Ops, Services};
/// let services = Services::new(Ops::memory());
/// let loader = JsLoader::new(&services).with_limits(JsLimits { max_actions: 16, ..JsLimits::default() });
/// assert_eq!(loader.kind(), PluginKind::Js);
/// ```
#[derive(Debug, Clone)]
pub struct JsLoader {
    limits: JsLimits,
    language: Option<String>,
    access: HostAccess,
    /// The workspace's `.env` variables, for the env contract's values.
    env_files: Arc<std::collections::BTreeMap<String, String>>,
}

impl JsLoader {
    /// A loader over `services` giving every plugin the default limits. The language for
    /// `t()` comes from `TOOLSHED_LANG` or `LANG`, read at each load.
    pub fn new(services: &Services) -> Self {
        Self {
            limits: JsLimits::default(),
            language: None,
            env_files: services.env_files.clone(),
            access: HostAccess {
                files: services.ops.files.clone(),
                http: services.net.clone(),
                notices: services.notices.clone(),
                processes: services.ops.process.clone(),
            },
        }
    }

    /// Gives every plugin these limits.
    pub fn with_limits(mut self, limits: JsLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sends plugins' HTTP requests through `http` instead of the services' client (an
    /// embedder's own client; tests that record requests).
    pub fn with_http(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.access.http = http;
        self
    }

    /// Uses this language for `t()` instead of the environment's (a tag such as `zh`,
    /// `zh_CN.UTF-8` or `en-US`; only the primary subtag counts).
    pub fn with_language(mut self, language: impl AsRef<str>) -> Self {
        self.language = language_of(language.as_ref());
        self
    }

    /// The limits given to plugins.
    pub fn limits(&self) -> &JsLimits {
        &self.limits
    }
}

impl PluginLoader for JsLoader {
    fn kind(&self) -> PluginKind {
        PluginKind::Js
    }

    /// A runtime and a thread per plugin cost a process about 0.7 MB each, for plugins most
    /// sessions never call: once activation has told the host their tools, they stop until
    /// a call needs them.
    fn parks_after_recording(&self) -> bool {
        true
    }

    /// `t()` translates the tools' descriptions into the language of the moment.
    fn record_variant(&self) -> String {
        self.language.clone().unwrap_or_else(language_from_env)
    }

    fn load(&self, request: LoadRequest) -> Result<Arc<dyn Plugin>, PluginError> {
        let LoadRequest {
            manifest,
            dir,
            config,
            grants,
        } = request;
        let id = manifest.id.clone();
        let fail = |why: String| PluginError(format!("plugin `{id}`: {why}"));
        if manifest.kind != PluginKind::Js {
            return Err(fail(format!(
                "is of kind `{}`, not `js`",
                manifest.kind.as_str()
            )));
        }
        // A plugin made only of parts for another host's window (Agent Spaces' `client`
        // and `view`) has nothing to run here: it is listed, with no tools.
        if manifest.entry.is_none()
            && !manifest.client.is_empty()
            && !dir.join(DEFAULT_ENTRY).is_file()
        {
            return Ok(Arc::new(toolshed_core::BuiltinPlugin::new(
                manifest,
                Vec::new(),
            )));
        }
        let entry = manifest
            .entry
            .clone()
            .unwrap_or_else(|| DEFAULT_ENTRY.into());
        let entry = check_entry_name(&entry).map_err(&fail)?;
        check_entry(&dir, &entry).map_err(&fail)?;
        let limits = &self.limits;
        check_limits(&self.limits).map_err(&fail)?;
        let prefix = tool_prefix(&id);
        let language = self.language.clone().unwrap_or_else(language_from_env);
        let reach = Arc::new(Reach::new(&id, &manifest.capabilities, &grants));
        let node = toolshed_core::runtime::needs_node(&dir);
        if let Some(why) = &node {
            tracing::debug!(plugin = %id, reason = %why, "the plugin runs in Node.js");
        }
        let worker = WorkerConfig {
            plugin_id: id.clone(),
            version: manifest.version.clone(),
            prefix,
            plane: manifest.plane,
            catalog: manifest.tools.clone(),
            dir,
            entry,
            source: None,
            config,
            language,
            limits: limits.clone(),
            reach,
            access: self.access.clone(),
            context_first: manifest.dialect.as_deref() == Some("agent-spaces"),
            node,
            // Only the variables a person granted (`plugins grant ID env:NAME`): a
            // manifest naming one is not enough to read the host's secrets.
            env: manifest
                .env
                .iter()
                .filter(|var| grants.env.contains(&var.name))
                .filter_map(|var| {
                    let value = std::env::var(&var.name)
                        .ok()
                        .or_else(|| self.env_files.get(&var.name).cloned())?;
                    Some((var.name.clone(), value))
                })
                .collect(),
        };
        Ok(Arc::new(JsPlugin::new(manifest, worker)))
    }
}

/// Limits that would make every plugin fail are a configuration mistake.
fn check_limits(limits: &JsLimits) -> Result<(), String> {
    if limits.memory_bytes < 1024 * 1024 || limits.stack_bytes < 64 * 1024 {
        return Err(
            "the JavaScript limits are too small: give at least 1 MiB of memory and 64 KiB of stack".into(),
        );
    }
    if limits.cpu_per_call.is_zero()
        || limits.activate_timeout.is_zero()
        || limits.max_actions == 0
        || limits.max_output_bytes == 0
        || limits.max_queued_calls == 0
    {
        return Err("the JavaScript limits must all be above zero".into());
    }
    Ok(())
}

/// The entry must be a relative path inside the plugin directory, without `..`. Returns it
/// with `.` parts dropped (`./main.js` → `main.js`), as it appears in stack traces.
fn check_entry_name(entry: &str) -> Result<String, String> {
    let path = Path::new(entry);
    if entry.is_empty() || entry.contains('\0') {
        return Err("the manifest's `entry` is empty or malformed".into());
    }
    let mut parts = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            Component::ParentDir => {
                return Err(format!(
                    "the entry `{entry}` uses `..`; it must be a file inside the plugin directory"
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "the entry `{entry}` is absolute; give a path relative to the plugin directory"
                ));
            }
        }
    }
    if parts.is_empty() {
        return Err("the manifest's `entry` names no file".into());
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_stay_inside_the_plugin() {
        assert_eq!(check_entry_name("./main.js").unwrap(), "main.js");
        assert!(check_entry_name("src/index.js").is_ok());
        assert!(check_entry_name("../main.js").is_err());
        assert!(check_entry_name("a/../../b.js").is_err());
        assert!(check_entry_name("/etc/passwd").is_err());
        assert!(check_entry_name("").is_err());
    }
}

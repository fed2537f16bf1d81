//! The catalog: every callable tool by name, rebuilt whenever a plugin starts or stops.
//!
//! Calls resolve their tool here, so lookups are map reads keyed by tool name, never a
//! scan of the plugins. The catalog is rebuilt from the plugins in trust order, so when two
//! plugins claim one tool name the more trusted one keeps it, and the clash is a diagnostic
//! from the moment it is found rather than a surprise at call time.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use toolshed_core::{Tool, ToolSpec};

use super::Registry;
use super::discovery::{Diagnostic, Level};
use super::state::{Phase, PluginState, Slot};

/// A tool's input schema, compiled the first time a call needs it. Compiling a schema
/// (which meta-validates it) is most of the cost of indexing a tool, and most tools of a
/// session are never called: doing it lazily keeps it out of start-up. Schemas from
/// manifest files were compiled once already when the manifest was read (so a broken one
/// is reported at discovery); those of built-in and JavaScript plugins are made by
/// toolshed and tested. The schema is read from the tool when compiled, not copied: the
/// catalog's schemas are a good part of a server's heap.
pub struct LazyValidator {
    tool: Arc<dyn Tool>,
    compiled: OnceLock<Result<jsonschema::Validator, String>>,
}

impl LazyValidator {
    /// A validator for `tool`'s input schema, not compiled yet.
    pub fn new(tool: Arc<dyn Tool>) -> Self {
        Self {
            tool,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled schema, or why it does not compile.
    pub fn get(&self) -> Result<&jsonschema::Validator, &str> {
        self.compiled
            .get_or_init(|| {
                jsonschema::validator_for(&self.tool.spec().input_schema).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// A registered, callable tool.
#[derive(Clone)]
pub struct ToolEntry {
    /// The plugin that provides it.
    pub plugin_id: String,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Its input schema, compiled when first needed.
    pub validator: Arc<LazyValidator>,
    /// Set when the plugin is degraded: what is missing, and the variables to set.
    pub unconfigured: Option<(String, Vec<String>)>,
}

impl ToolEntry {
    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }
}

/// The tool index.
#[derive(Default)]
pub(super) struct Catalog {
    /// Callable tools by name (sorted, as listings show them).
    tools: BTreeMap<String, ToolEntry>,
    /// Tools that plugins list but cannot serve now (disabled, failed, not started), by
    /// name: the id of the most trusted such plugin.
    offline: HashMap<String, String>,
    /// Tool names claimed twice.
    clashes: Vec<Diagnostic>,
}

impl Catalog {
    /// The catalog of the running and degraded plugins among `slots`, taken in trust order.
    /// Fills in each running plugin's validators for tools that have none yet.
    pub(super) fn build(slots: &mut [Slot]) -> Self {
        let mut catalog = Self::default();
        for slot in slots {
            let id = slot.manifest.id.clone();
            let running = match &mut slot.phase {
                Phase::Running(running) if !running.paused => running,
                _ => {
                    let listed = slot.manifest.tools.iter().map(|t| &t.name);
                    for name in listed.chain(&slot.last_tools) {
                        catalog
                            .offline
                            .entry(name.clone())
                            .or_insert_with(|| id.clone());
                    }
                    // A paused plugin's tools are those it serves.
                    if let Phase::Running(paused) = &slot.phase {
                        for tool in paused.plugin.tools() {
                            catalog
                                .offline
                                .entry(tool.spec().name.clone())
                                .or_insert_with(|| id.clone());
                        }
                    }
                    continue;
                }
            };
            let unconfigured = running
                .unmet
                .as_ref()
                .filter(|u| u.blocks_tools)
                .map(|u| (u.reason.clone(), u.missing_env.clone()));
            for tool in running.plugin.tools() {
                let name = tool.spec().name.clone();
                if let Some(existing) = catalog.tools.get(&name) {
                    let manifest_path = slot.origin.dir().map(|d| d.manifest_path.clone());
                    catalog.clashes.push(Diagnostic {
                        level: Level::Error,
                        path: manifest_path,
                        field: Some("tools".into()),
                        problem: format!(
                            "tool `{name}` of plugin `{id}` clashes with the tool of the same name from plugin `{}`, which is more trusted; it is not registered. Rename it",
                            existing.plugin_id
                        ),
                        plugin_id: Some(id.clone()),
                    });
                    continue;
                }
                let validator = running
                    .validators
                    .entry(name.clone())
                    .or_insert_with(|| Arc::new(LazyValidator::new(tool.clone())))
                    .clone();
                catalog.tools.insert(
                    name,
                    ToolEntry {
                        plugin_id: id.clone(),
                        tool,
                        validator,
                        unconfigured: unconfigured.clone(),
                    },
                );
            }
        }
        catalog
    }

    /// Tool names claimed twice, as diagnostics.
    pub(super) fn clashes(&self) -> &[Diagnostic] {
        &self.clashes
    }
}

impl Registry {
    /// Rebuilds the tool index from the running and degraded plugins, in trust order, and
    /// wakes [`Registry::catalog_changes`].
    pub(super) fn reindex(&self) {
        self.write(|inner| inner.catalog = Catalog::build(&mut inner.slots));
        self.catalog_generation
            .send_modify(|generation| *generation += 1);
    }

    /// Wakes its holder each time the tool index is rebuilt (a plugin enabled, disabled,
    /// installed or reloaded). Several rebuilds in a row may wake it once; the holder
    /// compares what it sees to decide whether anything changed for it.
    pub fn catalog_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.catalog_generation.subscribe()
    }

    /// The registered tool named `name`.
    pub fn lookup(&self, name: &str) -> Option<ToolEntry> {
        self.read(|i| i.catalog.tools.get(name).cloned())
    }

    /// The size limits the tool `name` declares on its arguments
    /// ([`toolshed_core::ToolSpec::max_argument_bytes`]); `None` for a tool without any
    /// (or no such tool): what a door checks a large request's text against.
    pub fn argument_limits(&self, name: &str) -> Option<std::collections::BTreeMap<String, usize>> {
        self.read(|i| {
            let limits = &i.catalog.tools.get(name)?.spec().max_argument_bytes;
            (!limits.is_empty()).then(|| limits.clone())
        })
    }

    /// Every registered tool, sorted by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.read(|i| i.catalog.tools.values().cloned().collect())
    }

    /// Every registered tool name, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.read(|i| i.catalog.tools.keys().cloned().collect())
    }

    /// The plugin that lists `tool` (in its manifest, or among the tools it served when it
    /// last ran) but cannot serve it now, with its state and reason.
    pub fn unavailable_tool(&self, tool: &str) -> Option<(String, PluginState, Option<String>)> {
        self.read(|i| {
            let id = i.catalog.offline.get(tool)?;
            let slot = i
                .slot(id)
                .filter(|s| s.running().is_none_or(|r| r.paused))?;
            Some((id.clone(), slot.state(), slot.reason()))
        })
    }
}

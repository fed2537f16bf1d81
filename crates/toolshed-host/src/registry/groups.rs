//! The operator groups of a set of tools, each with its label and description: from the
//! manifest of a plugin whose tools are in it (`groups`), else toolshed's own description
//! of the group ([`toolshed_core::groups::builtin_group`]), else just its name.

use std::collections::BTreeMap;

use serde::Serialize;
use toolshed_core::groups::{GroupText, builtin_group};

use super::{Registry, ToolEntry};

/// One group as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolGroup {
    /// The group's name, as tools name it.
    pub name: String,
    /// A short label for people.
    pub label: String,
    /// What its tools are for ("" when nobody described it).
    pub description: String,
    /// Its tools among those asked about, sorted.
    pub tools: Vec<String>,
}

impl Registry {
    /// The groups of `tools`, sorted by name.
    pub fn groups(&self, tools: &[ToolEntry]) -> Vec<ToolGroup> {
        let mut by_name: BTreeMap<&str, Vec<&ToolEntry>> = BTreeMap::new();
        for entry in tools {
            by_name.entry(&entry.spec().group).or_default().push(entry);
        }
        by_name
            .into_iter()
            .map(|(name, entries)| {
                let text = self.group_text(name, &entries);
                let mut names: Vec<String> =
                    entries.iter().map(|e| e.spec().name.clone()).collect();
                names.sort();
                ToolGroup {
                    name: name.to_string(),
                    label: text
                        .as_ref()
                        .map_or_else(|| name.to_string(), |t| t.label.clone()),
                    description: text.map(|t| t.description).unwrap_or_default(),
                    tools: names,
                }
            })
            .collect()
    }

    /// The label and description of group `name`, of which `entries` are tools.
    fn group_text(&self, name: &str, entries: &[&ToolEntry]) -> Option<GroupText> {
        let mut plugins: Vec<&str> = entries.iter().map(|e| e.plugin_id.as_str()).collect();
        plugins.dedup();
        self.read(|i| {
            plugins.iter().find_map(|id| {
                i.slot(id)
                    .and_then(|slot| slot.manifest.groups.get(name).cloned())
            })
        })
        .or_else(|| builtin_group(name))
    }
}

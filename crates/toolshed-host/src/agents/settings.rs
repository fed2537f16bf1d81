//! `[orchestration]` (the limits of the agent tools) and `[[agents]]` (named presets).

use serde::{Deserialize, Serialize};

use crate::section::SectionError;
pub use toolshed_core::AgentPreset;

/// `[orchestration]`: how far the agent tools may go, per owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrchestrationConfig {
    /// How deep `agent_run` may nest: 1 lets an agent start subagents of its own, never
    /// theirs; the caller of the first `agent_run` is depth 0.
    pub max_depth: u32,
    /// The most `agent_run`s one owner (its sub-owners counted as it) has running at once.
    pub max_running_per_owner: usize,
    /// The steps (model turns) a run takes when it names none.
    pub default_steps: u32,
    /// The most steps a run may ask for.
    pub max_steps: u32,
    /// The most items one todo list holds.
    pub max_todo_items: usize,
    /// The most schedules one owner keeps.
    pub max_schedules_per_owner: usize,
    /// The shortest gap between two runs of one schedule, in seconds.
    pub min_schedule_interval_secs: u64,
    /// The folder of workflow files, relative to the workspace.
    pub workflows_dir: String,
}

impl Default for OrchestrationConfig {
    fn default() -> Self {
        Self {
            max_depth: 2,
            max_running_per_owner: 4,
            default_steps: 20,
            max_steps: 100,
            max_todo_items: 200,
            max_schedules_per_owner: 50,
            min_schedule_interval_secs: 60,
            workflows_dir: ".toolshed/workflows".into(),
        }
    }
}

impl OrchestrationConfig {
    /// Refuses settings that cannot work, naming them.
    pub(crate) fn check(&self) -> Result<(), SectionError> {
        let invalid = |message: String| SectionError::new("orchestration", message);
        if self.max_running_per_owner == 0
            || self.default_steps == 0
            || self.max_steps == 0
            || self.max_todo_items == 0
            || self.max_schedules_per_owner == 0
        {
            return Err(invalid(
                "[orchestration] max_running_per_owner, default_steps, max_steps, \
                 max_todo_items and max_schedules_per_owner must be at least 1"
                    .into(),
            ));
        }
        if self.default_steps > self.max_steps {
            return Err(invalid(format!(
                "[orchestration] default_steps = {} is more than max_steps = {}",
                self.default_steps, self.max_steps
            )));
        }
        if self.min_schedule_interval_secs < 60 {
            return Err(invalid(format!(
                "[orchestration] min_schedule_interval_secs = {} is below 60: schedules fire \
                 at most once a minute",
                self.min_schedule_interval_secs
            )));
        }
        let dir = std::path::Path::new(&self.workflows_dir);
        if dir.is_absolute()
            || dir
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(invalid(format!(
                "[orchestration] workflows_dir = `{}` must be a path inside the workspace \
                 (relative, without `..`)",
                self.workflows_dir
            )));
        }
        Ok(())
    }
}

/// Checks the presets of the configuration: names well formed and unique, fields in range.
pub(crate) fn check_presets(presets: &[AgentPreset], max_steps: u32) -> Result<(), SectionError> {
    let invalid = |message: String| SectionError::new("agents", message);
    let mut seen = std::collections::BTreeSet::new();
    for (i, preset) in presets.iter().enumerate() {
        let name = &preset.name;
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        {
            return Err(invalid(format!(
                "[[agents]] #{} name = `{name}`: use 1 to 64 lowercase letters, digits, `-` \
                 and `_` (e.g. `reviewer`)",
                i + 1
            )));
        }
        if !seen.insert(name.clone()) {
            return Err(invalid(format!(
                "[[agents]] name = `{name}` is defined twice; give each preset its own name"
            )));
        }
        if preset.description.trim().is_empty() || preset.description.len() > 1000 {
            return Err(invalid(format!(
                "[[agents]] `{name}`: description must say what the preset is for, in at most \
                 1000 bytes"
            )));
        }
        if preset.max_steps.is_some_and(|n| n == 0 || n > max_steps) {
            return Err(invalid(format!(
                "[[agents]] `{name}`: max_steps must be 1 to [orchestration] max_steps = \
                 {max_steps}"
            )));
        }
        if preset.system.as_ref().is_some_and(|s| s.len() > 64 * 1024) {
            return Err(invalid(format!(
                "[[agents]] `{name}`: system is over 64 KiB; keep instructions shorter"
            )));
        }
        crate::review::CompiledRules::allow_only(
            &format!("agents.{name}.tools"),
            preset.tools.clone(),
        )
        .map_err(|e| invalid(e.to_string()))?;
    }
    Ok(())
}

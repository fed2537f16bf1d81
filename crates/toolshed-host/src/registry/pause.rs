//! Pausing: a person keeps a running plugin loaded — its processes, sessions and state —
//! while its calls are refused with the reason, until it is resumed (Cyrene's `paused`
//! state). The choice is kept in the state store, so it holds across a restart and reaches
//! a server from `toolshed plugins pause` run beside it.

use std::collections::BTreeSet;

use super::Registry;
use super::lifecycle::RegistryError;
use super::state::{Phase, PluginInfo, PluginState};
use crate::events::Event;

impl Registry {
    /// Pauses (or resumes) a running plugin, records the choice and updates the tool index.
    pub async fn set_paused(&self, id: &str, paused: bool) -> Result<PluginInfo, RegistryError> {
        let info = self.known(id)?;
        let _lifecycle = self.lifecycle.lock().await;
        match (info.state, paused) {
            (PluginState::Running | PluginState::Degraded, true) | (PluginState::Paused, false) => {
            }
            (PluginState::Paused, true) => {
                return Err(RegistryError::Conflict(format!(
                    "plugin `{id}` is paused already; `toolshed plugins resume {id}` lets its calls through again"
                )));
            }
            (PluginState::Running | PluginState::Degraded, false) => {
                return Err(RegistryError::Conflict(format!(
                    "plugin `{id}` is not paused: it is {}",
                    info.state.as_str()
                )));
            }
            (state, _) => {
                return Err(RegistryError::Conflict(format!(
                    "plugin `{id}` is {}, not running: only a running plugin can be paused or resumed{}",
                    state.as_str(),
                    if state == PluginState::Disabled {
                        format!(" (`toolshed plugins enable {id}` starts it)")
                    } else {
                        String::new()
                    }
                )));
            }
        }
        let owned = id.to_string();
        self.on_store(move |s| s.set_plugin_paused(&owned, paused))
            .await?;
        let before = self.seen(id);
        self.mark_paused(id, paused);
        self.reindex();
        self.publish_change(id, before);
        self.known(id)
    }

    /// Sets the paused mark of every running plugin to what `paused` says; returns the
    /// plugins whose mark changed, with their state-change events (for a caller that
    /// rebuilds the index first).
    pub(super) fn apply_paused(&self, paused: &BTreeSet<String>) -> Vec<(String, Option<Event>)> {
        let differing: Vec<(String, bool)> = self.read(|i| {
            i.slots
                .iter()
                .filter_map(|s| {
                    let running = s.running()?;
                    let want = paused.contains(s.id());
                    (running.paused != want).then(|| (s.id().to_string(), want))
                })
                .collect()
        });
        differing
            .into_iter()
            .map(|(id, want)| {
                let before = self.seen(&id);
                self.mark_paused(&id, want);
                let event = self.change_since(&id, before);
                (id, event)
            })
            .collect()
    }

    fn mark_paused(&self, id: &str, paused: bool) {
        self.write(|i| {
            if let Some(slot) = i.slot_mut(id)
                && let Phase::Running(running) = &mut slot.phase
            {
                running.paused = paused;
            }
        });
    }
}

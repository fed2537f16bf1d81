//! What running plugins contribute to the commands toolshed runs (`shell_env`, granted
//! `shell-env`): read from the slots, so asking costs no store read.

use super::Registry;
use super::state::Phase;
use crate::command_env::Contributed;

impl Registry {
    /// The variables of running, unpaused plugins granted `shell-env`, in trust order; a
    /// name a more trusted plugin contributes is not taken from a less trusted one.
    /// `${plugin_dir}` in a value stands for the plugin's directory.
    pub fn contributed_env(&self) -> Vec<Contributed> {
        self.read(|i| {
            let mut out: Vec<Contributed> = Vec::new();
            for slot in &i.slots {
                let Phase::Running(running) = &slot.phase else {
                    continue;
                };
                let granted = running.loaded.as_ref().is_some_and(|l| l.grants.shell_env);
                if running.paused || !granted {
                    continue;
                }
                let dir = slot.dir().map(|d| d.to_string_lossy().into_owned());
                for (name, value) in &slot.manifest.capabilities.shell_env {
                    if out.iter().any(|c| &c.name == name) {
                        continue;
                    }
                    let value = match &dir {
                        Some(dir) => value.replace("${plugin_dir}", dir),
                        None => value.clone(),
                    };
                    out.push(Contributed {
                        name: name.clone(),
                        plugin: slot.id().to_string(),
                        value,
                    });
                }
            }
            out
        })
    }
}

//! What the store keeps of each plugin: whether a person enabled it, its config values
//! (secrets sealed), the tools it declared when last loaded, and its grants.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};
use toolshed_core::ToolSpec;

use crate::secrets;

use super::db::args;
use super::{StateStore, StoreError, now_ms};

impl StateStore {
    /// Whether the plugin was enabled or disabled by a person; `None` if never set.
    pub fn plugin_enabled(&self, plugin_id: &str) -> Result<Option<bool>, StoreError> {
        self.db(|db| {
            db.query_opt(
                "SELECT enabled FROM plugin_state WHERE plugin_id = ?1",
                args![plugin_id],
            )?
            .map(|r| r.bool(0))
            .transpose()
        })
    }

    /// Every plugin's recorded enabled state, by plugin id (plugins never set are absent).
    pub fn plugin_states(&self) -> Result<BTreeMap<String, bool>, StoreError> {
        self.db(|db| {
            db.query("SELECT plugin_id, enabled FROM plugin_state", args![])?
                .iter()
                .map(|r| Ok((r.text(0)?, r.bool(1)?)))
                .collect()
        })
    }

    /// Forgets everything stored about a plugin: its enabled state, config values and grants.
    pub fn forget_plugin(&self, plugin_id: &str) -> Result<(), StoreError> {
        self.tx(|db| {
            for table in [
                "plugin_state",
                "config_values",
                "plugin_grants",
                "plugin_tools",
                "plugin_installs",
            ] {
                db.execute(
                    &format!("DELETE FROM {table} WHERE plugin_id = ?1"),
                    args![plugin_id],
                )?;
            }
            Ok(())
        })?;
        self.cached_config(|cache| cache.remove(plugin_id));
        self.mark_changed();
        Ok(())
    }

    /// Records that the plugin is enabled or disabled.
    pub fn set_plugin_enabled(&self, plugin_id: &str, enabled: bool) -> Result<(), StoreError> {
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_state (plugin_id, enabled, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (plugin_id) DO UPDATE SET enabled = excluded.enabled,
                 updated_at = excluded.updated_at",
                args![plugin_id, enabled, now_ms()],
            )?;
            Ok(())
        })?;
        self.mark_changed();
        Ok(())
    }

    /// Records that a person paused (or resumed) the plugin: it stays loaded, its calls
    /// refused. A plugin paused is an enabled one.
    pub fn set_plugin_paused(&self, plugin_id: &str, paused: bool) -> Result<(), StoreError> {
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_state (plugin_id, enabled, paused, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (plugin_id) DO UPDATE SET paused = excluded.paused,
                 updated_at = excluded.updated_at",
                args![plugin_id, true, paused, now_ms()],
            )?;
            Ok(())
        })?;
        self.mark_changed();
        Ok(())
    }

    /// The plugins a person paused.
    pub fn paused_plugins(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        self.db(|db| {
            db.query(
                "SELECT plugin_id FROM plugin_state WHERE paused = 1",
                args![],
            )?
            .iter()
            .map(|r| r.text(0))
            .collect()
        })
    }

    /// The stored config values of a plugin (secrets included: callers must not list them).
    pub fn config_values(&self, plugin_id: &str) -> Result<Map<String, Value>, StoreError> {
        if let Some(values) = self.cached_config(|cache| cache.get(plugin_id).cloned()) {
            return Ok(values);
        }
        let values = self.db(|db| {
            let rows = db.query(
                "SELECT key, value FROM config_values WHERE plugin_id = ?1 ORDER BY key",
                args![plugin_id],
            )?;
            let mut map = Map::new();
            for row in rows {
                let (key, raw) = (row.text(0)?, row.text(1)?);
                let raw = if raw.starts_with(secrets::PREFIX) {
                    match self.secrets.open(&secrets::slot(plugin_id, &key), &raw) {
                        Some(plain) => plain,
                        None => {
                            tracing::warn!(
                                plugin = plugin_id,
                                key = key.as_str(),
                                "a stored secret does not open with this data dir's \
                                 secret.key; set it again"
                            );
                            continue;
                        }
                    }
                } else {
                    raw
                };
                map.insert(
                    key,
                    serde_json::from_str(&raw).unwrap_or(Value::String(raw)),
                );
            }
            Ok(map)
        })?;
        self.cached_config(|cache| cache.insert(plugin_id.to_string(), values.clone()));
        Ok(values)
    }

    fn cached_config<T>(&self, f: impl FnOnce(&mut HashMap<String, Map<String, Value>>) -> T) -> T {
        f(&mut self.config_cache.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Forgets the config values kept in memory, so that the next read sees what other
    /// processes stored since.
    pub fn forget_config_values(&self) {
        self.cached_config(HashMap::clear);
    }

    /// Stores one config value.
    pub fn set_config_value(
        &self,
        plugin_id: &str,
        key: &str,
        value: &Value,
        secret: bool,
    ) -> Result<(), StoreError> {
        let stored = if secret {
            self.secrets
                .seal(&secrets::slot(plugin_id, key), &value.to_string())
                .map_err(|message| StoreError::Open {
                    path: self.path.clone(),
                    message,
                })?
        } else {
            value.to_string()
        };
        self.db(|db| {
            db.execute(
                "INSERT INTO config_values (plugin_id, key, value, secret, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (plugin_id, key) DO UPDATE SET value = excluded.value,
                 secret = excluded.secret, updated_at = excluded.updated_at",
                args![plugin_id, key, stored, secret, now_ms()],
            )?;
            Ok(())
        })?;
        self.cached_config(|cache| cache.remove(plugin_id));
        self.mark_changed();
        Ok(())
    }

    /// The tool specs each sandboxed plugin registered when its code last ran, with the
    /// key of what it was loaded from (files, version, config), by plugin id. A later
    /// process lists those tools without running the code until a call needs it, and a
    /// disabled or failed plugin's tools are still known.
    pub fn plugin_tools(&self) -> Result<BTreeMap<String, (String, Vec<ToolSpec>)>, StoreError> {
        self.db(|db| {
            let rows = db.query(
                "SELECT plugin_id, load_key, specs FROM plugin_tools",
                args![],
            )?;
            let mut map = BTreeMap::new();
            for row in rows {
                let (id, key, specs) = (row.text(0)?, row.text(1)?, row.text(2)?);
                // A row an older toolshed wrote in another shape is simply not used.
                if let Ok(specs) = serde_json::from_str(&specs) {
                    map.insert(id, (key, specs));
                }
            }
            Ok(map)
        })
    }

    /// Records the tool specs a sandboxed plugin registered, and the key it was loaded from.
    pub fn set_plugin_tools(
        &self,
        plugin_id: &str,
        load_key: &str,
        specs: &[ToolSpec],
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(specs).unwrap_or_else(|_| "[]".into());
        self.db(|db| {
            db.execute(
                "INSERT INTO plugin_tools (plugin_id, load_key, specs, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (plugin_id) DO UPDATE SET load_key = excluded.load_key,
                 specs = excluded.specs, updated_at = excluded.updated_at",
                args![plugin_id, load_key, text, now_ms()],
            )?;
            Ok(())
        })
    }

    /// The capabilities granted to a plugin, as stored (`http:HOST`, `fs-read:PATH`, ...),
    /// sorted.
    pub fn grants(&self, plugin_id: &str) -> Result<Vec<String>, StoreError> {
        self.db(|db| {
            db.query(
                "SELECT \"grant\" FROM plugin_grants WHERE plugin_id = ?1 ORDER BY \"grant\"",
                args![plugin_id],
            )?
            .iter()
            .map(|r| r.text(0))
            .collect()
        })
    }

    /// Every plugin's grants, by plugin id (plugins without grants are absent).
    pub fn all_grants(&self) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        self.db(|db| {
            let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for row in db.query(
                "SELECT plugin_id, \"grant\" FROM plugin_grants ORDER BY plugin_id, \"grant\"",
                args![],
            )? {
                map.entry(row.text(0)?).or_default().push(row.text(1)?);
            }
            Ok(map)
        })
    }

    /// Adds and removes grants of a plugin in one transaction.
    pub fn change_grants(
        &self,
        plugin_id: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<(), StoreError> {
        self.tx(|db| {
            for grant in remove {
                db.execute(
                    "DELETE FROM plugin_grants WHERE plugin_id = ?1 AND \"grant\" = ?2",
                    args![plugin_id, grant],
                )?;
            }
            for grant in add {
                db.execute(
                    "INSERT INTO plugin_grants (plugin_id, \"grant\", updated_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (plugin_id, \"grant\") DO UPDATE SET updated_at = excluded.updated_at",
                    args![plugin_id, grant, now_ms()],
                )?;
            }
            Ok(())
        })?;
        self.mark_changed();
        Ok(())
    }
}

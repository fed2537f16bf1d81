//! `[memory]`: the memory tools' own section of the configuration.

use serde::{Deserialize, Serialize};

/// `[memory]`: limits and sharing of the memory tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryConfig {
    /// The time zone of the daily journal's dates (IANA, e.g. `Europe/Paris`); the
    /// system's when left out.
    pub time_zone: Option<String>,
    /// The largest memory, in bytes of text.
    pub max_bytes: u64,
    /// The most bytes of text one owner may keep (deleted and archived memories count
    /// until they are purged).
    pub max_owner_bytes: u64,
    /// Namespaces every owner reads and writes (widens access: honoured only in your own
    /// config).
    pub shared_namespaces: Vec<String>,
    /// How long a deleted memory can be restored before it is purged.
    pub deleted_days: u64,
    /// The most bytes of memories one compaction gathers for a summary.
    pub compact_bytes: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            time_zone: None,
            max_bytes: 32 * 1024,
            max_owner_bytes: 64 * 1024 * 1024,
            shared_namespaces: Vec::new(),
            deleted_days: 30,
            compact_bytes: 32 * 1024,
        }
    }
}

impl MemoryConfig {
    /// These limits with compaction gathering no more than fits in a reply under the
    /// per-call ceiling `max_output_bytes` (`[limits]`), with room for each memory's
    /// heading: material cut by the ceiling would be summarised without being read.
    pub fn within_reply(mut self, max_output_bytes: u64) -> Self {
        self.compact_bytes = self.compact_bytes.min(max_output_bytes / 5 * 4);
        self
    }

    /// Refuses limits that cannot work, naming the setting.
    pub(crate) fn check(&self) -> std::result::Result<(), crate::section::SectionError> {
        let invalid = |message: String| crate::section::SectionError::new("memory", message);
        if self.max_bytes == 0 || self.compact_bytes == 0 {
            return Err(invalid(
                "[memory] max_bytes and compact_bytes must be at least 1 byte".into(),
            ));
        }
        if let Some(name) = &self.time_zone
            && let Err(e) = jiff::tz::TimeZone::get(name)
        {
            return Err(invalid(format!(
                "[memory] time_zone `{name}` is not a time zone ({e}); use an IANA name such as \
                 Europe/Paris"
            )));
        }
        Ok(())
    }
}

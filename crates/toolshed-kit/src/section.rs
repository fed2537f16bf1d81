//! A section of the configuration that belongs to a feature above the host: the feature
//! declares its table (`[browser]`, `[lsp]`) as a type, with its defaults, the checks of
//! its values and the settings that widen access, once, in its own crate. The host's config
//! loader reads, narrows, merges and reports it like its own sections without knowing it:
//! the binary registers each section it was built with.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A setting of one section that cannot work, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SectionError {
    /// The section: `memory`, `llm`.
    pub section: &'static str,
    /// What is wrong, naming the key and the fix.
    pub message: String,
}

impl SectionError {
    /// A problem with `section`.
    pub fn new(section: &'static str, message: impl Into<String>) -> Self {
        Self {
            section,
            message: message.into(),
        }
    }
}

/// One table of the configuration, owned by the feature that reads it.
///
/// It deserializes from its table of the merged document with `#[serde(default)]` (a
/// missing key is its default), and serializes to what `toolshed config show` lists.
pub trait Section: Default + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The table's name: `browser` for `[browser]`.
    const NAME: &'static str;
    /// Its settings that widen what agents may do, as (dotted key from the document's
    /// root, why): ignored in a workspace's own file unless the user trusts it, and
    /// reported by `toolshed doctor` wherever they are set. A table's key covers all of it.
    const WIDENING: &'static [(&'static str, &'static str)] = &[];
    /// Its part of the commented starter config (`toolshed config init`): the table's
    /// header and every setting commented out at its default.
    const STARTER: &'static str = "";

    /// Refuses values that cannot work, naming the key and what to give instead.
    fn check(&self) -> Result<(), SectionError> {
        Ok(())
    }
}

//! What a feature's section of the configuration shares with the loader: the error a bad
//! value in it is. Each feature checks its own section ([`crate::memory::MemoryConfig`],
//! [`crate::llm::LlmConfig`]) without knowing the loader, which names the section's file
//! when it reports the error.

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

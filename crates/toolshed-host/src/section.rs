//! What a feature's section of the configuration shares with the loader: the error a bad
//! value in it is, and the [`Section`] trait a feature above the host implements for its
//! own table. Each feature checks its own section ([`crate::memory::MemoryConfig`],
//! [`crate::llm::LlmConfig`]) without knowing the loader, which names the section's file
//! when it reports the error.

pub use toolshed_kit::section::{Section, SectionError};

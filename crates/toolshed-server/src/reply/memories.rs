//! The caller's memories, as the memory tools answer them (each REST request is a call of
//! one): read from the tool's structured result, and refused if it holds a field these
//! types do not know.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A memory.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Memory {
    /// Its id, e.g. `m-0123456789abcdef`.
    pub id: String,
    /// Its namespace; empty for the owner's own.
    pub namespace: String,
    /// `note`, `daily` (a journal day) or `summary` (of compacted memories).
    #[schemars(extend("enum" = ["note", "daily", "summary"]))]
    pub kind: String,
    /// Its title; may be empty.
    pub title: String,
    /// Its text.
    pub text: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When it was last changed.
    pub updated_ms: i64,
    /// When it expires, if it does.
    pub expires_ms: Option<i64>,
    /// When it was deleted, if it was (restorable).
    pub deleted_ms: Option<i64>,
    /// The summary that replaced it, if it was compacted (restorable).
    pub archived_in: Option<String>,
}

/// What `memory_store` answers (the memory's `id` beside it): the memory stored or
/// updated, which is the REST reply.
#[derive(Debug, Deserialize)]
pub(crate) struct Stored {
    /// The memory.
    pub memory: Memory,
}

/// A page of memories, newest first.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct MemoryPage {
    /// The memories.
    pub memories: Vec<Memory>,
    /// Pass as `cursor` for the next (older) page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// One memory a search found.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryMatch {
    /// The memory's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its namespace.
    pub namespace: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The text around the matches, matched terms in `**bold**`.
    pub snippet: String,
    /// BM25 relevance: higher is better.
    pub score: f64,
    /// When it was last changed, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
}

/// A memory search's matches, best first.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub(crate) struct MemoryMatches {
    /// The matches.
    pub results: Vec<MemoryMatch>,
}

/// What a delete removed (restorable).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Deleted {
    /// The memory, as deleted.
    pub deleted: Memory,
}

//! The operations layer: how tools touch the world.
//!
//! Tools never call `std::fs` or spawn processes themselves. They are built with the host's
//! [`Services`], whose [`Ops`] they go through, so the same tool runs against the real
//! system ([`LocalOps`]), a sandbox, or an in-memory double in tests ([`MemoryOps`]). Both
//! implementations pass one contract suite (the `contract` module, built with the
//! `contract` feature). Searching — glob, fuzzy find, grep — goes through [`SearchOps`],
//! confined the same way; starting processes through [`ProcessOps`] (see the [`process`]
//! module). HTTP goes through [`NetClient`] (see the [`net`] module), which enforces a
//! network policy on every address it dials. The [`search`] module holds the search
//! operations' types, [`path`] the lexical checks of the paths tools receive,
//! [`sandbox`] the command sandbox the kernel enforces, and [`remote`] the same operations
//! on another machine: a worker serving them over a byte stream (SSH, a container's exec)
//! and the backend that talks to it; [`roots`] puts the operations of several workspace
//! roots behind one, routing `@name/` paths.
//!
//! ```
//! use toolshed_ops::{FileOps, MemoryOps, Parents};
//! let ops = MemoryOps::new();
//! ops.write("notes/todo.txt", b"ship it\n", Parents::Create).unwrap();
//! assert_eq!(ops.read("notes/todo.txt", 1024).unwrap().bytes, b"ship it\n");
//! assert!(ops.read("../outside", 1024).is_err());
//! ```

use std::sync::Arc;

mod beneath;
mod boundary;
#[cfg(feature = "contract")]
pub mod contract;
mod error;
mod file;
mod local;
mod memory;
pub mod net;
pub mod path;
pub mod process;
mod read_log;
pub mod remote;
pub mod roots;
pub mod sandbox;
pub mod search;
mod services;
mod trim;

pub use beneath::{open_beneath, read_beneath};
pub use boundary::{BoundedFiles, BoundedSearch, FileBoundary};
pub use error::OpsError;
pub use file::{
    Access, Change, DirEntry, DirListing, Expect, FileContents, FileKind, FileOps, Follow,
    MAX_DIR_ENTRIES, Metadata, Overwrite, Parents, Written, resolve_in_workspace,
};
pub use local::process::{
    DescriptorLimit, LocalProcessOps, ProcessConfig, ResourceLimits, TreeKillMethod,
    descriptor_limit, raise_descriptor_limit, release_cgroups,
};
pub use local::{LocalOps, TEMP_PREFIX, unix_seconds};
pub use memory::MemoryOps;
pub use net::{FollowedResponse, NetClient, NetConfig};
pub use process::{Process, ProcessOps, SpawnRequest};
pub use read_log::{Digest, MAX_MEMORY_ENTRIES, MemoryReadLog, ReadLog};
pub use search::{
    Cancel, CaseMode, DEFAULT_FIND_RESULTS, DEFAULT_GLOB_RESULTS, DEFAULT_GREP_MATCHES,
    DEFAULT_MAX_LINE_LEN, FileMatches, FindKind, FindMatch, FindRequest, FindResult, GlobRequest,
    GlobResult, GrepRequest, GrepResult, LineMatch, MAX_CONTEXT_LINES, MAX_IGNORE_FILE_BYTES,
    MAX_SEARCH_BUFFER, SearchOps, TreeEntry, TreeRequest, TreeResult,
};
pub use services::{CatalogSignals, Notice, Notices, Services};
pub use trim::give_back_free_memory;

/// Everything a tool may use to act on the workspace, part of the host's [`Services`].
#[derive(Clone)]
pub struct Ops {
    /// File operations confined to the workspace.
    pub files: Arc<dyn FileOps>,
    /// Searching the same workspace.
    pub search: Arc<dyn SearchOps>,
    /// Starting processes in the same workspace.
    pub process: Arc<dyn ProcessOps>,
}

impl Ops {
    /// The real system under `workspace`, processes run with the default [`ProcessConfig`].
    pub fn local(workspace: &std::path::Path) -> Result<Self, OpsError> {
        Self::local_with(workspace, ProcessConfig::default())
    }

    /// The real system under `workspace`, processes run as `config` says.
    pub fn local_with(
        workspace: &std::path::Path,
        config: ProcessConfig,
    ) -> Result<Self, OpsError> {
        let ops = Arc::new(LocalOps::new(workspace)?);
        Ok(Self {
            files: ops.clone(),
            search: ops.clone(),
            process: Arc::new(LocalProcessOps::new(ops, config)?),
        })
    }

    /// An empty in-memory workspace; it cannot start processes
    /// ([`OpsError::ProcessUnavailable`]).
    pub fn memory() -> Self {
        let ops = Arc::new(MemoryOps::new());
        Self {
            files: ops.clone(),
            search: ops.clone(),
            process: ops,
        }
    }
}

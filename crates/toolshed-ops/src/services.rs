//! The shared services a host hands its tools, as one typed value.
//!
//! A tool that needs the operations backend, the HTTP client or the process port directory
//! is *built* with them: its plugin's constructor takes `&Services` and keeps what it uses,
//! as an axum handler takes its `State`. So a service that was never wired is a compile
//! error where the host is put together, not an `Internal` error at the first call. The
//! host's `HostBuilder` builds the one `Services` of a host; tests and embedders build
//! their own with [`Services::new`] and replace the fields they care about.
//!
//! ```
//! use std::sync::Arc;
//! use toolshed_ops::{FileOps, Ops, Parents, Services};
//! let services = Services::new(Ops::memory());
//! services.ops.files.write("a.txt", b"hi", Parents::Create).unwrap();
//! assert!(services.ports.get("p1").is_none());
//! ```

use std::sync::Arc;

use toolshed_core::{Gauges, PortDirectory};

use crate::{MemoryReadLog, NetClient, Ops, ReadLog};

/// Everything tools share in one host: built once, cloned cheaply (every field is shared).
#[derive(Clone)]
pub struct Services {
    /// Files, search and processes, confined to the workspace.
    pub ops: Ops,
    /// The one HTTP client: public hosts, `[web] allow`, plugin grants.
    pub net: Arc<NetClient>,
    /// Which background process listens on which loopback port (the HTTP proxy's map).
    pub ports: Arc<PortDirectory>,
    /// What each owner has read, for read-before-edit.
    pub read_log: Arc<dyn ReadLog>,
    /// Gauges the metrics endpoint reports (live sessions, background processes).
    pub gauges: Arc<Gauges>,
    /// Where plugins say their tools changed.
    pub catalog: Arc<CatalogSignals>,
    /// Where tools and plugins announce what happened (a background process exited), for
    /// the host's event streams.
    pub notices: Arc<Notices>,
    /// The variables of the workspace's `.env` files: what a tool reading a variable
    /// (a search provider's key) falls back to when the process environment lacks it.
    pub env_files: Arc<std::collections::BTreeMap<String, String>>,
    /// This toolshed's replica name when it shares its state with others (a database of
    /// several replicas): what lives in this process only (a background process) carries
    /// it in its id, so that a call reaching another replica can be told where to go.
    /// `None` on a toolshed of its own.
    pub replica: Option<Arc<str>>,
}

/// Something that happened that a client may want to hear of without asking:
/// `process.exited`, `command_session.closed`, `plugin.<id>.<type>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// The event type, dotted.
    pub kind: String,
    /// Whose it is (only that owner's subscribers hear it); `None`: everyone's.
    pub owner: Option<String>,
    /// Its fields.
    pub data: serde_json::Value,
}

/// How many notices a slow listener may fall behind before it misses some.
const NOTICE_BUFFER: usize = 256;

/// The channel notices go through: a bounded broadcast, so nothing that announces ever
/// waits for a listener.
#[derive(Debug)]
pub struct Notices(tokio::sync::broadcast::Sender<Notice>);

impl Default for Notices {
    fn default() -> Self {
        Self(tokio::sync::broadcast::channel(NOTICE_BUFFER).0)
    }
}

impl Notices {
    /// Announces `kind` with `data`, for `owner`'s listeners (`None`: everyone's).
    pub fn publish(&self, kind: impl Into<String>, owner: Option<&str>, data: serde_json::Value) {
        let _ = self.0.send(Notice {
            kind: kind.into(),
            owner: owner.map(str::to_string),
            data,
        });
    }

    /// What is announced from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Notice> {
        self.0.subscribe()
    }

    /// Whether anyone listens now (a notice nobody hears need not be made).
    pub fn listened(&self) -> bool {
        self.0.receiver_count() > 0
    }
}

/// Plugins saying their tools changed while they run (a mounted MCP server's
/// `notifications/tools/list_changed`): the host reads their tools again and tells its
/// clients. Signals for the same plugin coalesce.
#[derive(Debug, Default)]
pub struct CatalogSignals {
    changed: std::sync::Mutex<std::collections::BTreeSet<String>>,
    notify: tokio::sync::Notify,
}

impl CatalogSignals {
    /// Plugin `plugin_id`'s tools changed.
    pub fn tools_changed(&self, plugin_id: &str) {
        self.changed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(plugin_id.to_string());
        self.notify.notify_one();
    }

    /// The plugins whose tools changed since the last call, waiting for at least one.
    pub async fn next(&self) -> Vec<String> {
        loop {
            let changed: Vec<String> =
                std::mem::take(&mut *self.changed.lock().unwrap_or_else(|e| e.into_inner()))
                    .into_iter()
                    .collect();
            if !changed.is_empty() {
                return changed;
            }
            self.notify.notified().await;
        }
    }
}

impl Services {
    /// Services over `ops` with the defaults for the rest: an HTTP client with the public
    /// policy and no allowlist, an empty port directory, an in-memory read log and no
    /// gauges.
    pub fn new(ops: Ops) -> Self {
        Self {
            ops,
            net: Arc::new(NetClient::new()),
            ports: Arc::new(PortDirectory::new()),
            read_log: Arc::new(MemoryReadLog::default()),
            gauges: Arc::new(Gauges::new()),
            catalog: Arc::new(CatalogSignals::default()),
            notices: Arc::new(Notices::default()),
            env_files: Arc::default(),
            replica: None,
        }
    }

    /// These services with `net` as the HTTP client.
    pub fn with_net(mut self, net: Arc<NetClient>) -> Self {
        self.net = net;
        self
    }

    /// These services with `read_log` as the read log.
    pub fn with_read_log(mut self, read_log: Arc<dyn ReadLog>) -> Self {
        self.read_log = read_log;
        self
    }
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services").finish_non_exhaustive()
    }
}

//! Which background process listens on which loopback port: what the HTTP proxy route of
//! `toolshed serve` (`/proxy/<id>/...`) forwards to.
//!
//! The process tools record a port when they start a process that names one and forget it
//! when the process ends; the HTTP door looks targets up. Both are handed the host's one
//! directory when they are built.

use std::collections::HashMap;
use std::sync::RwLock;

/// Where one process can be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyTarget {
    /// The port on 127.0.0.1.
    pub port: u16,
    /// The owner that started the process.
    pub owner: String,
    /// A UNIX socket that reaches the process's own loopback, when it runs in a network
    /// namespace of its own (a sandbox with `network` off or filtered): the proxy writes
    /// the port and a newline, then speaks to the process through it.
    pub via: Option<std::path::PathBuf>,
}

/// Process ids to loopback ports, and the base URL the proxy is served under.
#[derive(Debug, Default)]
pub struct PortDirectory {
    targets: RwLock<HashMap<String, ProxyTarget>>,
    base_url: RwLock<Option<String>>,
}

impl PortDirectory {
    /// An empty directory, not served.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that process `id` listens on `target.port`.
    pub fn insert(&self, id: &str, target: ProxyTarget) {
        let mut map = self.targets.write().unwrap_or_else(|p| p.into_inner());
        map.insert(id.to_string(), target);
    }

    /// Forgets process `id`.
    pub fn remove(&self, id: &str) {
        let mut map = self.targets.write().unwrap_or_else(|p| p.into_inner());
        map.remove(id);
    }

    /// Where process `id` listens, if it named a port and still runs.
    pub fn get(&self, id: &str) -> Option<ProxyTarget> {
        let map = self.targets.read().unwrap_or_else(|p| p.into_inner());
        map.get(id).cloned()
    }

    /// Records the URL under which `/proxy/` is served (`http://127.0.0.1:7070`), once the
    /// HTTP server is bound.
    pub fn set_base_url(&self, url: impl Into<String>) {
        *self.base_url.write().unwrap_or_else(|p| p.into_inner()) = Some(url.into());
    }

    /// The base URL of the proxy, when this host serves HTTP.
    pub fn base_url(&self) -> Option<String> {
        self.base_url
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

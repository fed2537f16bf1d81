//! The pool of running language servers, one per language and project root: started on
//! demand, restarted when dead, capped in number and stopped when idle.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use toolshed_core::ToolError;
use toolshed_ops::process::ProcessOps;

use crate::languages::{Language, Settings};
use crate::server::Server;
use crate::watch;

/// The servers running, by language and root.
pub(crate) struct Servers {
    pub(crate) settings: Settings,
    pub(crate) processes: Arc<dyn ProcessOps>,
    pub(crate) running: tokio::sync::Mutex<BTreeMap<(String, String), Arc<Server>>>,
    pub(crate) reaper: std::sync::OnceLock<()>,
}

impl Servers {
    /// The server for `language` at `root`, started (again) when needed; with a note when
    /// an earlier one had died.
    pub(crate) async fn get(
        self: &Arc<Self>,
        language: &Language,
        root: &str,
    ) -> Result<(Arc<Server>, Option<String>), ToolError> {
        self.reap_later();
        let key = (language.name.clone(), root.to_string());
        let mut running = self.running.lock().await;
        let mut note = None;
        if let Some(server) = running.get(&key) {
            if server.alive() {
                server.touch();
                return Ok((server.clone(), None));
            }
            note = Some(format!(
                "(the {} language server had stopped{}; it was started again)",
                language.name,
                server.stderr_tail()
            ));
            if let Some(dead) = running.remove(&key) {
                dead.stop().await;
            }
        }
        if running.len() >= self.settings.max_servers {
            let oldest = running
                .iter()
                .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|(k, _)| k.clone());
            if let Some(old) = oldest.and_then(|k| running.remove(&k)) {
                old.stop().await;
            }
        }
        let server = Server::start(
            self.processes.as_ref(),
            language,
            &self.settings.workspace,
            root,
            self.settings.request_timeout,
            self.settings.remote,
        )
        .await
        .map_err(|message| {
            if message.contains("is not installed") {
                ToolError::Unconfigured {
                    message,
                    variables: vec![format!("lsp.{}.command", language.name)],
                }
            } else {
                ToolError::failed(message)
            }
        })?;
        let server = Arc::new(server);
        let wanted = {
            let language = language.clone();
            move |path: &Path| {
                language.serves(path)
                    || path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| language.markers.iter().any(|m| m == n))
            }
        };
        let root_abs = self.settings.workspace.join(root);
        // The walk over the project's directories is file-system work: off the async threads.
        let weak = Arc::downgrade(&server);
        let remote = self.settings.remote;
        let started = tokio::task::spawn_blocking(move || {
            if remote {
                Err("the project is on another machine".to_string())
            } else {
                watch::start(&root_abs, weak, wanted)
            }
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        match started {
            Ok(watch) => server.keep_watch(watch),
            Err(e) => {
                tracing::warn!(root, error = %e, "cannot watch the project for the language server; it hears of changes made through toolshed only")
            }
        }
        running.insert(key, server.clone());
        Ok((server, note))
    }

    /// The servers running now.
    pub(crate) async fn all(&self) -> Vec<Arc<Server>> {
        self.running.lock().await.values().cloned().collect()
    }

    /// Starts, once, the task that stops idle servers.
    fn reap_later(self: &Arc<Self>) {
        let weak: Weak<Self> = Arc::downgrade(self);
        let idle = self.settings.idle_timeout;
        self.reaper.get_or_init(|| {
            tokio::spawn(async move {
                let every = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
                loop {
                    tokio::time::sleep(every).await;
                    let Some(servers) = weak.upgrade() else { return };
                    let mut running = servers.running.lock().await;
                    let idle_keys: Vec<_> = running
                        .iter()
                        .filter(|(_, s)| s.last_used.lock().unwrap_or_else(|e| e.into_inner()).elapsed() >= idle)
                        .map(|(k, _)| k.clone())
                        .collect();
                    for key in idle_keys {
                        if let Some(server) = running.remove(&key) {
                            tracing::info!(language = %key.0, root = %key.1, "stopping the idle language server");
                            server.stop().await;
                        }
                    }
                }
            });
        });
    }

    pub(crate) async fn stop_all(&self) {
        let all: Vec<_> = std::mem::take(&mut *self.running.lock().await)
            .into_values()
            .collect();
        for server in all {
            server.stop().await;
        }
    }
}

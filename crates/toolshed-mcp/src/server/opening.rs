//! Opening the host in the background while the door already talks: the channel between
//! the side that opens it and the server that waits for it, and the client's roots that
//! the opening side may take its workspace from.

use std::sync::Arc;

use toolshed_host::Host;

use super::Session;

/// What a host that is still opening resolves to: the host and the session, or why it
/// could not open.
type Opened = Option<Result<(Arc<Host>, Session), String>>;

/// What the client said about its roots (`roots/list`), for a door that takes its
/// workspace from them when none was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientRoots {
    /// Nothing yet (no `initialize` so far: a 2026-07-28 client never sends one).
    Unknown,
    /// The client's `initialize` did not offer roots.
    NotOffered,
    /// Offered; `roots/list` has been asked and not answered yet.
    Asked,
    /// The roots the client listed: URIs, in its order.
    Listed(Vec<String>),
    /// `roots/list` failed.
    Failed(String),
}

/// How long a door waits for the client to answer `roots/list`.
pub(crate) const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The sending half of [`HostOpening`]: the door that opens the host in the background
/// reports the outcome here, once.
pub struct HostOpened {
    outcome: tokio::sync::watch::Sender<Opened>,
    greeted: Arc<tokio::sync::Notify>,
    roots: tokio::sync::watch::Receiver<ClientRoots>,
}

impl HostOpened {
    /// The client's roots, once known: at once when its `initialize` offered none (or
    /// there was none), else when it has answered `roots/list` or [`ROOTS_WAIT`] has
    /// passed. Call after [`HostOpened::greeted`].
    pub async fn client_roots(&self) -> ClientRoots {
        let mut roots = self.roots.clone();
        let answered = roots.wait_for(|r| !matches!(r, ClientRoots::Asked));
        match tokio::time::timeout(ROOTS_WAIT, answered).await {
            Ok(Ok(seen)) => seen.clone(),
            Ok(Err(_)) => ClientRoots::Unknown,
            Err(_) => ClientRoots::Failed(format!(
                "the client did not answer roots/list within {} s",
                ROOTS_WAIT.as_secs()
            )),
        }
    }

    /// Completes once the client has been greeted (the server is answering `initialize`):
    /// the moment to start opening the host, so that its work never competes with the
    /// handshake's. Completes at once if the greeting already happened.
    pub async fn greeted(&self) {
        self.greeted.notified().await;
    }

    /// Reports the opened host and the connection's session, or why it failed.
    pub fn send(self, outcome: Result<(Arc<Host>, Session), String>) {
        self.outcome.send_replace(Some(outcome));
    }
}

/// A host that is opening while the door already talks: `initialize` needs nothing from
/// it, so a stdio client gets its reply before the store, plugins and engines are up, and
/// the first request that needs them waits for them.
#[derive(Clone)]
pub struct HostOpening {
    pub(super) outcome: tokio::sync::watch::Receiver<Opened>,
    pub(super) greeted: Arc<tokio::sync::Notify>,
    pub(super) roots: Arc<tokio::sync::watch::Sender<ClientRoots>>,
}

impl HostOpening {
    /// Completes when the host could not open, or the side opening it ended without a
    /// word (it panicked); never once it has opened.
    pub async fn failed(&self) {
        let mut outcome = self.outcome.clone();
        let _ = outcome.wait_for(|o| matches!(o, Some(Err(_)))).await;
        if matches!(*outcome.borrow(), Some(Ok(_))) {
            std::future::pending::<()>().await;
        }
    }
}

/// A channel for a host opened in the background: give [`HostOpening`] to
/// [`McpServer::opening`](super::McpServer::opening) and report through [`HostOpened`].
pub fn host_opening() -> (HostOpened, HostOpening) {
    let (tx, rx) = tokio::sync::watch::channel(None);
    let greeted = Arc::new(tokio::sync::Notify::new());
    let (roots_tx, roots_rx) = tokio::sync::watch::channel(ClientRoots::Unknown);
    (
        HostOpened {
            outcome: tx,
            greeted: greeted.clone(),
            roots: roots_rx,
        },
        HostOpening {
            outcome: rx,
            greeted,
            roots: Arc::new(roots_tx),
        },
    )
}

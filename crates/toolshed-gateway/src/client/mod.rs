//! A small MCP client over a server's stdio: newline-delimited JSON-RPC, a reader task that
//! settles each reply where its caller waits, and writes made by the caller itself.
//!
//! Written for the gateway's hot path rather than taken from an SDK: a call here crosses
//! one task boundary (the reader waking the caller), where a general client's request
//! queue and transport task cost several thread wake-ups per call on a multi-threaded
//! runtime — most of what a forwarded call cost.
//!
//! Here: the session ([`Client`]: the handshake, requests, calls, cancelling). Beside it:
//! `wire` (how requests are written), `transport` (how messages travel, and the reader),
//! `shared` (what the reader and the callers share) and `dispatch` (routing what a server
//! sends).

mod dispatch;
mod shared;
#[cfg(test)]
mod tests;
mod transport;
mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;
use toolshed_core::ProgressSink;

use crate::http::{HttpLink, HttpTarget};

pub(crate) use dispatch::{Answer, dispatch};
pub(crate) use shared::Shared;
pub(crate) use transport::MAX_MESSAGE_BYTES;
use transport::{Link, Writer, read_loop};
use wire::{CallParams, Meta, Outgoing, WithMeta, modern_meta};

/// The protocol version offered in a legacy `initialize`; a server answers with the one it
/// speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// The protocol version of the era without `initialize`: each request carries who the
/// client is, and a server is asked what it offers with `server/discover`.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";
/// How long `auto` waits for an answer to `server/discover` before it tries `initialize`
/// (a legacy server may ignore a request before `initialize`; the era it speaks is then
/// remembered, so only its first start waits).
const DISCOVER_WAIT: Duration = Duration::from_secs(5);

/// Which protocol era to speak with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// `server/discover` first; `initialize` when the server does not know it.
    Auto,
    /// `initialize` only (2025-11-25 and before).
    Legacy,
    /// `server/discover` only (2026-07-28).
    Modern,
}

impl Era {
    /// The era a manifest names (`auto` by default).
    pub(crate) fn parse(text: Option<&str>) -> Self {
        match text {
            Some("legacy") => Self::Legacy,
            Some(MODERN_VERSION) => Self::Modern,
            _ => Self::Auto,
        }
    }
}

/// Why a handshake failed, and whether starting the server again and speaking the legacy
/// era may work (a server that ended the session on `server/discover`).
#[derive(Debug)]
pub(crate) struct HandshakeError {
    pub message: String,
    pub try_legacy: bool,
}

impl From<String> for HandshakeError {
    fn from(message: String) -> Self {
        Self {
            message,
            try_legacy: false,
        }
    }
}

/// Why a request got no result.
#[derive(Debug)]
pub(crate) enum RpcError {
    /// The server answered with a JSON-RPC error.
    Server { message: String },
    /// The session ended (the server exited or wrote something unreadable).
    Closed(String),
}

pub(crate) type Reply = Result<Value, RpcError>;

/// A session with one server.
pub(crate) struct Client {
    link: Link,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    /// Reads what the server sends unasked: its stdout, or its HTTP event stream.
    reader: Option<tokio::task::JoinHandle<()>>,
    /// The server's `initialize` result (for a 2026-07-28 server, what `server/discover`
    /// said, with `protocolVersion` set).
    pub(crate) info: Value,
    /// Whether the session speaks 2026-07-28: every request carries [`modern_meta`].
    modern: bool,
    /// Whether the server may ask for completions (declared to it).
    sampling: bool,
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(reader) = &self.reader {
            reader.abort();
        }
        if let Link::Http(link) = &self.link {
            link.end();
        }
    }
}

impl Client {
    /// What a session's reader and link share, told of list changes through `tools_changed`.
    fn shared(
        tools_changed: Arc<tokio::sync::Notify>,
        watchers: Arc<crate::watch::Watchers>,
    ) -> Arc<Shared> {
        Arc::new(Shared {
            tools_changed,
            watchers,
            ..Shared::default()
        })
    }

    /// A session over `link`, before its handshake.
    fn over(
        link: Link,
        shared: Arc<Shared>,
        reader: Option<tokio::task::JoinHandle<()>>,
        sampling: bool,
    ) -> Self {
        Self {
            link,
            shared,
            next_id: AtomicU64::new(1),
            reader,
            info: Value::Null,
            modern: false,
            sampling,
        }
    }

    /// Runs the handshake over the server's stdout (`rx`) and stdin (`tx`).
    pub(crate) async fn connect(
        rx: pipe::Receiver,
        tx: pipe::Sender,
        timeout: Duration,
        tools_changed: Arc<tokio::sync::Notify>,
        watchers: Arc<crate::watch::Watchers>,
        era: Era,
        sampling: bool,
    ) -> Result<Self, HandshakeError> {
        let shared = Self::shared(tools_changed, watchers);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(tx));
        let reader = tokio::spawn(read_loop(rx, shared.clone(), writer.clone()));
        Self::over(Link::Pipe(writer), shared, Some(reader), sampling)
            .handshake(timeout, era)
            .await
    }

    /// Runs the handshake with a server at `target` over streamable HTTP, then listens to
    /// its event stream for what it sends unasked (its tools changed).
    pub(crate) async fn connect_http(
        target: HttpTarget,
        timeout: Duration,
        tools_changed: Arc<tokio::sync::Notify>,
        watchers: Arc<crate::watch::Watchers>,
        era: Era,
        sampling: bool,
    ) -> Result<Self, HandshakeError> {
        let shared = Self::shared(tools_changed, watchers);
        let link = HttpLink::new(target, shared.clone());
        let mut client = Self::over(Link::Http(link.clone()), shared, None, sampling)
            .handshake(timeout, era)
            .await?;
        if let Some(version) = client.info["protocolVersion"].as_str() {
            link.set_protocol(version);
        }
        // A 2026-07-28 server sends what it is not asked for on the `subscriptions/listen`
        // stream alone; an older one on the stream a GET opens.
        if !client.modern {
            client.reader = Some(tokio::spawn(async move { link.listen().await }));
        }
        Ok(client)
    }

    async fn handshake(mut self, timeout: Duration, era: Era) -> Result<Self, HandshakeError> {
        if era != Era::Legacy {
            let wait = if era == Era::Modern {
                timeout
            } else {
                timeout.min(DISCOVER_WAIT)
            };
            let asked = self.request(
                "server/discover",
                json!({"_meta": modern_meta(self.sampling)}),
                None,
            );
            match tokio::time::timeout(wait, asked).await {
                Ok(Ok(found)) if speaks_modern(&found) => {
                    self.modern = true;
                    self.info = json!({
                        "protocolVersion": MODERN_VERSION,
                        "capabilities": found["capabilities"],
                        "instructions": found["instructions"],
                        "serverInfo": found["_meta"]["io.modelcontextprotocol/serverInfo"],
                    });
                    // Told of its tools changing, as the legacy era tells unasked.
                    let listen = json!({"notifications": {"toolsListChanged": true}});
                    if let Err(e) = self.start("subscriptions/listen", listen, None).await {
                        tracing::debug!(error = ?e, "an MCP server refused subscriptions/listen");
                    }
                    return Ok(self);
                }
                Ok(Err(RpcError::Closed(why))) => {
                    return Err(HandshakeError {
                        message: format!(
                            "it ended the session when asked `server/discover` ({why})"
                        ),
                        try_legacy: era == Era::Auto,
                    });
                }
                outcome if era == Era::Modern => {
                    let why = match outcome {
                        Ok(Err(RpcError::Server { message })) => message,
                        Ok(_) => "it does not list 2026-07-28 among its versions".into(),
                        Err(_) => format!("no answer within {} s", wait.as_secs()),
                    };
                    return Err(format!("it does not speak MCP {MODERN_VERSION}: {why}").into());
                }
                // An older server: `initialize`, as it expects.
                _ => {}
            }
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": crate::asks::capabilities(self.sampling),
            "clientInfo": {"name": "toolshed", "version": env!("CARGO_PKG_VERSION")},
        });
        let info = tokio::time::timeout(timeout, self.request("initialize", params, None))
            .await
            .map_err(|_| format!("no answer to `initialize` within {} s", timeout.as_secs()))?
            .map_err(|e| match e {
                RpcError::Server { message } => format!("it refused `initialize`: {message}"),
                RpcError::Closed(why) => why,
            })?;
        self.info = info;
        self.notify("notifications/initialized", None)
            .await
            .map_err(|e| format!("cannot finish the handshake: {e}"))?;
        Ok(self)
    }

    /// Whether the session speaks 2026-07-28.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern
    }

    /// The protocol version the session speaks.
    pub(crate) fn protocol(&self) -> &str {
        self.info["protocolVersion"].as_str().unwrap_or("unknown")
    }

    /// Whether the session ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), String> {
        let message = Outgoing {
            jsonrpc: "2.0",
            id: None,
            method,
            params,
        };
        self.link.send(None, &message).await
    }

    /// Sends a request and waits for its result. With `progress`, the request carries a
    /// progress token and the server's progress notifications for it go there.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        progress: Option<ProgressSink>,
    ) -> Result<Value, RpcError> {
        let (id, waiter) = self.start(method, params, progress).await?;
        self.finish(id, waiter).await
    }

    /// Sends a request; its id and where its reply will arrive.
    pub(crate) async fn start(
        &self,
        method: &str,
        params: Value,
        progress: Option<ProgressSink>,
    ) -> Result<(u64, oneshot::Receiver<Reply>), RpcError> {
        let (id, meta, waiter) = self.open(progress)?;
        let params = WithMeta {
            params: &params,
            meta,
        };
        self.send(id, method, params).await?;
        Ok((id, waiter))
    }

    /// Calls the server's tool `name` with `arguments`; its id and where its reply will
    /// arrive.
    pub(crate) async fn start_call(
        &self,
        name: &str,
        arguments: &Value,
        progress: ProgressSink,
        asks: Arc<crate::asks::Asks>,
        input: Option<&(Value, Option<String>)>,
    ) -> Result<(u64, oneshot::Receiver<Reply>), RpcError> {
        let (id, mut meta, waiter) = self.open(Some(progress))?;
        meta.log = asks.log.is_some();
        self.shared.lock_calls().insert(id, asks);
        // Dropped while it is written: forgotten, as when writing fails.
        let unsent = Unsent(&self.shared, id);
        let params = CallParams {
            name,
            arguments,
            input,
            meta,
            trace: toolshed_core::trace_context::current(),
        };
        self.send(id, "tools/call", params).await?;
        std::mem::forget(unsent);
        Ok((id, waiter))
    }

    /// Forgets call `id` of [`Client::start_call`] (its caller gave up on it), so that no
    /// request of the server is taken for it.
    pub(crate) fn end_call(&self, id: u64) {
        self.shared.end_call(id);
    }

    /// Asks the server to tell of changes to the resource `uri`: `resources/subscribe` in
    /// the legacy era; in the 2026-07-28 era a `subscriptions/listen` stream of its own,
    /// whose id is returned (stopping it is [`Client::unwatch`]).
    pub(crate) async fn watch(&self, uri: &str) -> Result<Option<u64>, RpcError> {
        if !self.modern {
            self.request("resources/subscribe", json!({"uri": uri}), None)
                .await?;
            return Ok(None);
        }
        let filter = json!({"notifications": {"resourceSubscriptions": [uri]}});
        let (id, reply) = self.start("subscriptions/listen", filter, None).await?;
        // A refusal comes at once; an accepted stream stays open, answering nothing.
        match tokio::time::timeout(Duration::from_millis(500), reply).await {
            Ok(Ok(Err(e))) => Err(e),
            _ => Ok(Some(id)),
        }
    }

    /// Stops telling of changes to `uri` ([`Client::watch`]'s `listen`, if it opened one).
    pub(crate) async fn unwatch(&self, uri: &str, listen: Option<u64>) {
        match listen {
            Some(id) => {
                self.cancel(id, "no one watches the resource any more")
                    .await
            }
            None => {
                if let Err(e) = self
                    .request("resources/unsubscribe", json!({"uri": uri}), None)
                    .await
                {
                    tracing::debug!(error = ?e, "an MCP server refused resources/unsubscribe");
                }
            }
        }
    }

    /// The server's name, as what it asks the person says it (set once).
    pub(crate) fn shared_name(&self) -> &std::sync::OnceLock<String> {
        &self.shared.name
    }

    /// A new request: its id, what its `_meta` carries, and where its reply will arrive.
    fn open(
        &self,
        progress: Option<ProgressSink>,
    ) -> Result<(u64, Meta, oneshot::Receiver<Reply>), RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        // Pending before the check: a session that ends after it fails the request.
        self.shared.lock_pending().insert(id, tx);
        let meta = Meta {
            progress: progress.map(|sink| {
                self.shared.lock_progress().insert(id, sink);
                id
            }),
            modern: self.modern,
            sampling: self.sampling,
            log: false,
        };
        if self.is_closed() {
            self.forget(id);
            let why = self
                .shared
                .why_closed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            return Err(RpcError::Closed(
                why.unwrap_or_else(|| "the session ended".into()),
            ));
        }
        Ok((id, meta, rx))
    }

    /// Writes request `id`; forgets it if it cannot be sent.
    async fn send(&self, id: u64, method: &str, params: impl Serialize) -> Result<(), RpcError> {
        let message = Outgoing {
            jsonrpc: "2.0",
            id: Some(id),
            method,
            params: Some(params),
        };
        if let Err(e) = self.link.send(Some(id), &message).await {
            self.forget(id);
            return Err(RpcError::Closed(e));
        }
        Ok(())
    }

    /// Waits for the reply to request `id`.
    pub(crate) async fn finish(&self, id: u64, waiter: oneshot::Receiver<Reply>) -> Reply {
        let reply = waiter
            .await
            .unwrap_or_else(|_| Err(RpcError::Closed("the session ended".into())));
        self.shared.lock_progress().remove(&id);
        self.shared.end_call(id);
        reply
    }

    /// Gives up on request `id`: its reply, if it comes, is dropped, and the server is told
    /// to stop the work.
    pub(crate) async fn cancel(&self, id: u64, reason: &str) {
        self.forget(id);
        // Over HTTP the request's own stream closes too: a 2026-07-28 server takes that as
        // the cancellation, a notification being a request of its own there.
        if let Link::Http(link) = &self.link {
            link.abort(id);
        }
        let _ = self
            .notify(
                "notifications/cancelled",
                Some(json!({"requestId": id, "reason": reason})),
            )
            .await;
    }

    fn forget(&self, id: u64) {
        self.shared.lock_pending().remove(&id);
        self.shared.lock_progress().remove(&id);
        self.shared.end_call(id);
    }

    /// Every item of a paged list (`tools/list`, …), following `nextCursor` (at most 100
    /// pages).
    pub(crate) async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, RpcError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let mut page = self.request(method, params, None).await?;
            if let Some(Value::Array(list)) = page.get_mut(key).map(Value::take) {
                items.extend(list);
            }
            cursor = page["nextCursor"].as_str().map(String::from);
            if cursor.is_none() {
                break;
            }
        }
        Ok(items)
    }
}

/// Forgets a call whose request was not written, when dropped.
struct Unsent<'a>(&'a Shared, u64);

impl Drop for Unsent<'_> {
    fn drop(&mut self) {
        self.0.end_call(self.1);
    }
}

/// Whether a `server/discover` result says the server speaks 2026-07-28.
fn speaks_modern(found: &Value) -> bool {
    found["supportedVersions"]
        .as_array()
        .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(MODERN_VERSION)))
}

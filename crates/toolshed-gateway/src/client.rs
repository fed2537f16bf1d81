//! A small MCP client over a server's stdio: newline-delimited JSON-RPC, a reader task that
//! settles each reply where its caller waits, and writes made by the caller itself.
//!
//! Written for the gateway's hot path rather than taken from an SDK: a call here crosses
//! one task boundary (the reader waking the caller), where a general client's request
//! queue and transport task cost several thread wake-ups per call on a multi-threaded
//! runtime — most of what a forwarded call cost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;
use toolshed_core::{Progress, ProgressSink};

use crate::http::{HttpLink, HttpTarget};

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

/// What a 2026-07-28 request carries in its `_meta`: the protocol version and who the
/// client is ([`Meta::entries`], as a JSON value).
fn modern_meta(sampling: bool) -> Value {
    let meta = MetaEntries {
        given: None,
        meta: Meta {
            progress: None,
            modern: true,
            sampling,
            log: false,
        },
        trace: None,
    };
    serde_json::to_value(meta).unwrap_or_default()
}
/// How long after a call ends a server's request that names no call is not taken for
/// another owner's call (stdio tells no request apart).
const RECENTLY_ENDED: Duration = Duration::from_secs(10);

/// The longest message read from a server; a longer line ends the session.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Why a request got no result.
#[derive(Debug)]
pub(crate) enum RpcError {
    /// The server answered with a JSON-RPC error.
    Server { message: String },
    /// The session ended (the server exited or wrote something unreadable).
    Closed(String),
}

pub(crate) type Reply = Result<Value, RpcError>;

/// The server's stdin, written by callers and by the reader (answers to the server's own
/// requests).
type Writer = Arc<tokio::sync::Mutex<pipe::Sender>>;

/// How messages reach the server.
enum Link {
    /// Lines on its stdin.
    Pipe(Writer),
    /// HTTP requests to its URL (streamable HTTP).
    Http(Arc<HttpLink>),
}

impl Link {
    /// Sends `message` (request `id`, or a notification or reply when `None`).
    async fn send(&self, id: Option<u64>, message: &impl Serialize) -> Result<(), String> {
        let mut line = Vec::with_capacity(256);
        serde_json::to_writer(&mut line, message).map_err(|e| e.to_string())?;
        match self {
            Self::Pipe(writer) => {
                line.push(b'\n');
                write_bytes(writer, &line).await
            }
            Self::Http(link) => link.send(id, line).await,
        }
    }
}

async fn write_line(writer: &Writer, message: &Value) -> Result<(), String> {
    let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
    line.push(b'\n');
    write_bytes(writer, &line).await
}

async fn write_bytes(writer: &Writer, line: &[u8]) -> Result<(), String> {
    let mut writer = writer.lock().await;
    writer
        .write_all(line)
        .await
        .map_err(|e| format!("cannot write to the server: {e}"))
}

/// A JSON-RPC request or notification as written: built straight into its line, with no
/// JSON tree in between.
#[derive(Serialize)]
struct Outgoing<'a, P> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

/// What toolshed adds to a request's `_meta`: its progress token, and for a 2026-07-28
/// session the protocol version and who the client is.
#[derive(Clone, Copy)]
struct Meta {
    progress: Option<u64>,
    modern: bool,
    /// The server may ask for completions (declared in the capabilities).
    sampling: bool,
    /// The caller takes log messages: a 2026-07-28 server is asked for them (`logLevel`).
    log: bool,
}

impl Meta {
    fn is_empty(self) -> bool {
        self.progress.is_none() && !self.modern
    }

    fn entries<M: SerializeMap>(self, out: &mut M) -> Result<(), M::Error> {
        if let Some(token) = self.progress {
            out.serialize_entry("progressToken", &token)?;
        }
        if self.modern {
            out.serialize_entry("io.modelcontextprotocol/protocolVersion", MODERN_VERSION)?;
            out.serialize_entry(
                "io.modelcontextprotocol/clientCapabilities",
                &crate::asks::capabilities(self.sampling),
            )?;
            if self.log {
                out.serialize_entry("io.modelcontextprotocol/logLevel", "debug")?;
            }
            out.serialize_entry(
                "io.modelcontextprotocol/clientInfo",
                &ClientInfo {
                    name: "toolshed",
                    version: env!("CARGO_PKG_VERSION"),
                },
            )?;
        }
        Ok(())
    }

    /// Whether the entry `key` of a caller's `_meta` is one this adds (and so left out).
    fn replaces(self, key: &str) -> bool {
        (self.progress.is_some() && key == "progressToken")
            || (self.modern
                && matches!(
                    key,
                    "io.modelcontextprotocol/protocolVersion"
                        | "io.modelcontextprotocol/clientCapabilities"
                        | "io.modelcontextprotocol/clientInfo"
                        | "io.modelcontextprotocol/logLevel"
                ))
    }
}

#[derive(Serialize)]
struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

/// Request params with [`Meta`] added to their `_meta` (to the caller's own, if any).
struct WithMeta<'a> {
    params: &'a Value,
    meta: Meta,
}

impl Serialize for WithMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.params else {
            return self.params.serialize(s);
        };
        if self.meta.is_empty() {
            return map.serialize(s);
        }
        let mut out = s.serialize_map(None)?;
        for (key, value) in map.iter().filter(|(k, _)| *k != "_meta") {
            out.serialize_entry(key, value)?;
        }
        let given = match map.get("_meta") {
            Some(Value::Object(given)) => Some(given),
            _ => None,
        };
        out.serialize_entry(
            "_meta",
            &MetaEntries {
                given,
                meta: self.meta,
                trace: None,
            },
        )?;
        out.end()
    }
}

/// A `_meta` object: the caller's entries, then toolshed's (and the call's trace context).
struct MetaEntries<'a> {
    given: Option<&'a serde_json::Map<String, Value>>,
    meta: Meta,
    trace: Option<&'a toolshed_core::trace_context::TraceParent>,
}

impl Serialize for MetaEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(None)?;
        for (key, value) in self.given.into_iter().flatten() {
            let traced =
                self.trace.is_some() && matches!(key.as_str(), "traceparent" | "tracestate");
            if !self.meta.replaces(key) && !traced {
                out.serialize_entry(key, value)?;
            }
        }
        self.meta.entries(&mut out)?;
        if let Some(trace) = self.trace {
            out.serialize_entry("traceparent", &trace.traceparent)?;
            if let Some(state) = &trace.tracestate {
                out.serialize_entry("tracestate", state)?;
            }
        }
        out.end()
    }
}

/// The params of `tools/call`, borrowed from the caller.
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a Value,
    /// A 2026-07-28 server's retry: the answers to what it asked, and its state.
    input: Option<&'a (Value, Option<String>)>,
    meta: Meta,
    /// The trace context of the call's span, handed on so the server's spans join it.
    trace: Option<toolshed_core::trace_context::TraceParent>,
}

impl Serialize for CallParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("name", self.name)?;
        out.serialize_entry("arguments", self.arguments)?;
        if let Some((responses, state)) = self.input {
            out.serialize_entry("inputResponses", responses)?;
            if let Some(state) = state {
                out.serialize_entry("requestState", state)?;
            }
        }
        if !self.meta.is_empty() || self.trace.is_some() {
            out.serialize_entry(
                "_meta",
                &MetaEntries {
                    given: None,
                    meta: self.meta,
                    trace: self.trace.as_ref(),
                },
            )?;
        }
        out.end()
    }
}

#[derive(Default)]
pub(crate) struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    progress: Mutex<HashMap<u64, ProgressSink>>,
    closed: AtomicBool,
    why_closed: Mutex<Option<String>>,
    /// Told when the server says its tools changed.
    tools_changed: Arc<tokio::sync::Notify>,
    /// Told when the server says a resource changed.
    watchers: Arc<crate::watch::Watchers>,
    /// The calls in flight (request id), with what answers the server's questions to them.
    calls: Mutex<HashMap<u64, Arc<crate::asks::Asks>>>,
    /// The owners of calls that ended lately, and when (the last few).
    ended: Mutex<std::collections::VecDeque<(String, std::time::Instant)>>,
    /// The server's name, in what it asks the person.
    pub(crate) name: std::sync::OnceLock<String>,
}

impl Shared {
    /// Whether the session ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Settles request `id` with `reply`, if it still waits.
    pub(crate) fn settle(&self, id: u64, reply: Reply) {
        if let Some(waiter) = self.lock_pending().remove(&id) {
            let _ = waiter.send(reply);
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_progress(&self) -> std::sync::MutexGuard<'_, HashMap<u64, ProgressSink>> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<crate::asks::Asks>>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The call a server's request belongs to: the request it came with (over HTTP, on
    /// that request's stream), else the one call in flight. With several in flight and
    /// nothing to tell them apart (stdio), none: asking the wrong caller's person would be
    /// worse than not asking.
    fn call_for(&self, related: Option<u64>) -> Result<Arc<crate::asks::Asks>, String> {
        let calls = self.lock_calls();
        if let Some(id) = related {
            return calls.get(&id).cloned().ok_or_else(|| {
                "it came with a request of toolshed's that is not a tool call, or that has ended"
                    .to_string()
            });
        }
        let only = match calls.len() {
            1 => calls.values().next().cloned(),
            0 => return Err("it came while no call of toolshed's was running".into()),
            n => {
                return Err(format!(
                    "{n} calls of toolshed's run on this server and the request does not say which it belongs to"
                ));
            }
        };
        let only = only.ok_or_else(|| "no call".to_string())?;
        // A call of someone else ended a moment ago: the request may be that call's, late.
        let ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if ended
            .iter()
            .any(|(owner, at)| *owner != only.owner && at.elapsed() < RECENTLY_ENDED)
        {
            return Err(
                "a call of another owner ended a moment ago, and the request does not say which call it belongs to"
                    .into(),
            );
        }
        Ok(only)
    }

    /// Forgets call `id` (it ended), noting whose it was.
    fn end_call(&self, id: u64) {
        if let Some(asks) = self.lock_calls().remove(&id) {
            let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
            if ended.len() >= 8 {
                ended.pop_front();
            }
            ended.push_back((asks.owner.clone(), std::time::Instant::now()));
        }
    }

    /// Ends the session: every waiting request fails with `why`.
    pub(crate) fn close(&self, why: String) {
        self.closed.store(true, Ordering::SeqCst);
        *self.why_closed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
        for (_, waiter) in self.lock_pending().drain() {
            let _ = waiter.send(Err(RpcError::Closed(why.clone())));
        }
    }
}

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

/// Reads the server's messages until its stdout ends: replies settle their requests,
/// progress goes where its request said, requests from the server are answered (a ping
/// with an empty result, anything else as not supported).
async fn read_loop(rx: pipe::Receiver, shared: Arc<Shared>, writer: Writer) {
    let mut lines = BufReader::with_capacity(64 * 1024, rx);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        let read = (&mut lines)
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => break "the server closed its output (it exited?)".to_string(),
            Ok(n) if n > MAX_MESSAGE_BYTES => {
                break format!("the server sent a message over {MAX_MESSAGE_BYTES} bytes");
            }
            Ok(_) => {}
            Err(e) => break format!("cannot read from the server: {e}"),
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Value>(text) else {
            // Servers that print logs to stdout: not MCP, skipped.
            tracing::debug!("an MCP server wrote a line that is not JSON; skipped");
            continue;
        };
        match dispatch(message, &shared, None) {
            Some(Answer::Now(answer)) => {
                if let Err(e) = write_line(&writer, &answer).await {
                    break e;
                }
            }
            Some(Answer::Later(answer)) => {
                let writer = writer.clone();
                tokio::spawn(async move {
                    let answer = answer.await;
                    if let Err(e) = write_line(&writer, &answer).await {
                        tracing::debug!(error = %e, "cannot answer an MCP server's request");
                    }
                });
            }
            None => {}
        }
    };
    shared.close(why);
}

/// The answer to a server's request: at once, or once the person or model has answered.
pub(crate) enum Answer {
    Now(Value),
    Later(std::pin::Pin<Box<dyn std::future::Future<Output = Value> + Send>>),
}

impl Answer {
    /// The answer when it is there at once (tests).
    #[cfg(test)]
    pub(crate) fn now(self) -> Option<Value> {
        match self {
            Self::Now(value) => Some(value),
            Self::Later(_) => None,
        }
    }
}

/// Handles one message from the server; the answer to write back, for its requests.
/// `related` is the request whose response stream brought it (HTTP), if any.
pub(crate) fn dispatch(
    mut message: Value,
    shared: &Shared,
    related: Option<u64>,
) -> Option<Answer> {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(String::from);
    match (method.as_deref(), message.get("id").and_then(Value::as_u64)) {
        (None, Some(id)) => {
            let reply = match message.get_mut("error") {
                Some(error) => Err(RpcError::Server {
                    message: error["message"].as_str().unwrap_or("an error").to_string(),
                }),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            shared.settle(id, reply);
            None
        }
        (Some("notifications/progress"), _) => {
            let params = &message["params"];
            let token = params["progressToken"].as_u64()?;
            let sink = shared.lock_progress().get(&token).cloned();
            if let Some(sink) = sink {
                sink.send(Progress {
                    progress: params["progress"].as_f64(),
                    total: params["total"].as_f64(),
                    message: params["message"].as_str().map(String::from),
                });
            }
            None
        }
        (Some("notifications/tools/list_changed"), _) => {
            shared.tools_changed.notify_one();
            None
        }
        // A log message of the server's: to the caller of the call it came with (the one
        // in flight), named after the server.
        (Some("notifications/message"), None) => {
            let mut params = message["params"].take();
            if let Ok(asks) = shared.call_for(related)
                && let Some(log) = &asks.log
                && let Some(fields) = params.as_object_mut()
            {
                // Named after the server as mounted: a server cannot pass for another.
                fields.insert(
                    "logger".into(),
                    json!(shared.name.get().cloned().unwrap_or_default()),
                );
                log.send(params);
            }
            None
        }
        (Some("notifications/resources/updated"), None) => {
            if let Some(uri) = message["params"]["uri"].as_str() {
                shared.watchers.updated(uri);
            }
            None
        }
        // Requests from the server (an id and a method): answered, never left waiting.
        (Some(method), _) if message.get("id").is_some() => {
            let id = message["id"].take();
            let reply = move |outcome: Result<Value, (i64, String)>| match outcome {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                }
            };
            if !crate::asks::needs_call(method) {
                let outcome = match method {
                    "ping" => Ok(json!({})),
                    "roots/list" => Ok(json!({"roots": []})),
                    other => Err((
                        -32601,
                        format!("toolshed does not answer `{other}` for the servers it mounts"),
                    )),
                };
                return Some(Answer::Now(reply(outcome)));
            }
            let asks = match shared.call_for(related) {
                Ok(asks) if !asks.count() => {
                    return Some(Answer::Now(reply(Err((
                        -32603,
                        format!(
                            "the server asked for more than {} inputs in one call",
                            crate::asks::MAX_ASKS_PER_CALL
                        ),
                    )))));
                }
                Ok(asks) => asks,
                Err(why) => {
                    return Some(Answer::Now(reply(Err((
                        -32603,
                        format!("toolshed cannot put `{method}` to anyone: {why}"),
                    )))));
                }
            };
            let method = method.to_string();
            let params = message["params"].take();
            let server = shared.name.get().cloned().unwrap_or_default();
            Some(Answer::Later(Box::pin(async move {
                reply(crate::asks::answer(&asks, &server, &method, &params).await)
            })))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(message: &impl Serialize) -> Value {
        serde_json::from_slice(&serde_json::to_vec(message).unwrap()).unwrap()
    }

    #[test]
    fn a_retried_call_carries_the_answers_and_the_servers_state() {
        let arguments = json!({});
        let input = (
            json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}}),
            Some("s1".to_string()),
        );
        let call = CallParams {
            name: "greet",
            arguments: &arguments,
            input: Some(&input),
            meta: Meta {
                progress: None,
                modern: true,
                sampling: false,
                log: false,
            },
            trace: None,
        };
        let written = written(&call);
        assert_eq!(
            written["inputResponses"]["user_name"]["content"]["name"],
            "Ada"
        );
        assert_eq!(written["requestState"], "s1");
        assert_eq!(
            written["_meta"]["io.modelcontextprotocol/clientCapabilities"],
            crate::asks::capabilities(false)
        );
    }

    #[test]
    fn requests_are_written_with_toolshed_meta_merged_into_the_callers() {
        let params = json!({"uri": "x", "_meta": {"trace": 1, "progressToken": "theirs",
            "io.modelcontextprotocol/clientInfo": "theirs", "io.modelcontextprotocol/clientOther": 2}});
        let request = Outgoing {
            jsonrpc: "2.0",
            id: Some(7),
            method: "resources/read",
            params: Some(WithMeta {
                params: &params,
                meta: Meta {
                    progress: Some(7),
                    modern: true,
                    sampling: false,
                    log: false,
                },
            }),
        };
        let mut expected = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": crate::asks::capabilities(false),
            "io.modelcontextprotocol/clientInfo": {"name": "toolshed", "version": env!("CARGO_PKG_VERSION")},
        });
        expected["trace"] = json!(1);
        expected["io.modelcontextprotocol/clientOther"] = json!(2);
        expected["progressToken"] = json!(7);
        assert_eq!(
            written(&request),
            json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read",
                "params": {"uri": "x", "_meta": expected}})
        );

        // Nothing to add: the params as they are; a notification has no id.
        let plain = Meta {
            progress: None,
            modern: false,
            sampling: false,
            log: false,
        };
        let note = Outgoing {
            jsonrpc: "2.0",
            id: None,
            method: "notifications/initialized",
            params: None::<Value>,
        };
        assert_eq!(
            written(&note),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
        assert_eq!(
            written(&WithMeta {
                params: &params,
                meta: plain
            }),
            params
        );

        let arguments = json!({"path": "a.txt"});
        let call = CallParams {
            name: "read",
            arguments: &arguments,
            input: None,
            meta: plain,
            trace: None,
        };
        assert_eq!(
            written(&call),
            json!({"name": "read", "arguments": {"path": "a.txt"}})
        );
        let call = CallParams {
            meta: Meta {
                progress: Some(3),
                modern: false,
                sampling: false,
                log: false,
            },
            ..call
        };
        assert_eq!(written(&call)["_meta"], json!({"progressToken": 3}));
        let traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let call = CallParams {
            trace: toolshed_core::trace_context::TraceParent::parse(traced, Some("a=1")),
            ..call
        };
        assert_eq!(
            written(&call)["_meta"],
            json!({"progressToken": 3, "traceparent": traced, "tracestate": "a=1"})
        );
    }

    #[test]
    fn replies_settle_requests_progress_is_routed_and_server_requests_are_answered() {
        let shared = Shared::default();
        let (tx, mut rx) = oneshot::channel();
        shared.lock_pending().insert(7, tx);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        shared.lock_progress().insert(
            7,
            ProgressSink::new(move |p: Progress| log.lock().unwrap().push(p.progress)),
        );
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 7, "progress": 0.5, "total": 1}});
        assert!(dispatch(progress, &shared, None).is_none());
        assert_eq!(*seen.lock().unwrap(), vec![Some(0.5)]);
        let reply = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}});
        assert!(dispatch(reply, &shared, None).is_none());
        assert!(matches!(rx.try_recv(), Ok(Ok(v)) if v == json!({"content": []})));

        let ping = json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"});
        let now = |message| {
            dispatch(message, &shared, None)
                .and_then(Answer::now)
                .unwrap()
        };
        assert_eq!(now(ping)["result"], json!({}));
        // Asked with no call of toolshed's in flight: nobody to put it to, said at once.
        let sampling = json!({"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage"});
        let refused = now(sampling);
        assert_eq!(refused["error"]["code"], -32603);
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no call"),
            "{refused}"
        );
        // A log message that is not an object (a server's mistake) is dropped, not a panic.
        let odd = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": "x"});
        assert!(dispatch(odd, &shared, None).is_none());
        let unknown = json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get"});
        assert_eq!(now(unknown)["error"]["code"], -32601);

        let (tx, mut rx) = oneshot::channel();
        shared.lock_pending().insert(8, tx);
        shared.close("the server exited".into());
        assert!(
            matches!(rx.try_recv(), Ok(Err(RpcError::Closed(why))) if why == "the server exited")
        );
    }
}

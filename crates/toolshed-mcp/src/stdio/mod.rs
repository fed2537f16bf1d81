//! Serving one client over standard input and output.
//!
//! The transport is our own, in front of rmcp's session: each line is parsed once, into
//! the message rmcp would have parsed, and a line that is not a valid message gets a
//! JSON-RPC error instead of silence (rmcp skips such lines, and a client waiting for the
//! reply would hang): `-32700` for what is not JSON (invalid UTF-8, a lone surrogate,
//! nesting past the parser's depth, a line over [`MAX_LINE_BYTES`]), `-32600` for JSON that
//! is not a request, `-32602` for a known method with unusable params (`tools/call` without
//! params). The reply carries the request's id whenever it can be read from the line —
//! found by a scan that needs neither valid UTF-8 nor bounded nesting — and `null`
//! otherwise. A broken notification gets no reply, as JSON-RPC says.
//!
//! Once the session has started, `tools/call` requests do not go through rmcp's session
//! loop: the transport hands each to a task of its own that runs rmcp's request handling
//! ([`rmcp::Service::handle_request`], so every protocol check stays rmcp's) and writes
//! the reply itself. The loop would spawn a task for the handler, carry its reply back
//! over a channel and spawn another task to write it — wake-ups between threads that cost
//! more than a small tool call does. Cancellation (`notifications/cancelled`) and the end
//! of the session reach these calls as they reach rmcp's: a cancelled call gets no reply,
//! and at the end of input the calls still running have 5 s to answer.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions,
    GetMeta, JsonRpcMessage, JsonRpcRequest, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{
    Peer, QuitReason, RequestContext, RoleServer, RxJsonRpcMessage, ServerInitializeError,
    TxJsonRpcMessage,
};
use rmcp::{Service, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use toolshed_core::oversized::Object;

use crate::McpServer;

/// The longest line read; a longer one is answered with a parse error and skipped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an oversized line is kept to look for its id.
const ID_SCAN_BYTES: usize = 64 * 1024;

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client's first messages were not a valid start of a session.
    #[error("the MCP client did not start a session: {0}")]
    Start(String),
    /// The session's task failed.
    #[error("the MCP session failed: {0}")]
    Session(String),
}

type Writer = Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// JSON-RPC lines over a reader and a writer, answering every line rmcp could not use.
pub(crate) struct LineTransport<R> {
    reader: BufReader<R>,
    writer: Writer,
    /// The line read so far. It lives here, not in `receive`'s future, because rmcp drops
    /// that future whenever something else happens first: what was read must survive it.
    line: Vec<u8>,
    /// Whether the line read so far is over [`MAX_LINE_BYTES`].
    oversized: bool,
    /// Where `tools/call` requests go once the session has started; `None`: all go to
    /// rmcp's loop.
    direct: Option<Arc<Direct>>,
}

impl<R: tokio::io::AsyncRead + Send + Unpin> LineTransport<R> {
    /// A transport reading `reader` and writing `writer`.
    pub(crate) fn new(reader: R, writer: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(Box::new(writer))),
            line: Vec::new(),
            oversized: false,
            direct: None,
        }
    }

    /// Answers `tools/call` through `direct` once it knows the session's peer.
    fn with_direct(mut self, direct: Arc<Direct>) -> Self {
        self.direct = Some(direct);
        self
    }

    /// `message` for rmcp's loop, or `None` when it was taken here: a `tools/call` (run by
    /// [`Direct`]) or the cancellation of one.
    fn take_direct(&self, message: ClientJsonRpcMessage) -> Option<ClientJsonRpcMessage> {
        let Some((direct, peer)) = self
            .direct
            .as_ref()
            .and_then(|d| d.server.session_peer().map(|p| (d, p)))
        else {
            return Some(message);
        };
        match message {
            // A request that names its own protocol version (the 2026-07-28 era) stays
            // with rmcp, which checks what the handler sends the client against that
            // version through a task-local only its loop can set.
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_))
                    && request.request.get_meta().protocol_version().is_none() =>
            {
                direct.start(request, peer.clone(), self.writer.clone());
                None
            }
            JsonRpcMessage::Notification(notification) => match &notification.notification {
                ClientNotification::CancelledNotification(cancelled)
                    if cancelled
                        .params
                        .request_id
                        .as_ref()
                        .is_some_and(|id| direct.cancel(id)) =>
                {
                    None
                }
                _ => Some(JsonRpcMessage::Notification(notification)),
            },
            other => Some(other),
        }
    }

    /// Reads until `self.line` holds a whole line, without its newline: `Some(oversized)`,
    /// where `oversized` says it was longer than [`MAX_LINE_BYTES`] (then only its start
    /// is kept); `None` at the end of input. Cancel-safe: dropped part way, it goes on
    /// from where it was on the next call. The caller clears the line once it is used.
    async fn next_line(&mut self) -> std::io::Result<Option<bool>> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                let pending = !self.line.is_empty() || self.oversized;
                return Ok(pending.then_some(self.oversized));
            }
            let (chunk, used, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            if self.line.len() + chunk.len() > MAX_LINE_BYTES {
                self.oversized = true;
            }
            let limit = if self.oversized {
                ID_SCAN_BYTES
            } else {
                MAX_LINE_BYTES
            };
            let room = limit.saturating_sub(self.line.len());
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.reader.consume(used);
            if done {
                return Ok(Some(self.oversized));
            }
        }
    }

    /// Tells the direct calls that no more input comes: their grace starts now, as
    /// rmcp's does for its own.
    fn input_ended(&self) {
        if let Some(direct) = &self.direct {
            direct.wind_down();
        }
    }

    /// Forgets the line just used.
    fn clear_line(&mut self) {
        self.line.clear();
        self.oversized = false;
        // A huge line's buffer is not kept for the small ones after it.
        if self.line.capacity() > 1 << 20 {
            self.line.shrink_to(64 * 1024);
        }
    }
}

/// Writes `line` (which ends in a newline) in one write, so that a reader sees whole
/// messages and each costs one system call.
async fn write_line(writer: &Writer, line: &[u8]) -> std::io::Result<()> {
    write_flushed(&mut **writer.lock().await, line).await
}

/// Writes `line` to a writer already held, and flushes it.
async fn write_flushed(
    writer: &mut (dyn AsyncWrite + Send + Unpin),
    line: &[u8],
) -> std::io::Result<()> {
    writer.write_all(line).await?;
    writer.flush().await
}

/// The standard methods rmcp would take as a custom request when their params do not fit
/// (`tools/call` without params): an error for the client, not a silent "unknown method".
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/get",
];

/// The message on `line`, or the error reply it gets instead (`None`: no reply).
pub(crate) fn read_message(
    line: &[u8],
    oversized: bool,
) -> Result<ClientJsonRpcMessage, Option<Value>> {
    if oversized {
        return Err(rejection(line, true));
    }
    if let Some(call) = tools_call(line) {
        return Ok(call);
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(rmcp::model::JsonRpcMessage::Request(request))
            if matches!(&request.request, ClientRequest::CustomRequest(custom)
                if STANDARD_METHODS.contains(&custom.method.as_str())) =>
        {
            let method = request.request.method().to_string();
            let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
            let hint = match method.as_str() {
                "tools/call" => " (tools/call needs params {\"name\": …, \"arguments\": {…}})",
                "tasks/get" | "tasks/update" | "tasks/cancel" => {
                    " (it needs params {\"taskId\": …}, the id tools/call answered)"
                }
                _ => "",
            };
            Err(Some(json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32602,
                "message": format!("invalid params for {method}: they are missing or do not match the method{hint}")
            }})))
        }
        Ok(message) => Ok(message),
        Err(_) => Err(rejection(line, false)),
    }
}

/// A `tools/call` request as clients send it: nothing but these four members.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsCallLine {
    #[expect(dead_code, reason = "checked by its type: only \"2.0\" parses")]
    jsonrpc: rmcp::model::JsonRpcVersion2_0,
    id: RequestId,
    #[expect(dead_code, reason = "checked by its type: only \"tools/call\" parses")]
    method: rmcp::model::CallToolRequestMethod,
    params: Object<CallToolRequestParams>,
}

/// `line` as the message rmcp makes of it, when it is a plain `tools/call` request; `None`
/// for anything else, which then goes the general way.
///
/// The general way parses a message through serde's buffering (rmcp's message types are
/// untagged and flattened): about a twentieth of a small call's CPU. A `tools/call` is
/// parsed here straight into its params, and `_meta` moved where rmcp puts it (the
/// request's extensions), so what comes out is what rmcp would have made; a test checks
/// both agree.
fn tools_call(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    // A line that cannot be one is not parsed twice; one that is not UTF-8 is the
    // general way's to refuse.
    let text = std::str::from_utf8(line).ok()?;
    if !text.contains(r#""tools/call""#) {
        return None;
    }
    let Object(ToolsCallLine {
        id,
        params: Object(mut params),
        ..
    }) = serde_json::from_str(text).ok()?;
    let meta = params.meta.take();
    let mut request = rmcp::model::CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        id,
        ClientRequest::CallToolRequest(request),
    )))
}

/// The error reply to a line that is not a usable message, or `None` when it must get
/// none (an unusable notification, a blank line).
fn rejection(line: &[u8], oversized: bool) -> Option<Value> {
    let error = |id: Value, code: i64, message: String| {
        Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    };
    if oversized {
        return error(
            scan_id(line),
            -32700,
            format!(
                "parse error: the message is longer than {MAX_LINE_BYTES} bytes; send less in one message"
            ),
        );
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let e = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(_) => return None,
        Err(e) => e,
    };
    if !matches!(e.classify(), serde_json::error::Category::Data) {
        return error(scan_id(line), -32700, format!("parse error: {e}"));
    }
    // Valid JSON, but not a message rmcp takes.
    let value: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
    let Some(object) = value.as_object() else {
        return error(
            Value::Null,
            -32600,
            "invalid request: a message is one JSON object (batches are not supported)".into(),
        );
    };
    let id = object.get("id").cloned();
    let method = object.get("method").and_then(Value::as_str);
    match (id, method) {
        // A response the client sent, or a notification: nothing to answer.
        (_, None) if object.contains_key("result") || object.contains_key("error") => None,
        (None, Some(_)) => None,
        // Neither a request nor a notification (`{}`): JSON-RPC's invalid request, with a
        // null id since none can be read.
        (None, None) => error(
            Value::Null,
            -32600,
            "invalid request: a message needs a `method` (and an `id` to be answered)".into(),
        ),
        (Some(id), Some("tools/call")) if !object.contains_key("params") => error(
            id,
            -32602,
            "invalid params: tools/call needs params {\"name\": …, \"arguments\": {…}}".into(),
        ),
        (Some(id), Some(method)) => error(id, -32602, format!("invalid params for {method}: {e}")),
        (Some(id), None) => error(id, -32600, format!("invalid request: {e}")),
    }
}

/// The value of the top-level `"id"` member of a JSON object, found without parsing the
/// rest (which may be invalid UTF-8, too deep, or cut off); `null` when there is none or
/// it is not a number or a string.
pub(crate) fn scan_id(bytes: &[u8]) -> Value {
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && expect_key && bytes.get(start..j) == Some(b"id".as_slice()) {
                    let mut k = j + 1;
                    while bytes.get(k).is_some_and(u8::is_ascii_whitespace) {
                        k += 1;
                    }
                    if bytes.get(k) == Some(&b':') {
                        let rest = bytes.get(k + 1..).unwrap_or_default();
                        let value = serde_json::Deserializer::from_slice(rest)
                            .into_iter::<Value>()
                            .next()
                            .and_then(Result::ok);
                        return match value {
                            Some(v @ (Value::Number(_) | Value::String(_))) => v,
                            _ => Value::Null,
                        };
                    }
                }
                expect_key = false;
                i = j + 1;
                continue;
            }
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expect_key = depth == 1,
            _ => {}
        }
        i += 1;
    }
    Value::Null
}

impl<R> rmcp::transport::Transport<RoleServer> for LineTransport<R>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            write_line(&writer, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let oversized = match self.next_line().await {
                Ok(Some(oversized)) => oversized,
                Ok(None) => {
                    self.input_ended();
                    return None;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "stdin failed");
                    self.input_ended();
                    return None;
                }
            };
            // A large `tools/call` loses the arguments over its tool's limits before it
            // is parsed: their trees would cost many times their text.
            let stripped = match &self.direct {
                Some(direct) if !oversized => {
                    toolshed_core::oversized::strip_tools_call(&self.line, |name| {
                        direct.server.argument_limits(name)
                    })
                }
                _ => None,
            };
            let read = match stripped {
                None => read_message(&self.line, oversized),
                Some(stripped) => read_message(&stripped.text, false).map(|mut message| {
                    if let JsonRpcMessage::Request(request) = &mut message
                        && let ClientRequest::CallToolRequest(call) = &mut request.request
                    {
                        call.extensions.insert(crate::TransportArguments::new(
                            stripped.oversized,
                            Vec::new(),
                        ));
                    }
                    message
                }),
            };
            self.clear_line();
            let reply = match read {
                Ok(message) => match self.take_direct(message) {
                    Some(message) => return Some(message),
                    None => continue,
                },
                Err(reply) => reply,
            };
            if let Some(reply) = reply {
                tracing::debug!(reply = %reply, "answered an unusable message");
                // Written by a task of its own: this future may be dropped at any await,
                // and a reply cut in half would corrupt the stream.
                let writer = self.writer.clone();
                tokio::spawn(async move {
                    let line = format!("{reply}\n");
                    if let Err(e) = write_line(&writer, line.as_bytes()).await {
                        tracing::debug!(error = %e, "cannot write to stdout");
                    }
                });
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}

/// Room for a reply's envelope (`jsonrpc`, `id`, `result`, the content blocks' keys).
const REPLY_ENVELOPE_BYTES: usize = 256;

/// Room for the line of a reply carrying `result`: its texts and images, with an eighth
/// more for escapes. Serialized into serde_json's default start (128 bytes), a reply of a
/// few KiB was grown by doubling, copied whole each time.
fn reply_capacity(result: &rmcp::model::ServerResult) -> usize {
    use rmcp::model::ContentBlock;
    let rmcp::model::ServerResult::CallToolResult(call) = result else {
        return REPLY_ENVELOPE_BYTES;
    };
    let payload: usize = call
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.len(),
            ContentBlock::Image(i) => i.data.len(),
            _ => 0,
        })
        .sum();
    // A structured result repeats (in JSON) what its text block says.
    let structured = if call.structured_content.is_some() {
        payload
    } else {
        0
    };
    REPLY_ENVELOPE_BYTES + (payload + structured) / 8 * 9
}

/// `tools/call` requests run beside rmcp's session loop (see the module's docs).
pub(crate) struct Direct {
    server: Arc<McpServer>,
    calls: std::sync::Mutex<Calls>,
    /// Notified whenever a call has finished.
    finished: tokio::sync::Notify,
    /// The parent of every call's handler token: cancelled at a shutdown (at once, as
    /// rmcp cancels its own handlers) or when the grace after the end of input is over.
    stop: CancellationToken,
    /// Cancelled when serving ends: no call replies after it.
    ended: CancellationToken,
    /// When the grace for running calls began: the end of input, or a shutdown.
    winding_down: std::sync::OnceLock<tokio::time::Instant>,
    /// The writer the replies go to (known from the first call; given up at the end, so
    /// that the output closes when the transport does).
    writer: std::sync::Mutex<Option<Writer>>,
}

#[derive(Default)]
struct Calls {
    /// The calls that may still reply, by request id, each with its handler's token:
    /// cancelling one takes it out. Each with its number, so that a call does not take out
    /// a later one with the same id.
    replying: HashMap<RequestId, (u64, CancellationToken)>,
    /// The numbers of the calls the client cancelled whose tasks have not finished: they
    /// do not reply.
    withdrawn: Vec<u64>,
    /// The number of the next call.
    next: u64,
    /// The calls whose tasks have not finished (cancelled ones included).
    running: usize,
}

/// One call's place in [`Calls`], given back when its task ends, however it ends (a
/// handler that panics included).
struct Running {
    direct: Arc<Direct>,
    id: RequestId,
    number: u64,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut calls = self.direct.calls();
        if calls
            .replying
            .get(&self.id)
            .is_some_and(|(number, _)| *number == self.number)
        {
            calls.replying.remove(&self.id);
        }
        if !calls.withdrawn.is_empty() {
            calls.withdrawn.retain(|number| *number != self.number);
        }
        calls.running -= 1;
        drop(calls);
        self.direct.finished.notify_waiters();
    }
}

impl Direct {
    fn new(server: Arc<McpServer>) -> Self {
        Self {
            server,
            calls: std::sync::Mutex::default(),
            finished: tokio::sync::Notify::new(),
            stop: CancellationToken::new(),
            ended: CancellationToken::new(),
            winding_down: std::sync::OnceLock::new(),
            writer: std::sync::Mutex::new(None),
        }
    }

    /// Starts the grace of the running calls (the first time only).
    fn wind_down(&self) {
        let _ = self.winding_down.set(tokio::time::Instant::now());
    }

    /// A shutdown: running calls are cancelled at once, and still have the grace to send
    /// what they answer then.
    fn shut_down(&self) {
        self.wind_down();
        self.stop.cancel();
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `request` in a task of its own, as rmcp's loop would, and writes its reply
    /// unless the call was cancelled first (by the client, or by the end of serving).
    fn start(
        self: &Arc<Self>,
        request: JsonRpcRequest<ClientRequest>,
        peer: Peer<RoleServer>,
        writer: Writer,
    ) {
        let JsonRpcRequest {
            id, mut request, ..
        } = request;
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert_with(|| writer.clone());
        // The handler's token: cancelled by the client's cancellation, by the end of
        // serving, and once the call has replied, which ends what the handler left
        // running under it.
        let cancel = self.stop.child_token();
        let running = {
            let mut calls = self.calls();
            let number = calls.next;
            calls.next += 1;
            calls.replying.insert(id.clone(), (number, cancel.clone()));
            calls.running += 1;
            Running {
                direct: self.clone(),
                id: id.clone(),
                number,
            }
        };
        let mut context = RequestContext::new(id.clone(), peer);
        context.ct = cancel.clone();
        context.meta = std::mem::take(request.get_meta_mut());
        context.extensions = std::mem::take(request.extensions_mut());
        let server = self.server.clone();
        // Boxed: the handler's future is large (the whole pipeline's state), and the task
        // around it is moved several times on its way into the runtime.
        let handler = Box::pin(async move { server.handle_request(request, context).await });
        let task = async move {
            let result = handler.await;
            cancel.cancel();
            let capacity = match &result {
                Ok(result) => reply_capacity(result),
                Err(_) => REPLY_ENVELOPE_BYTES,
            };
            let reply = match result {
                Ok(result) => ServerJsonRpcMessage::response(result, id.clone()),
                Err(error) => {
                    tracing::debug!(%id, ?error, "response error");
                    ServerJsonRpcMessage::error(error, Some(id.clone()))
                }
            };
            let mut line = Vec::with_capacity(capacity);
            if let Err(e) = serde_json::to_writer(&mut line, &reply) {
                tracing::warn!(error = %e, "a reply could not be serialized");
                return;
            }
            line.push(b'\n');
            // Checked with the writer held: once serving has ended (which takes the
            // writer after withdrawing every reply), nothing more is written.
            let mut out = writer.lock().await;
            let direct = &running.direct;
            if direct.ended.is_cancelled() || direct.calls().withdrawn.contains(&running.number) {
                tracing::debug!(%id, "dropping the reply to a cancelled request");
                return;
            }
            if let Err(e) = write_flushed(&mut **out, &line).await {
                tracing::debug!(error = %e, "cannot write to stdout");
            }
        };
        // In the session's span, as rmcp runs its handlers.
        tokio::spawn(tracing::Instrument::instrument(
            task,
            tracing::Span::current(),
        ));
    }

    /// Cancels the call `id` if it is one of these; then it will not reply.
    fn cancel(&self, id: &RequestId) -> bool {
        let mut calls = self.calls();
        let Some((number, cancel)) = calls.replying.remove(id) else {
            return false;
        };
        calls.withdrawn.push(number);
        drop(calls);
        tracing::debug!(%id, "cancelled");
        cancel.cancel();
        true
    }

    /// Waits for the running calls to reply until `grace` after the grace began (the end
    /// of input or a shutdown; now if neither came), then cancels those left and
    /// withdraws their replies. Returns with no reply being written.
    async fn end(&self, grace: Duration) {
        let began = *self.winding_down.get_or_init(tokio::time::Instant::now);
        let drained = async {
            loop {
                let finished = self.finished.notified();
                if self.calls().running == 0 {
                    return;
                }
                finished.await;
            }
        };
        if tokio::time::timeout_at(began + grace, drained)
            .await
            .is_err()
        {
            tracing::warn!("timed out waiting for running tool calls to reply");
        }
        self.ended.cancel();
        self.stop.cancel();
        // A reply being written when the replies were withdrawn is finished first (a
        // reader stuck on a full pipe bounds that wait).
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(writer) = writer {
            let _ = tokio::time::timeout(Duration::from_secs(1), writer.lock()).await;
        }
    }
}

/// Serves `server` on stdin/stdout until the client closes stdin or `shutdown` completes
/// (a signal, or the parent process gone). Only JSON-RPC is written to stdout; a client
/// that leaves before starting a session is a clean end.
pub async fn serve_stdio(
    server: McpServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    serve_lines(server, stdin, stdout, shutdown).await
}

/// Serves `server` with newline-delimited JSON-RPC read from `reader` and written to
/// `writer`, as [`serve_stdio`] does on stdin and stdout (a socket, a pipe, a test's
/// in-memory stream).
pub async fn serve_lines<R, W>(
    server: McpServer,
    reader: R,
    writer: W,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let server = Arc::new(server);
    let direct = Arc::new(Direct::new(server.clone()));
    let transport = LineTransport::new(reader, writer).with_direct(direct.clone());
    tokio::pin!(shutdown);
    let running = tokio::select! {
        started = server.clone().serve(transport) => match started {
            Ok(running) => running,
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Start(e.to_string())),
        },
        () = &mut shutdown => return Ok(()),
    };
    // A session started without `initialize` (2026-07-28) names its peer only now.
    server.know_peer(running.peer());
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = shutdown => {
            direct.shut_down();
            cancel.cancel();
            waiting.await
        }
    };
    // The same grace rmcp's loop gives its own calls, counted from the same moment: 5 s
    // after the end of input, 2 s after a shutdown (whose calls were cancelled at once).
    let grace = match &ended {
        Ok(QuitReason::Closed) => Duration::from_secs(5),
        _ => Duration::from_secs(2),
    };
    direct.end(grace).await;
    // Logged once every reply is out, so also by a host whose logging opened late.
    tracing::debug!(?ended, "the stdio session ended");
    match ended {
        Ok(QuitReason::JoinError(e)) => Err(ServeError::Session(e.to_string())),
        Ok(_) => Ok(()),
        Err(e) => Err(ServeError::Session(e.to_string())),
    }
}

#[cfg(test)]
mod tests;

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

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::service::{
    QuitReason, RoleServer, RxJsonRpcMessage, ServerInitializeError, TxJsonRpcMessage,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

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
}

impl<R: tokio::io::AsyncRead + Send + Unpin> LineTransport<R> {
    /// A transport reading `reader` and writing `writer`.
    pub(crate) fn new(reader: R, writer: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(Box::new(writer))),
            line: Vec::new(),
            oversized: false,
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
    let mut writer = writer.lock().await;
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
];

/// The message on `line`, or the error reply it gets instead (`None`: no reply).
pub(crate) fn read_message(
    line: &[u8],
    oversized: bool,
) -> Result<ClientJsonRpcMessage, Option<Value>> {
    if oversized {
        return Err(rejection(line, true));
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(rmcp::model::JsonRpcMessage::Request(request))
            if matches!(&request.request, ClientRequest::CustomRequest(custom)
                if STANDARD_METHODS.contains(&custom.method.as_str())) =>
        {
            let method = request.request.method().to_string();
            let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
            let hint = if method == "tools/call" {
                " (tools/call needs params {\"name\": …, \"arguments\": {…}})"
            } else {
                ""
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
        // A notification or a response the client sent: nothing to answer.
        (None, _) => None,
        (Some(_), None) if object.contains_key("result") || object.contains_key("error") => None,
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
                Ok(None) => return None,
                Err(e) => {
                    tracing::debug!(error = %e, "stdin failed");
                    return None;
                }
            };
            let read = read_message(&self.line, oversized);
            self.clear_line();
            let reply = match read {
                Ok(message) => return Some(message),
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

/// Serves `server` on stdin/stdout until the client closes stdin or `shutdown` completes
/// (a signal, or the parent process gone). Only JSON-RPC is written to stdout; a client
/// that leaves before starting a session is a clean end.
pub async fn serve_stdio(
    server: McpServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let transport = LineTransport::new(stdin, stdout);
    tokio::pin!(shutdown);
    let running = tokio::select! {
        started = server.serve(transport) => match started {
            Ok(running) => running,
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Start(e.to_string())),
        },
        () = &mut shutdown => return Ok(()),
    };
    let cancel = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = shutdown => {
            cancel.cancel();
            waiting.await
        }
    };
    match ended {
        Ok(QuitReason::JoinError(e)) => Err(ServeError::Session(e.to_string())),
        Ok(_) => Ok(()),
        Err(e) => Err(ServeError::Session(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp drops `receive`'s future whenever another event comes first; a line read in
    /// part must not be lost with it (the request would never be answered).
    #[tokio::test]
    async fn a_receive_dropped_half_way_through_a_line_loses_nothing() {
        use rmcp::transport::Transport;
        use tokio::io::AsyncWriteExt;
        let (mut client, server) = tokio::io::duplex(64);
        let mut transport = LineTransport::new(server, tokio::io::sink());
        let line = br#"{"jsonrpc":"2.0","id":41,"method":"ping"}"#;
        client.write_all(&line[..20]).await.unwrap();
        {
            let receive = Transport::<RoleServer>::receive(&mut transport);
            let dropped = tokio::time::timeout(std::time::Duration::from_millis(50), receive).await;
            assert!(dropped.is_err(), "half a line is not a message");
        }
        client.write_all(&line[20..]).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        let message = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            Transport::<RoleServer>::receive(&mut transport),
        )
        .await
        .expect("the whole line is read once the rest arrives")
        .unwrap();
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(value["id"], 41, "{value}");
    }

    #[test]
    fn the_id_is_found_however_broken_the_rest_is() {
        assert_eq!(
            scan_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            json!(7)
        );
        assert_eq!(scan_id(br#"{"params":{"id":1},"id":"a-b"}"#), json!("a-b"));
        let deep = format!(
            "{{\"id\": 9, \"params\": {}{}}}",
            "[".repeat(500),
            "]".repeat(500)
        );
        assert_eq!(scan_id(deep.as_bytes()), json!(9));
        let mut bad = br#"{"method":"tools/call","params":{"s":"#.to_vec();
        bad.extend_from_slice(&[b'"', 0xff, 0xfe, b'"']);
        bad.extend_from_slice(br#"},"id":12}"#);
        assert_eq!(scan_id(&bad), json!(12));
        assert_eq!(scan_id(br#"{"x":"\"id\":4"}"#), Value::Null);
        assert_eq!(scan_id(br#"{"id":{"nested":1}}"#), Value::Null);
        assert_eq!(scan_id(b"not json"), Value::Null);
    }

    #[test]
    fn every_unusable_request_gets_an_error_with_its_id() {
        let code = |line: &[u8]| {
            read_message(line, false)
                .err()
                .flatten()
                .map(|r| (r["id"].clone(), r["error"]["code"].clone()))
        };
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(code(deep.as_bytes()), Some((json!(3), json!(-32700))));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"\ud800"}}"#),
            Some((json!(4), json!(-32700)))
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#),
            Some((json!(5), json!(-32602)))
        );
        assert_eq!(code(b"[1,2]"), Some((Value::Null, json!(-32600))));
        assert_eq!(code(b"{nope"), Some((Value::Null, json!(-32700))));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(b"   "), None);
        let oversized = read_message(br#"{"jsonrpc":"2.0","id":"big","method":"#, true)
            .unwrap_err()
            .unwrap();
        assert_eq!(
            (oversized["id"].clone(), oversized["error"]["code"].clone()),
            (json!("big"), json!(-32700))
        );
    }
}

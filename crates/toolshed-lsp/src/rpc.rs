//! JSON-RPC with a language server over its standard input and output: `Content-Length`
//! framed messages, requests matched to answers by id, the server's own requests answered,
//! its notifications handed to a callback.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc, oneshot};

/// The largest message read from a server (a workspace's symbols can be large).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// The most messages waiting to be written.
const QUEUE: usize = 256;

/// What a server said to the client without being asked: a notification.
pub(crate) type OnNotice = Box<dyn Fn(&str, Value) + Send + Sync>;
/// How the client answers a request of the server (`None`: method not found).
pub(crate) type OnRequest = Box<dyn Fn(&str, &Value) -> Option<Value> + Send + Sync>;

type Pending = Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>;

/// Why a request or a notification to a language server failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RpcError {
    /// The connection is gone: the server exited or stopped reading.
    #[error("the language server stopped")]
    Stopped,
    /// No answer within the time given (the request was cancelled).
    #[error("the language server did not answer `{method}` within {secs} s")]
    Timeout {
        /// The request's method.
        method: String,
        /// The time given, in seconds.
        secs: u64,
    },
    /// The server answered with an error.
    #[error("{message} ({code})")]
    Answered {
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// The message could not be written as JSON.
    #[error("{0}")]
    Encode(String),
}

impl RpcError {
    /// Whether the server refused because the document changed while it worked
    /// (`ContentModified`): asking again gives an answer for the new text.
    pub(crate) fn content_modified(&self) -> bool {
        matches!(self, Self::Answered { code, message }
            if *code == -32801 || message.to_lowercase().contains("content modified"))
    }
}

/// One connection to a language server.
pub(crate) struct Rpc {
    out: mpsc::Sender<Vec<u8>>,
    pending: Arc<Pending>,
    next: AtomicI64,
    closed: Arc<AtomicBool>,
    closed_notify: Arc<Notify>,
}

impl Rpc {
    /// Starts reading `input` and writing `output`.
    pub(crate) fn start<R, W>(
        input: R,
        output: W,
        on_notice: OnNotice,
        on_request: OnRequest,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, mut queue) = mpsc::channel::<Vec<u8>>(QUEUE);
        let pending: Arc<Pending> = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let closed_notify = Arc::new(Notify::new());
        let close = {
            let (pending, closed, notify) =
                (pending.clone(), closed.clone(), closed_notify.clone());
            move || {
                closed.store(true, Ordering::SeqCst);
                let waiting: Vec<_> = pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .drain()
                    .collect();
                for (_, tx) in waiting {
                    let _ = tx.send(Err(RpcError::Stopped));
                }
                notify.notify_waiters();
            }
        };
        let mut output = output;
        let writer_close = close.clone();
        tokio::spawn(async move {
            while let Some(body) = queue.recv().await {
                let header = format!("Content-Length: {}\r\n\r\n", body.len());
                let written = async {
                    output.write_all(header.as_bytes()).await?;
                    output.write_all(&body).await?;
                    output.flush().await
                }
                .await;
                if written.is_err() {
                    break;
                }
            }
            writer_close();
        });
        let reader_pending = pending.clone();
        let replies = out.clone();
        tokio::spawn(async move {
            let mut input = BufReader::new(input);
            while let Some(message) = read_message(&mut input).await {
                dispatch(message, &reader_pending, &replies, &on_notice, &on_request);
            }
            close();
        });
        Self {
            out,
            pending,
            next: AtomicI64::new(1),
            closed,
            closed_notify,
        }
    }

    /// Whether the connection is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Waits until the connection is gone.
    pub(crate) async fn closed(&self) {
        let notified = self.closed_notify.notified();
        if !self.is_closed() {
            notified.await;
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(body).await
    }

    async fn send(&self, body: Value) -> Result<(), RpcError> {
        if self.is_closed() {
            return Err(RpcError::Stopped);
        }
        let bytes = serde_json::to_vec(&body).map_err(|e| RpcError::Encode(e.to_string()))?;
        self.out.send(bytes).await.map_err(|_| RpcError::Stopped)
    }

    /// Sends a request and waits at most `timeout` for its answer; a request not answered
    /// in time is cancelled (`$/cancelRequest`).
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        // A call given up (its tool call cancelled, or timed out) takes its entry with it
        // and tells the server to stop working on it.
        struct Forget<'a>(&'a Rpc, i64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                let waiting = self
                    .0
                    .pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&self.1)
                    .is_some();
                if waiting {
                    let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": self.1}});
                    if let Ok(bytes) = serde_json::to_vec(&cancel) {
                        let _ = self.0.out.try_send(bytes);
                    }
                }
            }
        }
        let _forget = Forget(self, id);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(body).await?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcError::Stopped),
            Err(_) => {
                // The drop guard sends `$/cancelRequest`.
                Err(RpcError::Timeout {
                    method: method.to_string(),
                    secs: timeout.as_secs(),
                })
            }
        }
    }
}

fn dispatch(
    message: Value,
    pending: &Pending,
    replies: &mpsc::Sender<Vec<u8>>,
    on_notice: &OnNotice,
    on_request: &OnRequest,
) {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").filter(|id| !id.is_null()).cloned();
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let reply = match on_request(method, &params) {
                Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                None => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("{method} is not supported")}}),
            };
            if let Ok(bytes) = serde_json::to_vec(&reply) {
                // A full queue means the server is not reading: dropping its answer is
                // better than blocking the reader that would drain it.
                let _ = replies.try_send(bytes);
            }
        }
        (Some(method), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            on_notice(method, params);
        }
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else { return };
            let waiting = pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            if let Some(tx) = waiting {
                let answer = match message.get("error") {
                    Some(error) => Err(RpcError::Answered {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown error")
                            .to_string(),
                    }),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(answer);
            }
        }
        (None, None) => {}
    }
}

/// The next message, or `None` at the end of the stream or on a framing error.
async fn read_message<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> Option<Value> {
    loop {
        let mut length: Option<usize> = None;
        let mut line = String::new();
        loop {
            line.clear();
            let n = input.read_line(&mut line).await.ok()?;
            if n == 0 {
                return None;
            }
            if line.len() > 4096 {
                return None;
            }
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                if length.is_some() {
                    break;
                }
                continue;
            }
            if let Some((name, value)) = trimmed.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok();
            }
        }
        let length = length?;
        if length > MAX_MESSAGE {
            return None;
        }
        let mut body = vec![0u8; length];
        input.read_exact(&mut body).await.ok()?;
        // A message that is not JSON is skipped; the stream stays in step.
        if let Ok(value) = serde_json::from_slice(&body) {
            return Some(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_answers_notifications_and_the_servers_requests() {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (server_read, mut server_write) = tokio::io::split(server_end);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let rpc = Rpc::start(
            client_read,
            client_write,
            Box::new(move |method, params| {
                log.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((method.to_string(), params))
            }),
            Box::new(|method, _| (method == "workspace/configuration").then(|| json!([null]))),
        );
        let server = tokio::spawn(async move {
            let mut input = BufReader::new(server_read);
            let request = read_message(&mut input).await.unwrap_or_default();
            let frame = |v: Value| {
                let body = v.to_string();
                format!("Content-Length: {}\r\n\r\n{body}", body.len())
            };
            let script = [
                frame(json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"message": "hi"}})),
                frame(json!({"jsonrpc": "2.0", "id": 7, "method": "workspace/configuration", "params": {}})),
                frame(json!({"jsonrpc": "2.0", "id": 8, "method": "unknown/thing"})),
                frame(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["params"]}})),
            ]
            .concat();
            server_write
                .write_all(script.as_bytes())
                .await
                .unwrap_or_default();
            let first = read_message(&mut input).await.unwrap_or_default();
            let second = read_message(&mut input).await.unwrap_or_default();
            (first, second, server_write)
        });
        let answer = rpc
            .call("test/echo", json!({"x": 1}), Duration::from_secs(5))
            .await;
        assert_eq!(answer, Ok(json!({"echo": {"x": 1}})));
        let (first, second, server_write) = server.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first, json!({"jsonrpc": "2.0", "id": 7, "result": [null]}));
        assert_eq!(second["error"]["code"], -32601);
        assert_eq!(
            seen.lock().unwrap_or_else(|e| e.into_inner())[0].0,
            "window/logMessage"
        );
        // A request never answered times out; the end of the stream fails what waits.
        let late = rpc
            .call("test/never", json!({}), Duration::from_millis(50))
            .await;
        assert!(
            late.is_err_and(|e| matches!(e, RpcError::Timeout { .. })
                && e.to_string().contains("did not answer"))
        );
        drop(server_write);
        tokio::time::timeout(Duration::from_secs(5), rpc.closed())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(rpc.is_closed());
    }
}

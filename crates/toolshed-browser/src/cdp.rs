//! A small DevTools protocol client over Chromium's `--remote-debugging-pipe`: JSON
//! messages ended by a NUL byte, commands written to the browser's fd 3, replies and
//! events read from its fd 4.
//!
//! A pipe, not a port: nothing else on the machine can connect to the browser and drive
//! it (a debugging port on loopback is open to every local process). Every command has a
//! deadline — a crashed renderer never answers — and when the browser's end closes, every
//! waiting command fails at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, oneshot};

/// The largest message read: a full-page screenshot, base64-encoded, is the largest.
const MAX_MESSAGE: u64 = 96 * 1024 * 1024;
/// Events kept for a slow listener before the oldest are dropped.
const EVENT_BACKLOG: usize = 1024;
/// The method of the event sent to listeners when the browser's end closes.
pub(super) const DISCONNECTED: &str = "Toolshed.disconnected";

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CdpError {
    /// The browser's end of the pipe closed: it exited or was killed.
    Closed,
    /// No reply within the deadline.
    Timeout(String),
    /// The browser answered with an error.
    Protocol(String),
}

impl std::fmt::Display for CdpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed => f.write_str("the browser is gone (it exited or was killed)"),
            Self::Timeout(method) => write!(f, "the browser did not answer `{method}` in time"),
            Self::Protocol(message) => f.write_str(message),
        }
    }
}

/// An event the browser sent.
#[derive(Debug)]
pub(crate) struct Event {
    /// The page session it belongs to (`None`: the browser's own).
    pub session: Option<String>,
    /// E.g. `Page.loadEventFired`.
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

type Waiting = HashMap<u64, oneshot::Sender<Result<Value, CdpError>>>;

/// One connection to a browser.
pub(crate) struct Cdp {
    writer: tokio::sync::Mutex<pipe::Sender>,
    next_id: AtomicU64,
    waiting: Arc<Mutex<Waiting>>,
    events: broadcast::Sender<Arc<Event>>,
    closed: Arc<AtomicBool>,
}

impl Cdp {
    /// Speaks the protocol over `reader` (the browser's fd 4) and `writer` (its fd 3).
    pub(super) fn start(reader: pipe::Receiver, writer: pipe::Sender) -> Arc<Self> {
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let cdp = Arc::new(Self {
            writer: tokio::sync::Mutex::new(writer),
            next_id: AtomicU64::new(1),
            waiting: Arc::default(),
            events: events.clone(),
            closed: Arc::default(),
        });
        let (waiting, closed) = (cdp.waiting.clone(), cdp.closed.clone());
        tokio::spawn(async move {
            read_all(reader, &waiting, &events).await;
            closed.store(true, Ordering::Release);
            let pending = std::mem::take(&mut *waiting.lock().unwrap_or_else(|e| e.into_inner()));
            for (_, reply) in pending {
                let _ = reply.send(Err(CdpError::Closed));
            }
            let _ = events.send(Arc::new(Event {
                session: None,
                method: DISCONNECTED.into(),
                params: Value::Null,
            }));
        });
        cdp
    }

    /// Whether the browser's end has closed.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Events from now on (subscribe before sending the command whose events you wait for).
    pub(super) fn events(&self) -> broadcast::Receiver<Arc<Event>> {
        self.events.subscribe()
    }

    /// Sends `method` (to the page `session`, or the browser) and waits at most `timeout`
    /// for its result.
    pub(super) async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        if self.is_closed() {
            return Err(CdpError::Closed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_string());
        }
        let mut bytes =
            serde_json::to_vec(&message).map_err(|e| CdpError::Protocol(e.to_string()))?;
        bytes.push(0);
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, tx);
        let sent = tokio::time::timeout(timeout, async {
            let mut writer = self.writer.lock().await;
            writer.write_all(&bytes).await
        })
        .await;
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                self.lock().remove(&id);
                return Err(CdpError::Closed);
            }
            Err(_) => {
                self.lock().remove(&id);
                return Err(CdpError::Timeout(method.to_string()));
            }
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => {
                self.lock().remove(&id);
                Err(CdpError::Timeout(method.to_string()))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads messages until the pipe closes (or sends one too large to be a reply).
async fn read_all(
    reader: pipe::Receiver,
    waiting: &Mutex<Waiting>,
    events: &broadcast::Sender<Arc<Event>>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_MESSAGE)
            .read_until(0, &mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) if buf.last() != Some(&0) => {
                tracing::warn!(
                    "a DevTools message was larger than {MAX_MESSAGE} bytes or cut off; closing the browser connection"
                );
                return;
            }
            Ok(_) => {}
        }
        buf.pop();
        let Ok(mut message) = serde_json::from_slice::<Value>(&buf) else {
            tracing::warn!("the browser sent a message that is not JSON; ignored");
            continue;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let reply = waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            if let Some(reply) = reply {
                let result = match message.get_mut("error") {
                    Some(error) => Err(CdpError::Protocol(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("the browser refused the command")
                            .to_string(),
                    )),
                    None => Ok(message
                        .get_mut("result")
                        .map(Value::take)
                        .unwrap_or(Value::Null)),
                };
                let _ = reply.send(result);
            }
            continue;
        }
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            continue;
        };
        let event = Event {
            session: message
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string),
            method: method.to_string(),
            params: message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or(Value::Null),
        };
        // No listener is fine: most events are only waited for now and then.
        let _ = events.send(Arc::new(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected pair of pipes standing in for the browser: what the client writes, and a
    /// writer for what the "browser" answers.
    fn pair() -> (Arc<Cdp>, pipe::Receiver, pipe::Sender) {
        let (to_browser_tx, to_browser_rx) = pipe::pipe().expect("pipe");
        let (from_browser_tx, from_browser_rx) = pipe::pipe().expect("pipe");
        (
            Cdp::start(from_browser_rx, to_browser_tx),
            to_browser_rx,
            from_browser_tx,
        )
    }

    async fn next_message(reader: &mut BufReader<pipe::Receiver>) -> Value {
        let mut buf = Vec::new();
        reader.read_until(0, &mut buf).await.expect("read");
        buf.pop();
        serde_json::from_slice(&buf).expect("json")
    }

    #[tokio::test]
    async fn replies_find_their_callers_and_events_their_listeners() {
        let (cdp, to_browser, mut browser) = pair();
        let mut events = cdp.events();
        let mut reader = BufReader::new(to_browser);
        let calling = {
            let cdp = cdp.clone();
            tokio::spawn(async move {
                cdp.call(
                    "Page.navigate",
                    json!({"url": "http://a/"}),
                    Some("S1"),
                    Duration::from_secs(5),
                )
                .await
            })
        };
        let sent = next_message(&mut reader).await;
        assert_eq!(sent["method"], "Page.navigate");
        assert_eq!(sent["sessionId"], "S1");
        let id = sent["id"].as_u64().expect("id");
        // An event first, in the same write as the reply: both are taken apart at the NULs.
        let answer = format!(
            "{}\0{}\0",
            json!({"method": "Page.loadEventFired", "sessionId": "S1", "params": {"timestamp": 1}}),
            json!({"id": id, "result": {"frameId": "F"}})
        );
        browser.write_all(answer.as_bytes()).await.expect("write");
        let result = calling.await.expect("join").expect("reply");
        assert_eq!(result, json!({"frameId": "F"}));
        let event = events.recv().await.expect("event");
        assert_eq!(event.method, "Page.loadEventFired");
        assert_eq!(event.session.as_deref(), Some("S1"));
    }

    #[tokio::test]
    async fn errors_timeouts_and_a_closed_browser_are_told_apart() {
        let (cdp, to_browser, mut browser) = pair();
        let mut reader = BufReader::new(to_browser);
        let calling = {
            let cdp = cdp.clone();
            tokio::spawn(async move {
                cdp.call("Nope.nothing", json!({}), None, Duration::from_secs(5))
                    .await
            })
        };
        let id = next_message(&mut reader).await["id"].as_u64().expect("id");
        let answer = format!(
            "{}\0",
            json!({"id": id, "error": {"code": -32601, "message": "'Nope.nothing' wasn't found"}})
        );
        browser.write_all(answer.as_bytes()).await.expect("write");
        assert_eq!(
            calling.await.expect("join"),
            Err(CdpError::Protocol("'Nope.nothing' wasn't found".into()))
        );
        // No answer: the deadline ends the wait.
        let silent = cdp
            .call(
                "Runtime.evaluate",
                json!({}),
                None,
                Duration::from_millis(50),
            )
            .await;
        assert_eq!(silent, Err(CdpError::Timeout("Runtime.evaluate".into())));
        // The browser goes: a waiting call fails at once, and so does every later one.
        let mut events = cdp.events();
        let waiting = {
            let cdp = cdp.clone();
            tokio::spawn(async move {
                cdp.call("Page.reload", json!({}), None, Duration::from_secs(30))
                    .await
            })
        };
        let _ = next_message(&mut reader).await;
        let _ = next_message(&mut reader).await;
        drop(browser);
        assert_eq!(waiting.await.expect("join"), Err(CdpError::Closed));
        assert!(cdp.is_closed());
        assert_eq!(events.recv().await.expect("event").method, DISCONNECTED);
        assert_eq!(
            cdp.call("Page.reload", json!({}), None, Duration::from_secs(1))
                .await,
            Err(CdpError::Closed)
        );
    }
}

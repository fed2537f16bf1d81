//! A server reached over streamable HTTP: each message is a `POST` to its URL, answered
//! with JSON, server-sent events, or `202 Accepted`; what it sends unasked comes on the
//! event stream a `GET` opens. The session id it gives at `initialize` goes on every later
//! request, and `DELETE` ends the session when toolshed stops using the server.
//!
//! Requests go through toolshed's one HTTP client with the URL's host as the only one
//! reachable: the person who mounted the server named it, so it may be on this machine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use toolshed_core::{CancellationToken, HttpRequest, NetPolicy};
use toolshed_ops::net::{Bytes, NetClient, StreamingResponse};

use crate::client::{Answer, MAX_MESSAGE_BYTES, RpcError, Shared, dispatch};

/// How long a server may take to start answering one request (the head of its response).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);
/// How long the requests that need no answer (notifications, replies) may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an error response's body quoted.
const ERROR_BODY: usize = 500;
/// The most bytes the unasked-event stream carries before toolshed opens it again.
const STREAM_BYTES: usize = 256 << 20;

/// Where a server is and what to send it with every request.
#[derive(Debug, Clone)]
pub(crate) struct HttpTarget {
    pub url: String,
    /// Headers from the manifest (`Authorization` with a secret, say).
    pub headers: Vec<(String, String)>,
    /// The host's HTTP client, with the web rules (`[web] allow`) it enforces; `None`
    /// until the loader sets it (a client with no `[web] allow` then: public hosts only).
    pub net: Option<Arc<NetClient>>,
}

impl HttpTarget {
    /// What requests may reach: the URL's host and port only, and only where the web
    /// tools may go — a mounted server's URL opens no private address that `[web] allow`
    /// does not (loopback, private ranges, cloud metadata).
    fn policy(&self) -> Result<NetPolicy, String> {
        let url = url::Url::parse(&self.url)
            .map_err(|e| format!("`{}` is not a valid URL: {e}", self.url))?;
        let host = url
            .host_str()
            .ok_or_else(|| format!("`{}` has no host", self.url))?;
        let port = url.port_or_known_default().unwrap_or(80);
        Ok(NetPolicy::PublicWithin(vec![format!("{host}:{port}")]))
    }
}

/// The HTTP side of one session.
pub(crate) struct HttpLink {
    target: HttpTarget,
    policy: NetPolicy,
    net: Arc<NetClient>,
    shared: Arc<Shared>,
    session: Mutex<Option<String>>,
    protocol: Mutex<Option<String>>,
    /// Each request's own stream, stopped by [`HttpLink::abort`] (a 2026-07-28 server
    /// takes a request's end as its cancellation) or when the link ends.
    streams: Mutex<std::collections::HashMap<u64, CancellationToken>>,
    ended: CancellationToken,
}

impl HttpLink {
    pub(crate) fn new(target: HttpTarget, shared: Arc<Shared>) -> Arc<Self> {
        let policy = target.policy().unwrap_or(NetPolicy::Only(Vec::new()));
        let net = target
            .net
            .clone()
            .unwrap_or_else(|| Arc::new(NetClient::new()));
        Arc::new(Self {
            target,
            policy,
            net,
            shared,
            session: Mutex::default(),
            protocol: Mutex::default(),
            streams: Mutex::default(),
            ended: CancellationToken::new(),
        })
    }

    /// Stops reading request `id`'s stream: its connection is closed.
    pub(crate) fn abort(&self, id: u64) {
        if let Some(stop) = self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
        {
            stop.cancel();
        }
    }

    /// The protocol version the server chose, sent on every later request.
    pub(crate) fn set_protocol(&self, version: &str) {
        *self.protocol.lock().unwrap_or_else(|e| e.into_inner()) = Some(version.to_string());
    }

    fn session(&self) -> Option<String> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn request(&self, method: &str, body: Option<Vec<u8>>, timeout: Duration) -> HttpRequest {
        let mut headers = self.target.headers.clone();
        headers.push((
            "accept".into(),
            "application/json, text/event-stream".into(),
        ));
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        if let Some(session) = self.session() {
            headers.push(("mcp-session-id".into(), session));
        }
        if let Some(version) = self
            .protocol
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            headers.push(("mcp-protocol-version".into(), version));
        }
        HttpRequest {
            method: method.into(),
            url: self.target.url.clone(),
            headers,
            body,
            timeout,
            max_response_bytes: MAX_MESSAGE_BYTES,
        }
    }

    /// Sends one message. A request is sent in a task of its own and answered where its
    /// caller waits (so a caller can give up on it); a notification or reply is sent
    /// before this returns, keeping the order the server sees.
    /// `request` is the id of a request (`None` for a notification or reply); `body` the
    /// message's JSON.
    pub(crate) async fn send(
        self: &Arc<Self>,
        request: Option<u64>,
        body: Vec<u8>,
    ) -> Result<(), String> {
        match request {
            Some(id) => {
                let link = self.clone();
                let stop = self.ended.child_token();
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, stop.clone());
                tokio::spawn(async move {
                    let posted = tokio::select! {
                        posted = link.post(body, ANSWER_TIMEOUT, Some(id)) => posted,
                        () = stop.cancelled() => Ok(()),
                    };
                    link.streams
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&id);
                    if let Err(why) = posted {
                        link.shared.settle(id, Err(RpcError::Closed(why)));
                    }
                    // A stream that ended without the answer leaves the caller waiting
                    // no longer.
                    link.shared.settle(
                        id,
                        Err(RpcError::Closed(
                            "the server ended its response without answering".into(),
                        )),
                    );
                });
                Ok(())
            }
            None => self.post(body, SEND_TIMEOUT, None).await,
        }
    }

    /// Posts `body` (request `related`, if one) and hands every message of the answer to
    /// the session.
    async fn post(
        self: &Arc<Self>,
        body: Vec<u8>,
        timeout: Duration,
        related: Option<u64>,
    ) -> Result<(), String> {
        let request = self.request("POST", Some(body), timeout);
        let response = self
            .net
            .send_streaming(request, &self.policy, &CancellationToken::new())
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.target.url))?;
        if let Some(session) = header(&response, "mcp-session-id") {
            *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
        }
        match response.status {
            200..=299 => self.read_answer(response, related).await,
            404 if self.session().is_some() => {
                let why =
                    "the server ended the session (404); it is started again on the next call";
                self.shared.close(why.into());
                Err(why.into())
            }
            status => {
                let text = read_all(response.body, ERROR_BODY).await;
                // A JSON-RPC error in the body answers its request.
                if let Ok(message) = serde_json::from_str::<Value>(&text)
                    && message.get("error").is_some()
                    && message.get("id").is_some_and(|id| !id.is_null())
                {
                    self.deliver(message, related).await;
                    return Ok(());
                }
                Err(format!(
                    "{} answered HTTP {status}: {}",
                    self.target.url,
                    text.trim()
                ))
            }
        }
    }

    /// The messages of one answer: a JSON message (or batch), or an event stream.
    async fn read_answer(
        self: &Arc<Self>,
        response: StreamingResponse,
        related: Option<u64>,
    ) -> Result<(), String> {
        let events = header(&response, "content-type")
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        if events {
            return self.read_events(response.body, related).await;
        }
        let text = read_all(response.body, MAX_MESSAGE_BYTES).await;
        if text.trim().is_empty() {
            return Ok(());
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(batch)) => {
                for message in batch {
                    self.deliver(message, related).await;
                }
            }
            Ok(message) => self.deliver(message, related).await,
            Err(e) => return Err(format!("the server's answer is not JSON: {e}")),
        }
        Ok(())
    }

    /// Reads server-sent events until the stream ends, handing each event's data on.
    async fn read_events(
        self: &Arc<Self>,
        mut body: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
        related: Option<u64>,
    ) -> Result<(), String> {
        let mut events = Events::default();
        while let Some(chunk) = body.recv().await {
            for data in events.feed(&chunk?)? {
                match serde_json::from_str::<Value>(&data) {
                    Ok(message) => self.deliver(message, related).await,
                    Err(_) => tracing::debug!("an MCP server sent an event that is not JSON"),
                }
            }
        }
        Ok(())
    }

    /// One message from the server: settled, routed or answered.
    async fn deliver(self: &Arc<Self>, message: Value, related: Option<u64>) {
        if let Some(answer) = dispatch(message, &self.shared, related) {
            // A reply is answered with `202 Accepted` and nothing to read.
            let link = self.clone();
            tokio::spawn(async move {
                let answer = match answer {
                    Answer::Now(answer) => answer,
                    Answer::Later(answer) => answer.await,
                };
                let body = serde_json::to_vec(&answer).unwrap_or_default();
                let request = link.request("POST", Some(body), SEND_TIMEOUT);
                let sent = link
                    .net
                    .send_streaming(request, &link.policy, &CancellationToken::new())
                    .await;
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "cannot answer an MCP server's request");
                }
            });
        }
    }

    /// Listens for what the server sends unasked, on the stream a `GET` opens, for as long
    /// as the session lasts. A server that offers no such stream (`405`) is not asked
    /// again.
    pub(crate) async fn listen(self: Arc<Self>) {
        loop {
            let request = self.request("GET", None, SEND_TIMEOUT);
            let mut request = request;
            request.max_response_bytes = STREAM_BYTES;
            let response = match self
                .net
                .send_streaming(request, &self.policy, &CancellationToken::new())
                .await
            {
                Ok(response) if response.status == 200 => response,
                Ok(_) => return,
                Err(e) => {
                    tracing::debug!(error = %e, "no event stream from the MCP server");
                    return;
                }
            };
            if let Err(e) = self.read_events(response.body, None).await {
                tracing::debug!(error = %e, "the MCP server's event stream ended");
            }
            if self.shared.is_closed() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Ends the session on the server, if it gave one (in the background).
    pub(crate) fn end(self: &Arc<Self>) {
        // Every request's stream closes with the link (a listen would read forever).
        self.ended.cancel();
        if self.session().is_none() {
            return;
        }
        let link = self.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let request = link.request("DELETE", None, Duration::from_secs(5));
                let _ = link
                    .net
                    .send_streaming(request, &link.policy, &CancellationToken::new())
                    .await;
            });
        }
    }
}

fn header(response: &StreamingResponse, name: &str) -> Option<String> {
    response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
}

/// The body as text, at most `limit` bytes of it.
async fn read_all(
    mut body: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
    limit: usize,
) -> String {
    let mut all = Vec::new();
    while let Some(Ok(chunk)) = body.recv().await {
        let room = limit.saturating_sub(all.len());
        all.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if all.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// Server-sent events, parsed as their bytes arrive.
#[derive(Default)]
struct Events {
    line: Vec<u8>,
    data: String,
}

impl Events {
    /// The data of every event completed by `chunk`.
    fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, String> {
        let mut done = Vec::new();
        for &byte in chunk {
            if byte != b'\n' {
                if self.line.len() + self.data.len() > MAX_MESSAGE_BYTES {
                    return Err(format!(
                        "the server sent an event over {MAX_MESSAGE_BYTES} bytes"
                    ));
                }
                self.line.push(byte);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.is_empty() {
                if !self.data.is_empty() {
                    done.push(std::mem::take(&mut self.data));
                }
                continue;
            }
            let text = String::from_utf8_lossy(line);
            let (field, value) = text.split_once(':').unwrap_or((&text, ""));
            if field == "data" {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(value.strip_prefix(' ').unwrap_or(value));
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_parsed_across_chunks_with_either_line_ending() {
        let mut events = Events::default();
        assert!(
            events
                .feed(b"id: 1\r\nevent: message\r\nda")
                .unwrap()
                .is_empty()
        );
        let done = events
            .feed(b"ta: {\"a\":1}\r\n\r\n: a comment\n\ndata: x\ndata: y\n\n")
            .unwrap();
        assert_eq!(done, vec!["{\"a\":1}".to_string(), "x\ny".to_string()]);
    }

    #[test]
    fn only_the_urls_host_is_reachable() {
        let target = HttpTarget {
            url: "http://127.0.0.1:8931/mcp".into(),
            headers: Vec::new(),
            net: None,
        };
        assert_eq!(
            target.policy().unwrap(),
            NetPolicy::PublicWithin(vec!["127.0.0.1:8931".into()])
        );
        let bad = HttpTarget {
            url: "not a url".into(),
            headers: Vec::new(),
            net: None,
        };
        assert!(bad.policy().is_err());
    }
}

//! One reply, one JSON body: `/mcp` answers a request whose whole answer is its result
//! with `application/json` rather than an event stream.
//!
//! In session mode rmcp opens an SSE stream for every request: a priming event, then the
//! reply. A client that accepts `application/json` gets a single reply as a JSON body
//! instead — one response, no stream framing, nothing for it to parse twice. The stream is
//! kept where it carries something: when the first message is a notification (progress,
//! logging) or a request to the client, or when no message arrives within
//! [`FOLD_WINDOW`] (a long call), the events read so far are sent on as they came, and
//! the rest follows, so nothing is lost and a slow call still gets its headers at once.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;

/// How long a reply may take and still be folded into a JSON body; a slower call gets its
/// event stream (headers first) so that a client's read timeout never sees silence.
pub(crate) const FOLD_WINDOW: Duration = Duration::from_millis(500);

/// The most stream bytes held while waiting for the first message (priming events are a
/// few dozen bytes; a reply larger than this streams as it came).
const MAX_HELD_BYTES: usize = 4 << 20;

/// Middleware for `/mcp` (see the module docs).
pub(crate) async fn single_reply_as_json(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let wants_json = request.method() == Method::POST && accepts_json(request.headers());
    let response = next.run(request).await;
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !wants_json || response.status() != StatusCode::OK || !is_stream {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut held: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + FOLD_WINDOW;
    let folded = loop {
        if let Some(data) = first_message(&held) {
            break is_reply(&data).then_some(data);
        }
        if held.len() > MAX_HELD_BYTES {
            break None;
        }
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(chunk))) => held.extend_from_slice(&chunk),
            Ok(Some(Err(_)) | None) | Err(_) => break None,
        }
    };
    match folded {
        Some(data) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            parts.headers.remove(header::CACHE_CONTROL);
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(data))
        }
        None => {
            let head = futures_util::stream::once(async move { Ok(Bytes::from(held)) });
            Response::from_parts(parts, Body::from_stream(head.chain(stream)))
        }
    }
}

/// Whether the `Accept` header names `application/json` (or `*/*`).
fn accepts_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .any(|v| v.eq_ignore_ascii_case("application/json") || v == "*/*")
}

/// The length of the first complete event in `bytes` (up to and including its blank line).
fn find_event_end(bytes: &[u8]) -> Option<usize> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The `data:` lines of one event, joined by newlines.
fn event_data(event: &[u8]) -> Vec<u8> {
    let mut data: Vec<u8> = Vec::new();
    for line in event.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(rest) = line.strip_prefix(b"data:") {
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(rest.strip_prefix(b" ").unwrap_or(rest));
        }
    }
    data
}

fn split_events(mut events: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let end = find_event_end(events)?;
        let (event, rest) = events.split_at(end);
        events = rest;
        Some(event)
    })
}

/// The data of the first complete event that carries any (priming events and pings carry
/// none).
fn first_message(events: &[u8]) -> Option<Vec<u8>> {
    split_events(events)
        .map(event_data)
        .find(|d| !d.trim_ascii().is_empty())
}

/// Whether `data` is a JSON-RPC response or error: a final reply. Only which of the four
/// members are there is read (a `null` id counts); nothing of the reply is kept.
fn is_reply(data: &[u8]) -> bool {
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| true)
    }
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default, deserialize_with = "present")]
        id: bool,
        #[serde(default, deserialize_with = "present")]
        method: bool,
        #[serde(default, deserialize_with = "present")]
        result: bool,
        #[serde(default, deserialize_with = "present")]
        error: bool,
    }
    serde_json::from_slice::<Probe>(data).is_ok_and(|m| m.id && !m.method && (m.result || m.error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_and_their_data_read() {
        let stream = b"id: 0\nretry: 3000\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let events: Vec<&[u8]> = split_events(stream).collect();
        assert_eq!(events.len(), 2);
        assert!(event_data(events[0]).is_empty());
        let first = first_message(stream).unwrap();
        assert_eq!(first, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(is_reply(&first));
        let progress = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert!(!is_reply(&first_message(progress).unwrap()));
        assert!(first_message(b"id: 0\ndata: \n\ndata: {\"id\":1,").is_none());
        assert!(is_reply(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}"#
        ));
        assert!(!is_reply(
            br#"{"jsonrpc":"2.0","id":2,"method":"elicitation/create"}"#
        ));
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0.9, text/event-stream"),
        );
        assert!(accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        assert!(!accepts_json(&headers));
    }
}

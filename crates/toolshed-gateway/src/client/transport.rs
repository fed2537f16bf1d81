//! How messages travel to and from a server: lines on its stdin or HTTP requests
//! ([`Link`]), and the task that reads its stdout.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;

use super::{Answer, Shared, dispatch};
use crate::http::HttpLink;

/// The longest message read from a server; a longer line ends the session.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The server's stdin, written by callers and by the reader (answers to the server's own
/// requests).
pub(super) type Writer = Arc<tokio::sync::Mutex<pipe::Sender>>;

/// How messages reach the server.
pub(super) enum Link {
    /// Lines on its stdin.
    Pipe(Writer),
    /// HTTP requests to its URL (streamable HTTP).
    Http(Arc<HttpLink>),
}

impl Link {
    /// Sends `message` (request `id`, or a notification or reply when `None`).
    pub(super) async fn send(
        &self,
        id: Option<u64>,
        message: &impl Serialize,
    ) -> Result<(), String> {
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

/// Reads the server's messages until its stdout ends: replies settle their requests,
/// progress goes where its request said, requests from the server are answered (a ping
/// with an empty result, anything else as not supported).
pub(super) async fn read_loop(rx: pipe::Receiver, shared: Arc<Shared>, writer: Writer) {
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

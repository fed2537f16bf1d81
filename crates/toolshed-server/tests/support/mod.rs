//! A real `toolshed-server` on 127.0.0.1 and a small raw HTTP/1.1 client for it.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use toolshed_host::Host;
use toolshed_host::config::ConfigSources;
use toolshed_mcp::Session;
use toolshed_server::{BearerToken, DEFAULT_MAX_BODY_BYTES};

pub(crate) const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

pub(crate) struct Server {
    pub address: SocketAddr,
    pub host: Arc<Host>,
    stop: CancellationToken,
    pub workspace: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub(crate) async fn start() -> Server {
    start_with("").await
}

/// A server whose data dir was prepared by `prepare` (user plugins in `plugins/`, say).
pub(crate) async fn start_prepared(prepare: impl FnOnce(&std::path::Path)) -> Server {
    let data = tempfile::tempdir().unwrap();
    prepare(data.path());
    start_dirs(tempfile::tempdir().unwrap(), data, "").await
}

pub(crate) async fn start_with(config_toml: &str) -> Server {
    start_dirs(
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        config_toml,
    )
    .await
}

async fn start_dirs(
    workspace: tempfile::TempDir,
    data: tempfile::TempDir,
    config_toml: &str,
) -> Server {
    // The operator's own config (as `--config` would give it): server names, origins and
    // OAuth widen access, which a workspace's toolshed.toml may not.
    let config_file = data.path().join("config.toml");
    std::fs::write(&config_file, config_toml).unwrap();
    let config = ConfigSources {
        workspace: workspace.path().to_path_buf(),
        explicit_file: Some(config_file),
        // These tests drive the HTTP doors of a library-built host, which has no sandbox
        // helper binary; the sandbox is tested through the real binary (CLI, MCP, REST).
        env: vec![("TOOLSHED_SANDBOX__MODE".into(), "full-access".into())],
        ..Default::default()
    }
    .load()
    .unwrap();
    let host = Arc::new(
        Host::builder(workspace.path(), data.path())
            .config(config)
            .plugins(toolshed_tools::system_plugins)
            .memory()
            .agents()
            .open()
            .await
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let options = toolshed_server::ServerOptions {
        token: BearerToken::new(TOKEN).unwrap(),
        session: Session::default(),
        max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        workspaces: None,
    };
    let shutdown = stop.clone();
    tokio::spawn(toolshed_server::serve(
        host.clone(),
        listener,
        options,
        async move { shutdown.cancelled().await },
    ));
    Server {
        address,
        host,
        stop,
        workspace,
        data,
    }
}

#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The error kind of an error reply.
    pub(crate) fn kind(&self) -> String {
        self.json()["error"]["kind"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

pub(crate) fn auth() -> (&'static str, String) {
    ("Authorization", format!("Bearer {TOKEN}"))
}

/// Sends one request and reads the whole reply (the connection closes after it).
pub(crate) async fn request(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Option<&str>,
) -> Reply {
    request_until(address, method, path, headers, body, "").await
}

/// Sends one request and reads the reply until the connection closes or, when `until` is
/// not empty, until `until` appears in it (for a streamed reply that stays open).
pub(crate) async fn request_until(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Option<&str>,
    until: &str,
) -> Reply {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {address}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = body {
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            head.push_str("Content-Type: application/json\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    // The server may answer (413, say) and close before the whole body is sent.
    let _ = stream.write_all(head.as_bytes()).await;
    if let Some(body) = body {
        let _ = stream.write_all(body.as_bytes()).await;
    }
    let read = async {
        let mut raw = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&chunk[..n]),
            }
            if !until.is_empty() && String::from_utf8_lossy(&raw).contains(until) {
                break;
            }
        }
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("a reply within 30 s");
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let body = if headers
        .get("transfer-encoding")
        .is_some_and(|v| v == "chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        if rest.len() < size {
            // A reply read only up to some text ends inside a chunk.
            out.push_str(rest);
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

pub(crate) async fn get(address: SocketAddr, path: &str) -> Reply {
    request(address, "GET", path, &[auth()], None).await
}

pub(crate) async fn post(address: SocketAddr, path: &str, body: &str) -> Reply {
    request(address, "POST", path, &[auth()], Some(body)).await
}

/// An open Server-Sent Events stream.
pub(crate) struct Sse {
    lines: tokio::io::Lines<BufReader<TcpStream>>,
}

impl Sse {
    pub(crate) async fn open(address: SocketAddr, path: &str, extra: &[(&str, String)]) -> Self {
        let mut stream = TcpStream::connect(address).await.unwrap();
        let mut head = format!(
            "GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n"
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut lines = BufReader::new(stream).lines();
        let status = lines.next_line().await.unwrap().unwrap();
        assert!(status.contains(" 200 "), "{status}");
        loop {
            let line = lines.next_line().await.unwrap().unwrap();
            if line.is_empty() {
                break;
            }
        }
        Self { lines }
    }

    /// The next event's (id, type, data as JSON), skipping keep-alives.
    pub(crate) async fn next(&mut self) -> (Option<u64>, String, Value) {
        let (mut id, mut kind, mut data) = (None, String::new(), String::new());
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
                .await
                .expect("an event within 20 s")
                .unwrap()
                .expect("the stream stays open");
            // Chunk-size lines of the chunked encoding are hex digits alone.
            if line.chars().all(|c| c.is_ascii_hexdigit()) && !line.is_empty() {
                continue;
            }
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("event:") {
                kind = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            } else if line.is_empty() && !data.is_empty() {
                return (id, kind, serde_json::from_str(&data).unwrap());
            }
        }
    }
}

/// An open WebSocket to `/api/v1/events/ws`, reading text frames.
pub(crate) struct Ws {
    stream: TcpStream,
}

impl Ws {
    pub(crate) async fn open(address: SocketAddr, path: &str) -> Self {
        let mut stream = TcpStream::connect(address).await.unwrap();
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut reply = Vec::new();
        while !reply.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.unwrap();
            reply.push(byte[0]);
        }
        let reply = String::from_utf8_lossy(&reply);
        assert!(reply.starts_with("HTTP/1.1 101"), "{reply}");
        assert!(reply.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{reply}");
        Self { stream }
    }

    /// The next text frame as JSON.
    pub(crate) async fn next(&mut self) -> Value {
        loop {
            let mut head = [0u8; 2];
            tokio::time::timeout(Duration::from_secs(20), self.stream.read_exact(&mut head))
                .await
                .expect("a frame within 20 s")
                .unwrap();
            let opcode = head[0] & 0x0f;
            let mut len = u64::from(head[1] & 0x7f);
            if len == 126 {
                let mut ext = [0u8; 2];
                self.stream.read_exact(&mut ext).await.unwrap();
                len = u64::from(u16::from_be_bytes(ext));
            } else if len == 127 {
                let mut ext = [0u8; 8];
                self.stream.read_exact(&mut ext).await.unwrap();
                len = u64::from_be_bytes(ext);
            }
            let mut payload = vec![0u8; usize::try_from(len).unwrap()];
            self.stream.read_exact(&mut payload).await.unwrap();
            if opcode == 1 {
                return serde_json::from_slice(&payload).unwrap();
            }
        }
    }
}

/// Whether a live process has `needle` in its command line.
pub(crate) fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            return false;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z'));
        !zombie
            && String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(needle)
    })
}

pub(crate) async fn gone(needle: &str) -> bool {
    for _ in 0..100 {
        if !running(needle) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

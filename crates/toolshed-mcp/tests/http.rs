//! The HTTP door over a real socket on 127.0.0.1: what a client, or a web page trying to
//! reach it, gets back before and after the guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use toolshed_host::Host;
use toolshed_host::config::ConfigSources;
use toolshed_mcp::{BearerToken, DEFAULT_MAX_BODY_BYTES, HttpOptions, Session};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

/// A server on an ephemeral port, stopped when dropped.
struct Server {
    address: SocketAddr,
    stop: CancellationToken,
    _workspace: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start() -> Server {
    let workspace = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let config = ConfigSources {
        workspace: workspace.path().to_path_buf(),
        ..Default::default()
    }
    .load()
    .unwrap();
    let host = Host::builder(workspace.path(), data.path())
        .config(config)
        .open()
        .await
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let options = HttpOptions {
        token: BearerToken::new(TOKEN).unwrap(),
        session: Session::default(),
        max_body_bytes: DEFAULT_MAX_BODY_BYTES,
    };
    let shutdown = stop.clone();
    tokio::spawn(toolshed_mcp::serve_http(
        Arc::new(host),
        listener,
        options,
        async move { shutdown.cancelled().await },
    ));
    Server {
        address,
        stop,
        _workspace: workspace,
        _data: data,
    }
}

/// What came back: the status code, the header block (lowercased) and the body so far.
struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// Sends one raw HTTP/1.1 POST to `/mcp` and reads the reply until the connection closes
/// or `until` appears in it.
async fn post(address: SocketAddr, headers: &[(&str, String)], body: &[u8], until: &str) -> Reply {
    let mut request = String::from("POST /mcp HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    ));
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    // The server may answer (and close) before taking a body it refuses.
    let _ = stream.write_all(body).await;
    let read = async {
        let mut received = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
            }
            if !until.is_empty() && String::from_utf8_lossy(&received).contains(until) {
                break;
            }
        }
        received
    };
    let received = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the server answers within 10 s");
    let text = String::from_utf8_lossy(&received).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    Reply {
        status,
        headers: head.to_ascii_lowercase(),
        body: body.to_string(),
    }
}

fn bearer(token: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {token}"))
}

#[tokio::test]
async fn a_request_without_a_token_is_401_with_a_bearer_challenge() {
    let server = start().await;
    let reply = post(server.address, &[], INITIALIZE.as_bytes(), "").await;
    assert_eq!(reply.status, 401);
    assert!(
        reply
            .headers
            .lines()
            .any(|line| line.trim() == "www-authenticate: bearer"),
        "{}",
        reply.headers
    );
    assert!(reply.body.contains("toolshed token"), "{}", reply.body);
}

#[tokio::test]
async fn a_wrong_token_is_401_invalid_token_and_is_not_echoed() {
    let server = start().await;
    let wrong = "f".repeat(64);
    let reply = post(server.address, &[bearer(&wrong)], INITIALIZE.as_bytes(), "").await;
    assert_eq!(reply.status, 401);
    assert!(
        reply
            .headers
            .contains(r#"www-authenticate: bearer error="invalid_token""#),
        "{}",
        reply.headers
    );
    assert!(!reply.body.contains(&wrong) && !reply.body.contains(TOKEN));
    let other_scheme = ("Authorization", format!("Basic {TOKEN}"));
    let reply = post(server.address, &[other_scheme], INITIALIZE.as_bytes(), "").await;
    assert_eq!(reply.status, 401);
}

#[tokio::test]
async fn a_foreign_host_is_403_even_with_the_token() {
    let server = start().await;
    let port = server.address.port();
    for host in [
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        "127.0.0.1:1".to_string(),
        "localhost".to_string(),
    ] {
        let reply = post(
            server.address,
            &[("Host", host.clone()), bearer(TOKEN)],
            INITIALIZE.as_bytes(),
            "",
        )
        .await;
        assert_eq!(reply.status, 403, "Host: {host}");
    }
}

#[tokio::test]
async fn a_foreign_origin_is_403_even_with_the_token() {
    let server = start().await;
    for origin in [
        "http://evil.example",
        "null",
        "http://127.0.0.1.evil.example",
    ] {
        let reply = post(
            server.address,
            &[("Origin", origin.to_string()), bearer(TOKEN)],
            INITIALIZE.as_bytes(),
            "",
        )
        .await;
        assert_eq!(reply.status, 403, "Origin: {origin}");
    }
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let server = start().await;
    let body = vec![b' '; DEFAULT_MAX_BODY_BYTES + 1];
    let reply = post(server.address, &[bearer(TOKEN)], &body, "").await;
    assert_eq!(reply.status, 413);
}

#[tokio::test]
async fn initialize_with_the_token_starts_a_session() {
    let server = start().await;
    let port = server.address.port();
    let reply = post(
        server.address,
        &[
            ("Host", format!("localhost:{port}")),
            ("Origin", format!("http://localhost:{port}")),
            bearer(TOKEN),
        ],
        INITIALIZE.as_bytes(),
        r#""serverInfo""#,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply.headers.contains("mcp-session-id:"),
        "{}",
        reply.headers
    );
    assert!(
        reply.body.contains(r#""name":"toolshed""#),
        "{}",
        reply.body
    );
}

//! The guard over a real socket on 127.0.0.1: what a client, or a web page trying to reach
//! the server, gets back from `/mcp` before and after the guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;

use support::{Reply, TOKEN, request_until, start};
use toolshed_server::{DEFAULT_MAX_BODY_BYTES, MCP_PATH};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

/// POSTs `body` to `/mcp` as an MCP client would, and reads the reply until the connection
/// closes or `until` appears in it.
async fn post_mcp(
    address: SocketAddr,
    headers: &[(&str, String)],
    body: &str,
    until: &str,
) -> Reply {
    let mut headers = headers.to_vec();
    headers.push(("Accept", "application/json, text/event-stream".into()));
    request_until(address, "POST", MCP_PATH, &headers, Some(body), until).await
}

fn bearer(token: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {token}"))
}

#[tokio::test]
async fn a_request_without_a_token_is_401_with_a_bearer_challenge() {
    let server = start().await;
    let reply = post_mcp(server.address, &[], INITIALIZE, "").await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.headers["www-authenticate"], "Bearer", "{reply:?}");
    assert!(reply.body.contains("toolshed token"), "{}", reply.body);
}

#[tokio::test]
async fn a_wrong_token_is_401_invalid_token_and_is_not_echoed() {
    let server = start().await;
    let wrong = "f".repeat(64);
    let reply = post_mcp(server.address, &[bearer(&wrong)], INITIALIZE, "").await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.headers["www-authenticate"], r#"Bearer error="invalid_token""#,
        "{reply:?}"
    );
    assert!(!reply.body.contains(&wrong) && !reply.body.contains(TOKEN));
    let other_scheme = ("Authorization", format!("Basic {TOKEN}"));
    let reply = post_mcp(server.address, &[other_scheme], INITIALIZE, "").await;
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
        let reply = post_mcp(
            server.address,
            &[("Host", host.clone()), bearer(TOKEN)],
            INITIALIZE,
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
        let reply = post_mcp(
            server.address,
            &[("Origin", origin.to_string()), bearer(TOKEN)],
            INITIALIZE,
            "",
        )
        .await;
        assert_eq!(reply.status, 403, "Origin: {origin}");
    }
}

#[tokio::test]
async fn an_oversized_body_is_413() {
    let server = start().await;
    let body = " ".repeat(DEFAULT_MAX_BODY_BYTES + 1);
    let reply = post_mcp(server.address, &[bearer(TOKEN)], &body, "").await;
    assert_eq!(reply.status, 413);
}

#[tokio::test]
async fn initialize_with_the_token_starts_a_session() {
    let server = start().await;
    let port = server.address.port();
    let reply = post_mcp(
        server.address,
        &[
            ("Host", format!("localhost:{port}")),
            ("Origin", format!("http://localhost:{port}")),
            bearer(TOKEN),
        ],
        INITIALIZE,
        r#""serverInfo""#,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.headers.contains_key("mcp-session-id"), "{reply:?}");
    assert!(
        reply.body.contains(r#""name":"toolshed""#),
        "{}",
        reply.body
    );
}

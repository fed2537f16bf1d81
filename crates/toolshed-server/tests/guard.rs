//! The guard over a real socket on 127.0.0.1: what a client, or a web page trying to reach
//! the server, gets back from `/mcp` and `/api/v1` before and after the guard — missing,
//! wrong and truncated tokens, tokens in the query, foreign Host and Origin, oversized
//! bodies and headers, the failed-login limit, the open `/health`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::net::SocketAddr;

use support::{Reply, TOKEN, auth, request, request_until, start};
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
async fn a_body_that_is_not_json_rpc_is_a_400_parse_error() {
    let server = start().await;
    let reply = post_mcp(server.address, &[bearer(TOKEN)], "{nope", "").await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    let body: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413() {
    let server = start().await;
    let mut stream = tokio::net::TcpStream::connect(server.address)
        .await
        .unwrap();
    let head = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        server.address
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..(DEFAULT_MAX_BODY_BYTES >> 20) + 2 {
        let size = format!("{:x}\r\n", chunk.len());
        if stream.write_all(size.as_bytes()).await.is_err()
            || stream.write_all(&chunk).await.is_err()
            || stream.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        stream.read_to_end(&mut reply),
    )
    .await;
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
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

#[tokio::test]
async fn health_needs_no_token_and_everything_else_does() {
    let s = start().await;
    let health = request(s.address, "GET", "/api/v1/health", &[], None).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");

    let missing = request(s.address, "GET", "/api/v1/tools", &[], None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.headers["www-authenticate"], "Bearer");
    assert_eq!(missing.kind(), "unauthorized");

    let wrong = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[("Authorization", "Bearer nope".into())],
        None,
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(
        wrong.headers["www-authenticate"],
        "Bearer error=\"invalid_token\""
    );
    assert!(
        !wrong.body.contains("nope"),
        "the wrong token is not echoed"
    );

    let truncated = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[("Authorization", format!("Bearer {}", &TOKEN[..63]))],
        None,
    )
    .await;
    assert_eq!(truncated.status, 401);
    assert!(truncated.headers["www-authenticate"].contains("invalid_token"));

    let in_query = request(
        s.address,
        "GET",
        &format!("/api/v1/tools?token={TOKEN}"),
        &[],
        None,
    )
    .await;
    assert_eq!(in_query.status, 400);
    assert!(!in_query.body.contains(TOKEN));
    let in_query = request(
        s.address,
        "GET",
        &format!("/api/v1/tools?access_token={TOKEN}"),
        &[auth()],
        None,
    )
    .await;
    assert_eq!(in_query.status, 400, "refused even with a good header");

    let foreign_host = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Host", "evil.example".into())],
        None,
    )
    .await;
    assert_eq!(foreign_host.status, 403);
    let foreign_origin = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Origin", "http://evil.example".into())],
        None,
    )
    .await;
    assert_eq!(foreign_origin.status, 403);
    let local_origin = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Origin", "http://localhost:5173".into())],
        None,
    )
    .await;
    assert_eq!(local_origin.status, 200);

    let big = "x".repeat(5 * 1024 * 1024);
    let oversized = request(
        s.address,
        "POST",
        "/api/v1/tools/calculator/execute",
        &[auth()],
        Some(&big),
    )
    .await;
    assert_eq!(oversized.status, 413);

    let huge_header = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("X-Filler", "y".repeat(40 * 1024))],
        None,
    )
    .await;
    assert_eq!(huge_header.status, 431);
}

#[tokio::test]
async fn repeated_auth_failures_are_rate_limited() {
    let s = start().await;
    for _ in 0..toolshed_server::MAX_AUTH_FAILURES {
        let r = request(
            s.address,
            "GET",
            "/api/v1/tools",
            &[("Authorization", "Bearer bad".into())],
            None,
        )
        .await;
        assert_eq!(r.status, 401);
    }
    let guess = [("Authorization", "Bearer guess".to_string())];
    let limited = request(s.address, "GET", "/api/v1/tools", &guess, None).await;
    assert_eq!(
        limited.status, 429,
        "guessing stops for the rest of the window"
    );
    let retry: u64 = limited.headers["retry-after"].parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(limited.kind(), "rate_limited");
    // The real client is never locked out, and requests without a token do not count.
    let real = request(s.address, "GET", "/api/v1/tools", &[auth()], None).await;
    assert_eq!(real.status, 200);
    let none = request(s.address, "GET", "/api/v1/tools", &[], None).await;
    assert_eq!(none.status, 401);
    // /health is never limited.
    assert_eq!(
        request(s.address, "GET", "/api/v1/health", &[], None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn extra_hosts_and_origins_are_allowed_only_when_configured() {
    let s = support::start_with(
        "[server]\nallowed_hosts = [\"toolshed.internal:7070\"]\nallowed_origins = [\"https://dash.example\"]\n",
    )
    .await;
    let host = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Host", "toolshed.internal:7070".into())],
        None,
    )
    .await;
    assert_eq!(host.status, 200);
    let origin = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Origin", "https://dash.example".into())],
        None,
    )
    .await;
    assert_eq!(origin.status, 200);
    let other = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Origin", "https://dash.example.evil".into())],
        None,
    )
    .await;
    assert_eq!(other.status, 403);
    let other_host = request(
        s.address,
        "GET",
        "/api/v1/tools",
        &[auth(), ("Host", "toolshed.internal:7071".into())],
        None,
    )
    .await;
    assert_eq!(other_host.status, 403);
}

#[tokio::test]
async fn requests_without_a_token_never_trip_the_limit() {
    let s = start().await;
    for _ in 0..3 * toolshed_server::MAX_AUTH_FAILURES {
        let r = request(s.address, "GET", "/api/v1/tools", &[], None).await;
        assert_eq!(r.status, 401);
    }
    let wrong = [("Authorization", "Bearer bad".to_string())];
    assert_eq!(
        request(s.address, "GET", "/api/v1/tools", &wrong, None)
            .await
            .status,
        401
    );
    assert_eq!(
        request(s.address, "GET", "/api/v1/tools", &[auth()], None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn two_authorization_headers_are_a_400_whatever_their_order() {
    let server = start().await;
    let wrong = "f".repeat(64);
    for headers in [
        [bearer(TOKEN), bearer(&wrong)],
        [bearer(&wrong), bearer(TOKEN)],
        [bearer(TOKEN), bearer(TOKEN)],
    ] {
        let reply = request(server.address, "GET", "/api/v1/tools", &headers, None).await;
        assert_eq!(reply.status, 400, "{reply:?}");
        assert!(
            reply.body.contains("one Authorization header"),
            "{}",
            reply.body
        );
    }
}

#[tokio::test]
async fn a_token_pinned_to_another_workspace_is_refused_naming_both() {
    let s = start().await;
    std::fs::write(s.workspace.path().join("here.txt"), "here\n").unwrap();
    let served = s.host.workspace_name().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let other = elsewhere.path().canonicalize().unwrap();
    let other = other.to_str().unwrap();
    let make = |place: &str| {
        s.host
            .tokens()
            .create(
                "pinned",
                &["tools:call".into(), format!("workspace:{place}")],
                None,
            )
            .unwrap()
            .token
    };
    let read = r#"{"arguments":{"path":"here.txt"}}"#;
    let path = "/api/v1/tools/workspace_read/execute";
    // Pinned to the workspace served: it works.
    let here = make(&served);
    let reply = request(s.address, "POST", path, &[bearer(&here)], Some(read)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Pinned elsewhere, on a server that opens no other workspace: 403, naming both.
    let away = make(other);
    let reply = request(s.address, "POST", path, &[bearer(&away)], Some(read)).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert!(
        reply.body.contains(other) && reply.body.contains(&served),
        "{}",
        reply.body
    );
    let reply = post_mcp(s.address, &[bearer(&away)], INITIALIZE, "").await;
    assert_eq!(reply.status, 403, "{}", reply.body);
}

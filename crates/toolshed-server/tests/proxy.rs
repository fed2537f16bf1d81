//! The process proxy over a real socket: `/proxy/<id>/...` forwarded to an app on a
//! loopback port, behind the guard, with the toolshed token taken off.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolshed_core::ProxyTarget;

use support::{auth, request, start};

/// An app on an ephemeral loopback port that answers every request with the request head
/// it received, so a test sees exactly what the proxy forwarded.
async fn echo_app() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    head.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.write_all(&head).await;
            });
        }
    });
    port
}

/// Publishes `port` as alice's background process `p1`, as `process_exec` with a port does.
fn publish_for_alice(s: &support::Server, port: u16) {
    s.host.services().ports.insert(
        "p1",
        ProxyTarget {
            port,
            owner: "alice".into(),
            via: None,
        },
    );
}

#[tokio::test]
async fn a_request_reaches_the_app_without_the_token_and_with_its_own_path() {
    let s = start().await;
    let port = echo_app().await;
    publish_for_alice(&s, port);
    let reply = request(
        s.address,
        "GET",
        "/proxy/p1/some/a%2Fb?x=1",
        &[auth()],
        None,
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let seen = reply.body.to_ascii_lowercase();
    assert!(
        seen.starts_with("get /some/a%2fb?x=1 http/1.1\r\n"),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("host: 127.0.0.1:{port}\r\n")),
        "{seen}"
    );
    assert!(
        !seen.contains("authorization"),
        "the token stays here: {seen}"
    );

    let root = request(s.address, "GET", "/proxy/p1", &[auth()], None).await;
    assert_eq!(root.status, 308);
    assert_eq!(root.headers["location"], "/proxy/p1/");
    // The redirect keeps the path as sent: never a decoded `../../etc/passwd`.
    let odd = request(
        s.address,
        "GET",
        "/proxy/..%2f..%2fetc%2fpasswd",
        &[auth()],
        None,
    )
    .await;
    assert_eq!(odd.status, 308);
    assert_eq!(odd.headers["location"], "/proxy/..%2f..%2fetc%2fpasswd/");
}

#[tokio::test]
async fn the_proxy_is_behind_the_guard_and_an_owner_reaches_only_its_processes() {
    let s = start().await;
    let port = echo_app().await;
    publish_for_alice(&s, port);
    let no_token = request(s.address, "GET", "/proxy/p1/", &[], None).await;
    assert_eq!(no_token.status, 401);
    let unknown = request(s.address, "GET", "/proxy/p9/", &[auth()], None).await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.body.contains("process_exec"), "{}", unknown.body);

    let as_bob = [auth(), ("X-Toolshed-Owner", "bob".to_string())];
    let bob = request(s.address, "GET", "/proxy/p1/", &as_bob, None).await;
    assert_eq!(bob.status, 404, "another owner's process is not found");
    let as_alice = [auth(), ("X-Toolshed-Owner", "alice".to_string())];
    let alice = request(s.address, "GET", "/proxy/p1/", &as_alice, None).await;
    assert_eq!(alice.status, 200, "{alice:?}");
    assert!(
        !alice.body.to_ascii_lowercase().contains("x-toolshed-owner"),
        "{}",
        alice.body
    );
}

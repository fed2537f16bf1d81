//! The HTTP client against real servers on 127.0.0.1: policies, redirects, limits,
//! cancellation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::server;

use std::time::Duration;

use server::{Event, Reply, Seen, Server, redirect, respond};
use toolshed_core::{CancellationToken, HttpClient, HttpRequest, NetPolicy, ToolError};
use toolshed_ops::net::{DEFAULT_USER_AGENT, MAX_REQUEST_BODY};
use toolshed_ops::{FollowedResponse, NetClient};

fn get(url: &str) -> HttpRequest {
    HttpRequest {
        method: "GET".into(),
        url: url.into(),
        headers: Vec::new(),
        body: None,
        timeout: Duration::from_secs(10),
        max_response_bytes: 1 << 20,
    }
}

fn only(entries: &[&str]) -> NetPolicy {
    NetPolicy::Only(entries.iter().map(|e| e.to_string()).collect())
}

fn loopback() -> NetPolicy {
    only(&["127.0.0.1"])
}

/// Echoes the method and body back, with a custom header.
fn echo(seen: &Seen) -> Reply {
    respond(
        200,
        &[("X-Method", &seen.method), ("Content-Type", "text/plain")],
        &seen.body,
    )
}

async fn send(
    request: HttpRequest,
    policy: &NetPolicy,
) -> Result<toolshed_core::HttpResponse, ToolError> {
    NetClient::new()
        .send(request, policy, &CancellationToken::new())
        .await
}

async fn follow(
    request: HttpRequest,
    policy: &NetPolicy,
    max_redirects: usize,
) -> Result<FollowedResponse, ToolError> {
    NetClient::new()
        .send_following(request, policy, &CancellationToken::new(), max_redirects)
        .await
}

fn denied_message(result: Result<impl std::fmt::Debug, ToolError>) -> String {
    match result {
        Err(ToolError::Denied { rule, message }) => {
            assert_eq!(rule, "network policy");
            message
        }
        other => panic!("expected a network policy denial, got {other:?}"),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn get_and_post_round_trip_headers_and_bodies() {
    let server = Server::start(echo).await;

    let mut request = get(&server.url("/items?q=1"));
    request.headers.push(("X-Trace".into(), "abc".into()));
    let response = send(request, &loopback()).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(header(&response.headers, "x-method"), Some("GET"));
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("text/plain")
    );
    assert!(response.body.is_empty());
    assert!(!response.truncated);

    let request = HttpRequest {
        method: "post".into(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("user-agent".into(), "plugin/1".into()),
        ],
        body: Some(br#"{"a":1}"#.to_vec()),
        ..get(&server.url("/items"))
    };
    let response = send(request, &loopback()).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(header(&response.headers, "x-method"), Some("POST"));
    assert_eq!(response.body, br#"{"a":1}"#);

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].path, "/items?q=1");
    assert_eq!(seen[0].header("x-trace"), Some("abc"));
    assert_eq!(seen[0].header("user-agent"), Some(DEFAULT_USER_AGENT));
    assert_eq!(
        seen[0].header("host"),
        Some(format!("127.0.0.1:{}", server.port).as_str())
    );
    assert_eq!(seen[1].method, "POST");
    assert_eq!(seen[1].body, br#"{"a":1}"#);
    assert_eq!(seen[1].header("content-type"), Some("application/json"));
    assert_eq!(seen[1].header("user-agent"), Some("plugin/1"));
}

#[tokio::test]
async fn only_matches_host_and_port_entries() {
    let server = Server::start(echo).await;
    let exact = format!("127.0.0.1:{}", server.port);

    send(get(&server.url("/")), &only(&[&exact])).await.unwrap();
    // Names compare case-insensitively, and the connection falls through to the address
    // that answers when `localhost` also resolves to ::1.
    send(
        get(&format!("http://localhost:{}/", server.port)),
        &only(&["LocalHost"]),
    )
    .await
    .unwrap();

    let message = denied_message(send(get(&server.url("/")), &only(&["127.0.0.1:1"])).await);
    assert!(message.contains(&exact), "{message}");
    assert!(message.contains("127.0.0.1:1"), "{message}");

    let message = denied_message(
        send(
            get(&server.url("/")),
            &only(&["api.example.com", "localhost"]),
        )
        .await,
    );
    assert!(message.contains(&exact), "{message}");
    assert!(message.contains("api.example.com, localhost"), "{message}");

    assert_eq!(server.connections(), 2);
}

#[tokio::test]
async fn public_refuses_private_addresses_without_connecting() {
    let server = Server::start(echo).await;
    let port = server.port;
    for (url, why) in [
        (
            format!("http://127.0.0.1:{port}/"),
            "127.0.0.1, a loopback address",
        ),
        (
            format!("http://localhost:{port}/"),
            "`localhost` is a name for this machine",
        ),
        (
            format!("http://LOCALHOST.:{port}/"),
            "`localhost` is a name for this machine",
        ),
        (
            format!("http://app.localhost:{port}/"),
            "name for this machine",
        ),
        (
            format!("http://2130706433:{port}/"),
            "127.0.0.1, a loopback address",
        ),
        (
            format!("http://0x7f.1:{port}/"),
            "127.0.0.1, a loopback address",
        ),
        (
            format!("http://0177.0.0.1:{port}/"),
            "127.0.0.1, a loopback address",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "a loopback address",
        ),
        ("http://[::1]/".to_string(), "::1, a loopback address"),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "the cloud metadata address",
        ),
        ("http://metadata.google.internal/".to_string(), "metadata"),
        (
            "http://10.0.0.1/".to_string(),
            "10.0.0.1, a private address",
        ),
        ("http://192.168.1.1/".to_string(), "a private address"),
        ("http://100.64.0.1/".to_string(), "carrier-grade NAT"),
        ("http://[fe80::1]/".to_string(), "link-local"),
        ("http://[fd00::1]/".to_string(), "unique local"),
        ("http://0.0.0.0/".to_string(), "unspecified"),
    ] {
        let message = denied_message(send(get(&url), &NetPolicy::Public).await);
        assert!(message.contains(why), "{url}: {message}");
        assert!(
            message.contains("toolshed does not fetch private addresses"),
            "{message}"
        );
    }
    // One permitted request: had any refused one connected, it would have been accepted
    // before this one.
    send(get(&server.url("/")), &loopback()).await.unwrap();
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn send_returns_redirects_as_they_are() {
    let server = Server::start(|_| redirect(302, "/elsewhere")).await;
    let response = send(get(&server.url("/")), &loopback()).await.unwrap();
    assert_eq!(response.status, 302);
    assert_eq!(header(&response.headers, "location"), Some("/elsewhere"));
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_redirect_to_a_host_not_granted_is_refused_before_connecting() {
    let target = Server::start(echo).await;
    let to = target.url("/secret");
    let origin = Server::start(move |_| redirect(302, &to)).await;

    let policy = only(&[&format!("127.0.0.1:{}", origin.port)]);
    let message = denied_message(follow(get(&origin.url("/start?token=s3cret")), &policy, 5).await);
    assert!(message.contains("redirected to"), "{message}");
    // Both URLs are shown up to their hosts: a path or query may carry a token.
    assert!(
        !message.contains("/start") && !message.contains("s3cret") && !message.contains("/secret"),
        "{message}"
    );
    assert!(
        message.contains(&format!("127.0.0.1:{}", target.port)),
        "{message}"
    );
    send(get(&target.url("/")), &loopback()).await.unwrap();
    assert_eq!(target.connections(), 1);
}

#[tokio::test]
async fn credentials_are_dropped_on_cross_origin_hops_only() {
    let landing = Server::start(echo).await;
    let away = landing.url("/landed");
    let origin = Server::start(move |seen| match seen.path.as_str() {
        "/away" => redirect(302, &away),
        "/same" => redirect(307, "/here"),
        _ => respond(200, &[], b"ok"),
    })
    .await;
    let with_credentials = |url: String| HttpRequest {
        headers: vec![
            ("Authorization".into(), "Bearer s3cret".into()),
            ("Cookie".into(), "session=1".into()),
            ("X-Keep".into(), "yes".into()),
        ],
        ..get(&url)
    };

    let followed = follow(with_credentials(origin.url("/away")), &loopback(), 5)
        .await
        .unwrap();
    assert_eq!(followed.response.status, 200);
    assert_eq!(followed.url, landing.url("/landed"));
    assert_eq!(followed.redirected_from, vec![origin.url("/away")]);
    let landed = &landing.seen()[0];
    assert_eq!(landed.header("authorization"), None);
    assert_eq!(landed.header("cookie"), None);
    assert_eq!(landed.header("x-keep"), Some("yes"));

    follow(with_credentials(origin.url("/same")), &loopback(), 5)
        .await
        .unwrap();
    let here = origin
        .seen()
        .into_iter()
        .find(|s| s.path == "/here")
        .unwrap();
    assert_eq!(here.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(here.header("cookie"), Some("session=1"));
}

#[tokio::test]
async fn see_other_turns_a_post_into_a_get_and_307_keeps_it() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/form" => redirect(303, "/done"),
        "/keep" => redirect(307, "/kept"),
        _ => echo(seen),
    })
    .await;
    let post = |path: &str| HttpRequest {
        method: "POST".into(),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: Some(b"a=1".to_vec()),
        ..get(&server.url(path))
    };

    let followed = follow(post("/form"), &loopback(), 5).await.unwrap();
    assert_eq!(header(&followed.response.headers, "x-method"), Some("GET"));
    let followed = follow(post("/keep"), &loopback(), 5).await.unwrap();
    assert_eq!(header(&followed.response.headers, "x-method"), Some("POST"));

    let seen = server.seen();
    let done = seen.iter().find(|s| s.path == "/done").unwrap();
    assert_eq!(done.method, "GET");
    assert!(done.body.is_empty());
    assert_eq!(done.header("content-type"), None);
    let kept = seen.iter().find(|s| s.path == "/kept").unwrap();
    assert_eq!(kept.method, "POST");
    assert_eq!(kept.body, b"a=1");
    assert_eq!(
        kept.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
}

#[tokio::test]
async fn redirects_stop_at_the_maximum() {
    let server = Server::start(|seen| {
        let n: u32 = seen.path.trim_start_matches("/loop/").parse().unwrap();
        redirect(302, &format!("/loop/{}", n + 1))
    })
    .await;
    let err = follow(get(&server.url("/loop/0")), &loopback(), 3)
        .await
        .unwrap_err();
    let ToolError::Failed(message) = err else {
        panic!("expected Failed, got {err:?}")
    };
    assert!(message.contains("after 3 redirects"), "{message}");
    // Where it pointed, up to the host: a path or query may carry a signature.
    assert!(
        message.contains(&format!("to `{}/…`", server.url("").trim_end_matches('/'))),
        "{message}"
    );
    assert!(!message.contains("/loop/4"), "{message}");
    assert_eq!(server.seen().len(), 4);
}

#[tokio::test]
async fn the_body_is_cut_at_the_cap() {
    let big = vec![b'x'; 100_000];
    let server = Server::start(move |_| respond(200, &[], &big)).await;

    let capped = HttpRequest {
        max_response_bytes: 100,
        ..get(&server.url("/"))
    };
    let response = send(capped, &loopback()).await.unwrap();
    assert_eq!(response.body.len(), 100);
    assert!(response.truncated);

    let exact = HttpRequest {
        max_response_bytes: 100_000,
        ..get(&server.url("/"))
    };
    let response = send(exact, &loopback()).await.unwrap();
    assert_eq!(response.body.len(), 100_000);
    assert!(!response.truncated);
}

#[tokio::test]
async fn oversized_response_headers_are_refused() {
    let huge = "v".repeat(100_000);
    let server = Server::start(move |_| respond(200, &[("x-huge", &huge)], b"")).await;
    let err = send(get(&server.url("/")), &loopback()).await.unwrap_err();
    let ToolError::Failed(message) = err else {
        panic!("expected Failed, got {err:?}")
    };
    assert!(message.contains("response headers"), "{message}");
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_timeout() {
    let server = Server::start(|_| Reply::Silent).await;
    let request = HttpRequest {
        timeout: Duration::from_millis(300),
        ..get(&server.url("/"))
    };
    let err = send(request, &loopback()).await.unwrap_err();
    assert!(
        matches!(err, ToolError::Timeout(d) if d == Duration::from_millis(300)),
        "{err:?}"
    );
}

#[tokio::test]
async fn cancelling_drops_the_connection() {
    let mut server = Server::start(|_| Reply::Silent).await;
    let cancel = CancellationToken::new();
    let call = {
        let cancel = cancel.clone();
        let request = get(&server.url("/wait"));
        tokio::spawn(async move { NetClient::new().send(request, &loopback(), &cancel).await })
    };
    assert_eq!(server.next_event().await, Event::Request("/wait".into()));
    cancel.cancel();
    let outcome = call.await.unwrap();
    assert!(matches!(outcome, Err(ToolError::Cancelled)), "{outcome:?}");
    assert_eq!(server.next_event().await, Event::Closed);
}

#[tokio::test]
async fn malformed_requests_are_refused_before_connecting() {
    let server = Server::start(echo).await;
    let cases = [
        get(&format!("http://user:hunter2@127.0.0.1:{}/", server.port)),
        get("ftp://127.0.0.1/file"),
        get("file:///etc/passwd"),
        get("not a url"),
        HttpRequest {
            method: "GE T".into(),
            ..get(&server.url("/"))
        },
        HttpRequest {
            headers: vec![("x-bad".into(), "line\r\nbreak".into())],
            ..get(&server.url("/"))
        },
        HttpRequest {
            headers: vec![("host".into(), "other.example".into())],
            ..get(&server.url("/"))
        },
        HttpRequest {
            method: "POST".into(),
            body: Some(vec![0; MAX_REQUEST_BODY + 1]),
            ..get(&server.url("/"))
        },
    ];
    for request in cases {
        let url = request.url.clone();
        let err = send(request, &loopback()).await.unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { .. }),
            "{url}: {err:?}"
        );
        let text = err.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("line\r\nbreak"), "{text}");
    }
    let text = send(get("ftp://127.0.0.1/file"), &loopback())
        .await
        .unwrap_err()
        .to_string();
    assert!(text.contains("only http and https"), "{text}");
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn a_host_header_equal_to_the_urls_is_accepted() {
    let server = Server::start(echo).await;
    let request = HttpRequest {
        headers: vec![
            ("Host".into(), format!("127.0.0.1:{}", server.port)),
            ("Content-Length".into(), "999".into()),
        ],
        ..get(&server.url("/"))
    };
    send(request, &loopback()).await.unwrap();
    let seen = &server.seen()[0];
    let hosts = seen.headers.iter().filter(|(n, _)| n == "host").count();
    assert_eq!(hosts, 1);
    assert_ne!(seen.header("content-length"), Some("999"));
}

#[tokio::test]
async fn a_server_that_does_not_speak_http_is_a_failure() {
    let server = Server::start(|_| Reply::Raw(b"SSH-2.0-OpenSSH_9.0\r\n".to_vec())).await;
    let err = send(get(&server.url("/")), &loopback()).await.unwrap_err();
    let ToolError::Failed(message) = err else {
        panic!("expected Failed, got {err:?}")
    };
    assert!(message.contains("valid HTTP/1.1"), "{message}");
}

#[tokio::test]
async fn a_closed_port_is_a_failure_naming_it() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = send(get(&format!("http://127.0.0.1:{port}/")), &loopback())
        .await
        .unwrap_err();
    let ToolError::Failed(message) = err else {
        panic!("expected Failed, got {err:?}")
    };
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
}

/// No outside network and no certificate generator: this only shows that https goes
/// through a TLS handshake, which a plain HTTP server fails.
#[cfg(feature = "tls")]
#[tokio::test]
async fn https_to_a_plain_server_fails_the_tls_handshake() {
    let server = Server::start(echo).await;
    let url = format!("https://127.0.0.1:{}/", server.port);
    let err = send(get(&url), &loopback()).await.unwrap_err();
    let ToolError::Failed(message) = err else {
        panic!("expected Failed, got {err:?}")
    };
    assert!(message.contains("TLS handshake"), "{message}");
}

#[cfg(not(feature = "tls"))]
#[tokio::test]
async fn https_without_the_tls_feature_is_refused() {
    let server = Server::start(echo).await;
    let url = format!("https://127.0.0.1:{}/", server.port);
    let err = send(get(&url), &loopback()).await.unwrap_err();
    assert!(err.to_string().contains("without TLS"), "{err}");
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn messages_never_echo_what_follows_the_host() {
    // Webhook URLs carry their token in the path, API URLs their key in the query.
    for url in [
        "http://other.test/services/T000/B000/SECRETTOKEN",
        "http://other.test/hook?key=SECRETTOKEN",
        "ftp://other.test/SECRETTOKEN",
        "http://user:SECRETTOKEN@other.test/",
        "http//other.test/SECRETTOKEN",
    ] {
        let err = send(get(url), &only(&["127.0.0.1"])).await.unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("SECRETTOKEN"), "{url}: {text}");
        assert!(
            text.contains("other.test") || text.contains("http"),
            "{url}: {text}"
        );
    }
}

#[tokio::test]
async fn a_streamed_body_arrives_as_it_is_sent_and_dropping_it_closes_the_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (go_on, mut told) = tokio::sync::mpsc::channel::<()>(1);
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = vec![0u8; 4096];
        let _ = socket.read(&mut head).await.unwrap();
        socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
            .await
            .unwrap();
        // The second part only once the client has read the first.
        told.recv().await;
        socket.write_all(b"7\r\nsecond\n\r\n").await.unwrap();
        // Then nothing, until the client drops the body and the connection closes.
        let mut rest = [0u8; 16];
        socket.read(&mut rest).await.unwrap_or(0)
    });
    let request = get(&format!("http://127.0.0.1:{port}/events"));
    let mut response = NetClient::new()
        .send_streaming(request, &loopback(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(
        header(&response.headers, "content-type"),
        Some("text/event-stream")
    );
    assert_eq!(
        &response.body.recv().await.unwrap().unwrap()[..],
        b"first\n"
    );
    go_on.send(()).await.unwrap();
    assert_eq!(
        &response.body.recv().await.unwrap().unwrap()[..],
        b"second\n"
    );
    drop(response);
    let read = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the connection closed once the body was dropped")
        .unwrap();
    assert_eq!(read, 0);
}

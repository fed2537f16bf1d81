//! `http_request` against real servers on 127.0.0.1, reached through the `[web] allow`
//! list of a real `NetClient`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::net_test_server as server;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use server::{Reply, Seen, Server, redirect, respond};
use toolshed_core::{CallContext, ErrorKind, ToolError, ToolOutput};
use toolshed_ops::net::parse_allowlist;
use toolshed_ops::{NetClient, NetConfig, Ops, Services};

use super::plugin;
use crate::util::test_support;

/// A client that reaches `allow` (and public hosts), as the CLI builds it.
fn client(allow: &[&str]) -> Arc<NetClient> {
    Arc::new(NetClient::with_config(NetConfig {
        allow: parse_allowlist(allow).unwrap(),
        ..NetConfig::default()
    }))
}

/// Calls `http_request` built with `client`.
async fn call(client: Arc<NetClient>, args: Value) -> Result<ToolOutput, ToolError> {
    let services = Services::new(Ops::memory()).with_net(client);
    let ctx = CallContext::for_test(Duration::from_secs(10));
    plugin(&services).tools()[0].call(ctx, args).await
}

/// Calls with the server's address allowed.
async fn call_allowed(server: &Server, args: Value) -> Result<ToolOutput, ToolError> {
    call(client(&[&format!("127.0.0.1:{}", server.port)]), args).await
}

fn echo(seen: &Seen) -> Reply {
    let body = json!({
        "method": seen.method,
        "path": seen.path,
        "content_type": seen.header("content-type"),
        "x_token": seen.header("x-token"),
        "body": String::from_utf8_lossy(&seen.body),
    })
    .to_string();
    respond(
        200,
        &[
            ("content-type", "application/json"),
            ("x-ratelimit-remaining", "9"),
            ("x-other", "hidden"),
        ],
        body.as_bytes(),
    )
}

fn structured(out: &ToolOutput) -> Value {
    out.structured.clone().expect("structured output")
}

fn echoed(out: &ToolOutput) -> Value {
    serde_json::from_str(structured(out)["body"].as_str().unwrap()).unwrap()
}

#[test]
fn plugin_has_one_tool_with_honest_annotations() {
    let p = plugin(&Services::new(Ops::memory()));
    assert_eq!(p.manifest().id, "system.http");
    let spec = p.tools()[0].spec().clone();
    assert_eq!(spec.name, "http_request");
    assert_eq!(spec.group, "http");
    let a = spec.annotations;
    assert!(!a.read_only);
    // Any method to any public host: a DELETE can destroy what lives there.
    assert!(a.destructive);
    assert!(!a.idempotent);
    assert!(a.open_world);
    assert_eq!(spec.danger, toolshed_core::Danger::High);
    assert!(spec.description.contains("not an error"));
}

#[test]
fn schema_compiles_and_validates() {
    test_support::check_schema(
        &plugin(&Services::new(Ops::memory())),
        &[
            json!({"url": "https://api.example.com/"}),
            json!({"method": "POST", "url": "https://a.example/", "json": {"a": [1, null]}}),
            json!({"method": "PUT", "url": "https://a.example/", "json": "text", "headers": {"X-A": "1"}}),
            json!({"url": "https://a.example/", "body": "x", "timeout_ms": 120000, "max_bytes": 49152}),
        ],
        &[
            json!({}),
            json!({"url": "https://a.example/", "method": "CONNECT"}),
            json!({"url": "https://a.example/", "headers": {"X-A": 1}}),
            json!({"url": "https://a.example/", "timeout_ms": 120001}),
            json!({"url": "https://a.example/", "max_bytes": 49153}),
            json!({"url": "https://a.example/", "colour": "red"}),
        ],
    );
}

#[tokio::test]
async fn every_method_is_sent_with_headers_and_bodies() {
    let server = Server::start(echo).await;
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let out = call_allowed(
            &server,
            json!({"method": method, "url": server.url("/m"), "headers": {"X-Token": "t1"}, "body": "payload"}),
        )
        .await
        .unwrap();
        assert!(!out.is_error);
        let seen = echoed(&out);
        assert_eq!(seen["method"], method);
        assert_eq!(seen["x_token"], "t1");
        assert_eq!(seen["body"], "payload");
    }
    let out = call_allowed(&server, json!({"method": "HEAD", "url": server.url("/h")}))
        .await
        .unwrap();
    assert!(
        out.text_joined().starts_with("HTTP 200\n"),
        "{}",
        out.text_joined()
    );
    assert_eq!(server.seen().last().unwrap().method, "HEAD");

    // GET by default; the text has the status, the chosen headers and the body.
    let out = call_allowed(&server, json!({"url": server.url("/plain")}))
        .await
        .unwrap();
    let text = out.text_joined();
    assert!(
        text.starts_with("HTTP 200\ncontent-type: application/json\n"),
        "{text}"
    );
    assert!(text.contains("x-ratelimit-remaining: 9"), "{text}");
    assert!(!text.contains("x-other"), "{text}");
    assert!(text.contains("\"path\":\"/plain\""), "{text}");
    let s = structured(&out);
    assert_eq!(s["status"], 200);
    assert_eq!(s["headers"]["x-other"], "hidden");
    assert_eq!(s["truncated"], false);
    assert_eq!(s["url"], server.url("/plain"));
}

#[tokio::test]
async fn json_sets_the_body_and_content_type_and_excludes_body() {
    let server = Server::start(echo).await;
    let out = call_allowed(
        &server,
        json!({"method": "POST", "url": server.url("/j"), "json": {"name": "x", "n": [1, 2]}}),
    )
    .await
    .unwrap();
    let seen = echoed(&out);
    assert_eq!(seen["content_type"], "application/json");
    assert_eq!(seen["body"], r#"{"name":"x","n":[1,2]}"#);

    // A content type the caller sets is kept.
    let out = call_allowed(
        &server,
        json!({"method": "POST", "url": server.url("/j"), "json": [1],
               "headers": {"Content-Type": "application/vnd.api+json"}}),
    )
    .await
    .unwrap();
    assert_eq!(echoed(&out)["content_type"], "application/vnd.api+json");

    let err = call_allowed(
        &server,
        json!({"method": "POST", "url": server.url("/j"), "json": {}, "body": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert!(err.to_string().contains("not both"), "{err}");
    assert_eq!(server.seen().len(), 2);
}

#[tokio::test]
async fn error_statuses_are_results_not_tool_errors() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/missing" => respond(404, &[("content-type", "text/plain")], b"no such item"),
        _ => respond(503, &[("retry-after", "30")], b""),
    })
    .await;
    let out = call_allowed(&server, json!({"url": server.url("/missing")}))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert!(out.text_joined().starts_with("HTTP 404\n"));
    assert!(out.text_joined().contains("no such item"));
    assert_eq!(structured(&out)["status"], 404);

    let out = call_allowed(
        &server,
        json!({"method": "DELETE", "url": server.url("/x")}),
    )
    .await
    .unwrap();
    assert!(!out.is_error);
    let text = out.text_joined();
    assert!(text.contains("HTTP 503\nretry-after: 30"), "{text}");
    assert!(text.contains("(empty body)"), "{text}");
}

#[tokio::test]
async fn the_body_is_capped_and_binary_bodies_are_summarized() {
    let big = vec![b'a'; 5000];
    let server = Server::start(move |seen| match seen.path.as_str() {
        "/png" => respond(
            200,
            &[("content-type", "image/png")],
            b"\x89PNG\r\n\x1a\n\0\0",
        ),
        _ => respond(200, &[("content-type", "text/plain")], &big),
    })
    .await;
    let out = call_allowed(
        &server,
        json!({"url": server.url("/big"), "max_bytes": 100}),
    )
    .await
    .unwrap();
    let s = structured(&out);
    assert_eq!(s["truncated"], true);
    assert_eq!(s["body"].as_str().unwrap().len(), 100);
    assert!(
        out.text_joined().contains("[body cut at 100 bytes"),
        "{}",
        out.text_joined()
    );

    let out = call_allowed(&server, json!({"url": server.url("/png")}))
        .await
        .unwrap();
    let text = out.text_joined();
    assert!(
        text.contains("binary body: 10 bytes of image/png"),
        "{text}"
    );
    assert_eq!(structured(&out)["body"], Value::Null);
    assert_eq!(structured(&out)["body_bytes"], 10);
}

#[tokio::test]
async fn get_follows_redirects_and_post_does_not() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/a" => redirect(302, "/b"),
        "/b" => redirect(301, "/c"),
        "/loop" => redirect(302, "/loop"),
        _ => echo(seen),
    })
    .await;
    let out = call_allowed(&server, json!({"url": server.url("/a")}))
        .await
        .unwrap();
    assert_eq!(echoed(&out)["path"], "/c");
    let s = structured(&out);
    assert_eq!(s["url"], server.url("/c"));
    assert_eq!(
        s["redirected_from"],
        json!([server.url("/a"), server.url("/b")])
    );
    assert!(
        out.text_joined()
            .starts_with("HTTP 200 (after 2 redirects to ")
    );

    let out = call_allowed(
        &server,
        json!({"method": "POST", "url": server.url("/a"), "body": "x"}),
    )
    .await
    .unwrap();
    assert_eq!(structured(&out)["status"], 302);
    assert!(out.text_joined().contains("location: /b"));

    let err = call_allowed(&server, json!({"url": server.url("/loop")}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("after 5 redirects"), "{err}");
}

#[tokio::test]
async fn private_addresses_are_refused_with_a_clear_message_and_no_connection() {
    let server = Server::start(echo).await;
    // Allowing another port opens nothing here.
    let ctx = || client(&["127.0.0.1:1"]);
    for url in [
        server.url("/"),
        format!("http://localhost:{}/", server.port),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/".to_string(),
    ] {
        let err = call(ctx(), json!({"url": url})).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Denied, "{url}: {err}");
        let text = err.to_string();
        assert!(
            text.contains("toolshed does not fetch private addresses"),
            "{text}"
        );
        assert!(text.contains("[web] allow"), "{text}");
    }
    // A redirect from an allowed server to a forbidden one.
    let to = server.url("/secret");
    let origin = Server::start(move |_| redirect(302, &to)).await;
    let err = call_allowed(&origin, json!({"url": origin.url("/go")}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("redirected to"), "{err}");
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn a_slow_server_hits_the_timeout() {
    let server = Server::start(|_| Reply::Silent).await;
    let err = call_allowed(&server, json!({"url": server.url("/"), "timeout_ms": 200}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::Timeout(d) if d == Duration::from_millis(200)),
        "{err:?}"
    );
}

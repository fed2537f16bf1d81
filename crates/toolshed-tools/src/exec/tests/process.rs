//! Background processes: `process_*`.

use std::time::Duration;

use serde_json::json;
use toolshed_core::ToolError;

use super::{H, gone, running, started, structured};

#[tokio::test]
async fn a_background_server_is_listed_read_reachable_and_stopped_with_its_children() {
    let h = H::new();
    std::fs::write(h.dir.path().join("index.html"), "hello from the server\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = h
        .call(
            "process_exec",
            json!({"cmd": format!("setsid sleep 40.5 & exec python3 -m http.server {port} --bind 127.0.0.1"), "name": "web", "port": port}),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text_joined());
    let id = structured(&out)["id"].as_str().unwrap().to_string();
    assert_eq!(h.ports.get(&id).unwrap().port, port);

    let mut listening = false;
    for _ in 0..50 {
        let info = h
            .call("process_proxy_info", json!({"id": id}))
            .await
            .unwrap();
        if structured(&info)["listening"] == true {
            listening = true;
            assert!(
                info.text_joined().contains("not proxied"),
                "no HTTP server in this test"
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(listening);
    h.ports.set_base_url("http://127.0.0.1:7070");
    let info = h
        .call("process_proxy_info", json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(
        structured(&info)["url"],
        format!("http://127.0.0.1:7070/proxy/{id}/")
    );

    let body = reqwest_free_get(port).await;
    assert!(body.contains("hello from the server"), "{body}");
    // The server logs the request after answering it: poll for the line.
    let mut logs = String::new();
    for _ in 0..100 {
        logs = h
            .call("process_read_output", json!({"id": id, "tail_lines": 5}))
            .await
            .unwrap()
            .text_joined();
        if logs.contains("GET /index.html") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(logs.contains("GET /index.html"), "{logs}");

    let listed = h.call("process_list", json!({})).await.unwrap();
    assert_eq!(structured(&listed)["processes"][0]["name"], "web");
    let theirs = h
        .call_as("bob", "process_read_output", json!({"id": id}))
        .await
        .unwrap_err();
    assert!(matches!(theirs, ToolError::NotFound(_)));

    let stopped = h.call("process_stop", json!({"id": id})).await.unwrap();
    assert_eq!(structured(&stopped)["running"], false);
    assert!(gone("sleep 40.5").await, "the server's child survived");
    assert!(h.ports.get(&id).is_none());
}

#[tokio::test]
async fn a_process_that_fails_at_once_says_so() {
    let h = H::new();
    let out = h
        .call(
            "process_exec",
            json!({"cmd": "no-such-server-xyz --port 1"}),
        )
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.text_joined().contains("exited right away"),
        "{}",
        out.text_joined()
    );
    assert!(
        out.text_joined().contains("not found"),
        "{}",
        out.text_joined()
    );
}

/// GET / over a plain socket.
async fn reqwest_free_get(port: u16) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).await.unwrap();
    body
}

#[tokio::test]
async fn tail_lines_come_from_the_end_of_the_log() {
    let h = H::new();
    let out = h
        .call("process_exec", json!({"cmd": "seq 1 20000; sleep 30"}))
        .await
        .unwrap();
    let id = structured(&out)["id"].as_str().unwrap().to_string();
    let mut last = String::new();
    for _ in 0..50 {
        let logs = h
            .call("process_read_output", json!({"id": id, "tail_lines": 3}))
            .await
            .unwrap();
        last = structured(&logs)["output"].as_str().unwrap().to_string();
        if last.ends_with("20000") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last, "19998\n19999\n20000");
    h.call("process_stop", json!({"id": id, "mode": "forced"}))
        .await
        .unwrap();
}

#[tokio::test]
async fn stopping_an_ended_process_still_stops_what_it_left_running() {
    let h = H::new();
    let out = h
        .call(
            "process_exec",
            json!({"cmd": "sleep 49.5 > /dev/null 2>&1 &"}),
        )
        .await
        .unwrap();
    let id = structured(&out)["id"].as_str().unwrap().to_string();
    assert!(started("sleep 49.5").await);
    h.call("process_stop", json!({"id": id})).await.unwrap();
    assert!(
        gone("sleep 49.5").await,
        "the leftover child survived process_stop"
    );

    let session = h
        .call(
            "exec_command",
            json!({"cmd": "sleep 49.75 > /dev/null 2>&1 & sleep 0.3", "yield_ms": 0}),
        )
        .await
        .unwrap();
    let sid = structured(&session)["session_id"].as_u64().unwrap();
    h.call(
        "command_run_wait",
        json!({"session_id": sid, "timeout_ms": 5000}),
    )
    .await
    .unwrap();
    assert!(running("sleep 49.75"));
    h.call("command_run_terminate", json!({"session_id": sid}))
        .await
        .unwrap();
    assert!(gone("sleep 49.75").await);
}

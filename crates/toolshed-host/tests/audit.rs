//! The audit log: every call leaves a row, written in batches off the call's path, and
//! none is lost when the host shuts down or is dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

use serde_json::json;
use support::{Behaviour, TestHost, open, plugin, strict_spec, tool};
use toolshed_core::OwnerId;
use toolshed_host::{CallRequest, Host};

async fn echo_host() -> TestHost {
    let echo = plugin("t.echo", vec![tool(strict_spec("echo"), Behaviour::Echo)]);
    open(vec![echo], "").await
}

/// `n` calls, one after another.
async fn calls(host: &Host, lane: usize, n: usize) {
    for i in 0..n {
        let req = CallRequest::new(
            "echo",
            json!({"n": i, "s": format!("lane {lane}")}),
            OwnerId::new("tester"),
            "test",
        );
        assert!(host.call(req).await.result.is_ok());
    }
}

/// The rows in the database file, read with a connection of its own.
fn rows_in(data_dir: &Path) -> i64 {
    let conn = rusqlite::Connection::open(data_dir.join("toolshed.db")).unwrap();
    conn.query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_in_the_database_once_the_host_shuts_down() {
    let t = echo_host().await;
    // Four callers at once, so rows arrive while batches are being written.
    tokio::join!(
        calls(&t.host, 0, 500),
        calls(&t.host, 1, 500),
        calls(&t.host, 2, 500),
        calls(&t.host, 3, 500),
    );
    t.host.shutdown().await;
    assert_eq!(rows_in(t.data.path()), 2000);
}

#[tokio::test]
async fn dropping_the_host_writes_the_rows_still_queued() {
    let t = echo_host().await;
    calls(&t.host, 0, 100).await;
    let TestHost {
        host,
        workspace: _workspace,
        data,
    } = t;
    drop(host);
    assert_eq!(rows_in(data.path()), 100);
}

#[tokio::test]
async fn the_audit_log_shows_a_callers_own_calls_at_once() {
    let t = echo_host().await;
    calls(&t.host, 0, 3).await;
    // No shutdown, no flush: reading the log waits for the rows queued before it.
    let rows = t.host.store().recent_audit(10).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.tool == "echo" && r.outcome == "ok"));
}

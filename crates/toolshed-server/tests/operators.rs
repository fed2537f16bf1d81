//! What an operator reads over REST: what runs for every owner (`/running`, read without a
//! tool call), the figures the dashboard draws (`/stats`), and the same on `/metrics`, with
//! every metric the shipped Grafana dashboard (deploy/grafana) asks for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Server, get, gone, request, start};

async fn execute(s: &Server, token: &str, owner: Option<&str>, tool: &str, args: Value) -> Value {
    let mut headers = vec![("Authorization", format!("Bearer {token}"))];
    if let Some(owner) = owner {
        headers.push(("X-Toolshed-Owner", owner.to_string()));
    }
    let reply = request(
        s.address,
        "POST",
        &format!("/api/v1/tools/{tool}/execute"),
        &headers,
        Some(&json!({ "arguments": args }).to_string()),
    )
    .await;
    assert_eq!(reply.status, 200, "{tool}: {}", reply.body);
    reply.json()
}

async fn read(s: &Server, token: &str, path: &str) -> (u16, Value) {
    let reply = request(
        s.address,
        "GET",
        path,
        &[("Authorization", format!("Bearer {token}"))],
        None,
    )
    .await;
    let status = reply.status;
    (
        status,
        if status == 200 {
            reply.json()
        } else {
            json!(reply.body)
        },
    )
}

fn audit_rows(s: &Server) -> usize {
    s.host
        .audit()
        .page(&toolshed_host::AuditQuery {
            limit: 1000,
            ..Default::default()
        })
        .unwrap()
        .rows
        .len()
}

#[tokio::test]
async fn running_lists_every_owners_processes_for_the_admin_and_only_its_own_for_an_agent() {
    let s = start().await;
    let admin = support::TOKEN.to_string();
    let alice = s.host.tokens().create("alice", &[], None).unwrap().token;
    let bob = s.host.tokens().create("bob", &[], None).unwrap().token;
    let started = execute(
        &s,
        &alice,
        None,
        "process_exec",
        json!({"cmd": "echo hello-from-alice; sleep 47.25"}),
    )
    .await;
    let id = started["structured"]["id"].as_str().unwrap().to_string();
    execute(
        &s,
        &bob,
        None,
        "exec_command",
        json!({"cmd": "sleep 47.5", "yield_ms": 0}),
    )
    .await;

    let rows_before = audit_rows(&s);
    let (status, all) = read(&s, &admin, "/api/v1/running").await;
    assert_eq!(status, 200, "{all}");
    let items = all["running"].as_array().unwrap();
    let mine = items.iter().find(|r| r["id"] == id.as_str()).unwrap();
    assert_eq!(mine["owner"], "alice");
    assert_eq!(mine["kind"], "process");
    assert_eq!(mine["plugin"], "system.process");
    assert_eq!(mine["running"], true);
    assert!(
        items
            .iter()
            .any(|r| r["owner"] == "bob" && r["kind"] == "command_session"),
        "{all}"
    );
    // Narrowed by owner and kind.
    let (_, only) = read(&s, &admin, "/api/v1/running?owner=bob&kind=command_session").await;
    assert!(
        only["running"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["owner"] == "bob"),
        "{only}"
    );
    assert_eq!(only["running"].as_array().unwrap().len(), 1, "{only}");
    // An agent sees its own only, and not another's output.
    let (_, hers) = read(&s, &alice, "/api/v1/running").await;
    assert!(
        hers["running"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["owner"] == "alice"),
        "{hers}"
    );
    let path = format!("/api/v1/running/system.process/{id}/output");
    let (status, _) = read(&s, &bob, &path).await;
    assert_eq!(status, 404);
    // The admin reads its output, as often as it likes, without moving alice's cursor.
    let mut output = Value::Null;
    for _ in 0..100 {
        output = read(&s, &admin, &path).await.1;
        if output["output"]
            .as_str()
            .is_some_and(|o| o.contains("hello-from-alice"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        output["output"]
            .as_str()
            .unwrap()
            .contains("hello-from-alice"),
        "{output}"
    );
    let since = execute(
        &s,
        &alice,
        None,
        "process_read_output",
        json!({"id": id, "since": 0}),
    )
    .await;
    assert!(
        since["structured"]["output"]
            .as_str()
            .unwrap()
            .contains("hello-from-alice")
    );
    // None of those reads was a call.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        audit_rows(&s),
        rows_before + 1,
        "only process_read_output was audited"
    );
    // The admin stops alice's process by acting for her.
    execute(&s, &admin, Some("alice"), "process_stop", json!({"id": id})).await;
    s.host.shutdown().await;
    assert!(gone("sleep 47.25").await && gone("sleep 47.5").await);
}

#[tokio::test]
async fn stats_and_metrics_carry_what_the_charts_and_the_grafana_dashboard_draw() {
    let s = start().await;
    let admin = support::TOKEN.to_string();
    let carol = s.host.tokens().create("carol", &[], None).unwrap().token;
    for expression in ["1+1", "2*3", "7-1"] {
        execute(
            &s,
            &carol,
            Some("carol/task-1"),
            "calculator",
            json!({"expression": expression}),
        )
        .await;
    }
    // A call that fails, whatever status the API gives it.
    request(
        s.address,
        "POST",
        "/api/v1/tools/workspace_read/execute",
        &[("Authorization", format!("Bearer {admin}"))],
        Some(r#"{"arguments":{"path":"no-such-file.txt"}}"#),
    )
    .await;

    let (status, stats) = read(&s, &admin, "/api/v1/stats?minutes=60").await;
    assert_eq!(status, 200, "{stats}");
    let buckets = stats["audit"]["calls"].as_array().unwrap();
    assert!(buckets.len() >= 60, "{}", buckets.len());
    let sum = |key: &str| {
        buckets
            .iter()
            .map(|b| b[key].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(sum("ok"), 3, "{stats}");
    assert_eq!(sum("tool_error") + sum("error"), 1, "{stats}");
    assert_eq!(stats["audit"]["owners"][0], json!(["carol", 3]));
    assert_eq!(stats["audit"]["slowest"][0]["tool"], "calculator");
    assert_eq!(stats["audit"]["failing"][0]["tool"], "workspace_read");
    assert_eq!(stats["audit"]["failing"][0]["failures"], 1);
    assert_eq!(stats["audit"]["latency"][0]["tool"], "calculator");
    assert!(
        stats["now"]["rss_bytes"].as_u64().unwrap() > 1 << 20,
        "{stats}"
    );
    // Bad windows are refused with the range; an agent without audit:read is refused.
    let (status, said) = read(&s, &admin, "/api/v1/stats?minutes=0").await;
    assert_eq!(status, 400);
    assert!(said.to_string().contains("1 to 1440"), "{said}");
    assert_eq!(read(&s, &carol, "/api/v1/stats").await.0, 403);

    let mut metrics = get(s.address, "/api/v1/metrics").await.body;
    for _ in 0..100 {
        if metrics.contains("toolshed_owner_calls_total{owner=\"carol\"} 3") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        metrics = get(s.address, "/api/v1/metrics").await.body;
    }
    for line in [
        "# TYPE toolshed_call_duration_seconds histogram",
        "toolshed_call_duration_seconds_bucket{tool=\"calculator\",le=\"+Inf\"} 3",
        "toolshed_owner_calls_total{owner=\"carol\"} 3",
        "toolshed_approvals_waiting 0",
        "process_resident_memory_bytes ",
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
    // Every metric the shipped Grafana dashboard queries is one the server exposes.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/grafana/toolshed-dashboard.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut asked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("toolshed_") || word.starts_with("process_") {
                    asked += 1;
                    assert!(
                        metrics.contains(&format!("# TYPE {}", word.trim_end_matches("_bucket"))),
                        "the Grafana panel `{}` asks for {word}, which /metrics does not expose",
                        panel["title"]
                    );
                }
            }
        }
    }
    assert!(asked >= 8, "{asked}");
}

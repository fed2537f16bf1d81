//! What the agent tools keep, read over REST: todo lists and schedules written by calling
//! `todo_write` and `schedule_create` through `POST /tools/{name}/execute`, then listed
//! per owner as jobs are — the admin token every owner's (`?owner=` narrowing), an agent
//! token its own owner's only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Value, json};
use support::{Server, auth, request, start};

/// Calls `tool` with `arguments` as `owner` (the admin token naming it); its structured
/// result.
async fn call_as(s: &Server, owner: &str, tool: &str, arguments: Value) -> Value {
    let reply = request(
        s.address,
        "POST",
        &format!("/api/v1/tools/{tool}/execute"),
        &[auth(), ("X-Toolshed-Owner", owner.to_string())],
        Some(&json!({ "arguments": arguments }).to_string()),
    )
    .await;
    assert_eq!(reply.status, 200, "{tool} as {owner}: {}", reply.body);
    let body = reply.json();
    assert_eq!(body["is_error"], false, "{tool} as {owner}: {}", reply.body);
    body["structured"].clone()
}

/// `GET path` with `token`; the reply's JSON after checking its status.
async fn read_with(s: &Server, token: &str, path: &str, status: u16) -> Value {
    let reply = request(
        s.address,
        "GET",
        path,
        &[("Authorization", format!("Bearer {token}"))],
        None,
    )
    .await;
    assert_eq!(reply.status, status, "GET {path}: {}", reply.body);
    reply.json()
}

/// The `(owner, name)` of each todo list or schedule of a listing, sorted.
fn owned(listing: &Value, key: &str, name: &str) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = listing[key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` in {listing}"))
        .iter()
        .map(|row| {
            (
                row["owner"].as_str().unwrap().to_string(),
                row[name].as_str().unwrap().to_string(),
            )
        })
        .collect();
    all.sort();
    all
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
        .collect()
}

#[tokio::test]
async fn todo_lists_and_schedules_are_listed_per_owner_as_jobs_are() {
    let s = start().await;
    let admin = support::TOKEN;
    let items = json!([
        {"id": "1", "text": "read the changelog", "status": "done"},
        {"id": "2", "text": "bump the version", "status": "in_progress", "notes": "in Cargo.toml"},
        {"id": "3", "text": "tag the release", "status": "pending"},
    ]);
    call_as(
        &s,
        "alice",
        "todo_write",
        json!({"todos": items, "list": "release"}),
    )
    .await;
    call_as(
        &s,
        "alice/task-7",
        "todo_write",
        json!({"todos": [{"id": "a", "text": "subtask", "status": "pending"}]}),
    )
    .await;
    call_as(
        &s,
        "bob",
        "todo_write",
        json!({"todos": [{"id": "b", "text": "bob's own", "status": "pending"}]}),
    )
    .await;
    let made = call_as(
        &s,
        "alice",
        "schedule_create",
        json!({"name": "nightly", "cron": "0 2 * * 1-5", "tz": "Europe/Berlin",
               "tool": "calculator", "arguments": {"expression": "6*7"}}),
    )
    .await;
    let schedule_id = made["id"].as_str().unwrap().to_string();

    // The admin token: every owner's, newest list first.
    let todos = read_with(&s, admin, "/api/v1/todos", 200).await;
    assert_eq!(
        owned(&todos, "todos", "list"),
        pairs(&[
            ("alice", "release"),
            ("alice/task-7", "default"),
            ("bob", "default")
        ])
    );
    let release = todos["todos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["list"] == "release")
        .unwrap();
    assert_eq!(release["items"], items);
    assert!(release["updated_ms"].as_i64().unwrap() > 0);
    let schedules = read_with(&s, admin, "/api/v1/schedules", 200).await;
    assert_eq!(
        owned(&schedules, "schedules", "name"),
        pairs(&[("alice", "nightly")])
    );
    let nightly = &schedules["schedules"][0];
    assert_eq!(nightly["id"], schedule_id.as_str());
    assert_eq!(nightly["spec"]["cron"], "0 2 * * 1-5");
    assert_eq!(nightly["spec"]["tz"], "Europe/Berlin");
    assert_eq!(nightly["spec"]["tool"], "calculator");
    assert_eq!(nightly["spec"]["arguments"], json!({"expression": "6*7"}));
    assert_eq!(nightly["spec"]["missed"], "skip");
    assert!(nightly["next_ms"].as_i64().unwrap() > 0);
    assert_eq!(nightly["runs"], 0);
    assert!(nightly["last_job"].is_null() && nightly["last_outcome"].is_null());

    // `?owner=` narrows the admin's listing to that owner and its sub-owners.
    let alices = read_with(&s, admin, "/api/v1/todos?owner=alice", 200).await;
    assert_eq!(
        owned(&alices, "todos", "list"),
        pairs(&[("alice", "release"), ("alice/task-7", "default")])
    );
    let sub = read_with(&s, admin, "/api/v1/todos?owner=alice/task-7", 200).await;
    assert_eq!(
        owned(&sub, "todos", "list"),
        pairs(&[("alice/task-7", "default")])
    );
    let bobs = read_with(&s, admin, "/api/v1/schedules?owner=bob", 200).await;
    assert_eq!(bobs, json!({"schedules": []}));
    // A name that only a pattern would match is not the owner.
    let near = read_with(&s, admin, "/api/v1/todos?owner=alic", 200).await;
    assert_eq!(near, json!({"todos": []}));
    let unknown = read_with(&s, admin, "/api/v1/todos?who=alice", 400).await;
    assert_eq!(unknown["error"]["kind"], "invalid_request");

    // An agent token of another owner sees its own and none of alice's, even by name.
    let bob = s.host.tokens().create("bob", &[], None).unwrap().token;
    let seen = read_with(&s, &bob, "/api/v1/todos", 200).await;
    assert_eq!(owned(&seen, "todos", "list"), pairs(&[("bob", "default")]));
    for path in [
        "/api/v1/todos?owner=alice",
        "/api/v1/todos?owner=alice/task-7",
    ] {
        assert_eq!(
            read_with(&s, &bob, path, 200).await,
            json!({"todos": []}),
            "{path}"
        );
    }
    for path in ["/api/v1/schedules", "/api/v1/schedules?owner=alice"] {
        assert_eq!(
            read_with(&s, &bob, path, 200).await,
            json!({"schedules": []}),
            "{path}"
        );
    }

    // alice's agent token sees hers and her sub-owners'; a sub-owner's token only its own.
    let alice = s.host.tokens().create("alice", &[], None).unwrap().token;
    let hers = read_with(&s, &alice, "/api/v1/todos", 200).await;
    assert_eq!(
        owned(&hers, "todos", "list"),
        pairs(&[("alice", "release"), ("alice/task-7", "default")])
    );
    let hers = read_with(&s, &alice, "/api/v1/schedules", 200).await;
    assert_eq!(
        owned(&hers, "schedules", "name"),
        pairs(&[("alice", "nightly")])
    );
    let task = s
        .host
        .tokens()
        .create("alice/task-7", &[], None)
        .unwrap()
        .token;
    let its = read_with(&s, &task, "/api/v1/todos?owner=alice", 200).await;
    assert_eq!(
        owned(&its, "todos", "list"),
        pairs(&[("alice/task-7", "default")])
    );
    let its = read_with(&s, &task, "/api/v1/schedules", 200).await;
    assert_eq!(its, json!({"schedules": []}));

    // The scope `/jobs` needs: a token that may only list tools reads neither.
    let lister = s
        .host
        .tokens()
        .create("carol", &["tools:list".to_string()], None)
        .unwrap()
        .token;
    for path in ["/api/v1/todos", "/api/v1/schedules", "/api/v1/jobs"] {
        let refused = read_with(&s, &lister, path, 403).await;
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("tools:call"),
            "{path}: {refused}"
        );
    }
}

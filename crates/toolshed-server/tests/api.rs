//! The REST API over a real socket: every endpoint, jobs through SSE and WebSocket,
//! cancellation killing a process tree. The guard in front of it is `guard.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{Sse, Ws, auth, get, gone, post, request, running, start};

#[tokio::test]
async fn plugins_are_listed_enabled_disabled_reloaded_and_configured() {
    let s = start().await;
    let list = get(s.address, "/api/v1/plugins").await;
    assert_eq!(list.status, 200);
    let ids: Vec<String> = list.json()["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.contains(&"system.exec_command".to_string()), "{ids:?}");

    let one = get(s.address, "/api/v1/plugins/system.calculator").await;
    assert_eq!(one.json()["state"], "running");
    assert_eq!(get(s.address, "/api/v1/plugins/no.such").await.status, 404);

    let tools = get(s.address, "/api/v1/plugins/system.process/tools").await;
    assert_eq!(tools.json()["tools"].as_array().unwrap().len(), 5);

    let mut events = Sse::open(s.address, "/api/v1/events", &[]).await;
    let off = post(s.address, "/api/v1/plugins/system.calculator/disable", "").await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.json()["state"], "disabled");
    let (_, kind, data) = events.next().await;
    assert_eq!(kind, "plugin.state_changed");
    assert_eq!(data["data"]["plugin_id"], "system.calculator");
    let refused = post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{"expression":"1"}}"#,
    )
    .await;
    assert_eq!(refused.status, 404);
    // Off, its tools are still listed whole: the registry's copy of a built-in's
    // manifest drops the schemas, the answer takes them from the plugin.
    let listed = get(s.address, "/api/v1/plugins/system.calculator/tools").await;
    let tool = &listed.json()["tools"][0];
    assert_eq!(tool["callable"], false, "{tool}");
    assert!(
        tool["input_schema"]["properties"]["expression"].is_object(),
        "{tool}"
    );
    assert_eq!(
        post(s.address, "/api/v1/plugins/system.calculator/reload", "")
            .await
            .status,
        409
    );
    let on = post(s.address, "/api/v1/plugins/system.calculator/enable", "").await;
    assert_eq!(on.json()["state"], "running");
    let reloaded = post(s.address, "/api/v1/plugins/system.calculator/reload", "").await;
    assert_eq!(reloaded.status, 200);
    let system = request(
        s.address,
        "DELETE",
        "/api/v1/plugins/system.calculator",
        &[auth()],
        None,
    )
    .await;
    assert_eq!(system.status, 409);
    assert!(
        system.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disable")
    );

    let config = get(s.address, "/api/v1/plugins/system.exec_command/config").await;
    assert_eq!(config.json()["fields"][0]["key"], "max_sessions");
    assert_eq!(config.json()["fields"][0]["value"], 128);
    let put = request(
        s.address,
        "PUT",
        "/api/v1/plugins/system.exec_command/config",
        &[auth()],
        Some(r#"{"values":{"max_sessions":5}}"#),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.json()["fields"][0]["value"], 5);
    let wrong_type = request(
        s.address,
        "PUT",
        "/api/v1/plugins/system.exec_command/config",
        &[auth()],
        Some(r#"{"values":{"max_sessions":"many"}}"#),
    )
    .await;
    assert_eq!(wrong_type.status, 400);
    let unknown = request(
        s.address,
        "PUT",
        "/api/v1/plugins/system.exec_command/config",
        &[auth()],
        Some(r#"{"values":{"colour":"red"}}"#),
    )
    .await;
    assert_eq!(unknown.status, 400);
    assert!(unknown.body.contains("max_sessions"), "{}", unknown.body);
}

#[tokio::test]
async fn a_user_plugin_can_be_uninstalled_and_secrets_are_never_returned() {
    let s = support::start_prepared(|data| {
        let dir = data.join("plugins/acme.notes");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("plugin.toml"),
            "id = \"acme.notes\"\nversion = \"0.1.0\"\nname = \"Notes\"\nkind = \"js\"\nentry = \"main.js\"\n[[config]]\nkey = \"api_token\"\ntype = \"string\"\nsecret = true\n[[tools]]\nname = \"notes_search\"\ndescription = \"Search.\"\n",
        )
        .unwrap();
    })
    .await;
    let dir = s.data.path().join("plugins/acme.notes");
    assert_eq!(
        get(s.address, "/api/v1/plugins/acme.notes").await.status,
        200
    );
    let put = request(
        s.address,
        "PUT",
        "/api/v1/plugins/acme.notes/config",
        &[auth()],
        Some(r#"{"values":{"api_token":"s3cr3t-value"}}"#),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert!(!put.body.contains("s3cr3t-value"));
    let config = get(s.address, "/api/v1/plugins/acme.notes/config").await;
    assert_eq!(config.json()["fields"][0]["set"], true);
    assert!(!config.body.contains("s3cr3t-value"));
    let removed = request(
        s.address,
        "DELETE",
        "/api/v1/plugins/acme.notes",
        &[auth()],
        None,
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert!(!dir.exists());
    assert_eq!(
        get(s.address, "/api/v1/plugins/acme.notes").await.status,
        404
    );
}

#[tokio::test]
async fn tools_are_listed_filtered_and_looked_up() {
    let s = start().await;
    let all = get(s.address, "/api/v1/tools").await.json();
    assert!(all["tools"].as_array().unwrap().len() > 20);
    let exec = get(s.address, "/api/v1/tools?group=exec").await.json();
    assert!(
        exec["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["group"] == "exec")
    );
    let by_plugin = get(s.address, "/api/v1/tools?plugin=system.calculator")
        .await
        .json();
    assert_eq!(by_plugin["tools"][0]["name"], "calculator");
    let by_text = get(s.address, "/api/v1/tools?q=ARITHMETIC").await.json();
    assert_eq!(by_text["tools"][0]["name"], "calculator");
    assert_eq!(get(s.address, "/api/v1/tools?bogus=1").await.status, 400);
    let one = get(s.address, "/api/v1/tools/workspace_read").await;
    assert_eq!(one.json()["input_schema"]["type"], "object");
    let missing = get(s.address, "/api/v1/tools/calculatr").await;
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("did you mean calculator"),
        "{}",
        missing.body
    );
}

#[tokio::test]
async fn execute_maps_errors_to_statuses_and_tool_failures_to_results() {
    let s = start().await;
    let ok = post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{"expression":"6*7"}}"#,
    )
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["content"][0]["text"], "42");
    assert_eq!(ok.json()["is_error"], false);

    let failed = post(
        s.address,
        "/api/v1/tools/exec_command/execute",
        r#"{"arguments":{"cmd":"exit 3"}}"#,
    )
    .await;
    assert_eq!(failed.status, 200, "a tool that ran and failed is a result");
    assert_eq!(failed.json()["is_error"], true);
    assert_eq!(failed.json()["structured"]["exit_code"], 3);

    let computed = post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{"expression":"1/0"}}"#,
    )
    .await;
    assert_eq!(
        computed.status, 400,
        "the calculator calls division by zero bad input"
    );

    let invalid = post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{"expression":7}}"#,
    )
    .await;
    assert_eq!(invalid.status, 400);
    assert_eq!(invalid.kind(), "invalid_arguments");
    assert!(invalid.json()["error"]["details"]["violations"].is_array());

    let unknown = post(s.address, "/api/v1/tools/nope/execute", "{}").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.kind(), "not_found");

    let not_json = post(s.address, "/api/v1/tools/calculator/execute", "{not json").await;
    assert_eq!(not_json.status, 400);
    let extra = post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{},"colour":1}"#,
    )
    .await;
    assert_eq!(extra.status, 400);
    let bad_timeout = post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{"expression":"1"},"timeout_ms":0}"#,
    )
    .await;
    assert_eq!(bad_timeout.status, 400);

    let read = post(
        s.address,
        "/api/v1/tools/workspace_read/execute",
        r#"{"arguments":{"path":"no-such-file"}}"#,
    )
    .await;
    assert_eq!(read.status, 404, "{}", read.body);

    let wrong_method = request(
        s.address,
        "GET",
        "/api/v1/tools/calculator/execute",
        &[auth()],
        None,
    )
    .await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(wrong_method.kind(), "method_not_allowed");
    let nowhere = get(s.address, "/api/v1/nowhere").await;
    assert_eq!(nowhere.status, 404);
    assert_eq!(nowhere.kind(), "not_found");
}

#[tokio::test]
async fn an_async_job_is_seen_through_sse_from_start_to_finish() {
    let s = start().await;
    let mut events = Sse::open(s.address, "/api/v1/events?owner=watcher", &[]).await;
    let accepted = request(
        s.address,
        "POST",
        "/api/v1/tools/exec_command/execute",
        &[auth(), ("X-Toolshed-Owner", "watcher".into())],
        Some(r#"{"arguments":{"cmd":"echo one; sleep 0.3; echo two","yield_ms":10000},"async":true}"#),
    )
    .await;
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let id = accepted.json()["job"]["id"].as_str().unwrap().to_string();
    assert_eq!(accepted.headers["location"], format!("/api/v1/jobs/{id}"));

    let mut kinds = Vec::new();
    let mut last_id;
    loop {
        let (event_id, kind, data) = events.next().await;
        assert_eq!(data["job_id"], id.as_str());
        assert_eq!(data["owner"], "watcher");
        last_id = event_id.unwrap();
        kinds.push(kind.clone());
        if kind == "job.finished" {
            assert_eq!(data["data"]["result"]["structured"]["exit_code"], 0);
            break;
        }
    }
    assert_eq!(kinds.first().unwrap(), "job.started");
    assert!(kinds.iter().any(|k| k == "job.progress"), "{kinds:?}");

    let job = get(s.address, &format!("/api/v1/jobs/{id}")).await.json();
    assert_eq!(job["state"], "succeeded");
    assert!(
        job["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("two")
    );
    let listed = get(s.address, "/api/v1/jobs?owner=watcher").await.json();
    assert_eq!(listed["jobs"][0]["id"], id.as_str());
    assert_eq!(
        get(s.address, "/api/v1/jobs?owner=someone-else")
            .await
            .json()["jobs"],
        json!([])
    );
    assert_eq!(get(s.address, "/api/v1/jobs/job-999").await.status, 404);
    assert_eq!(
        post(s.address, &format!("/api/v1/jobs/{id}/cancel"), "")
            .await
            .status,
        409
    );

    let too_big = request(
        s.address,
        "GET",
        "/api/v1/events",
        &[auth(), ("Last-Event-ID", u64::MAX.to_string())],
        None,
    )
    .await;
    assert_eq!(too_big.status, 400);

    // A client that reconnects with its last event id gets what came after it.
    let mut resumed = Sse::open(
        s.address,
        "/api/v1/events",
        &[("Last-Event-ID", (last_id - 2).to_string())],
    )
    .await;
    let (first, _, _) = resumed.next().await;
    assert_eq!(first, Some(last_id - 1));
    let (second, kind, _) = resumed.next().await;
    assert_eq!((second, kind.as_str()), (Some(last_id), "job.finished"));
}

#[tokio::test]
async fn an_async_job_is_seen_through_websocket_and_cancelling_it_kills_its_tree() {
    let s = start().await;
    let mut ws = Ws::open(s.address, "/api/v1/events/ws").await;
    let accepted = post(
        s.address,
        "/api/v1/tools/exec_command/execute",
        r#"{"arguments":{"cmd":"setsid sleep 46.5 & sleep 46.25","yield_ms":60000},"async":true}"#,
    )
    .await;
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let id = accepted.json()["job"]["id"].as_str().unwrap().to_string();
    let started = ws.next().await;
    assert_eq!(started["type"], "job.started");
    assert_eq!(started["job_id"], id.as_str());
    for _ in 0..100 {
        if running("sleep 46.5") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(running("sleep 46.5"));
    let cancelled = post(s.address, &format!("/api/v1/jobs/{id}/cancel"), "").await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    // The reply says how it ended (failed before: "running", as it was a moment earlier).
    assert_eq!(cancelled.json()["state"], "cancelled", "{}", cancelled.body);
    loop {
        let event = ws.next().await;
        if event["type"] == "job.cancelled" {
            assert_eq!(event["data"]["error"]["kind"], "cancelled");
            break;
        }
    }
    assert!(
        gone("sleep 46.5").await && gone("sleep 46.25").await,
        "the job's process tree survived"
    );
    assert_eq!(
        get(s.address, &format!("/api/v1/jobs/{id}")).await.json()["state"],
        "cancelled"
    );
}

#[tokio::test]
async fn sessions_created_over_rest_belong_to_the_named_owner() {
    let s = start().await;
    let as_owner = |owner: &str| vec![auth(), ("X-Toolshed-Owner", owner.to_string())];
    let started = request(
        s.address,
        "POST",
        "/api/v1/tools/exec_command/execute",
        &as_owner("alice"),
        Some(r#"{"arguments":{"cmd":"sleep 47.5","yield_ms":0}}"#),
    )
    .await;
    let sid = started.json()["structured"]["session_id"].as_u64().unwrap();
    let theirs = request(
        s.address,
        "POST",
        "/api/v1/tools/command_run_list/execute",
        &as_owner("bob"),
        Some("{}"),
    )
    .await;
    assert_eq!(theirs.json()["structured"]["sessions"], json!([]));
    let mine = request(
        s.address,
        "POST",
        "/api/v1/tools/command_run_list/execute",
        &as_owner("alice"),
        Some("{}"),
    )
    .await;
    assert_eq!(mine.json()["structured"]["sessions"][0]["session_id"], sid);
    let bad = request(
        s.address,
        "POST",
        "/api/v1/tools/command_run_list/execute",
        &as_owner("no spaces"),
        Some("{}"),
    )
    .await;
    assert_eq!(bad.status, 400);
    request(
        s.address,
        "POST",
        "/api/v1/tools/command_run_terminate/execute",
        &as_owner("alice"),
        Some(&format!(
            r#"{{"arguments":{{"session_id":{sid},"force":true}}}}"#
        )),
    )
    .await;
    assert!(gone("sleep 47.5").await);
}

#[tokio::test]
async fn metrics_count_calls_and_live_sessions() {
    let s = start().await;
    post(
        s.address,
        "/api/v1/tools/calculator/execute",
        r#"{"arguments":{"expression":"1+1"}}"#,
    )
    .await;
    post(
        s.address,
        "/api/v1/tools/exec_command/execute",
        r#"{"arguments":{"cmd":"sleep 48.5","yield_ms":0}}"#,
    )
    .await;
    // The counters follow the host's events, a moment behind the calls.
    let mut metrics = get(s.address, "/api/v1/metrics").await;
    for _ in 0..100 {
        if metrics.body.contains("tool=\"exec_command\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        metrics = get(s.address, "/api/v1/metrics").await;
    }
    assert_eq!(metrics.status, 200);
    assert!(metrics.headers["content-type"].starts_with("text/plain"));
    assert!(
        metrics
            .body
            .contains("toolshed_calls_total{tool=\"calculator\",outcome=\"ok\"} 1"),
        "{}",
        metrics.body
    );
    assert!(
        metrics.body.contains("toolshed_live_sessions 1"),
        "{}",
        metrics.body
    );
    s.host.shutdown().await;
    assert!(gone("sleep 48.5").await);
}

#[tokio::test]
async fn the_openapi_document_covers_every_endpoint() {
    let s = start().await;
    let doc = get(s.address, "/api/v1/openapi.json").await.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for (method, path) in toolshed_server::ROUTES {
        let op = &doc["paths"][format!("/api/v1{path}")][method.to_lowercase()];
        assert!(op.is_object(), "{method} {path} is not documented");
        assert!(
            op["responses"].is_object(),
            "{method} {path} has no responses"
        );
    }
}

#[tokio::test]
async fn every_documented_route_is_served() {
    let s = start().await;
    for (method, path) in toolshed_server::ROUTES {
        if path.ends_with("/events") || path.ends_with("/ws") {
            continue; // streams; covered above
        }
        let concrete = path.replace("{id}", "zz-none").replace("{name}", "zz-none");
        let body = (*method == "POST" || *method == "PUT").then_some("{}");
        let reply = request(
            s.address,
            method,
            &format!("/api/v1{concrete}"),
            &[auth()],
            body,
        )
        .await;
        assert_ne!(reply.status, 405, "{method} {path}: {}", reply.body);
        assert!(
            !reply.body.contains("no endpoint"),
            "{method} {path} is not routed: {}",
            reply.body
        );
    }
}

#[tokio::test]
async fn a_plugin_is_installed_granted_and_uninstalled_over_rest() {
    let s = support::start().await;
    let source = tempfile::tempdir().unwrap();
    std::fs::write(
        source.path().join("plugin.toml"),
        "id = \"acme.hooks\"\nversion = \"0.2.0\"\nname = \"Hooks\"\nkind = \"mcp\"\nicon = \"icon.svg\"\n[translations.zh]\nname = \"钩子\"\ndescription = \"发送通知\"\n[mcp]\ncommand = \"true\"\n[capabilities]\nnetwork = [\"hooks.example.com\"]\n",
    )
    .unwrap();
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"/>";
    std::fs::write(source.path().join("icon.svg"), svg).unwrap();
    let body = json!({"source": source.path().to_str().unwrap()}).to_string();
    let installed = request(s.address, "POST", "/api/v1/plugins", &[auth()], Some(&body)).await;
    assert_eq!(installed.status, 201, "{}", installed.body);
    assert_eq!(installed.json()["plugin"]["id"], "acme.hooks");
    assert_eq!(installed.json()["plugin"]["root"], "user");
    // Loaded at once, not only after a restart (kind mcp has no loader in this build).
    assert_eq!(
        get(s.address, "/api/v1/plugins/acme.hooks").await.json()["state"],
        "error"
    );
    // Where it came from, and whether its files are still those installed.
    let shown = get(s.address, "/api/v1/plugins/acme.hooks").await.json();
    let canonical = std::fs::canonicalize(source.path()).unwrap();
    assert_eq!(
        shown["provenance"]["source"],
        canonical.display().to_string()
    );
    let verified = get(s.address, "/api/v1/plugins/acme.hooks/verify").await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    assert_eq!(verified.json()["clean"], true);
    let dir = std::path::PathBuf::from(shown["dir"].as_str().unwrap());
    std::fs::write(dir.join("added.js"), "x").unwrap();
    let verified = get(s.address, "/api/v1/plugins/acme.hooks/verify")
        .await
        .json();
    assert_eq!(verified["clean"], false);
    assert_eq!(verified["drift"]["added"], json!(["added.js"]));
    std::fs::remove_file(dir.join("added.js")).unwrap();
    // Names and descriptions in the language asked for, where the plugin translates them.
    let zh = get(s.address, "/api/v1/plugins/acme.hooks?locale=zh-CN")
        .await
        .json();
    assert_eq!(
        (zh["name"].as_str(), zh["description"].as_str()),
        (Some("钩子"), Some("发送通知"))
    );
    let fr = get(s.address, "/api/v1/plugins/acme.hooks?locale=fr")
        .await
        .json();
    assert_eq!(fr["name"], "Hooks");
    let listed = get(s.address, "/api/v1/plugins?locale=zh").await.json();
    let hooks = listed["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "acme.hooks")
        .cloned();
    assert_eq!(hooks.unwrap()["name"], "钩子");
    let bad = get(s.address, "/api/v1/plugins?locale=zh%3Bdrop").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("language tag"), "{}", bad.body);
    let icon = get(s.address, "/api/v1/plugins/acme.hooks/icon").await;
    assert_eq!(icon.status, 200, "{}", icon.body);
    assert_eq!(icon.body, svg);
    assert_eq!(
        icon.headers.get("content-type").map(String::as_str),
        Some("image/svg+xml")
    );
    let none = get(s.address, "/api/v1/plugins/system.echo/icon").await;
    assert_eq!(none.status, 404, "{}", none.body);
    let never = get(s.address, "/api/v1/plugins/system.echo/verify").await;
    assert!(matches!(never.status, 404 | 409), "{}", never.body);

    let again = request(s.address, "POST", "/api/v1/plugins", &[auth()], Some(&body)).await;
    assert_eq!(again.status, 409, "{}", again.body);
    let bad = request(
        s.address,
        "POST",
        "/api/v1/plugins",
        &[auth()],
        Some(r#"{"source": "/nonexistent/plugin.zip"}"#),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.body);

    let grants = get(s.address, "/api/v1/plugins/acme.hooks/grants").await;
    assert_eq!(
        grants.json()["grants"]["declared"],
        json!(["http:hooks.example.com"])
    );
    let refused = request(
        s.address,
        "POST",
        "/api/v1/plugins/acme.hooks/grants",
        &[auth()],
        Some(r#"{"add": ["http:evil.example.com"]}"#),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("hooks.example.com"),
        "{}",
        refused.body
    );
    let granted = request(
        s.address,
        "POST",
        "/api/v1/plugins/acme.hooks/grants",
        &[auth()],
        Some(r#"{"add": ["http:hooks.example.com"]}"#),
    )
    .await;
    assert_eq!(granted.status, 200, "{}", granted.body);
    assert_eq!(
        granted.json()["grants"]["granted"],
        json!(["http:hooks.example.com"])
    );

    let removed = request(
        s.address,
        "DELETE",
        "/api/v1/plugins/acme.hooks",
        &[auth()],
        None,
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(
        get(s.address, "/api/v1/plugins/acme.hooks/grants")
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn memories_are_stored_found_and_deleted_per_owner() {
    let s = start().await;
    let as_owner = |owner: &'static str| [auth(), ("X-Toolshed-Owner", owner.to_string())];
    let stored = request(
        s.address,
        "POST",
        "/api/v1/memories",
        &as_owner("alice"),
        Some(r#"{"text":"the staging database listens on 5433","tags":["ops"]}"#),
    )
    .await;
    assert_eq!(stored.status, 201, "{}", stored.body);
    let id = stored.json()["id"].as_str().unwrap().to_string();
    let updated = request(
        s.address,
        "POST",
        "/api/v1/memories",
        &as_owner("alice"),
        Some(&format!(
            r#"{{"id":"{id}","text":"the staging database listens on 5434","tags":["ops"]}}"#
        )),
    )
    .await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert!(updated.json()["text"].as_str().unwrap().ends_with("5434"));

    let found = request(
        s.address,
        "GET",
        "/api/v1/memories/search?q=staging&tags=ops",
        &as_owner("alice"),
        None,
    )
    .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(found.json()["results"][0]["id"], id.as_str());
    assert!(
        found.json()["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("**staging**")
    );
    // Another owner sees none of it.
    let other = request(
        s.address,
        "GET",
        "/api/v1/memories/search?q=staging",
        &as_owner("bob"),
        None,
    )
    .await;
    assert_eq!(other.json()["results"], json!([]));
    let theirs = request(
        s.address,
        "GET",
        &format!("/api/v1/memories/{id}"),
        &as_owner("bob"),
        None,
    )
    .await;
    assert_eq!(theirs.status, 404, "{}", theirs.body);
    assert_eq!(theirs.kind(), "not_found");

    let listed = request(
        s.address,
        "GET",
        "/api/v1/memories?limit=5",
        &as_owner("alice"),
        None,
    )
    .await;
    assert_eq!(listed.json()["memories"][0]["id"], id.as_str());
    let deleted = request(
        s.address,
        "DELETE",
        &format!("/api/v1/memories/{id}"),
        &as_owner("alice"),
        None,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert!(deleted.json()["deleted"]["deleted_ms"].is_i64());
    // Gone from its resource until restored.
    let path = format!("/api/v1/memories/{id}");
    let hidden = request(s.address, "GET", &path, &as_owner("alice"), None).await;
    assert_eq!(hidden.status, 404, "{}", hidden.body);
    assert!(hidden.body.contains("restore"), "{}", hidden.body);
    let gone = request(
        s.address,
        "GET",
        "/api/v1/memories/search?q=staging",
        &as_owner("alice"),
        None,
    )
    .await;
    assert_eq!(gone.json()["results"], json!([]));
    let restored = request(
        s.address,
        "POST",
        &format!("/api/v1/memories/{id}/restore"),
        &as_owner("alice"),
        None,
    )
    .await;
    assert_eq!(restored.status, 200, "{}", restored.body);
    assert!(restored.json()["deleted_ms"].is_null());
    let again = request(
        s.address,
        "POST",
        &format!("/api/v1/memories/{id}/restore"),
        &as_owner("alice"),
        None,
    )
    .await;
    assert_eq!(again.status, 409, "{}", again.body);

    // Bad input is named.
    let no_query = get(s.address, "/api/v1/memories/search").await;
    assert_eq!(no_query.status, 400);
    assert!(no_query.body.contains("`q`"), "{}", no_query.body);
    let empty = post(s.address, "/api/v1/memories", r#"{"text":"   "}"#).await;
    assert_eq!(empty.status, 400, "{}", empty.body);
    let bad_namespace = post(
        s.address,
        "/api/v1/memories",
        r#"{"text":"x","namespace":"../up"}"#,
    )
    .await;
    assert_eq!(bad_namespace.status, 400, "{}", bad_namespace.body);
    assert!(
        bad_namespace.body.contains("namespace"),
        "{}",
        bad_namespace.body
    );
    // Each request was a call of a memory tool through the pipeline: it is audited.
    s.host.store().flush_audit();
    let audit = get(s.address, "/api/v1/audit?tool=memory_*&limit=100").await;
    let rows = audit.json()["audit"].as_array().unwrap().len();
    assert!(rows >= 10, "{}", audit.body);
}

//! The OpenAPI document against the replies the server really gives: a tour of the REST
//! API (plugins, a user plugin installed and verified, config with a secret, tools, a sync
//! call and a job, todo lists and schedules, memories, approvals, audit, MCP servers,
//! errors) in which every JSON reply is validated against the schema the document gives
//! for its operation and status.
//!
//! The check is stricter than the document: every object the document describes with
//! `properties` is closed here (`additionalProperties: false` unless it says otherwise), so
//! a field a reply type sends and its schema does not name fails, as does a field the
//! schema requires and the reply leaves out, or a value of another type (`null` included).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::{Map, Value, json};
use support::{Reply, auth, get, request};

/// A JSON Schema (draft 2020-12) of an OpenAPI 3.0 schema: `nullable: true` becomes an
/// `anyOf` with `null` (as schemathesis reads it), and every object schema that lists its
/// `properties` without saying what else it takes is closed.
fn json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out: Map<String, Value> = map
                .iter()
                .filter(|(key, _)| *key != "nullable")
                .map(|(key, value)| {
                    let converted = match key.as_str() {
                        // Maps of names to schemas, and schemas' lists.
                        "properties" | "schemas" => Value::Object(
                            value
                                .as_object()
                                .unwrap()
                                .iter()
                                .map(|(name, s)| (name.clone(), json_schema(s)))
                                .collect(),
                        ),
                        "allOf" | "anyOf" | "oneOf" => Value::Array(
                            value.as_array().unwrap().iter().map(json_schema).collect(),
                        ),
                        "items" | "additionalProperties" | "not" => json_schema(value),
                        _ => value.clone(),
                    };
                    (key.clone(), converted)
                })
                .collect();
            let composed = ["allOf", "anyOf", "oneOf"]
                .iter()
                .any(|k| out.contains_key(*k));
            if out.contains_key("properties")
                && !out.contains_key("additionalProperties")
                && !composed
            {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            if map.get("nullable") == Some(&Value::Bool(true)) {
                json!({"anyOf": [Value::Object(out), {"type": "null"}]})
            } else {
                Value::Object(out)
            }
        }
        other => other.clone(),
    }
}

/// The schema the document gives the JSON reply of `method template` with `status`.
fn documented(doc: &Value, method: &str, template: &str, status: u16) -> Value {
    let operation = &doc["paths"][format!("/api/v1{template}")][method.to_lowercase()];
    assert!(
        operation.is_object(),
        "{method} {template} is not documented"
    );
    let response = &operation["responses"][status.to_string()];
    assert!(
        response.is_object(),
        "{method} {template} answered {status}, which the document does not list"
    );
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {template} {status} has no JSON schema"
    );
    schema.clone()
}

/// Checks `reply` against the document; its JSON.
fn check(doc: &Value, method: &str, template: &str, reply: &Reply) -> Value {
    let schema = documented(doc, method, template, reply.status);
    let mut root = json_schema(&schema);
    // `#/components/schemas/…` resolves in the schema's own document.
    root.as_object_mut()
        .unwrap()
        .insert("components".into(), json_schema(&doc["components"]));
    let validator = jsonschema::validator_for(&root)
        .unwrap_or_else(|e| panic!("{method} {template}: the schema does not compile: {e}"));
    let body = reply.json();
    let problems: Vec<String> = validator
        .iter_errors(&body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        problems.is_empty(),
        "{method} {template} {} disagrees with its documented schema:\n{}\nreply: {}",
        reply.status,
        problems.join("\n"),
        reply.body
    );
    body
}

/// The route `method path` is served by: the template of [`toolshed_server::ROUTES`] it
/// fits, a literal segment beating a parameter (`/tools/search`, not `/tools/{name}`).
fn route(method: &str, path: &str) -> &'static str {
    let path = path.split('?').next().unwrap();
    let segments: Vec<&str> = path.split('/').collect();
    toolshed_server::ROUTES
        .iter()
        .filter(|(m, _)| *m == method)
        .filter_map(|(_, template)| {
            let parts: Vec<&str> = template.split('/').collect();
            let fits = parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(part, segment)| part.starts_with('{') || part == segment);
            let literal = parts.iter().filter(|p| !p.starts_with('{')).count();
            fits.then_some((literal, *template))
        })
        .max()
        .unwrap_or_else(|| panic!("no route serves {method} {path}"))
        .1
}

/// A server, its document, and how many replies were checked.
struct Tour {
    server: support::Server,
    doc: Value,
    checked: usize,
}

impl Tour {
    /// Sends `METHOD PATH STATUS` (the status it must answer) with `body` and the admin
    /// token, and checks the reply against the document; its JSON.
    async fn step(&mut self, line: &str, body: Option<&str>) -> Value {
        let words: Vec<&str> = line.split(' ').collect();
        let [method, path, status] = words[..] else {
            panic!("not METHOD PATH STATUS: {line}")
        };
        let reply = request(
            self.server.address,
            method,
            &format!("/api/v1{path}"),
            &[auth()],
            body,
        )
        .await;
        assert_eq!(reply.status.to_string(), status, "{line}: {}", reply.body);
        self.checked += 1;
        check(&self.doc, method, route(method, path), &reply)
    }

    /// Each of `lines`, in order, without a body.
    async fn steps(&mut self, lines: &[&str]) {
        for line in lines {
            self.step(line, None).await;
        }
    }
}

fn prepare(data: &std::path::Path) {
    let dir = data.join("plugins/acme.notes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("plugin.toml"),
        r#"id = "acme.notes"
version = "0.1.0"
name = "Notes"
description = "Notes, searched."
kind = "js"
entry = "main.js"
tags = ["notes"]
author = "Acme"
[translations.zh]
name = "笔记"
[[config]]
key = "api_token"
type = "string"
secret = true
[[config]]
key = "limit"
type = "number"
label = "Limit"
description = "How many."
default = 10
[[env]]
name = "NOTES_HOME"
[capabilities]
network = ["notes.example.com"]
[[tools]]
name = "notes_search"
title = "Search notes"
description = "Search."
"#,
    )
    .unwrap();
    std::fs::write(dir.join("main.js"), "export default {};\n").unwrap();
    let mcp = data.join("plugins/mcp.hooks");
    std::fs::create_dir_all(&mcp).unwrap();
    std::fs::write(
        mcp.join("plugin.toml"),
        "id = \"mcp.hooks\"\nversion = \"0.1.0\"\nname = \"hooks\"\nkind = \"mcp\"\n[mcp]\ncommand = \"true\"\n",
    )
    .unwrap();
}

#[tokio::test]
async fn every_reply_matches_the_schema_the_document_gives_it() {
    let server = support::start_prepared(prepare).await;
    let doc = get(server.address, "/api/v1/openapi.json").await.json();
    let mut tour = Tour {
        server,
        doc,
        checked: 0,
    };

    // The server and its plugins: a built-in, a JavaScript one with config (a secret
    // among it), env and translations, and an MCP server's.
    tour.steps(&[
        "GET /health 200",
        "GET /plugins 200",
        "GET /plugins?locale=zh&tag=notes 200",
        "GET /plugins?locale=zh%3Bdrop 400",
        "GET /plugins/acme.notes?locale=zh 200",
        "GET /plugins/acme.notes/tools?locale=zh 200",
        "GET /plugins/no.such 404",
    ])
    .await;
    for id in ["system.calculator", "acme.notes", "mcp.hooks"] {
        for tail in ["", "/tools", "/config", "/grants", "/health"] {
            tour.step(&format!("GET /plugins/{id}{tail} 200"), None)
                .await;
        }
    }
    let config = r#"{"values":{"api_token":"s3cr3t","limit":5}}"#;
    let wrong = r#"{"values":{"limit":"many","colour":"red"}}"#;
    let grant = r#"{"add":["http:notes.example.com"]}"#;
    tour.step("PUT /plugins/acme.notes/config 200", Some(config))
        .await;
    tour.step("PUT /plugins/acme.notes/config 400", Some(wrong))
        .await;
    tour.step("POST /plugins/acme.notes/grants 200", Some(grant))
        .await;
    tour.steps(&[
        "POST /plugins/system.calculator/disable 200",
        "POST /plugins/system.calculator/reload 409",
        "POST /plugins/system.calculator/enable 200",
        "POST /plugins/system.calculator/reload 200",
        "GET /plugins/system.calculator/verify 409",
        "DELETE /plugins/system.calculator 409",
    ])
    .await;

    // A plugin installed from a directory: its provenance, and its files checked.
    let source = tempfile::tempdir().unwrap();
    std::fs::write(
        source.path().join("plugin.toml"),
        "id = \"acme.hooks\"\nversion = \"0.2.0\"\nname = \"Hooks\"\nkind = \"mcp\"\n[mcp]\ncommand = \"true\"\n",
    )
    .unwrap();
    let install = json!({"source": source.path()}).to_string();
    let replace = json!({"source": source.path(), "force": true}).to_string();
    tour.step("POST /plugins 201", Some(&install)).await;
    tour.steps(&[
        "GET /plugins/acme.hooks 200",
        "GET /plugins/acme.hooks/verify 200",
    ])
    .await;
    tour.step("POST /plugins 200", Some(&replace)).await;
    tour.step("POST /plugins 409", Some(&install)).await;

    // MCP servers, and tools.
    let import = r#"{"config":{"mcpServers":{"bad name!":{"command":"x"}}}}"#;
    tour.steps(&[
        "GET /mcp-servers 200",
        "GET /mcp-servers/hooks 200",
        "GET /mcp-servers/none 404",
    ])
    .await;
    tour.step("POST /mcp-servers/import 200", Some(import))
        .await;
    tour.steps(&[
        "GET /tools 200",
        "GET /tools?plugin=acme.notes&locale=zh 200",
        "GET /tools/search?q=add+numbers&limit=3 200",
        "GET /tools/calculator 200",
        "GET /tools/calculatr 404",
    ])
    .await;
    let sum = r#"{"arguments":{"expression":"6*7"}}"#;
    let exit = r#"{"arguments":{"cmd":"exit 3"}}"#;
    let invalid = r#"{"arguments":{"nothing":1}}"#;
    tour.step("POST /tools/calculator/execute 200", Some(sum))
        .await;
    tour.step("POST /tools/exec_command/execute 200", Some(exit))
        .await;
    tour.step("POST /tools/calculator/execute 400", Some(invalid))
        .await;

    // Jobs: one that ends at once, one cancelled while it runs.
    let quick = r#"{"arguments":{"expression":"1+1"},"async":true}"#;
    let started = tour
        .step("POST /tools/calculator/execute 202", Some(quick))
        .await;
    let job = format!("/jobs/{}", started["job"]["id"].as_str().unwrap());
    while tour.step(&format!("GET {job} 200"), None).await["state"] == "running" {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tour.step(&format!("POST {job}/cancel 409"), None).await;
    let slow = r#"{"arguments":{"cmd":"sleep 30","yield_ms":60000},"async":true}"#;
    let started = tour
        .step("POST /tools/exec_command/execute 202", Some(slow))
        .await;
    let job = format!("/jobs/{}", started["job"]["id"].as_str().unwrap());
    tour.steps(&[
        "GET /jobs 200",
        &format!("POST {job}/cancel 200"),
        &format!("GET {job} 200"),
        "GET /jobs?state=cancelled 200",
    ])
    .await;

    // What the agent tools keep: a todo list and a schedule, written by their tools.
    let todo = r#"{"arguments":{"todos":[{"id":"1","text":"ship","status":"in_progress","notes":"today"},{"id":"2","text":"rest","status":"pending"}]}}"#;
    let schedule = r#"{"arguments":{"name":"daily","cron":"@daily","tool":"calculator","arguments":{"expression":"1+1"}}}"#;
    tour.step("POST /tools/todo_write/execute 200", Some(todo))
        .await;
    tour.step("POST /tools/schedule_create/execute 200", Some(schedule))
        .await;
    tour.steps(&[
        "GET /todos 200",
        "GET /todos?owner=rest 200",
        "GET /schedules 200",
        "GET /schedules?owner=nobody 200",
        "GET /schedules?when=now 400",
    ])
    .await;

    // Memories.
    let note = r#"{"text":"the staging database listens on 5433","tags":["ops"],"ttl":"7d"}"#;
    let stored = tour.step("POST /memories 201", Some(note)).await;
    let id = stored["id"].as_str().unwrap();
    let update = json!({"id": id, "text": "the staging database listens on 5434"}).to_string();
    tour.step("POST /memories 200", Some(&update)).await;
    tour.steps(&[
        "GET /memories?limit=5 200",
        "GET /memories/search?q=staging 200",
        &format!("GET /memories/{id} 200"),
        &format!("DELETE /memories/{id} 200"),
        &format!("GET /memories/{id} 404"),
        &format!("POST /memories/{id}/restore 200"),
    ])
    .await;

    // Approvals, questions and the audit log.
    let arguments = json!({"cmd": "rm -rf build"});
    let asked = tour
        .server
        .host
        .store()
        .create_approval(
            &toolshed_host::approvals::NewApproval {
                tool: "exec_command",
                owner: "rest",
                arguments: &arguments,
                rule: "ask-exec",
                reason: "runs a command",
                timeout: std::time::Duration::from_secs(600),
            },
            10,
            10,
        )
        .unwrap();
    let approval = format!("/approvals/{}", asked.id);
    let remember = r#"{"remember":true}"#;
    let decline = r#"{"action":"decline"}"#;
    tour.steps(&["GET /approvals 200", &format!("GET {approval} 200")])
        .await;
    tour.step(&format!("POST {approval}/approve 200"), Some(remember))
        .await;
    tour.step(&format!("POST {approval}/deny 409"), None).await;
    tour.step("POST /questions/q-none/answer 404", Some(decline))
        .await;
    tour.server.host.store().flush_audit();
    tour.steps(&[
        "GET /approvals?all=true 200",
        "GET /questions 200",
        "GET /audit?limit=3 200",
        "GET /audit?limit=0 400",
    ])
    .await;

    // Taking things away.
    tour.steps(&[
        "DELETE /mcp-servers/hooks 200",
        "DELETE /plugins/acme.hooks 200",
    ])
    .await;
    assert!(tour.checked > 70, "{}", tour.checked);
}

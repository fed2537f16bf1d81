//! The server over a real byte stream, driven with raw JSON-RPC lines: what a client sees
//! when it lists tools, calls them, asks for progress and gets errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use toolshed_core::{
    BuiltinPlugin, CallContext, Plugin, PluginKind, PluginManifest, Progress, Tool,
    ToolAnnotations, ToolError, ToolOutput, ToolSpec,
};
use toolshed_host::Host;
use toolshed_host::config::ConfigSources;
use toolshed_mcp::{McpServer, Session, selection_from_globs};

struct Steps(ToolSpec);

#[async_trait]
impl Tool for Steps {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, ctx: CallContext, _args: Value) -> Result<ToolOutput, ToolError> {
        for i in 1..=3 {
            ctx.progress.send(Progress {
                progress: Some(f64::from(i)),
                total: Some(3.0),
                message: Some(format!("step {i}")),
            });
        }
        Ok(ToolOutput::text("done"))
    }
}

/// Waits until its call is cancelled, then says so.
struct Wait(ToolSpec, Arc<tokio::sync::Notify>);

#[async_trait]
impl Tool for Wait {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, ctx: CallContext, _args: Value) -> Result<ToolOutput, ToolError> {
        ctx.cancel.cancelled().await;
        self.1.notify_one();
        Err(ToolError::Cancelled)
    }
}

struct Add(ToolSpec);

#[async_trait]
impl Tool for Add {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, _ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
        Ok(ToolOutput::text_and_structured(
            sum.to_string(),
            json!({ "sum": sum }),
        ))
    }
}

fn test_plugin(cancelled: Arc<tokio::sync::Notify>) -> Arc<dyn Plugin> {
    let add = ToolSpec::new("add", "Adds two integers.")
        .title("Add")
        .annotations(ToolAnnotations::PURE)
        .input_schema(json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": false
        }));
    let steps = ToolSpec::new("steps", "Reports three steps of progress.");
    let manifest = PluginManifest::new("test.mcp", "1.0.0", "test", PluginKind::Builtin);
    Arc::new(BuiltinPlugin::new(
        manifest,
        vec![
            Arc::new(Add(add)),
            Arc::new(Steps(steps)),
            Arc::new(Wait(
                ToolSpec::new("wait", "Waits until cancelled."),
                cancelled,
            )),
        ],
    ))
}

struct Fixture {
    _workspace: tempfile::TempDir,
    _data: tempfile::TempDir,
    host: Arc<Host>,
    cancelled: Arc<tokio::sync::Notify>,
}

async fn host() -> Fixture {
    host_with("").await
}

async fn host_with(config_toml: &str) -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("toolshed.toml"), config_toml).unwrap();
    let data = tempfile::tempdir().unwrap();
    let cancelled = Arc::new(tokio::sync::Notify::new());
    let config = ConfigSources {
        workspace: workspace.path().to_path_buf(),
        ..Default::default()
    }
    .load()
    .unwrap();
    let host = Host::builder(workspace.path(), data.path())
        .config(config)
        .plugin(test_plugin(cancelled.clone()))
        .open()
        .await
        .unwrap();
    Fixture {
        _workspace: workspace,
        _data: data,
        host: Arc::new(host),
        cancelled,
    }
}

/// A client speaking newline-delimited JSON-RPC to a server on the other end of a pipe.
struct Client {
    write: tokio::io::WriteHalf<DuplexStream>,
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    next_id: u64,
}

impl Client {
    async fn start(fixture: &Fixture, session: Session) -> Self {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let server = McpServer::new(fixture.host.clone(), session);
        // Served as `toolshed mcp` serves stdin and stdout, over an in-memory pipe.
        let (server_read, server_write) = tokio::io::split(server_end);
        tokio::spawn(async move {
            let _ = toolshed_mcp::serve_lines(
                server,
                server_read,
                server_write,
                std::future::pending(),
            )
            .await;
        });
        let (read, write) = tokio::io::split(client_end);
        let mut client = Self {
            write,
            lines: BufReader::new(read).lines(),
            next_id: 1,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}
                }),
            )
            .await;
        assert_eq!(init.1["result"]["serverInfo"]["name"], "toolshed");
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request; returns the notifications that arrived before its response, and
    /// the response.
    async fn request(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut notifications = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("a reply within 10 s")
                .unwrap()
                .expect("the server keeps the stream open");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id") == Some(&json!(id)) {
                return (notifications, message);
            }
            notifications.push(message);
        }
    }

    async fn call(&mut self, name: &str, arguments: Value) -> (Vec<Value>, Value) {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}

#[tokio::test]
async fn lists_every_tool_sorted_with_honest_annotations() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (_, reply) = client.request("tools/list", json!({})).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["add", "steps", "wait"]);
    let add = &tools[0];
    assert_eq!(add["title"], "Add");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(
        add["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    // A spec that says nothing gets the cautious defaults: MCP's reading of absent hints
    // (may change things, may destroy, open world), so none is listed.
    assert!(tools[1].get("annotations").is_none(), "{}", tools[1]);
}

#[tokio::test]
async fn a_call_returns_text_and_structured_content() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (_, reply) = client.call("add", json!({"a": 2, "b": 12})).await;
    let result = &reply["result"];
    assert_eq!(result["content"][0]["text"], "14");
    assert_eq!(result["structuredContent"], json!({"sum": 14}));
    assert_eq!(result["isError"], false);
}

#[tokio::test]
async fn bad_arguments_are_an_error_result_listing_each_violation() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (_, reply) = client.call("add", json!({"a": "two", "c": 1})).await;
    let result = &reply["result"];
    assert_eq!(result["isError"], true, "{reply}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("at /a"), "{text}");
    assert!(text.contains("\"b\" is a required property"), "{text}");
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error_with_a_suggestion() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (_, reply) = client.call("ad", json!({})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("`add`"), "{message}");
}

#[tokio::test]
async fn progress_arrives_before_the_result_when_asked_for() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (notes, reply) = client
        .request(
            "tools/call",
            json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "p1"}}),
        )
        .await;
    assert_eq!(reply["result"]["content"][0]["text"], "done");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| &n["params"])
        .collect();
    assert_eq!(progress.len(), 3, "{notes:?}");
    assert_eq!(progress[2]["progressToken"], "p1");
    assert_eq!(progress[2]["progress"], 3.0);
    assert_eq!(progress[2]["total"], 3.0);
    assert_eq!(progress[2]["message"], "step 3");

    // Without a token, no notifications.
    let (notes, _) = client.call("steps", json!({})).await;
    assert!(notes.is_empty(), "{notes:?}");
}

#[tokio::test]
async fn a_selection_hides_tools_and_the_pipeline_refuses_them() {
    let fixture = host().await;
    let selection = selection_from_globs(" add , ").unwrap().map(Arc::new);
    let session = Session {
        selection,
        ..Session::default()
    };
    let mut client = Client::start(&fixture, session).await;
    let (_, reply) = client.request("tools/list", json!({})).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "add");
    let (_, reply) = client.call("steps", json!({})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("--tools"), "{text}");
}

#[test]
fn an_empty_or_invalid_selection_is_reported() {
    assert!(selection_from_globs(" , ").unwrap().is_none());
    let err = selection_from_globs("a[").unwrap_err().to_string();
    assert!(err.contains("--tools") && err.contains("`a[`"), "{err}");
}

#[tokio::test]
async fn a_cancelled_notification_stops_the_running_tool() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    client
        .send(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}))
        .await;
    // The call is running once the tool is waiting; cancel it and wait for the tool to see it.
    let seen = fixture.cancelled.notified();
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}))
        .await;
    tokio::time::timeout(Duration::from_secs(5), seen)
        .await
        .expect("the tool saw its cancellation within 5 s");
    // The connection still serves requests.
    let (_, reply) = client.call("add", json!({"a": 1, "b": 1})).await;
    assert_eq!(reply["result"]["content"][0]["text"], "2");
}

#[tokio::test]
async fn tools_list_pages_follow_the_cursor_to_the_end() {
    let fixture = host_with("[mcp]\npage_size = 2\n").await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (_, first) = client.request("tools/list", json!({})).await;
    let names = |reply: &Value| -> Vec<String> {
        reply["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&first), ["add", "steps"]);
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let (_, second) = client
        .request("tools/list", json!({ "cursor": cursor }))
        .await;
    assert_eq!(names(&second), ["wait"]);
    assert!(second["result"].get("nextCursor").is_none(), "{second}");

    let (_, bad) = client
        .request("tools/list", json!({ "cursor": "page-2" }))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().contains("page-2"));
}

#[tokio::test]
async fn disabling_a_plugin_sends_list_changed_to_a_legacy_session() {
    let fixture = host().await;
    let mut client = Client::start(&fixture, Session::default()).await;
    let (_, init) = client.request("tools/list", json!({})).await;
    assert_eq!(init["result"]["tools"].as_array().unwrap().len(), 3);
    fixture
        .host
        .registry()
        .set_enabled("test.mcp", false)
        .await
        .unwrap();
    let line = tokio::time::timeout(Duration::from_secs(10), client.lines.next_line())
        .await
        .expect("a notification within 10 s")
        .unwrap()
        .unwrap();
    let note: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let (_, after) = client.request("tools/list", json!({})).await;
    assert_eq!(after["result"]["tools"], json!([]));
}

#[tokio::test]
async fn a_change_the_session_cannot_see_is_not_announced() {
    let fixture = host().await;
    let selection = toolshed_mcp::selection_from_globs("nothing_*")
        .unwrap()
        .map(Arc::new);
    let mut client = Client::start(
        &fixture,
        Session {
            selection,
            ..Session::default()
        },
    )
    .await;
    fixture
        .host
        .registry()
        .set_enabled("test.mcp", false)
        .await
        .unwrap();
    // Give a (wrong) notification time to be sent; then the next thing on the wire must be
    // the reply to this request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (notes, reply) = client.request("tools/list", json!({})).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(reply["result"]["tools"], json!([]));
}

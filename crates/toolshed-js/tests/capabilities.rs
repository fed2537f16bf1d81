//! `ctx.http`, `ctx.fs` and `ctx.tools`: present only when declared and granted, refusing
//! what is not granted with the command that grants it, and working against real services
//! when it is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use support::{TestPlugin, strings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolshed_core::{
    CallContext, CancellationToken, Capabilities, Grants, HttpClient, HttpRequest, HttpResponse,
    NetPolicy, ToolCaller, ToolError, ToolOutput,
};
use toolshed_ops::Ops;

const PROBE: &str = r#"
export function activate(context) {
  context.registerActions([{
    name: "probe",
    description: "Run a snippet with ctx.",
    properties: { code: { type: "string", required: true } },
    async run(inputs, ctx) {
      const f = new Function("ctx", `return (async () => { ${inputs.code} })()`);
      try { return await f(ctx); } catch (e) { return { error: String(e.message) }; }
    },
  }]);
}
"#;

fn probe(id: &str, declared: Capabilities, grants: Grants) -> TestPlugin {
    TestPlugin::new(id, PROBE)
        .capabilities(declared)
        .grants(grants)
}

fn code(snippet: &str) -> Value {
    json!({ "code": snippet })
}

fn error_of(out: &ToolOutput) -> String {
    out.structured
        .as_ref()
        .and_then(|s| s.get("error"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("expected an error, got {}", out.text_joined()))
        .to_string()
}

// ---- HTTP ----

/// A tiny HTTP/1.1 server on 127.0.0.1 that answers every request with what it received,
/// as JSON, and a repeated header.
async fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = stream.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = find(&buf, b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let header = |name: &str| {
                    head.lines()
                        .find_map(|l| {
                            let (n, v) = l.split_once(':')?;
                            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                        })
                        .unwrap_or_default()
                };
                let length: usize = header("content-length").parse().unwrap_or(0);
                while buf.len() < head_end + length {
                    let n = stream.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                if head.split_whitespace().nth(1) == Some("/bin") {
                    // Bytes that are not UTF-8.
                    let body = [0xffu8, 0x00, 0xc3, 0x28];
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\nConnection: close\r\n\r\n";
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&body).await;
                    return;
                }
                let mut words = head.split_whitespace();
                let reply = json!({
                    "method": words.next(),
                    "path": words.next(),
                    "contentType": header("content-type"),
                    "token": header("x-token"),
                    "body": String::from_utf8_lossy(&buf[head_end..]),
                })
                .to_string();
                let response = format!(
                    "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Test: a\r\nX-Test: b\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    port
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A plain HTTP/1.1 client over a TCP stream that honours `NetPolicy::Only` the way the
/// host's client does (a `host` entry allows any port) and records the policies it got.
#[derive(Default)]
struct RawHttp {
    policies: Mutex<Vec<NetPolicy>>,
}

#[async_trait]
impl HttpClient for RawHttp {
    async fn send(
        &self,
        request: HttpRequest,
        policy: &NetPolicy,
        _cancel: &CancellationToken,
    ) -> Result<HttpResponse, ToolError> {
        self.policies.lock().unwrap().push(policy.clone());
        let rest = request
            .url
            .strip_prefix("http://")
            .ok_or_else(|| ToolError::invalid("this test client speaks http only"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let host = authority.split(':').next().unwrap_or_default();
        let allowed = match policy {
            NetPolicy::Only(list) | NetPolicy::PublicWithin(list) => {
                list.iter().any(|h| h == authority || h == host)
            }
            NetPolicy::Public => false,
        };
        if !allowed {
            return Err(ToolError::Denied {
                rule: "net policy".into(),
                message: format!("{authority} is not allowed"),
            });
        }
        let body = request.body.unwrap_or_default();
        let mut head = format!(
            "{} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
            request.method,
            body.len()
        );
        for (name, value) in &request.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let exchange = async {
            let mut stream = TcpStream::connect(authority).await?;
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&body).await?;
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).await?;
            Ok::<_, std::io::Error>(raw)
        };
        let raw = tokio::time::timeout(request.timeout, exchange)
            .await
            .map_err(|_| ToolError::Timeout(request.timeout))?
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let split = find(&raw, b"\r\n\r\n").ok_or_else(|| ToolError::failed("no header end"))?;
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| ToolError::failed("bad status line"))?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut body = raw[split + 4..].to_vec();
        let truncated = body.len() > request.max_response_bytes;
        body.truncate(request.max_response_bytes);
        Ok(HttpResponse {
            status,
            headers,
            body,
            truncated,
        })
    }
}

fn plain() -> CallContext {
    CallContext::for_test(support::CALL_TIMEOUT)
}

fn network(hosts: &[&str]) -> Capabilities {
    Capabilities {
        network: strings(hosts),
        ..Capabilities::default()
    }
}

fn http_grants(hosts: &[&str]) -> Grants {
    Grants {
        http: strings(hosts),
        ..Grants::default()
    }
}

#[tokio::test]
async fn http_is_absent_unless_declared_and_granted() {
    let declared_only = probe("acme.web", network(&["example.test"]), Grants::default())
        .start()
        .await;
    let out = declared_only
        .call("web_probe", code("return typeof ctx.http;"))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "undefined");

    let granted_only = probe(
        "acme.web",
        Capabilities::default(),
        http_grants(&["example.test"]),
    )
    .start()
    .await;
    let out = granted_only
        .call("web_probe", code("return typeof ctx.http;"))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "undefined");
}

#[tokio::test]
async fn an_ungranted_host_is_refused_with_the_grant_command() {
    let port = echo_server().await;
    let client = Arc::new(RawHttp::default());
    let p = probe(
        "acme.web",
        network(&["example.test"]),
        http_grants(&["example.test"]),
    )
    .http(client.clone())
    .start()
    .await;
    let out = p
        .call_with(
            "web_probe",
            plain(),
            code(&format!(
                "return await ctx.http.get('http://127.0.0.1:{port}/x');"
            )),
        )
        .await
        .unwrap();
    let error = error_of(&out);
    assert!(error.contains("`127.0.0.1`"), "{error}");
    assert!(
        error.contains("toolshed plugins grant acme.web http:127.0.0.1"),
        "{error}"
    );
    assert!(
        client.policies.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn a_granted_host_is_reached_through_the_hosts_client() {
    let port = echo_server().await;
    let client = Arc::new(RawHttp::default());
    let p = probe(
        "acme.web",
        network(&["127.0.0.1"]),
        http_grants(&["127.0.0.1"]),
    )
    .http(client.clone())
    .start()
    .await;
    let snippet = format!(
        r#"const url = "http://127.0.0.1:{port}/items?q=1";
           const posted = await ctx.http.post(url, {{ a: 1 }}, {{ headers: {{ "X-Token": "t0k" }} }});
           const got = await ctx.http.request({{ url, method: "delete", body: "raw text" }});
           return {{ status: posted.status, ok: posted.ok, xtest: posted.headers["x-test"],
                    echoed: posted.json(), deleted: got.json(), truncated: got.truncated }};"#
    );
    let out = p
        .call_with("web_probe", plain(), code(&snippet))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({
            "status": 201, "ok": true, "xtest": "a, b", "truncated": false,
            "echoed": { "method": "POST", "path": "/items?q=1", "contentType": "application/json",
                        "token": "t0k", "body": "{\"a\":1}" },
            "deleted": { "method": "DELETE", "path": "/items?q=1", "contentType": "",
                         "token": "", "body": "raw text" }
        }))
    );
    assert_eq!(
        *client.policies.lock().unwrap(),
        vec![NetPolicy::PublicWithin(strings(&["127.0.0.1"])); 2]
    );
}

#[tokio::test]
async fn fetch_goes_through_the_same_grants_as_ctx_http() {
    let port = echo_server().await;
    let client = Arc::new(RawHttp::default());
    let p = probe(
        "acme.web",
        network(&["127.0.0.1"]),
        http_grants(&["127.0.0.1"]),
    )
    .http(client.clone())
    .start()
    .await;
    let snippet = format!(
        r#"const url = new URL("/items", "http://127.0.0.1:{port}");
           url.searchParams.set("q", "a b");
           const r = await fetch(url, {{ method: "POST", headers: {{ "X-Token": "t0k", "Content-Type": "application/json" }},
                                        body: JSON.stringify({{ a: 1 }}) }});
           const echoed = await r.json();
           let again = "";
           try {{ await r.text(); }} catch (e) {{ again = e.message; }}
           const bytes = await (await fetch(`http://127.0.0.1:{port}/bin`)).arrayBuffer();
           return {{ status: r.status, ok: r.ok, xtest: r.headers.get("X-Test"), echoed, again,
                    bytes: Array.from(new Uint8Array(bytes)) }};"#
    );
    let out = p
        .call_with("web_probe", plain(), code(&snippet))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({
            "status": 201, "ok": true, "xtest": "a, b",
            "echoed": { "method": "POST", "path": "/items?q=a+b", "contentType": "application/json",
                        "token": "t0k", "body": "{\"a\":1}" },
            "again": "the body has been read already", "bytes": [255, 0, 195, 40]
        }))
    );
    assert_eq!(
        *client.policies.lock().unwrap(),
        vec![NetPolicy::PublicWithin(strings(&["127.0.0.1"])); 2]
    );

    // Not granted: refused with the command that grants it, nothing sent.
    let client = Arc::new(RawHttp::default());
    let p = probe("acme.web", Capabilities::default(), Grants::default())
        .http(client.clone())
        .start()
        .await;
    let out = p
        .call_with(
            "web_probe",
            plain(),
            code(&format!("return await fetch('http://127.0.0.1:{port}/x');")),
        )
        .await
        .unwrap();
    let error = error_of(&out);
    assert!(
        error.contains("toolshed plugins grant acme.web http:HOST"),
        "{error}"
    );
    assert!(
        client.policies.lock().unwrap().is_empty(),
        "nothing was sent"
    );
}

// ---- Files ----

fn fs_plugin() -> TestPlugin {
    probe(
        "acme.files",
        Capabilities {
            fs_read: strings(&["data"]),
            fs_write: strings(&["data/out"]),
            ..Capabilities::default()
        },
        Grants {
            fs_read: strings(&["data"]),
            fs_write: strings(&["data/out"]),
            ..Grants::default()
        },
    )
}

fn workspace() -> (tempfile::TempDir, Arc<Ops>) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("data/out")).unwrap();
    std::fs::write(ws.path().join("data/a.txt"), "alpha").unwrap();
    std::fs::write(ws.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink("../secret.txt", ws.path().join("data/link")).unwrap();
    let ops = Arc::new(Ops::local(ws.path()).unwrap());
    (ws, ops)
}

#[tokio::test]
async fn granted_paths_are_read_and_written_through_the_workspace() {
    let (ws, ops) = workspace();
    let p = fs_plugin().ops((*ops).clone()).start().await;
    let snippet = r#"
        const a = await ctx.fs.readText("data/a.txt");
        await ctx.fs.writeText("data/out/new/b.txt", a + " beta");
        const back = await ctx.fs.readText("./data/out/new/../new/b.txt");
        const names = (await ctx.fs.list("data")).map((e) => `${e.name}:${e.type}`).sort();
        return { a, back, names };"#;
    let out = p
        .call_with("files_probe", plain(), code(snippet))
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({
            "a": "alpha", "back": "alpha beta",
            "names": ["a.txt:file", "link:symlink", "out:dir"]
        }))
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("data/out/new/b.txt")).unwrap(),
        "alpha beta"
    );
}

#[tokio::test]
async fn paths_outside_the_grants_are_refused() {
    let (ws, ops) = workspace();
    let p = fs_plugin().ops((*ops).clone()).start().await;
    let cases = [
        ("ctx.fs.readText('secret.txt')", "fs-read:secret.txt"),
        (
            "ctx.fs.readText('data/../secret.txt')",
            "fs-read:secret.txt",
        ),
        (
            "ctx.fs.readText('../outside.txt')",
            "climbs out of the workspace",
        ),
        ("ctx.fs.readText('/etc/passwd')", "absolute"),
        ("ctx.fs.writeText('data/a.txt', 'x')", "fs-write:data/a.txt"),
        (
            "ctx.fs.writeText('data/out/../../x.txt', 'x')",
            "fs-write:x.txt",
        ),
        ("ctx.fs.list('.')", "fs-read:."),
        ("ctx.fs.readText('data/link')", "symbolic link"),
    ];
    for (call, expected) in cases {
        let out = p
            .call_with(
                "files_probe",
                plain(),
                code(&format!("return await {call};")),
            )
            .await
            .unwrap();
        let error = error_of(&out);
        assert!(error.contains(expected), "{call}: {error}");
        if expected.starts_with("fs-") {
            assert!(
                error.contains(&format!("toolshed plugins grant acme.files {expected}")),
                "{call}: {error}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("data/a.txt")).unwrap(),
        "alpha"
    );
    assert!(!ws.path().join("x.txt").exists());

    let none = probe("acme.files", Capabilities::default(), Grants::default())
        .ops((*ops).clone())
        .start()
        .await;
    let out = none
        .call_with("files_probe", plain(), code("return typeof ctx.fs;"))
        .await
        .unwrap();
    assert_eq!(out.text_joined(), "undefined");
}

// ---- Tools ----

/// Answers every call with what it was asked, and records the calls.
#[derive(Default)]
struct EchoCaller {
    calls: Mutex<Vec<(String, String, Value)>>,
}

#[async_trait]
impl ToolCaller for EchoCaller {
    async fn call_tool(
        &self,
        _ctx: &CallContext,
        caller: &str,
        name: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        self.calls
            .lock()
            .unwrap()
            .push((caller.into(), name.into(), args.clone()));
        if name == "util_fail" {
            return Err(ToolError::NotFound("no such thing".into()));
        }
        Ok(ToolOutput::structured(json!({ "echo": args })))
    }
}

#[tokio::test]
async fn tools_are_called_through_the_host_only_when_granted() {
    let caller = Arc::new(EchoCaller::default());
    let p = probe(
        "acme.caller",
        Capabilities {
            tools: strings(&["util_echo", "util_fail"]),
            ..Capabilities::default()
        },
        Grants {
            tools: strings(&["util_echo", "util_fail"]),
            ..Grants::default()
        },
    )
    .start()
    .await;
    let ctx = || {
        let mut ctx = CallContext::for_test(support::CALL_TIMEOUT);
        ctx.caller = Some(caller.clone());
        ctx
    };
    let out = p
        .call_with(
            "caller_probe",
            ctx(),
            code("const r = await ctx.tools.call('util_echo', { x: 1 }); return { structured: r.structured, isError: r.isError, hasText: r.text.length > 0 };"),
        )
        .await
        .unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"structured": {"echo": {"x": 1}}, "isError": false, "hasText": true}))
    );
    let out = p
        .call_with(
            "caller_probe",
            ctx(),
            code("return await ctx.tools.call('exec_command', {});"),
        )
        .await
        .unwrap();
    let error = error_of(&out);
    assert!(
        error.contains("`exec_command`")
            && error.contains("toolshed plugins grant acme.caller tool:exec_command"),
        "{error}"
    );
    let out = p
        .call_with(
            "caller_probe",
            ctx(),
            code("return await ctx.tools.call('util_fail');"),
        )
        .await
        .unwrap();
    assert_eq!(error_of(&out), "no such thing");
    assert_eq!(
        *caller.calls.lock().unwrap(),
        vec![
            (
                "acme.caller".to_string(),
                "util_echo".to_string(),
                json!({"x": 1})
            ),
            (
                "acme.caller".to_string(),
                "util_fail".to_string(),
                json!({})
            ),
        ]
    );
}

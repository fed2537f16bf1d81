//! Fixtures for the web tools' tests: a loopback HTTP server that records what it is sent,
//! and the real HTTP client with loopback opened.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolshed_core::{CallContext, ToolError, ToolOutput};
use toolshed_ops::net::parse_allowlist;
use toolshed_ops::{NetClient, NetConfig, Ops, Services};

use crate::web::{WebEnv, plugin_with_env};

/// The real [`NetClient`], as the host builds it: with `[web] allow = ["127.0.0.1"]`
/// ([`LoopbackClient::new`]), the way a person opens loopback servers to the web tools, or
/// with no allowlist ([`LoopbackClient::strict`]), where only what a tool's own policy opens
/// is reachable.
pub(super) struct LoopbackClient {
    net: Arc<NetClient>,
}

impl LoopbackClient {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            net: Arc::new(NetClient::with_config(NetConfig {
                allow: parse_allowlist(&["127.0.0.1"]).unwrap(),
                ..NetConfig::default()
            })),
        })
    }

    pub(super) fn strict() -> Arc<Self> {
        Arc::new(Self {
            net: Arc::new(NetClient::new()),
        })
    }
}

/// Calls tool `name` of a `system.web` plugin reading `env`, through `client`.
pub(super) async fn call(
    client: &Arc<LoopbackClient>,
    env: WebEnv,
    name: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let services = Services::new(Ops::memory()).with_net(client.net.clone());
    let plugin = plugin_with_env(&services, env);
    let tool = plugin
        .tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap();
    let ctx = CallContext::for_test(Duration::from_secs(20));
    tool.call(ctx, args).await
}

/// `web_fetch` with `args`, with no search provider configured.
pub(super) async fn fetch(
    client: &Arc<LoopbackClient>,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    call(client, WebEnv::default(), "web_fetch", args).await
}

/// One request as the server read it.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Names lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A scripted answer.
pub(super) struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub(super) fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub(super) fn redirect(status: u16, location: &str) -> Self {
        Self {
            status,
            headers: vec![("location".into(), location.into())],
            body: Vec::new(),
        }
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A tiny HTTP/1.1 server on 127.0.0.1: one request per connection, answered by the
/// handler, then closed. (Like toolshed-ops' test server, which lives in that crate's
/// tests and cannot be shared.)
pub(super) struct Server {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub(super) async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, handler.clone(), record.clone()));
            }
        });
        Self { port, seen }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub(super) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Requests read so far.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(mut stream: TcpStream, handler: Handler, seen: Arc<Mutex<Vec<Seen>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_string();
    let target = request_line.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    let request = Seen {
        method,
        target,
        headers,
        body,
    };
    seen.lock().unwrap().push(request.clone());
    let reply = handler(&request);
    let mut out = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        reply.body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&reply.body);
    // The client may hang up early (a capped body); that is not the server's error.
    let _ = stream.write_all(&bytes).await;
    let _ = stream.shutdown().await;
}

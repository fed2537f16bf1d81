//! Fixtures for the web tools' tests: a loopback HTTP server that records what it is sent,
//! and the real HTTP client with loopback opened.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolshed_core::{CallContext, ToolError, ToolOutput};
use toolshed_ops::net::parse_allowlist;
use toolshed_ops::{NetClient, NetConfig, Ops, Services};

use crate::web::{WebEnv, plugin_with_env};

use crate::net_test_server as raw;

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

/// Calls tool `name` of a `system.web` plugin reading `env`, through `client`, with no
/// keyless fallback.
pub(super) async fn call(
    client: &Arc<LoopbackClient>,
    env: WebEnv,
    name: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let off = crate::web::Settings {
        keyless_fallback: false,
    };
    call_with(client, env, off, name, args).await
}

/// [`call`] with these settings.
pub(super) async fn call_with(
    client: &Arc<LoopbackClient>,
    env: WebEnv,
    settings: crate::web::Settings,
    name: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let services = Services::new(Ops::memory()).with_net(client.net.clone());
    let plugin = plugin_with_env(&services, env, settings);
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

/// A tiny HTTP/1.1 server on 127.0.0.1: one request per connection, answered by the
/// handler, then closed — toolshed-ops' recording test server, seen through this module's
/// `Seen` and `Reply`.
pub(super) struct Server {
    inner: raw::Server,
}

impl Server {
    pub(super) async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let inner = raw::Server::start(move |request| {
            let reply = handler(&Seen::from(request));
            let headers: Vec<(&str, &str)> = reply
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            raw::respond(reply.status, &headers, &reply.body)
        })
        .await;
        Self { inner }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub(super) fn url(&self, path: &str) -> String {
        self.inner.url(path)
    }

    /// Requests read so far.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.inner.seen().iter().map(Seen::from).collect()
    }
}

impl From<&raw::Seen> for Seen {
    fn from(request: &raw::Seen) -> Self {
        Self {
            method: request.method.clone(),
            target: request.path.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
        }
    }
}

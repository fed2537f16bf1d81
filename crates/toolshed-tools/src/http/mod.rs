//! The `system.http` plugin: `http_request`, one HTTP request to an API.
//!
//! ```text
//! {"method": "POST", "url": "https://api.example.com/items", "json": {"name": "x"}}
//! → HTTP 201
//!   content-type: application/json
//!
//!   {"id": 7, "name": "x"}
//! ```
//!
//! The request goes through the host's HTTP client ([`NetClient`]) with
//! [`NetPolicy::Public`]: every address check, the `[web] allow` list and the limits live
//! there, not here. `GET` and `HEAD` follow redirects through it (each hop checked again).
//!
//! Other web tools send through `send_public` too, so none of them picks a client or a
//! policy of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, HttpRequest, HttpResponse, NetPolicy, Plugin, PluginKind,
    PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::{NetClient, Services};

mod spec;

use spec::Args;
#[cfg(test)]
mod tests;

/// The plugin id.
pub const PLUGIN_ID: &str = "system.http";
/// The group of the tool.
pub const GROUP: &str = "http";
/// Redirects `GET` and `HEAD` follow.
pub const MAX_REDIRECTS: usize = 5;
/// The default `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The largest `timeout_ms`.
pub const MAX_TIMEOUT_MS: u64 = 120_000;
/// The default `max_bytes`: 32 KiB, about 8k tokens of a model's context.
pub const DEFAULT_MAX_BYTES: u64 = 32 << 10;
/// The largest `max_bytes`: 48 KiB. The body travels twice, as text and in the structured
/// result, so this keeps a reply under the host's default per-call ceiling (100,000 bytes)
/// with room for the status and headers, and the reply says itself how to get more.
pub const MAX_BYTES: u64 = 48 << 10;

/// Response headers shown in the text output (all of them are in `structured`).
const SHOWN_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "location",
    "etag",
    "last-modified",
    "retry-after",
    "www-authenticate",
];

/// The `system.http` plugin.
pub fn plugin(services: &Services) -> Arc<dyn Plugin> {
    let tool: Arc<dyn Tool> = Arc::new(HttpRequestTool {
        spec: spec::spec(),
        net: services.net.clone(),
    });
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "HTTP requests",
        PluginKind::Builtin,
    );
    manifest.description = "Send HTTP requests to public APIs (http_request): any method, headers, a text or JSON body; the response's status, headers and body. Private and local addresses are refused unless listed under [web] allow.".into();
    manifest.tags = vec![GROUP.to_string(), "web".to_string()];
    Arc::new(BuiltinPlugin::new(manifest, vec![tool]))
}

struct HttpRequestTool {
    spec: ToolSpec,
    net: Arc<NetClient>,
}

#[async_trait]
impl Tool for HttpRequestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::args::parse(args)?;
        let request = args.into_request(&ctx)?;
        let method = request.method.clone();
        let follow = if matches!(method.as_str(), "GET" | "HEAD") {
            MAX_REDIRECTS
        } else {
            0
        };
        let sent = send_public(&self.net, &ctx.cancel, request, follow).await?;
        Ok(render(
            &method,
            &sent.response,
            &sent.url,
            &sent.redirected_from,
        ))
    }
}

/// A response and where it came from, from [`send_public`].
#[derive(Debug)]
pub(crate) struct Sent {
    /// The final response.
    pub response: HttpResponse,
    /// The URL that gave it.
    pub url: String,
    /// The URLs that redirected to it, in order; empty when none did.
    pub redirected_from: Vec<String>,
}

/// Sends `request` with [`NetPolicy::Public`] through the host's [`NetClient`], following
/// up to `max_redirects` redirects with [`NetClient::send_following`], the one redirect
/// loop toolshed has (each hop checked against the policy again). Every web tool sends
/// through here, so they all get the same checks and the same `[web] allow`. With
/// `max_redirects` 0 a redirect is returned as it is.
pub(crate) async fn send_public(
    net: &NetClient,
    cancel: &toolshed_core::CancellationToken,
    request: HttpRequest,
    max_redirects: usize,
) -> Result<Sent, ToolError> {
    if max_redirects == 0 {
        let url = request.url.clone();
        let response =
            toolshed_core::HttpClient::send(net, request, &NetPolicy::Public, cancel).await?;
        return Ok(Sent {
            response,
            url,
            redirected_from: Vec::new(),
        });
    }
    let followed = net
        .send_following(request, &NetPolicy::Public, cancel, max_redirects)
        .await?;
    Ok(Sent {
        response: followed.response,
        url: followed.url,
        redirected_from: followed.redirected_from,
    })
}

impl Args {
    fn into_request(self, ctx: &CallContext) -> Result<HttpRequest, ToolError> {
        let method = self.method.as_str().to_owned();
        let mut headers = Vec::new();
        for (name, value) in self.headers.unwrap_or_default() {
            match value {
                Value::String(value) => headers.push((name, value)),
                _ => {
                    return Err(ToolError::invalid_at(
                        format!("/headers/{name}"),
                        format!("the value of header `{name}` must be a string; quote it"),
                    ));
                }
            }
        }
        let body = match (self.body, self.json) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid_at(
                    "/json",
                    "give either `body` (a string) or `json` (a JSON value), not both",
                ));
            }
            (Some(body), None) => Some(body.into_bytes()),
            (None, Some(value)) => {
                if !headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                {
                    headers.push(("content-type".into(), "application/json".into()));
                }
                Some(value.to_string().into_bytes())
            }
            (None, None) => None,
        };
        let timeout_ms = self.timeout_ms;
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(ToolError::invalid_at(
                "/timeout_ms",
                format!("timeout_ms = {timeout_ms} is out of range; use 1 to {MAX_TIMEOUT_MS}"),
            ));
        }
        let max_bytes = self.max_bytes;
        if !(1..=MAX_BYTES).contains(&max_bytes) {
            return Err(ToolError::invalid_at(
                "/max_bytes",
                format!("max_bytes = {max_bytes} is out of range; use 1 to {MAX_BYTES}"),
            ));
        }
        // The call's own deadline wins over a longer timeout, so the client's timeout (a
        // clear message) fires before the host abandons the call.
        let left = ctx.deadline.saturating_duration_since(Instant::now());
        let timeout = Duration::from_millis(timeout_ms).min(left.max(Duration::from_millis(1)));
        Ok(HttpRequest {
            method,
            url: self.url,
            headers,
            body,
            timeout,
            max_response_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        })
    }
}

/// The response as text for the model and as structured data.
fn render(
    method: &str,
    response: &HttpResponse,
    url: &str,
    redirected_from: &[String],
) -> ToolOutput {
    let content_type = header(response, "content-type").unwrap_or("");
    let mut text = format!("HTTP {}", response.status);
    if !redirected_from.is_empty() {
        text.push_str(&format!(
            " (after {} redirect{} to {url})",
            redirected_from.len(),
            if redirected_from.len() == 1 { "" } else { "s" }
        ));
    }
    text.push('\n');
    for (name, value) in &response.headers {
        let shown = SHOWN_HEADERS.contains(&name.as_str())
            || name.starts_with("x-ratelimit")
            || name.starts_with("ratelimit");
        if shown {
            text.push_str(&format!("{name}: {value}\n"));
        }
    }
    let body = body_text(&response.body, content_type);
    match &body {
        _ if method == "HEAD" => {}
        Some(body) if !body.is_empty() => {
            text.push('\n');
            text.push_str(body);
            if !body.ends_with('\n') {
                text.push('\n');
            }
        }
        Some(_) => text.push_str("\n(empty body)\n"),
        None => text.push_str(&format!(
            "\n(binary body: {} bytes of {}; not shown)\n",
            response.body.len(),
            if content_type.is_empty() {
                "unknown type"
            } else {
                content_type
            }
        )),
    }
    if response.truncated {
        text.push_str(&format!(
            "[body cut at {} bytes; raise max_bytes (up to {MAX_BYTES}), or ask for the rest with a Range header (bytes=N-)]\n",
            response.body.len()
        ));
    }
    let mut headers = Map::new();
    for (name, value) in &response.headers {
        match headers.get_mut(name) {
            Some(Value::String(joined)) => {
                joined.push_str(", ");
                joined.push_str(value);
            }
            _ => {
                headers.insert(name.clone(), Value::String(value.clone()));
            }
        }
    }
    let mut structured = json!({
        "status": response.status,
        "headers": headers,
        "body": body,
        "body_bytes": response.body.len(),
        "truncated": response.truncated,
        "url": url,
    });
    if !redirected_from.is_empty() {
        structured["redirected_from"] = json!(redirected_from);
    }
    ToolOutput::text_and_structured(text, structured)
}

/// The body as text, or `None` when it is binary: a textual content type is decoded
/// (invalid UTF-8 replaced), anything else only when it is valid UTF-8 without NULs.
fn body_text(body: &[u8], content_type: &str) -> Option<String> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let textual = mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-www-form-urlencoded"
                | "application/yaml"
                | "application/x-yaml"
                | "application/graphql-response+json"
        );
    if textual {
        return Some(String::from_utf8_lossy(body).into_owned());
    }
    let binary = ["image/", "audio/", "video/", "font/"]
        .iter()
        .any(|prefix| mime.starts_with(prefix))
        || matches!(
            mime.as_str(),
            "application/octet-stream" | "application/zip" | "application/gzip" | "application/pdf"
        );
    match std::str::from_utf8(body) {
        Ok(s) if !binary && !s.contains('\0') => Some(s.to_string()),
        _ => None,
    }
}

fn header<'a>(response: &'a HttpResponse, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

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
//! The request goes through the host's HTTP client with
//! [`NetPolicy::Public`]: every address check, the `[web] allow` list and the limits live
//! there, not here. When the host put the [`NetClient`] itself in the extensions, `GET`
//! and `HEAD` follow redirects through it (each hop checked again); with only an
//! [`HttpClientHandle`] (an embedder's own client), redirects are returned as they are.
//!
//! Other web tools send through `send_public` too, so none of them picks a client or a
//! policy of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, HttpClientHandle, HttpRequest, HttpResponse, NetPolicy, Plugin,
    PluginKind, PluginManifest, Tool, ToolError, ToolOutput, ToolSpec,
};
use toolshed_ops::NetClient;

mod spec;
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
/// The default `max_bytes`: 1 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;
/// The largest `max_bytes`: 10 MiB.
pub const MAX_BYTES: u64 = 10 << 20;

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
pub fn plugin() -> Arc<dyn Plugin> {
    let tool: Arc<dyn Tool> = Arc::new(HttpRequestTool { spec: spec::spec() });
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
}

#[async_trait]
impl Tool for HttpRequestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = serde_json::from_value(args)
            .map_err(|e| ToolError::invalid(format!("invalid arguments: {e}")))?;
        let request = args.into_request(&ctx)?;
        let method = request.method.clone();
        let follow = if matches!(method.as_str(), "GET" | "HEAD") {
            MAX_REDIRECTS
        } else {
            0
        };
        let sent = send_public(&ctx, request, follow).await?;
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

/// Sends `request` with [`NetPolicy::Public`] through the call's HTTP client, following up
/// to `max_redirects` redirects: with [`NetClient::send_following`] when the host provided
/// the [`NetClient`] itself, else hop by hop through the [`HttpClientHandle`], which checks
/// the policy again on every hop. Every web tool sends through here, so they all get the
/// same checks and the same `[web] allow`.
pub(crate) async fn send_public(
    ctx: &CallContext,
    request: HttpRequest,
    max_redirects: usize,
) -> Result<Sent, ToolError> {
    let requested = request.url.clone();
    if let Some(client) = ctx.extensions.get::<NetClient>() {
        if max_redirects > 0 {
            let followed = client
                .send_following(request, &NetPolicy::Public, &ctx.cancel, max_redirects)
                .await?;
            return Ok(Sent {
                response: followed.response,
                url: followed.url,
                redirected_from: followed.redirected_from,
            });
        }
        let response = toolshed_core::HttpClient::send(
            client.as_ref(),
            request,
            &NetPolicy::Public,
            &ctx.cancel,
        )
        .await?;
        return Ok(Sent {
            response,
            url: requested,
            redirected_from: Vec::new(),
        });
    }
    let handle = ctx.extensions.get::<HttpClientHandle>().ok_or_else(|| {
        ToolError::Internal(
            "no HTTP client is configured for this host; the web tools cannot send requests here"
                .into(),
        )
    })?;
    follow_hops(&handle, request, &ctx.cancel, max_redirects).await
}

/// Redirects followed one request at a time through the `HttpClient` trait (each hop is a
/// new request the client checks against the policy), as `NetClient::send_following` does
/// them: `303` (and `301`/`302` after a `POST`) continue as a `GET` without the body, and
/// `Authorization` and `Cookie` are dropped when the origin changes.
async fn follow_hops(
    handle: &HttpClientHandle,
    mut request: HttpRequest,
    cancel: &toolshed_core::CancellationToken,
    max_redirects: usize,
) -> Result<Sent, ToolError> {
    let shown = toolshed_ops::net::redact_url;
    let mut redirected_from: Vec<String> = Vec::new();
    loop {
        let response = handle
            .0
            .send(request.clone(), &NetPolicy::Public, cancel)
            .await
            .map_err(|e| match (e, redirected_from.last()) {
                (ToolError::Denied { rule, message }, Some(from)) => ToolError::Denied {
                    rule,
                    message: format!(
                        "`{}` redirected to `{}`, which is refused: {message}",
                        shown(from),
                        shown(&request.url)
                    ),
                },
                (e, _) => e,
            })?;
        let location = matches!(response.status, 301 | 302 | 303 | 307 | 308)
            .then(|| {
                response
                    .headers
                    .iter()
                    .find(|(name, _)| name == "location")
                    .map(|(_, value)| value.clone())
            })
            .flatten();
        let Some(location) = location.filter(|_| max_redirects > 0) else {
            return Ok(Sent {
                response,
                url: request.url,
                redirected_from,
            });
        };
        let next = url::Url::parse(&request.url)
            .and_then(|current| current.join(&location))
            .map_err(|e| {
                ToolError::Failed(format!(
                    "`{}` redirected to a URL that is not valid ({e})",
                    shown(&request.url)
                ))
            })?;
        if redirected_from.len() >= max_redirects {
            return Err(ToolError::Failed(format!(
                "`{}` redirects again (to `{}`) after {max_redirects} redirects; toolshed stopped there. Request that URL directly if it is the right one",
                shown(&request.url),
                shown(next.as_str())
            )));
        }
        let same_origin = url::Url::parse(&request.url)
            .map(|current| current.origin() == next.origin())
            .unwrap_or(false);
        let to_get = response.status == 303
            || (matches!(response.status, 301 | 302)
                && request.method.eq_ignore_ascii_case("POST"));
        if to_get {
            request.method = "GET".into();
            request.body = None;
            request
                .headers
                .retain(|(name, _)| !name.to_ascii_lowercase().starts_with("content-"));
        }
        if !same_origin {
            request.headers.retain(|(name, _)| {
                !matches!(
                    name.to_ascii_lowercase().as_str(),
                    "authorization" | "cookie" | "proxy-authorization"
                )
            });
        }
        redirected_from.push(std::mem::replace(&mut request.url, next.to_string()));
    }
}

/// The tool's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: Option<Map<String, Value>>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    json: Option<Value>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    max_bytes: Option<u64>,
}

impl Args {
    fn into_request(self, ctx: &CallContext) -> Result<HttpRequest, ToolError> {
        let method = self.method.unwrap_or_else(|| "GET".into());
        const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
        if !METHODS.contains(&method.as_str()) {
            return Err(ToolError::invalid_at(
                "/method",
                format!(
                    "`{}` is not a method http_request sends; use one of {}",
                    method.chars().take(40).collect::<String>(),
                    METHODS.join(", ")
                ),
            ));
        }
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
        let timeout_ms = self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(ToolError::invalid_at(
                "/timeout_ms",
                format!("timeout_ms = {timeout_ms} is out of range; use 1 to {MAX_TIMEOUT_MS}"),
            ));
        }
        let max_bytes = self.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
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
            "[body cut at {} bytes; raise max_bytes (up to {MAX_BYTES}) to get more]\n",
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

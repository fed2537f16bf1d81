//! The `http_request` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};

use super::{
    DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT_MS, GROUP, MAX_BYTES, MAX_REDIRECTS, MAX_TIMEOUT_MS,
};

/// The tool's name.
pub(super) const NAME: &str = "http_request";

/// The `http_request` tool's spec.
pub(super) fn spec() -> ToolSpec {
    let description = format!(
        "Send one HTTP request to an API and return the response: `HTTP <status>`, the useful headers, and the body as text \
(binary bodies are summarized as size and content type). Structured output: `{{status, headers, body, truncated, url}}`.
- `method` (default GET), `url` (absolute http:// or https://), `headers` (object of name -> value), and either `body` (a string sent as is) \
or `json` (any JSON value, sent with `content-type: application/json` unless you set one); not both.
- GET and HEAD follow up to {MAX_REDIRECTS} redirects (`url` is then the final URL); other methods return the redirect response itself.
- A 4xx or 5xx status is a normal result, not a tool error: read the status and the body.
- The body is cut at `max_bytes` (default {DEFAULT_MAX_BYTES}, at most {MAX_BYTES}); `truncated` says so. \
`timeout_ms` (default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS}) covers the whole exchange, redirects included.
- Only public addresses are reached: localhost, private networks, link-local and cloud metadata addresses are refused, \
on the URL and on every redirect, unless the person running toolshed listed them under `[web] allow`. \
Credentials go in headers (`Authorization`), never in the URL (`user:password@` is refused). Proxies are not used."
    );
    let mut spec = ToolSpec::new(NAME, description)
        .title("HTTP request")
        .group(GROUP)
        // Any method to any public host: a DELETE or a POST can change or destroy what
        // lives there, and a request carries data out of the host.
        .annotations(ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        })
        .input_schema(crate::args::schema::<Args>());
    spec.danger = Danger::High;
    spec
}

/// The methods `http_request` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub(super) enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
    Options,
}

impl Method {
    /// The method as sent on the wire.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Head => "HEAD",
            Method::Options => "OPTIONS",
        }
    }
}

fn get() -> Method {
    Method::Get
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_max_bytes() -> u64 {
    DEFAULT_MAX_BYTES
}

/// The arguments of `http_request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The HTTP method.
    #[serde(default = "get")]
    pub(super) method: Method,
    /// An absolute http:// or https:// URL of a public host.
    #[schemars(length(min = 1, max = 8192))]
    pub(super) url: String,
    /// Request headers, name -> value (`{"Authorization": "Bearer ...", "Accept": "application/json"}`). Host, Content-Length and connection headers are set by toolshed.
    #[schemars(with = "Option<std::collections::BTreeMap<String, String>>")]
    pub(super) headers: Option<Map<String, Value>>,
    /// The request body, sent as is (set a Content-Type header for it). Not together with `json`.
    pub(super) body: Option<String>,
    /// Any JSON value (object, array, string, number, boolean) sent as the body with content-type application/json. Not together with `body`.
    pub(super) json: Option<Value>,
    /// How long the whole exchange may take, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub(super) timeout_ms: u64,
    /// The most response body bytes kept (1048576 = 1 MiB; at most 10 MiB); the rest is dropped and `truncated` is true.
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = MAX_BYTES))]
    pub(super) max_bytes: u64,
}

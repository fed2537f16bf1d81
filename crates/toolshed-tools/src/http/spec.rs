//! The `http_request` tool as data.

use serde_json::json;
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
        .input_schema(json!({
            "type": "object",
            "properties": {
                "method": {
                    "type": "string",
                    "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
                    "description": "The HTTP method (default GET)."
                },
                "url": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 8192,
                    "description": "An absolute http:// or https:// URL of a public host."
                },
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Request headers, name -> value (`{\"Authorization\": \"Bearer ...\", \"Accept\": \"application/json\"}`). Host, Content-Length and connection headers are set by toolshed."
                },
                "body": {
                    "type": "string",
                    "description": "The request body, sent as is (set a Content-Type header for it). Not together with `json`."
                },
                "json": {
                    "description": "Any JSON value (object, array, string, number, boolean) sent as the body with content-type application/json. Not together with `body`."
                },
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_MS,
                    "description": "How long the whole exchange may take, in milliseconds (default 30000)."
                },
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_BYTES,
                    "description": "The most response body bytes kept (default 1048576 = 1 MiB, at most 10 MiB); the rest is dropped and `truncated` is true."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }));
    spec.danger = Danger::High;
    spec
}

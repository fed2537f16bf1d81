//! The `http_request` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolshed_core::{Danger, ToolAnnotations, ToolSpec};

use super::{DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT_MS, GROUP, MAX_BYTES, MAX_TIMEOUT_MS};

/// The tool's name.
pub(super) const NAME: &str = "http_request";

/// The `http_request` tool's spec.
pub(super) fn spec() -> ToolSpec {
    let description = "Send an HTTP request to a public API; returns the status, headers and \
body (a 4xx is a result, not an error).";
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
        .input_schema(crate::args::schema::<Args>())
        .touch(toolshed_core::TouchKind::Hosts, "url");
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
    #[serde(default = "get")]
    pub(super) method: Method,
    /// http(s) URL
    #[schemars(length(min = 1, max = 8192))]
    pub(super) url: String,
    /// Headers (credentials here, not in the URL)
    #[schemars(with = "Option<std::collections::BTreeMap<String, String>>")]
    pub(super) headers: Option<Map<String, Value>>,
    /// Body, sent as is
    pub(super) body: Option<String>,
    /// JSON body
    pub(super) json: Option<Value>,
    /// Limit of the whole exchange
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub(super) timeout_ms: u64,
    /// Body bytes kept
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = MAX_BYTES))]
    pub(super) max_bytes: u64,
}

//! A large `tools/call` on `/mcp` has its large arguments parsed here, straight into
//! values, and leaves rmcp a message with only the small ones ([`toolshed_core::oversized`]):
//! rmcp's parser buffers a message before it reads it, which builds every value twice. Arguments
//! over their tool's limits are left out unparsed (a document of many small values costs
//! its tree a dozen times its text, only to be refused). Both go to the call in the
//! request's extensions ([`toolshed_mcp::TransportArguments`]); the pipeline refuses a call
//! with oversized arguments as it refuses the same value parsed.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use toolshed_core::oversized::{SCAN_FROM_BYTES, ToolsCall};
use toolshed_host::Host;

/// What the middleware needs: the host (for the tools' limits), the largest body taken,
/// and the room for parsed arguments shared with REST ([`crate::api::tree_room`]).
#[derive(Clone)]
pub(crate) struct Scan {
    pub(crate) host: Arc<Host>,
    pub(crate) max_body_bytes: usize,
    pub(crate) trees: Arc<tokio::sync::Semaphore>,
}

/// Middleware for `/mcp` (see the module docs). Bodies of a declared length from
/// [`SCAN_FROM_BYTES`] to the body limit, and bodies sent in chunks, are read here (one
/// over the limit is `413`); the rest go on untouched (rmcp refuses one declared over the
/// limit).
pub(crate) async fn leave_out_oversized(
    axum::extract::State(scan): axum::extract::State<Scan>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    // A body sent in chunks is read too: its length is known only once it is in.
    let chunked = declared.is_none() && request.headers().contains_key(header::TRANSFER_ENCODING);
    let large = declared.is_some_and(|n| (SCAN_FROM_BYTES..=scan.max_body_bytes).contains(&n));
    if request.method() != Method::POST || !(large || chunked) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, scan.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let text = e.to_string();
            let status = if crate::listen::is_body_timeout(&e) {
                StatusCode::REQUEST_TIMEOUT
            } else if is_too_large(&e) {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            return (status, text).into_response();
        }
    };
    if chunked {
        // What it turned out to be, for the parser after this.
        parts.headers.remove(header::TRANSFER_ENCODING);
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    }
    let catalog = scan.host.catalog();
    let mut tool = None;
    let scanned = ToolsCall::scan(&bytes, |name| {
        tool = catalog.lookup(name);
        catalog.argument_limits(name)
    });
    let Some(call) = scanned else {
        return next
            .run(axum::extract::Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    // Parsed once there is room for the tree, which is held until the call has ended: the
    // same budget as REST bodies'.
    let estimate = call
        .kept()
        .map(|text| crate::api::parsed_estimate(text.as_bytes()))
        .sum();
    let room = match crate::api::tree_room(&scan.trees, estimate).await {
        Ok(room) => room,
        Err(busy) => return busy_reply(&busy.message),
    };
    // rmcp checks an argument a header repeats (`x-mcp-header`) against the body: those
    // stay in it.
    let schema = tool.as_ref().map(|tool| &tool.spec().input_schema);
    let body = match call.lift(|name| schema.is_some_and(|s| names_a_header(s, name))) {
        None => Body::from(bytes),
        Some(lifted) => {
            drop(bytes);
            parts
                .headers
                .insert(header::CONTENT_LENGTH, HeaderValue::from(lifted.text.len()));
            parts.extensions.insert(
                toolshed_mcp::TransportArguments::new(lifted.oversized, lifted.members)
                    .holding(room),
            );
            Body::from(lifted.text)
        }
    };
    next.run(axum::extract::Request::from_parts(parts, body))
        .await
}

/// `503` with `Retry-After`, as a JSON-RPC error: large requests hold the room for their
/// arguments now.
fn busy_reply(message: &str) -> Response {
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32000,
        "message": message,
    }});
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(reply)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// Whether reading a body failed because it is over the limit: the limit's own error,
/// `http_body_util::LengthLimitError`, is in the chain.
fn is_too_large(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// Whether the property `name` of the input schema `schema`, or anything inside it, is
/// repeated in a header (`x-mcp-header`).
fn names_a_header(schema: &serde_json::Value, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(|properties| properties.get(name))
        .is_some_and(|property| property.to_string().contains("\"x-mcp-header\""))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_property_a_header_repeats_is_found_however_deep() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "options": {"type": "object", "properties": {"zone": {"x-mcp-header": "Zone"}}},
            "document": {},
        }});
        assert!(super::names_a_header(&schema, "region"));
        assert!(super::names_a_header(&schema, "options"));
        assert!(!super::names_a_header(&schema, "document"));
        assert!(!super::names_a_header(&schema, "absent"));
    }
}

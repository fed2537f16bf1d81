//! W3C trace context (`traceparent`, `tracestate`) across toolshed's edges: a request's
//! context (from MCP `_meta`, or HTTP headers) becomes the parent of the door's span, and
//! the context of the span running now is handed on — to a mounted MCP server in `_meta`,
//! and, when the user enables it, to outgoing HTTP requests as headers. The spans are
//! `tracing` spans; turning them into OpenTelemetry ones is the exporter's job (the CLI's
//! `otel` feature), which installs the [`Bridge`] here. Without one (no exporter), nothing
//! is read or handed on: toolshed's own spans are not recorded then.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// A trace context: a valid `traceparent` and, when given, its `tracestate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
    pub traceparent: String,
    /// Vendor entries, passed along as they came (at most 512 bytes).
    pub tracestate: Option<String>,
}

/// The longest `tracestate` kept (the W3C recommendation: at least 512 may be dropped).
const MAX_TRACESTATE: usize = 512;

impl TraceParent {
    /// `traceparent` checked (version `00`, ids of hex digits and not all zeros); `None`
    /// when it is not one. A `tracestate` too long or not printable ASCII is left out.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let traceparent = traceparent.trim();
        let parts: Vec<&str> = traceparent.split('-').collect();
        let hex = |s: &str, n: usize| {
            s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let [version, trace, span, flags] = parts.as_slice() else {
            return None;
        };
        if *version != "00"
            || !hex(trace, 32)
            || !hex(span, 16)
            || !hex(flags, 2)
            || trace.bytes().all(|b| b == b'0')
            || span.bytes().all(|b| b == b'0')
        {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| {
                !s.is_empty()
                    && s.len() <= MAX_TRACESTATE
                    && s.bytes().all(|b| (0x20..0x7f).contains(&b))
            })
            .map(str::to_string);
        Some(Self {
            traceparent: traceparent.to_string(),
            tracestate,
        })
    }

    /// The context an MCP request's `_meta` carries (`traceparent`, `tracestate`).
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let parent = meta.get("traceparent")?.as_str()?;
        Self::parse(parent, meta.get("tracestate").and_then(|v| v.as_str()))
    }
}

/// What turns trace contexts into span parents and back: the OpenTelemetry layer.
pub trait Bridge: Send + Sync {
    /// Makes `parent` the parent of `span` (before it is entered).
    fn set_parent(&self, span: &tracing::Span, parent: &TraceParent);
    /// The context of `span`, to hand on; `None` when it is not recorded.
    fn context_of(&self, span: &tracing::Span) -> Option<TraceParent>;
}

static BRIDGE: OnceLock<Box<dyn Bridge>> = OnceLock::new();
static HTTP_HEADERS: AtomicBool = AtomicBool::new(false);

/// Installs the bridge (once per process; a second is ignored).
pub fn install(bridge: Box<dyn Bridge>) {
    let _ = BRIDGE.set(bridge);
}

/// Makes `parent` the parent of `span`, when a bridge is installed.
pub fn adopt(span: &tracing::Span, parent: &TraceParent) {
    if let Some(bridge) = BRIDGE.get() {
        bridge.set_parent(span, parent);
    }
}

/// The context of the span running now, to hand on; `None` without a bridge.
pub fn current() -> Option<TraceParent> {
    BRIDGE.get()?.context_of(&tracing::Span::current())
}

/// Whether outgoing HTTP requests carry `traceparent` (`[telemetry] propagate_http`).
pub fn set_http_headers(on: bool) {
    HTTP_HEADERS.store(on, Ordering::Relaxed);
}

/// The headers an outgoing HTTP request carries now: none unless enabled and a span is
/// being recorded.
pub fn http_headers() -> Vec<(&'static str, String)> {
    if !HTTP_HEADERS.load(Ordering::Relaxed) {
        return Vec::new();
    }
    let Some(context) = current() else {
        return Vec::new();
    };
    let mut headers = vec![("traceparent", context.traceparent)];
    if let Some(state) = context.tracestate {
        headers.push(("tracestate", state));
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_traceparent_is_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parsed = TraceParent::parse(good, Some("rojo=00f067aa0ba902b7")).unwrap();
        assert_eq!(parsed.traceparent, good);
        assert_eq!(parsed.tracestate.as_deref(), Some("rojo=00f067aa0ba902b7"));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad, None).is_none(), "{bad}");
        }
        let long = "a=".to_string() + &"b".repeat(600);
        assert!(
            TraceParent::parse(good, Some(&long))
                .unwrap()
                .tracestate
                .is_none()
        );
    }
}

//! The requests as written to a server: JSON-RPC messages serialized straight into their
//! line, with the `_meta` toolshed adds (progress token, 2026-07-28 client identity, trace).

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value;

use super::MODERN_VERSION;

/// What a 2026-07-28 request carries in its `_meta`: the protocol version and who the
/// client is ([`Meta::entries`], as a JSON value).
pub(super) fn modern_meta(sampling: bool) -> Value {
    let meta = MetaEntries {
        given: None,
        meta: Meta {
            progress: None,
            modern: true,
            sampling,
            log: false,
        },
        trace: None,
    };
    serde_json::to_value(meta).unwrap_or_default()
}

/// A JSON-RPC request or notification as written: built straight into its line, with no
/// JSON tree in between.
#[derive(Serialize)]
pub(super) struct Outgoing<'a, P> {
    pub(super) jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<u64>,
    pub(super) method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) params: Option<P>,
}

/// What toolshed adds to a request's `_meta`: its progress token, and for a 2026-07-28
/// session the protocol version and who the client is.
#[derive(Clone, Copy)]
pub(super) struct Meta {
    pub(super) progress: Option<u64>,
    pub(super) modern: bool,
    /// The server may ask for completions (declared in the capabilities).
    pub(super) sampling: bool,
    /// The caller takes log messages: a 2026-07-28 server is asked for them (`logLevel`).
    pub(super) log: bool,
}

impl Meta {
    fn is_empty(self) -> bool {
        self.progress.is_none() && !self.modern
    }

    fn entries<M: SerializeMap>(self, out: &mut M) -> Result<(), M::Error> {
        if let Some(token) = self.progress {
            out.serialize_entry("progressToken", &token)?;
        }
        if self.modern {
            out.serialize_entry("io.modelcontextprotocol/protocolVersion", MODERN_VERSION)?;
            out.serialize_entry(
                "io.modelcontextprotocol/clientCapabilities",
                &crate::asks::capabilities(self.sampling),
            )?;
            if self.log {
                out.serialize_entry("io.modelcontextprotocol/logLevel", "debug")?;
            }
            out.serialize_entry(
                "io.modelcontextprotocol/clientInfo",
                &ClientInfo {
                    name: "toolshed",
                    version: env!("CARGO_PKG_VERSION"),
                },
            )?;
        }
        Ok(())
    }

    /// Whether the entry `key` of a caller's `_meta` is one this adds (and so left out).
    fn replaces(self, key: &str) -> bool {
        (self.progress.is_some() && key == "progressToken")
            || (self.modern
                && matches!(
                    key,
                    "io.modelcontextprotocol/protocolVersion"
                        | "io.modelcontextprotocol/clientCapabilities"
                        | "io.modelcontextprotocol/clientInfo"
                        | "io.modelcontextprotocol/logLevel"
                ))
    }
}

#[derive(Serialize)]
struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

/// Request params with [`Meta`] added to their `_meta` (to the caller's own, if any).
pub(super) struct WithMeta<'a> {
    pub(super) params: &'a Value,
    pub(super) meta: Meta,
}

impl Serialize for WithMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.params else {
            return self.params.serialize(s);
        };
        if self.meta.is_empty() {
            return map.serialize(s);
        }
        let mut out = s.serialize_map(None)?;
        for (key, value) in map.iter().filter(|(k, _)| *k != "_meta") {
            out.serialize_entry(key, value)?;
        }
        let given = match map.get("_meta") {
            Some(Value::Object(given)) => Some(given),
            _ => None,
        };
        out.serialize_entry(
            "_meta",
            &MetaEntries {
                given,
                meta: self.meta,
                trace: None,
            },
        )?;
        out.end()
    }
}

/// A `_meta` object: the caller's entries, then toolshed's (and the call's trace context).
struct MetaEntries<'a> {
    given: Option<&'a serde_json::Map<String, Value>>,
    meta: Meta,
    trace: Option<&'a toolshed_core::trace_context::TraceParent>,
}

impl Serialize for MetaEntries<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(None)?;
        for (key, value) in self.given.into_iter().flatten() {
            let traced =
                self.trace.is_some() && matches!(key.as_str(), "traceparent" | "tracestate");
            if !self.meta.replaces(key) && !traced {
                out.serialize_entry(key, value)?;
            }
        }
        self.meta.entries(&mut out)?;
        if let Some(trace) = self.trace {
            out.serialize_entry("traceparent", &trace.traceparent)?;
            if let Some(state) = &trace.tracestate {
                out.serialize_entry("tracestate", state)?;
            }
        }
        out.end()
    }
}

/// The params of `tools/call`, borrowed from the caller.
pub(super) struct CallParams<'a> {
    pub(super) name: &'a str,
    pub(super) arguments: &'a Value,
    /// A 2026-07-28 server's retry: the answers to what it asked, and its state.
    pub(super) input: Option<&'a (Value, Option<String>)>,
    pub(super) meta: Meta,
    /// The trace context of the call's span, handed on so the server's spans join it.
    pub(super) trace: Option<toolshed_core::trace_context::TraceParent>,
}

impl Serialize for CallParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("name", self.name)?;
        out.serialize_entry("arguments", self.arguments)?;
        if let Some((responses, state)) = self.input {
            out.serialize_entry("inputResponses", responses)?;
            if let Some(state) = state {
                out.serialize_entry("requestState", state)?;
            }
        }
        if !self.meta.is_empty() || self.trace.is_some() {
            out.serialize_entry(
                "_meta",
                &MetaEntries {
                    given: None,
                    meta: self.meta,
                    trace: self.trace.as_ref(),
                },
            )?;
        }
        out.end()
    }
}

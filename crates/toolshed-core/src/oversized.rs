//! Arguments larger than their tool takes, found in a request's text before it is parsed.
//!
//! A tool may declare, per argument, the most JSON it takes there
//! ([`ToolSpec::max_argument_bytes`](crate::ToolSpec::max_argument_bytes)). A document of
//! many small values costs its parsed tree a dozen times its text, so a door that finds an
//! argument over its limit leaves it out of the text it parses and hands the pipeline an
//! [`OversizedArgument`] instead; the pipeline refuses the call with the same error it
//! gives a parsed value over the limit, after its usual resolve and review, and records it.
//! Values are measured as JSON text without the whitespace between tokens.
//!
//! A door whose parser would build each value twice (rmcp's buffers a message before
//! reading it) has a large `tools/call`'s arguments parsed here once instead
//! ([`ToolsCall::lift`]), and hands the rest of the message to its parser.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::ToolError;

/// Requests shorter than this are not scanned: the tree of what is left is small anyway.
pub const SCAN_FROM_BYTES: usize = 64 * 1024;

/// An argument a door left out because it is larger than its tool takes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OversizedArgument {
    /// The argument's name.
    pub name: String,
    /// Its size as sent, in bytes of JSON without whitespace between tokens.
    pub bytes: usize,
    /// The most the tool takes there.
    pub limit: usize,
}

impl OversizedArgument {
    /// The error a call to `tool` with this argument gets.
    pub fn error(&self, tool: &str) -> ToolError {
        ToolError::invalid_at(
            format!("/{}", self.name),
            format!(
                "`{}` is {} bytes of JSON; `{tool}` takes at most {} there. Pass a smaller \
                 value or only the part the call needs",
                self.name,
                self.bytes,
                shown_limit(self.limit)
            ),
        )
    }
}

/// `1048576 bytes (1 MiB)`, or the bytes alone when they are no whole number of KiB.
fn shown_limit(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{bytes} bytes ({} MiB)", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{bytes} bytes ({} KiB)", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// The arguments in `arguments` over their limits in `limits`, measured as they would be
/// sent: the check the pipeline makes on calls whose text no door scanned (small requests,
/// calls a tool makes, rewritten arguments).
pub fn oversized_values(
    arguments: &Value,
    limits: &BTreeMap<String, usize>,
) -> Vec<OversizedArgument> {
    let Value::Object(map) = arguments else {
        return Vec::new();
    };
    limits
        .iter()
        .filter_map(|(name, &limit)| {
            let bytes = json_len(map.get(name)?);
            (bytes > limit).then(|| OversizedArgument {
                name: name.clone(),
                bytes,
                limit,
            })
        })
        .collect()
}

/// The length of `value`'s compact JSON, without writing it anywhere.
pub fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// A request's text with the arguments over their limits left out, and what was left out.
#[derive(Debug)]
pub struct Stripped {
    /// The text to parse instead of the request's.
    pub text: Vec<u8>,
    /// The arguments left out.
    pub oversized: Vec<OversizedArgument>,
}

/// A REST body (`{"arguments": {…}, …}`) without its arguments over `limits`; `None` when
/// nothing is over (or the body is not such an object: its parser says what is wrong).
pub fn strip_rest_body(body: &[u8], limits: &BTreeMap<String, usize>) -> Option<Stripped> {
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
    }
    if body.len() < SCAN_FROM_BYTES || limits.is_empty() {
        return None;
    }
    let parsed: Body<'_> = serde_json::from_slice(body).ok()?;
    strip_members(body, parsed.arguments?, limits)
}

/// A JSON-RPC `tools/call` request without its arguments over the limits `limits_of` gives
/// for the tool it names; `None` when nothing is over, or it is no such request.
pub fn strip_tools_call(
    message: &[u8],
    limits_of: impl FnOnce(&str) -> Option<BTreeMap<String, usize>>,
) -> Option<Stripped> {
    let (name, arguments) = tools_call_arguments(message)?;
    strip_members(message, arguments, &limits_of(&name)?)
}

/// A JSON-RPC `tools/call` request read as far as its arguments' members, which are still
/// text: to be parsed straight into an object ([`ToolsCall::lift`]) rather than by a
/// general parser that buffers its input first and so builds each value twice.
#[derive(Debug)]
pub struct ToolsCall<'a> {
    message: &'a [u8],
    span: (usize, usize),
    kept: Vec<(String, &'a RawValue)>,
    /// The arguments over the tool's limits, which are left out.
    pub oversized: Vec<OversizedArgument>,
}

/// A JSON-RPC `tools/call` request's arguments parsed into an object, without those over
/// the tool's limits; and the request with `{}` in their place.
#[derive(Debug)]
pub struct Lifted {
    /// The request with empty arguments.
    pub text: Vec<u8>,
    /// Its arguments, parsed.
    pub arguments: serde_json::Map<String, Value>,
    /// The arguments left out.
    pub oversized: Vec<OversizedArgument>,
}

impl<'a> ToolsCall<'a> {
    /// `message` read so far; `None` for a short request or one that is no `tools/call`
    /// with an arguments object (the general parser says what is wrong with it).
    pub fn scan(
        message: &'a [u8],
        limits_of: impl FnOnce(&str) -> Option<BTreeMap<String, usize>>,
    ) -> Option<Self> {
        let (name, raw) = tools_call_arguments(message)?;
        let limits = limits_of(&name).unwrap_or_default();
        let (kept, oversized) = split(raw, &limits)?;
        Some(Self {
            message,
            span: span(message, raw)?,
            kept,
            oversized,
        })
    }

    /// The text of the arguments that will be parsed.
    pub fn kept(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.kept.iter().map(|(_, value)| value.get())
    }

    /// The arguments parsed, and the request without them; `None` when one does not
    /// parse (a number out of range): the general parser says why.
    pub fn lift(self) -> Option<Lifted> {
        let mut arguments = serde_json::Map::with_capacity(self.kept.len());
        for (name, value) in self.kept {
            arguments.insert(name, serde_json::from_str(value.get()).ok()?);
        }
        let (start, end) = self.span;
        let mut text = Vec::with_capacity(self.message.len() - (end - start) + 2);
        text.extend_from_slice(&self.message[..start]);
        text.extend_from_slice(b"{}");
        text.extend_from_slice(&self.message[end..]);
        Some(Lifted {
            text,
            arguments,
            oversized: self.oversized,
        })
    }
}

/// The tool name and the arguments of a JSON-RPC `tools/call` request of at least
/// [`SCAN_FROM_BYTES`].
fn tools_call_arguments(message: &[u8]) -> Option<(String, &RawValue)> {
    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<Cow<'a, str>>,
        #[serde(borrow)]
        arguments: Option<&'a RawValue>,
    }
    if message.len() < SCAN_FROM_BYTES {
        return None;
    }
    let parsed: Message<'_> = serde_json::from_slice(message).ok()?;
    if parsed.method.as_deref() != Some("tools/call") {
        return None;
    }
    let params = parsed.params?;
    Some((params.name?.into_owned(), params.arguments?))
}

/// `text` with the members of the object `arguments` (a slice of `text`) that are over
/// their limits left out.
fn strip_members(
    text: &[u8],
    arguments: &RawValue,
    limits: &BTreeMap<String, usize>,
) -> Option<Stripped> {
    let (kept, oversized) = split(arguments, limits)?;
    if oversized.is_empty() {
        return None;
    }
    let (start, end) = span(text, arguments)?;
    let mut out = Vec::with_capacity(text.len() - (end - start) + kept.len() * 8);
    out.extend_from_slice(&text[..start]);
    write_object(&mut out, &kept);
    out.extend_from_slice(&text[end..]);
    Some(Stripped {
        text: out,
        oversized,
    })
}

/// Where `part` (a slice of `text`) starts and ends in it.
fn span(text: &[u8], part: &RawValue) -> Option<(usize, usize)> {
    let raw = part.get();
    let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start + raw.len();
    (end <= text.len()).then_some((start, end))
}

/// The members of the object `arguments`: those within their limits, and those over.
type Split<'a> = (Vec<(String, &'a RawValue)>, Vec<OversizedArgument>);

fn split<'a>(arguments: &'a RawValue, limits: &BTreeMap<String, usize>) -> Option<Split<'a>> {
    let Members(members) = serde_json::from_str(arguments.get()).ok()?;
    let mut oversized = Vec::new();
    let mut kept = Vec::with_capacity(members.len());
    for (name, value) in members {
        match limits.get(&name).copied() {
            Some(limit) if value.get().len() > limit && compact_len(value.get()) > limit => {
                oversized.push(OversizedArgument {
                    bytes: compact_len(value.get()),
                    name,
                    limit,
                });
            }
            _ => kept.push((name, value)),
        }
    }
    Some((kept, oversized))
}

/// Writes the object of `members` to `out`.
fn write_object(out: &mut Vec<u8>, members: &[(String, &RawValue)]) {
    out.push(b'{');
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // A string always serializes.
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        out.extend_from_slice(value.get().as_bytes());
    }
    out.push(b'}');
}

/// The members of a JSON object, in order, their values left as text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// The length of the JSON text `raw` without whitespace between its tokens.
fn compact_len(raw: &str) -> usize {
    shape(raw.as_bytes()).compact
}

/// What the JSON `text` will take once parsed into a tree of values, in resident memory:
/// its length, plus about 128 bytes for each value and member (the structural characters
/// outside strings; a value is 72 bytes, an object member some 150 with its key and
/// index) — a document of many small objects costs about twenty times its text, a long
/// string about its own length.
pub fn parsed_estimate(text: &[u8]) -> usize {
    text.len()
        .saturating_add(shape(text).structural.saturating_mul(128))
}

/// Counts over a JSON text, outside its strings.
struct Shape {
    /// Bytes other than whitespace between tokens.
    compact: usize,
    /// `{`, `[`, `,` and `:`: about one per value and member.
    structural: usize,
}

fn shape(text: &[u8]) -> Shape {
    let (mut in_string, mut escaped) = (false, false);
    let mut shape = Shape {
        compact: 0,
        structural: 0,
    };
    for &b in text {
        if in_string {
            shape.compact += 1;
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => continue,
            b'"' => in_string = true,
            b'{' | b'[' | b',' | b':' => shape.structural += 1,
            _ => {}
        }
        shape.compact += 1;
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn big_document(len: usize) -> Value {
        let items: Vec<Value> = (0..len / 20).map(|i| json!({"n": i, "s": "x"})).collect();
        json!({ "items": items })
    }

    #[test]
    fn a_rest_body_loses_only_its_arguments_over_their_limit() {
        let document = big_document(200_000);
        let body = serde_json::to_vec(&json!({
            "arguments": {"operation": "query", "path": "$.a", "document": document},
            "timeout_ms": 5000,
        }))
        .unwrap();
        let stripped = strip_rest_body(&body, &limits(&[("document", 100_000)])).unwrap();
        let parsed: Value = serde_json::from_slice(&stripped.text).unwrap();
        assert_eq!(
            parsed,
            json!({"arguments": {"operation": "query", "path": "$.a"}, "timeout_ms": 5000})
        );
        assert_eq!(stripped.oversized.len(), 1);
        let over = &stripped.oversized[0];
        assert_eq!((over.name.as_str(), over.limit), ("document", 100_000));
        assert_eq!(over.bytes, json_len(&document));
        // What the pipeline measures on a parsed value is the same figure.
        let args = json!({"document": document});
        assert_eq!(
            oversized_values(&args, &limits(&[("document", 100_000)])),
            stripped.oversized
        );
    }

    #[test]
    fn whitespace_does_not_count_and_a_value_within_its_limit_stays() {
        let document = big_document(100_000);
        let pretty = serde_json::to_string_pretty(&document).unwrap();
        let compact = json_len(&document);
        let body = format!(r#"{{"arguments": {{"document": {pretty}}}}}"#);
        assert!(pretty.len() > compact + 1000);
        // Over the compact size by a byte: kept, though the text as sent is longer.
        assert!(strip_rest_body(body.as_bytes(), &limits(&[("document", compact)])).is_none());
        let stripped =
            strip_rest_body(body.as_bytes(), &limits(&[("document", compact - 1)])).unwrap();
        assert_eq!(stripped.oversized[0].bytes, compact);
    }

    #[test]
    fn a_tools_call_is_stripped_for_the_tool_it_names_only() {
        let document = big_document(100_000);
        let line = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "json_ops", "arguments": {"document": document, "operation": "query"},
                       "_meta": {"progressToken": 1}},
        }))
        .unwrap();
        let mut asked = None;
        let stripped = strip_tools_call(&line, |name| {
            asked = Some(name.to_string());
            Some(limits(&[("document", 1000)]))
        })
        .unwrap();
        assert_eq!(asked.as_deref(), Some("json_ops"));
        let parsed: Value = serde_json::from_slice(&stripped.text).unwrap();
        assert_eq!(
            parsed,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "json_ops", "arguments": {"operation": "query"},
                              "_meta": {"progressToken": 1}}})
        );
        // Another method, a tool without limits, a short line: left alone.
        let other = String::from_utf8(line.clone())
            .unwrap()
            .replace("tools/call", "tools/list");
        assert!(strip_tools_call(other.as_bytes(), |_| Some(limits(&[("document", 1)]))).is_none());
        assert!(strip_tools_call(&line, |_| None).is_none());
        let short = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"json_ops","arguments":{"document":[1,2,3]}}}"#;
        assert!(strip_tools_call(short, |_| Some(limits(&[("document", 1)]))).is_none());
    }

    #[test]
    fn a_tools_call_lifts_its_arguments_out_parsed() {
        let text = "z".repeat(SCAN_FROM_BYTES);
        let line = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": "a", "method": "tools/call",
            "params": {"name": "json_ops", "arguments": {"text": text, "document": big_document(5000), "n": 1.5}},
        }))
        .unwrap();
        let scanned = ToolsCall::scan(&line, |_| Some(limits(&[("document", 100)]))).unwrap();
        assert_eq!(
            scanned.kept().map(str::len).sum::<usize>(),
            text.len() + 2 + 3
        );
        let lifted = scanned.lift().unwrap();
        let parsed: Value = serde_json::from_slice(&lifted.text).unwrap();
        assert_eq!(
            parsed,
            json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                   "params": {"name": "json_ops", "arguments": {}}})
        );
        assert_eq!(
            Value::Object(lifted.arguments),
            json!({"text": text, "n": 1.5})
        );
        assert_eq!(lifted.oversized[0].name, "document");
        // A tool without limits has its arguments lifted all the same.
        let lifted = ToolsCall::scan(&line, |_| None).unwrap().lift().unwrap();
        assert!(lifted.oversized.is_empty() && lifted.arguments.len() == 3);
        // A number serde_json cannot hold is left to the general parser to refuse.
        let huge = String::from_utf8(line).unwrap().replace("1.5", "1e999");
        assert!(
            ToolsCall::scan(huge.as_bytes(), |_| None)
                .unwrap()
                .lift()
                .is_none()
        );
    }

    #[test]
    fn escaped_names_and_broken_text_are_handled() {
        let filler = "y".repeat(SCAN_FROM_BYTES);
        let body = format!(r#"{{"arguments": {{"doc\u0075ment": ["{filler}"], "na\"me": 1}}}}"#);
        let stripped = strip_rest_body(body.as_bytes(), &limits(&[("document", 10)])).unwrap();
        let parsed: Value = serde_json::from_slice(&stripped.text).unwrap();
        assert_eq!(parsed, json!({"arguments": {"na\"me": 1}}));
        // Not JSON, or arguments that are no object: the parser after this says so.
        let broken = format!(r#"{{"arguments": {{"document": ["{filler}"]"#);
        assert!(strip_rest_body(broken.as_bytes(), &limits(&[("document", 10)])).is_none());
        let listed = format!(r#"{{"arguments": ["{filler}"]}}"#);
        assert!(strip_rest_body(listed.as_bytes(), &limits(&[("document", 10)])).is_none());
    }

    #[test]
    fn a_tree_of_small_values_is_estimated_far_above_its_text_and_a_string_at_its_length() {
        let document = br#"{"items":[{"id":1,"name":"a, b: c"},{"id":2,"name":"d"}]}"#;
        // Three objects, one array, five members and three commas outside strings; the
        // comma and colon inside a string do not count.
        assert_eq!(parsed_estimate(document), document.len() + 12 * 128);
        let text = br#"{"text":"{\"a\":[1,2,3],\"b\":\"\\\"x\\\"\"}"}"#;
        assert_eq!(parsed_estimate(text), text.len() + 2 * 128);
    }

    #[test]
    fn the_error_names_the_argument_its_size_and_the_limit() {
        let over = OversizedArgument {
            name: "document".into(),
            bytes: 4_000_000,
            limit: 1024 * 1024,
        };
        let text = over.error("json_ops").to_string();
        assert!(text.contains("`document` is 4000000 bytes"), "{text}");
        assert!(text.contains("1048576 bytes (1 MiB)"), "{text}");
    }
}

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
    let Object(parsed): Object<Body<'_>> = serde_json::from_slice(body).ok()?;
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
/// text: the large ones to be parsed straight into values ([`ToolsCall::lift`]) rather
/// than by a general parser that buffers its input first and so builds each value twice.
#[derive(Debug)]
pub struct ToolsCall<'a> {
    message: &'a [u8],
    span: (usize, usize),
    kept: Vec<(String, &'a RawValue)>,
    /// The arguments over the tool's limits, which are left out.
    pub oversized: Vec<OversizedArgument>,
}

/// Members at least this large are lifted out of a request; smaller ones stay in it, for
/// its own parser (and for the checks it makes on them, such as values repeated in
/// headers).
pub const LIFT_FROM_BYTES: usize = 4 * 1024;

/// Arguments lifted out of a request, parsed, each with its place among the arguments
/// (in ascending order): [`put_back`] puts them there.
pub type LiftedMembers = Vec<(usize, String, Value)>;

/// A JSON-RPC `tools/call` request without its large arguments and those over the tool's
/// limits, and the large ones parsed.
#[derive(Debug)]
pub struct Lifted {
    /// The request with only its small arguments.
    pub text: Vec<u8>,
    /// Its large arguments, parsed.
    pub members: LiftedMembers,
    /// The arguments left out for their size.
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

    /// The large arguments parsed, and the request without them; `None` when one does
    /// not parse (a number out of range): the general parser says why.
    /// Members for which `stay` is true stay in the message whatever their size (those
    /// its parser checks against something else, such as a header).
    pub fn lift(self, stay: impl Fn(&str) -> bool) -> Option<Lifted> {
        let mut members = Vec::new();
        let mut small = Vec::with_capacity(self.kept.len());
        for (index, (name, value)) in self.kept.into_iter().enumerate() {
            if value.get().len() >= LIFT_FROM_BYTES && !stay(&name) {
                members.push((index, name, serde_json::from_str(value.get()).ok()?));
            } else {
                small.push((name, value));
            }
        }
        let (start, end) = self.span;
        let mut text = Vec::with_capacity(self.message.len() - (end - start) + 2);
        text.extend_from_slice(&self.message[..start]);
        write_object(&mut text, &small);
        text.extend_from_slice(&self.message[end..]);
        Some(Lifted {
            text,
            members,
            oversized: self.oversized,
        })
    }
}

/// Puts `members` lifted out of a request back among the `arguments` its parser read, each
/// where it was.
pub fn put_back(arguments: &mut serde_json::Map<String, Value>, members: LiftedMembers) {
    for (index, name, value) in members {
        let at = index.min(arguments.len());
        arguments.shift_insert(at, name, value);
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
        params: Option<Object<Params<'a>>>,
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
    let Object(parsed): Object<Message<'_>> = serde_json::from_slice(message).ok()?;
    if parsed.method.as_deref() != Some("tools/call") {
        return None;
    }
    let Object(params) = parsed.params?;
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

/// `None` when a name repeats: which value counts is then the general parser's business.
fn split<'a>(arguments: &'a RawValue, limits: &BTreeMap<String, usize>) -> Option<Split<'a>> {
    let Members(members) = serde_json::from_str(arguments.get()).ok()?;
    let mut names: Vec<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|pair| pair[0] == pair[1]) {
        return None;
    }
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

/// `T` read only from a JSON object: serde's derived structs also take an array of their
/// fields in order, which is no request.
#[derive(Debug)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
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

/// How long `raw` (valid JSON) is once parsed and written compactly, as [`json_len`]
/// measures a value — or a little less, never more: strings count as serde_json writes
/// them (`\u00e9` is the two bytes of `é`, `\/` is `/`), whitespace between tokens not at
/// all, and a number with a fraction or an exponent, or too large for 64 bits, at most 3
/// bytes (`1.000` is written `1.0`). So a door never refuses what the pipeline would take
/// (an object that repeats a name, whose earlier values the parser drops, aside).
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

/// Counts over a JSON text.
struct Shape {
    /// Its compact length (see [`compact_len`]).
    compact: usize,
    /// `{`, `[`, `,` and `:` outside strings: about one per value and member.
    structural: usize,
}

fn shape(text: &[u8]) -> Shape {
    let mut shape = Shape {
        compact: 0,
        structural: 0,
    };
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let (end, written) = string_len(text, i + 1);
                shape.compact += written;
                i = end;
                continue;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'{' | b'[' | b',' | b':' => {
                shape.structural += 1;
                shape.compact += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len()
                    && matches!(text[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let number = &text[start..i];
                // A float, or an integer too large for 64 bits (read as a float), may be
                // written shorter than sent: `1.000` is `1.0`, `1` and 21 zeros `1e21`.
                let integer = std::str::from_utf8(number)
                    .is_ok_and(|n| n.parse::<i64>().is_ok() || n.parse::<u64>().is_ok());
                shape.compact += if !integer {
                    number.len().min(3)
                } else if number == b"-0" {
                    1
                } else {
                    number.len()
                };
                continue;
            }
            _ => shape.compact += 1,
        }
        i += 1;
    }
    shape
}

/// The string whose text starts at `from` (just past its opening quote): where it ends
/// (just past its closing quote) and its length as serde_json writes it, quotes included.
fn string_len(text: &[u8], from: usize) -> (usize, usize) {
    let hex = |at: usize| {
        text.get(at..at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let (mut i, mut written) = (from, 2);
    while i < text.len() {
        match text[i] {
            b'"' => return (i + 1, written),
            b'\\' => match text.get(i + 1) {
                Some(b'/') => {
                    written += 1;
                    i += 2;
                }
                Some(b'u') => {
                    let unit = hex(i + 2).unwrap_or(0);
                    let low = (0xD800..0xDC00).contains(&unit)
                        && text.get(i + 6..i + 8) == Some(b"\\u")
                        && hex(i + 8).is_some_and(|l| (0xDC00..0xE000).contains(&l));
                    if low {
                        written += 4;
                        i += 12;
                    } else {
                        written += match char::from_u32(unit) {
                            Some('"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t') => 2,
                            Some(c) if (c as u32) < 0x20 => 6,
                            Some(c) => c.len_utf8(),
                            None => 3,
                        };
                        i += 6;
                    }
                }
                _ => {
                    written += 2;
                    i += 2;
                }
            },
            _ => {
                written += 1;
                i += 1;
            }
        }
    }
    (i, written)
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
        // A limit equal to the compact size: kept, though the text as sent is longer.
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
    fn a_tools_call_lifts_its_large_arguments_out_parsed_and_puts_them_back_in_place() {
        let text = "z".repeat(SCAN_FROM_BYTES);
        let line = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": "a", "method": "tools/call",
            "params": {"name": "json_ops", "arguments": {
                "first": 1, "text": text, "document": big_document(5000), "n": 1.5}},
        }))
        .unwrap();
        let scanned = ToolsCall::scan(&line, |_| Some(limits(&[("document", 100)]))).unwrap();
        assert_eq!(
            scanned.kept().map(str::len).sum::<usize>(),
            1 + text.len() + 2 + 3
        );
        let lifted = scanned.lift(|_| false).unwrap();
        let parsed: Value = serde_json::from_slice(&lifted.text).unwrap();
        // Small members stay for the request's own parser; the large one is lifted.
        assert_eq!(
            parsed,
            json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
                   "params": {"name": "json_ops", "arguments": {"first": 1, "n": 1.5}}})
        );
        assert_eq!(lifted.oversized[0].name, "document");
        let mut arguments = parsed["params"]["arguments"].as_object().unwrap().clone();
        put_back(&mut arguments, lifted.members);
        let names: Vec<&String> = arguments.keys().collect();
        assert_eq!(names, ["first", "text", "n"]);
        assert_eq!(arguments["text"], json!(text));
        // A tool without limits has its large arguments lifted all the same.
        let lifted = ToolsCall::scan(&line, |_| None)
            .unwrap()
            .lift(|_| false)
            .unwrap();
        assert!(lifted.oversized.is_empty() && lifted.members.len() == 2);
        // A number serde_json cannot hold is left to the general parser to refuse.
        let huge = String::from_utf8(line.clone())
            .unwrap()
            .replace("\"n\":1.5", "\"n\":[1e999]");
        let huge = huge.replace("\"document\":{", "\"document\":{\"big\":1e999,");
        assert!(
            ToolsCall::scan(huge.as_bytes(), |_| None)
                .unwrap()
                .lift(|_| false)
                .is_none()
        );
        // A member that must stay (a header repeats it) stays, however large.
        let lifted = ToolsCall::scan(&line, |_| None)
            .unwrap()
            .lift(|name| name == "text")
            .unwrap();
        assert_eq!(lifted.members.len(), 1);
        assert!(lifted.text.len() > text.len());
        // A repeated name is left to the general parser, which keeps the last value.
        let repeated = format!(
            r#"{{"method": "tools/call", "params": {{"name": "x", "arguments": {{"a": 1, "a": "{text}"}}}}}}"#
        );
        assert!(ToolsCall::scan(repeated.as_bytes(), |_| None).is_none());
        assert!(strip_tools_call(repeated.as_bytes(), |_| Some(limits(&[("a", 10)]))).is_none());
        // Arrays are no requests, though serde's derived structs would read them.
        let listed = format!(r#"["tools/call", {{"name": "x", "arguments": {{"a": "{text}"}}}}]"#);
        assert!(ToolsCall::scan(listed.as_bytes(), |_| None).is_none());
        let listed = format!(r#"{{"method": "tools/call", "params": ["x", {{"a": "{text}"}}]}}"#);
        assert!(ToolsCall::scan(listed.as_bytes(), |_| None).is_none());
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
    fn escapes_and_numbers_count_as_the_pipeline_counts_them_or_less() {
        let cases = [
            r#""\u4e2d\u6587 \/ \" \\ \n \u0001 \ud83d\ude00 \u00e9""#,
            r#"{"a": [1.0, 1.000, 1e5, 2E+2, -0, -12, 0.5], "b": true, "c": null}"#,
            r#"[1000000000000000000000, 123456789012345678901234567890, 18446744073709551615]"#,
            r#"[ "x" , { } , [ ] , "\t" ]"#,
        ];
        for raw in cases {
            let value: Value = serde_json::from_str(raw).unwrap();
            let door = compact_len(raw);
            let pipeline = json_len(&value);
            assert!(door <= pipeline, "{raw}: door {door} > pipeline {pipeline}");
        }
        // Strings are exact: what json_ops measures is what the door measures.
        let chinese = format!("\"{}\"", "\\u4e2d".repeat(1000));
        let value: Value = serde_json::from_str(&chinese).unwrap();
        assert_eq!(compact_len(&chinese), json_len(&value));
        assert_eq!(
            compact_len(cases[0]),
            json_len(&serde_json::from_str(cases[0]).unwrap())
        );
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

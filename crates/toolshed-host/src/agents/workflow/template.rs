//! References `${...}` in strings: parsing them, walking the strings of a value, and
//! resolving and rendering at run time.

use super::Failure;
use serde_json::Value;

use super::did_you_mean;

/// A piece of a string: literal text or a reference.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Ref(Reference),
}

/// `${head.seg[0]...}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reference {
    /// As written, `${` and `}` included.
    pub(crate) text: String,
    pub(crate) head: String,
    pub(crate) segments: Vec<Segment>,
}

/// One step of a reference's path after its head.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Segment {
    Field(String),
    Index(usize),
}

impl Segment {
    pub(crate) fn field(&self) -> Option<&str> {
        match self {
            Segment::Field(f) => Some(f),
            Segment::Index(_) => None,
        }
    }
}

/// A string that is not a valid template: the offending piece and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TemplateError {
    pub(crate) text: String,
    pub(crate) message: String,
}

/// Splits a string into text and references; `$${` is a literal `${`.
pub(crate) fn parse(s: &str) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        text.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$${") {
            text.push_str("${");
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let Some(end) = after.find('}') else {
                return Err(TemplateError {
                    text: super::cut(tail, 60),
                    message: "has no closing `}`; write `${inputs.NAME}`-style references, \
                              or `$${` for a literal `${`"
                        .to_string(),
                });
            };
            let reference = parse_reference(&after[..end], &tail[..end + 3])?;
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Ref(reference));
            rest = &after[end + 1..];
        } else {
            text.push('$');
            rest = &tail[1..];
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok(parts)
}

fn parse_reference(inner: &str, written: &str) -> Result<Reference, TemplateError> {
    let fail = |message: String| TemplateError {
        text: written.to_string(),
        message,
    };
    let path = inner.trim();
    let head_len = path
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(path.len());
    let head = &path[..head_len];
    if head.is_empty() || head.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(fail(
            "is not a reference: write `${inputs.NAME}`, `${steps.ID.output}`, a loop \
             variable such as `${item}`, or `${index}`"
                .to_string(),
        ));
    }
    let mut segments = Vec::new();
    let mut rest = &path[head_len..];
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(after.len());
            if len == 0 {
                return Err(fail(format!(
                    "is not a reference: `.` must be followed by a field name, found `{}`",
                    super::cut(after, 20)
                )));
            }
            segments.push(Segment::Field(after[..len].to_string()));
            rest = &after[len..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let index = after
                .find(']')
                .and_then(|end| Some((after[..end].trim().parse::<usize>().ok()?, end)));
            let Some((index, end)) = index else {
                return Err(fail(
                    "is not a reference: `[` must hold an index such as `[0]`".to_string(),
                ));
            };
            segments.push(Segment::Index(index));
            rest = &after[end + 1..];
        } else {
            return Err(fail(format!(
                "is not a reference: expected `.field` or `[N]`, found `{}`",
                super::cut(rest, 20)
            )));
        }
    }
    Ok(Reference {
        text: written.to_string(),
        head: head.to_string(),
        segments,
    })
}

/// The one reference when `parts` is exactly one reference (no text around it).
pub(crate) fn whole(parts: &[Part]) -> Option<&Reference> {
    match parts {
        [Part::Ref(r)] => Some(r),
        _ => None,
    }
}

/// `base.key`, or `base["key"]` when the key is not a plain name.
pub(crate) fn key_path(base: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{base}.{key}")
    } else {
        format!("{base}[{}]", Value::String(key.to_string()))
    }
}

/// Calls `f(path, string)` for every string in `value` (object values and array items,
/// not keys), in order, stopping at the first error.
pub(crate) fn for_each_string<E>(
    value: &Value,
    path: &str,
    f: &mut dyn FnMut(&str, &str) -> Result<(), E>,
) -> Result<(), E> {
    match value {
        Value::String(s) => f(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                for_each_string(item, &format!("{path}[{i}]"), f)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                for_each_string(item, &key_path(path, key), f)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A value as text in a longer string: a string as it is, anything else as compact JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Resolves the references in one string: exactly one reference gives its value as is,
/// otherwise the text with each reference replaced by [`text_of`] its value.
pub(crate) fn render_str(
    s: &str,
    resolve: &mut dyn FnMut(&Reference) -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    let parts = parse(s).map_err(|e| format!("`{}` {}", e.text, e.message))?;
    if let Some(r) = whole(&parts) {
        return resolve(r);
    }
    let mut out = String::new();
    for part in &parts {
        match part {
            Part::Text(t) => out.push_str(t),
            Part::Ref(r) => out.push_str(&text_of(&resolve(r)?)),
        }
    }
    Ok(Value::String(out))
}

/// [`render_str`] on every string in `value`; an error names the path of the string.
pub(crate) fn render(
    value: &Value,
    path: &str,
    resolve: &mut dyn FnMut(&Reference) -> Result<Value, Failure>,
) -> Result<Value, (String, String)> {
    match value {
        Value::String(s) => render_str(s, resolve).map_err(|m| (path.to_string(), m.0)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| render(item, &format!("{path}[{i}]"), resolve))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                out.insert(key.clone(), render(item, &key_path(path, key), resolve)?);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

/// Follows `segments` from `root` (which `base` names, e.g. `steps.read.output`).
pub(crate) fn lookup<'v>(
    root: &'v Value,
    base: &str,
    segments: &[Segment],
) -> Result<&'v Value, Failure> {
    let mut value = root;
    let mut at = base.to_string();
    for segment in segments {
        value = match (segment, value) {
            (Segment::Field(f), Value::Object(map)) => match map.get(f) {
                Some(v) => v,
                None => {
                    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
                    let hint = did_you_mean(f, keys.iter().copied());
                    let more = if keys.len() > 10 { ", …" } else { "" };
                    keys.truncate(10);
                    return Err(format!(
                        "`{at}` has no field `{f}` (fields: {}{more}){hint}",
                        if keys.is_empty() {
                            "none".to_string()
                        } else {
                            keys.join(", ")
                        }
                    )
                    .into());
                }
            },
            (Segment::Index(i), Value::Array(items)) => match items.get(*i) {
                Some(v) => v,
                None => {
                    return Err(format!(
                        "`{at}` has {} item(s); index [{i}] is out of range",
                        items.len()
                    )
                    .into());
                }
            },
            (Segment::Field(f), other) => {
                return Err(format!(
                    "`{at}` is {}, not an object: it has no field `{f}`",
                    super::describe(other)
                )
                .into());
            }
            (Segment::Index(i), other) => {
                return Err(format!(
                    "`{at}` is {}, not an array: it has no item [{i}]",
                    super::describe(other)
                )
                .into());
            }
        };
        match segment {
            Segment::Field(f) => at = key_path(&at, f),
            Segment::Index(i) => at = format!("{at}[{i}]"),
        }
    }
    Ok(value)
}

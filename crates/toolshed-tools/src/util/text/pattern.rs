//! Regular expressions (`regex_extract`, `regex_replace`) and splitting (`split`).
//!
//! Patterns use the `regex` crate: linear-time matching, so no pattern can hang a call,
//! and a compiled-size limit, so no pattern can eat memory; the price is no look-around
//! and no backreferences, which the error for an invalid pattern says.

use regex::{Captures, Regex, RegexBuilder};
use serde_json::{Map, Value, json};
use toolshed_core::{ToolError, ToolOutput};

use super::{MAX_ITEMS, MAX_OUTPUT_BYTES, shorten, to_usize};

/// Compiled size a pattern may reach, in bytes. Unicode classes are large (`\w` alone is
/// about 50 KB, so `\w{50}` needs a few MB); this allows those and refuses things like
/// `(\w{100}){100}` instead of building them.
const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Capacity of the lazy DFA's transition cache, in bytes (the crate's default).
const REGEX_DFA_CACHE: usize = 2 << 20;

/// Longest pattern accepted, in bytes.
const MAX_PATTERN_BYTES: usize = 10_000;

/// Matches returned when `max_matches` is not given.
pub(super) const DEFAULT_MAX_MATCHES: u64 = 100;

/// Compiles `pattern` with `flags`, or explains what is wrong with either.
fn build(pattern: &str, flags: Option<&str>) -> Result<Regex, ToolError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(ToolError::invalid_at(
            "/pattern",
            format!(
                "the pattern is {} bytes, over the limit of {MAX_PATTERN_BYTES}; use a \
                 shorter pattern",
                pattern.len()
            ),
        ));
    }
    let mut builder = RegexBuilder::new(pattern);
    for flag in flags.unwrap_or("").chars() {
        match flag {
            'i' => builder.case_insensitive(true),
            'm' => builder.multi_line(true),
            's' => builder.dot_matches_new_line(true),
            'x' => builder.ignore_whitespace(true),
            other => {
                return Err(ToolError::invalid_at(
                    "/flags",
                    format!(
                        "unknown flag `{other}` in flags `{}`; use any of i (case-insensitive), \
                         m (^ and $ match at line breaks), s (. matches newlines), \
                         x (verbose: whitespace and # comments ignored)",
                        shorten(flags.unwrap_or(""))
                    ),
                ));
            }
        };
    }
    builder
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_CACHE);
    builder.build().map_err(|error| {
        let message = match error {
            regex::Error::CompiledTooBig(limit) => format!(
                "the regex `{}` is too big: compiled, it exceeds the {limit}-byte limit; \
                 simplify it, e.g. use smaller repetition counts or ASCII classes \
                 ([0-9] instead of \\d, or the flag (?-u))",
                shorten(pattern)
            ),
            other => format!(
                "invalid regex `{}`: {other}\nFix the pattern; the syntax is Rust's regex \
                 crate, which has no look-around and no backreferences",
                shorten(pattern)
            ),
        };
        ToolError::invalid_at("/pattern", message)
    })
}

/// Every match of `pattern` in `text` (up to `max_matches`) with its byte offsets and
/// groups, or only group `group` of each.
pub(super) fn extract(
    text: &str,
    pattern: &str,
    flags: Option<&str>,
    group: Option<&Value>,
    max_matches: u64,
) -> Result<ToolOutput, ToolError> {
    let regex = build(pattern, flags)?;
    let max = match max_matches {
        n if (1..=MAX_ITEMS as u64).contains(&n) => to_usize(n),
        n => {
            return Err(ToolError::invalid_at(
                "/max_matches",
                format!("`max_matches` is {n}; give a number from 1 to {MAX_ITEMS}"),
            ));
        }
    };
    let group = group.map(|g| resolve_group(&regex, g)).transpose()?;
    let names: Vec<Option<&str>> = regex.capture_names().collect();

    let mut matches = Vec::new();
    let mut lines = Vec::new();
    let mut truncated = false;
    for caps in regex.captures_iter(text) {
        let item = match group {
            Some(index) => caps.get(index).map(|m| span(m)),
            None => caps.get(0).map(|m| whole_match(m, &caps, &names)),
        };
        let Some(item) = item else {
            // The requested group did not take part in this match.
            continue;
        };
        if matches.len() == max {
            truncated = true;
            break;
        }
        lines.push(describe_match(matches.len() + 1, &item, &names));
        matches.push(item);
    }

    let count = matches.len();
    let text_out = if count == 0 {
        format!("no matches for `{}`", shorten(pattern))
    } else {
        let noun = if count == 1 { "match" } else { "matches" };
        let mut out = format!("{count} {noun}:\n{}", lines.join("\n"));
        if truncated {
            out.push_str(&format!(
                "\n(stopped at max_matches = {max}; more matches follow. Raise max_matches, \
                 up to {MAX_ITEMS}, to see them)"
            ));
        }
        out
    };
    Ok(ToolOutput::text_and_structured(
        text_out,
        json!({"matches": matches, "count": count, "truncated": truncated}),
    ))
}

fn span(m: regex::Match<'_>) -> Value {
    json!({"text": m.as_str(), "start": m.start(), "end": m.end()})
}

/// The whole match with its numbered groups (`null` where a group did not take part) and,
/// when the pattern names groups, their texts by name.
fn whole_match(m: regex::Match<'_>, caps: &Captures<'_>, names: &[Option<&str>]) -> Value {
    let mut item = span(m);
    if caps.len() > 1 {
        let groups: Vec<Value> = (1..caps.len())
            .map(|i| caps.get(i).map_or(Value::Null, span))
            .collect();
        item["groups"] = Value::Array(groups);
    }
    let mut named = Map::new();
    for (i, name) in names.iter().enumerate() {
        if let Some(name) = name {
            let value = caps.get(i).map_or(Value::Null, |g| json!(g.as_str()));
            named.insert((*name).to_string(), value);
        }
    }
    if !named.is_empty() {
        item["named"] = Value::Object(named);
    }
    item
}

/// One line of the text output: `1. "abc" at bytes 0..3; 1="a", year=null`, where a
/// named group shows by name.
fn describe_match(number: usize, item: &Value, names: &[Option<&str>]) -> String {
    let mut line = format!(
        "{number}. {} at bytes {}..{}",
        item["text"], item["start"], item["end"]
    );
    let mut parts = Vec::new();
    if let Some(groups) = item["groups"].as_array() {
        for (i, group) in groups.iter().enumerate() {
            let shown = group.get("text").unwrap_or(&Value::Null);
            match names.get(i + 1).copied().flatten() {
                Some(name) => parts.push(format!("{name}={shown}")),
                None => parts.push(format!("{}={shown}", i + 1)),
            }
        }
    }
    if !parts.is_empty() {
        line.push_str("; ");
        line.push_str(&parts.join(", "));
    }
    line
}

/// The index of the group `group` names: a number, a string of digits, or a group name.
fn resolve_group(regex: &Regex, group: &Value) -> Result<usize, ToolError> {
    let count = regex.captures_len();
    let by_index = |index: u64| {
        let index = to_usize(index);
        if index < count {
            Ok(index)
        } else {
            Err(ToolError::invalid_at(
                "/group",
                format!(
                    "group {index} does not exist: the pattern has {}; use 0 for the whole \
                     match or 1..={}",
                    toolshed_core::counted(count - 1, "capture group", "capture groups"),
                    count - 1
                ),
            ))
        }
    };
    match group {
        Value::Number(n) => match n.as_u64() {
            Some(index) => by_index(index),
            None => Err(ToolError::invalid_at(
                "/group",
                format!("`group` is {n}; give a whole number of 0 or more, or a group name"),
            )),
        },
        Value::String(name) => {
            if let Ok(index) = name.parse::<u64>() {
                return by_index(index);
            }
            if let Some(index) = regex.capture_names().position(|n| n == Some(name.as_str())) {
                return Ok(index);
            }
            let known: Vec<&str> = regex.capture_names().flatten().collect();
            let hint = if known.is_empty() {
                "it has no named groups; name one with (?P<name>...) or give a group number"
                    .to_string()
            } else {
                format!("its named groups are: {}", known.join(", "))
            };
            Err(ToolError::invalid_at(
                "/group",
                format!("the pattern has no group named `{}`; {hint}", shorten(name)),
            ))
        }
        other => Err(ToolError::invalid_at(
            "/group",
            format!(
                "`group` is {}; give a group number (e.g. 1) or name (e.g. \"year\")",
                shorten(&other.to_string())
            ),
        )),
    }
}

/// `text` with the first `limit` matches of `pattern` (all when 0) replaced.
pub(super) fn replace(
    text: &str,
    pattern: &str,
    replacement: &str,
    flags: Option<&str>,
    limit: u64,
) -> Result<ToolOutput, ToolError> {
    let regex = build(pattern, flags)?;
    check_replacement(&regex, replacement)?;
    let limit = if limit == 0 {
        usize::MAX
    } else {
        to_usize(limit)
    };
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut count = 0;
    for caps in regex.captures_iter(text).take(limit) {
        let Some(m) = caps.get(0) else { continue };
        out.push_str(text.get(last..m.start()).unwrap_or(""));
        caps.expand(replacement, &mut out);
        last = m.end();
        count += 1;
        if out.len() > MAX_OUTPUT_BYTES {
            return Err(ToolError::invalid(format!(
                "the result grows past {MAX_OUTPUT_BYTES} bytes (2 MiB) after {count} \
                 replacements; use `limit`, a shorter replacement, or smaller pieces of text"
            )));
        }
    }
    out.push_str(text.get(last..).unwrap_or(""));
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(ToolError::invalid(format!(
            "the result is {} bytes, over the limit of {MAX_OUTPUT_BYTES} bytes (2 MiB); \
             replace in smaller pieces of text",
            out.len()
        )));
    }
    let noun = if count == 1 {
        "replacement"
    } else {
        "replacements"
    };
    let text_out = format!("{count} {noun}:\n{out}");
    Ok(ToolOutput::text_and_structured(
        text_out,
        json!({"text": out, "replacements": count}),
    ))
}

/// Refuses references to groups the pattern does not have. The regex crate would quietly
/// substitute nothing, and the classic mistake `$1st` (read as the group named `1st`)
/// deserves an answer rather than a silently wrong text.
fn check_replacement(regex: &Regex, replacement: &str) -> Result<(), ToolError> {
    let mut rest = replacement;
    while let Some(dollar) = rest.find('$') {
        let after = rest.get(dollar + 1..).unwrap_or("");
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
            continue;
        }
        let (name, written, tail) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) if end > 0 => (
                    inner.get(..end).unwrap_or(""),
                    format!("${{{}}}", inner.get(..end).unwrap_or("")),
                    inner.get(end + 1..).unwrap_or(""),
                ),
                // `${` without a name or a closing brace is a literal `$`.
                _ => {
                    rest = after;
                    continue;
                }
            }
        } else {
            let len = after
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            if len == 0 {
                rest = after;
                continue;
            }
            let name = after.get(..len).unwrap_or("");
            (name, format!("${name}"), after.get(len..).unwrap_or(""))
        };
        let known = match name.parse::<usize>() {
            Ok(index) => index < regex.captures_len(),
            Err(_) => regex.capture_names().flatten().any(|n| n == name),
        };
        if !known {
            return Err(unknown_reference(regex, name, &written));
        }
        rest = tail;
    }
    Ok(())
}

fn unknown_reference(regex: &Regex, name: &str, written: &str) -> ToolError {
    let groups = regex.captures_len() - 1;
    let names: Vec<&str> = regex.capture_names().flatten().collect();
    let names = if names.is_empty() {
        "no named groups".to_string()
    } else {
        format!("named groups {}", names.join(", "))
    };
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    let hint = if digits > 0 && digits < name.len() && !written.starts_with("${") {
        let (number, suffix) = name.split_at(digits);
        format!("; to put text right after a group, write `${{{number}}}{suffix}`")
    } else {
        "; write `$$` for a literal `$`".to_string()
    };
    ToolError::invalid_at(
        "/replacement",
        format!(
            "the replacement refers to `{}`, which is not a group of the pattern (it has \
             {} and {names}){hint}",
            shorten(written),
            toolshed_core::counted(groups, "numbered group", "numbered groups")
        ),
    )
}

/// How `split` finds the boundaries between parts.
pub(super) enum Splitter<'a> {
    Literal(&'a str),
    Pattern(Regex),
}

impl<'a> Splitter<'a> {
    /// The splitter for exactly one of `separator` and `pattern`.
    pub(super) fn new(
        separator: Option<&'a str>,
        pattern: Option<&str>,
        flags: Option<&str>,
    ) -> Result<Self, ToolError> {
        match (separator, pattern) {
            (Some(_), Some(_)) => Err(ToolError::invalid(
                "operation `split` takes either `separator` (a literal string) or `pattern` \
                 (a regex), not both; remove one",
            )),
            (None, None) => Err(ToolError::invalid_at(
                "/separator",
                "operation `split` needs `separator` (a literal string) or `pattern` (a \
                 regex); add one to the arguments",
            )),
            (Some(""), None) => Err(ToolError::invalid_at(
                "/separator",
                "`separator` is empty; give the string to split on, or a `pattern`",
            )),
            (Some(separator), None) => Ok(Self::Literal(separator)),
            (None, Some(pattern)) => build(pattern, flags).map(Self::Pattern),
        }
    }
}

/// The parts of `text` between separators, at most `max_parts` (the last holding the
/// rest), optionally trimmed and without empty parts.
pub(super) fn split(
    text: &str,
    splitter: Splitter<'_>,
    max_parts: Option<u64>,
    trim: bool,
    skip_empty: bool,
) -> Result<ToolOutput, ToolError> {
    let limit = match max_parts {
        None => None,
        Some(n) if (1..=MAX_ITEMS as u64).contains(&n) => Some(to_usize(n)),
        Some(n) => {
            return Err(ToolError::invalid_at(
                "/max_parts",
                format!("`max_parts` is {n}; give a number from 1 to {MAX_ITEMS}"),
            ));
        }
    };
    let raw: Box<dyn Iterator<Item = &str>> = match (&splitter, limit) {
        (Splitter::Literal(separator), Some(n)) => Box::new(text.splitn(n, *separator)),
        (Splitter::Literal(separator), None) => Box::new(text.split(*separator)),
        (Splitter::Pattern(regex), Some(n)) => Box::new(regex.splitn(text, n)),
        (Splitter::Pattern(regex), None) => Box::new(regex.split(text)),
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in raw {
        let part = if trim { part.trim() } else { part };
        if skip_empty && part.is_empty() {
            continue;
        }
        if parts.len() == MAX_ITEMS {
            return Err(ToolError::invalid(format!(
                "the text splits into more than {MAX_ITEMS} parts; set `max_parts` (up to \
                 {MAX_ITEMS}) to keep the rest in the last part, or split a smaller text"
            )));
        }
        parts.push(part);
    }
    let count = parts.len();
    let noun = if count == 1 { "part" } else { "parts" };
    let mut text_out = format!("{count} {noun}:");
    for part in &parts {
        text_out.push('\n');
        text_out.push_str(&Value::from(*part).to_string());
    }
    Ok(ToolOutput::text_and_structured(
        text_out,
        json!({"parts": parts, "count": count}),
    ))
}

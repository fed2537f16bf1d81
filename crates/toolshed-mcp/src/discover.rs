//! Discovery mode (`toolshed mcp --catalog discover`): instead of every tool, `tools/list`
//! holds a small core and two tools through which a model finds and calls the rest —
//! `tool_search` (ranked matches among the tools the caller may use, with their input
//! schemas) and `tool_call` (runs one of them through the whole pipeline, exactly as a
//! direct call would). Both live in the door: they see what the connection sees.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::{Value, json};
use toolshed_host::registry::{ToolEntry, ToolGroup};
use toolshed_host::tool_search;
use toolshed_kit::args;

/// The search tool's name.
pub(crate) const SEARCH: &str = "tool_search";
/// The call tool's name.
pub(crate) const CALL: &str = "tool_call";

/// How many matches `tool_search` returns unless asked.
const DEFAULT_LIMIT: usize = 8;
/// The longest query taken.
const MAX_QUERY: usize = 500;
/// The most tools `activate: true` adds to one connection's list.
pub(crate) const MAX_ACTIVATED: usize = 64;

/// The input schema generated from `T` (`toolshed_kit::args`), as rmcp holds one.
fn schema<T: JsonSchema>() -> Arc<JsonObject> {
    match args::schema::<T>() {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

// The arguments of the two tools, for their schemas. The door reads a call itself
// ([`search`], [`inner_call`]): these tools do not pass the pipeline's schema check, so
// each refusal names the argument and what it takes.

/// `tool_search`'s arguments.
#[derive(JsonSchema)]
#[allow(dead_code)] // Only its schema is used.
struct SearchArgs {
    /// What you want to do, e.g. `replace text in a file`.
    #[schemars(length(min = 1, max = MAX_QUERY))]
    query: String,
    /// The most tools returned.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = tool_search::MAX_SEARCH_RESULTS))]
    limit: usize,
    /// Add the tools found to your tools/list (you are sent tools/list_changed).
    activate: Option<bool>,
}

fn default_limit() -> usize {
    DEFAULT_LIMIT
}

/// `tool_call`'s arguments.
#[derive(JsonSchema)]
#[allow(dead_code)] // Only its schema is used.
struct CallArgs {
    #[schemars(length(min = 1, max = 128))]
    name: String,
    arguments: Option<JsonObject>,
}

/// The most names of unlisted tools `tool_search`'s description gives.
const MAX_NAMED: usize = 40;

/// `tool_search` and `tool_call` as listed; `not_listed` are the tools the caller may use
/// that its list leaves out, named in `tool_search`'s description so that a model knows
/// they exist (all but their names in discovery mode, where nearly nothing is listed).
pub(crate) fn tools(not_listed: &[&str]) -> Vec<Tool> {
    let mut description = String::from(
        "Find tools by what they do among all you may use: the best matches for `query`, \
         each with a summary and its input schema. Run one with tool_call, or `activate` \
         them to call directly.",
    );
    if !not_listed.is_empty() && not_listed.len() <= MAX_NAMED {
        description.push_str(" Not listed, found here: ");
        description.push_str(&not_listed.join(", "));
        description.push('.');
    }
    let search = Tool::new(SEARCH, description, schema::<SearchArgs>())
        .with_title("Find a tool")
        // Destructive and idempotent say nothing of a read-only tool.
        .with_annotations(ToolAnnotations::new().read_only(true).open_world(false));
    let call = Tool::new(
        CALL,
        "Run a tool that tool_search found, with `arguments` matching its input schema: \
         exactly as calling it directly (same checks, approvals and audit).",
        schema::<CallArgs>(),
    )
    // No annotations: it may run any tool, which the protocol's defaults (not read-only,
    // destructive, not idempotent, open world) say without a byte.
    .with_title("Run a found tool");
    vec![search, call]
}

fn refused(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// `tool_search`'s answer among `visible`, the tools the caller may use, and — when it
/// asked to `activate` them — the names found, for the connection to list.
pub(crate) fn search(
    visible: &[ToolEntry],
    arguments: &Value,
    groups: impl Fn(&[ToolEntry]) -> Vec<ToolGroup>,
) -> (CallToolResult, Option<Vec<String>>) {
    let activate = match &arguments["activate"] {
        Value::Null | Value::Bool(false) => false,
        Value::Bool(true) => true,
        other => {
            return (
                refused(format!("`activate` is true or false, not {other}")),
                None,
            );
        }
    };
    let result = search_only(visible, arguments, groups);
    let found = activate.then(|| {
        result
            .structured_content
            .as_ref()
            .and_then(|s| s["results"].as_array())
            .map(|results| {
                results
                    .iter()
                    .filter_map(|r| r["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    });
    (result, found)
}

/// Says in `result` that nothing was added: the 2026-07-28 era over HTTP keeps no list
/// between requests.
pub(crate) fn say_not_kept(result: &mut CallToolResult) {
    result.content.push(ContentBlock::text(
        "Nothing was added to your tools/list: over HTTP in the 2026-07-28 protocol no list \
         is kept between requests. Call the tools found directly by name, or with tool_call.",
    ));
    if let Some(Value::Object(structured)) = &mut result.structured_content {
        structured.insert("activated".into(), json!([]));
    }
}

/// Says in `result` which tools were added to the list.
pub(crate) fn say_activated(result: &mut CallToolResult, added: &[String]) {
    let line = if added.is_empty() {
        "Nothing new was added to your tools/list.".to_string()
    } else {
        format!(
            "Added to your tools/list: {} (call them directly).",
            added.join(", ")
        )
    };
    result.content.push(ContentBlock::text(line));
    if let Some(Value::Object(structured)) = &mut result.structured_content {
        structured.insert("activated".into(), json!(added));
    }
}

fn search_only(
    visible: &[ToolEntry],
    arguments: &Value,
    groups: impl Fn(&[ToolEntry]) -> Vec<ToolGroup>,
) -> CallToolResult {
    let Some(query) = arguments["query"].as_str().filter(|q| !q.trim().is_empty()) else {
        return refused(
            "tool_search needs `query`: what you want to do, e.g. {\"query\": \"replace text in a file\"}"
                .into(),
        );
    };
    if query.len() > MAX_QUERY {
        return refused(format!(
            "the query is {} bytes; tool_search takes at most {MAX_QUERY}",
            query.len()
        ));
    }
    let limit = match &arguments["limit"] {
        Value::Null => DEFAULT_LIMIT,
        value => match value.as_u64() {
            Some(n @ 1..) if n <= tool_search::MAX_SEARCH_RESULTS as u64 => n as usize,
            _ => {
                return refused(format!(
                    "`limit` {value} is not a whole number from 1 to {}",
                    tool_search::MAX_SEARCH_RESULTS
                ));
            }
        },
    };
    if let Some(Value::Object(extra)) = Some(arguments)
        && let Some(unknown) = extra
            .keys()
            .find(|k| !matches!(k.as_str(), "query" | "limit" | "activate"))
    {
        return refused(format!(
            "tool_search takes `query`, `limit` and `activate`, not `{unknown}`"
        ));
    }
    let found = tool_search::search(visible, query, limit);
    if found.is_empty() {
        // The same shape as a hit, so a program reading `results` needs no special case.
        let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
            "No tool matches {query:?}. Try other words for what you want to do."
        ))]);
        result.structured_content = Some(json!({ "query": query, "results": [], "groups": [] }));
        return result;
    }
    let mut text = String::new();
    let mut results = Vec::with_capacity(found.len());
    for (entry, score) in &found {
        let result = tool_search::found_json(entry, *score);
        let spec = entry.spec();
        text.push_str(&format!(
            "{} ({}): {}\n  arguments: {}\n",
            spec.name,
            spec.group,
            result["summary"].as_str().unwrap_or_default(),
            result["input_schema"]
        ));
        results.push(result);
    }
    // What the groups of the tools found are for (their labels and descriptions).
    let entries: Vec<ToolEntry> = found.iter().map(|(entry, _)| entry.clone()).collect();
    let described: Vec<Value> = groups(&entries)
        .into_iter()
        .filter(|g| !g.description.is_empty())
        .map(|g| {
            text.push_str(&format!(
                "group {} ({}): {}\n",
                g.name, g.label, g.description
            ));
            json!({"name": g.name, "label": g.label, "description": g.description})
        })
        .collect();
    text.push_str("Run one with tool_call {\"name\": …, \"arguments\": {…}}.");
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content =
        Some(json!({ "query": query, "results": results, "groups": described }));
    result
}

/// The tool and arguments a `tool_call` names, or the error result for a call that names
/// none.
pub(crate) fn inner_call(arguments: Value) -> Result<(String, Value), Box<CallToolResult>> {
    let Value::Object(mut map) = arguments else {
        return Err(Box::new(refused("tool_call takes an object".into())));
    };
    if let Some(unknown) = map.keys().find(|k| *k != "name" && *k != "arguments") {
        return Err(Box::new(refused(format!(
            "tool_call takes `name` and `arguments`, not `{unknown}`"
        ))));
    }
    let name = match map.remove("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => {
            return Err(Box::new(refused(
                "tool_call needs `name`: a tool tool_search found, e.g. {\"name\": \"workspace_read\", \"arguments\": {\"path\": \"README.md\"}}"
                    .into(),
            )));
        }
    };
    if name == SEARCH || name == CALL {
        return Err(Box::new(refused(format!(
            "tool_call runs found tools, not `{name}`: call it directly"
        ))));
    }
    let arguments = match map.remove("arguments") {
        None | Some(Value::Null) => Value::Object(JsonObject::new()),
        Some(object @ Value::Object(_)) => object,
        Some(other) => {
            return Err(Box::new(refused(format!(
                "`arguments` of tool_call is an object matching the tool's input schema, not {other}"
            ))));
        }
    };
    Ok((name, arguments))
}

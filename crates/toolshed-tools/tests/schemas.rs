//! Every built-in tool's input schema is in the conservative dialect every model provider
//! accepts: no `$ref`, no type unions, no `oneOf`/`anyOf`/`allOf`, no exclusive bounds, no
//! `format` but `date-time`; an object at the top that refuses unknown properties; and a
//! description on every property but an enum and those whose name says it all
//! ([`SELF_DESCRIBING`]).
//! Defaults and bounds are keywords, not prose: no property description says "default",
//! every `default` is a value its own property accepts, and every integer has a `minimum`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

const FORBIDDEN: &[&str] = &[
    "$ref",
    "$defs",
    "definitions",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

/// Argument names that mean the same in every tool and need no description of their own
/// (the MCP door's instructions say once that paths are relative to the workspace): a
/// description on each would be the same words paid for again in every tool.
const SELF_DESCRIBING: &[&str] = &[
    "path",
    "workdir",
    "cmd",
    "command",
    "env",
    "session_id",
    "session",
    "id",
    "include_hidden",
    "respect_gitignore",
    "recursive",
    "overwrite",
    "reverse",
    "force",
    "replace_all",
    "create_parents",
    "parents",
    "multiline",
    "content",
    "patch",
    "timeout_ms",
    "max_output_bytes",
    "max_results",
    "max_chars",
    "max_entries",
    "max_matches",
];

fn lint(tool: &str, at: &str, schema: &Value, problems: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                let here = format!("{at}/{key}");
                // Inside `properties` the keys are argument names, not keywords.
                if at.ends_with("/properties") {
                    match value.get("description").and_then(Value::as_str) {
                        // An enum's values say what it picks among.
                        None if SELF_DESCRIBING.contains(&key.as_str())
                            || value.get("enum").is_some() => {}
                        None => problems.push(format!("{tool}: {here} has no description")),
                        Some(text) if mentions_default(text) => problems.push(format!(
                            "{tool}: {here} states a default in prose; put it in `default` \
                             (or say what leaving it out does)"
                        )),
                        Some(_) => {}
                    }
                    if let Some(default) = value.get("default") {
                        let mut own = value.clone();
                        own.as_object_mut().map(|m| m.remove("default"));
                        let accepts =
                            jsonschema::validator_for(&own).is_ok_and(|v| v.is_valid(default));
                        if !accepts {
                            problems.push(format!(
                                "{tool}: {here} has default {default}, which it refuses"
                            ));
                        }
                    }
                    if value.get("type").is_some_and(|t| t == "integer")
                        && value.get("minimum").is_none()
                    {
                        problems.push(format!("{tool}: {here} is an integer without a minimum"));
                    }
                    lint(tool, &here, value, problems);
                    continue;
                }
                if FORBIDDEN.contains(&key.as_str()) {
                    problems.push(format!("{tool}: {here} uses `{key}`"));
                }
                if key == "type" && !value.is_string() {
                    problems.push(format!("{tool}: {here} is not a single type"));
                }
                if key == "format" && value != "date-time" {
                    problems.push(format!("{tool}: {here} is format {value}"));
                }
                if !matches!(key.as_str(), "enum" | "default" | "examples" | "const") {
                    lint(tool, &here, value, problems);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                lint(tool, &format!("{at}/{i}"), item, problems);
            }
        }
        _ => {}
    }
}

/// Whether a description states a default in words ("default 30", "(default: x)").
fn mentions_default(text: &str) -> bool {
    text.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word == "default" || word == "defaults")
}

/// Every built-in plugin of the tool families: the core ones, downloads, mail, the
/// browser (off until enabled) and the language servers.
fn builtins() -> Vec<std::sync::Arc<dyn toolshed_core::Plugin>> {
    let services = toolshed_ops::Services::new(toolshed_ops::Ops::memory());
    let mut plugins = toolshed_tools::system_plugins(&services);
    plugins.push(toolshed_download::plugin(&services));
    plugins.push(toolshed_mail::plugin(&services));
    plugins.push(toolshed_browser::plugin(
        &services,
        toolshed_browser::Settings::default(),
    ));
    plugins.push(toolshed_tools::skills::plugin(Vec::new()));
    plugins.push(toolshed_lsp::plugin(
        &services,
        toolshed_lsp::Settings::new(std::env::temp_dir()),
    ));
    plugins
}

#[test]
fn every_builtin_schema_is_in_the_conservative_dialect() {
    let mut problems = Vec::new();
    let mut count = 0;
    for plugin in builtins() {
        for tool in plugin.tools() {
            count += 1;
            let spec = tool.spec();
            let schema = &spec.input_schema;
            assert_eq!(schema["type"], "object", "{}", spec.name);
            if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
                problems.push(format!(
                    "{}: top level lacks additionalProperties: false",
                    spec.name
                ));
            }
            jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            lint(&spec.name, "", schema, &mut problems);
            assert!(!spec.description.trim().is_empty(), "{}", spec.name);
            assert!(!spec.group.is_empty(), "{} has no group", spec.name);
        }
    }
    assert!(count >= 7);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn plugin_ids_and_tool_names_follow_the_rules() {
    for plugin in builtins() {
        let m = plugin.manifest();
        assert!(m.id.starts_with("system."), "{}", m.id);
        assert!(toolshed_core::is_valid_plugin_id(&m.id), "{}", m.id);
        assert_eq!(m.tools.len(), plugin.tools().len(), "{}", m.id);
        for tool in &m.tools {
            assert!(
                tool.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                tool.name
            );
        }
    }
}

/// The most bytes one built-in tool may take in `tools/list` (name, title, description,
/// schemas and annotations, as compact JSON): what a model pays for it on every turn.
const TOOL_BUDGET: usize = 1536;

/// Tools over [`TOOL_BUDGET`], each with the size it may not grow past. `text` is seven
/// operations in one tool, with the sixteen arguments between them; split per operation,
/// the same would cost more.
const OVER_BUDGET: &[(&str, usize)] = &[("text", 1900)];

/// The bytes `spec` takes in a `tools/list` reply.
fn listed_bytes(spec: &toolshed_core::ToolSpec) -> usize {
    let hints: serde_json::Map<String, Value> = spec
        .annotations
        .stated()
        .into_iter()
        .map(|(hint, value)| (hint.to_string(), value.into()))
        .collect();
    let mut tool = serde_json::json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
    });
    if !hints.is_empty() {
        tool["annotations"] = hints.into();
    }
    if let Some(title) = &spec.title {
        tool["title"] = title.clone().into();
    }
    if let Some(schema) = &spec.output_schema {
        tool["outputSchema"] = schema.clone();
    }
    serde_json::to_vec(&tool).unwrap().len()
}

#[test]
fn no_builtin_tool_grows_past_its_byte_budget() {
    let mut sizes = Vec::new();
    for plugin in builtins() {
        for tool in plugin.tools() {
            sizes.push((tool.spec().name.clone(), listed_bytes(tool.spec())));
        }
    }
    sizes.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    let total: usize = sizes.iter().map(|(_, n)| n).sum();
    eprintln!("built-in catalog: {} tools, {total} bytes", sizes.len());
    for (name, bytes) in &sizes {
        eprintln!("  {bytes:>6}  {name}");
    }
    let problems: Vec<String> = sizes
        .iter()
        .filter_map(|(name, bytes)| {
            let limit = OVER_BUDGET
                .iter()
                .find(|(n, _)| n == name)
                .map_or(TOOL_BUDGET, |(_, limit)| *limit);
            (*bytes > limit).then(|| format!("{name}: {bytes} bytes, over its {limit}"))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // A tool brought under the budget leaves the list of exceptions.
    for (name, _) in OVER_BUDGET {
        let bytes = sizes.iter().find(|(n, _)| n == name).map_or(0, |(_, b)| *b);
        assert!(
            bytes > TOOL_BUDGET,
            "{name} is {bytes} bytes, within the budget: remove it from OVER_BUDGET"
        );
    }
}

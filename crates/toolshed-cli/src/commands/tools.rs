//! `toolshed tools list|show`.

use serde_json::json;
use toolshed_host::Host;
use toolshed_host::registry::ToolEntry;

use crate::Failure;
use crate::render::{print_json, summary, table};

fn visible(host: &Host) -> Vec<ToolEntry> {
    host.registry()
        .tools()
        .into_iter()
        .filter(|t| host.dispatcher().visible(t, None))
        .collect()
}

fn describe(host: &Host, entry: &ToolEntry) -> serde_json::Value {
    let mut value = serde_json::to_value(entry.spec()).unwrap_or_default();
    if let Some(obj) = value.as_object_mut() {
        obj.insert("plugin".into(), json!(entry.plugin_id));
        let unavailable = host.registry().unavailable(entry);
        obj.insert("available".into(), json!(unavailable.is_none()));
        if let Some((reason, _)) = unavailable {
            obj.insert("unavailable_reason".into(), json!(reason));
        }
    }
    value
}

/// Lists visible tools, optionally of one group.
pub fn list(host: &Host, json: bool, group: Option<&str>) -> Result<(), Failure> {
    let tools: Vec<ToolEntry> = visible(host)
        .into_iter()
        .filter(|t| group.is_none_or(|g| t.spec().group == g))
        .collect();
    if json {
        return print_json(&tools.iter().map(|t| describe(host, t)).collect::<Vec<_>>());
    }
    if tools.is_empty() {
        let groups: std::collections::BTreeSet<String> = visible(host)
            .iter()
            .map(|t| t.spec().group.clone())
            .collect();
        outln!(
            "No tools{}. Groups: {}",
            group
                .map(|g| format!(" in group `{g}`"))
                .unwrap_or_default(),
            groups.into_iter().collect::<Vec<_>>().join(", ")
        );
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            let spec = t.spec();
            let mut desc = summary(&spec.description, 70);
            if host.registry().unavailable(t).is_some() {
                desc = format!("[unconfigured] {desc}");
            }
            vec![
                spec.name.clone(),
                spec.group.clone(),
                t.plugin_id.clone(),
                desc,
            ]
        })
        .collect();
    out!(
        "{}",
        table(&["NAME", "GROUP", "PLUGIN", "DESCRIPTION"], &rows)
    );
    Ok(())
}

/// Shows one tool.
pub fn show(host: &Host, name: &str, json: bool) -> Result<(), Failure> {
    let entry = host
        .registry()
        .lookup(name)
        .filter(|t| host.dispatcher().visible(t, None))
        .ok_or_else(|| {
            let names: Vec<String> = visible(host)
                .iter()
                .map(|t| t.spec().name.clone())
                .collect();
            let close = toolshed_host::closest(name, names.iter().map(String::as_str), 3);
            let hint = if close.is_empty() {
                "; `toolshed tools list` shows every tool".to_string()
            } else {
                format!("; did you mean {}?", close.join(", "))
            };
            Failure::Runtime(format!("no tool named `{name}`{hint}"))
        })?;
    if json {
        return print_json(&describe(host, &entry));
    }
    let spec = entry.spec();
    let a = &spec.annotations;
    outln!(
        "{}{}",
        spec.name,
        spec.title
            .as_ref()
            .map(|t| format!(" — {t}"))
            .unwrap_or_default()
    );
    outln!(
        "plugin: {}   group: {}   danger: {:?}",
        entry.plugin_id,
        spec.group,
        spec.danger
    );
    outln!(
        "read-only: {}   destructive: {}   idempotent: {}   open-world: {}",
        a.read_only,
        a.destructive,
        a.idempotent,
        a.open_world
    );
    if let Some(ms) = spec.default_timeout_ms {
        outln!("default timeout: {ms} ms");
    }
    if let Some((reason, _)) = host.registry().unavailable(&entry) {
        outln!("unavailable: {reason}");
    }
    outln!("\n{}\n", spec.description);
    outln!("input schema:");
    print_json(&spec.input_schema)
}

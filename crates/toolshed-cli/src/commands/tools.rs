//! `toolshed tools list|show`.

use serde_json::json;
use toolshed_host::Host;
use toolshed_host::registry::ToolEntry;

use crate::Failure;
use crate::render::{print_json, summary, table};

fn visible(host: &Host) -> Vec<ToolEntry> {
    visible_with(host, None)
}

/// The tools a caller using `profile` sees.
fn visible_with(host: &Host, profile: Option<&str>) -> Vec<ToolEntry> {
    host.catalog()
        .tools()
        .into_iter()
        .filter(|t| host.dispatcher().visible(t, profile))
        .collect()
}

fn describe(host: &Host, entry: &ToolEntry) -> serde_json::Value {
    let mut value = serde_json::to_value(entry.spec()).unwrap_or_default();
    if let Some(obj) = value.as_object_mut() {
        obj.insert("plugin".into(), json!(entry.plugin_id));
        if let Some(group) = host.catalog().groups(std::slice::from_ref(entry)).pop() {
            obj.insert("group_label".into(), json!(group.label));
            obj.insert("group_description".into(), json!(group.description));
        }
        let unavailable = host.catalog().unavailable(entry);
        obj.insert("available".into(), json!(unavailable.is_none()));
        if let Some((reason, _)) = unavailable {
            obj.insert("unavailable_reason".into(), json!(reason));
        }
    }
    value
}

/// The sandbox mode a caller's calls run in — the host's, narrowed by its profile and its
/// token (`sandbox:MODE`) — and what narrowed it; policy rules with `sandbox` may narrow
/// single calls further (`toolshed policy test` says).
pub(crate) fn effective_sandbox(
    host: &Host,
    profile: Option<&str>,
    caller: Option<&toolshed_host::identity::Caller>,
) -> (String, Vec<String>) {
    use toolshed_ops::sandbox::SandboxMode;
    let config = &host.config().config;
    let host_mode = config.sandbox.mode().unwrap_or_default();
    let mut mode = host_mode;
    let mut why = Vec::new();
    let from_profile = profile
        .and_then(|p| config.profiles.get(p))
        .and_then(|p| p.sandbox.as_deref())
        .and_then(|m| SandboxMode::parse(m).ok());
    if let Some(m) = from_profile.filter(|m| *m < mode) {
        mode = m;
        why.push(format!("profile {}", profile.unwrap_or_default()));
    }
    if let Some(m) = caller
        .and_then(|c| c.tools.as_ref())
        .and_then(|t| t.sandbox)
        .filter(|m| *m < mode)
    {
        mode = m;
        why.push(format!("token scope sandbox:{}", m.as_str()));
    }
    if mode < host_mode {
        why.push(format!("the host runs {}", host_mode.as_str()));
    }
    (mode.as_str().to_string(), why)
}

/// The profiles and agent tokens that run narrower than the host, one line each.
pub(crate) fn narrowing(host: &Host) -> Vec<String> {
    let config = &host.config().config;
    let mut lines: Vec<String> = config
        .profiles
        .iter()
        .filter_map(|(name, p)| p.sandbox.as_ref().map(|m| format!("profile {name}: {m}")))
        .collect();
    if let Ok(tokens) = host.tokens().list() {
        for token in tokens.iter().filter(|t| t.revoked_ms.is_none()) {
            if let Some(mode) = token
                .scopes
                .iter()
                .find_map(|s| s.strip_prefix(toolshed_host::identity::SANDBOX_SCOPE))
            {
                lines.push(format!("token {} ({}): {mode}", token.id, token.owner));
            }
        }
    }
    lines
}

/// Lists visible tools, optionally of one group.
/// Which tools `tools list` shows.
pub(crate) struct Filter<'a> {
    /// Only this group.
    pub group: Option<&'a str>,
    /// Only this plane (`execution`, `execution_runtime`, `program`).
    pub plane: Option<&'a str>,
}

/// The plane `name` means: toolshed's names, and Fenix's `execution_runtime`.
pub(crate) fn parse_plane(name: &str) -> Result<toolshed_core::Plane, Failure> {
    match name {
        "execution" | "execution_runtime" => Ok(toolshed_core::Plane::Execution),
        "program" => Ok(toolshed_core::Plane::Program),
        other => Err(Failure::Usage(format!(
            "--plane `{other}` is not a plane: give execution (or execution_runtime) or program"
        ))),
    }
}

/// The tools `caller` may use, as `profile` narrows them.
fn usable(
    host: &Host,
    profile: Option<&str>,
    caller: Option<&toolshed_host::identity::Caller>,
) -> Vec<ToolEntry> {
    visible_with(host, profile)
        .into_iter()
        .filter(|t| {
            caller.and_then(|c| c.tools.as_ref()).is_none_or(|rules| {
                rules
                    .refuse(&toolshed_host::Subject::new(t.spec(), &t.plugin_id))
                    .is_none()
            })
        })
        .collect()
}

/// `toolshed tools groups`: the operator groups, with labels and descriptions.
pub(crate) fn groups(
    host: &Host,
    json: bool,
    caller: Option<&toolshed_host::identity::Caller>,
) -> Result<(), Failure> {
    let groups = host.catalog().groups(&usable(host, None, caller));
    if json {
        return print_json(&groups);
    }
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            vec![
                g.name.clone(),
                g.label.clone(),
                g.tools.len().to_string(),
                summary(&g.description, 80),
            ]
        })
        .collect();
    out!(
        "{}",
        table(&["GROUP", "LABEL", "TOOLS", "DESCRIPTION"], &rows)
    );
    Ok(())
}

pub(crate) fn list(
    host: &Host,
    json: bool,
    filter: Filter<'_>,
    profile: Option<&str>,
    size: bool,
    caller: Option<&toolshed_host::identity::Caller>,
) -> Result<(), Failure> {
    if let Some(name) = profile {
        super::mcp::check_profile(host, name)?;
    }
    let plane = filter.plane.map(parse_plane).transpose()?;
    let group = filter.group;
    let tools: Vec<ToolEntry> = usable(host, profile, caller)
        .into_iter()
        .filter(|t| group.is_none_or(|g| t.spec().group == g))
        .filter(|t| plane.is_none_or(|p| t.spec().plane == p))
        .collect();
    let (mode, why) = effective_sandbox(host, profile, caller);
    if caller.is_some() || !why.is_empty() {
        // On stderr: the table (or JSON) on stdout stays as it is.
        eprintln!(
            "sandbox: {mode}{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            }
        );
    }
    let bytes = |t: &ToolEntry| listed_bytes(t.spec());
    if json {
        return print_json(
            &tools
                .iter()
                .map(|t| {
                    let mut value = describe(host, t);
                    if size {
                        value["listed_bytes"] = json!(bytes(t));
                    }
                    value
                })
                .collect::<Vec<_>>(),
        );
    }
    if tools.is_empty() {
        let groups: std::collections::BTreeSet<String> = visible(host)
            .iter()
            .map(|t| t.spec().group.clone())
            .collect();
        outln!(
            "No tools{}{}. Groups: {}",
            group
                .map(|g| format!(" in group `{g}`"))
                .unwrap_or_default(),
            filter
                .plane
                .map(|p| format!(" on the {p} plane"))
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
            if host.catalog().unavailable(t).is_some() {
                desc = format!("[unconfigured] {desc}");
            }
            let mut row = vec![spec.name.clone(), spec.group.clone(), t.plugin_id.clone()];
            if size {
                row.push(bytes(t).to_string());
            }
            row.push(desc);
            row
        })
        .collect();
    let headers: &[&str] = if size {
        &["NAME", "GROUP", "PLUGIN", "BYTES", "DESCRIPTION"]
    } else {
        &["NAME", "GROUP", "PLUGIN", "DESCRIPTION"]
    };
    out!("{}", table(headers, &rows));
    if size {
        // What an MCP client is sent: the tools that can work (unless `[mcp]
        // list_unconfigured`), as one `tools` array.
        let list_unconfigured = host.config().config.mcp.list_unconfigured;
        let listed: Vec<serde_json::Value> = tools
            .iter()
            .filter(|t| list_unconfigured || host.catalog().unavailable(t).is_none())
            .map(|t| toolshed_mcp::listed_tool(t.spec()))
            .collect();
        let total = serde_json::to_vec(&listed).map_or(0, |v| v.len());
        outln!(
            "tools/list{}: {} tools, {total} bytes (about {} tokens)",
            profile
                .map(|p| format!(" with --profile {p}"))
                .unwrap_or_default(),
            listed.len(),
            total / 4
        );
    }
    Ok(())
}

/// The bytes `spec` takes in a `tools/list` reply.
fn listed_bytes(spec: &toolshed_core::ToolSpec) -> usize {
    serde_json::to_vec(&toolshed_mcp::listed_tool(spec)).map_or(0, |v| v.len())
}

/// Shows one tool.
pub(crate) fn show(host: &Host, name: &str, json: bool) -> Result<(), Failure> {
    let entry = host
        .catalog()
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
    if let Some((reason, _)) = host.catalog().unavailable(&entry) {
        outln!("unavailable: {reason}");
    }
    outln!("\n{}\n", spec.description);
    outln!("input schema:");
    print_json(&spec.input_schema)
}

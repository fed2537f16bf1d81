//! `toolshed doctor`: is everything in order, and if not, what to do.

use serde::Serialize;
use toolshed_host::registry::{Level, find_on_path};
use toolshed_host::{Host, PluginState};

use crate::Failure;
use crate::render::print_json;

#[derive(Debug, Serialize)]
struct Check {
    area: &'static str,
    status: Status,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Warning,
    Error,
}

fn checks(host: &Host) -> Vec<Check> {
    let mut out = Vec::new();
    let mut push = |area, status, message: String| {
        out.push(Check {
            area,
            status,
            message,
        })
    };

    let config = host.config();
    let layers = if config.layers.is_empty() {
        "defaults only".to_string()
    } else {
        config.layers.join(", ")
    };
    push("config", Status::Ok, format!("layers read: {layers}"));
    for key in &config.unknown_keys {
        push(
            "config",
            Status::Warning,
            format!("unknown key `{}` in {}; it is ignored", key.key, key.source),
        );
    }
    for ignored in &config.workspace_ignored {
        push(
            "config",
            Status::Warning,
            format!(
                "`{}` in {} is ignored: it {} and the workspace is not trusted \
                 (trusted_workspaces in your own config)",
                ignored.key, ignored.source, ignored.why
            ),
        );
    }
    let env = host.env_overlay();
    for problem in &env.problems {
        push("env", Status::Warning, problem.clone());
    }
    let sources = env.sources();
    if !sources.is_empty() {
        // Names and where each value comes from; never a value.
        let listed: Vec<String> = sources
            .iter()
            .map(|s| {
                // The layer as the workspace names it (`agent_program_versions/v1/.env`).
                let path = std::path::Path::new(&s.source);
                let file = path.strip_prefix(host.workspace()).map_or_else(
                    |_| {
                        path.file_name()
                            .map_or(s.source.clone(), |f| f.to_string_lossy().into_owned())
                    },
                    |rel| rel.display().to_string(),
                );
                format!("{} ({file})", s.name)
            })
            .collect();
        push(
            "env",
            Status::Ok,
            format!(
                "{} variable(s) from the workspace's .env files, under the process environment: {}{}",
                sources.len(),
                listed.join(", "),
                if env.trusted {
                    ""
                } else {
                    "; commands see them, but plugins' env contracts and the web tools' keys do not: the workspace is not trusted (trusted_workspaces in your own config)"
                }
            ),
        );
    }
    let contributed = host.command_env().contributed();
    if !contributed.is_empty() {
        let listed: Vec<String> = contributed
            .iter()
            .map(|c| format!("{} (plugin {})", c.name, c.plugin))
            .collect();
        push(
            "env",
            Status::Ok,
            format!(
                "{} variable(s) plugins granted shell-env add to commands, over the .env files: {}                  (a server's session layers: GET /api/v1/env)",
                contributed.len(),
                listed.join(", ")
            ),
        );
    }
    for widening in &config.widening {
        push(
            "config",
            Status::Ok,
            format!(
                "`{}` is set by {}: it {}",
                widening.key, widening.source, widening.why
            ),
        );
    }
    if config.workspace_trusted {
        push(
            "config",
            Status::Warning,
            "the workspace's toolshed.toml is trusted: it may widen what tools do".into(),
        );
    }

    // A remote workspace is named by its URL (its root here is the local state's).
    let shown = host.services().ops.files.root_display();
    let local = host.workspace().display().to_string();
    let (remote, workspace) = if toolshed_ops::remote::url::is_remote(&shown) {
        (
            true,
            format!("{shown} (this host's own state for it: {local})"),
        )
    } else {
        // With its further roots, when it has some (`@lib: /path`).
        let mut shown = local;
        for (name, path) in host.services().ops.files.further_roots() {
            shown.push_str(&format!(", @{name}: {path}"));
        }
        (false, shown)
    };
    push("workspace", Status::Ok, workspace);
    let on = if remote {
        format!(" on {shown}")
    } else {
        String::new()
    };
    match host.services().ops.process.check_sandbox() {
        None => push(
            "sandbox",
            Status::Warning,
            "mode full-access: commands run without a sandbox".into(),
        ),
        Some(Ok(e)) => push(
            "sandbox",
            Status::Ok,
            format!(
                "mode {}{on} · network {} · {}",
                e.mode.as_str(),
                e.network.as_str(),
                e.enforced.join(", ")
            ),
        ),
        Some(Err(e)) => {
            push("sandbox", Status::Error, e.to_string());
            if let (false, Some(advice)) = (remote, super::sandbox::pod_advice()) {
                push("pod", Status::Error, advice.into());
            }
        }
    }
    // Descriptors: raised at start to the hard limit; what that leaves for connections.
    let nofile = toolshed_ops::raise_descriptor_limit();
    let configured = host.config().config.server.max_connections;
    let connections = toolshed_server::connection_cap(configured, nofile.now);
    let raised = if nofile.now > nofile.before {
        format!("raised from {} to {} at start", nofile.before, nofile.now)
    } else {
        format!("{} (the hard limit)", nofile.now)
    };
    push(
        "descriptors",
        if connections < configured {
            Status::Warning
        } else {
            Status::Ok
        },
        if connections < configured {
            format!(
                "open files: {raised}; `serve` takes at most {connections} connections (half of them), not [server] max_connections = {configured}: raise the hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit)"
            )
        } else {
            format!("open files: {raised}; `serve` takes up to {configured} connections")
        },
    );
    // Who runs narrower than the host: profiles, then the agent tokens.
    let narrowing = super::tools::narrowing(host);
    if !narrowing.is_empty() {
        push("sandbox narrowed", Status::Ok, narrowing.join("; "));
    }
    #[cfg(feature = "browser")]
    {
        let (status, message) = browser_check(host, &config.config);
        push("browser", status, message);
    }
    #[cfg(not(feature = "browser"))]
    push(
        "browser",
        Status::Ok,
        "the browser tools are not in this build (cargo feature `browser`)".into(),
    );
    let state = host.state_info();
    match state.schema_version() {
        Ok(v) => push(
            "data dir",
            Status::Ok,
            format!(
                "{} (state database {}, schema version {v})",
                host.data_dir().display(),
                state.path().display()
            ),
        ),
        Err(e) => push("data dir", Status::Error, e.to_string()),
    }

    let plugins = host.plugins().list();
    let running = plugins
        .iter()
        .filter(|p| p.state == PluginState::Running)
        .count();
    push(
        "plugins",
        Status::Ok,
        format!("{} found, {running} running", plugins.len()),
    );
    for p in &plugins {
        let status = match p.state {
            PluginState::Error => Status::Error,
            PluginState::Degraded => Status::Warning,
            _ => continue,
        };
        let reason = p.reason.clone().unwrap_or_default();
        push(
            "plugins",
            status,
            format!("{} is {}: {reason}", p.id, p.state.as_str()),
        );
    }
    // Tools that cannot work yet: MCP clients do not see them ([mcp] list_unconfigured).
    let catalog = host.catalog();
    for tool in catalog.tools() {
        if let Some((reason, _)) = catalog.unavailable(&tool) {
            push(
                "tools",
                Status::Warning,
                format!("{} is unconfigured: {reason}", tool.spec().name),
            );
        }
    }
    for d in host.plugins().diagnostics() {
        let status = if d.level == Level::Error {
            Status::Error
        } else {
            Status::Warning
        };
        push("manifests", status, d.to_string());
    }

    for p in &plugins {
        let Some(manifest) = host.plugins().manifest(&p.id) else {
            continue;
        };
        for var in &manifest.env {
            let set = host
                .env_overlay()
                .get(&var.name)
                .is_some_and(|v| !v.is_empty());
            let (status, word) = match (set, var.required) {
                (true, _) => (Status::Ok, "set"),
                (false, true) => (Status::Error, "missing (required)"),
                (false, false) => (Status::Ok, "not set (optional)"),
            };
            push("env", status, format!("{}: {} {word}", p.id, var.name));
        }
        // Which runtime runs a JavaScript plugin, and whether Node.js is here for those
        // that need it.
        if manifest.kind == toolshed_core::PluginKind::Js
            && let Some(dir) = &p.dir
        {
            let runtime = toolshed_core::runtime::describe(dir);
            let status = if runtime.starts_with("node") && find_on_path("node").is_none() {
                Status::Error
            } else {
                Status::Ok
            };
            let missing = if status == Status::Error {
                "; Node.js is not installed (apt-get install nodejs)"
            } else {
                ""
            };
            push("runtime", status, format!("{}: {runtime}{missing}", p.id));
        }
        for req in &manifest.requirements {
            let (status, word) = match (find_on_path(&req.binary), req.optional) {
                (Some(path), _) => (Status::Ok, format!("found at {}", path.display())),
                (None, false) => (Status::Error, "not found on PATH (required)".to_string()),
                (None, true) => (Status::Warning, "not found on PATH (optional)".to_string()),
            };
            push(
                "requirements",
                status,
                format!("{}: {} {word}", p.id, req.binary),
            );
        }
    }
    out
}

/// Whether the browser tools can run here: Chromium found, its own sandbox, the plugin's state.
#[cfg(feature = "browser")]
fn browser_check(host: &Host, config: &toolshed_host::Config) -> (Status, String) {
    let browser_state = host
        .plugins()
        .list()
        .into_iter()
        .find(|p| p.id == toolshed_browser::PLUGIN_ID)
        .map(|p| p.state);
    let enabled = match browser_state {
        Some(PluginState::Disabled) => {
            "system.browser is disabled (toolshed plugins enable system.browser)"
        }
        Some(_) => "system.browser is enabled",
        None => "system.browser is not in this build",
    };
    match toolshed_browser::detect(
        config
            .section::<toolshed_browser::Settings>()
            .executable
            .as_deref(),
    ) {
        Ok((path, version)) => {
            let own = if toolshed_browser::own_sandbox_works() {
                "Chromium's own sandbox on"
            } else {
                "Chromium's own sandbox cannot run as root here, so Chromium runs with \
                 --no-sandbox, inside toolshed's command sandbox"
            };
            (Status::Ok, format!("{version} at {path}; {own}; {enabled}"))
        }
        Err(why) => (Status::Warning, format!("{why}; {enabled}")),
    }
}

/// Runs every check; exits 1 when any is an error.
pub(crate) fn run(host: &Host, json: bool) -> Result<(), Failure> {
    let checks = checks(host);
    let errors = checks.iter().filter(|c| c.status == Status::Error).count();
    let warnings = checks
        .iter()
        .filter(|c| c.status == Status::Warning)
        .count();
    if json {
        print_json(&serde_json::json!({ "ok": errors == 0, "checks": checks }))?;
    } else {
        for c in &checks {
            let mark = match c.status {
                Status::Ok => "ok  ",
                Status::Warning => "warn",
                Status::Error => "FAIL",
            };
            outln!("{mark}  {:<13} {}", c.area, c.message);
        }
        outln!(
            "\n{}, {}",
            toolshed_core::counted(errors, "error", "errors"),
            toolshed_core::counted(warnings, "warning", "warnings")
        );
    }
    if errors > 0 {
        Err(Failure::Runtime(String::new()))
    } else {
        Ok(())
    }
}

//! `toolshed mcp add|list|remove`: the MCP servers toolshed mounts as plugins (kind `mcp`).

use serde_json::json;
use toolshed_core::PluginKind;
use toolshed_host::{Host, PluginState};

use crate::Failure;
use crate::cli::{McpAddArgs, McpCommand};
use crate::render::{print_json, table};

/// Runs one `toolshed mcp` management command.
pub async fn run(host: &Host, command: McpCommand) -> Result<(), Failure> {
    match command {
        McpCommand::Add(args) => add(host, args).await,
        McpCommand::List { json } => list(host, json),
        McpCommand::Remove { name } => remove(host, &name).await,
    }
}

/// The plugin id of server `name` (`mcp.NAME`; an id given whole is kept).
fn plugin_id(name: &str) -> String {
    if name.starts_with("mcp.") {
        name.to_string()
    } else {
        format!("mcp.{name}")
    }
}

/// A TOML basic string: JSON's string escapes are all TOML's too.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// The manifest of server `name` and the secrets to store for it (config key, value).
fn manifest(name: &str, args: &McpAddArgs) -> Result<(String, Vec<(String, String)>), Failure> {
    let id = plugin_id(name);
    let prefix = id.trim_start_matches("mcp.");
    if prefix.is_empty()
        || prefix.len() > 32
        || !prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err(Failure::Usage(format!(
            "`{name}` is not a server name: use 1 to 32 of a-z, 0-9, `_`, `-` (its tools \
             become NAME__TOOL)"
        )));
    }
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| Failure::Usage("give the server's command after `--`".into()))?;
    let mut text = format!(
        "id = {}\nversion = \"1.0.0\"\nname = {}\nkind = \"mcp\"\ndescription = {}\n",
        toml_string(&id),
        toml_string(name),
        toml_string(&format!(
            "The MCP server `{}`, mounted by `toolshed mcp add`.",
            args.command.join(" ")
        )),
    );
    let mut env_lines = String::new();
    let mut secrets = Vec::new();
    let mut fields = String::new();
    for pair in &args.env {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| Failure::Usage(format!("--env `{pair}` is not KEY=VALUE")))?;
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Failure::Usage(format!(
                "--env `{key}` is not a variable name: use letters, digits and `_`"
            )));
        }
        if toolshed_ops::process::is_secret_name(key) {
            // The value goes to the secret store; the file names it only.
            let field = key.to_ascii_lowercase();
            fields.push_str(&format!(
                "\n[[config]]\nkey = {}\nlabel = {}\ntype = \"string\"\nsecret = true\n",
                toml_string(&field),
                toml_string(key)
            ));
            env_lines.push_str(&format!(
                "{} = {}\n",
                toml_string(key),
                toml_string(&format!("${{config.{field}}}"))
            ));
            secrets.push((field, value.to_string()));
        } else {
            env_lines.push_str(&format!("{} = {}\n", toml_string(key), toml_string(value)));
        }
    }
    text.push_str(&fields);
    text.push_str(&format!("\n[mcp]\ncommand = {}\n", toml_string(program)));
    if !rest.is_empty() {
        let list: Vec<String> = rest.iter().map(|a| toml_string(a)).collect();
        text.push_str(&format!("args = [{}]\n", list.join(", ")));
    }
    if let Some(mode) = &args.sandbox {
        toolshed_ops::sandbox::SandboxMode::parse(mode).map_err(Failure::Usage)?;
        text.push_str(&format!("sandbox = {}\n", toml_string(mode)));
    }
    if !env_lines.is_empty() {
        text.push_str("\n[mcp.env]\n");
        text.push_str(&env_lines);
    }
    Ok((text, secrets))
}

async fn add(host: &Host, args: McpAddArgs) -> Result<(), Failure> {
    let id = plugin_id(&args.name);
    let (text, secrets) = manifest(&args.name, &args)?;
    let dir = tempfile_dir()?;
    std::fs::write(dir.join("plugin.toml"), text)
        .map_err(|e| Failure::Runtime(format!("cannot write the manifest: {e}")))?;
    // Secrets first, so that the server starts with them.
    for (key, value) in &secrets {
        host.store()
            .set_config_value(&id, key, &json!(value), true)
            .map_err(|e| Failure::Runtime(e.to_string()))?;
    }
    let request = host.install_request(
        dir.display().to_string(),
        Some(id.clone()),
        None,
        args.force,
    );
    let outcome = host
        .install_plugin(request, std::sync::Arc::new(|_line: String| {}))
        .await;
    let _ = std::fs::remove_dir_all(&dir);
    let installed = outcome.map_err(|e| Failure::Runtime(e.to_string()))?;
    // Loaded now, so that a server that cannot start says so here.
    let info = host
        .registry()
        .adopt(&installed.dir)
        .await
        .ok_or_else(|| Failure::Runtime(format!("`{id}` was installed but is not listed")))?;
    match (&info.state, &info.reason) {
        (PluginState::Running, _) => {
            outln!(
                "{id}: mounted {} ({})",
                toolshed_core::counted(info.tools.len(), "tool", "tools"),
                info.tools.join(", ")
            );
            Ok(())
        }
        (state, reason) => Err(Failure::Runtime(format!(
            "{id} was added but is in state `{}`: {}; fix it and run `toolshed plugins reload \
             {id}`, or `toolshed mcp remove {}`",
            state.as_str(),
            reason.as_deref().unwrap_or("no reason given"),
            args.name
        ))),
    }
}

/// A fresh private directory for the manifest being installed.
fn tempfile_dir() -> Result<std::path::PathBuf, Failure> {
    let dir = std::env::temp_dir().join(format!(
        "toolshed-mcp-add-{}-{}",
        std::process::id(),
        toolshed_host::now_ms()
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

fn list(host: &Host, json: bool) -> Result<(), Failure> {
    let servers: Vec<_> = host
        .registry()
        .plugins()
        .into_iter()
        .filter(|p| p.kind == PluginKind::Mcp)
        .collect();
    if json {
        return print_json(&json!({ "servers": servers }));
    }
    if servers.is_empty() {
        outln!("no MCP servers are mounted; add one with `toolshed mcp add NAME -- COMMAND ARGS…`");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|p| {
            let command = host
                .registry()
                .manifest(&p.id)
                .and_then(|m| m.mcp)
                .map(|m| {
                    std::iter::once(m.command)
                        .chain(m.args)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            vec![
                p.id.clone(),
                p.state.as_str().to_string(),
                p.tools.len().to_string(),
                command,
            ]
        })
        .collect();
    out!("{}", table(&["ID", "STATE", "TOOLS", "COMMAND"], &rows));
    for p in &servers {
        if let Some(reason) = &p.reason {
            outln!("{} ({}): {reason}", p.id, p.state.as_str());
        }
    }
    Ok(())
}

async fn remove(host: &Host, name: &str) -> Result<(), Failure> {
    let id = plugin_id(name);
    let known = host
        .registry()
        .plugins()
        .into_iter()
        .any(|p| p.id == id && p.kind == PluginKind::Mcp);
    if !known {
        return Err(Failure::Usage(format!(
            "no MCP server `{name}`; `toolshed mcp list` shows the mounted ones"
        )));
    }
    host.registry()
        .uninstall(&id)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    outln!("{id}: removed");
    Ok(())
}

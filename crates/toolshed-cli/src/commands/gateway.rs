//! `toolshed mcp add|list|remove|import`: the MCP servers toolshed mounts as plugins (kind
//! `mcp`).

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
        McpCommand::Import { file, force } => import(host, &file, force).await,
        McpCommand::Pin { name, accept, all } => pin(host, &name, &accept, all).await,
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

/// A server to mount.
struct NewServer {
    name: String,
    command: Vec<String>,
    /// A server reached over HTTP, with the headers sent to it.
    url: Option<String>,
    headers: Vec<(String, String)>,
    env: Vec<(String, String)>,
    sandbox: Option<String>,
    force: bool,
}

impl NewServer {
    fn from_args(args: McpAddArgs) -> Result<Self, Failure> {
        let pairs = |list: &[String], flag: &str| {
            list.iter()
                .map(|pair| {
                    pair.split_once('=')
                        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                        .ok_or_else(|| Failure::Usage(format!("{flag} `{pair}` is not NAME=VALUE")))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            name: args.name,
            command: args.command,
            url: args.url,
            headers: pairs(&args.headers, "--header")?,
            env: pairs(&args.env, "--env")?,
            sandbox: args.sandbox,
            force: args.force,
        })
    }
}

/// The manifest of a server and the secrets to store for it (config key, value).
fn manifest(args: &NewServer) -> Result<(String, Vec<(String, String)>), Failure> {
    let name = args.name.as_str();
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
    let what = match &args.url {
        Some(url) => url.clone(),
        None => args.command.join(" "),
    };
    let mut text = format!(
        "id = {}\nversion = \"1.0.0\"\nname = {}\nkind = \"mcp\"\ndescription = {}\n",
        toml_string(&id),
        toml_string(name),
        toml_string(&format!(
            "The MCP server `{what}`, mounted by `toolshed mcp add`."
        )),
    );
    let mut env_lines = String::new();
    let mut secrets = Vec::new();
    let mut fields = String::new();
    for (key, value) in &args.env {
        let (key, value) = (key.as_str(), value.as_str());
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Failure::Usage(format!(
                "variable `{key}` is not a name: use letters, digits and `_`"
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
    let mut header_lines = String::new();
    for (name, value) in &args.headers {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(Failure::Usage(format!(
                "header `{name}` is not a header name: use letters, digits and `-`"
            )));
        }
        if is_credential_header(name) {
            let field = format!("header_{}", name.to_ascii_lowercase().replace('-', "_"));
            fields.push_str(&format!(
                "\n[[config]]\nkey = {}\nlabel = {}\ntype = \"string\"\nsecret = true\n",
                toml_string(&field),
                toml_string(&format!("{name} header"))
            ));
            header_lines.push_str(&format!(
                "{} = {}\n",
                toml_string(name),
                toml_string(&format!("${{config.{field}}}"))
            ));
            secrets.push((field, value.clone()));
        } else {
            header_lines.push_str(&format!("{} = {}\n", toml_string(name), toml_string(value)));
        }
    }
    text.push_str(&fields);
    match &args.url {
        Some(url) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(Failure::Usage(format!(
                    "--url `{url}` is not an http:// or https:// URL"
                )));
            }
            text.push_str(&format!("\n[mcp]\nurl = {}\n", toml_string(url)));
        }
        None => {
            let (program, rest) = args.command.split_first().ok_or_else(|| {
                Failure::Usage("give the server's command after `--`, or its --url".into())
            })?;
            text.push_str(&format!("\n[mcp]\ncommand = {}\n", toml_string(program)));
            if !rest.is_empty() {
                let list: Vec<String> = rest.iter().map(|a| toml_string(a)).collect();
                text.push_str(&format!("args = [{}]\n", list.join(", ")));
            }
        }
    }
    if let Some(mode) = &args.sandbox {
        toolshed_ops::sandbox::SandboxMode::parse(mode).map_err(Failure::Usage)?;
        text.push_str(&format!("sandbox = {}\n", toml_string(mode)));
    }
    if !env_lines.is_empty() {
        text.push_str("\n[mcp.env]\n");
        text.push_str(&env_lines);
    }
    if !header_lines.is_empty() {
        text.push_str("\n[mcp.headers]\n");
        text.push_str(&header_lines);
    }
    Ok((text, secrets))
}

/// Whether a header carries a credential, whose value belongs in the secret store.
fn is_credential_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "authorization" | "cookie" | "proxy-authorization"
    ) || toolshed_ops::process::is_secret_name(&name.to_ascii_uppercase().replace('-', "_"))
}

async fn add(host: &Host, args: McpAddArgs) -> Result<(), Failure> {
    let server = NewServer::from_args(args)?;
    let info = mount(host, &server).await?;
    outln!(
        "{}: mounted {} ({})",
        info.id,
        toolshed_core::counted(info.tools.len(), "tool", "tools"),
        info.tools.join(", ")
    );
    Ok(())
}

/// Installs and starts server `server`: its plugin, running, or why not.
async fn mount(host: &Host, server: &NewServer) -> Result<toolshed_host::PluginInfo, Failure> {
    let id = plugin_id(&server.name);
    let (text, secrets) = manifest(server)?;
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
        server.force,
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
        (PluginState::Running, _) => Ok(info),
        (state, reason) => Err(Failure::Runtime(format!(
            "{id} was added but is in state `{}`: {}; fix it and run `toolshed plugins reload \
             {id}`, or `toolshed mcp remove {}`",
            state.as_str(),
            reason.as_deref().unwrap_or("no reason given"),
            server.name
        ))),
    }
}

/// A server name made from a name in another tool's config: lowercase, other characters
/// than a-z, 0-9, `_` and `-` replaced by `_`, at most 32 characters.
fn server_name(text: &str) -> String {
    let mut name: String = text
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(32);
    if name.is_empty() {
        "server".into()
    } else {
        name
    }
}

/// The most a config file to import may be.
const MAX_IMPORT_BYTES: u64 = 1024 * 1024;

/// Mounts every server of an `mcpServers` config (Claude Desktop, Claude Code's
/// `.mcp.json`, Cursor, Windsurf, …): each as `toolshed mcp add` would, secrets moved to the
/// secret store. Servers that cannot be mounted are reported and the rest go on.
async fn import(host: &Host, file: &std::path::Path, force: bool) -> Result<(), Failure> {
    let meta = std::fs::metadata(file)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", file.display())))?;
    if meta.len() > MAX_IMPORT_BYTES {
        return Err(Failure::Usage(format!(
            "{} is {} bytes; a config to import may be at most {MAX_IMPORT_BYTES}",
            file.display(),
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", file.display())))?;
    let config: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Usage(format!("{} is not JSON: {e}", file.display())))?;
    let servers = config
        .get("mcpServers")
        .or_else(|| config.get("servers"))
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| {
            Failure::Usage(format!(
                "{} has no `mcpServers` object (the form Claude Desktop, Claude Code and \
                 Cursor use: {{\"mcpServers\": {{\"NAME\": {{\"command\": …, \"args\": […]}}}}}})",
                file.display()
            ))
        })?;
    let (mut mounted, mut failed) = (0, 0);
    for (original, entry) in servers {
        let name = server_name(original);
        let outcome = match import_entry(&name, entry, force) {
            Ok(server) => mount(host, &server).await,
            Err(why) => Err(why),
        };
        match outcome {
            Ok(info) => {
                mounted += 1;
                outln!(
                    "{original}: mounted as {} ({})",
                    info.id,
                    toolshed_core::counted(info.tools.len(), "tool", "tools")
                );
            }
            Err(Failure::Usage(why) | Failure::Runtime(why)) => {
                failed += 1;
                outln!("{original}: not mounted: {why}");
            }
        }
    }
    outln!(
        "{} mounted, {} not",
        toolshed_core::counted(mounted, "server", "servers"),
        failed
    );
    if failed > 0 {
        return Err(Failure::Runtime(String::new()));
    }
    Ok(())
}

/// One `mcpServers` entry as a server to mount.
fn import_entry(name: &str, entry: &serde_json::Value, force: bool) -> Result<NewServer, Failure> {
    if let Some(url) = entry.get("url").or_else(|| entry.get("serverUrl")) {
        let url = url
            .as_str()
            .ok_or_else(|| Failure::Usage(format!("its url {url} is not a string")))?;
        if entry["type"].as_str() == Some("sse") {
            return Err(Failure::Usage(
                "it is an SSE server (the transport MCP retired); toolshed mounts servers \
                 over streamable HTTP or stdio"
                    .into(),
            ));
        }
        let headers = entry["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), String::from),
                )
            })
            .collect();
        return Ok(NewServer {
            name: name.to_string(),
            command: Vec::new(),
            url: Some(url.to_string()),
            headers,
            env: Vec::new(),
            sandbox: None,
            force,
        });
    }
    let command = entry["command"]
        .as_str()
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| Failure::Usage("it has no `command`".into()))?;
    let mut line = vec![command.to_string()];
    for arg in entry["args"].as_array().into_iter().flatten() {
        line.push(
            arg.as_str()
                .map(String::from)
                .ok_or_else(|| Failure::Usage(format!("argument {arg} is not a string")))?,
        );
    }
    let env = entry["env"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let value = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), value)
        })
        .collect();
    Ok(NewServer {
        name: name.to_string(),
        command: line,
        url: None,
        headers: Vec::new(),
        env,
        sandbox: None,
        force,
    })
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
                .map(|m| match m.url {
                    Some(url) => url,
                    None => std::iter::once(m.command)
                        .chain(m.args)
                        .collect::<Vec<_>>()
                        .join(" "),
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
    out!(
        "{}",
        table(&["ID", "STATE", "TOOLS", "COMMAND OR URL"], &rows)
    );
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

async fn pin(host: &Host, name: &str, accept: &[String], all: bool) -> Result<(), Failure> {
    let id = plugin_id(name);
    let info = host
        .registry()
        .plugins()
        .into_iter()
        .find(|p| p.id == id && p.kind == PluginKind::Mcp)
        .ok_or_else(|| {
            Failure::Usage(format!(
                "no MCP server `{name}`; `toolshed mcp list` shows the mounted ones"
            ))
        })?;
    let dir = info
        .dir
        .clone()
        .ok_or_else(|| Failure::Runtime(format!("`{id}` has no directory to keep pins in")))?;
    let path = toolshed_gateway::pins::pins_path(&dir);
    let mut pins = toolshed_gateway::pins::read(&path);
    if accept.is_empty() && !all {
        if pins.tools.is_empty() {
            outln!("{id}: no tools pinned yet (they are pinned when first mounted)");
        } else {
            let rows: Vec<Vec<String>> = pins
                .tools
                .iter()
                .map(|(tool, digest)| {
                    vec![tool.clone(), digest[..16.min(digest.len())].to_string()]
                })
                .collect();
            out!("{}", table(&["TOOL", "PINNED DIGEST"], &rows));
        }
        if let Some(reason) = &info.reason {
            outln!("{id} ({}): {reason}", info.state.as_str());
        }
        return Ok(());
    }
    let prefix = host
        .registry()
        .manifest(&id)
        .map(|m| toolshed_gateway::prefix(&m))
        .unwrap_or_default();
    if all {
        pins.tools.clear();
    } else {
        for tool in accept {
            let key = pins
                .tools
                .keys()
                .find(|k| *k == tool || format!("{prefix}__{k}") == *tool)
                .cloned()
                .ok_or_else(|| {
                    Failure::Usage(format!(
                        "`{tool}` is not a pinned tool of `{id}`; `toolshed mcp pin {name}` lists them"
                    ))
                })?;
            pins.tools.remove(&key);
        }
    }
    toolshed_gateway::pins::write(&path, &pins)
        .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", path.display())))?;
    // Started again, the server's current definitions are pinned anew.
    let info = host
        .registry()
        .reload(&id)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    outln!(
        "{id}: accepted; {} mounted, {}",
        toolshed_core::counted(info.tools.len(), "tool", "tools"),
        info.state.as_str()
    );
    if let Some(reason) = &info.reason {
        outln!("{id}: {reason}");
    }
    Ok(())
}

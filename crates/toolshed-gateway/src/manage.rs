//! Managing mounted servers — add, import, remove, pin — for every door that offers it
//! (`toolshed mcp …` on the command line, `/mcp-servers` over REST), so they behave alike.

use serde_json::json;
use toolshed_core::PluginKind;
use toolshed_host::{Host, PluginInfo, PluginState};

/// Why a server could not be managed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManageError {
    /// What was asked is not usable (a bad name, an unknown server); the message says what
    /// to give instead.
    #[error("{0}")]
    Usage(String),
    /// It was usable, but doing it failed (the server cannot start, a file cannot be
    /// written).
    #[error("{0}")]
    Failed(String),
}

/// The plugin id of server `name` (`mcp.NAME`; an id given whole is kept).
pub fn plugin_id(name: &str) -> String {
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
#[derive(Debug, Clone, Default)]
pub struct NewServer {
    /// Its name: its plugin is `mcp.NAME`, its tools `NAME__TOOL`.
    pub name: String,
    /// The command that runs it over stdio, and its arguments.
    pub command: Vec<String>,
    /// The URL of a server reached over streamable HTTP instead.
    pub url: Option<String>,
    /// Headers sent to the `url` server (credentials go to the secret store).
    pub headers: Vec<(String, String)>,
    /// Variables for the command (secret-looking ones go to the secret store).
    pub env: Vec<(String, String)>,
    /// Hosts it may reach (`host` or `host:port`; `*`: any public host, under the web
    /// rules): declared in its manifest and granted, since a person asked for them.
    pub allow_hosts: Vec<String>,
    /// Start it as soon as a long-running toolshed opens, not at its first call.
    pub eager: bool,
    /// The sandbox mode it runs in.
    pub sandbox: Option<String>,
    /// Replace a server of the same name.
    pub force: bool,
    /// The prefix of its tools' and prompts' names (`PREFIX__TOOL`); empty: their own
    /// names. `None`: its name.
    pub prefix: Option<String>,
    /// It may ask the calling client's model (or toolshed's `[llm]`) for completions
    /// during a call: `llm` declared in its manifest and granted, since a person asked.
    pub sampling: bool,
}

/// The manifest of a server and the secrets to store for it (config key, value).
fn manifest(args: &NewServer) -> Result<(String, Vec<(String, String)>), ManageError> {
    let name = args.name.as_str();
    let id = plugin_id(name);
    let prefix = id.trim_start_matches("mcp.");
    if prefix.is_empty()
        || prefix.len() > 32
        || !prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err(ManageError::Usage(format!(
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
            return Err(ManageError::Usage(format!(
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
            return Err(ManageError::Usage(format!(
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
    if !args.allow_hosts.is_empty() || args.sampling {
        text.push_str("\n[capabilities]\n");
    }
    if !args.allow_hosts.is_empty() {
        for host in args.allow_hosts.iter().filter(|h| *h != "*") {
            toolshed_ops::net::HostPattern::parse(host).map_err(|e| {
                ManageError::Usage(format!("`{host}` is not a host (HOST or HOST:PORT): {e}"))
            })?;
        }
        let list: Vec<String> = args.allow_hosts.iter().map(|h| toml_string(h)).collect();
        text.push_str(&format!("network = [{}]\n", list.join(", ")));
    }
    if args.sampling {
        text.push_str("llm = true\n");
    }
    text.push_str(&fields);
    match &args.url {
        Some(url) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ManageError::Usage(format!(
                    "--url `{url}` is not an http:// or https:// URL"
                )));
            }
            text.push_str(&format!("\n[mcp]\nurl = {}\n", toml_string(url)));
        }
        None => {
            let (program, rest) = args.command.split_first().ok_or_else(|| {
                ManageError::Usage("give the server's command after `--`, or its --url".into())
            })?;
            text.push_str(&format!("\n[mcp]\ncommand = {}\n", toml_string(program)));
            if !rest.is_empty() {
                let list: Vec<String> = rest.iter().map(|a| toml_string(a)).collect();
                text.push_str(&format!("args = [{}]\n", list.join(", ")));
            }
        }
    }
    if let Some(prefix) = &args.prefix {
        crate::names::check_prefix(prefix).map_err(|e| ManageError::Usage(e.to_string()))?;
        text.push_str(&format!("prefix = {}\n", toml_string(prefix)));
    }
    if args.eager {
        text.push_str("eager = true\n");
    }
    if let Some(mode) = &args.sandbox {
        toolshed_ops::sandbox::SandboxMode::parse(mode)
            .map_err(|e| ManageError::Usage(e.to_string()))?;
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

/// Installs and starts server `server`: its plugin, running, or why not.
pub async fn mount(
    host: &Host,
    server: &NewServer,
) -> Result<toolshed_host::PluginInfo, ManageError> {
    let id = plugin_id(&server.name);
    let (text, secrets) = manifest(server)?;
    let dir = tempfile_dir()?;
    std::fs::write(dir.join("plugin.toml"), text)
        .map_err(|e| ManageError::Failed(format!("cannot write the manifest: {e}")))?;
    // Grants and secrets first, so that the server starts with them.
    let grants: Vec<String> = server
        .allow_hosts
        .iter()
        .map(|h| format!("http:{h}"))
        .chain(server.sampling.then(|| "llm".to_string()))
        .collect();
    if !grants.is_empty() {
        host.plugins()
            .grant_before_install(&id, &grants)
            .map_err(|e| ManageError::Failed(e.to_string()))?;
    }
    for (key, value) in &secrets {
        host.plugins()
            .set_config_value(&id, key, &json!(value), true)
            .map_err(|e| ManageError::Failed(e.to_string()))?;
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
    let installed = outcome.map_err(|e| ManageError::Failed(e.to_string()))?;
    // Loaded now, so that a server that cannot start says so here.
    let info =
        host.plugins().adopt(&installed.dir).await.ok_or_else(|| {
            ManageError::Failed(format!("`{id}` was installed but is not listed"))
        })?;
    match (&info.state, &info.reason) {
        (PluginState::Running, _) => Ok(info),
        (state, reason) => Err(ManageError::Failed(format!(
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
pub fn server_name(text: &str) -> String {
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

/// One `mcpServers` entry as a server to mount.
pub fn import_entry(
    name: &str,
    entry: &serde_json::Value,
    force: bool,
) -> Result<NewServer, ManageError> {
    if let Some(url) = entry.get("url").or_else(|| entry.get("serverUrl")) {
        let url = url
            .as_str()
            .ok_or_else(|| ManageError::Usage(format!("its url {url} is not a string")))?;
        if entry["type"].as_str() == Some("sse") {
            return Err(ManageError::Usage(
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
            allow_hosts: Vec::new(),
            eager: false,
            sandbox: None,
            force,
            prefix: None,
            sampling: false,
        });
    }
    let command = entry["command"]
        .as_str()
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| ManageError::Usage("it has no `command`".into()))?;
    let mut line = vec![command.to_string()];
    for arg in entry["args"].as_array().into_iter().flatten() {
        line.push(
            arg.as_str()
                .map(String::from)
                .ok_or_else(|| ManageError::Usage(format!("argument {arg} is not a string")))?,
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
        allow_hosts: Vec::new(),
        eager: false,
        sandbox: None,
        force,
        prefix: None,
        sampling: false,
    })
}

/// A fresh private directory for the manifest being installed.
fn tempfile_dir() -> Result<std::path::PathBuf, ManageError> {
    let dir = std::env::temp_dir().join(format!(
        "toolshed-mcp-add-{}-{}",
        std::process::id(),
        toolshed_host::now_ms()
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| ManageError::Failed(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// One server of a config to import: its name there, and the server to mount or why it
/// cannot be.
pub type ImportEntry = (String, Result<NewServer, ManageError>);

/// The servers of an `mcpServers` config (Claude Desktop, Claude Code's `.mcp.json`,
/// Cursor, Windsurf, …), each under its name there, as a server to mount or why it cannot
/// be.
pub fn import_entries(
    config: &serde_json::Value,
    force: bool,
) -> Result<Vec<ImportEntry>, ManageError> {
    let servers = config
        .get("mcpServers")
        .or_else(|| config.get("servers"))
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| {
            ManageError::Usage(
                "the config has no `mcpServers` object (the form Claude Desktop, Claude Code \
                 and Cursor use: {\"mcpServers\": {\"NAME\": {\"command\": …, \"args\": […]}}})"
                    .into(),
            )
        })?;
    Ok(servers
        .iter()
        .map(|(original, entry)| {
            let name = server_name(original);
            (original.clone(), import_entry(&name, entry, force))
        })
        .collect())
}

/// The mounted servers (plugins of kind `mcp`), in trust order.
pub fn servers(host: &Host) -> Vec<PluginInfo> {
    host.plugins()
        .list()
        .into_iter()
        .filter(|p| p.kind == PluginKind::Mcp)
        .collect()
}

/// What a server runs: its command line, or its URL.
pub fn target(host: &Host, id: &str) -> String {
    host.plugins()
        .manifest(id)
        .and_then(|m| m.mcp_server())
        .map(|m| match m.url {
            Some(url) => url,
            None => std::iter::once(m.command)
                .chain(m.args)
                .collect::<Vec<_>>()
                .join(" "),
        })
        .unwrap_or_default()
}

/// The mounted server `name` (or plugin id).
pub fn server(host: &Host, name: &str) -> Result<PluginInfo, ManageError> {
    let id = plugin_id(name);
    servers(host)
        .into_iter()
        .find(|p| p.id == id)
        .ok_or_else(|| {
            ManageError::Usage(format!(
                "no MCP server `{name}`; `toolshed mcp list` shows the mounted ones"
            ))
        })
}

/// Removes server `name`: its plugin, state and config. Its id.
pub async fn remove(host: &Host, name: &str) -> Result<String, ManageError> {
    let info = server(host, name)?;
    host.plugins()
        .uninstall(&info.id)
        .await
        .map_err(|e| ManageError::Failed(e.to_string()))?;
    Ok(info.id)
}

/// Server `name` and its pins.
pub fn pins(host: &Host, name: &str) -> Result<(PluginInfo, crate::pins::Pins), ManageError> {
    let info = server(host, name)?;
    let dir = info.dir.clone().ok_or_else(|| {
        ManageError::Failed(format!("`{}` has no directory to keep pins in", info.id))
    })?;
    let pins = crate::pins::read(&crate::pins::pins_path(&dir));
    Ok((info, pins))
}

/// Accepts the current definitions of server `name`'s tools `accept` (names as mounted or
/// as the server names them), or of all of them: their pins are dropped and the server is
/// started again, which pins what it serves now. The plugin as it then is.
pub async fn accept(
    host: &Host,
    name: &str,
    accept: &[String],
    all: bool,
) -> Result<PluginInfo, ManageError> {
    let (info, mut pins) = pins(host, name)?;
    let id = info.id.clone();
    if accept.is_empty() && !all {
        return Err(ManageError::Usage(
            "name the tools to accept, or accept all of them".into(),
        ));
    }
    let prefix = host
        .plugins()
        .manifest(&id)
        .map(|m| crate::prefix(&m))
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
                    ManageError::Usage(format!(
                        "`{tool}` is not a pinned tool of `{id}`; `toolshed mcp pin {name}` lists them"
                    ))
                })?;
            pins.tools.remove(&key);
        }
    }
    let dir = info.dir.clone().unwrap_or_default();
    let path = crate::pins::pins_path(&dir);
    crate::pins::write(&path, &pins)
        .map_err(|e| ManageError::Failed(format!("cannot write {}: {e}", path.display())))?;
    host.plugins()
        .reload(&id)
        .await
        .map_err(|e| ManageError::Failed(e.to_string()))
}

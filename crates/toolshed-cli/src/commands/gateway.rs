//! `toolshed mcp add|list|remove|import|pin`: the MCP servers toolshed mounts as plugins
//! (kind `mcp`). The work is `toolshed_gateway::manage`'s, shared with the REST door.

use serde_json::json;
use toolshed_gateway::manage::{self, ManageError, NewServer};
use toolshed_host::Host;

use crate::Failure;
use crate::cli::{McpAddArgs, McpCommand};
use crate::render::{print_json, table};

/// Runs one `toolshed mcp` management command.
pub(crate) async fn run(host: &Host, command: McpCommand) -> Result<(), Failure> {
    match command {
        McpCommand::Add(args) => add(host, args).await,
        McpCommand::List { json } => list(host, json),
        McpCommand::Remove { name } => remove(host, &name).await,
        McpCommand::Import { file, force } => import(host, &file, force).await,
        McpCommand::Pin { name, accept, all } => pin(host, &name, &accept, all).await,
    }
}

fn failure(e: ManageError) -> Failure {
    match e {
        ManageError::Usage(why) => Failure::Usage(why),
        ManageError::Failed(why) => Failure::Runtime(why),
    }
}

/// The server `toolshed mcp add` describes.
fn new_server(args: McpAddArgs) -> Result<NewServer, Failure> {
    let pairs = |list: &[String], flag: &str| {
        list.iter()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                    .ok_or_else(|| Failure::Usage(format!("{flag} `{pair}` is not NAME=VALUE")))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(NewServer {
        name: args.name,
        command: args.command,
        url: args.url,
        headers: pairs(&args.headers, "--header")?,
        env: pairs(&args.env, "--env")?,
        allow_hosts: args.allow_hosts,
        eager: args.eager,
        sandbox: args.sandbox,
        force: args.force,
        prefix: args.prefix,
        sampling: args.sampling,
    })
}

async fn add(host: &Host, args: McpAddArgs) -> Result<(), Failure> {
    let server = new_server(args)?;
    let info = manage::mount(host, &server).await.map_err(failure)?;
    outln!(
        "{}: mounted {} ({})",
        info.id,
        toolshed_core::counted(info.tools.len(), "tool", "tools"),
        info.tools.join(", ")
    );
    Ok(())
}

/// The most a config file to import may be.
const MAX_IMPORT_BYTES: u64 = 1024 * 1024;

/// Mounts every server of an `mcpServers` config: each as `toolshed mcp add` would,
/// secrets moved to the secret store. Servers that cannot be mounted are reported and the
/// rest go on.
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
    let entries = manage::import_entries(&config, force)
        .map_err(|e| Failure::Usage(format!("{}: {e}", file.display())))?;
    let (mut mounted, mut failed) = (0, 0);
    for (original, entry) in entries {
        let outcome = match entry {
            Ok(server) => manage::mount(host, &server).await,
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
            Err(ManageError::Usage(why) | ManageError::Failed(why)) => {
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

fn list(host: &Host, json: bool) -> Result<(), Failure> {
    let servers = manage::servers(host);
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
            vec![
                p.id.clone(),
                p.state.as_str().to_string(),
                p.tools.len().to_string(),
                manage::target(host, &p.id),
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
    let id = manage::remove(host, name).await.map_err(failure)?;
    outln!("{id}: removed");
    Ok(())
}

async fn pin(host: &Host, name: &str, accept: &[String], all: bool) -> Result<(), Failure> {
    if accept.is_empty() && !all {
        let (info, pins) = manage::pins(host, name).map_err(failure)?;
        let id = &info.id;
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
    let info = manage::accept(host, name, accept, all)
        .await
        .map_err(failure)?;
    let id = &info.id;
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

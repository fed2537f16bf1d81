//! `toolshed mcp`: the MCP door on stdio.
//!
//! stdout belongs to the protocol: nothing but JSON-RPC is written there (logs and
//! warnings go to stderr). The command returns when the client closes stdin.

use std::sync::Arc;
use std::time::Duration;

use toolshed_host::Host;
use toolshed_mcp::{McpServer, Session, selection_from_globs};

use crate::Failure;
use crate::cli::McpArgs;

/// How often the server checks whether its parent process is still alive.
const PARENT_CHECK_EVERY: Duration = Duration::from_millis(500);

/// Serves one MCP client on stdin/stdout until it closes stdin, its parent process dies,
/// or a SIGTERM or Ctrl-C arrives.
pub async fn run(
    host: &Arc<Host>,
    args: McpArgs,
    caller: Option<toolshed_host::identity::Caller>,
    global_token: Option<&str>,
) -> Result<(), Failure> {
    let mut session = session_from_args(host, args)?;
    if caller.as_ref().is_some_and(|c| c.is_agent()) {
        session.token = global_token.map(str::to_string);
    }
    session.caller = caller;
    let server = McpServer::new(host.clone(), session);
    tracing::info!(owner = %server.owner(), "serving MCP on stdio");
    let watcher = host.watch_store().await;
    let stop = async {
        tokio::select! {
            () = crate::commands::serve::shutdown_signal() => {
                tracing::info!("signal received; stopping");
            }
            () = parent_gone() => {
                tracing::info!("the parent process is gone; stopping");
            }
        }
    };
    let served = toolshed_mcp::serve_stdio(server, stop).await;
    watcher.abort();
    served.map_err(|e| Failure::Runtime(e.to_string()))
}

/// Completes when this process's parent exits (the client that started `toolshed mcp`
/// died without closing stdin, or a grandchild holds it open): the kernel then re-parents
/// us, so the parent id changes. Polling is used rather than `PR_SET_PDEATHSIG`, which
/// fires when the parent *thread* that spawned us exits, even though the client lives on.
async fn parent_gone() {
    let parent = std::os::unix::process::parent_id();
    let mut tick = tokio::time::interval(PARENT_CHECK_EVERY);
    loop {
        tick.tick().await;
        if std::os::unix::process::parent_id() != parent {
            return;
        }
    }
}

/// The narrowing `--tools` and `--profile` ask for, checked against the configuration.
pub fn session_from_args(host: &Host, args: McpArgs) -> Result<Session, Failure> {
    if let Some(name) = &args.profile
        && host.dispatcher().review().profile(name).is_none()
    {
        let names = host.dispatcher().review().profile_names();
        return Err(Failure::Usage(format!(
            "no profile `{name}` in the configuration; defined profiles: {}",
            if names.is_empty() {
                "none (add one as [profiles.NAME] in toolshed.toml)".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    let selection = match &args.tools {
        None => None,
        Some(list) => {
            let rules = selection_from_globs(list).map_err(|e| Failure::Usage(e.to_string()))?;
            if rules.is_none() {
                return Err(Failure::Usage(
                    "--tools names no tools; pass comma-separated globs such as `workspace_*,calculator`, or leave it out for every tool".into(),
                ));
            }
            rules.map(Arc::new)
        }
    };
    Ok(Session {
        profile: args.profile,
        selection,
        caller: None,
        token: None,
    })
}

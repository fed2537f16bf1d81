//! `toolshed mcp`: the MCP door on stdio.
//!
//! stdout belongs to the protocol: nothing but JSON-RPC is written there (logs and
//! warnings go to stderr). The command returns when the client closes stdin.

use std::sync::Arc;
use std::time::Duration;

use toolshed_host::Host;
use toolshed_mcp::{McpServer, Session, selection_from_globs};

use crate::Failure;
use crate::cli::{GlobalArgs, McpArgs};

/// How long the host waits for the client's `initialize` before it opens anyway.
const GREETING_WAIT: Duration = Duration::from_millis(25);

/// How often the server checks whether its parent process is still alive.
const PARENT_CHECK_EVERY: Duration = Duration::from_millis(500);

/// Serves one MCP client on stdin/stdout until it closes stdin, its parent process dies,
/// or a SIGTERM or Ctrl-C arrives.
///
/// The host (state store, plugins, engines) opens in the background once the client is
/// greeted: `initialize` needs nothing from it, so the handshake neither waits for start-up
/// nor shares the cores with it, and the first request that needs the host waits for it.
/// A host that cannot open (bad configuration, a bad `--profile` or token) stops the
/// server with the same error and exit code as before it talked.
pub async fn run(global: GlobalArgs, args: McpArgs) -> Result<(), Failure> {
    let (opened, opening) = toolshed_mcp::host_opening();
    let starting = tokio::spawn(async move {
        // After the greeting, so that opening never slows the handshake; a client that
        // does not greet promptly gets its host opened anyway.
        tokio::select! {
            () = opened.greeted() => {}
            () = tokio::time::sleep(GREETING_WAIT) => {}
        }
        match open(&global, args).await {
            Ok((host, session, watcher)) => {
                opened.send(Ok((host.clone(), session)));
                Ok((host, watcher))
            }
            Err(failure) => {
                let (Failure::Usage(why) | Failure::Runtime(why)) = &failure;
                opened.send(Err(why.clone()));
                Err(failure)
            }
        }
    });
    let server = McpServer::opening(opening.clone());
    tracing::info!(owner = %server.owner(), "serving MCP on stdio");
    let stop = async {
        tokio::select! {
            () = crate::commands::serve::shutdown_signal() => {
                tracing::info!("signal received; stopping");
            }
            () = parent_gone() => {
                tracing::info!("the parent process is gone; stopping");
            }
            () = opening.failed() => {}
        }
    };
    let served = toolshed_mcp::serve_stdio(server, stop).await;
    match starting.await {
        Ok(Ok((host, watcher))) => {
            watcher.abort();
            host.shutdown().await;
        }
        Ok(Err(failure)) => return Err(failure),
        Err(e) => return Err(Failure::Runtime(format!("starting toolshed failed: {e}"))),
    }
    served.map_err(|e| Failure::Runtime(e.to_string()))
}

/// Opens the host and makes the connection's session: what the door did before it talked.
async fn open(
    global: &GlobalArgs,
    args: McpArgs,
) -> Result<(Arc<Host>, Session, tokio::task::JoinHandle<()>), Failure> {
    let host = Arc::new(crate::context::open_host(global).await?);
    let caller = crate::context::caller(&host, global)?;
    let mut session = session_from_args(&host, args)?;
    if caller.as_ref().is_some_and(|c| c.is_agent()) {
        session.token = global.token.as_deref().map(str::trim).map(str::to_string);
    }
    session.caller = caller;
    // Plugin changes made by other processes reach this one's catalog.
    let watcher = host.watch_store().await;
    Ok((host, session, watcher))
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

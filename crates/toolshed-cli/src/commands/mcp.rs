//! `toolshed mcp`: the MCP door on stdio.
//!
//! stdout belongs to the protocol: nothing but JSON-RPC is written there (logs and
//! warnings go to stderr). The command returns when the client closes stdin.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolshed_host::Host;
use toolshed_mcp::{
    CatalogMode, ClientRoots, HostOpened, McpServer, Session, selection_from_globs,
};

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
pub(crate) async fn run(global: GlobalArgs, args: McpArgs) -> Result<(), Failure> {
    let (opened, opening) = toolshed_mcp::host_opening();
    let instructions = instructions(&global);
    let starting = tokio::spawn(async move {
        // After the greeting, so that opening never slows the handshake; a client that
        // does not greet promptly gets its host opened anyway.
        tokio::select! {
            () = opened.greeted() => {}
            () = tokio::time::sleep(GREETING_WAIT) => {}
        }
        let mut global = global;
        let workspace = match workspace(&global, args.profile.as_deref(), &opened).await {
            Ok((dir, further)) => {
                if !further.is_empty() {
                    // The client's further roots are the workspace's further roots.
                    global.workspaces = std::iter::once(dir.clone()).chain(further).collect();
                }
                dir
            }
            Err(failure) => {
                let (Failure::Usage(why) | Failure::Runtime(why)) = &failure;
                opened.send(Err(why.clone()));
                return Err(failure);
            }
        };
        match open(&global, args, workspace).await {
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
    let server = McpServer::opening(opening.clone()).with_instructions(instructions);
    if std::io::stdin().is_terminal() {
        // Someone ran it by hand: it is waiting for a client, not stuck.
        eprintln!(
            "toolshed {}: an MCP server on stdin/stdout, for an MCP client to start; press Ctrl-D or Ctrl-C to stop",
            env!("CARGO_PKG_VERSION")
        );
    }
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

/// The workspace: the one the token or profile is pinned to; else `--workspace` (or
/// `TOOLSHED_WORKSPACE`) when given; else the client's `file://` roots when it offers
/// roots, the first the workspace and the others its further roots (`@name/…`); else the
/// current directory, unless that is too broad (see [`crate::context::chosen_workspace`]).
/// With it, the further roots the client's list adds.
async fn workspace(
    global: &GlobalArgs,
    profile: Option<&str>,
    opened: &HostOpened,
) -> Result<(PathBuf, Vec<PathBuf>), Failure> {
    if let Some(pinned) = crate::context::pinned_workspace(global, profile).await? {
        return Ok((PathBuf::from(pinned), Vec::new()));
    }
    if let Some(dir) = global.workspace() {
        return Ok((dir.clone(), Vec::new()));
    }
    match opened.client_roots().await {
        ClientRoots::Listed(uris) => {
            let mut dirs = uris.iter().filter_map(|uri| path_of_file_uri(uri));
            if let Some(dir) = dirs.next() {
                // A root the client names that is not a directory here is left out.
                let further: Vec<PathBuf> = dirs
                    .filter(|d| *d != dir && d.is_dir())
                    .take(toolshed_ops::roots::MAX_ROOTS - 1)
                    .collect();
                if !further.is_empty() {
                    tracing::info!(workspace = %dir.display(), further = further.len(), "the client listed several roots: the first is the workspace, the others its further roots");
                }
                return Ok((dir, further));
            }
            tracing::warn!(?uris, "the client's roots hold no file:// directory");
        }
        ClientRoots::Failed(why) => {
            tracing::warn!(%why, "cannot read the client's roots");
        }
        ClientRoots::Unknown | ClientRoots::NotOffered | ClientRoots::Asked => {}
    }
    crate::context::chosen_workspace(global).map(|dir| (dir, Vec::new()))
}

/// The local path of a `file://` URI (`file:///home/ada/src`, percent-escapes decoded).
fn path_of_file_uri(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/x` names the same file as `file:///x`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|b| hex(*b)),
            bytes.get(i + 2).and_then(|b| hex(*b)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    use std::os::unix::ffi::OsStringExt as _;
    let path = PathBuf::from(std::ffi::OsString::from_vec(out));
    path.is_dir().then_some(path)
}

/// The `instructions` of the `initialize` result: what the workspace is and how the tools
/// address files, so a model needs no round trip to learn it.
fn instructions(global: &GlobalArgs) -> String {
    let which = match global.workspace() {
        Some(dir) => format!("the directory {}", dir.display()),
        None => "your first root (or, without roots, the directory toolshed was started in); your other roots are its further roots, reached as @NAME/path (NAME: the root directory's name)".into(),
    };
    let mut text = toolshed_mcp::instructions(&which);
    if global.workspaces.len() > 1 {
        text.push_str(" It has further roots, whose files the tools reach as @NAME/path (a command runs in one with workdir @NAME), NAME being the directory's name:");
        for dir in &global.workspaces[1..] {
            text.push_str(&format!(" {}", dir.display()));
        }
        text.push('.');
    }
    text
}

/// Opens the host and makes the connection's session: what the door did before it talked.
async fn open(
    global: &GlobalArgs,
    args: McpArgs,
    workspace: PathBuf,
) -> Result<(Arc<Host>, Session, tokio::task::JoinHandle<()>), Failure> {
    let host = Arc::new(crate::context::open_host_in(global, workspace).await?);
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

/// Refuses a `--profile` that names no built-in profile nor one of the configuration.
pub(crate) fn check_profile(host: &Host, name: &str) -> Result<(), Failure> {
    if host.dispatcher().review().profile(name).is_some() {
        return Ok(());
    }
    let names = host.dispatcher().review().profile_names();
    Err(Failure::Usage(format!(
        "no profile `{name}`: the profiles are {} (add one as [profiles.NAME] in the configuration)",
        names.join(", ")
    )))
}

/// The narrowing `--tools` and `--profile` ask for, checked against the configuration.
pub(crate) fn session_from_args(host: &Host, args: McpArgs) -> Result<Session, Failure> {
    if let Some(name) = &args.profile {
        check_profile(host, name)?;
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
    let review = host.dispatcher().review();
    let named = args.catalog.as_deref().or_else(|| {
        args.profile
            .as_deref()
            .and_then(|p| review.profile_catalog(p))
    });
    // Both the flag and a profile's `catalog` were checked against the same three names;
    // none named: the door chooses (see `Session::catalog`).
    let catalog = named.and_then(CatalogMode::from_name);
    Ok(Session {
        profile: args.profile,
        selection,
        caller: None,
        token: None,
        catalog,
    })
}

//! `toolshed serve` and `toolshed token`: the MCP door over streamable HTTP.
//!
//! The server listens on 127.0.0.1 by default and every request needs the bearer token
//! kept in `<data-dir>/token`. Once bound, one line goes to stderr for people and scripts
//! alike: `listening on http://ADDR/mcp` (with the real port when `--port 0` was given).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use toolshed_host::Host;
use toolshed_server::{BearerToken, DEFAULT_MAX_BODY_BYTES, MCP_PATH};

use crate::Failure;
use crate::cli::{GlobalArgs, ServeArgs};
use crate::commands::mcp::session_from_args;
use crate::context;

/// Serves MCP over HTTP until interrupted (Ctrl-C or SIGTERM).
pub(crate) async fn run(
    host: &Arc<Host>,
    global: &GlobalArgs,
    args: ServeArgs,
) -> Result<(), Failure> {
    let session = session_from_args(host, args.selection)?;
    let configured = &host.config().config.server;
    let address = SocketAddr::new(
        args.bind.unwrap_or(configured.bind),
        args.port.unwrap_or(configured.port),
    );
    if !address.ip().is_loopback() && !args.allow_remote {
        return Err(Failure::Usage(format!(
            "refusing to listen on {}: it is not a loopback address, so other machines could reach toolshed; pass --allow-remote if that is what you want",
            address.ip()
        )));
    }
    let token = load_token(host.data_dir().to_path_buf()).await?;
    let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| {
        Failure::Runtime(format!(
            "cannot listen on {address}: {e}; pick another port with --port N (0 picks a free one)"
        ))
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::Runtime(format!("cannot read the bound address: {e}")))?;
    if !local.ip().is_loopback() {
        eprintln!(
            "warning: listening on {} makes toolshed reachable from other machines; the token is all that guards it",
            local.ip()
        );
    }
    eprintln!("listening on http://{local}{MCP_PATH}");
    eprintln!("REST API on http://{local}/api/v1 (docs/rest.md)");
    if args.open
        && let Some(code) = toolshed_server::login_code(&token)
    {
        eprintln!(
            "dashboard: http://{local}/login?code={code} (works once, for {} s; `toolshed dashboard` prints another)",
            toolshed_server::CODE_LIFETIME.as_secs()
        );
    } else {
        eprintln!("dashboard on http://{local}/ (`toolshed dashboard` prints a login link)");
    }
    host.services()
        .ports
        .set_base_url(format!("http://{local}"));
    let options = toolshed_server::ServerOptions {
        token,
        session,
        max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        workspaces: Some(other_workspaces(global, format!("http://{local}"))),
    };
    // One signal stops both doors.
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    let grpc = match args.grpc_port.or(configured.grpc_port) {
        Some(port) => Some(
            grpc::start(
                host,
                SocketAddr::new(local.ip(), port),
                options.token.clone(),
                stopped,
            )
            .await?,
        ),
        None => None,
    };
    let watcher = host.watch_store().await;
    let shutdown = async move {
        shutdown_signal().await;
        let _ = stopping.send(true);
    };
    let served = toolshed_server::serve(host.clone(), listener, options, shutdown).await;
    watcher.abort();
    if let Some(grpc) = grpc {
        match grpc.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "the gRPC door failed"),
            Err(e) => tracing::warn!(error = %e, "the gRPC door's task failed"),
            Ok(Ok(())) => {}
        }
    }
    served.map_err(|e| Failure::Runtime(e.to_string()))
}

/// The gRPC door (`--grpc-port`, `[server] grpc_port`), in builds that have it.
mod grpc {
    use std::net::SocketAddr;
    use std::sync::Arc;

    use toolshed_host::Host;
    use toolshed_server::{BearerToken, DEFAULT_MAX_BODY_BYTES, ServeError};

    use crate::Failure;

    /// Binds `address` and serves the gRPC door there until `stopped` turns true.
    #[cfg(feature = "grpc")]
    pub(super) async fn start(
        host: &Arc<Host>,
        address: SocketAddr,
        token: BearerToken,
        mut stopped: tokio::sync::watch::Receiver<bool>,
    ) -> Result<tokio::task::JoinHandle<Result<(), ServeError>>, Failure> {
        let listener = tokio::net::TcpListener::bind(address).await.map_err(|e| {
            Failure::Runtime(format!(
                "cannot listen for gRPC on {address}: {e}; pick another port with --grpc-port N (0 picks a free one)"
            ))
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| Failure::Runtime(format!("cannot read the bound address: {e}")))?;
        eprintln!("gRPC on {local} (docs/grpc.md)");
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        Ok(tokio::spawn(toolshed_server::grpc::serve_grpc(
            host.clone(),
            listener,
            token,
            DEFAULT_MAX_BODY_BYTES,
            shutdown,
        )))
    }

    /// Without the `grpc` feature: a clear refusal.
    #[cfg(not(feature = "grpc"))]
    pub(super) async fn start(
        _: &Arc<Host>,
        _: SocketAddr,
        _: BearerToken,
        _: tokio::sync::watch::Receiver<bool>,
    ) -> Result<tokio::task::JoinHandle<Result<(), ServeError>>, Failure> {
        let _ = DEFAULT_MAX_BODY_BYTES;
        Err(Failure::Usage(
            "this toolshed was built without the gRPC door: build it with `--features grpc` (on by default), or leave out --grpc-port and `[server] grpc_port`".into(),
        ))
    }
}

/// How this server opens the workspaces agent tokens are pinned to: as `toolshed serve
/// --workspace PLACE` would, with the same flags and configuration, its store watched.
fn other_workspaces(global: &GlobalArgs, base_url: String) -> toolshed_server::Workspaces {
    let global = global.clone();
    toolshed_server::Workspaces::new(move |place| {
        let (global, base_url) = (global.clone(), base_url.clone());
        Box::pin(async move {
            let host = context::open_host_in(&global, PathBuf::from(place))
                .await
                .map(Arc::new)
                .map_err(|(Failure::Usage(why) | Failure::Runtime(why))| {
                    toolshed_server::OpenError::from(why)
                })?;
            host.services().ports.set_base_url(base_url);
            // Plugin changes made elsewhere reach its catalog; the task ends with the
            // process.
            drop(host.watch_store().await);
            Ok(host)
        })
    })
}

/// Prints the bearer token, generating it when no server has started yet.
/// `toolshed dashboard`: a one-time login link for the dashboard of the server at `url`
/// (signed with the token, so the server, which holds the same token, accepts it once).
pub(crate) async fn print_login_link(
    global: &GlobalArgs,
    url: Option<String>,
) -> Result<(), Failure> {
    let token = load_token(context::data_dir(global)?).await?;
    let base = url.map_or_else(
        || "http://127.0.0.1:7070".to_string(),
        |u| u.trim_end_matches('/').to_string(),
    );
    let code = toolshed_server::login_code(&token).ok_or_else(|| {
        Failure::Runtime("cannot make a login code: the system's random source failed".into())
    })?;
    outln!(
        "{base}/login?code={code} (works once, for {} s)",
        toolshed_server::CODE_LIFETIME.as_secs()
    );
    Ok(())
}

pub(crate) async fn print_token(global: &GlobalArgs) -> Result<(), Failure> {
    let token = load_token(context::data_dir(global)?).await?;
    outln!("{}", token.reveal());
    Ok(())
}

async fn load_token(data_dir: PathBuf) -> Result<BearerToken, Failure> {
    tokio::task::spawn_blocking(move || BearerToken::load_or_create(&data_dir))
        .await
        .map_err(|e| Failure::Runtime(format!("reading the token failed: {e}")))?
        .map_err(|e| Failure::Runtime(e.to_string()))
}

/// Completes on Ctrl-C or, on Unix, SIGTERM.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

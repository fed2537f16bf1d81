//! `/proxy/<id>/...`: HTTP (and WebSocket upgrades) forwarded to a background process's
//! port on 127.0.0.1.
//!
//! The processes are those `process_exec` started with a `port`; the host's
//! [`PortDirectory`] says which id listens where. Requests pass the same guard as `/mcp`
//! and `/api/v1` ([`RequestGuard`](crate::RequestGuard): token, Host, Origin, body limit)
//! before they get here. The toolshed token is taken off the forwarded request, so the app
//! never sees it; the path after `/proxy/<id>` is what the app gets. A caller that names an
//! owner (`X-Toolshed-Owner`) reaches only that owner's processes.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use hyper_util::rt::TokioIo;
use toolshed_core::PortDirectory;
use toolshed_mcp::OWNER_HEADER;

/// The proxy routes, `/proxy/{id}` and everything under it, forwarding to the processes
/// `ports` lists. They have no guard of their own: mount them behind
/// [`guarded`](crate::guarded).
pub(crate) fn routes(ports: Arc<PortDirectory>) -> Router {
    Router::new()
        .route("/proxy/{id}", any(proxy_root))
        .route("/proxy/{id}/", any(proxy))
        .route("/proxy/{id}/{*rest}", any(proxy))
        .with_state(ProxyState { ports })
}

/// Where a proxied request goes.
#[derive(Clone)]
struct ProxyState {
    ports: Arc<PortDirectory>,
}

fn refuse(status: StatusCode, message: String) -> Response {
    (status, format!("{message}\n")).into_response()
}

/// `/proxy/{id}` (redirects to the trailing-slash form, so relative links work). The
/// location is the path as the client sent it, still percent-encoded: a decoded id such as
/// `../../etc/passwd` would point the client somewhere else.
async fn proxy_root(uri: Uri) -> Response {
    let mut response = StatusCode::PERMANENT_REDIRECT.into_response();
    let location = match uri.query() {
        Some(query) => format!("{}/?{query}", uri.path()),
        None => format!("{}/", uri.path()),
    };
    if let Ok(location) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// `/proxy/{id}/{*rest}` and `/proxy/{id}/`.
async fn proxy(
    State(state): State<ProxyState>,
    Path(params): Path<Vec<(String, String)>>,
    mut request: Request,
) -> Response {
    let id = params
        .iter()
        .find(|(k, _)| k == "id")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    // The app gets the path exactly as the client sent it (still percent-encoded), minus
    // the `/proxy/<id>` prefix.
    let raw_path = request.uri().path().to_string();
    let rest = raw_path
        .strip_prefix("/proxy/")
        .and_then(|p| p.split_once('/'))
        .map(|(_, rest)| rest.to_string())
        .unwrap_or_default();
    let target = state.ports.get(&id);
    let owner = request
        .headers()
        .get(OWNER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let caller = request
        .extensions()
        .get::<toolshed_host::identity::Caller>()
        .cloned();
    let Some(target) = target.filter(|t| {
        owner.as_ref().is_none_or(|o| *o == t.owner)
            && caller.as_ref().is_none_or(|c| c.owns(&t.owner))
    }) else {
        return refuse(
            StatusCode::NOT_FOUND,
            format!(
                "no running background process `{id}` with a port; start one with process_exec and `port`, process_list shows yours"
            ),
        );
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("/{rest}?{query}"),
        None => format!("/{rest}"),
    };
    let Ok(uri) = path_and_query.parse::<Uri>() else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the proxied path is not a valid URI".into(),
        );
    };
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.remove(header::AUTHORIZATION);
    headers.remove(header::PROXY_AUTHORIZATION);
    headers.remove(OWNER_HEADER);
    // The dashboard's session cookie is toolshed's credential, never the app's.
    crate::dashboard::strip_session_cookie(headers);
    // Hop-by-hop headers belong to the client's connection, not to the one to the app
    // (an upgrade keeps `Connection` and `Upgrade`, which it needs).
    for name in [
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
    ] {
        headers.remove(name);
    }
    if let Ok(host) = HeaderValue::from_str(&format!("127.0.0.1:{}", target.port)) {
        headers.insert(header::HOST, host);
    }
    let upgrade = request.headers().contains_key(header::UPGRADE);
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut request));

    let unanswered = |e: &dyn std::fmt::Display| {
        refuse(
            StatusCode::BAD_GATEWAY,
            format!(
                "background process `{id}` does not answer on 127.0.0.1:{}: {e}",
                target.port
            ),
        )
    };
    match &target.via {
        // It runs in a network of its own: through its inbound socket, which takes the
        // port on the first line.
        Some(via) => {
            let mut stream = match tokio::net::UnixStream::connect(via).await {
                Ok(stream) => stream,
                Err(e) => return unanswered(&e),
            };
            let port_line = format!("{}\n", target.port);
            if let Err(e) =
                tokio::io::AsyncWriteExt::write_all(&mut stream, port_line.as_bytes()).await
            {
                return unanswered(&e);
            }
            forward(stream, request, client_upgrade, &id).await
        }
        None => match tokio::net::TcpStream::connect(("127.0.0.1", target.port)).await {
            Ok(stream) => {
                // Requests and small answers go out at once, not after a delayed ACK.
                let _ = stream.set_nodelay(true);
                forward(stream, request, client_upgrade, &id).await
            }
            Err(e) => unanswered(&e),
        },
    }
}

/// Sends `request` to the app over `stream` and returns its answer, upgrades included.
// The port proxy's own connection, to an app the workspace serves on 127.0.0.1 or a
// sandbox's socket (registered by process_exec), not an outbound request.
#[allow(clippy::disallowed_methods)]
async fn forward<S>(
    stream: S,
    request: Request,
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
    id: &str,
) -> Response
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(e) => {
                return refuse(
                    StatusCode::BAD_GATEWAY,
                    format!("cannot talk HTTP to `{id}`: {e}"),
                );
            }
        };
    tokio::spawn(async move {
        if let Err(e) = connection.with_upgrades().await {
            tracing::debug!(error = %e, "proxied connection ended");
        }
    });
    let mut response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(e) => {
            return refuse(
                StatusCode::BAD_GATEWAY,
                format!("`{id}` failed to answer: {e}"),
            );
        }
    };
    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let server_upgrade = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            match tokio::try_join!(client_upgrade, server_upgrade) {
                Ok((client, server)) => {
                    let mut client = TokioIo::new(client);
                    let mut server = TokioIo::new(server);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
                Err(e) => tracing::debug!(error = %e, "proxied upgrade failed"),
            }
        });
    }
    // The app may answer in HTTP/1.0; the client talks to toolshed, which speaks 1.1.
    *response.version_mut() = axum::http::Version::HTTP_11;
    response.map(Body::new)
}
